// SPDX-License-Identifier: MIT
/*
 * This file implements mountctl's mount service, mc_mount_image(), shared
 * by `mountctl mount` (which the Slurm job code's mount child runs, too)
 * and `mountctl acquire`: check that the mountpoint is free (not a
 * squashcache mount, not a stale one, not another filesystem), create it
 * if missing, and run squashcached, which detaches and returns only once
 * the mount answers.  Its messages reach the user unchanged and its exit
 * status becomes the caller's.
 * Also the default mount point of an image, mc_default_mountpoint().
 *
 * squashcached is the one next to the mountctl binary (so a build tree or
 * an installation stays consistent), else the one in PATH
 * (proc_find_program()); the environment variable SQUASHCACHED overrides
 * both.  It is given the
 * mountpoint fully resolved, so the daemon's canonical path, the mount
 * table and the control address all agree.
 */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "mountctl.h"
#include "slurm/dataset.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/proc.h"

extern char **environ;

/* Directories this run created, to remove again if the mount fails. */
struct made {
	char *path; /* the mountpoint argument, trailing slashes removed */
	size_t first; /* length of the first created prefix, 0 if none */
};

int mc_append_opts(char **opts, const char *more)
{
	size_t len = *opts ? strlen(*opts) + 1 : 0;
	char *p = realloc(*opts, len + strlen(more) + 1);

	if (!p) {
		mc_err("out of memory");
		return -ENOMEM;
	}
	if (len)
		p[len - 1] = ',';
	strcpy(p + len, more);
	*opts = p;
	return 0;
}

/*
 * With --sif, or for a file that starts with the SIF magic, append
 * offset=<start of its SquashFS partition> to *@opts, unless the options
 * already give an offset.  Return: 0, or -errno after a message.
 */
static int sif_opts(const char *image, bool sif, char **opts)
{
	char why[256], add[40];
	uint64_t off;
	int err;

	if (*opts &&
	    (!strncmp(*opts, "offset=", 7) || strstr(*opts, ",offset=")))
		return 0;
	if (!sif && !mc_sif_is(image))
		return 0;
	err = mc_sif_offset(image, &off, why, sizeof(why));
	if (err) {
		mc_err("%s: %s", image, why);
		return err;
	}
	snprintf(add, sizeof(add), "offset=%llu", (unsigned long long)off);
	return mc_append_opts(opts, add);
}

/* Refuse a path that something is already mounted on. */
static int check_free(const char *path)
{
	char why[PATH_MAX + 256];
	struct mountinfo_mount m;
	pid_t pid;
	int err;

	err = mountinfo_find(path, &m);
	if (err == -ENOENT)
		return 0;
	if (err) {
		mc_err("cannot read the mount table: %s", err_str(err));
		return err;
	}
	if (!ctl_is_sqc_mount(&m)) {
		mc_err("'%s' is already a mount point (%s): mount on another directory",
		       path, m.fstype);
		return -EBUSY;
	}
	err = ctl_ping_mount(&m, CTL_TIMEOUT_MS, &pid);
	if (!err) {
		mc_err("'%s' is already a squashcache mount of '%s' (daemon pid %d): see mountctl status %s, or run mountctl umount %s first",
		       path, m.source, (int)pid, path, path);
		return -EBUSY;
	}
	if (ctl_is_stale(err)) {
		mc_err("'%s' is a stale squashcache mount of '%s' (its daemon is gone): run mountctl umount %s, then mount again",
		       path, m.source, path);
		return -ENOTCONN;
	}
	mc_err("'%s' is already a squashcache mount of '%s' (%s): see mountctl status %s, or run mountctl umount %s first",
	       path, m.source, mc_explain(&m, err, false, why, sizeof(why)),
	       path, path);
	return -EBUSY;
}

/* mkdir -p @mk->path; only a last component it creates is forced 0700. */
static int make_dirs(struct made *mk)
{
	char *p = mk->path;
	size_t len = strlen(p);
	int err;

	while (len > 1 && p[len - 1] == '/')
		p[--len] = '\0';
	for (size_t i = 1; i <= len; i++) {
		bool last = i == len;

		if (!last && p[i] != '/')
			continue;
		p[i] = '\0';
		if (!mkdir(p, last ? 0700 : 0777)) {
			if (!mk->first)
				mk->first = i;
			if (last && chmod(p, 0700)) {
				err = -errno;
				mc_err("cannot make mountpoint '%s' mode 0700: %s",
				       p, err_str(err));
				return err;
			}
		} else if (errno != EEXIST) {
			err = -errno;
			mc_err("cannot create mountpoint directory '%s': %s", p,
			       err_str(err));
			if (!last)
				p[i] = '/';
			return err;
		}
		if (!last)
			p[i] = '/';
	}
	return 0;
}

/* Remove what make_dirs() created, deepest first. */
static void remove_dirs(struct made *mk)
{
	char *p = mk->path, *slash;

	if (!mk->first)
		return;
	while (strlen(p) >= mk->first) {
		if (rmdir(p))
			return;
		slash = strrchr(p, '/');
		if (!slash || slash == p)
			return;
		*slash = '\0';
	}
}

/* Find the mountpoint, create it if needed, and resolve it into @real. */
static int prepare_mountpoint(const char *arg, struct made *mk, char *real)
{
	char canon[PATH_MAX];
	struct stat st;
	int err;

	/* A missing parent cannot hold a mount: check once it exists. */
	err = ctl_canonical_mountpoint(arg, canon, sizeof(canon));
	if (!err) {
		err = check_free(canon);
		if (err)
			return err;
	}
	err = make_dirs(mk);
	if (err)
		return err;
	err = ctl_canonical_mountpoint(arg, canon, sizeof(canon));
	if (err) {
		mc_err("cannot resolve mountpoint '%s': %s", arg, err_str(err));
		return err;
	}
	err = check_free(canon);
	if (err)
		return err;
	if (stat(canon, &st)) {
		err = -errno;
		if (err == -ENOTCONN)
			mc_err("'%s' is a stale FUSE mount (%s): run mountctl umount %s or fusermount3 -u %s",
			       arg, err_str(err), canon, canon);
		else
			mc_err("cannot use mountpoint '%s': %s", arg,
			       err_str(err));
		return err;
	}
	if (!S_ISDIR(st.st_mode)) {
		mc_err("mountpoint '%s' is not a directory", arg);
		return -ENOTDIR;
	}
	if (!realpath(canon, real)) {
		err = -errno;
		mc_err("cannot resolve mountpoint '%s': %s", arg, err_str(err));
		return err;
	}
	/* The last component was a symlink: check where it leads too. */
	if (strcmp(real, canon))
		return check_free(real);
	return 0;
}

/* The name the squashcached to run goes by: SQUASHCACHED, else its own. */
static const char *daemon_name(void)
{
	const char *env = getenv("SQUASHCACHED");

	return env && *env ? env : "squashcached";
}

/*
 * The squashcached to run: SQUASHCACHED as given if it holds a '/', else
 * that program in PATH; without SQUASHCACHED, the one next to mountctl,
 * else the one in PATH.  Return: 0 with its path in @buf; -ENOENT.
 */
static int daemon_path(char *buf, size_t cap)
{
	const char *env = getenv("SQUASHCACHED");

	if (env && *env && strchr(env, '/')) {
		if ((size_t)snprintf(buf, cap, "%s", env) >= cap)
			return -ENAMETOOLONG;
		return 0;
	}
	return proc_find_program(daemon_name(), !(env && *env), NULL, buf, cap);
}

int mc_daemon_stat(struct stat *st)
{
	char buf[PATH_MAX];
	int err = daemon_path(buf, sizeof(buf));

	if (err)
		return err;
	return stat(buf, st) ? -errno : 0;
}

/*
 * Run squashcached with @argv (argv[0] is filled in) and wait for it, at
 * most @timeout seconds (0: no limit beyond its own).
 * Return: its exit status, to be ours.
 */
static int run_daemon(char *argv[], double timeout, const char *real)
{
	char prog[PATH_MAX];
	double deadline = mono_sec() + timeout;
	pid_t pid, r;
	int status, err;

	argv[0] = prog;
	err = daemon_path(prog, sizeof(prog));
	if (err)
		snprintf(prog, sizeof(prog), "%s", daemon_name());
	else
		err = -posix_spawn(&pid, prog, NULL, NULL, argv, environ);
	if (err) {
		mc_err("cannot run '%s': %s%s", prog, err_str(err),
		       getenv("SQUASHCACHED") ?
			       " (check SQUASHCACHED)" :
			       " (it is neither next to mountctl nor in PATH; set SQUASHCACHED=/path/to/squashcached)");
		return MC_EXIT_FAIL;
	}
	for (;;) {
		r = waitpid(pid, &status, timeout > 0 ? WNOHANG : 0);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			mc_err("cannot wait for squashcached: %s",
			       err_str(errno));
			return MC_EXIT_FAIL;
		}
		if (r == 0 && mono_sec() >= deadline) {
			struct mountinfo_mount m;

			mc_err("squashcached did not mount '%s' within %g s; stopping it",
			       real, timeout);
			kill(pid, SIGTERM);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			if (!mountinfo_find(real, &m) && ctl_is_sqc_mount(&m))
				mc_unmount(&m, true, MC_UMOUNT_TIMEOUT_S);
			return MC_EXIT_FAIL;
		}
		if (r == 0)
			sleep_ms(MC_POLL_MS);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	mc_err("squashcached was killed by signal %d (%s)", WTERMSIG(status),
	       strsignal(WTERMSIG(status)));
	return MC_EXIT_FAIL;
}

int mc_default_mountpoint(const char *image, char *buf, size_t cap)
{
	const char *base = getenv("SQUASHCACHE_BASE"), *user;
	char dflt[PATH_MAX], name[DS_NAME_MAX];
	struct stat st;
	int err;

	if (!base || !*base) {
		struct passwd *pw = getpwuid(geteuid());

		/* The account, not $USER: hooks run with a foreign env. */
		user = pw ? pw->pw_name : getenv("USER");
		if (!user || !*user || strchr(user, '/')) {
			mc_err("cannot find the default mount point: USER is not set; give MOUNTPOINT or set SQUASHCACHE_BASE");
			return -EINVAL;
		}
		snprintf(dflt, sizeof(dflt), "/dev/shm/%s/squashcache", user);
		base = dflt;
	}
	ds_image_name(image, name);
	if ((size_t)snprintf(buf, cap, "%s/%s", base, name) >= cap) {
		mc_err("default mount point for '%s' is too long: give MOUNTPOINT",
		       image);
		return -ENAMETOOLONG;
	}
	/* The base is private: create it 0700, refuse one of another user. */
	{
		struct made mk = { .path = strdup(base) };

		if (!mk.path)
			return -ENOMEM;
		err = make_dirs(&mk);
		free(mk.path);
		if (err)
			return err;
	}
	if (stat(base, &st)) {
		err = -errno;
		mc_err("cannot use '%s': %s", base, err_str(err));
		return err;
	}
	if (st.st_uid != geteuid()) {
		mc_err("'%s' belongs to uid %u, not to you: set SQUASHCACHE_BASE to a directory of yours",
		       base, (unsigned int)st.st_uid);
		return -EPERM;
	}
	return 0;
}

int mc_mount_image(const char *image, const char *mountpoint, const char *opts,
		   double timeout, bool sif, char *real)
{
	char dflt[PATH_MAX], *all = NULL, *dargv[6];
	struct made mk = { 0 };
	struct mountinfo_mount m;
	int n = 0, ret = MC_EXIT_FAIL;

	if (access(image, R_OK)) {
		mc_err("cannot open image '%s': %s", image, err_str(errno));
		return MC_EXIT_IMAGE;
	}
	if (!mountpoint) {
		if (mc_default_mountpoint(image, dflt, sizeof(dflt)))
			return MC_EXIT_FAIL;
		mountpoint = dflt;
	}
	if (opts) {
		all = strdup(opts);
		if (!all) {
			mc_err("out of memory");
			return MC_EXIT_FAIL;
		}
	}
	if (sif_opts(image, sif, &all))
		goto out_free;
	mk.path = strdup(mountpoint);
	if (!mk.path) {
		mc_err("out of memory");
		goto out_free;
	}
	if (prepare_mountpoint(mountpoint, &mk, real))
		goto out_remove;

	dargv[n++] = NULL; /* set by run_daemon() */
	if (all) {
		dargv[n++] = (char *)"-o";
		dargv[n++] = all;
	}
	dargv[n++] = (char *)image;
	dargv[n++] = real;
	dargv[n] = NULL;
	ret = run_daemon(dargv, timeout, real);
	if (ret)
		goto out_remove;
	if (mountinfo_find(real, &m) || !ctl_is_sqc_mount(&m)) {
		mc_err("squashcached reported success, but '%s' is not mounted",
		       real);
		ret = MC_EXIT_FAIL;
		goto out_remove;
	}
	goto out_free;

out_remove:
	remove_dirs(&mk);
out_free:
	free(mk.path);
	free(all);
	return ret;
}

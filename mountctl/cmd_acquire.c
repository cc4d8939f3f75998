// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl acquire` and `mountctl release`: several
 * processes share one mount, which goes away after the last of them.
 *
 * The daemon keeps the holders (daemon/holders.h explains how, and why it
 * is race-free).  acquire takes flock() on the mount point's parent
 * directory, the lock the daemon takes before it decides to go, and under
 * it finds one of three things: nothing mounted (it mounts, with itself
 * as the first holder), a live mount of the same image (it joins), or a
 * stale mount whose daemon died (it clears it and mounts again).
 *
 * The default holder is the caller's parent, the script or shell that ran
 * mountctl, with one exception: a parent that only wraps this very
 * command (timeout, time, flock, strace, sudo: its arguments end with
 * mountctl's own) exits with it, a moment after acquire returned, and
 * would take the mount along.  Such wrappers are passed over, so that
 * `timeout 60 mountctl acquire IMG` is held by the shell that typed it.
 * A rule by structure (process group or session leader) cannot tell
 * `timeout 60 mountctl acquire` from `sh job.sh` running a plain acquire:
 * both put mountctl under a process group leader started by the shell.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "mountctl.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/proc.h"

#define LOCK_TIMEOUT_S 120.0 /* waiting for another acquire or a daemon */
#define WRAPPERS_MAX 8 /* wrappers passed over by the default holder */
#define CMDLINE_MAX 65536 /* longer command lines are no wrapper's */

/* The holder, as --pid named it or default_holder() found it. */
struct acq_holder {
	pid_t pid; /* the holder */
	uint64_t start; /* its start time (proc_start_time()) */
	bool by_default; /* no --pid: found by default_holder() */
	char name[64]; /* its command name, when by_default */
	pid_t wrapper; /* the wrapper passed over next to it, or 0 */
	char wrapper_name[64]; /* that wrapper's command name */
};

struct acq {
	const char *image; /* IMAGE argument */
	const char *mountpoint; /* MOUNTPOINT argument, or NULL */
	char *opts; /* -o options, or NULL */
	double grace; /* --grace */
	double timeout; /* --timeout */
	bool sif; /* --sif */
	struct acq_holder holder; /* who holds the mount */
};

/* Read /proc/@pid/@what (@pid 0: self); return its length or -errno,
 * -E2BIG if it does not fit in @cap bytes. */
static ssize_t read_proc(pid_t pid, const char *what, char *buf, size_t cap)
{
	char path[64];
	size_t len = 0;
	ssize_t n;
	int fd;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	else
		snprintf(path, sizeof(path), "/proc/self/%s", what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < cap) {
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	return len == cap ? -E2BIG : (ssize_t)len;
}

/* The parent and command name of @pid, from /proc/PID/stat. */
static int proc_parent(pid_t pid, pid_t *ppid, char *name, size_t cap)
{
	char line[512], *open_paren, *close_paren;
	ssize_t n;
	long v;

	n = read_proc(pid, "stat", line, sizeof(line) - 1);
	if (n < 0)
		return (int)n;
	line[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold spaces and ')'. */
	open_paren = strchr(line, '(');
	close_paren = strrchr(line, ')');
	if (!open_paren || !close_paren || close_paren < open_paren ||
	    sscanf(close_paren + 1, " %*c %ld", &v) != 1)
		return -EPROTO;
	snprintf(name, cap, "%.*s", (int)(close_paren - open_paren - 1),
		 open_paren + 1);
	*ppid = (pid_t)v;
	return 0;
}

/* Does @pid only run this very command: do its arguments end with
 * mountctl's own, @self (@len bytes of /proc/self/cmdline)? */
static bool is_wrapper(pid_t pid, const char *self, size_t len)
{
	static char cmdline[CMDLINE_MAX];
	ssize_t n = read_proc(pid, "cmdline", cmdline, sizeof(cmdline));

	return n > (ssize_t)len && cmdline[n - (ssize_t)len - 1] == '\0' &&
	       !memcmp(cmdline + n - (ssize_t)len, self, len);
}

/*
 * The default holder (see the top of this file): the caller's parent, or
 * past the wrappers of this command, the process that ran the outermost.
 * A wrapper whose parent is init stays the holder: init never exits, so
 * the mount would never go.
 */
static void default_holder(struct acq_holder *h)
{
	static char self[CMDLINE_MAX];
	ssize_t len = read_proc(0, "cmdline", self, sizeof(self));
	pid_t pid = getppid(), ppid = 0;
	char name[sizeof(h->name)];

	for (int n = 0;; n++) {
		if (proc_parent(pid, &ppid, name, sizeof(name))) {
			snprintf(name, sizeof(name), "?");
			break;
		}
		if (len <= 0 || n == WRAPPERS_MAX || ppid <= 1 ||
		    !is_wrapper(pid, self, (size_t)len))
			break;
		h->wrapper = pid;
		snprintf(h->wrapper_name, sizeof(h->wrapper_name), "%s", name);
		pid = ppid;
	}
	h->pid = pid;
	h->by_default = true;
	snprintf(h->name, sizeof(h->name), "%s", name);
}

/* Parse --pid, or find the default holder; read its start time. */
static int holder_of(const char *arg, struct acq_holder *h)
{
	char *end;
	long v;
	int err;

	memset(h, 0, sizeof(*h));
	if (arg) {
		v = strtol(arg, &end, 10);
		if (end == arg || *end || v <= 0 || v > CTL_PID_MAX) {
			mc_err("bad --pid '%s' (a process id)", arg);
			return -EINVAL;
		}
		h->pid = (pid_t)v;
	} else {
		default_holder(h);
	}
	err = proc_start_time(h->pid, &h->start);
	if (err)
		mc_err("holder pid %d: %s", (int)h->pid,
		       err == -ESRCH ? "no such process" : err_str(err));
	return err;
}

/* Say which process holds the mount, when mountctl chose it. */
static void say_holder(const struct acq_holder *h)
{
	if (!h->by_default)
		return;
	if (h->wrapper)
		fprintf(stderr,
			"mountctl: the mount is held by pid %d (%s), not by pid %d (%s), which exits with this command\n",
			(int)h->pid, h->name, (int)h->wrapper, h->wrapper_name);
	else
		fprintf(stderr, "mountctl: the mount is held by pid %d (%s)\n",
			(int)h->pid, h->name);
}

/* Lock the parent directory of @path; return its fd, or -errno. */
static int lock_parent(const char *path)
{
	char dir[PATH_MAX], *slash;
	double deadline = mono_sec() + LOCK_TIMEOUT_S;
	int fd, err;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		mc_err("cannot open '%s' to lock it: %s", dir, err_str(err));
		return err;
	}
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			err = -errno;
			mc_err("cannot lock '%s': %s", dir, err_str(err));
			close(fd);
			return err;
		}
		if (mono_sec() > deadline) {
			mc_err("'%s' stayed locked for %g s by another mountctl acquire or a daemon that is unmounting: try again",
			       dir, LOCK_TIMEOUT_S);
			close(fd);
			return -ETIMEDOUT;
		}
		sleep_ms(MC_POLL_MS);
	}
	return fd;
}

/* Mount @a->image at @path with the holder as its first holder. */
static int mount_held(const struct acq *a, const char *path, char *real)
{
	char extra[128], *all;
	size_t len;
	int ret;

	snprintf(extra, sizeof(extra), "hold=%d:%llu,grace=%g",
		 (int)a->holder.pid, (unsigned long long)a->holder.start,
		 a->grace);
	len = (a->opts ? strlen(a->opts) + 1 : 0) + strlen(extra) + 1;
	all = malloc(len);
	if (!all) {
		mc_err("out of memory");
		return MC_EXIT_FAIL;
	}
	snprintf(all, len, "%s%s%s", a->opts ? a->opts : "", a->opts ? "," : "",
		 extra);
	ret = mc_mount_image(a->image, path, all, a->timeout, a->sif, real);
	free(all);
	if (ret == MC_EXIT_OK)
		say_holder(&a->holder);
	return ret;
}

/*
 * Send @req to the daemon of @m; @error gets its refusal ("" if none).
 * Return: as mc_request(); -ENOMEM (said).
 */
static int request(const struct mountinfo_mount *m, const struct ctl_req *req,
		   char error[CTL_ERROR_MAX])
{
	struct ctl_reply *rep = malloc(sizeof(*rep));
	int err;

	error[0] = '\0';
	if (!rep) {
		mc_err("out of memory");
		return -ENOMEM;
	}
	err = mc_request(m, req, rep, NULL);
	snprintf(error, CTL_ERROR_MAX, "%s", rep->error);
	free(rep);
	return err;
}

/* Join the live mount @m of the same image. */
static int join(const struct acq *a, const struct mountinfo_mount *m)
{
	const struct ctl_req req = {
		.cmd = CTL_CMD_HOLD, .hold = { a->holder.pid, a->holder.start }
	};
	char why[PATH_MAX + 256], error[CTL_ERROR_MAX];
	int err;

	err = request(m, &req, error);
	if (err == -ENOMEM)
		return MC_EXIT_FAIL;
	if (!err) {
		say_holder(&a->holder);
		return MC_EXIT_OK;
	}
	if (!strcmp(error, "not holder-managed")) {
		fprintf(stderr,
			"mountctl: note: '%s' was mounted with mountctl mount: it stays mounted after release, until mountctl umount\n",
			m->path);
		return MC_EXIT_OK;
	}
	if (error[0])
		mc_err("cannot join the mount at '%s': %s", m->path, error);
	else
		mc_err("cannot join the mount at '%s': %s", m->path,
		       mc_explain(m, err, true, why, sizeof(why)));
	return MC_EXIT_FAIL;
}

/* Under the lock: mount, join or replace what is at @path. */
static int acquire_locked(const struct acq *a, const char *path, char *real)
{
	char img[PATH_MAX], why[PATH_MAX + 256];
	struct mountinfo_mount m;
	int err;

	err = mountinfo_find(path, &m);
	if (err == -ENOENT)
		return mount_held(a, path, real);
	if (err) {
		mc_err("cannot read the mount table: %s", err_str(err));
		return MC_EXIT_FAIL;
	}
	if (!ctl_is_sqc_mount(&m)) {
		mc_err("'%s' is already a mount point (%s): acquire another directory",
		       path, m.fstype);
		return MC_EXIT_FAIL;
	}
	err = ctl_ping_mount(&m, CTL_TIMEOUT_MS, NULL);
	if (err && ctl_is_stale(err)) {
		fprintf(stderr,
			"mountctl: '%s' is a stale mount (its daemon is gone): clearing it\n",
			path);
		err = mc_unmount(&m, true, MC_UMOUNT_TIMEOUT_S);
		if (err) {
			mc_err("cannot clear the stale mount at '%s': %s", path,
			       err_str(err));
			return MC_EXIT_FAIL;
		}
		return mount_held(a, path, real);
	}
	if (err) {
		mc_err("'%s': %s", path,
		       mc_explain(&m, err, true, why, sizeof(why)));
		return MC_EXIT_FAIL;
	}
	if (!realpath(a->image, img) || strcmp(img, m.source)) {
		mc_err("'%s' is a mount of another image, '%s': release it first or acquire another mount point",
		       path, m.source);
		return MC_EXIT_OTHER_IMAGE;
	}
	snprintf(real, PATH_MAX, "%s", path);
	return join(a, &m);
}

/* mkdir -p the directory that holds @path (0700 for what it creates). */
static int make_parent(const char *path)
{
	char dir[PATH_MAX];

	for (size_t i = 1; path[i] && i < sizeof(dir); i++) {
		if (path[i] != '/')
			continue;
		memcpy(dir, path, i);
		dir[i] = '\0';
		if (mkdir(dir, 0700) && errno != EEXIST)
			return -errno;
	}
	return 0;
}

static int acquire(struct acq *a)
{
	char dflt[PATH_MAX], path[PATH_MAX], real[PATH_MAX];
	const char *arg = a->mountpoint;
	int fd, ret;

	if (access(a->image, R_OK)) {
		mc_err("cannot open image '%s': %s", a->image, err_str(errno));
		return MC_EXIT_IMAGE;
	}
	if (!arg) {
		if (mc_default_mountpoint(a->image, dflt, sizeof(dflt)))
			return MC_EXIT_FAIL;
		arg = dflt;
	}
	/* The parent must exist to be locked; the mount point itself is
	 * created by the mount, and removed again if it fails. */
	ret = ctl_canonical_mountpoint(arg, path, sizeof(path));
	if (ret == -ENOENT) {
		ret = make_parent(arg);
		if (!ret)
			ret = ctl_canonical_mountpoint(arg, path, sizeof(path));
	}
	if (ret) {
		mc_err("cannot resolve mount point '%s': %s", arg,
		       err_str(ret));
		return MC_EXIT_FAIL;
	}
	fd = lock_parent(path);
	if (fd < 0)
		return MC_EXIT_FAIL;
	ret = acquire_locked(a, path, real);
	close(fd);
	if (!ret)
		printf("%s\n", real);
	return ret;
}

static int run_acquire(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "options", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "grace", required_argument, NULL, 'g' },
		{ "timeout", required_argument, NULL, 't' },
		{ "sif", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct acq a = { 0 };
	const char *pid_arg = NULL;
	int c, ret = MC_EXIT_USAGE;

	while ((c = getopt_long(argc, argv, "o:p:g:t:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'o':
			if (mc_append_opts(&a.opts, optarg)) {
				ret = MC_EXIT_FAIL;
				goto out_free;
			}
			break;
		case 'p':
			pid_arg = optarg;
			break;
		case 'g':
			if (mc_parse_seconds(optarg, &a.grace)) {
				ret = mc_bad_usage(&mc_cmd_acquire,
						   "bad --grace '%s' (seconds)",
						   optarg);
				goto out_free;
			}
			break;
		case 't':
			if (mc_parse_seconds(optarg, &a.timeout)) {
				ret = mc_bad_usage(
					&mc_cmd_acquire,
					"bad --timeout '%s' (seconds)", optarg);
				goto out_free;
			}
			break;
		case 'S':
			a.sif = true;
			break;
		case 'h':
			mc_usage(&mc_cmd_acquire, stdout);
			ret = MC_EXIT_OK;
			goto out_free;
		default:
			mc_usage(&mc_cmd_acquire, stderr);
			goto out_free;
		}
	}
	if (argc - optind != 1 && argc - optind != 2) {
		ret = mc_bad_usage(
			&mc_cmd_acquire,
			"expected IMAGE [MOUNTPOINT], got %d arguments",
			argc - optind);
		goto out_free;
	}
	a.image = argv[optind];
	a.mountpoint = argv[optind + 1];
	if (holder_of(pid_arg, &a.holder)) {
		ret = MC_EXIT_FAIL;
		goto out_free;
	}
	ret = acquire(&a);
out_free:
	free(a.opts);
	return ret;
}

/* Ask the daemon of @m to drop holder @pid. */
static int release(const struct mountinfo_mount *m, pid_t pid)
{
	const struct ctl_req req = { .cmd = CTL_CMD_RELEASE,
				     .release = { pid } };
	char why[PATH_MAX + 256], error[CTL_ERROR_MAX];
	int err;

	err = request(m, &req, error);
	if (err == -ENOMEM)
		return MC_EXIT_FAIL;
	if (!err)
		return MC_EXIT_OK;
	if (error[0])
		mc_err("cannot release '%s' for pid %d: %s%s", m->path,
		       (int)pid, error,
		       !strcmp(error, "not a holder") ?
			       " (see the holders in mountctl status; --pid names another holder)" :
			       "");
	else
		mc_err("cannot release '%s': %s", m->path,
		       mc_explain(m, err, true, why, sizeof(why)));
	return MC_EXIT_FAIL;
}

static int run_release(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char path[PATH_MAX];
	const char *pid_arg = NULL;
	struct mountinfo_mount m;
	pid_t pid;
	int c;

	while ((c = getopt_long(argc, argv, "p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pid_arg = optarg;
			break;
		case 'h':
			mc_usage(&mc_cmd_release, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_release, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return mc_bad_usage(&mc_cmd_release,
				    "expected MOUNTPOINT, got %d arguments",
				    argc - optind);
	if (pid_arg) {
		char *end;
		long v = strtol(pid_arg, &end, 10);

		if (end == pid_arg || *end || v <= 0 || v > CTL_PID_MAX)
			return mc_bad_usage(&mc_cmd_release,
					    "bad --pid '%s' (a process id)",
					    pid_arg);
		pid = (pid_t)v;
	} else {
		struct acq_holder h = { 0 };

		default_holder(&h);
		pid = h.pid;
	}
	if (mc_resolve_arg(argv[optind], path, &m))
		return MC_EXIT_FAIL;
	return release(&m, pid);
}

const struct mc_cmd mc_cmd_acquire = {
	.name = "acquire",
	.args = "[-o OPTIONS] [--pid PID] [--grace S] [--timeout S] [--sif] IMAGE [MOUNTPOINT]",
	.summary = "mount IMAGE or join its mount, as one of its holders",
	.help = "\n"
		"The first acquire mounts IMAGE (as mountctl mount does); later and\n"
		"concurrent ones join that mount.  Each holder is a process: --pid\n"
		"PID, or by default the caller's parent (the shell or script that\n"
		"runs mountctl acquire), passing over wrappers such as timeout,\n"
		"time or flock that only run this command and exit with it.  The\n"
		"default holder is named on stderr.  The mount goes away once every\n"
		"holder has released it or exited, after --grace seconds.  A stale\n"
		"mount whose daemon died is cleared and mounted again.  Prints the\n"
		"mount point, alone on its line: MNT=$(mountctl acquire IMAGE).\n"
		"\n"
		"MOUNTPOINT defaults to $SQUASHCACHE_BASE/NAME, NAME being the image\n"
		"file name less .sqfs/.squashfs/.sqsh/.img/.sif, and the base\n"
		"/dev/shm/$USER/squashcache (created 0700).\n"
		"\n"
		"  -o, --options OPTS squashcached options for the first mount\n"
		"  -p, --pid PID      the holder (default: the caller's parent,\n"
		"                     past wrappers of this command)\n"
		"  -g, --grace S      keep the mount S seconds after the last holder\n"
		"                     (default 0; set by the first acquire)\n"
		"  -t, --timeout S    give up mounting after S seconds\n"
		"      --sif          IMAGE is an Apptainer SIF file\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 held; 1 failed; 2 usage error; 3 another image is\n"
		"mounted at MOUNTPOINT; 4 IMAGE is missing, unreadable or invalid.\n",
	.run = run_acquire,
};

const struct mc_cmd mc_cmd_release = {
	.name = "release",
	.args = "[--pid PID] MOUNTPOINT",
	.summary = "stop holding a mount made by mountctl acquire",
	.help = "\n"
		"Removes the holder (--pid PID, or the caller's parent, past\n"
		"wrappers of this command, as for acquire).  After the\n"
		"last holder, the daemon unmounts within a fraction of a second,\n"
		"or after the grace period.  A holder that exits is released by\n"
		"itself: release is for giving a mount up earlier.\n"
		"\n"
		"  -p, --pid PID      the holder (default: as for acquire)\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 released; 1 not a holder, or no such mount;\n"
		"2 usage error.\n",
	.run = run_release,
};

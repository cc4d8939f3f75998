// SPDX-License-Identifier: MIT
/*
 * This file implements the user's side of a job's datasets: job_check()
 * where the job is submitted, job_env() in each task (see job.h).  Both
 * run as the job's user and only read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "image/image.h"
#include "job_i.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/mountinfo.h"

#define FILE_MAX 8192 /* .mounts and .error are read up to this */
#define PENDING_SLACK_S 5.0 /* waited for a mounter past timeout= */
#define PENDING_POLL_MS 50 /* between two looks at .pending */

/*
 * Read the job's file @name into @buf: a regular file of root's or ours
 * (root made it; a file of anybody else is not trusted).
 * Return: bytes, or -errno.
 */
static ssize_t read_job_file(int dirfd, const char *name, char *buf, size_t cap)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (st.st_uid != 0 && st.st_uid != getuid()))
		n = -EPERM;
	else if ((n = read(fd, buf, cap - 1)) < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

/* Open the directory @name of @dirfd if it is root's and only root
 * writes it.  Return: an O_PATH descriptor, or -1. */
static int open_root_dir(int dirfd, const char *name)
{
	int fd = openat(dirfd, name,
			O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd >= 0 && (fstat(fd, &st) || st.st_uid != 0 ||
			(st.st_mode & (S_IWGRP | S_IWOTH)))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * Open the job's directory BASE/squashcache/@name, root's all the way
 * (what another user made there, a file, a symlink or a directory of
 * theirs, is never trusted).  Return: the descriptor, or -1.
 */
static int open_job_dir(const struct ds_conf *c, const char *name)
{
	int base = open(c->base, O_PATH | O_DIRECTORY | O_CLOEXEC), top,
	    fd = -1;

	if (base < 0)
		return -1;
	top = open_root_dir(base, "squashcache");
	if (top >= 0) {
		fd = open_root_dir(top, name);
		close(top);
	}
	close(base);
	return fd;
}

/* Say @msg (lines) on stderr, and for a TaskProlog as "print" lines. */
static int env_fail(const char *msg, bool task_prolog)
{
	const char *p = msg;

	fputs(msg, stderr);
	while (task_prolog && *p) {
		size_t n = strcspn(p, "\n");

		printf("print %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
	return JOB_EXIT_FAIL;
}

static void print_var(const char *key, const char *val, bool task_prolog)
{
	printf("%s%s=%s\n", task_prolog ? "export " : "", key, val);
}

/* Print the variables of the mounts named in @names ("NAME\n"...) under
 * @dir; fail if one is not mounted. */
static int print_mounts(const char *dir, char *names, const char *node,
			bool task_prolog)
{
	char path[PATH_MAX + 512], var[DS_NAME_MAX + 32],
		msg[sizeof(path) + 128];
	struct mountinfo_mount m;
	int n = 0;

	for (char *p = names; *p; p += strcspn(p, "\n"), p += *p == '\n')
		n++;
	for (char *s = strtok(names, "\n"), *first = s; s;
	     s = strtok(NULL, "\n")) {
		snprintf(path, sizeof(path), "%s/%s", dir, s);
		if (s[0] == '.' || strchr(s, '/') || strlen(s) >= DS_NAME_MAX ||
		    mountinfo_find(path, &m) || !ctl_is_sqc_mount(&m) ||
		    m.uid != getuid()) {
			snprintf(
				msg, sizeof(msg),
				"squashcache: %s: not mounted on %s (its daemon is gone?)\n",
				path, node);
			return env_fail(msg, task_prolog);
		}
		if (s == first)
			print_var("SQUASHCACHE_MOUNT", path, task_prolog);
		if (n > 1 && !ds_env_name(s, var, sizeof(var)))
			print_var(var, path, task_prolog);
	}
	return JOB_EXIT_OK;
}

/* Wait while the job's mounter is at work (the job directory @dirfd
 * holds JOB_PENDING), at most @secs.  Return: 0, or -ETIMEDOUT. */
static int wait_pending(int dirfd, double secs)
{
	double end = mono_sec() + secs;

	while (!faccessat(dirfd, JOB_PENDING, F_OK, AT_SYMLINK_NOFOLLOW)) {
		if (mono_sec() >= end)
			return -ETIMEDOUT;
		sleep_ms(PENDING_POLL_MS);
	}
	return 0;
}

int job_env(const struct ds_conf *c, const char *job, const char *node,
	    const char *expect, bool task_prolog)
{
	char base[PATH_MAX], dir[PATH_MAX + 200], name[128], buf[FILE_MAX];
	char msg[2 * PATH_MAX + 512];
	ssize_t n;
	int fd, ret;

	if (ds_job_dir_name(job, node, name, sizeof(name)) ||
	    !realpath(c->base, base)) {
		snprintf(
			msg, sizeof(msg),
			"squashcache: cannot find the job's directory (job '%s', node '%s', base=%s)\n",
			job, node, c->base);
		return env_fail(msg, task_prolog);
	}
	snprintf(dir, sizeof(dir), "%s/squashcache/%s", base, name);
	fd = open_job_dir(c, name);
	/* No job directory of root's: the job has no dataset here. */
	if (fd < 0 && (!expect || !*expect))
		return JOB_EXIT_OK;
	if (fd < 0 && job__private_base(c->base, buf, sizeof(buf))) {
		snprintf(
			msg, sizeof(msg),
			"squashcache: nothing was mounted for this job on %s: base=%s of the squashcache Slurm config is under %.256s, which job_container/tmpfs makes private to each job; set base= outside it, e.g. base=/run\n",
			node, c->base, buf);
		return env_fail(msg, task_prolog);
	}
	if (fd < 0) {
		snprintf(
			msg, sizeof(msg),
			"squashcache: nothing was mounted for this job on %s (no directory %s of root's): is the plugin in slurmd's plugstack.conf, and was slurmd restarted since?\n",
			node, dir);
		return env_fail(msg, task_prolog);
	}
	if (wait_pending(fd, c->timeout_s + PENDING_SLACK_S)) {
		close(fd);
		snprintf(
			msg, sizeof(msg),
			"squashcache: the job's mounts on %s were not done within %u s (timeout= of the squashcache Slurm config)\n",
			node, c->timeout_s);
		return env_fail(msg, task_prolog);
	}
	if (read_job_file(fd, ".error", buf, sizeof(buf)) > 0) {
		close(fd);
		return env_fail(buf, task_prolog);
	}
	n = read_job_file(fd, ".mounts", buf, sizeof(buf));
	close(fd);
	if (n <= 0) {
		snprintf(msg, sizeof(msg),
			 "squashcache: nothing is mounted in %s on %s\n", dir,
			 node);
		return env_fail(msg, task_prolog);
	}
	ret = print_mounts(dir, buf, node, task_prolog);
	fflush(stdout);
	return ret;
}

/* Check one image as the user: readable, allowed, SquashFS.  Fill
 * @abs with its absolute path.  Return: 0, or -1 (said). */
static int check_image(const struct ds_conf *c, const struct ds_image *im,
		       char *abs)
{
	struct img_opts opts;
	struct img *img;
	int err;

	if (!realpath(im->path, abs)) {
		fprintf(stderr, "squashcache: %s: cannot open: %s\n", im->path,
			err_str(errno));
		return -1;
	}
	if (!ds_is_allowed(c, abs)) {
		fprintf(stderr,
			"squashcache: %s: not under an allowed prefix (%s)\n",
			im->path, c->allow);
		return -1;
	}
	img_opts_default(&opts);
	opts.stage = STAGE_NONE;
	opts.meta_cache = 1 << 20;
	opts.data_cache = 1 << 20;
	err = img_open(abs, &opts, &img);
	if (err) {
		fprintf(stderr, "squashcache: %s: %s\n", im->path,
			err == -EMEDIUMTYPE ? "not a SquashFS image" :
					      err_str(err));
		return -1;
	}
	img_close(img);
	return 0;
}

/*
 * check_image() in a child of its own, for at most until @deadline: an
 * image on storage that does not answer must not hang the submission.
 * On success @im's path becomes absolute.  Return: 0, or -1 (said).
 */
static int check_in_time(const struct ds_conf *c, struct ds_image *im,
			 double deadline)
{
	char msg[2048], abs[PATH_MAX];
	int ep[2], rp[2], rc = -1;
	pid_t child;

	if (pipe2(ep, O_CLOEXEC))
		return -1;
	if (pipe2(rp, O_CLOEXEC)) {
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	child = fork();
	if (child == 0) {
		/* Its own group, no stdout: if it hangs in the kernel, only
		 * it is left behind, and the caller sees EOF. */
		setpgid(0, 0);
		job__child_stdio(ep[1]);
		if (check_image(c, im, abs))
			_exit(1);
		_exit(write(rp[1], abs, strlen(abs)) > 0 ? 0 : 1);
	}
	close(ep[1]);
	close(rp[1]);
	if (child > 0)
		rc = job__wait_child(child, ep[0], rp[0], deadline, msg,
				     sizeof(msg), abs, sizeof(abs));
	close(ep[0]);
	close(rp[0]);
	if (rc == 0 && abs[0] == '/') {
		strcpy(im->path, abs);
		return 0;
	}
	if (rc == -ETIMEDOUT)
		fprintf(stderr,
			"squashcache: %s: no answer within %u s: is its storage answering?\n",
			im->path, c->timeout_s);
	else
		fputs(msg, stderr);
	return -1;
}

int job_check(const struct ds_conf *c, const char *list, FILE *out)
{
	struct ds_list *l = calloc(1, sizeof(*l));
	char why[1024], *text = NULL;
	size_t cap = (size_t)DS_MAX_IMAGES * (2 * PATH_MAX + DS_OPTS_MAX);
	int ret = JOB_EXIT_USAGE;

	if (!l)
		return JOB_EXIT_FAIL;
	if (ds_list_parse(list, l, why, sizeof(why))) {
		fprintf(stderr, "squashcache: --dataset: %s\n", why);
		goto out_free;
	}
	for (unsigned int i = 0; i < l->n; i++)
		if (ds_check_user_opts(c, l->im[i].opts, why, sizeof(why))) {
			fprintf(stderr, "squashcache: %s: %s\n", l->im[i].path,
				why);
			goto out_free;
		}
	log_set_level(LOG_CRIT); /* the reason is said below */
	ret = JOB_EXIT_OK;
	for (unsigned int i = 0; i < l->n; i++)
		if (check_in_time(c, &l->im[i], mono_sec() + c->timeout_s))
			ret = JOB_EXIT_IMAGE;
	text = malloc(cap);
	if (!ret && (!text || ds_list_format(l, text, cap))) {
		fprintf(stderr,
			"squashcache: --dataset: the list is too long\n");
		ret = JOB_EXIT_USAGE;
	}
	if (!ret)
		fprintf(out, "%s\n", text);
out_free:
	free(text);
	free(l);
	return ret;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the root side of a job's datasets on a node:
 * job_prolog() and job_epilog() (see job.h for the layout and the rules
 * root follows).
 *
 * Time: the Prolog's mounts share one budget (timeout= of the site's
 * configuration); the Epilog's steps are system calls that do not wait
 * on the user's files (a lazy unmount, an abort of the FUSE connection,
 * kill) except emptying a mount point the user filled, which runs as the
 * user for at most EMPTY_BUDGET_S seconds in all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "job_i.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/mountinfo.h"
#include "util/proc.h"

#define EMPTY_BUDGET_S 10.0 /* emptying mount points as the user, in all */
#define MSG_MAX 1024 /* one failure message */
#define EXTERN_WAIT_S 10.0 /* the mounter waits for the extern step */

/* Open (@create: make) the directory of job @ids on this node. */
static int job_dir_of(const struct ds_conf *c, const struct job_ids *ids,
		      bool create, struct jobdir *j)
{
	char name[128];

	j->base = j->top = j->dir = -1;
	j->name[0] = '\0';
	if (ds_job_dir_name(ids->job, ids->node, name, sizeof(name))) {
		job__err("bad job id '%s' or node name '%s'", ids->job,
			 ids->node);
		return -EINVAL;
	}
	return job__dir_open(c, name, create, j);
}

/* The first line of a mountctl/squashcached message, prefixes dropped. */
static void tidy(char *msg)
{
	static const char *const pre[] = { "mountctl: ", "squashcached: ",
					   "squashcache: ", "error: ",
					   "image: " };
	char *s = msg;

	for (bool again = true; again;) {
		again = false;
		for (size_t i = 0; i < ARRAY_SIZE(pre); i++)
			if (!strncmp(s, pre[i], strlen(pre[i]))) {
				s += strlen(pre[i]);
				again = true;
			}
	}
	memmove(msg, s, strlen(s) + 1);
	msg[strcspn(msg, "\n")] = '\0';
}

/*
 * Append @text to the job's file @name, which belongs to the user (mode
 * 0400) or, with @root_only, to root (0600).
 */
static void append_file(int dirfd, const char *name, const struct job_ids *ids,
			bool root_only, const char *text)
{
	/* O_NONBLOCK: a lease the user holds on their file fails the open at
	 * once (EWOULDBLOCK), where it would hold root up to lease-break-time
	 * and again at each new lease. */
	int fd = openat(dirfd, name,
			O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC |
				O_NONBLOCK,
			0600);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (root_only ? fchmod(fd, 0600) :
			 fchown(fd, ids->uid, ids->gid) || fchmod(fd, 0400)) ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		job__err("job %s: cannot write %s: %s", ids->job, name,
			 err_str(errno));
	if (fd >= 0)
		close(fd);
}

/* Say that @im could not be mounted: on stderr and in .error. */
static void fail_image(struct jobdir *j, const struct job_ids *ids,
		       const char *path, const char *why)
{
	char line[PATH_MAX + MSG_MAX + 32];

	snprintf(line, sizeof(line), "squashcache: %s: %s\n", path, why);
	fprintf(stderr, "squashcache: job %s on %s: %s: %s\n", ids->job,
		ids->node, path, why);
	append_file(j->dir, ".error", ids, false, line);
}

/*
 * In a child, as the user: make @path openable from here (an absolute
 * one is; a relative one is taken from the job's working directory,
 * which becomes the current one).  Return: whether it is.
 */
static bool at_image_dir(const struct job_ids *ids, const char *path)
{
	return path[0] == '/' || (ids->workdir[0] && !chdir(ids->workdir));
}

/*
 * Tests only: with SQC_TEST_ALLOW_PAUSE=FILE, make FILE once allow= is
 * checked and wait (10 s at most) until it is gone: the moment a user
 * would swap the image's name for another (101, 103).  As the user.
 */
static void test_pause(void)
{
	const char *f = getenv("SQC_TEST_ALLOW_PAUSE");
	int fd;

	if (!f || !*f)
		return;
	fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	close(fd);
	for (int i = 0; i < 500 && !access(f, F_OK); i++)
		sleep_ms(20);
}

/*
 * As the user: open the image once and check allow= on the path that
 * descriptor really is.  Return: the descriptor, or -(exit status) for
 * _exit() (said on stderr).
 */
static int open_allowed(const struct ds_conf *c, const struct job_ids *ids,
			const struct ds_image *im)
{
	char real[PATH_MAX], link[64];
	struct stat st;
	ssize_t n;
	int fd;

	if (!at_image_dir(ids, im->path)) {
		fprintf(stderr, "not an absolute path\n");
		return -JOB_EXIT_IMAGE;
	}
	fd = open(im->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "cannot open: %s\n", err_str(errno));
		return -JOB_EXIT_IMAGE;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "not a regular file\n");
		return -JOB_EXIT_IMAGE;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, real, sizeof(real) - 1);
	if (n <= 0 || (size_t)n >= sizeof(real) - 1) {
		fprintf(stderr, "cannot resolve its path\n");
		return -JOB_EXIT_IMAGE;
	}
	real[n] = '\0';
	if (!ds_is_allowed(c, real)) {
		fprintf(stderr, "not under an allowed prefix (%s): it is %s\n",
			c->allow, real);
		return -JOB_EXIT_IMAGE;
	}
	return fd;
}

/*
 * Mark every descriptor from 3 on close-on-exec: close_range(), or where
 * the kernel has no CLOSE_RANGE_CLOEXEC (before 5.11), each descriptor of
 * /proc/self/fd.  Return: 0 or -errno.
 */
static int cloexec_from_3(void)
{
	struct dirent *e;
	DIR *d;
	int err = 0;

	if (!close_range(3, ~0U, CLOSE_RANGE_CLOEXEC))
		return 0;
	d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (fd >= 3 && fd != dirfd(d) && fcntl(fd, F_SETFD, FD_CLOEXEC))
			err = -errno;
	}
	closedir(d);
	return err;
}

/* What a mount child needs: the image, where, and by when. */
struct mount_req {
	const struct ds_conf *c; /* the site's configuration */
	const struct job_ids *ids; /* the job */
	const struct ds_image *im; /* the image */
	const char *mnt; /* the mount point, canonical */
	double deadline; /* mono_sec() when the Prolog gives up */
};

/*
 * The mount child's part, as the user: open the image, check allow= on
 * the path it really is, and run the mount through mountctl as the SPANK
 * plugin runs `mountctl job`, a program of its own: exec the running
 * mountctl (/proc/self/exe, root's and the one job__exe_stat() names)
 * as `mountctl mount --timeout S [-o OPTS] /dev/fd/N MNT`.  The daemon
 * it starts mounts that very file, inherited as /dev/fd/N and never
 * opened by name again.  Every other descriptor is closed at the exec.
 * Return: the exit status for _exit(), only if there was no exec (said
 * on stderr).
 */
static int exec_mount(const struct mount_req *r, int resfd)
{
	char opts[3 * DS_OPTS_MAX], image[32], secs[32];
	const char *argv[12];
	int fd = open_allowed(r->c, r->ids, r->im), n = 0, err;

	(void)resfd; /* closed at the exec: the daemon is found after */
	if (fd < 0)
		return -fd;
	if (ds_mount_opts(r->c, r->im->opts, opts, sizeof(opts))) {
		fprintf(stderr, "options too long\n");
		return JOB_EXIT_USAGE;
	}
	test_pause();
	/* Nothing of root's passes the exec but stdio and the image. */
	err = cloexec_from_3();
	if (!err && fcntl(fd, F_SETFD, 0))
		err = -errno;
	if (err) {
		fprintf(stderr, "cannot hand the image over: %s\n",
			err_str(err));
		return JOB_EXIT_FAIL;
	}
	snprintf(image, sizeof(image), "/dev/fd/%d", fd);
	/* A second to spare: mountctl stops a late daemon itself. */
	snprintf(secs, sizeof(secs), "%.3f",
		 MAX(r->deadline - mono_sec() - 1.0, 1.0));
	argv[n++] = "mountctl";
	argv[n++] = "mount";
	argv[n++] = "--timeout";
	argv[n++] = secs;
	if (opts[0]) {
		argv[n++] = "-o";
		argv[n++] = opts;
	}
	argv[n++] = "--";
	argv[n++] = image;
	argv[n++] = r->mnt;
	argv[n] = NULL;
	execv("/proc/self/exe", (char *const *)argv);
	fprintf(stderr, "cannot run mountctl mount: %s\n", err_str(errno));
	return JOB_EXIT_FAIL;
}

/*
 * The report child's part, as the user, once `mountctl mount` made the
 * mount: ask the daemon at the mount point for its pid (the mount table,
 * then a ping, as mountctl asks) and write "PID START" to @resfd.
 * Return: the exit status for _exit().
 */
static int report_daemon(const struct mount_req *r, int resfd)
{
	struct mountinfo_mount *m = malloc(sizeof(*m));
	uint64_t start = 0;
	pid_t pid = 0;
	int err = m ? mountinfo_find(r->mnt, m) : -ENOMEM;

	if (!err && !ctl_is_sqc_mount(m))
		err = -EMEDIUMTYPE;
	if (!err)
		err = ctl_ping_mount(m, CTL_TIMEOUT_MS, &pid);
	free(m);
	if (err) {
		fprintf(stderr, "mounted, but its daemon does not answer: %s\n",
			err_str(err));
		return JOB_EXIT_FAIL;
	}
	if (!proc_start_time(pid, &start))
		dprintf(resfd, "%llu %llu\n", (unsigned long long)pid,
			(unsigned long long)start);
	return JOB_EXIT_OK;
}

/*
 * Read the start of @im as the user, in a child outside the job's
 * cgroups (job_cgroup.c says why), and wait for it until @deadline: the
 * image's storage answers, or it is left to hang where it cannot keep
 * Slurm from ending the job.  What the read finds is not looked at:
 * exec_mount() says what is wrong with the image.
 * Return: 0; -ETIMEDOUT if the read did not come back; -errno if the
 * child did not start.
 */
static int probe_image(const struct job_ids *ids, const struct ds_image *im,
		       double deadline)
{
	char msg[8], res[8];
	pid_t child;
	int rc;

	child = fork();
	if (child == 0) {
		char buf[4096];
		ssize_t n = 0;
		int fd;

		job__child_stdio(-1);
		/* Where it cannot leave them, it reads where it is. */
		(void)job_cgroup_leave(ids);
		if (job__drop_to_user(ids))
			_exit(126);
		if (at_image_dir(ids, im->path)) {
			fd = open(im->path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0)
				n = pread(fd, buf, sizeof(buf), 0);
		}
		_exit(n < 0);
	}
	if (child < 0)
		return -errno;
	rc = job__wait_child(child, -1, -1, deadline, msg, sizeof(msg), res,
			     sizeof(res));
	return rc < 0 ? rc : 0;
}

/* Make the user's mount point NAME in the job directory, 0700. */
static int make_mountpoint(struct jobdir *j, const struct job_ids *ids,
			   const char *name)
{
	int fd, err = 0;

	if (mkdirat(j->dir, name, 0700) && errno != EEXIST)
		return -errno;
	fd = job__open_here(j->dir, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -errno;
	if (fchown(fd, ids->uid, ids->gid) || fchmod(fd, 0700))
		err = -errno;
	close(fd);
	return err;
}

/*
 * Run @fn in a child that drops to the user, recorded in JOB_CHILDREN
 * before it runs, and wait for it until @r->deadline, its stderr read
 * into @msg (MSG_MAX) and what it writes to its result pipe into @res
 * (128 bytes).  Return: as job__wait_child(); -errno if it did not start.
 */
static int run_as_user(struct jobdir *j, const struct mount_req *r,
		       int (*fn)(const struct mount_req *r, int resfd),
		       char *msg, char *res)
{
	int ep[2], rp[2], rc;
	pid_t child;

	if (pipe2(ep, O_CLOEXEC))
		return -errno;
	if (pipe2(rp, O_CLOEXEC)) {
		rc = -errno;
		close(ep[0]);
		close(ep[1]);
		return rc;
	}
	/* Recorded first: the Epilog kills it if the Prolog is gone. */
	child = job__fork_recorded(j, JOB_CHILDREN, false);
	if (child == 0) {
		job__child_stdio(ep[1]);
		if (job__drop_to_user(r->ids))
			_exit(126);
		_exit(fn(r, rp[1]));
	}
	close(ep[1]);
	close(rp[1]);
	rc = child < 0 ? child :
			 job__wait_child(child, ep[0], rp[0], r->deadline, msg,
					 MSG_MAX, res, 128);
	close(ep[0]);
	close(rp[0]);
	return rc;
}

/*
 * Mount @r's image as the user: exec_mount() in a child, then
 * report_daemon() in another for the daemon's "PID START" in @res.
 * Return: as run_as_user().
 */
static int spawn_mount(struct jobdir *j, const struct mount_req *r, char *msg,
		       char *res)
{
	int rc = run_as_user(j, r, exec_mount, msg, res);

	return rc ? rc : run_as_user(j, r, report_daemon, msg, res);
}

struct under_arg {
	const char *dir; /* the job directory's path */
	const char *only; /* one mount point's name in it, or NULL */
	uid_t uid; /* the job's user */
};

/* job__each_daemon(): kill @p if it serves a mount point under the job
 * directory and is the job's user's.  Return: 1 if it was killed. */
static int kill_if_under(struct job_proc *p, const char *mnt, void *arg)
{
	struct under_arg *a = arg;
	size_t n = strlen(a->dir);
	const char *rel = mnt + n + 1;

	if (strncmp(mnt, a->dir, n) || mnt[n] != '/' || !*rel ||
	    strchr(rel, '/') || (a->only && strcmp(rel, a->only)))
		return 0;
	p->uid = a->uid;
	return !job__kill_checked(p, SIGKILL);
}

/*
 * Kill the daemons that serve a mount point of the job directory (@only:
 * that one), recorded or not: a daemon detaches into a session of its own
 * (its mount child's process group, killed at the deadline, does not hold
 * it) and is recorded only once it answers, after the prolog may be gone.
 */
static void kill_daemons_under(struct jobdir *j, const struct job_ids *ids,
			       const char *only)
{
	struct under_arg a = { j->path, only, ids->uid };
	struct stat exe;

	if (job__exe_stat(false, &exe) ||
	    job__each_daemon(&exe, kill_if_under, &a) < 0)
		job__err("job %s: cannot look for its daemons", ids->job);
}

/*
 * Mount one image as the user before @deadline; record its daemon, or
 * the failure.  Return: 0 or -1 (said).
 */
static int mount_one(const struct ds_conf *c, const struct job_ids *ids,
		     struct jobdir *j, const struct ds_image *im,
		     double deadline)
{
	char mnt[PATH_MAX + DS_NAME_MAX], msg[MSG_MAX], res[128];
	char line[DS_NAME_MAX + 64];
	const struct mount_req req = { c, ids, im, mnt, deadline };
	unsigned long long pid, start;
	int rc = -ETIMEDOUT;

	snprintf(mnt, sizeof(mnt), "%s/%s", j->path, im->name);
	if (strlen(mnt) >= PATH_MAX || make_mountpoint(j, ids, im->name)) {
		fail_image(j, ids, im->path, "cannot make the mount point");
		return -1;
	}
	if (mono_sec() < deadline)
		rc = probe_image(ids, im, deadline);
	if (rc == 0)
		rc = spawn_mount(j, &req, msg, res);
	if (rc == 0 && sscanf(res, "%llu %llu", &pid, &start) == 2) {
		snprintf(line, sizeof(line), "%s %llu %llu\n", im->name, pid,
			 start);
		append_file(j->dir, ".daemons", ids, true, line);
		snprintf(line, sizeof(line), "%s\n", im->name);
		append_file(j->dir, ".mounts", ids, false, line);
		return 0;
	}
	if (rc == -ETIMEDOUT) {
		snprintf(
			msg, MSG_MAX,
			"not mounted within %u s, the time the site allows (timeout= in the squashcache Slurm config): is its storage answering?",
			c->timeout_s);
	} else if (rc == 126 || rc < 0) {
		snprintf(msg, MSG_MAX, "cannot run the mount as uid %u",
			 (unsigned int)ids->uid);
	} else {
		tidy(msg);
		if (!msg[0])
			snprintf(msg, MSG_MAX,
				 "mountctl mount failed (exit status %d)", rc);
	}
	/* Whatever failed (the deadline, squashcached's own timeout), no
	 * daemon of this mount point may stay, though it detached into a
	 * session of its own, nor a mount it made. */
	kill_daemons_under(j, ids, im->name);
	job__detach_under(j, im->name);
	unlinkat(j->dir, im->name, AT_REMOVEDIR);
	fail_image(j, ids, im->path, msg);
	return -1;
}

/*
 * Mount every image of @l before @deadline.  Return: the number of
 * images that could not be mounted (each said).
 */
static int mount_all(const struct ds_conf *c, const struct job_ids *ids,
		     struct jobdir *j, const struct ds_list *l, double deadline)
{
	char why[MSG_MAX];
	int failed = 0;

	for (unsigned int i = 0; i < l->n; i++) {
		if (ds_check_user_opts(c, l->im[i].opts, why, sizeof(why)))
			fail_image(j, ids, l->im[i].path, why);
		else if (!mount_one(c, ids, j, &l->im[i], deadline))
			continue;
		failed++;
	}
	return failed;
}

/* Fail every image of @l with @why. */
static void fail_all(struct jobdir *j, const struct job_ids *ids,
		     const struct ds_list *l, const char *why)
{
	for (unsigned int i = 0; i < l->n; i++)
		fail_image(j, ids, l->im[i].path, why);
}

/*
 * The mounter's part (root, in the background): join the job's extern
 * step, then mount there; the tasks wait for JOB_PENDING to go.  A job
 * whose extern step does not come (no PrologFlags=Contain, a leftover
 * cgroup of Slurm's on a node that no longer uses them) is mounted all
 * the same, outside the job's cgroups, as where there are none.
 */
static void run_mounter(const struct ds_conf *c, const struct job_ids *ids,
			struct jobdir *j, const struct ds_list *l,
			double deadline)
{
	char why[PATH_MAX + MSG_MAX];
	struct stat a, b;
	int err;

	err = job_cgroup_enter(ids, MIN(deadline, mono_sec() + EXTERN_WAIT_S),
			       why, sizeof(why));
	if (err) {
		openlog("squashcache", LOG_PID, LOG_DAEMON);
		syslog(LOG_WARNING,
		       "job %s on %s: %s; its daemons run outside its cgroups",
		       ids->job, ids->node, why);
	}
	if (stat(j->path, &a) || fstat(j->dir, &b) || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		snprintf(
			why, sizeof(why),
			"%s is another directory inside the job's mount namespace (job_container/tmpfs makes /tmp and /dev/shm private): set base= of the squashcache Slurm config outside them, e.g. base=/run",
			j->path);
		fail_all(j, ids, l, why);
	} else {
		mount_all(c, ids, j, l, deadline);
	}
	unlinkat(j->dir, JOB_PENDING, 0);
}

/*
 * Leave the mounts to a mounter in the background, on a node where the
 * job's cgroups are made only after the Prolog (job_cgroup.c says why):
 * the Prolog returns, Slurm starts the extern step, the mounter joins it
 * and mounts.  JOB_PENDING (root's, 0444) tells the tasks to wait;
 * JOB_MOUNTER (root's, 0600) names the mounter for the Epilog.
 * Return: 0 if the mounter runs; -errno if it could not start (then
 * nothing was left behind).
 */
static int mount_later(const struct ds_conf *c, const struct job_ids *ids,
		       struct jobdir *j, const struct ds_list *l,
		       double deadline)
{
	int fd = openat(j->dir, JOB_PENDING,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0444);
	pid_t child;

	if (fd < 0)
		return -errno;
	close(fd);
	/* Recorded before it runs: an Epilog right after us kills it. */
	/* In a session of its own before the Prolog returns: slurmd kills
	 * the Prolog's process group once it exits. */
	child = job__fork_recorded(j, JOB_MOUNTER, true);
	if (child == 0) {
		/* Nothing of the Prolog's: slurmd reads its output to
		 * the end. */
		job__child_stdio(-1);
		run_mounter(c, ids, j, l, deadline);
		_exit(0);
	}
	if (child < 0) {
		unlinkat(j->dir, JOB_PENDING, 0);
		return -EAGAIN;
	}
	return 0;
}

static int clean_job(struct jobdir *j, const struct job_ids *ids);

/* Fail every image of @l: base= is under @dir, which job_container/tmpfs
 * makes private to each job (the tasks would not see the mounts). */
static void fail_private_base(const struct ds_conf *c,
			      const struct job_ids *ids, struct jobdir *j,
			      const struct ds_list *l, const char *dir)
{
	char why[2 * PATH_MAX + MSG_MAX];

	snprintf(
		why, sizeof(why),
		"base=%s of the squashcache Slurm config is under %s, which job_container/tmpfs (JobContainerType in slurm.conf) makes private to each job: its tasks cannot see mounts there; set base= outside it, e.g. base=/run",
		c->base, dir);
	fail_all(j, ids, l, why);
}

int job_prolog(const struct ds_conf *c, const struct job_ids *ids,
	       const char *list)
{
	double deadline = mono_sec() + c->timeout_s;
	struct ds_list *l = calloc(1, sizeof(*l));
	struct ds_conf *nokeep = NULL;
	struct jobdir j;
	char why[MSG_MAX];
	int failed = 0;

	if (!l)
		return 1;
	/* Before any mount, and for every job: its memory comes first.  A
	 * keeper that cannot be started or does not answer costs the job
	 * its keeping only: its mounts go without keep=. */
	if (job__keep_prolog(c, ids) && (nokeep = malloc(sizeof(*nokeep)))) {
		*nokeep = *c;
		snprintf(nokeep->keep, sizeof(nokeep->keep), "0");
		c = nokeep;
	}
	if (!list || !*list)
		goto out_free;
	if (job_dir_of(c, ids, true, &j)) {
		failed = 1;
		goto out_close;
	}
	/* A job that runs again on this node (requeued) starts afresh. */
	if (clean_job(&j, ids)) {
		fail_image(
			&j, ids, j.path,
			"what an earlier run of the job left cannot be removed");
		failed = 1;
		goto out_close;
	}
	if (ds_list_parse(list, l, why, sizeof(why))) {
		fail_image(&j, ids, "--dataset", why);
		failed = 1;
		goto out_close;
	}
	if (job__private_base(c->base, why, sizeof(why))) {
		fail_private_base(c, ids, &j, l, why);
		failed = (int)l->n;
	} else if (!job_cgroup_is_pending(ids) ||
		   mount_later(c, ids, &j, l, deadline)) {
		failed = mount_all(c, ids, &j, l, deadline);
	}
out_close:
	job__dir_close(&j);
out_free:
	free(l);
	free(nokeep);
	return failed;
}

/* Kill the daemons .daemons names that are still the same processes:
 * squashcached, of the job's user, started when recorded. */
static void kill_daemons(struct jobdir *j, const struct job_ids *ids)
{
	int fd = openat(j->dir, ".daemons", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char name[DS_NAME_MAX];
	unsigned long long pid, start;
	struct stat st, exe;
	struct job_proc p = { .uid = ids->uid, .exe = &exe };
	FILE *f;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    job__exe_stat(false, &exe) || !(f = fdopen(fd, "r"))) {
		job__err("job %s: cannot check its daemons", ids->job);
		close(fd);
		return;
	}
	while (fscanf(f, "%63s %llu %llu", name, &pid, &start) == 3) {
		if (pid <= 1 || pid >= (1u << 30))
			continue;
		p.pid = (pid_t)pid;
		p.start = start;
		(void)job__kill_checked(&p, SIGKILL);
	}
	fclose(f);
}

/* Kill the processes that mount for the job, recorded before they
 * could outlive the hook that started them: the mounter (root's
 * mountctl: it joins the job's cgroups, where Slurm kills it; before
 * that it waits for the extern step) and each mount child (the user's). */
static void kill_mounters(struct jobdir *j, const struct job_ids *ids)
{
	struct stat exe;

	if (job__exe_stat(true, &exe)) {
		job__err("job %s: cannot check its mounters", ids->job);
		return;
	}
	job__kill_recorded(j, JOB_MOUNTER, 0, &exe);
	job__kill_recorded(j, JOB_CHILDREN, ids->uid, &exe);
}

/* As the user: remove everything below the directory @fd, no deeper
 * than @depth levels.  Return: 0 or -1. */
static int empty_tree(int fd, int depth)
{
	DIR *d;
	struct dirent *e;
	int bad = 0;

	d = depth > 0 && !fchmod(fd, 0700) ? fdopendir(fd) : NULL;
	if (!d) {
		close(fd);
		return -1;
	}
	while ((e = readdir(d))) {
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		/* One call for a file or an empty directory, the usual case. */
		if (e->d_type != DT_DIR && !unlinkat(fd, e->d_name, 0))
			continue;
		if (!unlinkat(fd, e->d_name, AT_REMOVEDIR))
			continue;
		if (errno != ENOTEMPTY && errno != EEXIST) {
			bad = -1;
			continue;
		}
		sub = job__open_dir_at(fd, e->d_name, O_RDONLY);
		if (sub < 0 || empty_tree(sub, depth - 1) ||
		    unlinkat(fd, e->d_name, AT_REMOVEDIR))
			bad = -1;
	}
	closedir(d);
	return bad;
}

/* Empty the user's mount point @name as the user, within a budget. */
static void empty_as_user(struct jobdir *j, const struct job_ids *ids,
			  const char *name, double deadline)
{
	/* Not into a mount the user may have made on it again. */
	int fd = job__open_here(j->dir, name, O_RDONLY | O_DIRECTORY);
	char msg[8], res[8];
	struct stat st;
	pid_t child;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || st.st_uid != ids->uid || ids->uid == 0) {
		close(fd);
		return;
	}
	child = fork();
	if (child == 0) {
		job__child_stdio(-1); /* slurmd reads the hook's to the end */
		_exit(job__drop_to_user(ids) || empty_tree(fd, 256) ? 1 : 0);
	}
	close(fd);
	if (child > 0 && job__wait_child(child, -1, -1, deadline, msg,
					 sizeof(msg), res, sizeof(res)))
		job__err("job %s: could not empty %s/%s as uid %u", ids->job,
			 j->path, name, (unsigned int)ids->uid);
}

/* Remove the entries of the job directory (root made every one). */
static int remove_entries(struct jobdir *j, const struct job_ids *ids)
{
	double deadline = mono_sec() + EMPTY_BUDGET_S;
	int fd = dup(j->dir), err = 0;
	struct dirent *e;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!unlinkat(j->dir, e->d_name, 0) || errno != EISDIR)
			continue;
		if (unlinkat(j->dir, e->d_name, AT_REMOVEDIR) &&
		    errno == ENOTEMPTY) {
			empty_as_user(j, ids, e->d_name, deadline);
			unlinkat(j->dir, e->d_name, AT_REMOVEDIR);
		}
		if (job__exists_here(j->dir, e->d_name)) {
			job__err("job %s: cannot remove %s/%s", ids->job,
				 j->path, e->d_name);
			err = -ENOTEMPTY;
		}
	}
	closedir(d);
	return err;
}

/* Unmount, stop and remove what the job has in its directory.
 * Return: 0, or -ENOTEMPTY if something could not be removed. */
static int clean_job(struct jobdir *j, const struct job_ids *ids)
{
	/* Those that start daemons first, then every daemon (one that was
	 * still starting too), then their mounts. */
	kill_mounters(j, ids);
	kill_daemons(j, ids);
	kill_daemons_under(j, ids, NULL);
	job__detach_under(j, NULL);
	return remove_entries(j, ids);
}

int job_epilog(const struct ds_conf *c, const struct job_ids *ids)
{
	char line[PATH_MAX + 512];
	struct jobdir j;
	int err = job_dir_of(c, ids, false, &j);

	if (err == -ENOENT) {
		job__dir_close(&j);
		return 0;
	}
	if (!err) {
		err = clean_job(&j, ids);
		if (!err && unlinkat(j.top, j.name, AT_REMOVEDIR))
			err = -errno;
	}
	if (err) {
		/* Another owner's entry, no descriptor left, a bad id: what
		 * the job has on the node may be left, for check-node. */
		snprintf(line, sizeof(line), "job %.24s on %.65s: %s/%s/%s: %s",
			 ids->job, ids->node, c->base, JOB_TOP_NAME, j.name,
			 err_str(err));
		job__err("%s", line);
		job__note_left(c, line);
	}
	job__dir_close(&j);
	return err;
}

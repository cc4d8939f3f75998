// SPDX-License-Identifier: MIT
/*
 * This file implements how a job's daemons come to live inside the job
 * on a node where Slurm tracks jobs in cgroups (proctrack/cgroup): in the
 * cgroups of the job's extern step, so that their memory counts against
 * the job's limit (task/cgroup, ConstrainRAMSpace), Slurm kills them when
 * the job ends, and they outlive every other step of the job.
 *
 * Design.  The extern step (PrologFlags=Contain) is the one step that
 * lasts as long as the job; pam_slurm_adopt puts ssh sessions into it.
 * Slurm 22.05 makes it only after the Prolog, in the same request
 * (slurmd's _rpc_prolog runs the Prolog, then starts the extern
 * slurmstepd), and nothing of the job's cgroups exists while the Prolog
 * runs.  So the Prolog cannot put a daemon there; its mounts are made by
 * a mounter it leaves behind, which waits here for the extern step and
 * joins it before it mounts: each daemon is born inside the job, and its
 * default RAM budget is taken from the job's limit.  (Slurm 24.05's
 * PrologFlags=RunInJob runs the Prolog inside the extern step: then the
 * Prolog is in the job's cgroups already and mounts where it is.)
 *
 * Where Slurm keeps a step (the node's root is created by slurmd when
 * it starts, the rest by the step's slurmstepd):
 *   v1  MNT/slurm[_NODE]/uid_UID/job_JOB/step_extern, in the freezer
 *       hierarchy (proctrack/cgroup) and in memory, cpuset, devices...
 *       when task/cgroup constrains them
 *   v2  MNT/system.slice/[NODE_]slurmstepd.scope/job_JOB/step_extern/
 *       user/task_special, where Slurm adds pids to the extern step
 * ("_NODE" only in a build for several slurmd on one machine.)  The
 * extern step is ready once its first process, the step's "sleep", is in
 * the freezer's (v2: task_special's) cgroup.procs: Slurm adds it there
 * after every controller's cgroup was made.
 *
 * Before a daemon is started, a child that only reads the start of the
 * image leaves the job's cgroups for the root ones (job_cgroup_leave()):
 * storage that never answers can hold a reader in an uninterruptible
 * sleep, and Slurm drains a node where a job's process outlives every
 * kill.  The daemon is started only once that read came back; storage
 * that dies under a running daemon is the node's problem, as for any
 * reader.
 *
 * The mounter also enters the mount namespace of that process: with
 * job_container/tmpfs the job runs in a namespace of its own, made private
 * from the node's, and a mount made outside after it exists would never
 * reach the job's tasks.
 *
 * The work takes the hierarchies' roots as descriptors (struct
 * job_cgroups, job_i.h), so that unit tests drive it against temporary
 * trees laid out as Slurm's; the entry points open the real ones with
 * job__cg_open_mounted(), the one place that decides what a hierarchy is.
 *
 * Safety (root): the hierarchies come from /proc/self/mountinfo and must
 * be cgroup file systems (their statfs magic); every directory is opened without following
 * symlinks, must be on the same file system as its hierarchy and owned by
 * root (the step's own directory may be the job's user's: Slurm's v1
 * chowns it).  A cgroup file system holds no symlinks or files that
 * users create, so nothing here can lead root out of it.  The process
 * whose namespace is entered must be root's in every uid and in this
 * user namespace: a user's process in the extern step cannot choose it.
 * It is held by its /proc directory from the checks to the entering, so
 * a pid that is reused meanwhile (by a user's process in a namespace of
 * its own) is never entered.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "job_i.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/mountinfo.h"

#define CG_POLL_MS 20 /* between two looks for the extern step */
#define CG_EXTERN "step_extern" /* the extern step's directory */

/* Does the comma list @opts name @word? */
static bool has_opt(const char *opts, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = opts; *p; p += strcspn(p, ","), p += *p == ',')
		if (!strncmp(p, word, n) && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

int job__cg_add(struct job_cgroups *cg, int fd, const char *mnt, bool v2,
		bool freezer)
{
	struct job_cg_hier *h;
	struct stat st;

	if (cg->n >= JOB_CG_HIER_MAX || fstat(fd, &st)) {
		close(fd);
		return cg->n >= JOB_CG_HIER_MAX ? -E2BIG : -errno;
	}
	h = &cg->h[cg->n++];
	h->fd = fd;
	h->dev = st.st_dev;
	h->v2 = v2;
	h->freezer = freezer;
	snprintf(h->mnt, sizeof(h->mnt), "%s", mnt);
	return 0;
}

void job__cg_close(struct job_cgroups *cg)
{
	for (int i = 0; i < cg->n; i++)
		close(cg->h[i].fd);
	cg->n = 0;
}

/* A hierarchy of /proc/self/mountinfo: opened and added if it is a
 * cgroup file system of its kind (the check a test's tree skips). */
static int add_mounted(const struct mountinfo_entry *e, void *arg)
{
	bool v2 = !strcmp(e->fstype, "cgroup2");
	unsigned long magic = v2 ? CGROUP2_SUPER_MAGIC : CGROUP_SUPER_MAGIC;
	struct statfs sf;
	int fd;

	if ((!v2 && strcmp(e->fstype, "cgroup")) || e->mountpoint[0] != '/')
		return 0;
	fd = open(e->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstatfs(fd, &sf) || (unsigned long)sf.f_type != magic) {
		close(fd);
		return 0;
	}
	(void)job__cg_add(arg, fd, e->mountpoint, v2,
			  !v2 && has_opt(e->super_opts, "freezer"));
	return 0;
}

int job__cg_open_mounted(struct job_cgroups *cg)
{
	int err;

	cg->n = 0;
	err = mountinfo_foreach(add_mounted, cg);
	if (err < 0)
		job__cg_close(cg);
	return err < 0 ? err : 0;
}

/* Open the directory @name of @dirfd on the cgroup file system @dev,
 * owned by root (or, with @uid_ok, by @uid).  Return: fd, or -errno. */
static int cg_open(int dirfd, const char *name, dev_t dev, bool uid_ok,
		   uid_t uid)
{
	int fd = job__open_dir_at(dirfd, name, O_RDONLY);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_dev != dev ||
	    (st.st_uid != 0 && !(uid_ok && st.st_uid == uid))) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * Open Slurm's directory for node @node in hierarchy @h ("slurm_NODE" or
 * "slurm"; v2: the slurmstepd scope).  Return: fd; -ENOENT if there is
 * none; -errno.
 */
static int node_root(const struct job_cg_hier *h, const char *node)
{
	char name[128];
	int sfd, fd;

	if (!h->v2) {
		snprintf(name, sizeof(name), "slurm_%s", node);
		fd = cg_open(h->fd, name, h->dev, false, 0);
		if (fd == -ENOENT)
			fd = cg_open(h->fd, "slurm", h->dev, false, 0);
		return fd;
	}
	sfd = cg_open(h->fd, "system.slice", h->dev, false, 0);
	if (sfd < 0)
		return sfd;
	snprintf(name, sizeof(name), "%s_slurmstepd.scope", node);
	fd = cg_open(sfd, name, h->dev, false, 0);
	if (fd == -ENOENT)
		fd = cg_open(sfd, "slurmstepd.scope", h->dev, false, 0);
	close(sfd);
	return fd;
}

/*
 * Open the job's directory under the node's root @root ("uid_U/job_J";
 * v2 "job_J").  Return: fd, or -errno.
 */
static int job_cg(const struct job_cg_hier *h, int root,
		  const struct job_ids *ids)
{
	char name[64];
	int ufd, fd;

	snprintf(name, sizeof(name), "job_%s", ids->job);
	if (h->v2)
		return cg_open(root, name, h->dev, false, 0);
	{
		char uname[32];

		snprintf(uname, sizeof(uname), "uid_%u",
			 (unsigned int)ids->uid);
		ufd = cg_open(root, uname, h->dev, false, 0);
	}
	if (ufd < 0)
		return ufd;
	fd = cg_open(ufd, name, h->dev, false, 0);
	close(ufd);
	return fd;
}

/*
 * Open the cgroup of the job's extern step to join in hierarchy @h
 * (v1: step_extern; v2: step_extern/user/task_special).  Return: fd;
 * -ENOENT if it is not there (yet); -errno.
 */
static int extern_cg(const struct job_cg_hier *h, const struct job_ids *ids)
{
	int root, job, step, user, fd;

	root = node_root(h, ids->node);
	if (root < 0)
		return root;
	job = job_cg(h, root, ids);
	close(root);
	if (job < 0)
		return job;
	step = cg_open(job, CG_EXTERN, h->dev, true, ids->uid);
	close(job);
	if (step < 0 || !h->v2)
		return step;
	user = cg_open(step, "user", h->dev, false, 0);
	close(step);
	if (user < 0)
		return user;
	fd = cg_open(user, "task_special", h->dev, false, 0);
	close(user);
	return fd;
}

/* Does the job's directory hold a step other than the extern one?  (Then
 * the job has no extern step: its other steps start after the Prolog's
 * extern step would have.) */
static bool has_other_step(const struct job_cg_hier *h,
			   const struct job_ids *ids)
{
	int root, job;
	bool other = false;
	struct dirent *e;
	DIR *d;

	root = node_root(h, ids->node);
	if (root < 0)
		return false;
	job = job_cg(h, root, ids);
	close(root);
	if (job < 0)
		return false;
	d = fdopendir(job);
	if (!d) {
		close(job);
		return false;
	}
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "step_", 5) &&
		    strcmp(e->d_name, CG_EXTERN))
			other = true;
	closedir(d);
	return other;
}

/* Whether cgroup @fd lists process @pid now. */
static bool cg_lists(int fd, long pid)
{
	int pfd = openat(fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	FILE *f = pfd >= 0 ? fdopen(pfd, "r") : NULL;
	bool in = false;
	long p;

	if (!f) {
		if (pfd >= 0)
			close(pfd);
		return false;
	}
	while (!in && fscanf(f, "%ld", &p) == 1)
		in = p == pid;
	fclose(f);
	return in;
}

/* Whether the process of /proc directory @proc is root's in every uid and
 * lives in user namespace @userns.  Its uids first, from its status: the
 * ns/user link of a process waits on its exec lock, which a user's
 * execve() can hold, so it is looked at only for one of root's. */
static bool proc_is_roots(int proc, const struct stat *userns)
{
	unsigned int u[4];
	char line[256];
	bool root = false;
	struct stat its;
	FILE *s;
	int fd;

	fd = openat(proc, "status", O_RDONLY | O_CLOEXEC);
	s = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!s) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (fgets(line, sizeof(line), s))
		if (sscanf(line, "Uid: %u %u %u %u", &u[0], &u[1], &u[2],
			   &u[3]) == 4)
			root = !(u[0] | u[1] | u[2] | u[3]);
	fclose(s);
	return root && !fstatat(proc, "ns/user", &its, 0) &&
	       its.st_ino == userns->st_ino && its.st_dev == userns->st_dev;
}

/*
 * The first process of cgroup @fd that is root's in every uid and lives
 * in this user namespace, held by its /proc directory: that descriptor
 * names the process, not its pid, and fails once the process is gone,
 * even if the pid is reused.  Between reading the pid and opening /proc,
 * the pid could have gone to another process: so the process is taken
 * only if, once checked, the cgroup still lists its pid while the
 * descriptor still works.  Return: the descriptor, or -1.
 */
static int root_proc_in(int fd)
{
	int pfd = openat(fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	FILE *f = pfd >= 0 ? fdopen(pfd, "r") : NULL;
	struct stat mine, its;
	int proc = -1;
	long pid;

	if (!f) {
		if (pfd >= 0)
			close(pfd);
		return -1;
	}
	if (stat("/proc/self/ns/user", &mine)) {
		fclose(f);
		return -1;
	}
	while (proc < 0 && fscanf(f, "%ld", &pid) == 1) {
		char path[64];

		if (pid <= 1 || pid >= (1L << 30))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld", pid);
		proc = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (proc < 0)
			continue;
		if (!proc_is_roots(proc, &mine) || !cg_lists(fd, pid) ||
		    fstatat(proc, "ns/mnt", &its, 0)) {
			close(proc);
			proc = -1;
		}
	}
	fclose(f);
	return proc;
}

/* Enter the mount namespace of the process of /proc directory @proc if it
 * is not ours.  Return: 0 or -errno. */
static int enter_mnt_ns(int proc)
{
	struct stat mine, its;
	int fd, err = 0;

	fd = openat(proc, "ns/mnt", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &its) || stat("/proc/self/ns/mnt", &mine))
		err = -errno;
	else if (its.st_ino != mine.st_ino || its.st_dev != mine.st_dev)
		err = setns(fd, CLONE_NEWNS) ? -errno : 0;
	close(fd);
	if (!err && chdir("/"))
		err = -errno;
	return err;
}

/* Add this process to the cgroup @fd.  Return: 0 or -errno. */
static int join(int fd)
{
	int pfd = openat(fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	char pid[24];
	int n, err = 0;

	if (pfd < 0)
		return -errno;
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (write(pfd, pid, (size_t)n) != n)
		err = -errno;
	close(pfd);
	return err;
}

/* The hierarchy where Slurm tracks the job's processes (v1 freezer, or
 * v2), if Slurm has a root for this node in it; NULL if none. */
static const struct job_cg_hier *track_hier(const struct job_cgroups *cg,
					    const char *node)
{
	for (int i = 0; i < cg->n; i++) {
		const struct job_cg_hier *h = &cg->h[i];
		int fd;

		if (!h->v2 && !h->freezer)
			continue;
		fd = node_root(h, node);
		if (fd >= 0) {
			close(fd);
			return h;
		}
	}
	return NULL;
}

/* Does the line @line of a /proc/PID/cgroup file ("ID:CONTROLLERS:/PATH",
 * ID a number, no '\n') name a directory "job_JOB" (@want "/job_JOB/")? */
static bool line_in_job(char *line, const char *want)
{
	char *path = strchr(line, ':');
	size_t n;

	if (!path || path == line ||
	    strspn(line, "0123456789") != (size_t)(path - line))
		return false;
	path = strchr(path + 1, ':');
	if (!path || path[1] != '/')
		return false;
	/* "/PATH/" in the buffer (one byte is kept free for the '/'). */
	n = strlen(path);
	path[n] = '/';
	path[n + 1] = '\0';
	return strstr(path + 1, want) != NULL;
}

bool job__in_job_cgroup(FILE *f, const char *job)
{
	char line[JOB_CG_LINE_MAX + 1], want[40];
	bool in = false, cut = false;

	snprintf(want, sizeof(want), "/job_%s/", job);
	while (!in && fgets(line, JOB_CG_LINE_MAX, f)) {
		size_t n = strcspn(line, "\n");
		bool whole = line[n] == '\n' || feof(f);

		/* The rest of a line too long for the buffer, or a line cut
		 * short: never taken for a line of its own. */
		if (!cut && whole) {
			line[n] = '\0';
			in = line_in_job(line, want);
		}
		cut = !whole;
	}
	return in;
}

/* job__in_job_cgroup() of this process. */
static bool self_in_job_cgroup(const char *job)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	bool in;

	if (!f)
		return false;
	in = job__in_job_cgroup(f, job);
	fclose(f);
	return in;
}

/* Check the ids that become path components. */
static int check_ids(const struct job_ids *ids)
{
	char name[128];

	return ds_job_dir_name(ids->job, ids->node, name, sizeof(name));
}

bool job__cg_is_pending(const struct job_cgroups *cg, const struct job_ids *ids)
{
	return !check_ids(ids) && track_hier(cg, ids->node) != NULL;
}

bool job_cgroup_is_pending(const struct job_ids *ids)
{
	struct job_cgroups cg;
	bool pending;

	if (check_ids(ids) || self_in_job_cgroup(ids->job) ||
	    job__cg_open_mounted(&cg))
		return false;
	pending = job__cg_is_pending(&cg, ids);
	job__cg_close(&cg);
	return pending;
}

/*
 * Wait until the job's extern step is tracked in @track: its cgroup lists
 * a process of root's.  Return: that process's /proc descriptor, or
 * -errno (@why said).
 */
static int wait_extern(const struct job_cg_hier *track,
		       const struct job_ids *ids, double deadline, char *why,
		       size_t cap)
{
	int fd, proc;

	for (;;) {
		fd = extern_cg(track, ids);
		if (fd >= 0) {
			proc = root_proc_in(fd);
			close(fd);
			if (proc >= 0)
				return proc;
		} else if (has_other_step(track, ids)) {
			snprintf(
				why, cap,
				"job %s has no extern step (PrologFlags=Contain is not set)",
				ids->job);
			return -ENOENT;
		}
		if (mono_sec() >= deadline) {
			snprintf(
				why, cap,
				"the extern step of job %s did not start in time",
				ids->job);
			return -ETIMEDOUT;
		}
		sleep_ms(CG_POLL_MS);
	}
}

/* Join the extern step's cgroup in every hierarchy that has one.
 * Return: how many were joined, or -errno for the first failure. */
static int join_all(const struct job_cgroups *cg, const struct job_ids *ids,
		    char *why, size_t cap)
{
	int fd, e, err = 0, joined = 0;

	for (int i = 0; i < cg->n; i++) {
		fd = extern_cg(&cg->h[i], ids);
		if (fd == -ENOENT)
			continue; /* Slurm does not use it for this job */
		e = fd < 0 ? fd : join(fd);
		if (fd >= 0)
			close(fd);
		if (e && !err) {
			err = e;
			snprintf(why, cap,
				 "cannot join the cgroup of job %s in %s: %s",
				 ids->job, cg->h[i].mnt, err_str(e));
		}
		joined += !e;
	}
	return err ? err : joined;
}

int job__cg_enter(const struct job_cgroups *cg, const struct job_ids *ids,
		  double deadline, char *why, size_t cap)
{
	const struct job_cg_hier *track;
	int proc, joined, e;

	why[0] = '\0';
	if (check_ids(ids) || !(track = track_hier(cg, ids->node))) {
		snprintf(why, cap, "no cgroup of Slurm's for node %s",
			 ids->node);
		return -ENOENT;
	}
	/* Ready when the step's first process is tracked. */
	proc = wait_extern(track, ids, deadline, why, cap);
	if (proc < 0)
		return proc;
	joined = join_all(cg, ids, why, cap);
	e = enter_mnt_ns(proc);
	close(proc);
	if (e && joined >= 0) {
		joined = e;
		snprintf(why, cap,
			 "cannot enter the mount namespace of job %s: %s",
			 ids->job, err_str(e));
	}
	return joined < 0 ? joined : joined ? 0 : -ENOENT;
}

int job_cgroup_enter(const struct job_ids *ids, double deadline, char *why,
		     size_t cap)
{
	struct job_cgroups cg;
	int err;

	why[0] = '\0';
	if (check_ids(ids) || job__cg_open_mounted(&cg)) {
		snprintf(why, cap, "no cgroup of Slurm's for node %s",
			 ids->node);
		return -ENOENT;
	}
	err = job__cg_enter(&cg, ids, deadline, why, cap);
	job__cg_close(&cg);
	return err;
}

int job__cg_leave(const struct job_cgroups *cg)
{
	int err = 0;

	for (int i = 0; i < cg->n; i++) {
		int e = join(cg->h[i].fd);

		if (e && !err)
			err = e;
	}
	return err;
}

int job_cgroup_leave(const struct job_ids *ids)
{
	struct job_cgroups cg;
	int err;

	if (check_ids(ids) || !self_in_job_cgroup(ids->job))
		return 0;
	if (job__cg_open_mounted(&cg))
		return -EIO;
	err = job__cg_leave(&cg);
	job__cg_close(&cg);
	return err;
}

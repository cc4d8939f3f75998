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
 * Safety (root): the hierarchies come from /proc/self/mountinfo and must
 * be cgroup file systems; every directory is opened without following
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
#include "mountctl/mountctl.h"
#include "util/err.h"
#include "util/mountinfo.h"

#define CG_HIER_MAX 16 /* cgroup hierarchies looked at */
#define CG_POLL_MS 20 /* between two looks for the extern step */
#define CG_EXTERN "step_extern" /* the extern step's directory */

/* One mounted cgroup hierarchy. */
struct cg_hier {
	char mnt[PATH_MAX]; /* where it is mounted */
	bool v2; /* the unified hierarchy */
	bool freezer; /* v1 with the freezer controller */
};

/* The hierarchies of this machine. */
struct cg_hiers {
	struct cg_hier h[CG_HIER_MAX];
	int n;
};

/* Does the comma list @opts name @word? */
static bool has_opt(const char *opts, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = opts; *p; p += strcspn(p, ","), p += *p == ',')
		if (!strncmp(p, word, n) && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

static int add_hier(const struct mountinfo_entry *e, void *arg)
{
	struct cg_hiers *hs = arg;
	struct cg_hier *h;
	bool v2 = !strcmp(e->fstype, "cgroup2");

	if ((!v2 && strcmp(e->fstype, "cgroup")) || hs->n >= CG_HIER_MAX ||
	    e->mountpoint[0] != '/' || strlen(e->mountpoint) >= PATH_MAX)
		return 0;
	h = &hs->h[hs->n++];
	strcpy(h->mnt, e->mountpoint);
	h->v2 = v2;
	h->freezer = !v2 && has_opt(e->super_opts, "freezer");
	return 0;
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
 * Open the root of hierarchy @h, which must be a cgroup file system of
 * its kind, and give its device in @dev.  Return: fd; -ENOENT if it is
 * not one; -errno.
 */
static int hier_root(const struct cg_hier *h, dev_t *dev)
{
	unsigned long magic = h->v2 ? CGROUP2_SUPER_MAGIC : CGROUP_SUPER_MAGIC;
	struct statfs sf;
	struct stat st;
	int fd;

	fd = open(h->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sf) || fstat(fd, &st) ||
	    (unsigned long)sf.f_type != magic) {
		close(fd);
		return -ENOENT;
	}
	*dev = st.st_dev;
	return fd;
}

/*
 * Open Slurm's directory for node @node in hierarchy @h ("slurm_NODE" or
 * "slurm"; v2: the slurmstepd scope).  Return: fd; -ENOENT if there is
 * none; -errno.
 */
static int node_root(const struct cg_hier *h, const char *node, dev_t *dev)
{
	char name[128];
	int mfd, sfd, fd;

	mfd = hier_root(h, dev);
	if (mfd < 0)
		return mfd;
	if (!h->v2) {
		snprintf(name, sizeof(name), "slurm_%s", node);
		fd = cg_open(mfd, name, *dev, false, 0);
		if (fd == -ENOENT)
			fd = cg_open(mfd, "slurm", *dev, false, 0);
		close(mfd);
		return fd;
	}
	sfd = cg_open(mfd, "system.slice", *dev, false, 0);
	close(mfd);
	if (sfd < 0)
		return sfd;
	snprintf(name, sizeof(name), "%s_slurmstepd.scope", node);
	fd = cg_open(sfd, name, *dev, false, 0);
	if (fd == -ENOENT)
		fd = cg_open(sfd, "slurmstepd.scope", *dev, false, 0);
	close(sfd);
	return fd;
}

/*
 * Open the job's directory under the node's root @root ("uid_U/job_J";
 * v2 "job_J").  Return: fd, or -errno.
 */
static int job_cg(const struct cg_hier *h, int root, dev_t dev,
		  const struct job_ids *ids)
{
	char name[64];
	int ufd, fd;

	snprintf(name, sizeof(name), "job_%s", ids->job);
	if (h->v2)
		return cg_open(root, name, dev, false, 0);
	{
		char uname[32];

		snprintf(uname, sizeof(uname), "uid_%u",
			 (unsigned int)ids->uid);
		ufd = cg_open(root, uname, dev, false, 0);
	}
	if (ufd < 0)
		return ufd;
	fd = cg_open(ufd, name, dev, false, 0);
	close(ufd);
	return fd;
}

/*
 * Open the cgroup of the job's extern step to join in hierarchy @h
 * (v1: step_extern; v2: step_extern/user/task_special).  Return: fd;
 * -ENOENT if it is not there (yet); -errno.
 */
static int extern_cg(const struct cg_hier *h, const struct job_ids *ids,
		     const char *node)
{
	int root, job, step, user, fd;
	dev_t dev;

	root = node_root(h, node, &dev);
	if (root < 0)
		return root;
	job = job_cg(h, root, dev, ids);
	close(root);
	if (job < 0)
		return job;
	step = cg_open(job, CG_EXTERN, dev, true, ids->uid);
	close(job);
	if (step < 0 || !h->v2)
		return step;
	user = cg_open(step, "user", dev, false, 0);
	close(step);
	if (user < 0)
		return user;
	fd = cg_open(user, "task_special", dev, false, 0);
	close(user);
	return fd;
}

/* Does the job's directory hold a step other than the extern one?  (Then
 * the job has no extern step: its other steps start after the Prolog's
 * extern step would have.) */
static bool has_other_step(const struct cg_hier *h, const struct job_ids *ids,
			   const char *node)
{
	int root, job;
	bool other = false;
	struct dirent *e;
	dev_t dev;
	DIR *d;

	root = node_root(h, node, &dev);
	if (root < 0)
		return false;
	job = job_cg(h, root, dev, ids);
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
 * lives in user namespace @userns. */
static bool proc_is_roots(int proc, const struct stat *userns)
{
	unsigned int u[4];
	char line[256];
	bool root = false;
	struct stat its;
	FILE *s;
	int fd;

	if (fstatat(proc, "ns/user", &its, 0) || its.st_ino != userns->st_ino ||
	    its.st_dev != userns->st_dev)
		return false;
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
	return root;
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
static const struct cg_hier *track_hier(const struct cg_hiers *hs,
					const char *node)
{
	for (int i = 0; i < hs->n; i++) {
		const struct cg_hier *h = &hs->h[i];
		dev_t dev;
		int fd;

		if (!h->v2 && !h->freezer)
			continue;
		fd = node_root(h, node, &dev);
		if (fd >= 0) {
			close(fd);
			return h;
		}
	}
	return NULL;
}

/* Is this process in job @job's cgroups already (its /proc/self/cgroup
 * names a "job_JOB" directory)? */
static bool in_job_cgroup(const char *job)
{
	char line[PATH_MAX + 64], want[40];
	FILE *f = fopen("/proc/self/cgroup", "re");
	bool in = false;

	snprintf(want, sizeof(want), "/job_%s/", job);
	while (f && !in && fgets(line, sizeof(line), f)) {
		char *path = strchr(line, ':');

		/* "ID:CONTROLLERS:/PATH\n", ID a number */
		if (!path || path == line ||
		    strspn(line, "0123456789") != (size_t)(path - line))
			continue;
		path = strchr(path + 1, ':');
		if (!path || path[1] != '/')
			continue;
		path[strcspn(path, "\n")] = '/';
		in = strstr(path + 1, want) != NULL;
	}
	if (f)
		fclose(f);
	return in;
}

/* Check the ids that become path components. */
static int check_ids(const struct job_ids *ids)
{
	char name[128];

	return ds_job_dir_name(ids->job, ids->node, name, sizeof(name));
}

bool job_cgroup_is_pending(const struct job_ids *ids)
{
	struct cg_hiers hs = { .n = 0 };

	if (check_ids(ids) || in_job_cgroup(ids->job) ||
	    mountinfo_foreach(add_hier, &hs) < 0)
		return false;
	return track_hier(&hs, ids->node) != NULL;
}

int job_cgroup_enter(const struct job_ids *ids, double deadline, char *why,
		     size_t cap)
{
	struct cg_hiers hs = { .n = 0 };
	const struct cg_hier *track;
	int fd, e, err = 0, joined = 0, proc = -1;

	why[0] = '\0';
	if (check_ids(ids) || mountinfo_foreach(add_hier, &hs) < 0 ||
	    !(track = track_hier(&hs, ids->node))) {
		snprintf(why, cap, "no cgroup of Slurm's for node %s",
			 ids->node);
		return -ENOENT;
	}
	/* Ready when the step's first process is tracked. */
	for (;;) {
		fd = extern_cg(track, ids, ids->node);
		if (fd >= 0) {
			proc = root_proc_in(fd);
			close(fd);
			if (proc >= 0)
				break;
		} else if (has_other_step(track, ids, ids->node)) {
			snprintf(
				why, cap,
				"job %s has no extern step (PrologFlags=Contain is not set)",
				ids->job);
			return -ENOENT;
		}
		if (mc_now() >= deadline) {
			snprintf(
				why, cap,
				"the extern step of job %s did not start in time",
				ids->job);
			return -ETIMEDOUT;
		}
		mc_sleep_ms(CG_POLL_MS);
	}
	for (int i = 0; i < hs.n; i++) {
		fd = extern_cg(&hs.h[i], ids, ids->node);
		if (fd == -ENOENT)
			continue; /* Slurm does not use it for this job */
		e = fd < 0 ? fd : join(fd);
		if (fd >= 0)
			close(fd);
		if (e && !err) {
			err = e;
			snprintf(why, cap,
				 "cannot join the cgroup of job %s in %s: %s",
				 ids->job, hs.h[i].mnt, err_str(e));
		}
		joined += !e;
	}
	e = enter_mnt_ns(proc);
	close(proc);
	if (e && !err) {
		err = e;
		snprintf(why, cap,
			 "cannot enter the mount namespace of job %s: %s",
			 ids->job, err_str(e));
	}
	return err ? err : joined ? 0 : -ENOENT;
}

int job_cgroup_leave(const struct job_ids *ids)
{
	struct cg_hiers hs = { .n = 0 };
	int err = 0;

	if (check_ids(ids) || !in_job_cgroup(ids->job))
		return 0;
	if (mountinfo_foreach(add_hier, &hs) < 0)
		return -EIO;
	for (int i = 0; i < hs.n; i++) {
		dev_t dev;
		int fd = hier_root(&hs.h[i], &dev), e;

		if (fd < 0)
			continue;
		e = join(fd);
		close(fd);
		if (e && !err)
			err = e;
	}
	return err;
}

/* SPDX-License-Identifier: MIT */
/*
 * This file declares what the files of mountctl's job work share: root's
 * handle on one job directory (job_dir.c), used by the Prolog and Epilog
 * (job.c) and the node check (job_node.c); and the cgroup work
 * (job_cgroup.c) on hierarchies given as descriptors.  Both take their
 * base directories as descriptors, so that tests/unit/test_job_cgroup.c
 * drives them against temporary trees.
 */
#ifndef SQC_SLURM_JOB_I_H
#define SQC_SLURM_JOB_I_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "job.h"
#include "util/compiler.h"

#define JOB_TOP_NAME "squashcache" /* BASE/squashcache */
#define JOB_PENDING ".pending" /* the mounter is not done yet (job.h) */
#define JOB_MOUNTER ".mounter" /* "PID START" of the mounter (job.h) */
#define JOB_CHILDREN ".children" /* "PID START" of each mount child (job.h) */
#define JOB_USER_PATH "/usr/local/bin:/usr/bin:/bin" /* PATH as the user */
#define JOB_LEFT ".epilog-failed" /* in BASE/squashcache: job__note_left() */

/**
 * job__err() - Say what went wrong, on stderr: "mountctl: <message>"
 * (`mountctl job` runs this code; slurmd logs a Prolog's stderr).
 * @fmt: printf format, no newline
 *
 * Context: cannot fail.
 */
void job__err(const char *fmt, ...) __printf(1, 2);

/* A job's directories, open. */
struct jobdir {
	int base; /* BASE */
	int top; /* BASE/squashcache */
	int dir; /* BASE/squashcache/job<ID>-<NODE> */
	char name[128]; /* job<ID>-<NODE> */
	char path[PATH_MAX]; /* the job directory's real path */
};

/**
 * job__dir_open() - Open a job directory through checked descriptors.
 * @c: the site's configuration (base=)
 * @name: "job<ID>-<NODE>"
 * @create: make BASE/squashcache (0755) and the job directory (0711) as
 *          root's if missing, moving another owner's entry aside
 * @j: filled in; every descriptor is -1 or open, for job__dir_close()
 *
 * Return: 0; -ENOENT (not @create) if there is none; -EPERM if what is
 * there is not root's; -errno (said).
 */
int job__dir_open(const struct ds_conf *c, const char *name, bool create,
		  struct jobdir *j);

/**
 * job__note_left() - Say that an Epilog may have left something of a job
 * behind: in syslog, on stderr if it cannot be noted, and as a line of
 * BASE/squashcache/JOB_LEFT (root's, 0600), which check-node reports.
 * @c: the site's configuration (base=)
 * @line: what happened, one line
 */
void job__note_left(const struct ds_conf *c, const char *line);

/**
 * job__check_left() - Print each line of JOB_LEFT as "failed epilog: ...".
 * @c: the site's configuration (base=)
 * @clear: remove JOB_LEFT after (check-node --clean, once what is under
 *         BASE/squashcache is clean)
 *
 * Return: how many failed Epilogs are left noted (1 if JOB_LEFT is not
 * a file of root's).
 */
int job__check_left(const struct ds_conf *c, bool clear);

/**
 * job__dir_open_at() - job__dir_open() under the base directory @base.
 * @base: BASE, open, taken over (job__dir_close() closes it)
 * @name: "job<ID>-<NODE>"
 * @create: as for job__dir_open()
 * @j: as for job__dir_open()
 *
 * Return: as job__dir_open().
 */
int job__dir_open_at(int base, const char *name, bool create, struct jobdir *j);

/**
 * job__dir_close() - Close what job__dir_open() opened.
 * @j: the job directory
 */
void job__dir_close(struct jobdir *j);

/**
 * job__open_dir_at() - openat() of a directory that never follows a
 * symlink.
 * @dirfd: the parent
 * @name: one component
 * @flags: O_RDONLY or O_PATH, more flags are added
 *
 * Return: the descriptor, or -1 with errno set.
 */
int job__open_dir_at(int dirfd, const char *name, int flags);

/**
 * job__open_here() - openat() of @name in @dirfd that never leaves
 * @dirfd's mount: a mount on @name (a user's own FUSE mount on a mount
 * point of theirs, made again after root detached theirs) is never
 * entered, so no file system of a user's is asked anything; nor is a
 * symlink followed (O_PATH | O_NOFOLLOW opens the link itself).
 * @dirfd: the parent
 * @name: one component
 * @flags: open flags (O_CLOEXEC and O_NOFOLLOW are added)
 *
 * Return: the descriptor, or -1 with errno set: EXDEV where a mount is
 * on @name.
 */
int job__open_here(int dirfd, const char *name, int flags);

/**
 * job__exists_here() - Whether @name is in @dirfd (a mount on it counts),
 * without entering a mount (job__open_here()).
 */
bool job__exists_here(int dirfd, const char *name);

/**
 * job__detach_under() - Detach every mount under a job directory, mounts
 * hidden under others included: each FUSE connection is aborted first,
 * then the mount detached through a descriptor of its root.
 * @j: the job directory
 * @only: the name of one mount point in it, or NULL for all
 */
void job__detach_under(struct jobdir *j, const char *only);

/**
 * job__drop_to_user() - Drop from root to the job's user for good, in a
 * child: a session of its own (so that its group can be killed), the
 * user's groups (none but @ids->gid when @ids->user is ""), ids, a check
 * that root cannot be had back, a clean environment.  The one way root
 * drops.
 * @ids: the user (uid, gid, user name or "", home)
 *
 * Return: 0, or -1 if any step failed (the child must exit then).
 */
int job__drop_to_user(const struct job_ids *ids);

/**
 * job__wait_child() - Wait for a child until a deadline, reading what it
 * says; at the deadline, kill its process group and give up on it.
 * @pid: the child, the leader of its own process group
 * @errfd: its stderr, read into @msg, or -1
 * @resfd: its result pipe, read into @res, or -1
 * @deadline: mono_sec() when to give up
 * @msg: destination, NUL-terminated, truncated at @mcap
 * @mcap: its capacity
 * @res: destination, NUL-terminated, truncated at @rcap
 * @rcap: its capacity
 *
 * A child stuck in the kernel (storage that never answers) cannot be
 * reaped: after a short grace it is left, never waited for.
 *
 * Return: its exit status; -ETIMEDOUT if it had to be killed; -ECHILD.
 */
int job__wait_child(pid_t pid, int errfd, int resfd, double deadline, char *msg,
		    size_t mcap, char *res, size_t rcap);

/**
 * job__child_stdio() - In a child the hooks wait for: stdin and stdout on
 * /dev/null, nothing of the caller's (slurmd reads a Prolog's output to
 * its end, so a child that hangs must not hold it).
 * @errfd: its stderr, or -1 for /dev/null
 */
void job__child_stdio(int errfd);

#define JOB_ANY_USER ((uid_t)-1) /* struct job_proc.uid: any but root */

/* The process root means to signal, as it was recorded or seen. */
struct job_proc {
	pid_t pid;
	uint64_t start; /* its start time, proc_start_time() */
	uid_t uid; /* its real, effective, saved and fs uid, or JOB_ANY_USER */
	const struct stat *exe; /* its executable (dev, ino) */
};

/**
 * job__kill_checked() - Signal a process only if it is still the one
 * @want describes: pinned with a pidfd, checked through its /proc
 * directory while the pidfd says it is alive, signalled through the pidfd.
 * @want: the process
 * @sig: the signal
 *
 * Return: 0 if signalled; -EPERM if the process is another one (another
 * executable, another user, a setuid program, a later start); -ESRCH if
 * it is gone; -ETIMEDOUT if who it is could not be read in its budget
 * (a process waiting in execve(): said, not signalled); -errno.
 * Context: root.
 */
int job__kill_checked(const struct job_proc *want, int sig);

/**
 * job__each_daemon() - Call @fn for each process running @exe (the
 * squashcached of job__exe_stat()) with a daemon's command line: its
 * start time read, its uid JOB_ANY_USER (to be set before a kill).
 * @exe: the daemons' executable
 * @fn: called with the process and the mount point it serves (its last
 *      argument: a user may give any); returns a count
 * @arg: for @fn
 *
 * What a command line says is only a hint of which mount a process
 * serves: job__kill_checked() checks who it is.
 *
 * Return: the sum of what @fn returned; -ETIMEDOUT if the look did not end
 * within its budget (@fn was called for those found before); or -errno if
 * /proc is not there.
 */
int job__each_daemon(const struct stat *exe,
		     int (*fn)(struct job_proc *p, const char *mnt, void *arg),
		     void *arg);

/**
 * job__fork_recorded() - fork() a child whose "PID START" is appended to
 * the job directory's record @name (root's, 0600) before it can outlive
 * its parent: it waits for the record, and exits (status 125) if the
 * record cannot be written or the parent dies first.  With @session the
 * child is in a session (and process group) of its own before the parent
 * returns, so that nothing that kills the parent's group takes it along.
 * @j: the job directory
 * @name: the record, JOB_MOUNTER or JOB_CHILDREN
 * @session: setsid() in the child first
 *
 * Return: in the parent the child's pid, or -errno (then the child is
 * reaped); 0 in the child.
 */
pid_t job__fork_recorded(struct jobdir *j, const char *name, bool session);

/**
 * job__kill_recorded() - Kill each process of the record @name that is
 * still that process (job__kill_checked()).
 * @j: the job directory
 * @name: the record, "PID START" lines
 * @uid: the user each runs as
 * @exe: the executable each runs
 */
void job__kill_recorded(struct jobdir *j, const char *name, uid_t uid,
			const struct stat *exe);

/**
 * job__private_base() - Tell whether Slurm's job_container/tmpfs makes the
 * directory of base= private to each job (JobContainerType in slurm.conf,
 * $SLURM_CONF or /etc/slurm/slurm.conf; Dirs in the job_container.conf
 * next to it, default /tmp and /dev/shm): mounts made there on the node
 * are hidden from the job's tasks.
 * @base: base= of the site's configuration
 * @dir: set to the private directory it is under
 * @cap: room in @dir
 *
 * Return: true if so.
 */
bool job__private_base(const char *base, char *dir, size_t cap);

/**
 * job__exe_stat() - stat() the executable of the daemons (the squashcached
 * `mountctl mount` runs as the user, in job__drop_to_user()'s
 * environment: proc_find_program()) or, @self, of the running mountctl
 * (the mounter and the mount children).
 * @self: mountctl itself
 * @st: filled in
 *
 * Return: 0 or -errno.
 */
int job__exe_stat(bool self, struct stat *st);

#define JOB_CG_HIER_MAX 16 /* cgroup hierarchies looked at */
#define JOB_CG_LINE_MAX (PATH_MAX + 64) /* a /proc/PID/cgroup line */

/* One cgroup hierarchy, its root open. */
struct job_cg_hier {
	int fd; /* its root */
	dev_t dev; /* its file system */
	bool v2; /* the unified hierarchy */
	bool freezer; /* v1 with the freezer controller */
	char mnt[PATH_MAX]; /* where it is mounted, for messages */
};

/* The cgroup hierarchies the job code works in. */
struct job_cgroups {
	struct job_cg_hier h[JOB_CG_HIER_MAX];
	int n;
};

/**
 * job__cg_open_mounted() - Open the cgroup hierarchies of this machine:
 * each cgroup or cgroup2 mount of /proc/self/mountinfo whose root is a
 * file system of that kind (its statfs magic), not following what a
 * user could have mounted under that type name.
 * @cg: filled in, for job__cg_close()
 *
 * Return: 0 (perhaps with none); -errno if mountinfo cannot be read.
 */
int job__cg_open_mounted(struct job_cgroups *cg);

/**
 * job__cg_add() - Add one hierarchy by its root's descriptor, unchecked:
 * job__cg_open_mounted() checks what it adds, a unit test adds a
 * temporary tree laid out like one.
 * @cg: the hierarchies
 * @fd: the root, taken over (closed on failure too)
 * @mnt: where it is, for messages
 * @v2: the unified hierarchy
 * @freezer: v1 with the freezer controller (where Slurm tracks a job)
 *
 * Return: 0; -E2BIG when there are JOB_CG_HIER_MAX; -errno.
 */
int job__cg_add(struct job_cgroups *cg, int fd, const char *mnt, bool v2,
		bool freezer);

/**
 * job__cg_close() - Close what job__cg_open_mounted() and job__cg_add()
 * opened.
 * @cg: the hierarchies, emptied
 */
void job__cg_close(struct job_cgroups *cg);

/**
 * job__cg_is_pending() - job_cgroup_is_pending() in @cg, for a process
 * that is not in the job's cgroups: does Slurm track this node's jobs in
 * one of @cg (v1 freezer or v2)?
 * @cg: the hierarchies
 * @ids: the job
 *
 * Return: true if so.
 */
bool job__cg_is_pending(const struct job_cgroups *cg,
			const struct job_ids *ids);

/**
 * job__cg_enter() - job_cgroup_enter() in @cg: wait for the extern step,
 * join its cgroup in every hierarchy that has one, enter the mount
 * namespace of its first process of root's.
 * @cg: the hierarchies
 * @ids: the job
 * @deadline: mono_sec() when to give up
 * @why: set to the reason on failure
 * @cap: its capacity
 *
 * Return: as job_cgroup_enter().
 */
int job__cg_enter(const struct job_cgroups *cg, const struct job_ids *ids,
		  double deadline, char *why, size_t cap);

/**
 * job__cg_leave() - Move the calling process into the root cgroup of each
 * hierarchy of @cg.
 * @cg: the hierarchies
 *
 * Return: 0, or -errno of the first that failed.
 */
int job__cg_leave(const struct job_cgroups *cg);

/**
 * job__in_job_cgroup() - Does a /proc/PID/cgroup file name a directory
 * "job_JOB" in one of its lines?
 * @f: the file, read to the end (or to the first line that does)
 * @job: the job id
 *
 * A line longer than JOB_CG_LINE_MAX is skipped whole, its rest never
 * read as a line of its own.
 *
 * Return: true if so.
 */
bool job__in_job_cgroup(FILE *f, const char *job);

/**
 * job__keep_prolog() - The Prolog's part of keeping (keep= of the site's
 * configuration; nothing if it is 0): start the node's keeper if none
 * answers on keep_socket=, detached and outside every job's cgroups;
 * then, if it holds copies not in use, ask it to drop some until the
 * job's memory request (from the environment, else scontrol show job)
 * fits in MemAvailable.  Every step has a budget (job_keep.c).
 * @c: the site's configuration
 * @ids: the job
 *
 * Return: 0 if the job's mounts may keep; -errno (said in syslog) if no
 * keeper answers: they stage without keep=.  The job runs either way.
 * Context: root, the Prolog.
 */
int job__keep_prolog(const struct ds_conf *c, const struct job_ids *ids);

/**
 * job__keep_check() - check-node's part of keeping: one line per copy the
 * keeper holds (image, owner, bytes in memory, complete bytes of its
 * range, in use, last use).  A partial copy (a mount that staged part of
 * its image) is said, never a failure.  A copy not in use is orphaned if
 * its owner uid is no user of the node any more, inconsistent if its
 * trailer does not check: those need dropping.
 * @c: the site's configuration (keep=, keep_socket=)
 * @clean: drop orphaned and inconsistent copies (as their owner's uid,
 *         which forgets that user's copies of that name only)
 *
 * Stale copies (the image changed) are not for root to find: that would
 * open the user's path.  The user's next mount checks the image's
 * identity, as the user, and a changed image's copy is dropped then.
 *
 * Return: orphaned and inconsistent copies left (not dropped), and 1 for
 * a keeper that does not answer its list within its budget; 0 with
 * keep=0 or no keeper.  Context: root.
 */
int job__keep_check(const struct ds_conf *c, bool clean);

#endif /* SQC_SLURM_JOB_I_H */

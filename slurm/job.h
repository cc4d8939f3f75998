/* SPDX-License-Identifier: MIT */
/*
 * This file declares the node-side work of a Slurm job's datasets, done
 * once here for the SPANK plugin, the slurm.conf Prolog/Epilog and the
 * TaskProlog (which all run `mountctl job ...`):
 *
 *   job_prolog()  root, before the job: mount each image as the job's user
 *   job_epilog()  root, after it: nothing of the job left on the node
 *   job_env()     the job's user, in a task: where the mounts are
 *   job_check()   the job's user, where the job is submitted
 *
 * Layout on a node (BASE from the site's configuration):
 *
 *   BASE/squashcache/                root 0755
 *   BASE/squashcache/job<ID>-<NODE>/ root 0711, one per job and node
 *       <NAME>/                      the user's mount point, 0700
 *       .mounts                      the names mounted, in order (user, 0400)
 *       .error                       why a mount failed (user, 0400)
 *       .daemons                     "NAME PID START" per daemon (root, 0600)
 *       .pending                     the mounts are being made (root, 0444)
 *       .mounter                     "PID START" of their mounter (root, 0600)
 *       .children                    "PID START" of each mount child (root, 0600)
 *   BASE/squashcache/.epilog-failed  what an Epilog left (root, 0600)
 *
 * Where Slurm tracks jobs in cgroups (proctrack/cgroup), the job's
 * cgroups are made only after the Prolog, with its extern step
 * (PrologFlags=Contain).  The Prolog then leaves the mounts to a mounter
 * in the background, which joins the extern step first (job_cgroup.c),
 * so that each daemon is born in the job's cgroups: its memory counts
 * against the job, Slurm kills it with the job, and it outlives every
 * other step.  Until the mounter is done, .pending is there and the tasks
 * wait for it (job_env()).
 *
 * Root never acts on a path the user can change: everything goes through
 * directory file descriptors opened with O_NOFOLLOW and checked with
 * fstat() (root-owned, not writable by others); the only directories the
 * user owns are the mount points, which root unmounts through a
 * descriptor and empties only after dropping to the user.  What needs the
 * user's rights (opening the image, checking allow= on the path it really
 * resolves to, mounting) runs in a child that has dropped to the user,
 * under a time budget.  Root-owned entries of another owner found where
 * ours should be are moved aside, so nothing another user creates under
 * BASE can make a job fail.
 */
#ifndef SQC_SLURM_JOB_H
#define SQC_SLURM_JOB_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "dataset.h"

/*
 * The exit statuses of `mountctl job` (mountctl's own, mountctl(1); a
 * verb says what 1 means).
 */
#define JOB_EXIT_OK 0 /* done */
#define JOB_EXIT_FAIL 1 /* failed, or the answer is "no" */
#define JOB_EXIT_USAGE 2 /* bad arguments, or cannot even start */
#define JOB_EXIT_IMAGE 4 /* an image is missing, unreadable or invalid */

/* Who and where: one job on one node. */
struct job_ids {
	char job[24]; /* the job id, digits */
	char node[65]; /* the node name */
	uid_t uid; /* the job's user */
	gid_t gid; /* and group */
	char user[256]; /* the user's name, for initgroups(); may be "" */
	char home[256]; /* the user's home, for the mount's environment */
	char workdir[4096]; /* the job's working directory, or "" */
};

/* What `mountctl job` was asked (mountctl/cmd_job.c parses it). */
enum job_verb {
	JOB_PROLOG,
	JOB_EPILOG,
	JOB_ENV,
	JOB_CHECK,
	JOB_NODE, /* check-node */
	JOB_CONFIG,
	JOB_NAME,
};

struct job_req {
	enum job_verb verb;
	const char *conf; /* --conf, else $SQUASHCACHE_SLURM_CONF */
	const char *datasets; /* --datasets (check: its LIST) */
	const char *job, *node, *uid, *gid; /* --job ... */
	bool task_prolog; /* env --task-prolog */
	bool clean; /* check-node --clean */
	double min_age; /* check-node --min-age */
	char **sets; /* --set KEY=VALUE, in order */
	int nsets;
	char **args; /* config: KEYs; name: IMAGEs */
	int nargs;
};

/**
 * job_run() - Do what `mountctl job` was asked: load the site's
 * configuration, take the job's ids from @r or slurmd's environment, run
 * the verb.
 * @r: the request
 *
 * config prints each key's value on a line (the shell hooks' one way to
 * the config); name prints each image's mount name (dataset.h).
 *
 * Return: the exit status (prolog and epilog: JOB_EXIT_OK whatever
 * happened, JOB_EXIT_USAGE if not root).
 */
int job_run(const struct job_req *r);

/**
 * job_prolog() - Mount a job's images on this node, as its user.
 * @c: the site's configuration
 * @ids: the job
 * @list: the dataset list (see dataset.h); empty: nothing to do
 *
 * Each failure is written to the job's .error (the tasks fail with it)
 * and to stderr (the slurmd log).  All mounts together take at most
 * c->timeout_s seconds: a mount still running then is killed and undone.
 * Where the job's cgroups come after the Prolog (job_cgroup_is_pending()),
 * the mounts are left to a mounter in the background (see above).
 *
 * Return: the number of images that could not be mounted (0 when they
 * were left to the mounter); never a reason to fail the Prolog (that
 * would drain the node).
 */
int job_prolog(const struct ds_conf *c, const struct job_ids *ids,
	       const char *list);

/**
 * job_epilog() - Remove everything of a job from this node: its mounts,
 * its daemons, its directories.
 * @c: the site's configuration
 * @ids: the job
 *
 * A job that had no dataset costs one directory lookup.  Problems are
 * said on stderr; none is a reason to fail the Epilog.
 *
 * Return: 0 if nothing of the job is left, else -errno of the first
 * problem.
 */
int job_epilog(const struct ds_conf *c, const struct job_ids *ids);

/**
 * job_env() - Tell a task where its job's images are mounted.
 * @c: the site's configuration
 * @job: the job id
 * @node: the node name
 * @expect: the dataset list the job was given, or NULL if unknown (then
 *          a job without a job directory simply has no dataset)
 * @task_prolog: print "export K=V" and "print MESSAGE" lines for a
 *               Slurm TaskProlog instead of "K=V"
 *
 * Prints SQUASHCACHE_MOUNT (the first image) and, with several images,
 * SQUASHCACHE_MOUNT_<NAME> for each.
 *
 * Return: JOB_EXIT_OK; JOB_EXIT_FAIL if a mount failed or is missing (the
 * reason is on stderr).
 */
int job_env(const struct ds_conf *c, const char *job, const char *node,
	    const char *expect, bool task_prolog);

/**
 * job_check() - Check a dataset list where a job is submitted: grammar,
 * options, allow=, each image readable and SquashFS; print it with every
 * path made absolute.
 * @c: the site's configuration
 * @list: the list as the user gave it
 * @out: where the resolved list goes
 *
 * Return: JOB_EXIT_OK; JOB_EXIT_USAGE for a list that breaks the grammar or
 * the option policy; JOB_EXIT_IMAGE for an image that cannot be used.
 * Each problem is said on stderr as "squashcache: IMAGE: why".
 */
int job_check(const struct ds_conf *c, const char *list, FILE *out);

/**
 * job_cgroup_is_pending() - Tell whether the job's mounts should wait for
 * its cgroups: Slurm tracks this node's jobs in cgroups (proctrack/cgroup:
 * it has a cgroup for the node in the freezer hierarchy, or in cgroup v2)
 * and the calling process is not in the job's cgroups already (as a
 * Prolog is under Slurm's PrologFlags=RunInJob).
 * @ids: the job
 *
 * Return: true if so; false: mount where the caller is.
 * Context: root; reads /proc/self/mountinfo, /proc/self/cgroup.
 */
bool job_cgroup_is_pending(const struct job_ids *ids);

/**
 * job_cgroup_enter() - Wait for the job's extern step, then move the
 * calling process into it: into its cgroup in every hierarchy Slurm made
 * one in, and into its mount namespace (job_container/tmpfs gives a job
 * one of its own).  Children born afterwards are the job's.
 * @ids: the job
 * @deadline: mono_sec() time to give up waiting
 * @why: what went wrong, for a message; "" on success
 * @cap: room in @why
 *
 * Return: 0; -ENOENT if there is nothing to join (no cgroups of Slurm's
 * for this node, or a job without an extern step: PrologFlags=Contain is
 * not set); -ETIMEDOUT if the extern step did not start by @deadline;
 * -errno if a cgroup or the namespace could not be joined (the process
 * may be in some of the job's cgroups then).
 * Context: root, single-threaded (setns() of a mount namespace).
 */
int job_cgroup_enter(const struct job_ids *ids, double deadline, char *why,
		     size_t cap);

/**
 * job_cgroup_leave() - Move the calling process out of the job's cgroups,
 * into the root cgroup of every hierarchy, if it is in them: for a process
 * that may block for good on the job's storage (reading from storage
 * that never answers is an uninterruptible sleep), which must not keep
 * Slurm from ending the job (Slurm drains a node where it cannot kill a
 * job's process).
 * @ids: the job
 *
 * Return: 0 (also when it was not in the job's cgroups), or -errno.
 * Context: root; reads /proc/self/mountinfo, /proc/self/cgroup.
 */
int job_cgroup_leave(const struct job_ids *ids);

/**
 * job_check_node() - What jobs left on this node under BASE/squashcache:
 * mounts whose daemon is gone and daemons whose mount is gone, one line
 * each on stdout.
 * @c: the site's configuration
 * @clean: detach such mounts and kill such daemons
 * @min_age: seconds a daemon must have run to count (one that is still
 *           mounting has no mount yet)
 *
 * Return: JOB_EXIT_OK if none is left; JOB_EXIT_FAIL if some are.
 */
int job_check_node(const struct ds_conf *c, bool clean, double min_age);

#endif /* SQC_SLURM_JOB_H */

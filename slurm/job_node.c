// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl job check-node`: what jobs left on this
 * node under BASE/squashcache, for a node health check or an Epilog.
 *
 *   a stale mount    a squashcache mount whose daemon no longer answers
 *                    ("Transport endpoint is not connected" for readers)
 *   an orphan daemon a squashcached process, running for a while, whose
 *                    mount point is no longer mounted
 *
 * With --clean, a stale mount is detached (its FUSE connection aborted)
 * through the job directory's checked descriptors, and an orphan daemon
 * is killed through job__kill_checked(): only a process of the
 * squashcached mountctl runs (its command line alone says nothing), of
 * the mount point's owner, started when it was seen.  Only what is under
 * BASE/squashcache is looked at: that is root's; anything elsewhere
 * belongs to its user.  A daemon in a mount namespace of its job's
 * (job_container/tmpfs) is judged by the mounts there.  Failed Epilogs
 * noted in BASE/squashcache/.epilog-failed are reported too.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "job_i.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/mountinfo.h"

/* The job directory and mount name of @path under @top ("<top>/J/N"). */
#define CHECK_MOUNTS_S 20 /* check-node's look at all mounts, at most */

static bool split_under(const char *top, const char *path, char *job,
			char *name)
{
	size_t n = strlen(top);
	const char *rel = path + n + 1, *slash;

	if (strncmp(path, top, n) || path[n] != '/')
		return false;
	slash = strchr(rel, '/');
	if (!slash || slash == rel || (size_t)(slash - rel) >= 128 ||
	    strchr(slash + 1, '/') || strlen(slash + 1) >= DS_NAME_MAX)
		return false;
	memcpy(job, rel, (size_t)(slash - rel));
	job[slash - rel] = '\0';
	strcpy(name, slash + 1);
	return true;
}

/* Detach the stale mount @path under @top.  Return: 0 or -errno. */
static int detach_stale(const struct ds_conf *c, const char *top,
			const char *path)
{
	char job[128], name[DS_NAME_MAX];
	struct jobdir j;
	struct mountinfo_mount m;
	int err;

	if (!split_under(top, path, job, name))
		return -EINVAL;
	err = job__dir_open(c, job, false, &j);
	if (!err)
		job__detach_under(&j, name);
	job__dir_close(&j);
	if (!err && !mountinfo_find(path, &m))
		err = -EBUSY;
	return err;
}

/* Stale mounts under @top.  Return: how many are left. */
static int check_mounts(const struct ds_conf *c, const char *top, bool clean)
{
	double end = mono_sec() + CHECK_MOUNTS_S;
	struct mountinfo_mount *v;
	size_t n;
	int left = 0;

	if (mountinfo_list(CTL_FSTYPE, &v, &n))
		return 1;
	for (size_t i = 0; i < n; i++) {
		char job[128], name[DS_NAME_MAX];
		double rest = end - mono_sec();
		int err;

		if (!split_under(top, v[i].path, job, name))
			continue;
		/* All together within a budget: a user can stack very many
		 * mounts of that type there, each not answering.  Said, not
		 * counted: a mount whose daemon is gone answers at once
		 * (ENOTCONN), so those that used the budget were a user's own
		 * daemons, alive; the node is no admin's matter for them. */
		if (rest <= 0) {
			printf("mounts under %s: not all looked at within %d s (daemons alive that do not answer): looked at again next time\n",
			       top, CHECK_MOUNTS_S);
			break;
		}
		err = ctl_ping_mount(
			&v[i], (int)MIN(rest * 1000, CTL_TIMEOUT_MS) + 1, NULL);
		if (!ctl_is_stale(err))
			continue;
		printf("stale mount %s of %s (uid %u): its daemon is gone",
		       v[i].path, v[i].source, (unsigned int)v[i].uid);
		err = clean ? detach_stale(c, top, v[i].path) : -EAGAIN;
		printf("%s%s\n", err ? "" : ": removed",
		       err && clean ? ": cannot remove it" : "");
		left += err != 0;
	}
	free(v);
	return left;
}

/* Seconds since a process started at @start (proc_start_time()), or -1. */
static double proc_age(uint64_t start)
{
	double up;
	FILE *f = fopen("/proc/uptime", "re");
	int ok = f && fscanf(f, "%lf", &up) == 1;

	if (f)
		fclose(f);
	if (!ok)
		return -1;
	return up - (double)start / (double)sysconf(_SC_CLK_TCK);
}

#define ITS_MOUNTS_MAX 65536 /* lines of a daemon's mountinfo read */
#define DAEMONS_CHECK_S 10 /* the look at the daemons found, at most */

struct at_arg {
	const char *mnt;
	unsigned long seen;
};

static int is_at(const struct mountinfo_entry *e, void *arg)
{
	struct at_arg *a = arg;

	if (!strcmp(e->mountpoint, a->mnt))
		return 1;
	return ++a->seen < ITS_MOUNTS_MAX ? 0 : -E2BIG;
}

/* Is @mnt mounted in the mount namespace of process @pid, when that is
 * not ours (a job's own, with job_container/tmpfs)?  Its mountinfo only
 * (in ours, @mnt is not mounted: the caller looked): not its ns/mnt link,
 * which waits on the process's exec lock (an execve() of a user's can
 * hold it for ever).  A user can make that namespace's table as long as
 * the kernel allows: ITS_MOUNTS_MAX lines are read, and past them (or on
 * an error) the answer is yes (not known to be an orphan). */
static bool mounted_in_its_ns(const char *pid, const char *mnt)
{
	struct at_arg a = { mnt, 0 };
	char path[300];
	FILE *f;
	int found;

	snprintf(path, sizeof(path), "/proc/%s/mountinfo", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	found = mountinfo_scan(f, is_at, &a);
	fclose(f);
	return found != 0;
}

/* The user a daemon of mount @name of job directory @job must run as:
 * the owner of that mount point, or, where it is gone, any but root. */
static uid_t daemon_owner(const struct ds_conf *c, const char *job,
			  const char *name)
{
	struct jobdir j;
	struct stat st;
	uid_t uid = JOB_ANY_USER;

	int fd = -1;

	/* Not into a mount on it (the user's own, on their mount point). */
	if (!job__dir_open(c, job, false, &j))
		fd = job__open_here(j.dir, name, O_PATH);
	if (fd >= 0 && !fstat(fd, &st) && S_ISDIR(st.st_mode) && st.st_uid != 0)
		uid = st.st_uid;
	if (fd >= 0)
		close(fd); /* O_PATH: nothing to flush */
	job__dir_close(&j);
	return uid;
}

/*
 * The orphan daemon @p of mount point @mnt: say it, and with @clean kill
 * it if it still is that process of that user.  Return: 1 if it is left.
 */
static int orphan(const struct ds_conf *c, const char *top, const char *mnt,
		  struct job_proc *p, bool clean)
{
	char job[128], name[DS_NAME_MAX];
	int err;

	if (!split_under(top, mnt, job, name))
		return 0;
	p->uid = daemon_owner(c, job, name);
	printf("orphan daemon %d of %s: not mounted any more", (int)p->pid,
	       mnt);
	err = clean ? job__kill_checked(p, SIGKILL) : -EAGAIN;
	if (!err)
		printf(": killed\n");
	else if (clean)
		printf(": not killed: %s\n", err_str(err));
	else
		printf("\n");
	return err != 0;
}

struct orphan_arg {
	const struct ds_conf *c;
	const char *top; /* BASE/squashcache, resolved */
	bool clean;
	double min_age;
	double end; /* mono_sec(): daemons past it are not looked at */
	bool cut; /* some were not */
	int left; /* orphans left, as check_daemon() said */
};

/* job__each_daemon(): one daemon, an orphan if its mount under @top is
 * not there.  Return: 1 if it is an orphan left. */
static int check_daemon(struct job_proc *p, const char *mnt, void *arg)
{
	struct orphan_arg *a = arg;
	char job[128], name[DS_NAME_MAX], pid[16];
	struct mountinfo_mount m;
	int n;

	snprintf(pid, sizeof(pid), "%d", (int)p->pid);
	if (!split_under(a->top, mnt, job, name) ||
	    proc_age(p->start) < a->min_age)
		return 0;
	if (a->end < 0) /* the first: the scan is over */
		a->end = mono_sec() + DAEMONS_CHECK_S;
	else if (mono_sec() > a->end) {
		a->cut = true;
		return 0;
	}
	if ((!mountinfo_find(mnt, &m) && ctl_is_sqc_mount(&m)) ||
	    mounted_in_its_ns(pid, mnt))
		return 0;
	n = orphan(a->c, a->top, mnt, p, a->clean);
	a->left += n;
	return n;
}

/* Orphan daemons of mounts under @top: processes of the squashcached
 * mountctl runs, for a while, whose mount is not there.  Return: how
 * many are left. */
static int check_daemons(const struct ds_conf *c, const char *top, bool clean,
			 double min_age)
{
	struct orphan_arg a = { c, top, clean, min_age, -1, false, 0 };
	struct stat exe;
	int left;

	if (job__exe_stat(false, &exe))
		return 1;
	/* What each daemon found costs (its mount namespace's table, a
	 * user's) has a budget of its own, from the scan's end. */
	left = job__each_daemon(&exe, check_daemon, &a);
	if (a.cut) {
		printf("daemons: not all looked at within %d s (mount tables of users' namespaces that long?): looked at again next time\n",
		       DAEMONS_CHECK_S);
		return left < 0 ? 0 : left;
	}
	/* Cut by a process named squashcached waiting in execve() (a user
	 * can make one): said, not counted, or any user could drain the
	 * node through its health check. */
	if (left == -ETIMEDOUT) {
		printf("daemons: not all looked at within the budget (a process named squashcached that waits in execve()?): looked at again next time\n");
		return a.left; /* those found before the cut */
	}
	return left < 0 ? 1 : left;
}

int job_check_node(const struct ds_conf *c, bool clean, double min_age)
{
	char base[PATH_MAX], top[PATH_MAX + 16];
	int left;

	if (!realpath(c->base, base)) {
		job__err("cannot resolve base=%s: %s", c->base, err_str(errno));
		return JOB_EXIT_USAGE;
	}
	snprintf(top, sizeof(top), "%s/%s", base, JOB_TOP_NAME);
	left = check_mounts(c, top, clean);
	left += check_daemons(c, top, clean, min_age);
	left += job__keep_check(c, clean);
	left += job__check_left(c, clean && !left);
	fflush(stdout);
	return left ? JOB_EXIT_FAIL : JOB_EXIT_OK;
}

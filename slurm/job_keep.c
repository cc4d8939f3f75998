// SPDX-License-Identifier: MIT
/*
 * This file implements the Prolog's part of keeping staged copies between
 * jobs (keep= of the site's configuration; docs/slurm.md, "Keeping a
 * staged image between jobs"): start the node's keeper if none answers,
 * and ask it to drop kept copies until the job's own memory request fits
 * beside them.
 *
 * The keeper (mountctl keeper) runs as root, detached from the Prolog (a
 * session of its own, stdio on /dev/null: slurmd reads a hook's output to
 * its end) and outside every job's cgroups (the root cgroup of each
 * hierarchy), so that it outlives the job that started it and its memory
 * is no job's.  Its socket's directory is root's and only root may write
 * to it (keep_dir_open(), which the keeper uses too); Prologs that start
 * at once take turns on a lock file there, so that one keeper runs.
 *
 * Nothing here waits without a budget: the lock (LOCK_S), the keeper's
 * answer (PING_MS, then KEEP_BUDGET_MS for evict and list), scontrol
 * (SCONTROL_S).  A keeper that does not answer is left alone (another
 * would not get its socket's clients either), and the job's mounts go
 * without keep=: they stage as without it, and the Prolog succeeds.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "job_i.h"
#include "keep/keep.h"
#include "keep_srv.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/memlimit.h"
#include "util/size.h"

#define KEEPER_START_S 5.0 /* a keeper started answers on its socket */
#define LOCK_S 5.0 /* another Prolog holds keeper.lock this long at most */
#define PING_MS 2000 /* the keeper answers a ping */
#define SCONTROL_S 5.0 /* scontrol show job answers */
#define DROPS_S 10.0 /* check-node --clean's forgets, all of them */
#define KEEPER_LOCK "keeper.lock"

_Static_assert(sizeof(DS_KEEP_SOCKET) == sizeof(KEEP_SOCKET),
	       "dataset.h's keeper socket is keep.h's");

static void say(const struct job_ids *ids, const char *what, int err)
{
	openlog("squashcache", LOG_PID, LOG_DAEMON);
	syslog(LOG_WARNING, "job %s on %s: keep: %s: %s", ids->job, ids->node,
	       what, err_str(err));
}

/*
 * Open the socket's directory, checked and made root's 0755 if missing
 * (keep_dir_open()), and lock KEEPER_LOCK in it, LOCK_S at most.
 * Return: the lock's descriptor, or -errno (-EPERM: the directory is not
 * root's alone; -ETIMEDOUT: another Prolog held the lock too long).
 */
static int lock_dir(const char *sock)
{
	double end = mono_sec() + LOCK_S;
	const char *name;
	struct stat sb;
	int d, fd;

	d = keep_dir_open(sock, true, &name);
	if (d < 0)
		return d;
	fd = openat(d, KEEPER_LOCK,
		    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
		    0600);
	close(d);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_uid != 0 ||
	    sb.st_nlink != 1) {
		close(fd);
		return -EPERM;
	}
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			close(fd);
			return -EPERM;
		}
		if (mono_sec() >= end) {
			close(fd);
			return -ETIMEDOUT;
		}
		sleep_ms(20);
	}
	return fd;
}

/* Whether a keeper answers a ping within PING_MS.  Return: 0; -ENOENT if
 * none listens; -ETIMEDOUT if one does not answer; -errno. */
static int keeper_ping(const char *sock)
{
	return keep_ask(sock, KEEP_PING, NULL, 0, PING_MS, NULL);
}

/* In the keeper's child: leave everything of the Prolog's, run it. */
static void exec_keeper(const struct ds_conf *c)
{
	static const char *const pass[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS",
					    "LSAN_OPTIONS" };
	char *argv[18], *envp[ARRAY_SIZE(pass) + 2] = { "PATH=" JOB_USER_PATH };
	struct job_cgroups cg;
	int n = 0, ne = 1;

	job__child_stdio(-1);
	/* Nothing of the Prolog's, nor of slurmd's, lives on in it. */
	close_range(3, ~0u, 0);
	/* The descriptors its limits assume (exec keeps the limit). */
	keep_srv_nofile();
	if (setsid() < 0 || chdir("/"))
		_exit(126);
	/* Out of the job's cgroups, and slurmd's: the root of each. */
	if (!job__cg_open_mounted(&cg)) {
		(void)job__cg_leave(&cg);
		job__cg_close(&cg);
	}
	for (size_t i = 0; i < ARRAY_SIZE(pass); i++) {
		const char *v = getenv(pass[i]);

		if (v && asprintf(&envp[ne], "%s=%s", pass[i], v) > 0)
			ne++;
	}
	envp[ne] = NULL;
	argv[n++] = "mountctl";
	argv[n++] = "keeper";
	argv[n++] = "--keep";
	argv[n++] = (char *)c->keep;
	argv[n++] = "--socket";
	argv[n++] = (char *)c->keep_socket;
	if (c->keep_min_available[0]) {
		argv[n++] = "--min-available";
		argv[n++] = (char *)c->keep_min_available;
	}
	/* Site images: one copy per node for all their readers. */
	if (c->site[0]) {
		argv[n++] = "--site";
		argv[n++] = (char *)c->site;
		argv[n++] = "--site-seal";
		argv[n++] = (char *)c->site_seal;
		if (c->site_keep[0]) {
			argv[n++] = "--site-keep";
			argv[n++] = (char *)c->site_keep;
		}
		if (c->site_roots[0]) {
			argv[n++] = "--site-roots";
			argv[n++] = (char *)c->site_roots;
		}
	}
	argv[n] = NULL;
	execve("/proc/self/exe", argv, envp);
	_exit(127);
}

/* Start the keeper unless one answers.  Return: 0 once one answers;
 * -ETIMEDOUT if one listens but does not answer (it is left alone);
 * -errno. */
static int start_keeper(const struct ds_conf *c)
{
	int lock, err;
	double end;
	pid_t child;

	err = keeper_ping(c->keep_socket);
	if (err != -ENOENT)
		return err; /* answers, or is stuck */
	lock = lock_dir(c->keep_socket);
	if (lock < 0)
		return lock;
	/* Another Prolog may have started one while we waited. */
	err = keeper_ping(c->keep_socket);
	if (err != -ENOENT)
		goto out_unlock;
	child = fork();
	if (child == 0) {
		/* A grandchild: nobody's to reap but init's. */
		if (fork() == 0)
			exec_keeper(c);
		_exit(0);
	}
	if (child < 0) {
		err = -errno;
		goto out_unlock;
	}
	waitpid(child, NULL, 0);
	err = -ETIMEDOUT;
	for (end = mono_sec() + KEEPER_START_S; mono_sec() < end;) {
		if (!keeper_ping(c->keep_socket)) {
			err = 0;
			break;
		}
		sleep_ms(20);
	}
out_unlock:
	close(lock);
	return err;
}

/* "500M", "2G", "1024" (megabytes, as Slurm prints memory). */
static uint64_t slurm_mem(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	int shift = 20;

	switch (*end) {
	case 'K':
		shift = 10;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	}
	return v > 0 ? (uint64_t)(v * (double)(1ull << shift)) : 0;
}

/* The first number of SLURM_JOB_CPUS_PER_NODE ("2", "2(x3),1"), or 1. */
static uint64_t cpus_here(void)
{
	const char *v = getenv("SLURM_JOB_CPUS_PER_NODE");
	unsigned long n = v ? strtoul(v, NULL, 10) : 0;

	return n ? n : 1;
}

/* The memory request Slurm hands a Prolog in its environment, where it
 * does (SLURM_MEM_PER_NODE, or SLURM_MEM_PER_CPU times the CPUs here, in
 * megabytes), or 0. */
static uint64_t env_mem(void)
{
	const char *v = getenv("SLURM_MEM_PER_NODE");

	if (v && *v)
		return slurm_mem(v);
	v = getenv("SLURM_MEM_PER_CPU");
	if (v && *v)
		return slurm_mem(v) * cpus_here();
	return 0;
}

/*
 * The job's memory request on a node: from the environment where Slurm
 * hands it over, else from `scontrol show job -o ID` (a controller round
 * trip, SCONTROL_S at most): MinMemoryNode, or MinMemoryCPU times
 * SLURM_JOB_CPUS_PER_NODE.  Return: bytes; 0 if the job asked for none or
 * scontrol did not answer in time.
 */
static uint64_t job_mem(const struct job_ids *ids)
{
	char res[8192], msg[8];
	uint64_t mem = env_mem();
	int out[2];
	const char *p;
	pid_t child;

	if (mem)
		return mem;
	if (pipe2(out, O_CLOEXEC))
		return 0;
	child = fork();
	if (child == 0) {
		setsid();
		job__child_stdio(-1);
		dup2(out[1], 1);
		execlp("scontrol", "scontrol", "-o", "show", "job", ids->job,
		       (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	if (child < 0 ||
	    job__wait_child(child, -1, out[0], mono_sec() + SCONTROL_S, msg,
			    sizeof(msg), res, sizeof(res))) {
		close(out[0]);
		return 0;
	}
	close(out[0]);
	p = strstr(res, " MinMemoryNode=");
	if (p)
		return slurm_mem(p + strlen(" MinMemoryNode="));
	p = strstr(res, " MinMemoryCPU=");
	if (p)
		return slurm_mem(p + strlen(" MinMemoryCPU=")) * cpus_here();
	return 0;
}

int job__keep_prolog(const struct ds_conf *c, const struct job_ids *ids)
{
	uint64_t want, avail, kept = 0;
	int err;

	if (!ds_conf_keeps(c))
		return 0;
	err = start_keeper(c);
	if (err) {
		say(ids,
		    err == -ETIMEDOUT ?
			    "the keeper does not answer; the job's mounts stage without keep" :
			    "cannot start the keeper; the job's mounts stage without keep",
		    err);
		return err;
	}
	/* Nothing kept, nothing to make room from: no request asked. */
	if (keep_ask(c->keep_socket, KEEP_PING, NULL, 0, PING_MS, &kept) ||
	    !kept)
		return 0;
	want = job_mem(ids);
	avail = memlimit_available();
	if (!want || avail >= want)
		return 0;
	err = keep_ask(c->keep_socket, KEEP_EVICT, NULL, want - avail,
		       KEEP_BUDGET_MS, NULL);
	if (err)
		say(ids, "cannot ask the keeper to evict", err);
	/* The mounts may still keep: the keeper answered. */
	return 0;
}

/* A user's copy to drop, once the list is read. */
struct to_drop {
	uid_t uid;
	char name[KEEP_NAME_MAX];
};

struct kept_check {
	const char *sock;
	bool clean;
	int found; /* left for an admin: orphaned, not dropped */
	struct to_drop *drop; /* with clean: orphaned or inconsistent */
	size_t ndrop, cap;
};

/* A site copy: root's, of an image under site=, for all its readers.
 * Information; what needs an admin is one whose trailer does not check
 * (dropped with --clean: root may forget site copies). */
static void check_site(struct kept_check *k, const struct keep_msg *e,
		       const char *name, const char *when)
{
	bool used = e->flags & KEEP_F_USED;

	printf("site copy of %s: %" PRIu64 " bytes in memory, %" PRIu64
	       " of %" PRIu64 " complete, %s, %s, %u mount%s, last use %s",
	       name, e->a, e->b, e->d,
	       e->flags & KEEP_F_STAGING ? "staging" : "staged",
	       used ? "in use" : "not in use", e->in_use,
	       e->in_use == 1 ? "" : "s", when);
	if (e->flags & KEEP_F_PARTIAL && !(e->flags & KEEP_F_STAGING) &&
	    !(e->flags & KEEP_F_INCONSISTENT))
		printf(", partial (chunks its seal refused, or a stop)");
	if (e->flags & KEEP_F_INCONSISTENT && !used) {
		bool dropped = k->clean &&
			       !keep_ask(k->sock, KEEP_FORGET, e->name,
					 KEEP_F_SITE, KEEP_BUDGET_MS, NULL);

		printf(": inconsistent");
		if (k->clean)
			printf(dropped ? ": dropped" : ": not dropped");
		if (!dropped)
			k->found++;
	}
	printf("\n");
}

static void check_one(void *arg, const struct keep_msg *e)
{
	struct kept_check *k = arg;
	struct passwd *pw = getpwuid(e->uid);
	char when[32] = "never", name[KEEP_NAME_MAX];
	bool used = e->flags & KEEP_F_USED;
	const char *what = NULL;
	time_t t = (time_t)e->c;
	struct tm tm;

	if (e->op == KEEP_USER) {
		printf("  used by %s (uid %u): %u mount%s%s\n",
		       pw ? pw->pw_name : "no such user", e->uid, e->in_use,
		       e->in_use == 1 ? "" : "s",
		       e->flags & KEEP_F_USED ? ", in use" : "");
		return;
	}
	/* The name is the user's (their daemon gave it): one line, printable. */
	keep_name_print(name, e->name);
	if (e->c && localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (e->flags & KEEP_F_SITE) {
		check_site(k, e, name, when);
		return;
	}
	printf("kept copy of %s for uid %u (%s): %" PRIu64
	       " bytes in memory, %" PRIu64 " of %" PRIu64
	       " complete, %s, last use %s",
	       name, e->uid, pw ? pw->pw_name : "no such user", e->a, e->b,
	       e->d, used ? "in use" : "not in use", when);
	/* Partial is what a mount that staged part of its image leaves
	 * (stage=meta, ram= below the image, a job cancelled while staging):
	 * said, not a failure; the next mount stages the rest. */
	if (e->flags & KEEP_F_PARTIAL && !(e->flags & KEEP_F_INCONSISTENT))
		printf(", partial");
	if (!used && e->uid != 0)
		what = !pw			      ? "orphaned" :
		       e->flags & KEEP_F_INCONSISTENT ? "inconsistent" :
							NULL;
	if (what) {
		printf(": %s", what);
		/* Dropped once the list is read (not within its budget):
		 * then said, and counted if not.  An inconsistent copy of a
		 * user is that user's doing (they write their copy): said,
		 * not a failure of the node. */
		if (k->clean && k->ndrop == k->cap) {
			size_t cap = k->cap ? 2 * k->cap : 16;
			struct to_drop *d = realloc(k->drop, cap * sizeof(*d));

			if (d) {
				k->drop = d;
				k->cap = cap;
			}
		}
		if (k->clean && k->ndrop < k->cap) {
			k->drop[k->ndrop].uid = e->uid;
			memcpy(k->drop[k->ndrop].name, e->name,
			       sizeof(e->name));
			k->ndrop++;
		} else if (pw == NULL) {
			k->found++;
		}
	}
	printf("\n");
}

/* Drop what the list found to drop (root's FORGET of that user's copy of
 * that name, within its budget each, DROPS_S for all); say each, and
 * count those that were orphaned and are left. */
static void drop_found(struct kept_check *k)
{
	double end = mono_sec() + DROPS_S;

	for (size_t i = 0; i < k->ndrop; i++) {
		struct to_drop *d = &k->drop[i];
		struct passwd *pw = getpwuid(d->uid);
		char name[KEEP_NAME_MAX];
		double left = end - mono_sec();
		int err = left <= 0 ?
				  -ETIMEDOUT :
				  keep_forget_of(k->sock, d->uid, d->name,
						 left * 1000 < KEEP_BUDGET_MS ?
							 (int)(left * 1000) :
							 KEEP_BUDGET_MS);

		keep_name_print(name, d->name);
		printf("kept copy of %s for uid %u (%s): %s: %s%s\n", name,
		       d->uid, pw ? pw->pw_name : "no such user",
		       pw ? "inconsistent" : "orphaned",
		       err ? "not dropped: " : "dropped",
		       err ? err_str(err) : "");
		if (err && !pw)
			k->found++;
	}
	free(k->drop);
}

int job__keep_check(const struct ds_conf *c, bool clean)
{
	struct kept_check k = { .sock = c->keep_socket, .clean = clean };
	int err;

	if (!ds_conf_keeps(c))
		return 0;
	fflush(stdout);
	err = keep_list(c->keep_socket, KEEP_BUDGET_MS, check_one, &k);
	if (err == -ENOENT || err == -ECONNREFUSED)
		return 0; /* no keeper: nothing kept */
	if (err) {
		printf("keeper at %s: %s: %s\n", c->keep_socket,
		       err == -ETIMEDOUT ?
			       "does not answer within its budget (stuck or stopped: restart it)" :
			       "cannot list its copies",
		       err_str(err));
		free(k.drop);
		return 1;
	}
	drop_found(&k);
	return k.found;
}

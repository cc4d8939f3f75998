// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of the job code's cgroup and base
 * directory work (slurm/job_cgroup.c, slurm/job_dir.c), driven through
 * descriptors against temporary trees laid out as Slurm lays out its
 * cgroups: v1 (memory/ and freezer/ hierarchies, slurm[_NODE]/uid_U/job_J/
 * step_extern) and v2 (RHEL 9, Slurm 22.05+: system.slice/
 * [NODE_]slurmstepd.scope/job_J/step_extern/user/task_special).  They
 * check where the extern step is found, which cgroup.procs files the join
 * writes, the memory limit a daemon then finds there (lib/util/memlimit),
 * the errors of missing and odd trees, the reading of /proc/PID/cgroup
 * lines longer than the buffer, root's job directories under a base
 * directory, and that a process forked to outlive the Prolog survives
 * slurmd killing the Prolog's process group.  They run as root (the trees
 * must be root's).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "slurm/job_i.h"
#include "util/clock.h"
#include "util/memlimit.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define RAM (64 * GIB)
#define V1_NONE "9223372036854771712\n"

static char top[64];
static FILE *err_file; /* stderr goes here while it is listened to */
static int err_saved = -1; /* the real stderr meanwhile */

/* Send stderr, where the job code says what went wrong, to a file. */
static void listen_stderr(void)
{
	fflush(stderr);
	err_file = tmpfile();
	ck_assert_ptr_nonnull(err_file);
	err_saved = dup(2);
	ck_assert_int_ge(err_saved, 0);
	ck_assert_int_eq(dup2(fileno(err_file), 2), 2);
}

/* Put stderr back.  Return: what was said meanwhile. */
static const char *said(void)
{
	static char buf[4096];
	size_t n;

	fflush(stderr);
	ck_assert_int_eq(dup2(err_saved, 2), 2);
	close(err_saved);
	rewind(err_file);
	n = fread(buf, 1, sizeof(buf) - 1, err_file);
	buf[n] = '\0';
	fclose(err_file);
	return buf;
}

/* Make the directories of @rel under the tree, and @rel itself if it
 * ends in '/'. */
static void mkdirs(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	for (char *p = path + strlen(top) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			ck_abort_msg("mkdir %s: %s", path, strerror(errno));
		*p = '/';
	}
}

/* Write @text to @rel under the tree, making its directories. */
static void put(const char *rel, const char *text)
{
	char path[512];
	int fd;

	mkdirs(rel);
	snprintf(path, sizeof(path), "%s/%s", top, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* What @rel under the tree holds ("" if nothing). */
static const char *get(const char *rel)
{
	static char buf[256];
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return "";
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void setup(void)
{
	snprintf(top, sizeof(top), "/tmp/sqc-jobcg.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(top));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", top);
}

/* Add the hierarchy @rel of the tree to @cg. */
static void add(struct job_cgroups *cg, const char *rel, bool v2, bool freezer)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(job__cg_add(cg, fd, path, v2, freezer), 0);
}

static const struct job_ids ids = { .job = "7", .node = "n1", .uid = 1000 };

/* This process, as a cgroup.procs file lists it. */
static const char *me(void)
{
	static char buf[24];

	snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	return buf;
}

#define V1_MEM "sys/memory/slurm_n1/uid_1000/job_7/"
#define V1_FRZ "sys/freezer/slurm_n1/uid_1000/job_7/"

/* Slurm's v1 tree of job 7 with its extern step running (this process
 * stands for the step's first process) and a limit of 512 MiB. */
static void v1_tree(struct job_cgroups *cg)
{
	put("sys/memory/cgroup.procs", "");
	put("sys/memory/memory.limit_in_bytes", V1_NONE);
	put("sys/memory/slurm_n1/memory.limit_in_bytes", V1_NONE);
	put(V1_MEM "memory.limit_in_bytes", "536870912\n");
	put(V1_MEM "step_extern/cgroup.procs", "");
	put(V1_MEM "step_extern/memory.limit_in_bytes", V1_NONE);
	put("sys/freezer/cgroup.procs", "");
	put(V1_FRZ "step_extern/cgroup.procs", me());
	put(V1_FRZ "step_extern/tasks", me());
	cg->n = 0;
	add(cg, "sys/memory", false, false);
	add(cg, "sys/freezer", false, true);
}

#define V2_SCOPE "sys/system.slice/slurmstepd.scope/"
#define V2_EXT V2_SCOPE "job_7/step_extern/"

/* Slurm's v2 tree of job 7 (RHEL 9): one hierarchy. */
static void v2_tree(struct job_cgroups *cg, const char *scope,
		    const char *job_max)
{
	char rel[256];

	put("sys/cgroup.procs", "");
	put("sys/system.slice/memory.max", "max\n");
	snprintf(rel, sizeof(rel), "sys/system.slice/%s/memory.max", scope);
	put(rel, "max\n");
	snprintf(rel, sizeof(rel), "sys/system.slice/%s/job_7/memory.max",
		 scope);
	put(rel, job_max);
	snprintf(rel, sizeof(rel),
		 "sys/system.slice/%s/job_7/step_extern/memory.max", scope);
	put(rel, "max\n");
	snprintf(rel, sizeof(rel),
		 "sys/system.slice/%s/job_7/step_extern/slurm/cgroup.procs",
		 scope);
	put(rel, "");
	snprintf(rel, sizeof(rel),
		 "sys/system.slice/%s/job_7/step_extern/user/task_special/"
		 "cgroup.procs",
		 scope);
	put(rel, me());
	cg->n = 0;
	add(cg, "sys", true, false);
}

/* The limit a daemon finds once it runs in @cgroup_line's cgroups. */
static void limit_of(const char *cgroup_line, struct memlimit *ml)
{
	char proc[128], sys[128];

	put("proc/self/cgroup", cgroup_line);
	snprintf(proc, sizeof(proc), "%s/proc", top);
	snprintf(sys, sizeof(sys), "%s/sys", top);
	memlimit_read(proc, sys, RAM, ml);
}

START_TEST(test_v1_join)
{
	struct job_cgroups cg;
	struct memlimit ml;
	char why[256];

	v1_tree(&cg);
	ck_assert(job__cg_is_pending(&cg, &ids));
	ck_assert_int_eq(
		job__cg_enter(&cg, &ids, mono_sec() + 2, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "");
	/* Both hierarchies' extern step, nothing else. */
	ck_assert_str_eq(get(V1_MEM "step_extern/cgroup.procs"), me());
	ck_assert_str_eq(get(V1_FRZ "step_extern/cgroup.procs"), me());
	ck_assert_str_eq(get("sys/memory/cgroup.procs"), "");
	ck_assert_str_eq(get("sys/freezer/cgroup.procs"), "");

	limit_of("12:freezer:/slurm_n1/uid_1000/job_7/step_extern\n"
		 "4:memory:/slurm_n1/uid_1000/job_7/step_extern\n0::/\n",
		 &ml);
	ck_assert_uint_eq(ml.cgroup, 512 * MIB);
	ck_assert_str_eq(ml.source,
			 "cgroup v1 memory:/slurm_n1/uid_1000/job_7");

	/* Leaving: each hierarchy's root. */
	ck_assert_int_eq(job__cg_leave(&cg), 0);
	ck_assert_str_eq(get("sys/memory/cgroup.procs"), me());
	ck_assert_str_eq(get("sys/freezer/cgroup.procs"), me());
	job__cg_close(&cg);
	ck_assert_int_eq(cg.n, 0);
}
END_TEST

START_TEST(test_v1_plain_slurm)
{
	struct job_cgroups cg;
	char why[256];

	/* A slurmd built for one per machine: "slurm", no node suffix; the
	 * step's directory may be the user's (Slurm's v1 chowns it). */
	put("sys/freezer/slurm/uid_1000/job_7/step_extern/cgroup.procs", me());
	cg.n = 0;
	add(&cg, "sys/freezer", false, true);
	{
		char path[512];

		snprintf(path, sizeof(path),
			 "%s/sys/freezer/slurm/uid_1000/job_7/step_extern",
			 top);
		ck_assert_int_eq(chown(path, 1000, 1000), 0);
	}
	ck_assert_int_eq(
		job__cg_enter(&cg, &ids, mono_sec() + 2, why, sizeof(why)), 0);
	ck_assert_str_eq(
		get("sys/freezer/slurm/uid_1000/job_7/step_extern/cgroup.procs"),
		me());
	job__cg_close(&cg);
}
END_TEST

START_TEST(test_v2_join)
{
	struct job_cgroups cg;
	struct memlimit ml;
	char why[256];

	v2_tree(&cg, "slurmstepd.scope", "1073741824\n");
	ck_assert(job__cg_is_pending(&cg, &ids));
	ck_assert_int_eq(
		job__cg_enter(&cg, &ids, mono_sec() + 2, why, sizeof(why)), 0);
	/* task_special, where Slurm puts the extern step's pids. */
	ck_assert_str_eq(get(V2_EXT "user/task_special/cgroup.procs"), me());
	ck_assert_str_eq(get(V2_EXT "slurm/cgroup.procs"), "");
	ck_assert_str_eq(get("sys/cgroup.procs"), "");

	limit_of("0::/system.slice/slurmstepd.scope/job_7/step_extern/user/"
		 "task_special\n",
		 &ml);
	ck_assert_uint_eq(ml.cgroup, GIB);
	ck_assert_str_eq(ml.source,
			 "cgroup v2 /system.slice/slurmstepd.scope/job_7");

	ck_assert_int_eq(job__cg_leave(&cg), 0);
	ck_assert_str_eq(get("sys/cgroup.procs"), me());
	job__cg_close(&cg);
}
END_TEST

START_TEST(test_v2_max)
{
	struct job_cgroups cg;
	struct memlimit ml;
	char why[256];

	/* A node-specific scope; the job without a limit ("max"). */
	v2_tree(&cg, "n1_slurmstepd.scope", "max\n");
	ck_assert_int_eq(
		job__cg_enter(&cg, &ids, mono_sec() + 2, why, sizeof(why)), 0);
	ck_assert_str_eq(get("sys/system.slice/n1_slurmstepd.scope/job_7/"
			     "step_extern/user/task_special/cgroup.procs"),
			 me());
	limit_of("0::/system.slice/n1_slurmstepd.scope/job_7/step_extern/"
		 "user/task_special\n",
		 &ml);
	ck_assert_uint_eq(ml.cgroup, 0);
	ck_assert_str_eq(ml.source, "physical RAM");
	job__cg_close(&cg);
}
END_TEST

START_TEST(test_missing)
{
	struct job_cgroups cg = { .n = 0 };
	struct job_ids other = ids;
	char why[256];

	/* No hierarchy at all. */
	ck_assert(!job__cg_is_pending(&cg, &ids));
	ck_assert_int_eq(job__cg_enter(&cg, &ids, mono_sec() + 1, why,
				       sizeof(why)),
			 -ENOENT);
	ck_assert_str_eq(why, "no cgroup of Slurm's for node n1");

	/* Another node's tree; a memory hierarchy alone tracks nothing. */
	v1_tree(&cg);
	snprintf(other.node, sizeof(other.node), "n2");
	put("sys/freezer/slurm_n2/x", "");
	ck_assert(job__cg_is_pending(&cg, &other));
	job__cg_close(&cg);
	add(&cg, "sys/memory", false, false);
	ck_assert(!job__cg_is_pending(&cg, &ids));
	job__cg_close(&cg);

	/* Ids that are not path components. */
	v1_tree(&cg);
	snprintf(other.node, sizeof(other.node), "../n1");
	ck_assert(!job__cg_is_pending(&cg, &other));
	ck_assert_int_eq(job__cg_enter(&cg, &other, mono_sec() + 1, why,
				       sizeof(why)),
			 -ENOENT);
	job__cg_close(&cg);
}
END_TEST

START_TEST(test_no_extern_step)
{
	struct job_cgroups cg;
	char why[256];

	/* The job's steps run, but no extern step (no PrologFlags=Contain). */
	put("sys/freezer/slurm_n1/uid_1000/job_7/step_0/cgroup.procs", "");
	cg.n = 0;
	add(&cg, "sys/freezer", false, true);
	ck_assert_int_eq(job__cg_enter(&cg, &ids, mono_sec() + 5, why,
				       sizeof(why)),
			 -ENOENT);
	ck_assert_str_eq(
		why,
		"job 7 has no extern step (PrologFlags=Contain is not set)");
	job__cg_close(&cg);
}
END_TEST

START_TEST(test_not_started)
{
	struct job_cgroups cg;
	char why[256];
	double t0;

	/* The step's directory is there, its process not yet. */
	v1_tree(&cg);
	put(V1_FRZ "step_extern/cgroup.procs", "");
	t0 = mono_sec();
	ck_assert_int_eq(job__cg_enter(&cg, &ids, t0 + 0.2, why, sizeof(why)),
			 -ETIMEDOUT);
	ck_assert(mono_sec() >= t0 + 0.2);
	ck_assert_str_eq(why, "the extern step of job 7 did not start in time");
	ck_assert_str_eq(get(V1_MEM "step_extern/cgroup.procs"), "");

	/* A process that is not root's (or gone) is no step's: pid 1 and
	 * pids out of range are never taken either. */
	put(V1_FRZ "step_extern/cgroup.procs", "1\n4194304000\n-5\n");
	ck_assert_int_eq(job__cg_enter(&cg, &ids, mono_sec() + 0.1, why,
				       sizeof(why)),
			 -ETIMEDOUT);
	ck_assert_str_eq(get(V1_MEM "step_extern/cgroup.procs"), "");
	job__cg_close(&cg);
}
END_TEST

START_TEST(test_odd_trees)
{
	struct job_cgroups cg;
	char path[512], target[512];
	char why[256];

	/* The job's directory not root's: never entered. */
	v1_tree(&cg);
	snprintf(path, sizeof(path), "%s/" V1_FRZ, top);
	ck_assert_int_eq(chown(path, 1000, 1000), 0);
	ck_assert_int_eq(job__cg_enter(&cg, &ids, mono_sec() + 0.1, why,
				       sizeof(why)),
			 -ETIMEDOUT);
	ck_assert_str_eq(get(V1_MEM "step_extern/cgroup.procs"), "");
	ck_assert_int_eq(chown(path, 0, 0), 0);

	/* A symlink for the user's directory: never followed. */
	snprintf(path, sizeof(path), "%s/sys/freezer/slurm_n1/uid_1000", top);
	snprintf(target, sizeof(target), "%s/sys/freezer/slurm_n1/real", top);
	ck_assert_int_eq(rename(path, target), 0);
	ck_assert_int_eq(symlink("real", path), 0);
	ck_assert_int_eq(job__cg_enter(&cg, &ids, mono_sec() + 0.1, why,
				       sizeof(why)),
			 -ETIMEDOUT);
	ck_assert_str_eq(get(V1_MEM "step_extern/cgroup.procs"), "");
	job__cg_close(&cg);

	/* A v1 step whose memory cgroup is not there: the freezer alone. */
	snprintf(path, sizeof(path), "rm -rf '%s/sys'", top);
	ck_assert_int_eq(system(path), 0);
	v1_tree(&cg);
	snprintf(path, sizeof(path), "rm -rf '%s/" V1_MEM "'", top);
	ck_assert_int_eq(system(path), 0);
	ck_assert_int_eq(
		job__cg_enter(&cg, &ids, mono_sec() + 2, why, sizeof(why)), 0);
	ck_assert_str_eq(get(V1_FRZ "step_extern/cgroup.procs"), me());
	job__cg_close(&cg);

	/* A hierarchy too many. */
	cg.n = 0;
	for (int i = 0; i < JOB_CG_HIER_MAX; i++)
		add(&cg, "sys", false, false);
	ck_assert_int_eq(job__cg_add(&cg, open(top, O_RDONLY), "x", true,
				     false),
			 -E2BIG);
	ck_assert_int_eq(cg.n, JOB_CG_HIER_MAX);
	job__cg_close(&cg);
}
END_TEST

/* job__in_job_cgroup() of the text @text. */
static bool in_job(const char *text, const char *job)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	bool in;

	ck_assert_ptr_nonnull(f);
	in = job__in_job_cgroup(f, job);
	fclose(f);
	return in;
}

START_TEST(test_self_cgroup)
{
	static char text[3 * JOB_CG_LINE_MAX];
	size_t n;

	ck_assert(in_job("0::/system.slice/slurmstepd.scope/job_7/step_0\n",
			 "7"));
	ck_assert(in_job("4:memory:/slurm/uid_0/job_7\n", "7"));
	ck_assert(in_job("1:x:/\n4:memory:/slurm/uid_0/job_7", "7"));
	ck_assert(!in_job("4:memory:/slurm/uid_0/job_70/step_0\n", "7"));
	ck_assert(!in_job("x:memory:/slurm/uid_0/job_7\n", "7"));
	ck_assert(!in_job(":memory:/slurm/uid_0/job_7\n", "7"));
	ck_assert(!in_job("4:memory:slurm/job_7\n", "7"));
	ck_assert(!in_job("", "7"));

	/*
	 * A line longer than the buffer whose first part ends in "/job_7":
	 * the path is /a...a/job_7x/rest, in no job_7.  (The old code put
	 * a '/' over the cut part's NUL, read past it, and found "/job_7/".)
	 */
	n = (size_t)snprintf(text, sizeof(text), "0::/");
	memset(text + n, 'a', JOB_CG_LINE_MAX - 1 - n - 6);
	n = JOB_CG_LINE_MAX - 1 - 6;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "/job_7");
	ck_assert_uint_eq(n, JOB_CG_LINE_MAX - 1);
	snprintf(text + n, sizeof(text) - n, "x/rest\n");
	ck_assert(!in_job(text, "7"));

	/* Its rest is never a line of its own. */
	n = (size_t)snprintf(text, sizeof(text), "0::/");
	memset(text + n, 'a', JOB_CG_LINE_MAX - 1 - n);
	n = JOB_CG_LINE_MAX - 1;
	snprintf(text + n, sizeof(text) - n, "1:x:/job_7/\n2:y:/\n");
	ck_assert(!in_job(text, "7"));

	/* And the line after it is read. */
	snprintf(text + n, sizeof(text) - n, "b\n1:x:/job_7/\n");
	ck_assert(in_job(text, "7"));
}
END_TEST

START_TEST(test_job_dir)
{
	struct jobdir j;
	char path[256], link[512];
	struct stat st;
	int base;

	snprintf(path, sizeof(path), "%s/base", top);
	ck_assert_int_eq(mkdir(path, 01777), 0);
	ck_assert_int_eq(chmod(path, 01777), 0);

	/* Nothing there yet: -ENOENT, then made root's. */
	base = open(path, O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(job__dir_open_at(base, "job7-n1", false, &j), -ENOENT);
	job__dir_close(&j);
	base = open(path, O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(job__dir_open_at(base, "job7-n1", true, &j), 0);
	snprintf(link, sizeof(link), "%s/squashcache/job7-n1", path);
	ck_assert_str_eq(j.path, link);
	ck_assert_int_eq(fstat(j.top, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(fstat(j.dir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0711);
	job__dir_close(&j);
	ck_assert_int_eq(j.base, -1);

	/* A user's squashcache/ (made first in a base anyone writes to) is
	 * moved aside, never used; so is a symlink. */
	snprintf(link, sizeof(link), "rm -rf '%s/squashcache'", path);
	ck_assert_int_eq(system(link), 0);
	snprintf(link, sizeof(link), "%s/squashcache", path);
	ck_assert_int_eq(mkdir(link, 0777), 0);
	ck_assert_int_eq(chown(link, 1000, 1000), 0);
	snprintf(link, sizeof(link), "%s/squashcache/job7-n1", path);
	ck_assert_int_eq(mkdir(link, 0711), 0);
	base = open(path, O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(job__dir_open_at(base, "job7-n1", false, &j), -EPERM);
	job__dir_close(&j);
	base = open(path, O_RDONLY | O_DIRECTORY);
	listen_stderr();
	ck_assert_int_eq(job__dir_open_at(base, "job7-n1", true, &j), 0);
	ck_assert_ptr_nonnull(
		strstr(said(), "mountctl: moved 'squashcache' aside to '"));
	ck_assert_int_eq(fstat(j.top, &st), 0);
	ck_assert_uint_eq(st.st_uid, 0);
	job__dir_close(&j);

	snprintf(link, sizeof(link), "%s/squashcache/job8-n1", path);
	ck_assert_int_eq(symlink("/etc", link), 0);
	base = open(path, O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(job__dir_open_at(base, "job8-n1", false, &j), -EPERM);
	job__dir_close(&j);
	base = open(path, O_RDONLY | O_DIRECTORY);
	listen_stderr();
	ck_assert_int_eq(job__dir_open_at(base, "job8-n1", true, &j), 0);
	ck_assert_ptr_nonnull(
		strstr(said(), "mountctl: moved 'job8-n1' aside"));
	ck_assert_int_eq(lstat(link, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	job__dir_close(&j);
}
END_TEST

/*
 * A "Prolog" @session as slurmd runs one (a process group of its own) forks
 * a recorded child and exits at once; then, as slurmd does, the whole group
 * is killed.  Return: what the child said once told to go on ("sid PID
 * SID"), or "" if it was killed with the group.
 */
static const char *prolog_then_killpg(bool session, char *rec, size_t cap)
{
	static char out[64];
	int go[2], res[2], base, fd;
	char path[256];
	pid_t prolog;
	ssize_t n;

	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(res), 0);
	snprintf(path, sizeof(path), "%s/base", top);
	mkdir(path, 01777);
	prolog = fork();
	ck_assert_int_ge(prolog, 0);
	if (prolog == 0) {
		struct jobdir j;
		pid_t c;

		setpgid(0, 0);
		base = open(path, O_RDONLY | O_DIRECTORY);
		if (job__dir_open_at(base, "job9-n1", true, &j))
			_exit(2);
		c = job__fork_recorded(&j, JOB_MOUNTER, session);
		if (c == 0) {
			char b;

			close(go[1]);
			close(res[0]);
			/* Told to go on only after the group was killed. */
			if (read(go[0], &b, 1) == 1)
				dprintf(res[1], "sid %d %d", (int)getpid(),
					(int)getsid(0));
			_exit(0);
		}
		if (c < 0)
			_exit(3);
		/* In its own session from the moment this returns. */
		_exit(!session || getsid(c) == c ? 0 : 4);
	}
	close(go[0]);
	close(res[1]);
	ck_assert_int_eq(waitpid(prolog, &fd, 0), prolog);
	ck_assert_msg(
		WIFEXITED(fd) && WEXITSTATUS(fd) == 0,
		"the Prolog's fork failed, or its child was not in a session of its own when it returned (status %#x)",
		fd);
	/* What slurmd does once the Prolog has exited. */
	kill(-prolog, SIGKILL);
	/* Killed with the group, the child left no reader: EPIPE then. */
	signal(SIGPIPE, SIG_IGN);
	ck_assert(write(go[1], "g", 1) == 1 || (!session && errno == EPIPE));
	close(go[1]);
	n = read(res[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(res[0]);
	snprintf(path, sizeof(path), "%s/base/squashcache/job9-n1/.mounter",
		 top);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	n = read(fd, rec, cap - 1);
	rec[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	return out;
}

/* job__open_here(): a mount on the name is EXDEV, never entered; a
 * symlink is not followed; what is not there is ENOENT. */
START_TEST(test_open_here)
{
	char path[256];
	struct stat st;
	int d, fd;

	/* Mounts of this test's own namespace (its child's): gone with it. */
	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	d = open(top, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(d, 0);
	ck_assert_int_eq(mkdirat(d, "m", 0700), 0);
	ck_assert_int_eq(symlinkat("/etc", d, "l"), 0);

	fd = job__open_here(d, "m", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert(job__exists_here(d, "m"));
	snprintf(path, sizeof(path), "%s/m", top);
	ck_assert_int_eq(mount("t", path, "tmpfs", 0, "mode=0755"), 0);
	errno = 0;
	ck_assert_int_eq(job__open_here(d, "m", O_RDONLY | O_DIRECTORY), -1);
	ck_assert_int_eq(errno, EXDEV);
	ck_assert_int_eq(job__open_here(d, "m", O_PATH), -1);
	ck_assert_int_eq(errno, EXDEV);
	ck_assert(job__exists_here(d, "m")); /* mounted on: still there */

	/* The link itself (O_PATH), never /etc; not followed otherwise. */
	fd = job__open_here(d, "l", O_PATH);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	close(fd);
	ck_assert_int_eq(job__open_here(d, "l", O_RDONLY | O_DIRECTORY), -1);
	ck_assert_int_eq(job__open_here(d, "../x", O_PATH), -1);
	ck_assert_int_eq(errno, EXDEV);

	errno = 0;
	ck_assert(!job__exists_here(d, "none"));
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(umount2(path, MNT_DETACH), 0);
	close(d);
}
END_TEST

START_TEST(test_fork_recorded)
{
	char rec[128], want[64];
	const char *said;
	int pid, sid;

	/* With a session: out of the Prolog's group before it returned,
	 * recorded, alive after the group is killed. */
	said = prolog_then_killpg(true, rec, sizeof(rec));
	ck_assert_int_eq(sscanf(said, "sid %d %d", &pid, &sid), 2);
	ck_assert_int_eq(pid, sid);
	snprintf(want, sizeof(want), "%d ", pid);
	ck_assert_int_eq(strncmp(rec, want, strlen(want)), 0);
	/* Without (the mount children: they drop to the user, their own
	 * session then): in the group, killed with it. */
	said = prolog_then_killpg(false, rec, sizeof(rec));
	ck_assert_str_eq(said, "");
	ck_assert_int_eq(sscanf(rec, "%d ", &pid), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("job_cgroup");
	TCase *tc = tcase_create("job_cgroup");
	SRunner *sr;
	int failed;

	if (geteuid() != 0) {
		printf("skipped: needs root (the trees must be root's)\n");
		return 77;
	}
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_v1_join);
	tcase_add_test(tc, test_v1_plain_slurm);
	tcase_add_test(tc, test_v2_join);
	tcase_add_test(tc, test_v2_max);
	tcase_add_test(tc, test_missing);
	tcase_add_test(tc, test_no_extern_step);
	tcase_add_test(tc, test_not_started);
	tcase_add_test(tc, test_odd_trees);
	tcase_add_test(tc, test_self_cgroup);
	tcase_add_test(tc, test_job_dir);
	tcase_add_test(tc, test_open_here);
	tcase_add_test(tc, test_fork_recorded);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/util/memlimit: the memory a
 * process may use, read from fake /proc and /sys/fs/cgroup trees under a
 * temporary directory (cgroup v1, v2, both, nested limits, "max", garbage),
 * and the default budget taken from it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/memlimit.h"
#include "util/size.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define RAM (64 * GIB)
/* What v1 writes in memory.limit_in_bytes for no limit. */
#define V1_NONE "9223372036854771712\n"

static char top[64];
static char proc[128];
static char sys[128];

/* Write @text to @rel under the fake tree, making its directories. */
static void put(const char *rel, const char *text)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	for (char *p = path + strlen(top) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			ck_abort_msg("mkdir %s: %s", path, strerror(errno));
		*p = '/';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Each case gets an empty tree: no /proc/self/cgroup, no cgroups. */
static void setup(void)
{
	snprintf(top, sizeof(top), "/tmp/sqc-memlimit.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(top));
	snprintf(proc, sizeof(proc), "%s/proc", top);
	snprintf(sys, sizeof(sys), "%s/sys/fs/cgroup", top);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", top);
}

static struct memlimit ml;

static void read_fake(uint64_t ram)
{
	memlimit_read(proc, sys, ram, &ml);
}

/* A v1 file of this machine's layout, with the controllers apart. */
static void v1_cgroup_file(const char *memory_path)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "9:name=systemd:/\n8:pids:/\n5:devices:/\n"
		 "4:memory:%s\n1:cpu:/\n0::/\n",
		 memory_path);
	put("proc/self/cgroup", text);
}

START_TEST(test_no_cgroup)
{
	/* No /proc/self/cgroup at all: the RAM. */
	read_fake(RAM);
	ck_assert_uint_eq(ml.ram, RAM);
	ck_assert_uint_eq(ml.cgroup, 0);
	ck_assert_uint_eq(ml.usable, RAM);
	ck_assert_str_eq(ml.source, "physical RAM");
	ck_assert_uint_eq(memlimit_budget(&ml), RAM / 2);

	/* Nothing known: the fallback, as before cgroups were read. */
	read_fake(0);
	ck_assert_uint_eq(ml.usable, 0);
	ck_assert_str_eq(ml.source, "unknown");
	ck_assert_uint_eq(memlimit_budget(&ml), MEMLIMIT_BUDGET_FALLBACK);
	ck_assert_uint_eq(MEMLIMIT_BUDGET_FALLBACK, GIB);

	/* In cgroups that set no limit: still the RAM. */
	v1_cgroup_file("/slurm/uid_0/job_1");
	put("sys/fs/cgroup/memory/memory.limit_in_bytes", V1_NONE);
	put("sys/fs/cgroup/memory/slurm/memory.limit_in_bytes", V1_NONE);
	read_fake(RAM);
	ck_assert_uint_eq(ml.cgroup, 0);
	ck_assert_uint_eq(ml.usable, RAM);
	ck_assert_str_eq(ml.source, "physical RAM");
}
END_TEST

START_TEST(test_v1)
{
	v1_cgroup_file("/slurm/uid_0/job_1/step_0/task_0");
	put("sys/fs/cgroup/memory/memory.limit_in_bytes", V1_NONE);
	put("sys/fs/cgroup/memory/slurm/memory.limit_in_bytes", V1_NONE);
	put("sys/fs/cgroup/memory/slurm/uid_0/job_1/memory.limit_in_bytes",
	    "536870912\n");
	put("sys/fs/cgroup/memory/slurm/uid_0/job_1/step_0/"
	    "memory.limit_in_bytes",
	    V1_NONE);
	/* task_0 has no file: skipped, the walk goes on up. */
	read_fake(RAM);
	ck_assert_uint_eq(ml.cgroup, 512 * MIB);
	ck_assert_uint_eq(ml.usable, 512 * MIB);
	ck_assert_str_eq(ml.source, "cgroup v1 memory:/slurm/uid_0/job_1");
	ck_assert_uint_eq(memlimit_budget(&ml), 256 * MIB);

	/* A limit above the RAM limits nothing. */
	read_fake(256 * MIB);
	ck_assert_uint_eq(ml.cgroup, 512 * MIB);
	ck_assert_uint_eq(ml.usable, 256 * MIB);
	ck_assert_str_eq(ml.source, "physical RAM");

	/* RAM unknown: the limit alone. */
	read_fake(0);
	ck_assert_uint_eq(ml.usable, 512 * MIB);
	ck_assert_str_eq(ml.source, "cgroup v1 memory:/slurm/uid_0/job_1");

	/* memory co-mounted with another controller. */
	put("proc/self/cgroup", "3:cpu,memory,pids:/slurm/uid_0/job_1\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, 512 * MIB);
	/* Names that only look like it are not the memory controller. */
	put("proc/self/cgroup",
	    "3:memoryx:/slurm/uid_0/job_1\n4:name=memory:/slurm/uid_0/job_1\n"
	    "5:xmemory,cpu:/slurm/uid_0/job_1\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, RAM);

	/* The limit on the root cgroup itself counts. */
	v1_cgroup_file("/");
	put("sys/fs/cgroup/memory/memory.limit_in_bytes", "1073741824");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, GIB);
	ck_assert_str_eq(ml.source, "cgroup v1 memory:/");
}
END_TEST

START_TEST(test_v2)
{
	put("proc/self/cgroup", "0::/system.slice/slurmstepd.scope/job_7\n");
	/* The root cgroup of v2 has no memory.max. */
	put("sys/fs/cgroup/system.slice/memory.max", "max\n");
	put("sys/fs/cgroup/system.slice/slurmstepd.scope/memory.max", "max\n");
	put("sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/memory.max",
	    "max\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.cgroup, 0);
	ck_assert_uint_eq(ml.usable, RAM);
	ck_assert_str_eq(ml.source, "physical RAM");

	put("sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/memory.max",
	    "2147483648\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, 2 * GIB);
	ck_assert_str_eq(ml.source,
			 "cgroup v2 /system.slice/slurmstepd.scope/job_7");
	ck_assert_uint_eq(memlimit_budget(&ml), GIB);

	/* A v2 line is only "0::PATH": with controllers it is v1. */
	put("proc/self/cgroup",
	    "0:memory:/system.slice/slurmstepd.scope/job_7\n"
	    "1::/system.slice/slurmstepd.scope/job_7\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, RAM);
}
END_TEST

START_TEST(test_hybrid)
{
	/* Both hierarchies carry a limit: the lower one wins, either way. */
	put("proc/self/cgroup", "4:memory:/a\n0::/b\n");
	put("sys/fs/cgroup/memory/a/memory.limit_in_bytes", "3221225472\n");
	put("sys/fs/cgroup/b/memory.max", "1073741824\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, GIB);
	ck_assert_str_eq(ml.source, "cgroup v2 /b");

	put("sys/fs/cgroup/b/memory.max", "4294967296\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, 3 * GIB);
	ck_assert_str_eq(ml.source, "cgroup v1 memory:/a");

	/* The usual hybrid: v2 has no memory controller, v1 says none. */
	put("proc/self/cgroup", "4:memory:/user.slice\n0::/user.slice\n");
	put("sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes", V1_NONE);
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, RAM);
}
END_TEST

START_TEST(test_nested)
{
	/* A parent lower than its child bounds the child. */
	put("proc/self/cgroup", "0::/job/step/task\n");
	put("sys/fs/cgroup/job/memory.max", "268435456\n");
	put("sys/fs/cgroup/job/step/memory.max", "1073741824\n");
	put("sys/fs/cgroup/job/step/task/memory.max", "max\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, 256 * MIB);
	ck_assert_str_eq(ml.source, "cgroup v2 /job");

	/* And the child lower than its parent: the child. */
	put("sys/fs/cgroup/job/step/task/memory.max", "134217728\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, 128 * MIB);
	ck_assert_str_eq(ml.source, "cgroup v2 /job/step/task");

	/* Same on v1, with a trailing slash on the path. */
	put("proc/self/cgroup", "7:memory:/job/step/\n");
	put("sys/fs/cgroup/memory/job/memory.limit_in_bytes", "300000000\n");
	put("sys/fs/cgroup/memory/job/step/memory.limit_in_bytes", V1_NONE);
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, 300000000);
	ck_assert_str_eq(ml.source, "cgroup v1 memory:/job");
}
END_TEST

START_TEST(test_garbage_values)
{
	static const char *const bad[] = {
		"",
		"\n",
		"max",
		"abc\n",
		"-1\n",
		"+5\n",
		" 536870912\n",
		"536870912 \n",
		"512M\n",
		"0x20000000\n",
		"0\n",
		"99999999999999999999999\n",
		"18446744073709551616\n",
		"18446744073709551615\n",
		"4611686018427387904\n",
		"536870912\n1\n",
		"0000000000000000000000000000000000536870912\n",
	};
	char dir[512];

	put("proc/self/cgroup", "0::/j\n");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put("sys/fs/cgroup/j/memory.max", bad[i]);
		read_fake(RAM);
		ck_assert_msg(ml.usable == RAM && ml.cgroup == 0,
			      "'%s' taken as a limit of %llu", bad[i],
			      (unsigned long long)ml.cgroup);
	}
	/* Just below "none", and with no newline: a limit. */
	put("sys/fs/cgroup/j/memory.max", "4611686018427387903");
	read_fake(0);
	ck_assert_uint_eq(ml.usable, (1ull << 62) - 1);
	/* A directory where the file should be. */
	snprintf(dir, sizeof(dir), "%s/sys/fs/cgroup/j/memory.max", top);
	ck_assert_int_eq(unlink(dir), 0);
	put("sys/fs/cgroup/j/memory.max/x", "1\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, RAM);
}
END_TEST

START_TEST(test_garbage_lines)
{
	put("sys/fs/cgroup/memory/j/memory.limit_in_bytes", "1048576\n");
	put("sys/fs/cgroup/memory/memory.limit_in_bytes", V1_NONE);
	put("sys/fs/cgroup/j/memory.max", "1048576\n");
	/* Lines without a path, relative or escaping paths, empty lines. */
	put("proc/self/cgroup", "\n"
				"garbage\n"
				"4:memory\n"
				"4:memory:j\n"
				"4:memory:\n"
				"4:memory:/x/../j\n"
				"4:memory:/..\n"
				"4:memory:/./j\n"
				"0::..\n"
				"0::/j/..\n"
				"::::\n");
	read_fake(RAM);
	ck_assert_uint_eq(ml.usable, RAM);
	/* A path longer than PATH_MAX is no limit, not a crash. */
	{
		size_t n = 3 * 4096;
		char *line = malloc(n + 16);

		ck_assert_ptr_nonnull(line);
		strcpy(line, "4:memory:");
		for (size_t i = strlen(line); i < n; i += 2)
			memcpy(line + i, "/j", 3);
		put("proc/self/cgroup", line);
		free(line);
		read_fake(RAM);
		ck_assert_uint_eq(ml.usable, RAM);
	}
	/* A source too long for the struct is cut, not overrun. */
	{
		char rel[512], text[512];
		char path[300] = "";

		for (int i = 0; i < 29; i++)
			strcat(path, "/abcdefghi");
		snprintf(text, sizeof(text), "0::%s\n", path);
		put("proc/self/cgroup", text);
		snprintf(rel, sizeof(rel), "sys/fs/cgroup%s/memory.max", path);
		put(rel, "1048576\n");
		read_fake(RAM);
		ck_assert_uint_eq(ml.usable, MIB);
		ck_assert_uint_eq(strlen(ml.source), MEMLIMIT_SOURCE_MAX - 1);
	}
}
END_TEST

START_TEST(test_this_process)
{
	struct memlimit me;

	memlimit_get(&me);
	ck_assert_uint_eq(me.ram, size_ram_total());
	ck_assert_uint_gt(me.usable, 0);
	ck_assert_uint_le(me.usable, me.ram);
	ck_assert_uint_eq(memlimit_budget(&me), me.usable / 2);
	ck_assert_uint_gt(strlen(me.source), 0);
}
END_TEST

START_TEST(test_available)
{
	/* MemAvailable as the kernel says it, in bytes: above nothing and
	 * below the machine's RAM. */
	uint64_t avail = memlimit_available(), ram = size_ram_total();
	unsigned long long kb = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	ck_assert_uint_gt(kb, 0);
	ck_assert_uint_gt(avail, 0);
	ck_assert_uint_le(avail, ram);
	/* Read again here: within a quarter of the RAM of the first look. */
	ck_assert_uint_lt(avail > (uint64_t)kb << 10 ?
				  avail - ((uint64_t)kb << 10) :
				  ((uint64_t)kb << 10) - avail,
			  ram / 4);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("memlimit");
	TCase *tc = tcase_create("memlimit");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_no_cgroup);
	tcase_add_test(tc, test_v1);
	tcase_add_test(tc, test_v2);
	tcase_add_test(tc, test_hybrid);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_garbage_values);
	tcase_add_test(tc, test_garbage_lines);
	tcase_add_test(tc, test_this_process);
	tcase_add_test(tc, test_available);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/util: size parsing and
 * printing, error strings, checked arithmetic, little-endian decoding,
 * the log sink, the mount table, the monotonic clock, a process's start
 * time and which program of a name we run.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/ckd.h"
#include "util/clock.h"
#include "util/endian.h"
#include "util/err.h"
#include "util/log.h"
#include "util/mountinfo.h"
#include "util/proc.h"
#include "util/size.h"

START_TEST(test_size_parse)
{
	uint64_t v;

	ck_assert_int_eq(size_parse("0", 0, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(size_parse("4096", 0, &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(size_parse("512K", 0, &v), 0);
	ck_assert_uint_eq(v, 512 << 10);
	ck_assert_int_eq(size_parse("64m", 0, &v), 0);
	ck_assert_uint_eq(v, 64 << 20);
	ck_assert_int_eq(size_parse("8GiB", 0, &v), 0);
	ck_assert_uint_eq(v, 8ull << 30);
	ck_assert_int_eq(size_parse("2TB", 0, &v), 0);
	ck_assert_uint_eq(v, 2ull << 40);
	ck_assert_int_eq(size_parse("25%", 1000, &v), 0);
	ck_assert_uint_eq(v, 250);
	ck_assert_int_eq(size_parse("25%", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("101%", 1000, &v), -EINVAL);
	ck_assert_int_eq(size_parse("", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("-1", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("12Q", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("12 M", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("1Mx", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("99999999999999999999", 0, &v), -ERANGE);
	ck_assert_int_eq(size_parse("17179869184T", 0, &v), -ERANGE);
}
END_TEST

START_TEST(test_size_format)
{
	char buf[32];

	ck_assert_str_eq(size_format(0, buf, sizeof(buf)), "0 B");
	ck_assert_str_eq(size_format(1023, buf, sizeof(buf)), "1023 B");
	ck_assert_str_eq(size_format(1536, buf, sizeof(buf)), "1.5 KiB");
	ck_assert_str_eq(size_format(3ull << 30, buf, sizeof(buf)), "3.0 GiB");
	ck_assert_uint_gt(size_ram_total(), 1 << 20);
}
END_TEST

START_TEST(test_err_str)
{
	ck_assert_str_eq(err_str(-EFSCORRUPTED), "image is corrupt");
	ck_assert_str_eq(err_str(EFSCORRUPTED), "image is corrupt");
	ck_assert_str_eq(err_str(-ENOENT), strerror(ENOENT));
}
END_TEST

START_TEST(test_ckd)
{
	uint64_t r;
	uint32_t s;

	ck_assert(!ckd_add(&r, UINT64_MAX - 1, 1));
	ck_assert(ckd_add(&r, UINT64_MAX, 1));
	ck_assert(ckd_mul(&r, 1ull << 32, 1ull << 32));
	ck_assert(!ckd_mul(&r, 1ull << 31, 1ull << 32));
	ck_assert(ckd_add(&s, 0xffffffffu, 1u));
	ck_assert(ckd_sub(&s, 0u, 1u));
}
END_TEST

START_TEST(test_endian)
{
	const uint8_t b[8] = { 1, 2, 3, 4, 5, 6, 7, 0x88 };
	struct le64 v;
	uint8_t out[8];

	memcpy(&v, b, 8);
	ck_assert_uint_eq(le16_get(b), 0x0201);
	ck_assert_uint_eq(le32_get(b), 0x04030201);
	ck_assert_uint_eq(le64_get(b), 0x8807060504030201ull);
	ck_assert_uint_eq(le64_dec(v), 0x8807060504030201ull);
	le64_put(out, 0x8807060504030201ull);
	ck_assert(memcmp(out, b, 8) == 0);
	le32_put(out, 0xdeadbeef);
	ck_assert_uint_eq(le32_get(out), 0xdeadbeef);
	le16_put(out, 0xbeef);
	ck_assert_uint_eq(le16_get(out), 0xbeef);
}
END_TEST

static char last_line[1100];
static int hook_calls;

static void hook(int level, const char *line)
{
	(void)level;
	hook_calls++;
	snprintf(last_line, sizeof(last_line), "%s", line);
}

START_TEST(test_log)
{
	char big[2000];

	/* The sink still writes to stderr; keep the test's output short. */
	if (!freopen("/dev/null", "w", stderr))
		ck_abort_msg("cannot silence stderr");
	log_set_hook(hook);
	log_set_level(LOG_INFO);
	log_msg(LOG_DEBUG, "t", "hidden %d", 1);
	ck_assert_int_eq(hook_calls, 0);
	ck_assert(!log_is_enabled(LOG_DEBUG));
	log_msg(LOG_ERR, "mod", "cannot open image '%s': %s", "x", "nope");
	ck_assert_int_eq(hook_calls, 1);
	ck_assert_str_eq(
		last_line,
		"squashcache: error: mod: cannot open image 'x': nope");
	/* Trailing newlines (libfuse's style) are dropped. */
	log_msg(LOG_WARNING, NULL, "fuse says\n");
	ck_assert_str_eq(last_line, "squashcache: warning: fuse says");
	/* An overlong message is cut, not overflowed. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_msg(LOG_ERR, "m", "%s", big);
	ck_assert_uint_lt(strlen(last_line), 1024);
	log_set_level(LOG_DEBUG);
	log_msg(LOG_DEBUG, "t", "shown");
	ck_assert_str_eq(last_line, "squashcache: debug: t: shown");
	log_set_hook(NULL);
}
END_TEST

/* A mount table as the kernel writes it: escapes, optional fields. */
static const char sample_table[] =
	"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
	"35 22 0:30 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw\n"
	"not a mountinfo line\n"
	"51 35 0:45 / /dev/shm/ann/squashcache/my\\040data rw,nosuid,nodev "
	"shared:30 master:2 - fuse.squashcache /data/my\\040data.sqfs "
	"ro,user_id=1000,group_id=1000\n"
	"52 35 0:46 / /dev/shm/bob/squashcache/a\\134b\\011c rw - "
	"fuse.squashcache /x/a.sqfs ro,user_id=1001\n"
	"53 35 0:47 / /mnt/no_superopts rw - fuse.squashcache /y.sqfs\n"
	"54 35 0:48 / /mnt/short rw - fuse.squashcache\n";

struct seen {
	int n;
	char mnt[8][256];
	char fstype[8][64];
	char source[8][256];
	char opts[8][256];
};

static int collect(const struct mountinfo_entry *e, void *arg)
{
	struct seen *s = arg;

	ck_assert_int_lt(s->n, 8);
	snprintf(s->mnt[s->n], sizeof(s->mnt[0]), "%s", e->mountpoint);
	snprintf(s->fstype[s->n], sizeof(s->fstype[0]), "%s", e->fstype);
	snprintf(s->source[s->n], sizeof(s->source[0]), "%s", e->source);
	snprintf(s->opts[s->n], sizeof(s->opts[0]), "%s", e->super_opts);
	s->n++;
	return 0;
}

static int stop_at_fuse(const struct mountinfo_entry *e, void *arg)
{
	int *calls = arg;

	(*calls)++;
	return strcmp(e->fstype, "fuse.squashcache") ? 0 : 7;
}

START_TEST(test_mountinfo)
{
	struct mountinfo_entry e;
	struct seen *s = calloc(1, sizeof(*s));
	char line[256];
	int calls = 0;
	FILE *f;

	ck_assert_ptr_nonnull(s);
	f = fmemopen((void *)sample_table, sizeof(sample_table) - 1, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(mountinfo_scan(f, collect, s), 0);
	/* The malformed and the truncated lines are skipped. */
	ck_assert_int_eq(s->n, 5);
	ck_assert_str_eq(s->mnt[0], "/");
	ck_assert_str_eq(s->fstype[0], "ext4");
	ck_assert_str_eq(s->source[0], "/dev/sda1");
	ck_assert_str_eq(s->opts[0], "rw,errors=remount-ro");
	ck_assert_str_eq(s->mnt[1], "/dev/shm");
	ck_assert_str_eq(s->mnt[2], "/dev/shm/ann/squashcache/my data");
	ck_assert_str_eq(s->fstype[2], "fuse.squashcache");
	ck_assert_str_eq(s->source[2], "/data/my data.sqfs");
	ck_assert_str_eq(s->opts[2], "ro,user_id=1000,group_id=1000");
	ck_assert_str_eq(s->mnt[3], "/dev/shm/bob/squashcache/a\\b\tc");
	ck_assert_str_eq(s->opts[3], "ro,user_id=1001");
	ck_assert_str_eq(s->mnt[4], "/mnt/no_superopts");
	ck_assert_str_eq(s->source[4], "/y.sqfs");
	ck_assert_str_eq(s->opts[4], "");

	/* A non-zero return stops the scan and comes back. */
	rewind(f);
	ck_assert_int_eq(mountinfo_scan(f, stop_at_fuse, &calls), 7);
	ck_assert_int_eq(calls, 3);
	fclose(f);

	/* A separator inside the six fixed fields is not the separator. */
	snprintf(line, sizeof(line), "1 2 3:4 / - rw - ext4 /dev/x rw");
	ck_assert_int_eq(mountinfo_parse_line(line, &e), 0);
	ck_assert_str_eq(e.mountpoint, "-");
	ck_assert_str_eq(e.fstype, "ext4");
	/* A backslash not followed by three octal digits stays. */
	snprintf(line, sizeof(line), "1 2 3:4 / /a\\9b\\04 rw - t s o\n");
	ck_assert_int_eq(mountinfo_parse_line(line, &e), 0);
	ck_assert_str_eq(e.mountpoint, "/a\\9b\\04");
	ck_assert_str_eq(e.super_opts, "o");
	snprintf(line, sizeof(line), "\n");
	ck_assert_int_eq(mountinfo_parse_line(line, &e), -EINVAL);

	/* The real table has at least the root mount. */
	calls = 0;
	ck_assert_int_eq(mountinfo_foreach(stop_at_fuse, &calls) >= 0, 1);
	ck_assert_int_gt(calls, 0);
	free(s);
}
END_TEST

/* Mounts copied out of a table: the top of a stack, the owner of a FUSE
 * mount, one type listed in table order. */
START_TEST(test_mountinfo_copy)
{
	static const char stacked[] =
		"35 22 0:30 / /dev/shm rw - tmpfs tmpfs rw\n"
		"60 35 0:50 / /dev/shm/x rw - fuse.squashcache /a.sqfs "
		"ro,user_id=1000\n"
		"61 60 0:51 / /dev/shm/x rw - fuse.squashcache /b.sqfs "
		"ro,user_id=1001,user_id=7\n";
	struct mountinfo_mount *m = malloc(sizeof(*m)), *v;
	size_t n;
	FILE *f;

	ck_assert_ptr_nonnull(m);
	f = fmemopen((void *)sample_table, sizeof(sample_table) - 1, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(
		mountinfo_find_in(f, "/dev/shm/ann/squashcache/my data", m), 0);
	ck_assert_str_eq(m->path, "/dev/shm/ann/squashcache/my data");
	ck_assert_str_eq(m->source, "/data/my data.sqfs");
	ck_assert_str_eq(m->fstype, "fuse.squashcache");
	ck_assert_uint_eq(m->uid, 1000);
	rewind(f);
	ck_assert_int_eq(mountinfo_find_in(f, "/dev/shm", m), 0);
	ck_assert_str_eq(m->fstype, "tmpfs");
	ck_assert_uint_eq(m->uid, (uid_t)-1);
	rewind(f);
	ck_assert_int_eq(mountinfo_find_in(f, "/dev/shm/none", m), -ENOENT);
	/* The malformed last line is no mount; the one without super
	 * options has no owner. */
	rewind(f);
	ck_assert_int_eq(mountinfo_list_in(f, "fuse.squashcache", &v, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(v[0].path, "/dev/shm/ann/squashcache/my data");
	ck_assert_str_eq(v[1].path, "/dev/shm/bob/squashcache/a\\b\tc");
	ck_assert_uint_eq(v[1].uid, 1001);
	ck_assert_str_eq(v[2].source, "/y.sqfs");
	ck_assert_uint_eq(v[2].uid, (uid_t)-1);
	free(v);
	rewind(f);
	ck_assert_int_eq(mountinfo_list_in(f, "nfs", &v, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(v);
	fclose(f);

	/* Two mounts at one path: the later one is on top; the first
	 * user_id= counts. */
	f = fmemopen((void *)stacked, sizeof(stacked) - 1, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(mountinfo_find_in(f, "/dev/shm/x", m), 0);
	ck_assert_str_eq(m->source, "/b.sqfs");
	ck_assert_uint_eq(m->uid, 1001);
	fclose(f);

	/* The real table has the root mount. */
	ck_assert_int_eq(mountinfo_find("/", m), 0);
	free(m);
}
END_TEST

/* The program of a name: beside our own executable first, then along a
 * PATH list, executable regular files only. */
START_TEST(test_find_program)
{
	char dir[64], path[PATH_MAX], list[256], self[PATH_MAX], *name;
	ssize_t n;
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/sqc-prog.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tool", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0755);
	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/plain", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/sub", dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);

	snprintf(list, sizeof(list), "/nonexistent::%s", dir);
	ck_assert_int_eq(
		proc_find_program("tool", true, list, path, sizeof(path)), 0);
	snprintf(list, sizeof(list), "%s/tool", dir);
	ck_assert_str_eq(path, list);
	snprintf(list, sizeof(list), "%s", dir);
	ck_assert_int_eq(proc_find_program("plain", false, list, path,
					   sizeof(path)),
			 -ENOENT);
	ck_assert_int_eq(proc_find_program("sub", false, list, path,
					   sizeof(path)),
			 -ENOENT);
	/* An empty entry is the current directory. */
	ck_assert_int_eq(chdir(dir), 0);
	ck_assert_int_eq(proc_find_program("tool", false, "/nonexistent:", path,
					   sizeof(path)),
			 0);
	ck_assert_str_eq(path, "./tool");
	ck_assert_int_eq(chdir("/"), 0);

	/* This test's own program is beside itself, not in the list. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	name = strrchr(self, '/') + 1;
	ck_assert_int_eq(proc_find_program(name, true, "/nonexistent", path,
					   sizeof(path)),
			 0);
	ck_assert_str_eq(path, self);
	ck_assert_int_eq(proc_find_program(name, false, "/nonexistent", path,
					   sizeof(path)),
			 -ENOENT);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

/* mono_sec() is the clock of mono_ns(), in seconds; sleep_ms() sleeps the
 * whole time though a signal comes in the middle. */
static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

START_TEST(test_clock)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { .it_value = { .tv_usec = 20000 } };
	double t0 = mono_sec(), t1;
	double ns = (double)mono_ns() / 1e9;

	ck_assert(t0 <= ns && ns <= mono_sec());
	/* No SA_RESTART: the alarm cuts nanosleep() short. */
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
	sleep_ms(100);
	t1 = mono_sec();
	ck_assert_int_eq(alarms, 1);
	ck_assert_msg(t1 - t0 >= 0.1, "slept %.3f s of 0.1", t1 - t0);
}
END_TEST

/* A holder is a pid and a start time: a child's is after ours, and is
 * gone with it (the pid may be reused, the pair is not). */
START_TEST(test_proc_start)
{
	uint64_t me, child, again;
	pid_t pid;
	int status;

	ck_assert_int_eq(proc_start_time(getpid(), &me), 0);
	ck_assert_int_eq(proc_start_time(getpid(), &again), 0);
	ck_assert_uint_eq(me, again);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	ck_assert_int_eq(proc_start_time(pid, &child), 0);
	ck_assert_uint_ge(child, me);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ck_assert_int_eq(proc_start_time(pid, &child), -ESRCH);
	ck_assert_int_eq(proc_start_time(0x3ffffffe, &child), -ESRCH);
}
END_TEST

/* Whether a process holds a memfd of ours: by the memfd (its inode), in
 * any of its descriptors or the one named; never for what is no memfd. */
START_TEST(test_proc_holds)
{
	int a = memfd_create("a", MFD_CLOEXEC), b = memfd_create("b", 0);
	int f = open("/dev/null", O_RDONLY), c, a2;
	char path[64];
	pid_t pid;
	int status;

	ck_assert_int_ge(a, 0);
	ck_assert_int_ge(b, 0);
	ck_assert_int_ge(f, 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	c = memfd_create("c", 0); /* after the fork: not the child's */
	ck_assert_int_ge(c, 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", a);
	a2 = open(path, O_RDWR | O_CLOEXEC); /* another open of a */
	ck_assert_int_ge(a2, 0);
	ck_assert_int_eq(proc_holds_file(pid, a), 1);
	ck_assert_int_eq(proc_holds_file(pid, b), 1);
	ck_assert_int_eq(proc_holds_file(pid, a2), 1);
	ck_assert_int_eq(proc_holds_file(pid, c), 0);
	ck_assert_int_eq(proc_holds_file_as(pid, a, a), 1);
	ck_assert_int_eq(proc_holds_file_as(pid, a2, a), 1);
	ck_assert_int_eq(proc_holds_file_as(pid, a, b), 0);
	ck_assert_int_eq(proc_holds_file_as(pid, a, f), 0);
	ck_assert_int_eq(proc_holds_file_as(pid, a, 1000), 0);
	ck_assert_int_eq(proc_holds_file(pid, f), -EINVAL);
	ck_assert_int_eq(proc_holds_file_as(pid, f, f), -EINVAL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ck_assert_int_eq(proc_holds_file(pid, a), 0);
	close(a);
	close(a2);
	close(b);
	close(c);
	close(f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("util");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_size_parse);
	tcase_add_test(tc, test_size_format);
	tcase_add_test(tc, test_err_str);
	tcase_add_test(tc, test_ckd);
	tcase_add_test(tc, test_endian);
	tcase_add_test(tc, test_log);
	tcase_add_test(tc, test_mountinfo);
	tcase_add_test(tc, test_mountinfo_copy);
	tcase_add_test(tc, test_clock);
	tcase_add_test(tc, test_find_program);
	tcase_add_test(tc, test_proc_start);
	tcase_add_test(tc, test_proc_holds);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

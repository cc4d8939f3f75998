// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/ctl: addresses, the JSON
 * builder and scanner, and a request/reply round trip over a real socket,
 * including the checks on who may talk to whom.
 */
/* TSAN: yes */
#include <signal.h>
#include <sys/wait.h>
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "util/clock.h"

START_TEST(test_canonical)
{
	char buf[PATH_MAX], dir[] = "/tmp/sqc-ctl-XXXXXX", want[PATH_MAX + 16];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	/* The last component need not exist (a stale or foreign mount). */
	snprintf(want, sizeof(want), "%s/mnt", dir);
	ck_assert_int_eq(ctl_canonical_mountpoint(want, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, want);
	snprintf(want, sizeof(want), "%s/./mnt///", dir);
	ck_assert_int_eq(ctl_canonical_mountpoint(want, buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "%s/mnt", dir);
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(ctl_canonical_mountpoint("/", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/");
	ck_assert_int_eq(ctl_canonical_mountpoint("/nonexistent-dir/x", buf,
						  sizeof(buf)),
			 -ENOENT);
	ck_assert_int_eq(ctl_canonical_mountpoint(want, buf, 4), -ENAMETOOLONG);
	rmdir(dir);
}
END_TEST

START_TEST(test_address)
{
	char a[CTL_PATH_MAX], b[CTL_PATH_MAX];

	ck_assert_int_eq(ctl_default_address("/dev/shm/u/ds", a, sizeof(a)), 0);
	ck_assert_int_eq(ctl_default_address("/dev/shm/u/ds", b, sizeof(b)), 0);
	ck_assert_str_eq(a, b);
	ck_assert(a[0] == '@');
	ck_assert_int_eq(ctl_default_address("/dev/shm/u/ds2", b, sizeof(b)),
			 0);
	ck_assert_str_ne(a, b);
	ck_assert_int_eq(ctl_default_address("/x", a, 8), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_json)
{
	const char *j =
		"{\"ok\":true,\"n\":42,\"neg\":-1.5e2,\"s\":\"a\\\"b\\\\c\\u0041\","
		"\"arr\":[1,{\"x\":2},\"]\"],\"o\":{\"in\":{\"deep\":7},"
		"\"z\":null}}";
	const char *v;
	char s[32];
	uint64_t u;
	double d;
	size_t len;

	ck_assert_int_eq(ctl_json_u64(j, "n", &u), 0);
	ck_assert_uint_eq(u, 42);
	ck_assert_int_eq(ctl_json_u64(j, "o.in.deep", &u), 0);
	ck_assert_uint_eq(u, 7);
	ck_assert_int_eq(ctl_json_double(j, "neg", &d), 0);
	ck_assert(d == -150.0);
	ck_assert_int_eq(ctl_json_u64(j, "neg", &u), -EPROTO);
	ck_assert_int_eq(ctl_json_str(j, "s", s, sizeof(s)), 0);
	ck_assert_str_eq(s, "a\"b\\cA");
	ck_assert_int_eq(ctl_json_str(j, "s", s, 3), -ERANGE);
	ck_assert_int_eq(ctl_json_get(j, "ok", &v, &len), 0);
	ck_assert_uint_eq(len, 4);
	ck_assert_int_eq(ctl_json_get(j, "o.z", &v, &len), 0);
	ck_assert(!strncmp(v, "null", len));
	ck_assert_int_eq(ctl_json_get(j, "missing", &v, &len), -ENOENT);
	ck_assert_int_eq(ctl_json_get(j, "o.missing", &v, &len), -ENOENT);
	ck_assert_int_eq(ctl_json_get(j, "n.x", &v, &len), -ENOENT);
	/* Skipping an array holding a "]" in a string works. */
	ck_assert_int_eq(ctl_json_get(j, "o", &v, &len), 0);
	/* Malformed text is refused, never overrun. */
	ck_assert_int_eq(ctl_json_u64("{\"a\":1", "b", &u), -EPROTO);
	ck_assert_int_eq(ctl_json_u64("{\"a\" 1}", "a", &u), -EPROTO);
	ck_assert_int_eq(ctl_json_u64("{\"a\":\"unterminated}", "b", &u),
			 -EPROTO);
	ck_assert_int_eq(ctl_json_u64("[1,2]", "a", &u), -ENOENT);
}
END_TEST

START_TEST(test_buf)
{
	struct ctl_buf b = { 0 };
	char out[64];
	uint64_t u;

	ctl_buf_printf(&b, "{\"name\":");
	ctl_buf_json_str(&b, "tab\there \"q\" \xc3\xa9 \xff");
	for (int i = 0; i < 1000; i++)
		ctl_buf_printf(&b, "%s", i ? "" : ",\"n\":123");
	ctl_buf_printf(&b, "}");
	ck_assert(!b.oom);
	ck_assert_int_eq(ctl_json_u64(b.p, "n", &u), 0);
	ck_assert_uint_eq(u, 123);
	ck_assert_int_eq(ctl_json_str(b.p, "name", out, sizeof(out)), 0);
	/* Valid UTF-8 passes through; an invalid byte is escaped. */
	ck_assert(strstr(b.p, "\xc3\xa9") != NULL);
	ck_assert(strstr(b.p, "\\u00ff") != NULL);
	ck_assert(!strncmp(out, "tab\there \"q\" \xc3\xa9 \xff", 17));
	ctl_buf_release(&b);
	ck_assert_ptr_null(b.p);
}
END_TEST

struct server {
	int fd;
	int served;
};

static void *serve(void *arg)
{
	struct server *s = arg;
	char cmd[64];
	ssize_t n;
	int c;

	while ((c = accept(s->fd, NULL, NULL)) >= 0) {
		n = recv(c, cmd, sizeof(cmd) - 1, 0);
		cmd[n > 0 ? n : 0] = '\0';
		if (!strcmp(cmd, "ping\n"))
			send(c, "{\"ok\":true,\"pid\":1}\n", 20, MSG_NOSIGNAL);
		else if (!strcmp(cmd, "garbage\n"))
			send(c, "not json\n", 9, MSG_NOSIGNAL);
		/* "silent": say nothing, let the client time out */
		else if (strcmp(cmd, "silent\n"))
			send(c, "{\"ok\":false}\n", 13, MSG_NOSIGNAL);
		if (!strcmp(cmd, "silent\n"))
			usleep(300 * 1000);
		close(c);
		s->served++;
	}
	return NULL;
}

START_TEST(test_roundtrip)
{
	struct server s = { -1, 0 };
	char addr[CTL_PATH_MAX], other[CTL_PATH_MAX], *reply;
	pthread_t t;
	int fd2;

	snprintf(addr, sizeof(addr), "@sqc-test-%d", (int)getpid());
	ck_assert_int_eq(ctl_listen(addr, &s.fd), 0);
	ck_assert_int_eq(ctl_listen(addr, &fd2), -EADDRINUSE);
	pthread_create(&t, NULL, serve, &s);
	ck_assert_int_eq(ctl_request(addr, "ping", getuid(), &reply, 2000), 0);
	ck_assert_str_eq(reply, "{\"ok\":true,\"pid\":1}");
	free(reply);
	ck_assert_int_eq(ctl_request(addr, "garbage", (uid_t)-1, &reply, 2000),
			 -EPROTO);
	ck_assert_ptr_null(reply);
	ck_assert_int_eq(ctl_request(addr, "silent", (uid_t)-1, &reply, 100),
			 -ETIMEDOUT);
	/* A server running as another uid is refused (unless root). */
	if (getuid() != 0)
		ck_assert_int_eq(ctl_request(addr, "ping", getuid() + 1, &reply,
					     2000),
				 -EPERM);
	snprintf(other, sizeof(other), "@sqc-test-none-%d", (int)getpid());
	ck_assert_int_eq(ctl_request(other, "ping", (uid_t)-1, &reply, 2000),
			 -ECONNREFUSED);
	shutdown(s.fd, SHUT_RDWR);
	pthread_join(t, NULL);
	close(s.fd);
	ck_assert_int_ge(s.served, 3);
}
END_TEST

/* A server that never accepts and whose listen queue is full (a
 * squatter's) costs a client its timeout, not forever. */
START_TEST(test_full_queue)
{
	char addr[CTL_PATH_MAX], *reply;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd, filler;
	int64_t t0;

	snprintf(addr, sizeof(addr), "@sqc-test-full-%d", (int)getpid());
	ck_assert_int_eq(ctl_listen(addr, &fd), 0);
	ck_assert_int_eq(listen(fd, 0), 0);
	/* A backlog of 0 takes one connection; this one fills it. */
	memcpy(sa.sun_path + 1, addr + 1, strlen(addr) - 1);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			  strlen(addr));
	filler = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(filler, (struct sockaddr *)&sa, len), 0);
	t0 = mono_ns();
	ck_assert_int_eq(ctl_request(addr, "ping", (uid_t)-1, &reply, 200),
			 -ETIMEDOUT);
	ck_assert_int_ge(mono_ns() - t0, 150 * 1000000LL);
	ck_assert_int_lt(mono_ns() - t0, 1000 * 1000000LL);
	close(filler);
	close(fd);
}
END_TEST

START_TEST(test_path_socket)
{
	char path[] = "/tmp/sqc-ctl-sock-XXXXXX";
	char sock[64], *reply;
	struct server s = { -1, 0 };
	pthread_t t;
	int stale;

	ck_assert_ptr_nonnull(mkdtemp(path));
	snprintf(sock, sizeof(sock), "%s/ctl", path);
	/* A stale socket file left by a dead server is replaced. */
	ck_assert_int_eq(ctl_listen(sock, &stale), 0);
	close(stale);
	ck_assert_int_eq(ctl_listen(sock, &s.fd), 0);
	pthread_create(&t, NULL, serve, &s);
	ck_assert_int_eq(ctl_request(sock, "ping", (uid_t)-1, &reply, 2000), 0);
	free(reply);
	shutdown(s.fd, SHUT_RDWR);
	pthread_join(t, NULL);
	close(s.fd);
	unlink(sock);
	rmdir(path);
}
END_TEST

/* A holder is a pid and a start time: a child's is after ours, and is
 * gone with it (the pid may be reused, the pair is not). */
START_TEST(test_proc_start)
{
	uint64_t me, child, again;
	pid_t pid;
	int status;

	ck_assert_int_eq(ctl_proc_start(getpid(), &me), 0);
	ck_assert_int_eq(ctl_proc_start(getpid(), &again), 0);
	ck_assert_uint_eq(me, again);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	ck_assert_int_eq(ctl_proc_start(pid, &child), 0);
	ck_assert_uint_ge(child, me);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ck_assert_int_eq(ctl_proc_start(pid, &child), -ESRCH);
	ck_assert_int_eq(ctl_proc_start(0x3ffffffe, &child), -ESRCH);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("ctl");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_canonical);
	tcase_add_test(tc, test_address);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_buf);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_full_queue);
	tcase_add_test(tc, test_path_socket);
	tcase_add_test(tc, test_proc_start);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

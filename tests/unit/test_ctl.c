// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/ctl: addresses, the JSON
 * builder and scanner, and a request/reply round trip over a real socket,
 * including the checks on who may talk to whom; and how a client finds a
 * daemon whose default address another user took (the /proc/net/unix
 * table, the choice among fallback addresses, the whole lookup).
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

/* ctl_probe() tells who listens, never waits and never sends. */
START_TEST(test_probe)
{
	char addr[CTL_PATH_MAX], none[CTL_PATH_MAX], byte;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd, filler, bound;
	uid_t uid = (uid_t)-1;
	int64_t t0;

	snprintf(addr, sizeof(addr), "@sqc-test-probe-%d", (int)getpid());
	snprintf(none, sizeof(none), "@sqc-test-probe-none-%d", (int)getpid());
	ck_assert_int_eq(ctl_probe(none, &uid), -ECONNREFUSED);
	ck_assert_int_eq(ctl_listen(addr, &fd), 0);
	ck_assert_int_eq(ctl_probe(addr, &uid), 0);
	ck_assert_uint_eq(uid, getuid());
	/* The probe's connection is queued and was never written to. */
	filler = accept(fd, NULL, NULL);
	ck_assert_int_ge(filler, 0);
	ck_assert_int_eq(recv(filler, &byte, 1, 0), 0);
	close(filler);
	/* A full queue: -EAGAIN at once. */
	ck_assert_int_eq(listen(fd, 0), 0);
	memcpy(sa.sun_path + 1, addr + 1, strlen(addr) - 1);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			  strlen(addr));
	filler = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(filler, (struct sockaddr *)&sa, len), 0);
	t0 = mono_ns();
	ck_assert_int_eq(ctl_probe(addr, &uid), -EAGAIN);
	ck_assert_int_lt(mono_ns() - t0, 100 * 1000000LL);
	close(filler);
	close(fd);
	/* Bound but not listening: refused, like nobody. */
	bound = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(bound, (struct sockaddr *)&sa, len), 0);
	ck_assert_int_eq(ctl_probe(addr, &uid), -ECONNREFUSED);
	close(bound);
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

/* Text in the format of /proc/net/unix: one socket per line. */
static const char *const table_fmt =
	"Num       RefCount Protocol Flags    Type St Inode Path\n"
	/* Listening stream sockets with names of ours: taken. */
	"0000000000000000: 00000002 00000000 00010000 0001 01 101 %s-0123456789abcdef\n"
	/* An accepted connection shows the listener's name: not taken. */
	"0000000000000000: 00000003 00000000 00000000 0001 03 102 %s-0123456789abcdef\n"
	"0000000000000000: 00000002 00000000 00010000 0002 01 103 %s-1111111111111111\n"
	"0000000000000000: 00000002 00000000 00010000 0001 01 104 %s\n"
	"0000000000000000: 00000002 00000000 00010000 0001 01 105 %s-ABCDEF0123456789\n"
	"0000000000000000: 00000002 00000000 00010000 0001 01 106 %s-0123\n"
	"0000000000000000: 00000002 00000000 00010000 0001 01 107 %s-0123456789abcdef0\n"
	"0000000000000000: 00000002 00000000 00010000 0001 01 108 %s-0123456789abcdeg\n"
	"0000000000000000: 00000002 00000000 00010000 0001 01 109 @squashcache-0000000000000000-0123456789abcdef\n"
	"0000000000000000: 00000002 00000000 00010000 0001 01 110\n"
	"0000000000000000: 00000002 00000000 00010000 0001 01 111 /run/%s-0123456789abcdef\n"
	"garbage %s-2222222222222222\n"
	"%s" /* an over-long line that ends in a good name */
	" %s-3333333333333333\n"
	/* The last line, without a newline: taken. */
	"0000000000000000: 00000002 00000000 00010000 0001 01 112 %s-fedcba9876543210";

struct names {
	char v[4][CTL_PATH_MAX];
	int n;
	int stop_at; /* return 7 after this many */
};

static int collect(const char *addr, void *arg)
{
	struct names *a = arg;

	if (a->n < 4)
		snprintf(a->v[a->n], sizeof(a->v[0]), "%s", addr);
	a->n++;
	return a->n == a->stop_at ? 7 : 0;
}

START_TEST(test_fallback_names)
{
	char def[CTL_PATH_MAX], want[CTL_PATH_MAX + 32], text[4096], pad[700];
	struct names got = { .stop_at = -1 };
	FILE *f;

	ck_assert_int_eq(ctl_default_address("/tmp/m", def, sizeof(def)), 0);
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	snprintf(text, sizeof(text), table_fmt, def, def, def, def, def, def,
		 def, def, def, def, pad, def, def);
	f = fmemopen(text, strlen(text), "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(ctl_fallback_names(f, "/tmp/m", collect, &got), 0);
	ck_assert_int_eq(got.n, 2);
	snprintf(want, sizeof(want), "%s-0123456789abcdef", def);
	ck_assert_str_eq(got.v[0], want);
	snprintf(want, sizeof(want), "%s-fedcba9876543210", def);
	ck_assert_str_eq(got.v[1], want);
	/* Another mount's table has none of these. */
	rewind(f);
	got.n = 0;
	ck_assert_int_eq(ctl_fallback_names(f, "/tmp/n", collect, &got), 0);
	ck_assert_int_eq(got.n, 0);
	/* The callback stops the walk. */
	rewind(f);
	got.n = 0;
	got.stop_at = 1;
	ck_assert_int_eq(ctl_fallback_names(f, "/tmp/m", collect, &got), 7);
	ck_assert_int_eq(got.n, 1);
	fclose(f);

	/* A fresh fallback address is one of those names, never the same. */
	ck_assert_int_eq(ctl_fallback_address("/tmp/m", want, sizeof(want)), 0);
	ck_assert_int_eq(ctl_fallback_address("/tmp/m", text, sizeof(want)), 0);
	ck_assert_str_ne(want, text);
	ck_assert_uint_eq(strlen(want), strlen(def) + 17);
	ck_assert(!strncmp(want, def, strlen(def)) && want[strlen(def)] == '-');
	ck_assert_int_eq(ctl_fallback_address("/tmp/m", want, 40),
			 -ENAMETOOLONG);
}
END_TEST

/* A daemon stand-in for one mount: ping names @mnt, stats answers
 * {"ok":true,"x":1}; with no @mnt, it says nothing to anything; with an
 * empty one, it refuses everything as a daemon refuses other users. */
struct fake {
	int fd;
	const char *mnt;
	pthread_t thread;
};

static void *serve_fake(void *arg)
{
	struct fake *f = arg;
	struct ctl_buf b = { 0 };
	char cmd[64];
	ssize_t n;
	int c;

	while ((c = accept(f->fd, NULL, NULL)) >= 0) {
		n = recv(c, cmd, sizeof(cmd) - 1, 0);
		cmd[n > 0 ? n : 0] = '\0';
		b.len = 0;
		if (!f->mnt) {
			usleep(300 * 1000);
		} else if (!*f->mnt) {
			ctl_buf_printf(&b, "{\"ok\":false,\"error\":"
					   "\"permission denied\"}\n");
		} else if (!strcmp(cmd, "ping\n")) {
			ctl_buf_printf(&b, "{\"ok\":true,\"pid\":1,"
					   "\"mountpoint\":");
			ctl_buf_json_str(&b, f->mnt);
			ctl_buf_printf(&b, "}\n");
		} else {
			ctl_buf_printf(&b, "{\"ok\":true,\"x\":1}\n");
		}
		if (b.len)
			send(c, b.p, b.len, MSG_NOSIGNAL);
		close(c);
	}
	ctl_buf_release(&b);
	return NULL;
}

static void fake_start(struct fake *f, const char *addr, const char *mnt)
{
	f->mnt = mnt;
	ck_assert_int_eq(ctl_listen(addr, &f->fd), 0);
	ck_assert_int_eq(pthread_create(&f->thread, NULL, serve_fake, f), 0);
}

static void fake_stop(struct fake *f)
{
	shutdown(f->fd, SHUT_RDWR);
	pthread_join(f->thread, NULL);
	close(f->fd);
}

/* Bind @addr (abstract) without listening, as a squatter may. */
static int bind_only(const char *addr)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memcpy(sa.sun_path + 1, addr + 1, strlen(addr) - 1);
	ck_assert_int_eq(
		bind(fd, (struct sockaddr *)&sa,
		     (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				 strlen(addr))),
		0);
	return fd;
}

/* As root, listen at @addr as uid 65534 in a child that answers every
 * command with @reply.  Return: its pid, or 0 when not root. */
static pid_t squat_as_nobody(const char *addr, const char *reply)
{
	int ready[2], fd, c;
	char byte;
	pid_t pid;

	if (getuid() != 0)
		return 0;
	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgid(65534) || setuid(65534) || ctl_listen(addr, &fd))
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		while ((c = accept(fd, NULL, NULL)) >= 0) {
			/* A client that checked our uid has hung up. */
			send(c, reply, strlen(reply), MSG_NOSIGNAL);
			close(c);
		}
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &byte, 1), 1);
	close(ready[0]);
	return pid;
}

static void squat_stop(pid_t pid)
{
	int status;

	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
}

/* A socket table of listening stream sockets at the addresses of @a
 * whose indices are the digits of @which, in that order. */
static FILE *table_of(char *buf, size_t cap, char (*a)[CTL_PATH_MAX + 32],
		      const char *which)
{
	size_t n = 0;
	FILE *f;

	for (const char *w = which; *w; w++)
		n += (size_t)snprintf(buf + n, cap - n,
				      "0: 2 0 00010000 0001 01 1 %s\n",
				      a[*w - '0']);
	ck_assert_uint_lt(n, cap);
	f = fmemopen(buf, n, "r");
	ck_assert_ptr_nonnull(f);
	return f;
}

/* Which fallback is the mount's daemon: the right uid, the right mount
 * point; a full listen queue does not hold the search up. */
START_TEST(test_fallback_choice)
{
	char mnt[64], def[CTL_PATH_MAX], a[7][CTL_PATH_MAX + 32], line[4096];
	char found[CTL_PATH_MAX], reply[PATH_MAX + 64];
	struct fake other, ours, mute, strict;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uid_t want = getuid();
	int refused, full, filler;
	pid_t squatter;
	int64_t t0;
	FILE *f;

	snprintf(mnt, sizeof(mnt), "/tmp/sqc-choice-%d", (int)getpid());
	ck_assert_int_eq(ctl_default_address(mnt, def, sizeof(def)), 0);
	for (int i = 0; i < 7; i++)
		snprintf(a[i], sizeof(a[i]), "%s-%016x", def, 0xa0 + i);
	refused = bind_only(a[0]); /* bound, not listening */
	fake_start(&other, a[1], "/tmp/elsewhere"); /* names another mount */
	fake_start(&ours, a[2], mnt);
	fake_start(&mute, a[3], NULL); /* never answers */
	fake_start(&strict, a[6], ""); /* refuses us */
	ck_assert_int_eq(ctl_listen(a[4], &full), 0);
	ck_assert_int_eq(listen(full, 0), 0); /* one slot ... */
	memcpy(sa.sun_path + 1, a[4] + 1, strlen(a[4]) - 1);
	filler = socket(AF_UNIX, SOCK_STREAM, 0); /* ... taken */
	ck_assert_int_eq(
		connect(filler, (struct sockaddr *)&sa,
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				    strlen(a[4]))),
		0);
	/* Another uid's, naming our mount point: root only. */
	snprintf(reply, sizeof(reply),
		 "{\"ok\":true,\"pid\":1,\"mountpoint\":\"%s\"}\n", mnt);
	squatter = squat_as_nobody(a[5], reply);
	if (squatter) {
		/* The squatter, the bound-only name, the wrong mount, the full
		 * queue, then ours: ours. */
		f = table_of(line, sizeof(line), a, "501423");
		t0 = mono_ns();
		ck_assert_int_eq(ctl_find_fallback(f, mnt, want, found,
						   sizeof(found), 2000),
				 0);
		ck_assert_str_eq(found, a[2]);
		ck_assert_int_lt(mono_ns() - t0, 500 * 1000000LL);
		fclose(f);
		/* Without ours, nobody (and no waiting but for the queue). */
		f = table_of(line, sizeof(line), a, "501");
		ck_assert_int_eq(ctl_find_fallback(f, mnt, want, found,
						   sizeof(found), 2000),
				 -ENOENT);
		fclose(f);
	} else {
		/* Not root: wanting another uid, ours is not it. */
		f = table_of(line, sizeof(line), a, "012");
		ck_assert_int_eq(ctl_find_fallback(f, mnt, want + 1, found,
						   sizeof(found), 2000),
				 -ENOENT);
		fclose(f);
		f = table_of(line, sizeof(line), a, "01423");
		ck_assert_int_eq(ctl_find_fallback(f, mnt, want, found,
						   sizeof(found), 2000),
				 0);
		ck_assert_str_eq(found, a[2]);
		fclose(f);
	}
	/* One of the right uid that refuses us is taken only for want of a
	 * better one. */
	f = table_of(line, sizeof(line), a, "162");
	ck_assert_int_eq(
		ctl_find_fallback(f, mnt, want, found, sizeof(found), 2000), 0);
	ck_assert_str_eq(found, a[2]);
	fclose(f);
	f = table_of(line, sizeof(line), a, "16");
	ck_assert_int_eq(
		ctl_find_fallback(f, mnt, want, found, sizeof(found), 2000), 0);
	ck_assert_str_eq(found, a[6]);
	fclose(f);
	/* One that could be ours but does not answer: time out. */
	f = table_of(line, sizeof(line), a, "13");
	t0 = mono_ns();
	ck_assert_int_eq(ctl_find_fallback(f, mnt, want, found, sizeof(found),
					   200),
			 -ETIMEDOUT);
	ck_assert_int_lt(mono_ns() - t0, 1000 * 1000000LL);
	fclose(f);
	/* Only a full queue: waited on, then a time out. */
	f = table_of(line, sizeof(line), a, "4");
	t0 = mono_ns();
	ck_assert_int_eq(ctl_find_fallback(f, mnt, want, found, sizeof(found),
					   200),
			 -ETIMEDOUT);
	ck_assert_int_ge(mono_ns() - t0, 150 * 1000000LL);
	fclose(f);
	f = table_of(line, sizeof(line), a, "0");
	ck_assert_int_eq(ctl_find_fallback(f, mnt, want, found, sizeof(found),
					   200),
			 -ENOENT);
	fclose(f);

	squat_stop(squatter);
	close(filler);
	close(full);
	fake_stop(&strict);
	fake_stop(&mute);
	fake_stop(&ours);
	fake_stop(&other);
	close(refused);
}
END_TEST

/* The whole client path, through the real /proc/net/unix: a mount whose
 * daemon had to fall back is found, and once it is gone, the mount is
 * stale whoever holds the default address. */
START_TEST(test_request_mount)
{
	char mnt[64], def[CTL_PATH_MAX], fb[CTL_PATH_MAX], *reply;
	uint64_t x;
	struct fake ours;
	pid_t squatter;
	int squat;

	snprintf(mnt, sizeof(mnt), "/tmp/sqc-mount-%d", (int)getpid());
	ck_assert_int_eq(ctl_default_address(mnt, def, sizeof(def)), 0);
	ck_assert_int_eq(ctl_fallback_address(mnt, fb, sizeof(fb)), 0);

	/* Nobody anywhere. */
	ck_assert_int_eq(ctl_request_mount(mnt, "stats", getuid(), &reply,
					   1000),
			 -ECONNREFUSED);
	/* At the default address, as always. */
	fake_start(&ours, def, mnt);
	ck_assert_int_eq(
		ctl_request_mount(mnt, "stats", getuid(), &reply, 1000), 0);
	ck_assert_int_eq(ctl_json_u64(reply, "x", &x), 0);
	free(reply);
	fake_stop(&ours);

	/* The default bound by a socket that does not listen. */
	squat = bind_only(def);
	fake_start(&ours, fb, mnt);
	ck_assert_int_eq(
		ctl_request_mount(mnt, "stats", getuid(), &reply, 1000), 0);
	ck_assert_int_eq(ctl_json_u64(reply, "x", &x), 0);
	free(reply);
	/* Only the mount's owner (or root) is taken. */
	if (getuid() != 0)
		ck_assert_int_eq(ctl_request_mount(mnt, "stats", getuid() + 1,
						   &reply, 1000),
				 -ECONNREFUSED);
	fake_stop(&ours);
	ck_assert_int_eq(ctl_request_mount(mnt, "stats", getuid(), &reply,
					   1000),
			 -ECONNREFUSED);
	close(squat);

	/* The default held by another uid that listens (root only). */
	squatter = squat_as_nobody(def, "{\"ok\":true,\"x\":2}\n");
	if (squatter) {
		ck_assert_int_eq(ctl_request(def, "stats", getuid(), &reply,
					     1000),
				 -EPERM);
		fake_start(&ours, fb, mnt);
		ck_assert_int_eq(ctl_request_mount(mnt, "stats", getuid(),
						   &reply, 1000),
				 0);
		ck_assert_int_eq(ctl_json_u64(reply, "x", &x), 0);
		ck_assert_uint_eq(x, 1);
		free(reply);
		fake_stop(&ours);
		/* Gone: stale, not "held by another user". */
		ck_assert_int_eq(ctl_request_mount(mnt, "stats", getuid(),
						   &reply, 1000),
				 -ECONNREFUSED);
		squat_stop(squatter);
	}
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
	tcase_add_test(tc, test_probe);
	tcase_add_test(tc, test_path_socket);
	tcase_add_test(tc, test_fallback_names);
	tcase_add_test(tc, test_fallback_choice);
	tcase_add_test(tc, test_request_mount);
	tcase_add_test(tc, test_proc_start);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

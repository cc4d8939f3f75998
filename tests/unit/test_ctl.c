// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/ctl: addresses, a
 * request/reply round trip over a real socket,
 * including the checks on who may talk to whom; and how a client finds a
 * daemon whose default address another user took (the /proc/net/unix
 * table, the choice among fallback addresses, the whole lookup); and one
 * request to the daemon of a mount of the mount table (call.c).
 */
/* TSAN: yes */
#include <signal.h>
#include <sys/wait.h>
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
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

struct server {
	int fd;
	int served;
};

/* Say nothing on @c until the client gives up and closes (or 10 s). */
static void hold_silent(int c)
{
	struct pollfd p = { .fd = c, .events = POLLIN };
	char b[64];

	while (poll(&p, 1, 10000) == 1 && recv(c, b, sizeof(b), 0) > 0)
		;
}

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
			hold_silent(c);
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
	struct json_buf b = { 0 };
	char cmd[64];
	ssize_t n;
	int c;

	while ((c = accept(f->fd, NULL, NULL)) >= 0) {
		n = recv(c, cmd, sizeof(cmd) - 1, 0);
		cmd[n > 0 ? n : 0] = '\0';
		b.len = 0;
		if (!f->mnt) {
			hold_silent(c);
		} else if (!*f->mnt) {
			json_buf_printf(&b, "{\"ok\":false,\"error\":"
					    "\"permission denied\"}\n");
		} else if (!strcmp(cmd, "ping\n")) {
			json_buf_printf(&b, "{\"ok\":true,\"pid\":1,"
					    "\"mountpoint\":");
			json_buf_str(&b, f->mnt);
			json_buf_printf(&b, "}\n");
		} else {
			json_buf_printf(&b, "{\"ok\":true,\"x\":1}\n");
		}
		if (b.len)
			send(c, b.p, b.len, MSG_NOSIGNAL);
		close(c);
	}
	json_buf_release(&b);
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
	ck_assert_int_eq(json_u64(reply, "x", &x), 0);
	free(reply);
	fake_stop(&ours);

	/* The default bound by a socket that does not listen. */
	squat = bind_only(def);
	fake_start(&ours, fb, mnt);
	ck_assert_int_eq(
		ctl_request_mount(mnt, "stats", getuid(), &reply, 1000), 0);
	ck_assert_int_eq(json_u64(reply, "x", &x), 0);
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
		ck_assert_int_eq(json_u64(reply, "x", &x), 0);
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

/* One request to the daemon of a mount of the table (call.c): its ping
 * answered, a refusal told apart, a stale mount said. */
START_TEST(test_call_mount)
{
	struct mountinfo_mount m = { .fstype = CTL_FSTYPE, .uid = getuid() };
	char def[CTL_PATH_MAX];
	struct fake ours;
	pid_t pid = 0;
	int err;

	snprintf(m.path, sizeof(m.path), "/tmp/sqc-call-%d", (int)getpid());
	ck_assert(ctl_is_sqc_mount(&m));
	ck_assert_int_eq(ctl_default_address(m.path, def, sizeof(def)), 0);
	fake_start(&ours, def, m.path);
	ck_assert_int_eq(ctl_ping_mount(&m, CTL_TIMEOUT_MS, &pid), 0);
	ck_assert_int_eq(pid, 1);
	fake_stop(&ours);
	/* "permission denied": -EACCES, not stale. */
	fake_start(&ours, def, "");
	err = ctl_ping_mount(&m, CTL_TIMEOUT_MS, &pid);
	ck_assert_int_eq(err, -EACCES);
	ck_assert(!ctl_is_stale(err));
	fake_stop(&ours);
	err = ctl_ping_mount(&m, CTL_TIMEOUT_MS, NULL);
	ck_assert_int_eq(err, -ECONNREFUSED);
	ck_assert(ctl_is_stale(err));
	ck_assert(ctl_is_stale(-ENOENT));
	ck_assert(!ctl_is_stale(-ETIMEDOUT));
	snprintf(m.fstype, sizeof(m.fstype), "fuse.squashfuse");
	ck_assert(!ctl_is_sqc_mount(&m));
}
END_TEST

/* Messages (lib/ctl/proto.c): helpers shared by the cases below. */

/* Decode @line, encode it again: the line must come back as @canon. */
static void req_roundtrip(const char *line, const char *canon,
			  struct ctl_req *out)
{
	char buf[CTL_REQ_MAX];
	struct ctl_req again;

	ck_assert_msg(!ctl_req_decode(line, out), "'%s' refused", line);
	ck_assert_int_eq(ctl_req_encode(out, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, canon);
	ck_assert_int_eq(ctl_req_decode(buf, &again), 0);
	ck_assert(!memcmp(&again, out, sizeof(again)));
}

/* @line is refused with @err, and the request is left alone. */
static void req_refused(const char *line, int err)
{
	struct ctl_req r, before;

	memset(&r, 0x5a, sizeof(r));
	before = r;
	ck_assert_msg(ctl_req_decode(line, &r) == err, "'%s' not %d", line,
		      err);
	ck_assert_msg(!memcmp(&r, &before, sizeof(r)), "'%s' wrote", line);
}

/* Malformed variants every command refuses: @cmd is its valid line. */
static void req_refused_common(const char *cmd)
{
	char line[128];

	snprintf(line, sizeof(line), "%s ", cmd);
	req_refused(line, -EINVAL); /* trailing space */
	snprintf(line, sizeof(line), "%s x", cmd);
	req_refused(line, -EINVAL); /* trailing garbage */
	snprintf(line, sizeof(line), " %s", cmd);
	req_refused(line, -EPROTO); /* leading space: no command */
	snprintf(line, sizeof(line), "%sx", cmd);
	/* Another word, or a malformed last argument. */
	req_refused(line, strchr(cmd, ' ') ? -EINVAL : -EPROTO);
	snprintf(line, sizeof(line), "%s 1 2 3 4", cmd);
	req_refused(line, -EINVAL);
}

/* Encode @rep, decode the line as a reply to @rep->cmd into @out. */
static void reply_roundtrip(const struct ctl_reply *rep, struct ctl_reply *out)
{
	struct json_buf b = { 0 };

	ck_assert_int_eq(ctl_reply_encode(rep, &b), 0);
	ck_assert_int_eq(ctl_reply_decode(rep->cmd, b.p, out), 0);
	ck_assert_int_eq(out->cmd, rep->cmd);
	ck_assert(out->ok == rep->ok);
	ck_assert_str_eq(out->error, rep->error);
	json_buf_release(&b);
}

/* @json is refused as a reply to @cmd, and @rep left zeroed. */
static void reply_refused(enum ctl_cmd cmd, const char *json)
{
	struct ctl_reply rep, zero;

	memset(&zero, 0, sizeof(zero));
	memset(&rep, 0x5a, sizeof(rep));
	ck_assert_msg(ctl_reply_decode(cmd, json, &rep) == -EPROTO,
		      "'%s' accepted", json);
	ck_assert(!memcmp(&rep, &zero, sizeof(rep)));
}

START_TEST(test_msg_ping)
{
	struct ctl_reply rep = { .cmd = CTL_CMD_PING, .ok = true }, got;
	struct ctl_req r;

	req_roundtrip("ping", "ping", &r);
	ck_assert_int_eq(r.cmd, CTL_CMD_PING);
	req_refused_common("ping");
	req_refused("", -EPROTO);
	req_refused("PING", -EPROTO);
	req_refused("frobnicate", -EPROTO);
	ck_assert_str_eq(ctl_req_usage("ping 1"), "usage: ping");
	ck_assert_ptr_null(ctl_req_usage("frobnicate"));
	ck_assert_ptr_null(ctl_req_usage(""));

	rep.ping.pid = 4242;
	snprintf(rep.ping.mountpoint, sizeof(rep.ping.mountpoint),
		 "/tmp/a \"b\"\\c\t\xc3\xa9");
	reply_roundtrip(&rep, &got);
	ck_assert_int_eq(got.ping.pid, 4242);
	ck_assert_str_eq(got.ping.mountpoint, rep.ping.mountpoint);
	/* The reply as daemons before this file wrote it. */
	ck_assert_int_eq(ctl_reply_decode(CTL_CMD_PING,
					  "{\"ok\":true,\"pid\":7,"
					  "\"mountpoint\":\"/m\"}",
					  &got),
			 0);
	ck_assert_int_eq(got.ping.pid, 7);
	reply_refused(CTL_CMD_PING, "{\"ok\":true,\"mountpoint\":\"/m\"}");
	reply_refused(CTL_CMD_PING, "{\"ok\":true,\"pid\":7}");
	reply_refused(CTL_CMD_PING,
		      "{\"ok\":true,\"pid\":0,\"mountpoint\":\"/\"}");
	reply_refused(CTL_CMD_PING,
		      "{\"ok\":true,\"pid\":-1,\"mountpoint\":\"/\"}");
	reply_refused(CTL_CMD_PING,
		      "{\"ok\":true,\"pid\":99999999999,\"mountpoint\":\"/\"}");
	reply_refused(CTL_CMD_PING, "{\"ok\":true,\"pid\":7,\"mountpoint\":1}");
	reply_refused(CTL_CMD_PING, "{\"pid\":7,\"mountpoint\":\"/\"}");
	reply_refused(CTL_CMD_PING,
		      "{\"ok\":1,\"pid\":7,\"mountpoint\":\"/\"}");
	reply_refused(CTL_CMD_PING, "not json");
	/* An encoder refuses what the decoder would. */
	rep.ping.pid = 0;
	{
		struct json_buf b = { 0 };

		ck_assert_int_eq(ctl_reply_encode(&rep, &b), -EINVAL);
		ck_assert_uint_eq(b.len, 0);
		json_buf_release(&b);
	}
}
END_TEST

START_TEST(test_msg_stats)
{
	const char *j =
		"{\"ok\":true,\"schema\":1,\"pid\":12,\"uptime_s\":1.5,"
		"\"image\":\"/i.sqfs\",\"mountpoint\":\"/m\","
		"\"compressor\":\"zstd\",\"block_size\":131072,\"inodes\":9,"
		"\"holders\":[3,40,500],\"holder_managed\":true,"
		"\"stage\":{\"state\":\"running\",\"planned\":100,"
		"\"staged\":50,\"percent\":50.0,\"mb_per_s\":2.5,"
		"\"seconds\":3.25,\"on_tmpfs\":false},"
		"\"cache\":{\"data\":{\"budget\":10,\"bytes\":5,\"hits\":3,"
		"\"misses\":1},\"meta\":{\"budget\":20,\"bytes\":6,"
		"\"hits\":7,\"misses\":2}},"
		"\"image_io\":{\"bytes\":1000,\"corrupt\":1,\"read_errors\":2},"
		"\"fuse\":{\"read\":8,\"bytes_served\":4096,\"eio\":0,"
		"\"uring_threads\":2,\"uring_requests\":30},"
		"\"warm\":{\"files\":4,\"bytes\":40,\"open_files\":1,"
		"\"open_bytes\":10},"
		"\"statahead\":{\"all_state\":\"done\",\"all_entries\":11,"
		"\"all_dirs\":3,\"entries\":6,\"dirs\":2},"
		"\"process\":{\"rss_bytes\":123456}}";
	struct ctl_reply rep;
	struct ctl_req r;
	struct json_buf b = { 0 };
	const struct ctl_stats *st = &rep.stats;

	req_roundtrip("stats", "stats", &r);
	ck_assert_int_eq(r.cmd, CTL_CMD_STATS);
	req_refused_common("stats");
	req_refused("stats -1", -EINVAL);

	ck_assert_int_eq(ctl_reply_decode(CTL_CMD_STATS, j, &rep), 0);
	ck_assert(rep.ok);
	ck_assert_uint_eq(st->pid, 12);
	ck_assert(st->uptime_s == 1.5);
	ck_assert_str_eq(st->image, "/i.sqfs");
	ck_assert_str_eq(st->mountpoint, "/m");
	ck_assert_str_eq(st->compressor, "zstd");
	ck_assert_uint_eq(st->block_size, 131072);
	ck_assert_uint_eq(st->inodes, 9);
	ck_assert_uint_eq(st->holders, 3);
	ck_assert_int_eq(st->holder_pids[2], 500);
	ck_assert(st->holder_managed);
	ck_assert_str_eq(st->stage_state, "running");
	ck_assert_uint_eq(st->stage_planned, 100);
	ck_assert_uint_eq(st->stage_staged, 50);
	ck_assert(st->stage_percent == 50.0 && st->stage_mb_per_s == 2.5 &&
		  st->stage_seconds == 3.25 && !st->stage_on_tmpfs);
	ck_assert_uint_eq(st->data.hits, 3);
	ck_assert_uint_eq(st->meta.budget, 20);
	ck_assert_uint_eq(st->image_bytes, 1000);
	ck_assert_uint_eq(st->image_read_errors, 2);
	ck_assert_uint_eq(st->fuse_bytes_served, 4096);
	ck_assert_uint_eq(st->fuse_uring_requests, 30);
	ck_assert_uint_eq(st->warm_open_bytes, 10);
	ck_assert_str_eq(st->statahead_all_state, "done");
	ck_assert_uint_eq(st->statahead_dirs, 2);
	ck_assert_uint_eq(st->rss_bytes, 123456);

	/* Each field is optional: missing or of another type reads 0. */
	ck_assert_int_eq(ctl_reply_decode(CTL_CMD_STATS,
					  "{\"ok\":true,\"pid\":-3,\"inodes\":"
					  "\"x\",\"holders\":{},\"image\":1}",
					  &rep),
			 0);
	ck_assert_uint_eq(st->pid, 0);
	ck_assert_uint_eq(st->inodes, 0);
	ck_assert_uint_eq(st->holders, 0);
	ck_assert_str_eq(st->image, "");
	reply_refused(CTL_CMD_STATS, "{\"pid\":1}");
	reply_refused(CTL_CMD_STATS, "{\"ok\":null}");
	/* Built by the daemon, never encoded here. */
	rep.cmd = CTL_CMD_STATS;
	rep.ok = true;
	ck_assert_int_eq(ctl_reply_encode(&rep, &b), -EINVAL);
	json_buf_release(&b);
}
END_TEST

START_TEST(test_msg_stage)
{
	struct ctl_reply rep = { .cmd = CTL_CMD_STAGE, .ok = true }, got;
	struct ctl_req r;
	char buf[CTL_REQ_MAX];

	req_roundtrip("stage", "stage full", &r);
	ck_assert_int_eq(r.stage.mode, CTL_STAGE_FULL);
	ck_assert_uint_eq(r.stage.budget, 0);
	req_roundtrip("stage meta", "stage meta", &r);
	ck_assert_int_eq(r.stage.mode, CTL_STAGE_META);
	req_roundtrip("stage 4096", "stage full 4096", &r);
	ck_assert_uint_eq(r.stage.budget, 4096);
	req_roundtrip("stage full 0", "stage full", &r);
	req_roundtrip("stage meta 18446744073709551615",
		      "stage meta 18446744073709551615", &r);
	ck_assert_uint_eq(r.stage.budget, UINT64_MAX);
	req_refused("stage meta 18446744073709551616", -EINVAL);
	req_refused("stage 99999999999999999999999", -EINVAL);
	req_refused("stage -1", -EINVAL);
	req_refused("stage +1", -EINVAL);
	req_refused("stage 010", -EINVAL);
	req_refused("stage 1k", -EINVAL);
	req_refused("stage data", -EINVAL);
	req_refused("stage 1 meta", -EINVAL);
	req_refused("stage meta meta", -EINVAL);
	req_refused("stage  meta", -EINVAL);
	req_refused("stage meta 1 2", -EINVAL);
	req_refused_common("stage meta 1");
	ck_assert_str_eq(ctl_req_usage("stage x"),
			 "usage: stage [full|meta] [BYTES]");
	r.cmd = CTL_CMD_STAGE;
	r.stage.mode = (enum ctl_stage_mode)7;
	ck_assert_int_eq(ctl_req_encode(&r, buf, sizeof(buf)), -EINVAL);
	r.stage.mode = CTL_STAGE_META;
	r.stage.budget = 1;
	ck_assert_int_eq(ctl_req_encode(&r, buf, 8), -ENOSPC);

	rep.stage.mode = CTL_STAGE_META;
	rep.stage.budget = 1ull << 40;
	reply_roundtrip(&rep, &got);
	ck_assert_int_eq(got.stage.mode, CTL_STAGE_META);
	ck_assert_uint_eq(got.stage.budget, 1ull << 40);
	reply_refused(CTL_CMD_STAGE, "{\"ok\":true,\"mode\":\"all\","
				     "\"budget\":1}");
	reply_refused(CTL_CMD_STAGE, "{\"ok\":true,\"mode\":\"full\"}");
	reply_refused(CTL_CMD_STAGE, "{\"ok\":true,\"mode\":\"full\","
				     "\"budget\":1.5}");
	reply_refused(CTL_CMD_STAGE, "{\"ok\":true,\"mode\":\"full\","
				     "\"budget\":18446744073709551616}");
}
END_TEST

START_TEST(test_msg_umount)
{
	struct ctl_reply rep = { .cmd = CTL_CMD_UMOUNT, .ok = true }, got;
	struct ctl_req r;

	req_roundtrip("umount", "umount", &r);
	ck_assert_int_eq(r.cmd, CTL_CMD_UMOUNT);
	req_refused_common("umount");
	req_refused("umount now", -EINVAL);
	reply_roundtrip(&rep, &got);
	ck_assert(got.ok);
	reply_refused(CTL_CMD_UMOUNT, "{}");
	reply_refused(CTL_CMD_UMOUNT, "{\"ok\":\"true\"}");
}
END_TEST

START_TEST(test_msg_hold)
{
	struct ctl_reply rep = { .cmd = CTL_CMD_HOLD, .ok = true }, got;
	struct ctl_req r = { .cmd = CTL_CMD_HOLD };
	char buf[CTL_REQ_MAX];

	req_roundtrip("hold 1 0", "hold 1 0", &r);
	req_roundtrip("hold 1073741823 18446744073709551615",
		      "hold 1073741823 18446744073709551615", &r);
	ck_assert_int_eq(r.hold.pid, CTL_PID_MAX);
	ck_assert_uint_eq(r.hold.start, UINT64_MAX);
	req_refused("hold 0 5", -EINVAL);
	req_refused("hold -1 5", -EINVAL);
	req_refused("hold 1073741824 5", -EINVAL);
	req_refused("hold 4294967297 5", -EINVAL);
	req_refused("hold 12 18446744073709551616", -EINVAL);
	req_refused("hold 12 -5", -EINVAL);
	req_refused("hold 12", -EINVAL);
	req_refused("hold", -EINVAL);
	req_refused("hold 12 5 6", -EINVAL);
	req_refused("hold 12 5x", -EINVAL);
	req_refused("hold 0x10 5", -EINVAL);
	req_refused("hold 12  5", -EINVAL);
	req_refused_common("hold 12 5");
	r.hold.pid = 0;
	ck_assert_int_eq(ctl_req_encode(&r, buf, sizeof(buf)), -EINVAL);
	r.hold.pid = -4;
	ck_assert_int_eq(ctl_req_encode(&r, buf, sizeof(buf)), -EINVAL);

	rep.holders.holders = 3;
	reply_roundtrip(&rep, &got);
	ck_assert_uint_eq(got.holders.holders, 3);
	reply_refused(CTL_CMD_HOLD, "{\"ok\":true}");
	reply_refused(CTL_CMD_HOLD, "{\"ok\":true,\"holders\":-1}");
	reply_refused(CTL_CMD_HOLD, "{\"ok\":true,\"holders\":4294967296}");
}
END_TEST

START_TEST(test_msg_release)
{
	struct ctl_reply rep = { .cmd = CTL_CMD_RELEASE, .ok = true }, got;
	struct ctl_req r;

	req_roundtrip("release 77", "release 77", &r);
	ck_assert_int_eq(r.cmd, CTL_CMD_RELEASE);
	ck_assert_int_eq(r.release.pid, 77);
	req_refused("release", -EINVAL);
	req_refused("release 0", -EINVAL);
	req_refused("release -77", -EINVAL);
	req_refused("release 99999999999999999999", -EINVAL);
	req_refused("release 77 1", -EINVAL);
	req_refused("release 077", -EINVAL);
	req_refused_common("release 77");
	ck_assert_str_eq(ctl_req_usage("release"), "usage: release PID");

	rep.holders.holders = 0;
	reply_roundtrip(&rep, &got);
	ck_assert_uint_eq(got.holders.holders, 0);
	reply_refused(CTL_CMD_RELEASE, "{\"ok\":true,\"holders\":\"1\"}");
}
END_TEST

START_TEST(test_msg_order)
{
	struct ctl_reply rep = { .cmd = CTL_CMD_ORDER, .ok = true }, got;
	struct ctl_req r;
	char big[64];

	req_roundtrip("order 1234", "order 1234", &r);
	ck_assert_int_eq(r.cmd, CTL_CMD_ORDER);
	ck_assert_uint_eq(r.order.bytes, 1234);
	req_roundtrip("order 0", "order 0", &r);
	ck_assert_uint_eq(r.order.bytes, 0);
	snprintf(big, sizeof(big), "order %llu",
		 (unsigned long long)CTL_ORDER_MAX);
	req_roundtrip(big, big, &r);
	snprintf(big, sizeof(big), "order %llu",
		 (unsigned long long)CTL_ORDER_MAX + 1);
	req_refused(big, -EINVAL);
	req_refused("order", -EINVAL);
	req_refused("order -1", -EINVAL);
	req_refused("order 01", -EINVAL);
	req_refused("order 1 2", -EINVAL); /* a PID without its START */
	req_roundtrip("order 12 4321 99", "order 12 4321 99", &r);
	ck_assert_uint_eq(r.order.bytes, 12);
	ck_assert_int_eq(r.order.pid, 4321);
	ck_assert_uint_eq(r.order.start, 99);
	req_roundtrip("order 0 1 0", "order 0 1 0", &r);
	ck_assert_int_eq(r.order.pid, 1);
	req_refused("order 12 0 99", -EINVAL);
	req_refused("order 12 -1 99", -EINVAL);
	req_refused("order 12 4321 99 7", -EINVAL);
	req_refused("order 12 1073741824 99", -EINVAL);
	req_refused_common("order 12");
	ck_assert_str_eq(ctl_req_usage("order x"),
			 "usage: order BYTES [PID START] (then the body)");
	r.order.bytes = CTL_ORDER_MAX + 1;
	ck_assert_int_eq(ctl_req_encode(&r, big, sizeof(big)), -EINVAL);

	rep.order.files = 1281167;
	rep.order.bytes = 4790000000ull;
	rep.order.staged = 7;
	rep.order.window = 64ull << 20;
	reply_roundtrip(&rep, &got);
	ck_assert_uint_eq(got.order.files, 1281167);
	ck_assert_uint_eq(got.order.bytes, 4790000000ull);
	ck_assert_uint_eq(got.order.staged, 7);
	ck_assert_uint_eq(got.order.window, 64ull << 20);
	reply_refused(CTL_CMD_ORDER,
		      "{\"ok\":true,\"files\":1,\"bytes\":2,\"staged\":3}");
	reply_refused(CTL_CMD_ORDER, "{\"ok\":true,\"files\":-1,\"bytes\":2,"
				     "\"staged\":3,\"window\":4}");
}
END_TEST

START_TEST(test_msg_error)
{
	struct ctl_reply rep = { .cmd = CTL_CMD_HOLD }, got;
	struct json_buf b = { 0 };

	/* A refusal of any command, its text escaped both ways. */
	snprintf(rep.error, sizeof(rep.error), "not a \"holder\"\n");
	for (int c = 0; c < CTL_CMD_COUNT; c++) {
		rep.cmd = (enum ctl_cmd)c;
		reply_roundtrip(&rep, &got);
		ck_assert(!got.ok);
	}
	ck_assert_int_eq(ctl_reply_decode(CTL_CMD_PING, "{\"ok\":false}", &got),
			 0);
	ck_assert(!got.ok);
	ck_assert_str_eq(got.error, "");
	ck_assert_int_eq(ctl_reply_decode(CTL_CMD_STATS,
					  "{\"ok\":false,\"error\":"
					  "\"permission denied\"}",
					  &got),
			 0);
	ck_assert_str_eq(got.error, "permission denied");
	reply_refused(CTL_CMD_PING, "{\"ok\":false,\"error\":7}");
	{
		char big[CTL_ERROR_MAX + 32];

		memset(big, 'e', sizeof(big));
		json_buf_printf(&b, "{\"ok\":false,\"error\":\"%.*s\"}",
				(int)sizeof(big), big);
		reply_refused(CTL_CMD_PING, b.p);
		json_buf_release(&b);
	}
	rep.cmd = CTL_CMD_COUNT;
	ck_assert_int_eq(ctl_reply_encode(&rep, &b), -EINVAL);
	ck_assert_int_eq(ctl_reply_decode(CTL_CMD_COUNT, "{\"ok\":true}", &got),
			 -EINVAL);
	json_buf_release(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("ctl");
	TCase *tt = tcase_create("servers");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_canonical);
	tcase_add_test(tc, test_address);
	tcase_add_test(tc, test_full_queue);
	tcase_add_test(tc, test_probe);
	tcase_add_test(tc, test_fallback_names);
	/* A server thread and its clients: TSan runs these. */
	tcase_set_tags(tt, "threads");
	tcase_add_test(tt, test_roundtrip);
	tcase_add_test(tt, test_path_socket);
	tcase_add_test(tt, test_fallback_choice);
	tcase_add_test(tt, test_request_mount);
	tcase_add_test(tt, test_call_mount);
	suite_add_tcase(s, tt);
	tcase_add_test(tc, test_msg_ping);
	tcase_add_test(tc, test_msg_stats);
	tcase_add_test(tc, test_msg_stage);
	tcase_add_test(tc, test_msg_umount);
	tcase_add_test(tc, test_msg_hold);
	tcase_add_test(tc, test_msg_release);
	tcase_add_test(tc, test_msg_order);
	tcase_add_test(tc, test_msg_error);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/keep, without root and
 * without the server: the wire format passes a message and one
 * descriptor (more are dropped by the kernel) and hands back the
 * descriptor of a message it refuses; the keeper gives a user back the
 * copy of the same image and nobody else's, drops a copy whose image
 * changed (not one of another range of the file, or of another pid
 * namespace's mounts), keeps what copies not in use hold within its budget (bytes
 * really held, so a sparse copy costs what it holds), drops from the
 * user who holds the most first, never drops one a checked daemon uses
 * and counts one no checked daemon uses against the budget, caps a
 * user's copies, refuses a copy not sealed for good, lets only root
 * evict; two mounts of one image by one user at once share one copy; a
 * second GET before the first mount's PUT waits for that copy (or NONE),
 * another user's does not; a reservation expires on the keeper's clock
 * (the test's own); LIST answers any number of copies; names are fit to
 * print.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "keep/keep.h"
#include "stage/stage.h"

#define IMG_SIZE (1u << 20)
#define MIB (1ull << 20)

/* The keeper's clock: the tests move it. */
static int64_t fake_now = 1000000;

static int64_t test_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static struct keeper *keeper_of(uint64_t budget, unsigned int user_copies)
{
	struct keeper_opts o = { .budget = budget,
				 .user_copies = user_copies,
				 .now_ms = test_clock };
	struct keeper *k;

	ck_assert_int_eq(keeper_new(&o, &k), 0);
	return k;
}

/* A connection, as the server would register it. */
struct cl {
	int id;
	uid_t uid;
};

static void cl_open(struct keeper *k, struct cl *c, uid_t uid)
{
	static int next_id = 100;

	c->id = next_id++;
	c->uid = uid;
	ck_assert_int_eq(keeper_open(k, c->id, uid, 0), 0);
}

static void cl_close(struct keeper *k, struct cl *c)
{
	keeper_closed(k, c->id);
}

/* Take the next answer queued for @c.  Return: whether there was one;
 * *@fd: a descriptor of the test's own passed with it, or -1. */
static bool pop(struct keeper *k, const struct cl *c, struct keep_msg *m,
		int *fd)
{
	int kfd;

	if (!keeper_answer_next(k, c->id, m, &kfd))
		return false;
	*fd = kfd >= 0 ? dup(kfd) : -1;
	keeper_answer_sent(k, c->id);
	return true;
}

/* Ask @m on @c, the way the server does: a GET with fstat() of @img, a
 * PUT with (a dup of) @copy.  Return: the first answer's descriptor. */
static int ask(struct keeper *k, const struct cl *c, struct keep_msg *m,
	       int img, int copy, struct keep_msg *ans)
{
	struct stat sb;
	int fd;

	if (m->op == KEEP_GET) {
		ck_assert_int_eq(fstat(img, &sb), 0);
		ck_assert_int_eq(keeper_request(k, c->id, m, &sb, -1), 0);
	} else {
		ck_assert_int_eq(keeper_request(k, c->id, m, NULL,
						copy >= 0 ? dup(copy) : -1),
				 0);
	}
	ck_assert(pop(k, c, ans, &fd));
	return fd;
}

static char *image_new_of(uint64_t size)
{
	char *path = strdup("/tmp/test_keep.XXXXXX");
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
	return path;
}

static char *image_new(void)
{
	return image_new_of(IMG_SIZE);
}

/* Fill the range of the copy @fd with @bytes of data: what it holds. */
static void fill(int fd, uint64_t bytes)
{
	static char buf[1 << 16];

	memset(buf, 'x', sizeof(buf));
	for (uint64_t at = 0; at < bytes; at += sizeof(buf))
		ck_assert_int_eq(pwrite(fd, buf, sizeof(buf), (off_t)at),
				 (ssize_t)sizeof(buf));
}

/* A mount of @path by @c: GET (named @name), and PUT a new copy of @size
 * bytes holding @held of them if NONE.  Return: 1 if a copy was given, 0
 * if one was made. */
static int mount_full(struct keeper *k, struct cl *c, const char *path,
		      const char *name, uint64_t size, uint64_t held)
{
	struct keep_msg m = { .op = KEEP_GET, .b = size }, ans;
	struct keep_key key;
	struct stat sb;
	int img = open(path, O_RDONLY), copy;

	ck_assert_int_ge(img, 0);
	strcpy(m.name, name);
	copy = ask(k, c, &m, img, -1, &ans);
	if (ans.op == KEEP_COPY) {
		ck_assert_int_ge(copy, 0);
		close(copy);
		close(img);
		return 1;
	}
	ck_assert_int_eq(ans.op, KEEP_NONE);
	ck_assert_int_eq(fstat(img, &sb), 0);
	keep_key_of(&sb, 0, 0, &key);
	ck_assert_int_eq(stage_backing_new(size, &key, sizeof(key), "t", &copy),
			 0);
	fill(copy, held);
	m = (struct keep_msg){ .op = KEEP_PUT };
	ck_assert_int_eq(ask(k, c, &m, -1, copy, &ans), -1);
	ck_assert_int_eq(ans.op, KEEP_DONE);
	ck_assert_int_eq(ans.status, 0);
	close(copy);
	close(img);
	return 0;
}

/* A mount by a new connection @c of @uid, its copy holding @held. */
static int mount_held(struct keeper *k, struct cl *c, uid_t uid,
		      const char *path, uint64_t held)
{
	struct stat sb;

	ck_assert_int_eq(stat(path, &sb), 0);
	cl_open(k, c, uid);
	return mount_full(k, c, path, path, (uint64_t)sb.st_size, held);
}

static int mount_on(struct keeper *k, struct cl *c, uid_t uid, const char *path)
{
	return mount_held(k, c, uid, path, 0);
}

/* Bytes one copy of IMG_SIZE holding @held costs: the data and the
 * trailer's page. */
static uint64_t cost(uint64_t held)
{
	return held + 4096;
}

START_TEST(test_wire)
{
	struct keep_msg m = { .op = KEEP_GET, .a = 7 }, got;
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int sv[2], fd, two[2], before, after;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	strcpy(m.name, "img");
	ck_assert_int_eq(keep_send(sv[0], &m, 0), 0);
	ck_assert_int_eq(keep_recv(sv[1], &got, &fd), 0);
	ck_assert_int_ge(fd, 0);
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	ck_assert_str_eq(got.name, "img");
	ck_assert_uint_eq(got.a, 7);
	close(fd);
	/* Two descriptors: one is installed, the kernel drops the other. */
	ck_assert_int_eq(pipe(two), 0);
	memset(&u, 0, sizeof(u));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(2 * sizeof(int));
	memcpy(CMSG_DATA(c), two, sizeof(two));
	m.magic = KEEP_MAGIC;
	ck_assert_int_eq(sendmsg(sv[0], &mh, 0), (ssize_t)sizeof(m));
	before = dup(0);
	close(before);
	ck_assert_int_eq(keep_recv(sv[1], &got, &fd), 0);
	ck_assert_int_ge(fd, 0);
	after = dup(0);
	ck_assert_int_gt(after, fd); /* only one more descriptor */
	ck_assert_int_eq(after, before + 1);
	close(after);
	close(fd);
	close(two[0]);
	close(two[1]);
	/* A short message is refused, its descriptor handed back. */
	ck_assert_int_eq(write(sv[0], "short", 5), 5);
	ck_assert_int_eq(keep_recv(sv[1], &got, &fd), -EBADMSG);
	ck_assert_int_eq(fd, -1);
	close(sv[0]);
	ck_assert_int_eq(keep_recv(sv[1], &got, &fd), -ECONNRESET);
	close(sv[1]);
}
END_TEST

/* Kept for the same user and image; not given to another user; dropped
 * when the image changes. */
START_TEST(test_keep_uid_identity)
{
	char *path = image_new();
	struct keeper *k = keeper_of(1ull << 30, 0);
	struct cl a, b;
	unsigned int n;

	ck_assert_int_eq(mount_on(k, &a, 1000, path), 0);
	keeper_set_used(k, a.id, true); /* the server found its daemon */
	ck_assert_uint_eq(keeper_kept(k, &n), 0); /* in use */
	ck_assert_uint_eq(n, 1);
	cl_close(k, &a);
	ck_assert_uint_eq(keeper_kept(k, NULL), cost(0));
	ck_assert_int_eq(mount_on(k, &b, 1001, path), 0); /* another user */
	cl_close(k, &b);
	ck_assert_int_eq(mount_on(k, &a, 1000, path), 1);
	cl_close(k, &a);
	keeper_kept(k, &n);
	ck_assert_uint_eq(n, 2);
	/* Same size, mtime set back: the ctime still differs. */
	ck_assert_int_eq(utimensat(AT_FDCWD, path,
				   (struct timespec[2]){ { 0, UTIME_OMIT },
							 { 0, UTIME_OMIT } },
				   0),
			 0);
	ck_assert_int_eq(chmod(path, 0640), 0);
	ck_assert_int_eq(mount_on(k, &a, 1000, path), 0);
	keeper_kept(k, &n);
	ck_assert_uint_eq(n, 2); /* the old one went, a new one came */
	cl_close(k, &a);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* A budget for one copy keeps the most recent; one a checked daemon uses
 * is never dropped; only root evicts. */
START_TEST(test_keep_budget)
{
	char *p1 = image_new(), *p2 = image_new();
	struct keep_msg m = { .op = KEEP_EVICT, .a = 1 }, ans;
	struct keeper *k = keeper_of(cost(MIB / 2) + 1, 0);
	struct cl a, b, c;
	unsigned int n;

	ck_assert_int_eq(mount_held(k, &a, 1000, p1, MIB / 2), 0);
	keeper_set_used(k, a.id, true);
	ck_assert_int_eq(mount_held(k, &b, 1000, p2, MIB / 2), 0);
	keeper_set_used(k, b.id, true);
	cl_close(k, &a);
	cl_close(k, &b);
	keeper_kept(k, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(mount_on(k, &a, 1000, p2), 1); /* the recent one */
	keeper_set_used(k, a.id, true);
	ck_assert_uint_eq(keeper_evict(k, UINT64_MAX), 0); /* in use */
	cl_close(k, &a);
	cl_open(k, &c, 1000);
	ck_assert_int_eq(ask(k, &c, &m, -1, -1, &ans), -1);
	ck_assert_int_eq(ans.status, -EPERM);
	cl_close(k, &c);
	cl_open(k, &c, 0);
	ck_assert_int_eq(ask(k, &c, &m, -1, -1, &ans), -1);
	ck_assert_int_eq(ans.status, 0);
	ck_assert_uint_eq(ans.a, cost(MIB / 2));
	cl_close(k, &c);
	keeper_kept(k, &n);
	ck_assert_uint_eq(n, 0);
	keeper_free(k);
	unlink(p1);
	unlink(p2);
	free(p1);
	free(p2);
}
END_TEST

/* What a copy costs is what it holds: a sparse copy of a large image
 * just under the budget costs its trailer's page and pushes no other
 * copy out. */
START_TEST(test_keep_held_bytes)
{
	char *big = image_new_of(64 * MIB), *small = image_new();
	struct keeper *k = keeper_of(8 * MIB, 0);
	struct keep_msg m = { .op = KEEP_LIST }, ans;
	struct cl a, b, l;
	unsigned int n;
	int fd;

	ck_assert_int_eq(mount_held(k, &b, 1001, small, MIB / 2), 0);
	cl_close(k, &b);
	ck_assert_int_eq(mount_held(k, &a, 1000, big, 0), 0);
	cl_close(k, &a);
	ck_assert_uint_eq(keeper_kept(k, &n), cost(MIB / 2) + 4096);
	ck_assert_uint_eq(n, 2); /* the other user's copy stays */
	cl_open(k, &l, 1000);
	ck_assert_int_eq(ask(k, &l, &m, -1, -1, &ans), -1);
	ck_assert_int_eq(ans.op, KEEP_ENTRY);
	ck_assert_uint_eq(ans.a, 4096); /* bytes in memory */
	ck_assert_uint_eq(ans.d, 64 * MIB); /* its range */
	ck_assert(ans.flags & KEEP_F_PARTIAL);
	ck_assert(!(ans.flags & KEEP_F_INCONSISTENT));
	ck_assert(pop(k, &l, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_DONE);
	cl_close(k, &l);
	keeper_free(k);
	unlink(big);
	unlink(small);
	free(big);
	free(small);
}
END_TEST

/* Over the budget, the user whose copies hold the most loses first: a
 * user's new copy does not push out another user's older, smaller one. */
START_TEST(test_keep_fair)
{
	char *p1 = image_new(), *p2 = image_new(), *p3 = image_new();
	struct keeper *k = keeper_of(cost(MIB / 2) + cost(MIB / 4) + 1, 0);
	struct keep_msg m = { .op = KEEP_LIST }, ans;
	struct cl a, b, l;
	int fd, seen_b = 0;

	ck_assert_int_eq(mount_held(k, &b, 1001, p1, MIB / 8), 0);
	cl_close(k, &b); /* b's, the oldest */
	ck_assert_int_eq(mount_held(k, &a, 1000, p2, MIB / 2), 0);
	cl_close(k, &a);
	ck_assert_int_eq(mount_held(k, &a, 1000, p3, MIB / 4), 0);
	cl_close(k, &a); /* over: a holds the most, a's oldest goes */
	cl_open(k, &l, 0);
	ck_assert_int_eq(ask(k, &l, &m, -1, -1, &ans), -1);
	do {
		if (ans.op != KEEP_ENTRY)
			break;
		seen_b += ans.uid == 1001;
		ck_assert(strcmp(ans.name, p2)); /* a's oldest is gone */
	} while (pop(k, &l, &ans, &fd));
	ck_assert_int_eq(seen_b, 1);
	cl_close(k, &l);
	keeper_free(k);
	unlink(p1);
	unlink(p2);
	unlink(p3);
	free(p1);
	free(p2);
	free(p3);
}
END_TEST

/* A copy whose connection's peer is no checked daemon counts against the
 * budget and may be dropped; the connection then holds nothing. */
START_TEST(test_keep_unchecked_use)
{
	char *p1 = image_new(), *p2 = image_new();
	struct keeper *k = keeper_of(cost(MIB / 2) + 1, 0);
	struct cl a, b;

	ck_assert_int_eq(mount_held(k, &a, 1000, p1, MIB / 2), 0);
	ck_assert_uint_eq(keeper_kept(k, NULL), cost(MIB / 2));
	ck_assert_int_ge(keeper_copy_fd(k, a.id), 0);
	keeper_set_used(k, a.id, true);
	ck_assert_uint_eq(keeper_kept(k, NULL), 0);
	keeper_set_used(k, a.id, false); /* the daemon let go of it */
	ck_assert_uint_eq(keeper_kept(k, NULL), cost(MIB / 2));
	ck_assert_int_eq(mount_held(k, &b, 1001, p2, MIB / 2), 0);
	keeper_set_used(k, b.id, true);
	cl_close(k, &b); /* kept: over the budget with a's */
	ck_assert_int_eq(keeper_copy_fd(k, a.id), -1); /* a's dropped */
	ck_assert_uint_eq(keeper_kept(k, NULL), cost(MIB / 2));
	cl_close(k, &a);
	keeper_free(k);
	unlink(p1);
	unlink(p2);
	free(p1);
	free(p2);
}
END_TEST

/* A mount by a new connection @c of @uid, whose peer is in the pid
 * namespace @pidns, of the range of @size bytes at @offset in @path (the
 * name the daemon gives: the file's, whatever the offset).  Return: 1 if
 * a copy was given, 0 if one was made. */
static int mount_range(struct keeper *k, struct cl *c, uid_t uid,
		       uint64_t pidns, const char *path, uint64_t offset,
		       uint64_t size)
{
	struct keep_msg m = { .op = KEEP_GET, .a = offset, .b = size }, ans;
	struct keep_key key;
	struct stat sb;
	int img = open(path, O_RDONLY), copy;

	ck_assert_int_ge(img, 0);
	c->id = 900 + (int)offset / 4096 + (int)pidns;
	c->uid = uid;
	ck_assert_int_eq(keeper_open(k, c->id, uid, pidns), 0);
	strcpy(m.name, path);
	copy = ask(k, c, &m, img, -1, &ans);
	if (ans.op == KEEP_COPY) {
		close(copy);
		close(img);
		return 1;
	}
	ck_assert_int_eq(ans.op, KEEP_NONE);
	ck_assert_int_eq(fstat(img, &sb), 0);
	keep_key_of(&sb, offset, pidns, &key);
	ck_assert_int_eq(stage_backing_new(size, &key, sizeof(key), "t", &copy),
			 0);
	m = (struct keep_msg){ .op = KEEP_PUT };
	ck_assert_int_eq(ask(k, c, &m, -1, copy, &ans), -1);
	ck_assert_int_eq(ans.status, 0);
	close(copy);
	close(img);
	return 0;
}

/* Copies of one file by one user that are of other ranges (offset=, the
 * partitions of a SIF file) or of mounts in another pid namespace (a
 * container's) are not copies of a changed image: a GET of one keeps the
 * others, and each is given back. */
START_TEST(test_keep_ranges_kept)
{
	char *path = image_new();
	struct keeper *k = keeper_of(1ull << 30, 0);
	struct cl c;
	unsigned int n;

	ck_assert_int_eq(mount_range(k, &c, 1000, 7, path, 0, 8192), 0);
	cl_close(k, &c);
	ck_assert_int_eq(mount_range(k, &c, 1000, 7, path, 65536, 8192), 0);
	cl_close(k, &c);
	ck_assert_int_eq(mount_range(k, &c, 1000, 8, path, 0, 8192), 0);
	cl_close(k, &c);
	keeper_kept(k, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(mount_range(k, &c, 1000, 7, path, 0, 8192), 1);
	cl_close(k, &c);
	ck_assert_int_eq(mount_range(k, &c, 1000, 7, path, 65536, 8192), 1);
	cl_close(k, &c);
	ck_assert_int_eq(mount_range(k, &c, 1000, 8, path, 0, 8192), 1);
	cl_close(k, &c);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* A user has at most user_copies copies: the least recently used one no
 * mount uses goes; with all in use, a PUT is refused.  Root has no cap. */
START_TEST(test_keep_user_copies)
{
	char *p[4];
	struct keep_msg m = { .op = KEEP_GET, .b = IMG_SIZE }, ans;
	struct keeper *k = keeper_of(1ull << 30, 2);
	struct cl c[4];
	unsigned int n;
	int img, copy;

	for (int i = 0; i < 4; i++)
		p[i] = image_new();
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(mount_on(k, &c[i], 1000, p[i]), 0);
		cl_close(k, &c[i]);
	}
	keeper_kept(k, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(mount_on(k, &c[0], 1000, p[1]), 1); /* kept */
	ck_assert_int_eq(mount_on(k, &c[1], 1000, p[2]), 1); /* kept */
	/* Both in use: no room for a third. */
	cl_open(k, &c[2], 1000);
	img = open(p[3], O_RDONLY);
	ck_assert_int_eq(ask(k, &c[2], &m, img, -1, &ans), -1);
	ck_assert_int_eq(ans.op, KEEP_NONE);
	{
		struct keep_key key;
		struct stat sb;

		ck_assert_int_eq(fstat(img, &sb), 0);
		keep_key_of(&sb, 0, 0, &key);
		ck_assert_int_eq(stage_backing_new(IMG_SIZE, &key, sizeof(key),
						   "t", &copy),
				 0);
	}
	m = (struct keep_msg){ .op = KEEP_PUT };
	ck_assert_int_eq(ask(k, &c[2], &m, -1, copy, &ans), -1);
	ck_assert_int_eq(ans.status, -EDQUOT);
	close(copy);
	close(img);
	for (int i = 0; i < 3; i++)
		cl_close(k, &c[i]);
	/* Root: all four. */
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(mount_on(k, &c[0], 0, p[i]), 0);
		cl_close(k, &c[0]);
	}
	keeper_kept(k, &n);
	ck_assert_uint_eq(n, 6);
	keeper_free(k);
	for (int i = 0; i < 4; i++) {
		unlink(p[i]);
		free(p[i]);
	}
}
END_TEST

/* Two mounts of one image by one user at once share the copy; it is kept
 * when the last one ends.  Another user's mount meanwhile gets its own. */
START_TEST(test_keep_share)
{
	char *path = image_new();
	struct keeper *k = keeper_of(1ull << 30, 0);
	struct cl a, b, c;
	unsigned int n;

	ck_assert_int_eq(mount_on(k, &a, 1000, path), 0);
	ck_assert_int_eq(mount_on(k, &b, 1000, path), 1); /* a's, in use */
	ck_assert_int_eq(mount_on(k, &c, 1001, path), 0); /* its own */
	keeper_set_used(k, a.id, true);
	keeper_set_used(k, b.id, true);
	keeper_set_used(k, c.id, true);
	ck_assert_uint_eq(keeper_kept(k, &n), 0);
	ck_assert_uint_eq(n, 2);
	cl_close(k, &a);
	ck_assert_uint_eq(keeper_kept(k, NULL), 0); /* b still uses it */
	cl_close(k, &b);
	ck_assert_uint_eq(keeper_kept(k, &n), cost(0));
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(mount_on(k, &a, 1000, path), 1); /* kept, given */
	ck_assert_int_eq(mount_on(k, &b, 1000, path), 1); /* shared */
	cl_close(k, &b);
	cl_close(k, &c);
	cl_close(k, &a);
	ck_assert_uint_eq(keeper_kept(k, &n), 2 * cost(0));
	ck_assert_uint_eq(n, 2);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* Open @c and send a GET of @path as @uid.  Return: the image's
 * descriptor. */
static int get_sent(struct keeper *k, struct cl *c, uid_t uid, const char *path)
{
	struct keep_msg m = { .op = KEEP_GET, .b = IMG_SIZE };
	int img = open(path, O_RDONLY);
	struct stat sb;

	ck_assert_int_ge(img, 0);
	strcpy(m.name, path);
	cl_open(k, c, uid);
	ck_assert_int_eq(fstat(img, &sb), 0);
	ck_assert_int_eq(keeper_request(k, c->id, &m, &sb, -1), 0);
	return img;
}

/* Whether an answer is queued for @c. */
static bool answered(struct keeper *k, const struct cl *c)
{
	struct keep_msg m;
	int fd;

	return keeper_answer_next(k, c->id, &m, &fd);
}

/* PUT a new copy of the image @img on @c.  Return: the copy. */
static int put_new(struct keeper *k, struct cl *c, int img)
{
	struct keep_msg m = { .op = KEEP_PUT }, ans;
	struct keep_key key;
	struct stat sb;
	int copy;

	ck_assert_int_eq(fstat(img, &sb), 0);
	keep_key_of(&sb, 0, 0, &key);
	ck_assert_int_eq(
		stage_backing_new(IMG_SIZE, &key, sizeof(key), "t", &copy), 0);
	ck_assert_int_eq(ask(k, c, &m, -1, copy, &ans), -1);
	ck_assert_int_eq(ans.op, KEEP_DONE);
	ck_assert_int_eq(ans.status, 0);
	return copy;
}

/* Two mounts of one image by one user started together: the second GET,
 * before the first mount's PUT, is answered with that copy once it is
 * PUT, not NONE (which had both read the image).  Another user's GET is
 * answered NONE at once. */
START_TEST(test_keep_get_waits_for_put)
{
	char *path = image_new();
	struct keeper *k = keeper_of(1ull << 30, 0);
	struct keep_msg ans;
	struct cl a, b, c;
	struct stat s1, s2;
	int img_a, img_b, img_c, copy, fd;
	unsigned int n;

	img_a = get_sent(k, &a, 1000, path);
	ck_assert(pop(k, &a, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	img_b = get_sent(k, &b, 1000, path);
	ck_assert(!answered(k, &b)); /* it waits for a's copy */
	img_c = get_sent(k, &c, 1001, path);
	ck_assert(pop(k, &c, &ans, &fd)); /* another user's: not held back */
	ck_assert_int_eq(ans.op, KEEP_NONE);
	copy = put_new(k, &a, img_a);
	ck_assert(pop(k, &b, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_COPY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(copy, &s1), 0);
	ck_assert_int_eq(fstat(fd, &s2), 0);
	ck_assert_uint_eq(s1.st_ino, s2.st_ino); /* a's copy, shared */
	close(fd);
	keeper_set_used(k, a.id, true);
	keeper_set_used(k, b.id, true);
	ck_assert_uint_eq(keeper_kept(k, &n), 0);
	ck_assert_uint_eq(n, 1);
	cl_close(k, &a);
	ck_assert_uint_eq(keeper_kept(k, NULL), 0); /* b uses it */
	cl_close(k, &b);
	ck_assert_uint_eq(keeper_kept(k, &n), cost(0));
	ck_assert_uint_eq(n, 1);
	cl_close(k, &c);
	close(copy);
	close(img_a);
	close(img_b);
	close(img_c);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* The mount that was answered NONE ends without a PUT: the GET waiting
 * for it is answered NONE and holds the copy back in turn; a waiting GET
 * whose connection closes is forgotten. */
START_TEST(test_keep_get_reserver_closes)
{
	char *path = image_new();
	struct keeper *k = keeper_of(1ull << 30, 0);
	struct keep_msg ans;
	struct cl a, b, c;
	int img[4], fd;

	img[0] = get_sent(k, &a, 1000, path);
	ck_assert(pop(k, &a, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	img[1] = get_sent(k, &b, 1000, path);
	ck_assert(!answered(k, &b));
	cl_close(k, &a);
	ck_assert(pop(k, &b, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	ck_assert_int_eq(fd, -1);
	img[2] = get_sent(k, &c, 1000, path);
	ck_assert(!answered(k, &c)); /* b holds it back now */
	cl_close(k, &c); /* forgotten */
	cl_close(k, &b);
	img[3] = get_sent(k, &a, 1000, path);
	ck_assert(pop(k, &a, &ans, &fd)); /* nobody holds it back */
	ck_assert_int_eq(ans.op, KEEP_NONE);
	cl_close(k, &a);
	ck_assert_uint_eq(keeper_kept(k, NULL), 0);
	for (int i = 0; i < 4; i++)
		close(img[i]);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* A reservation with no PUT for KEEP_RESERVE_S (of the keeper's clock)
 * is dropped: the GET waiting for it is answered NONE; a late PUT is
 * still taken. */
START_TEST(test_keep_get_reserve_expires)
{
	char *path = image_new();
	struct keeper *k = keeper_of(1ull << 30, 0);
	struct keep_msg ans;
	struct cl a, b;
	int img_a, img_b, copy, fd;

	img_a = get_sent(k, &a, 1000, path);
	ck_assert(pop(k, &a, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	img_b = get_sent(k, &b, 1000, path);
	fake_now += KEEP_RESERVE_S * 1000 - 1;
	keeper_tick(k);
	ck_assert(!answered(k, &b)); /* not yet */
	fake_now += 1;
	keeper_tick(k);
	ck_assert(pop(k, &b, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	copy = put_new(k, &a, img_a);
	close(copy);
	cl_close(k, &a);
	cl_close(k, &b);
	ck_assert_uint_eq(keeper_kept(k, NULL), cost(0));
	close(img_a);
	close(img_b);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* Each user lists their own copies, root all; forget drops one's own. */
START_TEST(test_keep_list_forget)
{
	char *path = image_new();
	struct keeper *k = keeper_of(1ull << 30, 0);
	struct keep_msg m = { .op = KEEP_LIST }, ans;
	struct cl a, c;
	int fd;

	ck_assert_int_eq(mount_on(k, &a, 1000, path), 0);
	cl_close(k, &a);
	ck_assert_int_eq(mount_on(k, &a, 1001, path), 0);
	cl_close(k, &a);
	cl_open(k, &c, 1001);
	ck_assert_int_eq(ask(k, &c, &m, -1, -1, &ans), -1);
	ck_assert_int_eq(ans.op, KEEP_ENTRY);
	ck_assert_uint_eq(ans.uid, 1001);
	ck_assert_str_eq(ans.name, path);
	ck_assert_uint_eq(ans.b, 0); /* nothing complete */
	ck_assert(pop(k, &c, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_DONE);
	ck_assert_uint_eq(ans.a, 1);
	cl_close(k, &c);
	cl_open(k, &c, 0); /* a connection's user is its peer's, once for all */
	ck_assert_int_eq(ask(k, &c, &m, -1, -1, &ans), -1);
	ck_assert(pop(k, &c, &ans, &fd));
	ck_assert(pop(k, &c, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_DONE);
	ck_assert_uint_eq(ans.a, 2);
	cl_close(k, &c);
	cl_open(k, &c, 1001);
	m = (struct keep_msg){ .op = KEEP_FORGET };
	ck_assert_int_eq(ask(k, &c, &m, -1, -1, &ans), -1);
	ck_assert_uint_eq(ans.a, 1);
	ck_assert_uint_eq(keeper_kept(k, NULL), cost(0));
	cl_close(k, &c);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* LIST answers every copy, however many: 200 of root's. */
START_TEST(test_keep_list_many)
{
	char *path = image_new_of(300 * 4096);
	struct keeper *k = keeper_of(1ull << 30, 0);
	struct keep_msg m = { .op = KEEP_GET }, ans;
	struct cl c;
	int img = open(path, O_RDONLY), fd, entries = 0;

	ck_assert_int_ge(img, 0);
	for (int i = 0; i < 200; i++) {
		struct keep_key key;
		struct stat sb;
		int copy;

		cl_open(k, &c, 0);
		m = (struct keep_msg){ .op = KEEP_GET,
				       .a = (uint64_t)i * 4096 };
		snprintf(m.name, sizeof(m.name), "%s@%d", path, i);
		ck_assert_int_eq(ask(k, &c, &m, img, -1, &ans), -1);
		ck_assert_int_eq(ans.op, KEEP_NONE);
		ck_assert_int_eq(fstat(img, &sb), 0);
		keep_key_of(&sb, (uint64_t)i * 4096, 0, &key);
		ck_assert_int_eq(stage_backing_new(4096, &key, sizeof(key), "t",
						   &copy),
				 0);
		m = (struct keep_msg){ .op = KEEP_PUT };
		ck_assert_int_eq(ask(k, &c, &m, -1, copy, &ans), -1);
		ck_assert_int_eq(ans.status, 0);
		close(copy);
		cl_close(k, &c);
	}
	cl_open(k, &c, 0);
	m = (struct keep_msg){ .op = KEEP_LIST };
	ck_assert_int_eq(ask(k, &c, &m, -1, -1, &ans), -1);
	do
		entries += ans.op == KEEP_ENTRY;
	while (ans.op == KEEP_ENTRY && pop(k, &c, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_DONE);
	ck_assert_uint_eq(ans.a, 200);
	ck_assert_int_eq(entries, 200);
	cl_close(k, &c);
	close(img);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* A copy that is not sealed for good (F_SEAL_SEAL too), or of another
 * image, is refused. */
START_TEST(test_keep_put_checked)
{
	char *path = image_new();
	struct keeper *k = keeper_of(1ull << 30, 0);
	struct keep_msg m = { .op = KEEP_GET }, ans;
	struct keep_key key;
	struct stat sb;
	struct cl c;
	int img = open(path, O_RDONLY), fd;

	cl_open(k, &c, 1000);
	ck_assert_int_eq(ask(k, &c, &m, img, -1, &ans), -1);
	ck_assert_int_eq(ans.op, KEEP_NONE);
	fd = memfd_create("x", MFD_CLOEXEC);
	ck_assert_int_eq(ftruncate(fd, stage_backing_size(IMG_SIZE)), 0);
	m = (struct keep_msg){ .op = KEEP_PUT };
	ck_assert_int_eq(ask(k, &c, &m, -1, fd, &ans), -1);
	ck_assert_int_eq(ans.status, -EINVAL);
	close(fd);
	/* Sealed against growing and shrinking, but not against more
	 * seals: the user could still seal it against our writes. */
	ck_assert_int_eq(fstat(img, &sb), 0);
	keep_key_of(&sb, 0, 0, &key);
	fd = memfd_create("y", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ck_assert_int_eq(ftruncate(fd, stage_backing_size(sb.st_size)), 0);
	ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK),
			 0);
	m = (struct keep_msg){ .op = KEEP_GET };
	cl_close(k, &c);
	cl_open(k, &c, 1000);
	ck_assert_int_eq(ask(k, &c, &m, img, -1, &ans), -1);
	m = (struct keep_msg){ .op = KEEP_PUT };
	ck_assert_int_eq(ask(k, &c, &m, -1, fd, &ans), -1);
	ck_assert_int_eq(ans.status, -EINVAL);
	close(fd);
	m = (struct keep_msg){ .op = KEEP_GET };
	cl_close(k, &c);
	cl_open(k, &c, 1000);
	ck_assert_int_eq(ask(k, &c, &m, img, -1, &ans), -1);
	ck_assert_int_eq(stage_backing_new(IMG_SIZE, "other", 5, "t", &fd), 0);
	m = (struct keep_msg){ .op = KEEP_PUT };
	ck_assert_int_eq(ask(k, &c, &m, -1, fd, &ans), -1);
	ck_assert_int_eq(ans.status, -ESTALE);
	close(fd);
	cl_close(k, &c);
	ck_assert_uint_eq(keeper_kept(k, NULL), 0);
	keeper_free(k);
	close(img);
	unlink(path);
	free(path);
}
END_TEST

/* A name with control characters, C1 ones too (raw, and as UTF-8), or
 * bytes that are not UTF-8, is listed with '?' for them; other UTF-8
 * stays. */
START_TEST(test_keep_name_shown)
{
	char *path = image_new();
	struct keeper *k = keeper_of(1ull << 30, 0);
	struct keep_msg m = { .op = KEEP_LIST }, ans;
	char out[KEEP_NAME_MAX];
	struct cl c, l;

	keep_name_print(out, "a\033[2Jb\n\x9b"
			     "1m\xc2\x9b"
			     "2m\xc3\xa9\xe2\x80\x94\xff");
	ck_assert_str_eq(out, "a?[2Jb??1m?2m\xc3\xa9\xe2\x80\x94?");
	cl_open(k, &c, 1000);
	ck_assert_int_eq(
		mount_full(k, &c, path, "a\033[2Jb\n\xc2\x9b", IMG_SIZE, 0), 0);
	cl_close(k, &c);
	cl_open(k, &l, 1000);
	ck_assert_int_eq(ask(k, &l, &m, -1, -1, &ans), -1);
	ck_assert_str_eq(ans.name, "a?[2Jb??");
	cl_close(k, &l);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* Counting a copy's complete chunks reads only what it holds: a sparse
 * copy of a 1 TiB range is counted at once. */
START_TEST(test_keep_complete_bounded)
{
	uint64_t size = 1ull << 40, range = 0, complete = 1;
	struct timespec t0, t1;
	uint32_t done = 1;
	int fd;

	ck_assert_int_eq(stage_backing_new(size, "k", 1, "t", &fd), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(stage_backing_check(fd, &range, NULL, 0, &complete),
			 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_uint_eq(range, size);
	ck_assert_uint_eq(complete, 0);
	/* A word of chunk 3 done: 128 KiB complete. */
	ck_assert_int_eq(pwrite(fd, &done, sizeof(done),
				(off_t)(size + 3 * sizeof(done))),
			 (ssize_t)sizeof(done));
	ck_assert_int_eq(stage_backing_check(fd, &range, NULL, 0, &complete),
			 0);
	ck_assert_uint_eq(complete, 128 << 10);
	/* Reading the 32 MiB of words would take far longer than this. */
	ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 2);
	close(fd);
}
END_TEST

/* Site copies: what the server was asked (site_start, site_stop). */
struct site_rec {
	unsigned int starts, stops;
	uint64_t id; /* the last started */
	uid_t uid; /* its user */
	char path[256];
	int refuse; /* site_start's answer */
};

static int rec_start(void *arg, uint64_t id, uid_t uid, const char *path,
		     const struct stat *image, uint64_t offset)
{
	struct site_rec *r = arg;

	(void)image;
	(void)offset;
	if (r->refuse)
		return r->refuse;
	r->starts++;
	r->id = id;
	r->uid = uid;
	snprintf(r->path, sizeof(r->path), "%s", path);
	return 0;
}

static void rec_stop(void *arg, uint64_t id)
{
	(void)id;
	((struct site_rec *)arg)->stops++;
}

static struct keeper *site_keeper(uint64_t site_budget, struct site_rec *r)
{
	struct keeper_opts o = { .budget = 1ull << 30,
				 .site_budget = site_budget,
				 .site_start = rec_start,
				 .site_stop = rec_stop,
				 .site_arg = r,
				 .now_ms = test_clock };
	struct keeper *k;

	ck_assert_int_eq(keeper_new(&o, &k), 0);
	return k;
}

/* A GET of the site image @path on a new connection @c of @uid.  Return:
 * whether it was answered at once (then in @ans, *@fd its descriptor). */
static bool site_get(struct keeper *k, struct cl *c, uid_t uid,
		     const char *path, struct keep_msg *ans, int *fd)
{
	struct keep_msg m = { .op = KEEP_GET };
	struct stat sb;

	cl_open(k, c, uid);
	ck_assert_int_eq(stat(path, &sb), 0);
	snprintf(m.name, sizeof(m.name), "%s", path);
	ck_assert_int_eq(keeper_get_site(k, c->id, &m, &sb, path), 0);
	return pop(k, c, ans, fd);
}

/* Root's copy of a site image, as the server hands it over: a memfd
 * sealed against writes, and a descriptor of it for reading only. */
static int site_copy(uint64_t size, uint64_t complete)
{
	struct keep_key key = { .size = size };
	uint64_t words = (size + 4095) / 4096 * 4096;
	uint32_t done = 1;
	char path[64];
	int rw, ro;

	ck_assert_int_eq(stage_backing_new_writer(size, &key, sizeof(key),
						  "site", &rw),
			 0);
	fill(rw, complete);
	/* The chunks' words (lib/stage/backing.c): 1 is complete. */
	for (uint64_t c = 0; c < complete / (128 << 10); c++)
		ck_assert_int_eq(pwrite(rw, &done, 4, (off_t)(words + 4 * c)),
				 4);
	ck_assert_int_eq(fcntl(rw, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SEAL), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", rw);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(ro, 0);
	close(rw);
	return ro;
}

static bool same_file(int a, int b)
{
	struct stat x, y;

	return !fstat(a, &x) && !fstat(b, &y) && x.st_ino == y.st_ino &&
	       x.st_dev == y.st_dev;
}

struct listed {
	unsigned int entries, users;
	uint32_t flags, user_uid[8];
	uint64_t range;
};

static struct listed list_as(struct keeper *k, uid_t uid)
{
	struct keep_msg m = { .op = KEEP_LIST }, e;
	struct listed l = { 0 };
	struct cl c;
	int fd;

	cl_open(k, &c, uid);
	ck_assert_int_eq(keeper_request(k, c.id, &m, NULL, -1), 0);
	while (pop(k, &c, &e, &fd) && e.op != KEEP_DONE) {
		if (e.op == KEEP_ENTRY) {
			l.entries++;
			l.flags = e.flags;
			l.range = e.d;
		} else {
			ck_assert_int_eq(e.op, KEEP_USER);
			ck_assert_uint_lt(l.users, 8);
			l.user_uid[l.users++] = e.uid;
		}
	}
	cl_close(k, &c);
	return l;
}

/* One site copy for every user: both GETs wait for root to make it, root
 * is asked once, both get the same copy (flagged, its root hash named);
 * a user's PUT or FORGET cannot touch it; LIST shows it as the site's
 * with its users (a user sees only themselves); a later GET takes it at
 * once; a changed image is made afresh. */
START_TEST(test_site_shared)
{
	char *path = image_new();
	struct site_rec r = { 0 };
	struct keeper *k = site_keeper(1ull << 30, &r);
	uint8_t root[32];
	struct keep_msg ans, m;
	struct listed l;
	struct cl a, b, c;
	int fa, fb, fc, copy, mine;

	ck_assert(!site_get(k, &a, 1000, path, &ans, &fa));
	ck_assert(!site_get(k, &b, 1001, path, &ans, &fb));
	ck_assert_uint_eq(r.starts, 1);
	ck_assert_uint_eq(r.uid, 1000);
	ck_assert_str_eq(r.path, path);
	ck_assert_uint_eq(list_as(k, 0).entries, 0); /* not made yet */
	memset(root, 0xab, sizeof(root));
	copy = site_copy(IMG_SIZE, IMG_SIZE / 2);
	ck_assert_int_eq(keeper_site_ready(k, r.id, copy, IMG_SIZE, root), 0);
	ck_assert(pop(k, &a, &ans, &fa));
	ck_assert_int_eq(ans.op, KEEP_COPY);
	ck_assert(ans.flags & KEEP_F_SITE);
	ck_assert_uint_eq(ans.a, IMG_SIZE / 2);
	ck_assert_uint_eq(ans.b, IMG_SIZE);
	ck_assert_uint_eq(strlen(ans.name), 64);
	ck_assert(!strncmp(ans.name, "abab", 4));
	ck_assert(pop(k, &b, &ans, &fb));
	ck_assert_int_eq(ans.op, KEEP_COPY);
	ck_assert(same_file(fa, fb) && same_file(fa, copy));
	ck_assert_int_eq(fcntl(fa, F_GETFL) & O_ACCMODE, O_RDONLY);

	/* Root sees it as the site's with both users; a user, themselves. */
	l = list_as(k, 0);
	ck_assert_uint_eq(l.entries, 1);
	ck_assert(l.flags & KEEP_F_SITE && l.flags & KEEP_F_STAGING);
	ck_assert_uint_eq(l.range, IMG_SIZE);
	ck_assert_uint_eq(l.users, 2);
	l = list_as(k, 1001);
	ck_assert_uint_eq(l.entries, 1);
	ck_assert_uint_eq(l.users, 1);
	ck_assert_uint_eq(l.user_uid[0], 1001);

	/* A PUT of b's own after the site copy: refused; b's FORGET drops
	 * nothing of the site's; a's mount still has it. */
	ck_assert_int_eq(stage_backing_new(IMG_SIZE, "x", 1, "t", &mine), 0);
	m = (struct keep_msg){ .op = KEEP_PUT };
	ck_assert_int_eq(ask(k, &b, &m, -1, mine, &ans), -1);
	ck_assert_int_eq(ans.status, -EPROTO);
	close(mine);
	m = (struct keep_msg){ .op = KEEP_FORGET };
	ck_assert_int_eq(ask(k, &b, &m, -1, -1, &ans), -1);
	ck_assert_uint_eq(ans.a, 0);
	ck_assert_uint_eq(list_as(k, 0).entries, 1);

	keeper_site_ended(k, r.id, 0);
	ck_assert(!(list_as(k, 0).flags & KEEP_F_STAGING));
	cl_close(k, &a);
	cl_close(k, &b);
	keeper_tick(k);
	/* Kept; the next user's GET takes it at once. */
	ck_assert(site_get(k, &c, 1002, path, &ans, &fc));
	ck_assert_int_eq(ans.op, KEEP_COPY);
	ck_assert(same_file(fc, copy));
	ck_assert_uint_eq(r.starts, 1);
	cl_close(k, &c);
	close(fa);
	close(fb);
	close(fc);

	/* The image changed: made afresh, the old one dropped. */
	fake_now += 5000;
	ck_assert_int_eq(truncate(path, IMG_SIZE + 4096), 0);
	ck_assert(!site_get(k, &a, 1000, path, &ans, &fa));
	ck_assert_uint_eq(r.starts, 2);
	ck_assert_uint_eq(list_as(k, 0).entries, 0);
	cl_close(k, &a);
	keeper_free(k);
	ck_assert_uint_eq(r.stops, 1); /* the one still making */
	close(copy);
	unlink(path);
	free(path);
}
END_TEST

/* No site copy to be had: the GET is answered as for the user's own
 * image (NONE: make and PUT one of your own), at once when root refuses
 * to start one, after KEEP_SITE_READY_MS when root does not make it;
 * that identity is then not tried again for KEEP_SITE_RETRY_S. */
START_TEST(test_site_fallback)
{
	char *path = image_new();
	struct site_rec r = { .refuse = -EBUSY };
	struct keeper *k = site_keeper(1ull << 30, &r);
	struct keep_msg ans;
	struct cl a, b, c, d;
	int fd;

	ck_assert(site_get(k, &a, 1000, path, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	cl_close(k, &a);
	r.refuse = 0;
	ck_assert(!site_get(k, &b, 1000, path, &ans, &fd));
	ck_assert_uint_eq(r.starts, 1);
	fake_now += KEEP_SITE_READY_MS - 1;
	keeper_tick(k);
	ck_assert(!pop(k, &b, &ans, &fd));
	fake_now += 1;
	keeper_tick(k);
	ck_assert(pop(k, &b, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	ck_assert_uint_eq(r.stops, 1);
	/* Ready too late: refused, the caller closes it. */
	fd = site_copy(IMG_SIZE, 0);
	ck_assert_int_eq(keeper_site_ready(k, r.id, fd, IMG_SIZE, NULL),
			 -ENOENT);
	close(fd);
	ck_assert(site_get(k, &c, 1001, path, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	ck_assert_uint_eq(r.starts, 1);
	fake_now += KEEP_SITE_RETRY_S * 1000;
	ck_assert(!site_get(k, &d, 1002, path, &ans, &fd));
	ck_assert_uint_eq(r.starts, 2);
	keeper_site_failed(k, r.id, -EACCES);
	ck_assert(pop(k, &d, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	cl_close(k, &b);
	cl_close(k, &c);
	cl_close(k, &d);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* The site budget: an image larger than it gets no site copy; copies not
 * in use are kept within it, least recently used first, never one a
 * checked daemon uses nor one root still stages; a copy whose staging
 * stopped goes to no new GET and goes once its mounts end; memory short
 * (EVICT) drops users' copies before the site's. */
START_TEST(test_site_budget)
{
	char *p1 = image_new(), *p2 = image_new(), *big = image_new_of(4 * MIB);
	struct site_rec r = { 0 };
	struct keeper *k = site_keeper(IMG_SIZE + IMG_SIZE / 2, &r);
	struct keep_msg ans;
	struct cl a, b, c, u;
	int fd, c1, c2, c3;
	uint64_t id1;

	ck_assert(site_get(k, &a, 1000, big, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	ck_assert_uint_eq(r.starts, 0);
	cl_close(k, &a);

	ck_assert(!site_get(k, &a, 1000, p1, &ans, &fd));
	id1 = r.id;
	c1 = site_copy(IMG_SIZE, IMG_SIZE);
	ck_assert_int_eq(keeper_site_ready(k, id1, c1, IMG_SIZE, NULL), 0);
	ck_assert(pop(k, &a, &ans, &fd));
	close(fd);
	ck_assert_str_eq(ans.name, "");
	keeper_set_used(k, a.id, true);
	/* A second site image, no user on it. */
	ck_assert(!site_get(k, &b, 1001, p2, &ans, &fd));
	c2 = site_copy(IMG_SIZE, IMG_SIZE);
	ck_assert_int_eq(keeper_site_ready(k, r.id, c2, IMG_SIZE, NULL), 0);
	ck_assert(pop(k, &b, &ans, &fd));
	close(fd);
	cl_close(k, &b);
	keeper_tick(k);
	ck_assert_uint_eq(list_as(k, 0).entries, 2);
	keeper_site_ended(k, r.id, 0);
	keeper_site_ended(k, id1, 0);
	/* Both fit no more, one is in use: both stay. */
	keeper_tick(k);
	ck_assert_uint_eq(list_as(k, 0).entries, 2);
	/* Not in use any more: the least recently used goes. */
	keeper_set_used(k, a.id, false);
	keeper_tick(k);
	ck_assert_uint_eq(list_as(k, 0).entries, 1);
	cl_close(k, &a);
	/* A user's copy goes before the site's when memory is short. */
	ck_assert_int_eq(mount_on(k, &u, 1003, p1), 0);
	cl_close(k, &u);
	ck_assert_uint_eq(list_as(k, 0).entries, 2);
	keeper_evict(k, 1);
	ck_assert_uint_eq(list_as(k, 0).entries, 1);
	ck_assert(list_as(k, 0).flags & KEEP_F_SITE);
	/* Staging stopped short: its mount keeps it, a new GET gets none
	 * (tried again later), and it goes once its mount ends. */
	ck_assert(!site_get(k, &a, 1000, p1, &ans, &fd));
	c3 = site_copy(IMG_SIZE, 0);
	ck_assert_int_eq(keeper_site_ready(k, r.id, c3, IMG_SIZE, NULL), 0);
	ck_assert(pop(k, &a, &ans, &fd));
	close(fd);
	keeper_site_ended(k, r.id, -EIO);
	ck_assert(site_get(k, &c, 1002, p1, &ans, &fd));
	ck_assert_int_eq(ans.op, KEEP_NONE);
	cl_close(k, &c);
	ck_assert_uint_eq(list_as(k, 0).entries, 2);
	cl_close(k, &a);
	ck_assert_uint_eq(list_as(k, 0).entries, 1);
	keeper_free(k);
	close(c1);
	close(c2);
	close(c3);
	unlink(p1);
	unlink(p2);
	unlink(big);
	free(p1);
	free(p2);
	free(big);
}
END_TEST

/* keep_pidns_of(): of the pidfd (its namespace, or on kernels before
 * 6.11 its fdinfo: ours for a process of our namespace, 0 (unknown) for
 * one in a namespace below), never another's inode; without a pidfd, 0.  The
 * namespace below is a helper's (a process that unshares it has its
 * later children there, the sanitizers' own among them). */
START_TEST(test_pidns_of)
{
	int pidfd, go[2], said[2];
	pid_t helper, child = 0;
	uint64_t ns;

	ck_assert_uint_ne(keep_pidns(0), 0);
	ck_assert_uint_eq(keep_pidns_of(-1), 0);
	pidfd = pidfd_open(getpid(), 0);
	ck_assert_int_ge(pidfd, 0);
	ck_assert_uint_eq(keep_pidns_of(pidfd), keep_pidns(0));
	close(pidfd);
	if (geteuid() != 0)
		return; /* a namespace below needs root */
	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(said), 0);
	helper = fork();
	if (helper == 0) {
		pid_t c;
		char b;

		close(go[1]); /* the test's alone: its close is the go */
		close(said[0]);
		if (unshare(CLONE_NEWPID))
			_exit(1);
		c = fork(); /* pid 1 of the new namespace */
		if (c == 0) {
			(void)!read(go[0], &b, 1);
			_exit(0);
		}
		(void)!write(said[1], &c, sizeof(c));
		waitpid(c, NULL, 0);
		_exit(0);
	}
	ck_assert_int_gt(helper, 0);
	close(go[0]);
	close(said[1]);
	ck_assert_int_eq(read(said[0], &child, sizeof(child)), sizeof(child));
	ck_assert_int_gt(child, 0);
	pidfd = pidfd_open(child, 0);
	ck_assert_int_ge(pidfd, 0);
	ns = keep_pidns_of(pidfd);
	/* Its own namespace (Linux 6.11), or unknown: never ours. */
	ck_assert_uint_ne(ns, keep_pidns(0));
	close(pidfd);
	close(go[1]);
	close(said[0]);
	waitpid(helper, NULL, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("keep");
	TCase *tc = tcase_create("keep");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_wire);
	tcase_add_test(tc, test_keep_uid_identity);
	tcase_add_test(tc, test_keep_budget);
	tcase_add_test(tc, test_keep_held_bytes);
	tcase_add_test(tc, test_keep_fair);
	tcase_add_test(tc, test_keep_unchecked_use);
	tcase_add_test(tc, test_keep_ranges_kept);
	tcase_add_test(tc, test_keep_user_copies);
	tcase_add_test(tc, test_keep_share);
	tcase_add_test(tc, test_keep_get_waits_for_put);
	tcase_add_test(tc, test_keep_get_reserver_closes);
	tcase_add_test(tc, test_keep_get_reserve_expires);
	tcase_add_test(tc, test_keep_list_forget);
	tcase_add_test(tc, test_keep_list_many);
	tcase_add_test(tc, test_keep_put_checked);
	tcase_add_test(tc, test_keep_name_shown);
	tcase_add_test(tc, test_keep_complete_bounded);
	tcase_add_test(tc, test_site_shared);
	tcase_add_test(tc, test_site_fallback);
	tcase_add_test(tc, test_site_budget);
	tcase_add_test(tc, test_pidns_of);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

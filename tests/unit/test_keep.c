// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/keep over socketpairs,
 * without root: the wire format passes a message and a descriptor and
 * refuses a short message; the keeper gives a user back the copy of the
 * same image and nobody else's, drops a copy whose image changed, keeps
 * kept copies within its budget least recently used first, never drops
 * one in use, refuses an unsealed copy, and lets only root evict; two
 * mounts of one image by one user at once share one copy, kept once the
 * last ends, and another user's mount at the same time gets its own; a
 * second GET of theirs before the first mount's PUT waits for that copy
 * (or for NONE if that mount ends without one), another user's does not.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keep/keep.h"
#include "stage/stage.h"

#define IMG_SIZE (1u << 20)

struct cl {
	int sv[2]; /* [0] the client's end, [1] the keeper's */
};

static void cl_open(struct cl *c)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
				    c->sv),
			 0);
}

static void cl_close(struct keeper *k, struct cl *c)
{
	keeper_closed(k, c->sv[1]);
	close(c->sv[0]);
	close(c->sv[1]);
}

/* Send @m (with @fd) as @uid, have @k answer; the first answer in @ans and
 * its descriptor returned (or -1). */
static int ask(struct keeper *k, struct cl *c, uid_t uid, struct keep_msg *m,
	       int fd, struct keep_msg *ans)
{
	struct keep_msg got;
	int kfd, afd;

	ck_assert_int_eq(keep_send(c->sv[0], m, fd), 0);
	ck_assert_int_eq(keep_recv(c->sv[1], &got, &kfd), 0);
	ck_assert_int_eq(keeper_request(k, c->sv[1], uid, &got, kfd), 0);
	ck_assert_int_eq(keep_recv(c->sv[0], ans, &afd), 0);
	return afd;
}

static char *image_new(void)
{
	char *path = strdup("/tmp/test_keep.XXXXXX");
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, IMG_SIZE), 0);
	close(fd);
	return path;
}

/* A mount of @path by @uid on @c: GET (with @name), and PUT a new copy
 * if NONE.  Return: 1 if a copy was given, 0 if one was made. */
static int mount_on_named(struct keeper *k, struct cl *c, uid_t uid,
			  const char *path, const char *name)
{
	struct keep_msg m = { .op = KEEP_GET, .b = IMG_SIZE }, ans;
	struct keep_key key;
	struct stat sb;
	int img = open(path, O_RDONLY), copy;

	ck_assert_int_ge(img, 0);
	strcpy(m.name, name);
	cl_open(c);
	copy = ask(k, c, uid, &m, img, &ans);
	if (ans.op == KEEP_COPY) {
		ck_assert_int_ge(copy, 0);
		close(copy);
		close(img);
		return 1;
	}
	ck_assert_int_eq(ans.op, KEEP_NONE);
	ck_assert_int_eq(fstat(img, &sb), 0);
	keep_key_of(&sb, 0, &key);
	ck_assert_int_eq(
		stage_backing_new(IMG_SIZE, &key, sizeof(key), "t", &copy), 0);
	m = (struct keep_msg){ .op = KEEP_PUT };
	ck_assert_int_eq(ask(k, c, uid, &m, copy, &ans), -1);
	ck_assert_int_eq(ans.op, KEEP_DONE);
	ck_assert_int_eq(ans.status, 0);
	close(copy);
	close(img);
	return 0;
}

static int mount_on(struct keeper *k, struct cl *c, uid_t uid, const char *path)
{
	return mount_on_named(k, c, uid, path, path);
}

START_TEST(test_wire)
{
	struct keep_msg m = { .op = KEEP_GET, .a = 7 }, got;
	int sv[2], fd;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	strcpy(m.name, "img");
	ck_assert_int_eq(keep_send(sv[0], &m, 0), 0);
	ck_assert_int_eq(keep_recv(sv[1], &got, &fd), 0);
	ck_assert_int_ge(fd, 0);
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	ck_assert_str_eq(got.name, "img");
	ck_assert_uint_eq(got.a, 7);
	close(fd);
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
	struct keeper *k;
	struct cl a, b;
	unsigned int n;

	ck_assert_int_eq(keeper_new(1ull << 30, &k), 0);
	ck_assert_int_eq(mount_on(k, &a, 1000, path), 0);
	ck_assert_uint_eq(keeper_kept(k, &n), 0); /* in use */
	ck_assert_uint_eq(n, 1);
	cl_close(k, &a);
	ck_assert_uint_eq(keeper_kept(k, NULL), stage_backing_size(IMG_SIZE));
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

/* A budget for one copy keeps the most recent; one in use is never
 * dropped; only root evicts. */
START_TEST(test_keep_budget)
{
	char *p1 = image_new(), *p2 = image_new();
	struct keep_msg m = { .op = KEEP_EVICT, .a = 1 }, ans;
	struct keeper *k;
	struct cl a, b, c;
	unsigned int n;

	ck_assert_int_eq(keeper_new(stage_backing_size(IMG_SIZE) + 1, &k), 0);
	ck_assert_int_eq(mount_on(k, &a, 1000, p1), 0);
	ck_assert_int_eq(mount_on(k, &b, 1000, p2), 0);
	cl_close(k, &a);
	cl_close(k, &b);
	keeper_kept(k, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(mount_on(k, &a, 1000, p2), 1); /* the recent one */
	ck_assert_uint_eq(keeper_evict(k, UINT64_MAX), 0); /* in use */
	cl_close(k, &a);
	cl_open(&c);
	ck_assert_int_eq(ask(k, &c, 1000, &m, -1, &ans), -1);
	ck_assert_int_eq(ans.status, -EPERM);
	cl_close(k, &c);
	cl_open(&c);
	ck_assert_int_eq(ask(k, &c, 0, &m, -1, &ans), -1);
	ck_assert_int_eq(ans.status, 0);
	ck_assert_uint_eq(ans.a, stage_backing_size(IMG_SIZE));
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

/* Two mounts of one image by one user at once share the copy; it is kept
 * when the last one ends.  Another user's mount meanwhile gets its own. */
START_TEST(test_keep_share)
{
	char *path = image_new();
	struct keeper *k;
	struct cl a, b, c;
	unsigned int n;

	ck_assert_int_eq(keeper_new(1ull << 30, &k), 0);
	ck_assert_int_eq(mount_on(k, &a, 1000, path), 0);
	ck_assert_int_eq(mount_on(k, &b, 1000, path), 1); /* a's, in use */
	ck_assert_int_eq(mount_on(k, &c, 1001, path), 0); /* its own */
	ck_assert_uint_eq(keeper_kept(k, &n), 0);
	ck_assert_uint_eq(n, 2);
	cl_close(k, &a);
	ck_assert_uint_eq(keeper_kept(k, NULL), 0); /* b still uses it */
	cl_close(k, &b);
	ck_assert_uint_eq(keeper_kept(k, &n), stage_backing_size(IMG_SIZE));
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(mount_on(k, &a, 1000, path), 1); /* kept, given */
	ck_assert_int_eq(mount_on(k, &b, 1000, path), 1); /* shared */
	cl_close(k, &b);
	cl_close(k, &c);
	cl_close(k, &a);
	ck_assert_uint_eq(keeper_kept(k, &n), 2 * stage_backing_size(IMG_SIZE));
	ck_assert_uint_eq(n, 2);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* Open @c and send a GET of @path as @uid; the keeper takes it.  Return:
 * the image's descriptor. */
static int get_sent(struct keeper *k, struct cl *c, uid_t uid, const char *path)
{
	struct keep_msg m = { .op = KEEP_GET, .b = IMG_SIZE }, got;
	int img = open(path, O_RDONLY), kfd;

	ck_assert_int_ge(img, 0);
	strcpy(m.name, path);
	cl_open(c);
	ck_assert_int_eq(keep_send(c->sv[0], &m, img), 0);
	ck_assert_int_eq(keep_recv(c->sv[1], &got, &kfd), 0);
	ck_assert_int_eq(keeper_request(k, c->sv[1], uid, &got, kfd), 0);
	return img;
}

/* Whether an answer waits on @c's client end. */
static bool answered(const struct cl *c)
{
	struct pollfd p = { .fd = c->sv[0], .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/* PUT a new copy of the image @img on @c.  Return: the copy. */
static int put_new(struct keeper *k, struct cl *c, uid_t uid, int img)
{
	struct keep_msg m = { .op = KEEP_PUT }, ans;
	struct keep_key key;
	struct stat sb;
	int copy;

	ck_assert_int_eq(fstat(img, &sb), 0);
	keep_key_of(&sb, 0, &key);
	ck_assert_int_eq(
		stage_backing_new(IMG_SIZE, &key, sizeof(key), "t", &copy), 0);
	ck_assert_int_eq(ask(k, c, uid, &m, copy, &ans), -1);
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
	struct keep_msg ans;
	struct keeper *k;
	struct cl a, b, c;
	struct stat s1, s2;
	int img_a, img_b, img_c, copy, fd;
	unsigned int n;

	ck_assert_int_eq(keeper_new(1ull << 30, &k), 0);
	img_a = get_sent(k, &a, 1000, path);
	ck_assert_int_eq(keep_recv(a.sv[0], &ans, &fd), 0);
	ck_assert_int_eq(ans.op, KEEP_NONE);
	img_b = get_sent(k, &b, 1000, path);
	ck_assert(!answered(&b)); /* it waits for a's copy */
	img_c = get_sent(k, &c, 1001, path);
	ck_assert(answered(&c)); /* another user's: not held back */
	ck_assert_int_eq(keep_recv(c.sv[0], &ans, &fd), 0);
	ck_assert_int_eq(ans.op, KEEP_NONE);
	copy = put_new(k, &a, 1000, img_a);
	ck_assert(answered(&b));
	ck_assert_int_eq(keep_recv(b.sv[0], &ans, &fd), 0);
	ck_assert_int_eq(ans.op, KEEP_COPY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(copy, &s1), 0);
	ck_assert_int_eq(fstat(fd, &s2), 0);
	ck_assert_uint_eq(s1.st_ino, s2.st_ino); /* a's copy, shared */
	close(fd);
	ck_assert_uint_eq(keeper_kept(k, &n), 0);
	ck_assert_uint_eq(n, 1);
	cl_close(k, &a);
	ck_assert_uint_eq(keeper_kept(k, NULL), 0); /* b uses it */
	cl_close(k, &b);
	ck_assert_uint_eq(keeper_kept(k, &n), stage_backing_size(IMG_SIZE));
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
	struct keep_msg ans;
	struct keeper *k;
	struct cl a, b, c;
	int img[4], fd;

	ck_assert_int_eq(keeper_new(1ull << 30, &k), 0);
	img[0] = get_sent(k, &a, 1000, path);
	ck_assert_int_eq(keep_recv(a.sv[0], &ans, &fd), 0);
	ck_assert_int_eq(ans.op, KEEP_NONE);
	img[1] = get_sent(k, &b, 1000, path);
	ck_assert(!answered(&b));
	cl_close(k, &a);
	ck_assert(answered(&b));
	ck_assert_int_eq(keep_recv(b.sv[0], &ans, &fd), 0);
	ck_assert_int_eq(ans.op, KEEP_NONE);
	ck_assert_int_eq(fd, -1);
	img[2] = get_sent(k, &c, 1000, path);
	ck_assert(!answered(&c)); /* b holds it back now */
	cl_close(k, &c); /* forgotten */
	cl_close(k, &b);
	img[3] = get_sent(k, &a, 1000, path);
	ck_assert(answered(&a)); /* nobody holds it back */
	ck_assert_int_eq(keep_recv(a.sv[0], &ans, &fd), 0);
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

/* A reservation with no PUT for KEEP_RESERVE_S is dropped: the GET
 * waiting for it is answered NONE; a late PUT is still taken. */
START_TEST(test_keep_get_reserve_expires)
{
	char *path = image_new();
	struct keep_msg ans;
	struct keeper *k;
	struct cl a, b;
	int img_a, img_b, copy, fd;

	ck_assert_int_eq(keeper_new(1ull << 30, &k), 0);
	img_a = get_sent(k, &a, 1000, path);
	ck_assert_int_eq(keep_recv(a.sv[0], &ans, &fd), 0);
	ck_assert_int_eq(ans.op, KEEP_NONE);
	img_b = get_sent(k, &b, 1000, path);
	keeper_expire(k);
	ck_assert(!answered(&b)); /* not yet */
	sleep(KEEP_RESERVE_S + 1);
	keeper_expire(k);
	ck_assert(answered(&b));
	ck_assert_int_eq(keep_recv(b.sv[0], &ans, &fd), 0);
	ck_assert_int_eq(ans.op, KEEP_NONE);
	copy = put_new(k, &a, 1000, img_a);
	close(copy);
	cl_close(k, &a);
	cl_close(k, &b);
	ck_assert_uint_eq(keeper_kept(k, NULL), stage_backing_size(IMG_SIZE));
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
	struct keep_msg m = { .op = KEEP_LIST }, ans;
	struct keeper *k;
	struct cl a, c;
	int fd;

	ck_assert_int_eq(keeper_new(1ull << 30, &k), 0);
	ck_assert_int_eq(mount_on(k, &a, 1000, path), 0);
	cl_close(k, &a);
	ck_assert_int_eq(mount_on(k, &a, 1001, path), 0);
	cl_close(k, &a);
	cl_open(&c);
	ck_assert_int_eq(ask(k, &c, 1001, &m, -1, &ans), -1);
	ck_assert_int_eq(ans.op, KEEP_ENTRY);
	ck_assert_uint_eq(ans.uid, 1001);
	ck_assert_str_eq(ans.name, path);
	ck_assert_uint_eq(ans.b, 0); /* nothing complete */
	ck_assert_int_eq(keep_recv(c.sv[0], &ans, &fd), 0);
	ck_assert_int_eq(ans.op, KEEP_DONE);
	ck_assert_uint_eq(ans.a, 1);
	cl_close(k, &c);
	cl_open(&c); /* a connection's user is its peer's, once for all */
	ck_assert_int_eq(ask(k, &c, 0, &m, -1, &ans), -1);
	ck_assert_int_eq(keep_recv(c.sv[0], &ans, &fd), 0);
	ck_assert_int_eq(keep_recv(c.sv[0], &ans, &fd), 0);
	ck_assert_int_eq(ans.op, KEEP_DONE);
	ck_assert_uint_eq(ans.a, 2);
	cl_close(k, &c);
	cl_open(&c);
	m = (struct keep_msg){ .op = KEEP_FORGET };
	ck_assert_int_eq(ask(k, &c, 1001, &m, -1, &ans), -1);
	ck_assert_uint_eq(ans.a, 1);
	ck_assert_uint_eq(keeper_kept(k, NULL), stage_backing_size(IMG_SIZE));
	cl_close(k, &c);
	keeper_free(k);
	unlink(path);
	free(path);
}
END_TEST

/* A copy that is not sealed, or of another image, is refused. */
START_TEST(test_keep_put_checked)
{
	char *path = image_new();
	struct keep_msg m = { .op = KEEP_GET }, ans;
	struct keeper *k;
	struct cl c;
	int img = open(path, O_RDONLY), fd;

	ck_assert_int_eq(keeper_new(1ull << 30, &k), 0);
	cl_open(&c);
	ck_assert_int_eq(ask(k, &c, 1000, &m, img, &ans), -1);
	ck_assert_int_eq(ans.op, KEEP_NONE);
	fd = memfd_create("x", MFD_CLOEXEC);
	ck_assert_int_eq(ftruncate(fd, stage_backing_size(IMG_SIZE)), 0);
	m = (struct keep_msg){ .op = KEEP_PUT };
	ck_assert_int_eq(ask(k, &c, 1000, &m, fd, &ans), -1);
	ck_assert_int_eq(ans.status, -EINVAL);
	close(fd);
	ck_assert_int_eq(stage_backing_new(IMG_SIZE, "other", 5, "t", &fd), 0);
	ck_assert_int_eq(ask(k, &c, 1000, &m, fd, &ans), -1);
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

/* A name with control characters is listed with '?' for them. */
START_TEST(test_keep_name_shown)
{
	char *path = image_new();
	struct keep_msg m = { .op = KEEP_GET, .name = "a\033[2Jb\n" }, ans;
	struct keeper *k;
	struct cl c, l;
	int img = open(path, O_RDONLY);

	ck_assert_int_eq(keeper_new(1ull << 30, &k), 0);
	cl_open(&c);
	ck_assert_int_eq(ask(k, &c, 1000, &m, img, &ans), -1);
	ck_assert_int_eq(ans.op, KEEP_NONE);
	cl_close(k, &c);
	ck_assert_int_eq(mount_on(k, &c, 1000, path), 0);
	cl_open(&l);
	m = (struct keep_msg){ .op = KEEP_LIST };
	ck_assert_int_eq(ask(k, &l, 1000, &m, -1, &ans), -1);
	ck_assert_str_eq(ans.name, path);
	cl_close(k, &l);
	cl_close(k, &c);
	/* And through PUT, the name of the GET before it. */
	cl_open(&c);
	m = (struct keep_msg){ .op = KEEP_FORGET };
	ck_assert_int_eq(ask(k, &c, 1000, &m, -1, &ans), -1);
	cl_close(k, &c);
	ck_assert_int_eq(mount_on_named(k, &c, 1000, path, "a\033[2Jb\n"), 0);
	cl_close(k, &c);
	cl_open(&l);
	m = (struct keep_msg){ .op = KEEP_LIST };
	ck_assert_int_eq(ask(k, &l, 1000, &m, -1, &ans), -1);
	ck_assert_str_eq(ans.name, "a?[2Jb?");
	cl_close(k, &l);
	keeper_free(k);
	unlink(path);
	free(path);
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
	tcase_add_test(tc, test_keep_share);
	tcase_add_test(tc, test_keep_get_waits_for_put);
	tcase_add_test(tc, test_keep_get_reserver_closes);
	tcase_add_test(tc, test_keep_get_reserve_expires);
	tcase_set_timeout(tc, 2 * KEEP_RESERVE_S + 4);
	tcase_add_test(tc, test_keep_list_forget);
	tcase_add_test(tc, test_keep_put_checked);
	tcase_add_test(tc, test_keep_name_shown);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

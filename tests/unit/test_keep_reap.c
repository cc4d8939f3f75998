// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of the keeper's reaper
 * (slurm/keep_reap.c): sockets handed to it are closed by its child
 * process, batch by batch (more than one message's 253 descriptors), not
 * in the caller, whose copies it closes; it says it is full at
 * KEEP_REAP_PENDING; keep_reap_run() never waits; a batch that a close
 * would wait on (a lingering TCP socket queued on a socket of it) is
 * released by its closer's exit, which ends at once, and the next is
 * closed; sockets of several users are each closed (as root: by a closer
 * of each).  That a user's closer that never ends holds up none of the
 * others' is shown by the keeper's integration test (122, case k).  The keeper's use of it
 * is shown by its integration test (122, cases i and j).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "slurm/keep_reap.h"
#include "util/clock.h"

#define N (KEEP_REAP_PENDING + 44)

static int64_t now_ms(void)
{
	return mono_ns() / 1000000;
}

/* Whether the peer @fd's other end is closed (EOF), looking now. */
static bool closed(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && p.revents & POLLHUP;
}

/* Run @r until every one of @n sockets' peers sees its end closed, 10 s
 * at most; each run must come back (not wait in a close).  Return: how
 * many did. */
static int run_until_closed(struct keep_reap *r, const int *ours, int n)
{
	int64_t end = now_ms() + 10000;
	int done = 0;

	while (now_ms() < end) {
		int64_t t = now_ms();

		keep_reap_run(r);
		/* A close waiting in it would take the linger's 600 s; 5 s
		 * leave room for a loaded machine. */
		ck_assert_int_lt(now_ms() - t, 5000);
		done = 0;
		for (int i = 0; i < n; i++)
			done += closed(ours[i]);
		if (done == n)
			break;
		poll(&(struct pollfd){ .fd = keep_reap_fd(r),
				       .events = POLLIN },
		     1, 10);
	}
	return done;
}

/* A TCP socket that lingers in its close (SO_LINGER 600 s, its window
 * full: its peer is not accepted yet), sent on @via (so that it is queued
 * on @via's peer) and closed here: that peer's close releases it.
 * Return: the listening socket its peer waits on. */
static int queue_lingering(int via)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct linger lg = { 1, 600 };
	socklen_t len = sizeof(sa);
	static char buf[65536];
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char c = 'x';
	struct iovec iov = { &c, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.b,
			     .msg_controllen = sizeof(u.b) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	int t = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(l, 1), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	ck_assert_int_eq(connect(t, (struct sockaddr *)&sa, sizeof(sa)), 0);
	while (send(t, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	ck_assert_int_eq(setsockopt(t, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
			 0);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &t, sizeof(int));
	ck_assert_int_eq(sendmsg(via, &mh, 0), 1);
	close(t);
	/* t's peer waits in l's backlog, not read, so t's window stays
	 * full until the caller accepts it. */
	return l;
}

/* Whether the TCP peer waiting on @l sees its end released: it reads the
 * bytes queued, then EOF (or a reset), within 10 s. */
static bool tcp_released(int l)
{
	static char buf[65536];
	int64_t end = now_ms() + 10000;
	int c = accept(l, NULL, NULL);
	bool done = false;

	ck_assert_int_ge(c, 0);
	while (!done && now_ms() < end) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		ssize_t got;

		if (poll(&p, 1, 100) != 1)
			continue;
		got = read(c, buf, sizeof(buf));
		done = got == 0 || (got < 0 && errno == ECONNRESET);
	}
	close(c);
	return done;
}

START_TEST(test_closes_in_batches)
{
	static int ours[N], theirs[N];
	struct keep_reap *r;
	int i;

	ck_assert_int_eq(keep_reap_new(&r), 0);
	ck_assert_int_ge(keep_reap_fd(r), 0);
	for (i = 0; i < N; i++) {
		int sp[2];

		ck_assert_int_eq(socketpair(AF_UNIX,
					    SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
					    sp),
				 0);
		ours[i] = sp[0];
		theirs[i] = sp[1];
		/* Something queued on the side the reaper closes. */
		ck_assert_int_eq(send(ours[i], "x", 1, 0), 1);
	}
	for (i = 0; i < KEEP_REAP_PENDING; i++) {
		ck_assert(!keep_reap_full(r));
		keep_reap_take(r, theirs[i], getuid());
	}
	ck_assert(keep_reap_full(r));
	for (; i < N; i++)
		keep_reap_take(r, theirs[i], getuid()); /* taken all the same */
	/* Nothing closed yet: in the caller, take() only queues. */
	ck_assert(!closed(ours[0]));
	ck_assert_int_eq(run_until_closed(r, ours, N), N);
	ck_assert(!keep_reap_full(r));
	/* The caller's copies are closed (the closer's were the last). */
	for (i = 0; i < N; i++) {
		errno = 0;
		ck_assert_int_eq(fcntl(theirs[i], F_GETFD), -1);
		ck_assert_int_eq(errno, EBADF);
		close(ours[i]);
	}
	keep_reap_free(r);
}
END_TEST

/* Run @r until it said that @n closers have ended, 10 s at most.
 * Return: whether it did. */
static bool run_until_ended(struct keep_reap *r, unsigned long n)
{
	int64_t end = now_ms() + 10000;

	while (keep_reap_ended(r) < n && now_ms() < end) {
		poll(&(struct pollfd){ .fd = keep_reap_fd(r),
				       .events = POLLIN },
		     1, 10);
		keep_reap_run(r);
	}
	return keep_reap_ended(r) >= n;
}

/* A socket whose close would wait (a lingering TCP socket queued on it):
 * the caller never waits, the closer's exit releases it without the
 * linger's wait (the closer ends: a close would wait the linger's 600 s),
 * the TCP socket is really released (its peer reads EOF), and the next
 * batch is closed as well. */
START_TEST(test_lingering)
{
	struct keep_reap *r;
	int a[2], b[2], l;

	ck_assert_int_eq(keep_reap_new(&r), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, a), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, b), 0);
	l = queue_lingering(a[0]);
	keep_reap_take(r, a[1], getuid());
	keep_reap_run(r); /* a's batch sent */
	keep_reap_take(r, b[1], getuid());
	ck_assert_int_eq(run_until_closed(r, &b[0], 1), 1);
	ck_assert(closed(a[0]));
	ck_assert(run_until_ended(r, 2));
	ck_assert(tcp_released(l));
	close(l);
	close(a[0]);
	close(b[0]);
	keep_reap_free(r);
}
END_TEST

/* Sockets of two users, taken in turns: each is closed (as root, by a
 * closer running as each user). */
START_TEST(test_users)
{
	enum { M = 40 };
	int ours[M], theirs[M], i;
	struct keep_reap *r;

	ck_assert_int_eq(keep_reap_new(&r), 0);
	for (i = 0; i < M; i++) {
		int sp[2];

		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp), 0);
		ours[i] = sp[0];
		theirs[i] = sp[1];
		ck_assert_int_eq(send(ours[i], "x", 1, 0), 1);
		if (geteuid() == 0 && i % 2)
			keep_reap_take(r, theirs[i], 65534);
		else
			keep_reap_take(r, theirs[i], getuid());
	}
	ck_assert_int_eq(run_until_closed(r, ours, M), M);
	for (i = 0; i < M; i++)
		close(ours[i]);
	keep_reap_free(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("keep_reap");
	TCase *tc = tcase_create("keep_reap");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_closes_in_batches);
	tcase_add_test(tc, test_lingering);
	tcase_add_test(tc, test_users);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of the keeper's reaper
 * (slurm/keep_reap.c): sockets handed to it are closed by its child
 * process, batch by batch (more than one message's 253 descriptors), not
 * in the caller, whose copies it closes; it says it is full at
 * KEEP_REAP_PENDING; keep_reap_run() never waits.  Its SIGKILL of a
 * reaper stuck in a lingering socket's close is shown by the keeper's
 * integration test (122, case j).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
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
 * at most; each run must come back at once.  Return: how many did. */
static int run_until_closed(struct keep_reap *r, const int *ours, int n)
{
	int64_t end = now_ms() + 10000;
	int done = 0;

	while (now_ms() < end) {
		int64_t t = now_ms();

		keep_reap_run(r, t);
		ck_assert_int_lt(now_ms() - t, 1000);
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

START_TEST(test_closes_in_batches)
{
	static int ours[N], theirs[N];
	struct keep_reap *r;
	int i;

	ck_assert_int_eq(keep_reap_new(&r), 0);
	ck_assert_int_eq(keep_reap_fd(r), -1); /* no reaper until needed */
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
		ck_assert(keep_reap_take(r, theirs[i]));
	}
	ck_assert(keep_reap_full(r));
	ck_assert(!keep_reap_take(r, theirs[i])); /* left with the caller */
	/* Nothing closed yet: in the caller, take() only queues. */
	ck_assert(!closed(ours[0]));
	ck_assert_int_eq(run_until_closed(r, ours, KEEP_REAP_PENDING),
			 KEEP_REAP_PENDING);
	ck_assert(!keep_reap_full(r));
	ck_assert_int_ge(keep_reap_fd(r), 0);
	/* The caller's copies are closed (the reaper's were the last). */
	for (i = 0; i < KEEP_REAP_PENDING; i++)
		ck_assert_int_eq(
			fcntl(theirs[i], F_GETFD) < 0 && errno == EBADF, 1);
	for (; i < N; i++)
		ck_assert(keep_reap_take(r, theirs[i]));
	ck_assert_int_eq(run_until_closed(r, ours, N), N);
	keep_reap_free(r);
	for (i = 0; i < N; i++)
		close(ours[i]);
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
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

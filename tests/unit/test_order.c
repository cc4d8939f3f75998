// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/order, the epoch order:
 * against a source in memory that counts every byte it is asked for, the
 * bytes served are the source's, each range is read once whoever reads it
 * (threads ahead, or readers that get there first), shared ranges are
 * merged and dropped after their last user, passed ranges are dropped
 * unread, the window bounds what is held, a new order replaces the old
 * one while readers read, and bad orders are refused without a change.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "order/order.h"
#include "util/compiler.h"

#define SRC_SIZE (4u << 20)

/* The source: bytes, how often each was read, and a delay per read. */
static uint8_t src_bytes[SRC_SIZE];
static _Atomic uint32_t src_reads[SRC_SIZE];
static _Atomic unsigned int src_delay_us;
static _Atomic int src_fail_at = -1; /* offset whose read fails */

static int src_read(void *arg, uint64_t off, void *dst, size_t len)
{
	(void)arg;
	if (src_delay_us)
		usleep(src_delay_us);
	if ((int)off == src_fail_at)
		return -EIO;
	ck_assert_uint_le(off + len, SRC_SIZE);
	for (size_t i = 0; i < len; i++)
		src_reads[off + i]++;
	memcpy(dst, src_bytes + off, len);
	return 0;
}

static void setup(void)
{
	for (size_t i = 0; i < SRC_SIZE; i++) {
		src_bytes[i] = (uint8_t)(i * 2654435761u >> 13);
		src_reads[i] = 0;
	}
	src_delay_us = 0;
	src_fail_at = -1;
}

static struct order *make(uint64_t window, unsigned int threads)
{
	const struct order_src s = { src_read, NULL };
	const struct order_opts o = { window, threads };
	struct order *ord;

	ck_assert_int_eq(order_new(&s, &o, &ord), 0);
	return ord;
}

/* @n ranges of @len bytes, file i at offset perm(i) * @len. */
static struct order_range *ranges(size_t n, uint32_t len)
{
	struct order_range *r = calloc(n, sizeof(*r));

	for (size_t i = 0; i < n; i++) {
		r[i].off = (uint64_t)((i * 7919) % n) * len;
		r[i].len = len;
		r[i].item = (uint32_t)i;
	}
	return r;
}

/* Wait until the order's counter @field reaches @want (or 5 s). */
#define WAIT_FOR(ord, field, want)                    \
	do {                                          \
		struct order_stats st_;               \
		for (int t_ = 0; t_ < 5000; t_++) {   \
			order_get_stats(ord, &st_);   \
			if (st_.field >= (want))      \
				break;                \
			usleep(1000);                 \
		}                                     \
		ck_assert_uint_ge(st_.field, (want)); \
	} while (0)

static void check_bytes(const uint8_t *got, uint64_t off, size_t len)
{
	ck_assert_int_eq(memcmp(got, src_bytes + off, len), 0);
}

START_TEST(test_read_ahead_once)
{
	struct order *ord = make(1u << 20, 4);
	struct order_range *r = ranges(256, 4096);
	struct order_stats st;
	uint8_t buf[4096];

	ck_assert_int_eq(order_set(ord, r, 256, 256), 0);
	/* Ahead of any reader: a window's worth, not more. */
	WAIT_FOR(ord, read, 256 * 4096u);
	for (size_t i = 0; i < 256; i++) {
		uint64_t off = (uint64_t)((i * 7919) % 256) * 4096;

		/* In two halves, as a reader of 2 KiB blocks would. */
		ck_assert_int_eq(order_get(ord, off, 2048, buf), 0);
		ck_assert_int_eq(order_get(ord, off + 2048, 2048, buf + 2048),
				 0);
		check_bytes(buf, off, 4096);
	}
	order_get_stats(ord, &st);
	ck_assert_uint_eq(st.read, 256 * 4096u);
	ck_assert_uint_eq(st.served, 256 * 4096u);
	ck_assert_uint_eq(st.held, 0); /* all taken: all dropped */
	ck_assert_uint_eq(st.hits, 512);
	ck_assert_uint_eq(st.dropped_unread, 0);
	ck_assert_uint_eq(st.errors, 0);
	for (size_t i = 0; i < 256 * 4096u; i++)
		ck_assert_uint_eq(src_reads[i], 1);
	/* Dropped: the caller reads the source itself now. */
	ck_assert_int_eq(order_get(ord, 0, 16, buf), -ENODATA);
	/* Outside every range, or across two. */
	ck_assert_int_eq(order_get(ord, 256 * 4096u, 16, buf), -ENODATA);
	ck_assert(!order_has(ord, 4090, 16));
	order_free(ord);
}
END_TEST

START_TEST(test_window_bound)
{
	struct order *ord = make(64 * 1024, 8);
	struct order_range *r = ranges(512, 4096);
	struct order_stats st;
	uint8_t buf[4096];

	src_delay_us = 200;
	ck_assert_int_eq(order_set(ord, r, 512, 512), 0);
	for (size_t i = 0; i < 512; i++) {
		uint64_t off = (uint64_t)((i * 7919) % 512) * 4096;

		ck_assert_int_eq(order_get(ord, off, 4096, buf), 0);
		check_bytes(buf, off, 4096);
		order_get_stats(ord, &st);
		/* A reader may read one range past the window. */
		ck_assert_uint_le(st.held, 64 * 1024 + 4096);
	}
	order_get_stats(ord, &st);
	ck_assert_uint_le(st.held_max, 64 * 1024 + 4096);
	ck_assert_uint_eq(st.read, 512 * 4096u);
	for (size_t i = 0; i < 512 * 4096u; i++)
		ck_assert_uint_eq(src_reads[i], 1);
	order_free(ord);
}
END_TEST

START_TEST(test_shared_ranges)
{
	struct order *ord = make(1u << 20, 2);
	struct order_range *r = calloc(4, sizeof(*r));
	struct order_stats st;
	uint8_t buf[1000];

	/* Files 0 and 3 share a block (a fragment); 1 and 2 have their own. */
	r[0] = (struct order_range){ 100000, 1000, 0 };
	r[1] = (struct order_range){ 0, 1000, 1 };
	r[2] = (struct order_range){ 5000, 1000, 2 };
	r[3] = (struct order_range){ 100000, 1000, 3 };
	ck_assert_int_eq(order_set(ord, r, 4, 4), 0);
	order_get_stats(ord, &st);
	ck_assert_uint_eq(st.ranges, 3);
	ck_assert_uint_eq(st.planned, 3000);
	WAIT_FOR(ord, read, 3000);
	ck_assert_int_eq(order_get(ord, 100000, 1000, buf), 0);
	check_bytes(buf, 100000, 1000);
	/* Still held for its second user. */
	ck_assert(order_has(ord, 100000, 1000));
	ck_assert_int_eq(order_get(ord, 0, 1000, buf), 0);
	ck_assert_int_eq(order_get(ord, 5000, 1000, buf), 0);
	ck_assert_int_eq(order_get(ord, 100000, 1000, buf), 0);
	check_bytes(buf, 100000, 1000);
	order_get_stats(ord, &st);
	ck_assert_uint_eq(st.held, 0);
	ck_assert_uint_eq(src_reads[100000], 1);
	order_free(ord);
}
END_TEST

START_TEST(test_passed_dropped)
{
	size_t n = ORDER_LAG * 3;
	struct order *ord = make(8u << 20, 4);
	struct order_range *r = ranges(n, 512);
	struct order_stats st;
	uint8_t buf[512];

	ck_assert_int_eq(order_set(ord, r, n, n), 0);
	WAIT_FOR(ord, read, n * 512);
	/* The reader skips the first files (its page cache had them), and
	 * reads from item 2 * ORDER_LAG on. */
	for (size_t i = 2 * ORDER_LAG; i < n; i++) {
		uint64_t off = (uint64_t)((i * 7919) % n) * 512;

		ck_assert_int_eq(order_get(ord, off, 512, buf), 0);
	}
	order_get_stats(ord, &st);
	ck_assert_uint_ge(st.dropped_unread, ORDER_LAG * 512u);
	ck_assert_uint_le(st.held, ORDER_LAG * 512u);
	order_free(ord);
}
END_TEST

/* Blocks a cache held: their ranges count as taken, and are not read if
 * the threads had not got to them, or dropped if they had. */
START_TEST(test_skipped)
{
	struct order *ord = make(4096, 1);
	struct order_range *r = calloc(3, sizeof(*r));
	struct order_stats st;
	uint8_t buf[8192];

	src_delay_us = 20000;
	r[0] = (struct order_range){ 0, 4096, 0 };
	r[1] = (struct order_range){ 8192, 8192, 1 }; /* two blocks */
	r[2] = (struct order_range){ 65536, 4096, 2 };
	ck_assert_int_eq(order_set(ord, r, 3, 3), 0);
	/* While the first is being read: the second is in a cache, one
	 * half per read, the third read here. */
	order_skip(ord, 8192, 4096, 4096);
	order_skip(ord, 12288, 4096, 4096);
	ck_assert_int_eq(order_get(ord, 65536, 4096, buf), 0);
	check_bytes(buf, 65536, 4096);
	ck_assert_int_eq(order_get(ord, 0, 4096, buf), 0);
	order_get_stats(ord, &st);
	ck_assert_uint_eq(st.skipped, 8192);
	ck_assert_uint_eq(st.read, 8192); /* not the skipped range */
	ck_assert_uint_eq(st.held, 0);
	ck_assert_uint_eq(src_reads[8192], 0);
	ck_assert(!order_has(ord, 8192, 4096));
	/* Outside every range: nothing happens. */
	order_skip(ord, 1u << 20, 16, 16);
	order_skip(NULL, 0, 16, 16);
	order_get_stats(ord, &st);
	ck_assert_uint_eq(st.skipped, 8192);
	order_free(ord);
}
END_TEST

/* Ranges that overlap without being equal (blocks shared by files, as a
 * deduplicating packer writes them): a read inside any of them is served
 * from the window, and each is dropped once its own users took it. */
START_TEST(test_overlapping)
{
	struct order *ord = make(1u << 20, 2);
	struct order_range *r = calloc(6, sizeof(*r));
	struct order_stats st;
	uint8_t buf[4096];
	/* What each file reads, in 4 KiB pieces at most. */
	static const struct {
		uint64_t off;
		uint32_t len;
	} want[] = {
		{ 0, 16384 }, /* a long range, a short one inside it */
		{ 4096, 4096 },
		{ 65536, 4096 }, /* the same start, short then long */
		{ 65536, 12288 },
		{ 131072, 32768 }, /* a long one starting before a short */
		{ 135168, 1024 },
	};

	for (uint32_t i = 0; i < 6; i++)
		r[i] = (struct order_range){ want[i].off, want[i].len, i };
	ck_assert_int_eq(order_set(ord, r, 6, 6), 0);
	WAIT_FOR(ord, read, 70656);
	/* Past the short range nested in the long one. */
	ck_assert(order_has(ord, 8192, 4096));
	ck_assert(order_has(ord, 139264, 4096));
	ck_assert(!order_has(ord, 12288, 8192)); /* past the long one */
	for (size_t i = 0; i < 6; i++) {
		for (uint32_t at = 0; at < want[i].len; at += 4096) {
			uint64_t off = want[i].off + at;
			size_t len = MIN(4096u, want[i].len - at);

			ck_assert_msg(!order_get(ord, off, len, buf),
				      "file %zu: %zu bytes at %llu not served",
				      i, len, (unsigned long long)off);
			check_bytes(buf, off, len);
		}
	}
	order_get_stats(ord, &st);
	ck_assert_uint_eq(st.read, 70656); /* no reader read again */
	ck_assert_uint_eq(st.served, 70656);
	ck_assert_uint_eq(st.held, 0); /* each taken by its own users */
	ck_assert_uint_eq(st.dropped_unread, 0);
	order_free(ord);
}
END_TEST

/* A reader ahead of the threads reads a range itself, once. */
START_TEST(test_reader_first)
{
	struct order *ord = make(4096, 1);
	struct order_range *r = ranges(64, 4096);
	struct order_stats st;
	uint8_t buf[4096];
	uint64_t off = (uint64_t)((63 * 7919) % 64) * 4096;

	src_delay_us = 2000;
	ck_assert_int_eq(order_set(ord, r, 64, 64), 0);
	ck_assert_int_eq(order_get(ord, off, 4096, buf), 0);
	check_bytes(buf, off, 4096);
	order_get_stats(ord, &st);
	ck_assert_uint_eq(st.by_readers, 4096);
	for (size_t i = 0; i < 4096; i++)
		ck_assert_uint_eq(src_reads[off + i], 1);
	order_free(ord);
}
END_TEST

struct reader_arg {
	struct order *ord;
	size_t n;
	atomic_bool *stop;
	unsigned long wrong;
};

static void *reader(void *p)
{
	struct reader_arg *a = p;
	uint8_t buf[4096];

	while (!atomic_load(a->stop)) {
		for (size_t i = 0; i < a->n; i++) {
			uint64_t off = (uint64_t)((i * 7919) % a->n) * 4096;

			if (!order_get(a->ord, off, 4096, buf) &&
			    memcmp(buf, src_bytes + off, 4096))
				a->wrong++;
		}
	}
	return NULL;
}

/* Orders replaced while readers read: right bytes or -ENODATA, never
 * freed memory (run under ASan and TSan by make check). */
START_TEST(test_replace_while_reading)
{
	struct order *ord = make(256 * 1024, 4);
	atomic_bool stop = false;
	struct reader_arg a[3];
	pthread_t t[3];

	src_delay_us = 100;
	ck_assert_int_eq(order_set(ord, ranges(128, 4096), 128, 128), 0);
	for (int i = 0; i < 3; i++) {
		a[i] = (struct reader_arg){ ord, 128, &stop, 0 };
		pthread_create(&t[i], NULL, reader, &a[i]);
	}
	for (int k = 0; k < 20; k++) {
		usleep(2000);
		ck_assert_int_eq(order_set(ord, ranges(128, 4096), 128, 128),
				 0);
	}
	ck_assert_int_eq(order_set(ord, NULL, 0, 0), 0); /* cleared */
	atomic_store(&stop, true);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		ck_assert_uint_eq(a[i].wrong, 0);
	}
	order_free(ord);
}
END_TEST

START_TEST(test_refused)
{
	struct order *ord = make(1u << 20, 2), *off = make(0, 2);
	struct order_range *r;
	struct order_stats st;
	uint8_t buf[16];

	ck_assert_int_eq(order_set(ord, ranges(8, 4096), 8, 8), 0);
	r = ranges(8, 4096);
	r[3].len = 0;
	ck_assert_int_eq(order_set(ord, r, 8, 8), -EINVAL);
	r = ranges(8, 4096);
	r[3].len = ORDER_RANGE_MAX + 1;
	ck_assert_int_eq(order_set(ord, r, 8, 8), -EINVAL);
	r = ranges(8, 4096);
	r[5].item = 2; /* going back */
	ck_assert_int_eq(order_set(ord, r, 8, 8), -EINVAL);
	order_get_stats(ord, &st);
	ck_assert_uint_eq(st.orders, 1); /* the first stays */
	ck_assert_uint_eq(st.items, 8);
	ck_assert_int_eq(order_set(off, ranges(8, 4096), 8, 8), -EOPNOTSUPP);
	ck_assert_int_eq(order_get(off, 0, 16, buf), -ENODATA);
	ck_assert_int_eq(order_get(NULL, 0, 16, buf), -ENODATA);
	/* A failed read: counted, and the caller reads the source. */
	src_fail_at = 0;
	order_free(ord);
	ord = make(1u << 20, 1);
	r = calloc(1, sizeof(*r));
	r[0] = (struct order_range){ 0, 4096, 0 };
	ck_assert_int_eq(order_set(ord, r, 1, 1), 0);
	WAIT_FOR(ord, errors, 1);
	ck_assert_int_eq(order_get(ord, 0, 16, buf), -ENODATA);
	order_get_stats(ord, &st);
	ck_assert_uint_eq(st.held, 0);
	order_free(ord);
	order_free(off);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("order");
	TCase *tc = tcase_create("order");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_read_ahead_once);
	tcase_add_test(tc, test_window_bound);
	tcase_add_test(tc, test_shared_ranges);
	tcase_add_test(tc, test_overlapping);
	tcase_add_test(tc, test_passed_dropped);
	tcase_add_test(tc, test_reader_first);
	tcase_add_test(tc, test_skipped);
	tcase_add_test(tc, test_replace_while_reading);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

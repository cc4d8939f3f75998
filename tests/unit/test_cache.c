// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/cache: hits and misses, data
 * integrity, single flight, error handling, the byte budget under
 * concurrent load, bypass entries, scan resistance, cache_prefill() and a
 * concurrent stress test, plus an informative hit-path benchmark.
 *
 * TSAN: yes
 *
 * SQC_TSAN or SQC_SLOW in the environment (sanitizer and valgrind runs)
 * shrink the concurrent workloads and skip the benchmark.
 */
#include <check.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "util/err.h"

#define ENTRY 4096 /* max_entry of most tests */
#define NTHREADS 8

/* Room for @n entries of ENTRY bytes: at most 256 bytes of bookkeeping. */
#define ROOM_FOR(n) ((n) * (ENTRY + 256))

static bool env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0");
}

static unsigned int slow_factor(void)
{
	return env_set("SQC_TSAN") || env_set("SQC_SLOW") ? 16 : 1;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static uint8_t pattern_byte(uint64_t key, size_t i)
{
	return (uint8_t)(key * 0x9e37u + (key >> 12) * 37u + i * 13u +
			 (i >> 7));
}

static void pattern_fill(uint64_t key, uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern_byte(key, i);
}

static bool pattern_ok(uint64_t key, const uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != pattern_byte(key, i))
			return false;
	return true;
}

/* A fill controlled by the test. */
struct fill_ctl {
	atomic_int calls; /* fills run */
	int err; /* returned by every fill, 0 = success */
	size_t len; /* bytes written, 0 = cap */
	sem_t *gate; /* if set, wait on it before returning */
	atomic_bool open; /* the gate is open: pass it */
};

static int ctl_fill(void *arg, uint64_t key, void *buf, size_t cap, size_t *len)
{
	struct fill_ctl *ctl = arg;
	size_t n = ctl->len ? ctl->len : cap;

	atomic_fetch_add(&ctl->calls, 1);
	if (ctl->gate && !atomic_load(&ctl->open))
		sem_wait(ctl->gate);
	if (ctl->err)
		return ctl->err;
	if (n > cap)
		n = cap;
	pattern_fill(key, buf, n);
	*len = n;
	return 0;
}

/* A fill whose length and result derive from the key alone. */
static size_t key_len(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x2545f4914f6cdd1dULL) >> 40) % cap + 1;
}

static bool key_corrupt(uint64_t key)
{
	return (key / ENTRY) % 251 == 7;
}

static bool key_flaky(uint64_t key)
{
	return (key / ENTRY) % 509 == 3;
}

static int key_fill(void *arg, uint64_t key, void *buf, size_t cap, size_t *len)
{
	atomic_int *calls = arg;

	if (calls)
		atomic_fetch_add_explicit(calls, 1, memory_order_relaxed);
	if (key_corrupt(key))
		return -EFSCORRUPTED;
	if (key_flaky(key))
		return -EIO;
	*len = key_len(key, cap);
	pattern_fill(key, buf, *len);
	return 0;
}

/* Get @key with ctl_fill and check its bytes; return the pinned entry. */
static struct cache_entry *get_ok(struct cache *c, uint64_t key,
				  struct fill_ctl *ctl)
{
	struct cache_entry *e = NULL;
	int err;

	err = cache_get(c, key, ENTRY, ctl_fill, ctl, &e);
	ck_assert_int_eq(err, 0);
	ck_assert_ptr_nonnull(e);
	ck_assert(pattern_ok(key, cache_entry_data(e), cache_entry_size(e)));
	return e;
}

static void get_put(struct cache *c, uint64_t key, struct fill_ctl *ctl)
{
	cache_put(c, get_ok(c, key, ctl));
}

static struct cache_stats stats(struct cache *c)
{
	struct cache_stats st;

	cache_get_stats(c, &st);
	return st;
}

START_TEST(test_basics)
{
	struct cache *c = cache_new("data", ROOM_FOR(64), ENTRY);
	struct cache_stats st;

	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(cache_name(c), "data");
	cache_put(c, NULL);
	st = stats(c);
	ck_assert_uint_eq(st.budget, ROOM_FOR(64));
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert(!cache_contains(c, 42));
	cache_free(c);
	cache_free(NULL);
}
END_TEST

START_TEST(test_hit_miss)
{
	struct cache *c = cache_new("data", ROOM_FOR(64), ENTRY);
	struct fill_ctl ctl = { 0 };
	struct cache_stats st;

	get_put(c, 4096, &ctl);
	st = stats(c);
	ck_assert_uint_eq(st.misses, 1);
	ck_assert_uint_eq(st.hits, 0);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert(cache_contains(c, 4096));

	get_put(c, 4096, &ctl);
	get_put(c, 4096, &ctl);
	get_put(c, 8192, &ctl);
	st = stats(c);
	ck_assert_int_eq(atomic_load(&ctl.calls), 2);
	ck_assert_uint_eq(st.misses, 2);
	ck_assert_uint_eq(st.hits, 2);
	ck_assert_uint_eq(st.waits, 0);
	ck_assert_uint_eq(st.entries, 2);
	ck_assert_uint_ge(st.bytes, 2 * ENTRY);
	ck_assert_uint_le(st.bytes, st.budget);
	cache_free(c);
}
END_TEST

START_TEST(test_data_integrity)
{
	static const size_t lens[] = { 1, ENTRY, ENTRY / 2, ENTRY - 1, 100 };
	struct cache *c = cache_new("data", ROOM_FOR(512), ENTRY);
	struct cache_stats st;
	struct cache_entry *e;
	uint64_t key;
	int round;

	for (round = 0; round < 2; round++) {
		for (key = 0; key < 200; key++) {
			struct fill_ctl ctl = { .len = lens[key % 5] };

			e = get_ok(c, key * 131072, &ctl);
			ck_assert_uint_eq(cache_entry_size(e), lens[key % 5]);
			cache_put(c, e);
		}
	}
	st = stats(c);
	ck_assert_uint_eq(st.misses, 200);
	ck_assert_uint_eq(st.hits, 200);
	cache_free(c);

	/* A short fill is shrunk and charged for what it kept. */
	c = cache_new("data", ROOM_FOR(8), ENTRY);
	{
		struct fill_ctl ctl = { .len = 100 };

		get_put(c, 1, &ctl);
	}
	st = stats(c);
	ck_assert_uint_gt(st.bytes, 100);
	ck_assert_uint_lt(st.bytes, ENTRY / 2);
	cache_free(c);

	/* An empty fill is a valid entry of length 0. */
	c = cache_new("data", ROOM_FOR(8), ENTRY);
	{
		struct fill_ctl ctl = { .len = 0, .err = 0 };

		ck_assert_int_eq(cache_get(c, 5, 0, ctl_fill, &ctl, &e), 0);
		ck_assert_uint_eq(cache_entry_size(e), 0);
		ck_assert_ptr_nonnull(cache_entry_data(e));
		cache_put(c, e);
	}
	cache_free(c);
}
END_TEST

/* Wait (up to 10 s) until @ctl's fill has been called @n times. */
static void wait_calls(struct fill_ctl *ctl, int n)
{
	for (int i = 0; i < 10000 && atomic_load(&ctl->calls) < n; i++)
		usleep(1000);
	ck_assert_int_ge(atomic_load(&ctl->calls), n);
}

/* Single flight: NTHREADS threads get one key at once. */
struct flight {
	struct cache *c;
	struct fill_ctl *ctl;
	pthread_barrier_t *start;
	uint64_t key;
	int err;
	struct cache_entry *e;
	bool data_ok;
};

static void *flight_thread(void *arg)
{
	struct flight *f = arg;

	pthread_barrier_wait(f->start);
	f->err = cache_get(f->c, f->key, ENTRY, ctl_fill, f->ctl, &f->e);
	if (!f->err)
		f->data_ok = pattern_ok(f->key, cache_entry_data(f->e),
					cache_entry_size(f->e));
	return NULL;
}

/* Wait (up to 10 s) until @n lookups more than @base wait for a fill. */
static void wait_waiters(struct cache *c, uint64_t base, uint64_t n)
{
	for (int i = 0; i < 10000 && stats(c).waits < base + n; i++)
		usleep(1000);
	ck_assert_uint_ge(stats(c).waits, base + n);
}

/*
 * NTHREADS threads get @key at once.  The fill waits at @ctl->gate
 * until the other NTHREADS - 1 threads wait for it, so that every one
 * of them meets the fill under way, however the threads are scheduled.
 */
static void run_flight(struct cache *c, struct fill_ctl *ctl, uint64_t key,
		       struct flight *f)
{
	pthread_t tid[NTHREADS];
	pthread_barrier_t start;
	uint64_t waits0 = stats(c).waits;
	int i;

	pthread_barrier_init(&start, NULL, NTHREADS);
	for (i = 0; i < NTHREADS; i++) {
		f[i] = (struct flight){
			.c = c, .ctl = ctl, .start = &start, .key = key
		};
		ck_assert_int_eq(
			pthread_create(&tid[i], NULL, flight_thread, &f[i]), 0);
	}
	wait_waiters(c, waits0, NTHREADS - 1);
	/* Open: the fill held goes on, and any later one passes. */
	atomic_store(&ctl->open, true);
	sem_post(ctl->gate);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&start);
	atomic_store(&ctl->open, false);
	while (!sem_trywait(ctl->gate))
		;
}

START_TEST(test_single_flight)
{
	struct cache *c = cache_new("data", ROOM_FOR(64), ENTRY);
	sem_t gate;
	struct fill_ctl ctl = { .gate = &gate };
	struct flight f[NTHREADS];
	struct cache_stats st;
	int i;

	sem_init(&gate, 0, 0);
	run_flight(c, &ctl, 77 * 4096, f);
	ck_assert_int_eq(atomic_load(&ctl.calls), 1);
	for (i = 0; i < NTHREADS; i++) {
		ck_assert_int_eq(f[i].err, 0);
		ck_assert(f[i].data_ok);
		ck_assert_ptr_eq(f[i].e, f[0].e);
	}
	st = stats(c);
	ck_assert_uint_eq(st.misses, 1);
	ck_assert_uint_eq(st.waits, NTHREADS - 1);
	ck_assert_uint_eq(st.hits, 0);
	for (i = 0; i < NTHREADS; i++)
		cache_put(c, f[i].e);
	ck_assert(cache_contains(c, 77 * 4096));
	sem_destroy(&gate);
	cache_free(c);
}
END_TEST

START_TEST(test_single_flight_error)
{
	struct cache *c = cache_new("data", ROOM_FOR(64), ENTRY);
	sem_t gate;
	struct fill_ctl ctl = { .gate = &gate, .err = -EIO };
	struct flight f[NTHREADS];
	struct cache_stats st;
	int i;

	/* Waiters share a transient error; the next get tries again. */
	sem_init(&gate, 0, 0);
	run_flight(c, &ctl, 3, f);
	ck_assert_int_eq(atomic_load(&ctl.calls), 1);
	for (i = 0; i < NTHREADS; i++) {
		ck_assert_int_eq(f[i].err, -EIO);
		ck_assert_ptr_null(f[i].e);
	}
	st = stats(c);
	ck_assert_uint_eq(st.misses, 1);
	ck_assert_uint_eq(st.fill_errors, 1);
	ck_assert_uint_eq(st.waits, NTHREADS - 1);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.bytes, 0);

	/* Waiters share a remembered corruption, and so does everyone after. */
	atomic_store(&ctl.calls, 0);
	ctl.err = -EFSCORRUPTED;
	run_flight(c, &ctl, 4, f);
	ck_assert_int_eq(atomic_load(&ctl.calls), 1);
	for (i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(f[i].err, -EFSCORRUPTED);
	ck_assert_uint_eq(stats(c).entries, 1);
	sem_destroy(&gate);
	cache_free(c);
}
END_TEST

/* A fill that gives up with -EAGAIN (warming, which reads only what is in
 * RAM) does not fail the threads waiting for it: they fill it themselves. */
struct again_arg {
	struct cache *c;
	struct fill_ctl *ctl;
	int err;
	size_t size; /* of the entry got */
};

static void *again_main(void *p)
{
	struct again_arg *a = p;
	struct cache_entry *e;

	a->err = cache_get(a->c, 7, 4096, ctl_fill, a->ctl, &e);
	if (!a->err) {
		a->size = cache_entry_size(e);
		cache_put(a->c, e);
	}
	return NULL;
}

START_TEST(test_again_refilled)
{
	struct cache *c = cache_new("data", ROOM_FOR(64), ENTRY);
	sem_t gate;
	struct fill_ctl giveup = { .gate = &gate, .err = -EAGAIN };
	struct fill_ctl good = { .len = 100 };
	struct again_arg a = { c, &giveup, 0, 0 }, b = { c, &good, 0, 0 };
	pthread_t t, u;

	/* The first fill is under way (held at the gate) when the second
	 * thread comes and waits for it; then it gives up. */
	sem_init(&gate, 0, 0);
	ck_assert_int_eq(pthread_create(&t, NULL, again_main, &a), 0);
	wait_calls(&giveup, 1);
	ck_assert_int_eq(pthread_create(&u, NULL, again_main, &b), 0);
	wait_waiters(c, 0, 1);
	sem_post(&gate);
	pthread_join(t, NULL);
	pthread_join(u, NULL);
	ck_assert_int_eq(a.err, -EAGAIN); /* its own fill's error */
	ck_assert_int_eq(b.err, 0); /* filled it itself */
	ck_assert_uint_eq(b.size, 100);
	ck_assert_int_eq(atomic_load(&giveup.calls), 1);
	ck_assert_int_eq(atomic_load(&good.calls), 1);
	sem_destroy(&gate);
	cache_free(c);
}
END_TEST

START_TEST(test_eio_not_remembered)
{
	struct cache *c = cache_new("data", ROOM_FOR(64), ENTRY);
	struct fill_ctl ctl = { .err = -EIO };
	struct cache_entry *e = (void *)1;
	struct cache_stats st;

	ck_assert_int_eq(cache_get(c, 9, ENTRY, ctl_fill, &ctl, &e), -EIO);
	ck_assert_ptr_null(e);
	ck_assert(!cache_contains(c, 9));
	ck_assert_int_eq(cache_get(c, 9, ENTRY, ctl_fill, &ctl, &e), -EIO);
	ck_assert_int_eq(atomic_load(&ctl.calls), 2);

	ctl.err = -ENOMEM;
	ck_assert_int_eq(cache_get(c, 9, ENTRY, ctl_fill, &ctl, &e), -ENOMEM);
	ck_assert_int_eq(cache_prefill(c, 9, ENTRY, ctl_fill, &ctl), -ENOMEM);
	ck_assert_int_eq(atomic_load(&ctl.calls), 4);

	ctl.err = 0;
	get_put(c, 9, &ctl);
	ck_assert_int_eq(atomic_load(&ctl.calls), 5);
	st = stats(c);
	ck_assert_uint_eq(st.fill_errors, 4);
	ck_assert_uint_eq(st.misses, 4);
	ck_assert_uint_eq(st.entries, 1);
	cache_free(c);
}
END_TEST

START_TEST(test_corrupt_remembered)
{
	struct cache *c = cache_new("data", ROOM_FOR(64), ENTRY);
	struct fill_ctl ctl = { .err = -EUCLEAN };
	struct cache_entry *e = (void *)1;
	struct cache_stats st;
	int i;

	ck_assert_int_eq(-EUCLEAN, -EFSCORRUPTED);
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(cache_get(c, 12, ENTRY, ctl_fill, &ctl, &e),
				 -EFSCORRUPTED);
		ck_assert_ptr_null(e);
	}
	ck_assert_int_eq(atomic_load(&ctl.calls), 1);
	ck_assert(!cache_contains(c, 12));
	ck_assert_int_eq(cache_prefill(c, 12, ENTRY, ctl_fill, &ctl), -EEXIST);
	ck_assert_int_eq(atomic_load(&ctl.calls), 1);
	st = stats(c);
	ck_assert_uint_eq(st.fill_errors, 1);
	ck_assert_uint_eq(st.misses, 1);
	ck_assert_uint_eq(st.entries, 1);
	/* Remembered, but small: bookkeeping only, no buffer. */
	ck_assert_uint_gt(st.bytes, 0);
	ck_assert_uint_lt(st.bytes, 256);

	/* A corrupt prefill is remembered too. */
	ck_assert_int_eq(cache_prefill(c, 13, ENTRY, ctl_fill, &ctl),
			 -EFSCORRUPTED);
	ck_assert_int_eq(cache_get(c, 13, ENTRY, ctl_fill, &ctl, &e),
			 -EFSCORRUPTED);
	ck_assert_int_eq(atomic_load(&ctl.calls), 2);
	cache_free(c);
}
END_TEST

/* The budget under random concurrent load with pins, prefills and errors. */
struct load {
	struct cache *c;
	uint64_t seed;
	unsigned int ops;
	atomic_bool *stop;
	bool ok;
};

#define LOAD_BUDGET (2 * 1024 * 1024)
#define LOAD_ENTRY (64 * 1024)
#define LOAD_PINS 16

static size_t load_cap(uint64_t key)
{
	return (size_t)(key * 0x9e3779b97f4a7c15ULL >> 32) % LOAD_ENTRY + 1;
}

static void *load_thread(void *arg)
{
	struct load *l = arg;
	struct cache_entry *pins[LOAD_PINS] = { 0 };
	unsigned int i, slot = 0;
	uint64_t rng = l->seed;

	l->ok = true;
	for (i = 0; i < l->ops; i++) {
		uint64_t key = (rng_next(&rng) % 512) * ENTRY;
		size_t cap = load_cap(key);
		struct cache_entry *e;
		int err;

		if (rng_next(&rng) % 10 == 0) {
			err = cache_prefill(l->c, key, cap, key_fill, NULL);
			if (err && err != -EEXIST && err != -ENOSPC &&
			    err != -EFSCORRUPTED && err != -EIO)
				l->ok = false;
			continue;
		}
		err = cache_get(l->c, key, cap, key_fill, NULL, &e);
		if (err) {
			if ((err == -EFSCORRUPTED && key_corrupt(key)) ||
			    (err == -EIO && key_flaky(key)))
				continue;
			l->ok = false;
			continue;
		}
		if (cache_entry_size(e) != key_len(key, cap) ||
		    !pattern_ok(key, cache_entry_data(e), cache_entry_size(e)))
			l->ok = false;
		cache_put(l->c, pins[slot]);
		pins[slot] = e;
		slot = (slot + 1) % LOAD_PINS;
	}
	for (slot = 0; slot < LOAD_PINS; slot++)
		cache_put(l->c, pins[slot]);
	return NULL;
}

struct watch {
	struct cache *c;
	atomic_bool *stop;
	bool ok;
	unsigned long samples;
};

static void *watch_thread(void *arg)
{
	struct watch *w = arg;

	w->ok = true;
	while (!atomic_load(w->stop)) {
		struct cache_stats st = stats(w->c);

		if (st.bytes > st.budget || st.peak_bytes > st.budget)
			w->ok = false;
		w->samples++;
		usleep(100);
	}
	return NULL;
}

START_TEST(test_budget_concurrent)
{
	struct cache *c = cache_new("data", LOAD_BUDGET, LOAD_ENTRY);
	struct load l[NTHREADS];
	pthread_t tid[NTHREADS], wid;
	atomic_bool stop = false;
	struct watch w = { .c = c, .stop = &stop };
	struct cache_stats st;
	int i;

	ck_assert_ptr_nonnull(c);
	pthread_create(&wid, NULL, watch_thread, &w);
	for (i = 0; i < NTHREADS; i++) {
		l[i] = (struct load){ .c = c,
				      .seed = 0x1234567ULL * (i + 1),
				      .ops = 40000 / slow_factor() };
		pthread_create(&tid[i], NULL, load_thread, &l[i]);
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(tid[i], NULL);
		ck_assert_msg(l[i].ok, "thread %d saw wrong data or errors", i);
	}
	atomic_store(&stop, true);
	pthread_join(wid, NULL);
	ck_assert(w.ok);

	st = stats(c);
	ck_assert_uint_le(st.peak_bytes, LOAD_BUDGET);
	ck_assert_uint_le(st.bytes, LOAD_BUDGET);
	ck_assert_uint_gt(st.peak_bytes, LOAD_BUDGET / 2);
	ck_assert_uint_gt(st.evictions, 0);
	ck_assert_uint_gt(st.hits, 0);
	printf("budget: %lu samples, peak %llu of %llu, %llu bypass, %llu evictions\n",
	       w.samples, (unsigned long long)st.peak_bytes,
	       (unsigned long long)st.budget, (unsigned long long)st.bypass,
	       (unsigned long long)st.evictions);
	cache_free(c);
}
END_TEST

/* One shard holding 4 full entries: pins take all of it. */
START_TEST(test_bypass_pinned)
{
	struct cache *c = cache_new("data", ROOM_FOR(4) + 200, ENTRY);
	struct fill_ctl ctl = { 0 };
	struct cache_entry *pins[4], *e, *e2;
	struct cache_stats st;
	uint64_t key;

	for (key = 0; key < 4; key++)
		pins[key] = get_ok(c, key, &ctl);
	st = stats(c);
	ck_assert_uint_eq(st.entries, 4);
	ck_assert_uint_eq(st.bypass, 0);

	/* Everything is pinned: served, not kept. */
	e = get_ok(c, 100, &ctl);
	ck_assert_uint_eq(cache_entry_size(e), ENTRY);
	st = stats(c);
	ck_assert_uint_eq(st.bypass, 1);
	ck_assert_uint_eq(st.entries, 4);
	ck_assert_uint_le(st.bytes, st.budget);
	ck_assert(!cache_contains(c, 100));
	/* Not in the table, so a second get fills again. */
	e2 = get_ok(c, 100, &ctl);
	ck_assert_ptr_ne(e, e2);
	ck_assert_uint_eq(stats(c).bypass, 2);
	cache_put(c, e);
	cache_put(c, e2);
	ck_assert_uint_le(stats(c).peak_bytes, st.budget);

	/* Too little is unpinned: bypass without evicting it for nothing. */
	{
		struct fill_ctl small = { .len = 100 };

		ck_assert_int_eq(cache_get(c, 150, 100, ctl_fill, &small, &e),
				 0);
		cache_put(c, e);
	}
	ck_assert(cache_contains(c, 150));
	get_put(c, 151, &ctl);
	ck_assert(cache_contains(c, 150));
	st = stats(c);
	ck_assert_uint_eq(st.bypass, 3);
	ck_assert_uint_eq(st.evictions, 0);

	/* An unpinned entry makes room again. */
	cache_put(c, pins[0]);
	get_put(c, 101, &ctl);
	st = stats(c);
	ck_assert_uint_eq(st.bypass, 3);
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert(cache_contains(c, 101));
	ck_assert(!cache_contains(c, 0));
	for (key = 1; key < 4; key++)
		cache_put(c, pins[key]);
	ck_assert_uint_le(stats(c).peak_bytes, st.budget);

	/* A fill bigger than the whole budget bypasses too. */
	e = NULL;
	ck_assert_int_eq(cache_get(c, 200, 8 * ENTRY, ctl_fill, &ctl, &e), 0);
	ck_assert(pattern_ok(200, cache_entry_data(e), cache_entry_size(e)));
	ck_assert_uint_eq(cache_entry_size(e), 8 * ENTRY);
	cache_put(c, e);
	ck_assert_uint_eq(stats(c).bypass, 4);
	cache_free(c);
}
END_TEST

START_TEST(test_budget_zero)
{
	struct cache *c = cache_new("none", 0, ENTRY);
	struct fill_ctl ctl = { 0 };
	struct cache_entry *e;
	struct cache_stats st;
	int i;

	ck_assert_ptr_nonnull(c);
	for (i = 0; i < 10; i++) {
		e = get_ok(c, 7, &ctl);
		ck_assert(!cache_contains(c, 7));
		cache_put(c, e);
	}
	ck_assert_int_eq(atomic_load(&ctl.calls), 10);
	ck_assert_int_eq(cache_prefill(c, 7, ENTRY, ctl_fill, &ctl), -ENOSPC);
	ck_assert_int_eq(atomic_load(&ctl.calls), 10);
	st = stats(c);
	ck_assert_uint_eq(st.bypass, 10);
	ck_assert_uint_eq(st.misses, 10);
	ck_assert_uint_eq(st.hits, 0);
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert_uint_eq(st.peak_bytes, 0);
	ck_assert_uint_eq(st.entries, 0);
	cache_free(c);
}
END_TEST

/* A hot set survives a one-pass scan four times the size of the cache. */
START_TEST(test_scan_resistance)
{
	const uint64_t nhot = 16, ncold = 4 * 512;
	struct cache *c = cache_new("data", ROOM_FOR(512), ENTRY);
	struct fill_ctl ctl = { 0 };
	struct cache_stats before, after;
	uint64_t k;
	int round;

	for (round = 0; round < 4; round++)
		for (k = 0; k < nhot; k++)
			get_put(c, k * 131072, &ctl);
	for (k = 0; k < ncold; k++)
		get_put(c, (1000 + k) * 131072, &ctl);
	before = stats(c);
	ck_assert_uint_gt(before.evictions, ncold / 2);
	for (k = 0; k < nhot; k++) {
		ck_assert_msg(cache_contains(c, k * 131072),
			      "hot key %llu was evicted by a scan",
			      (unsigned long long)k);
		get_put(c, k * 131072, &ctl);
	}
	after = stats(c);
	ck_assert_uint_eq(after.misses, before.misses);
	ck_assert_uint_eq(after.hits, before.hits + nhot);
	ck_assert_uint_le(after.peak_bytes, after.budget);
	cache_free(c);
}
END_TEST

/*
 * One shard of 12 entries: a key evicted from the small queue and missed
 * again soon after is remembered by the ghost table and goes to the main
 * queue, where a later scan does not reach it.
 */
START_TEST(test_ghost_readmission)
{
	struct cache *c = cache_new("data", ROOM_FOR(12), ENTRY);
	struct fill_ctl ctl = { 0 };
	uint64_t k;

	get_put(c, 1, &ctl);
	for (k = 0; k < 12; k++)
		get_put(c, 1000 + k, &ctl);
	ck_assert(!cache_contains(c, 1));
	get_put(c, 1, &ctl);
	for (k = 0; k < 100; k++)
		get_put(c, 2000 + k, &ctl);
	ck_assert(cache_contains(c, 1));
	ck_assert(!cache_contains(c, 2000));
	cache_free(c);
}
END_TEST

START_TEST(test_prefill_basic)
{
	struct cache *c = cache_new("data", ROOM_FOR(64), ENTRY);
	struct fill_ctl ctl = { 0 };
	struct cache_stats st;

	ck_assert_int_eq(cache_prefill(c, 8192, ENTRY, ctl_fill, &ctl), 0);
	ck_assert(cache_contains(c, 8192));
	ck_assert_int_eq(cache_prefill(c, 8192, ENTRY, ctl_fill, &ctl),
			 -EEXIST);
	get_put(c, 8192, &ctl);
	ck_assert_int_eq(atomic_load(&ctl.calls), 1);
	st = stats(c);
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 0);
	ck_assert_uint_eq(st.entries, 1);

	ctl.err = -EIO;
	ck_assert_int_eq(cache_prefill(c, 1, ENTRY, ctl_fill, &ctl), -EIO);
	ck_assert(!cache_contains(c, 1));
	cache_free(c);
}
END_TEST

struct blocked_get {
	struct cache *c;
	struct fill_ctl *ctl;
	uint64_t key;
	int err;
};

static void *blocked_get_thread(void *arg)
{
	struct blocked_get *b = arg;
	struct cache_entry *e = NULL;

	b->err = cache_get(b->c, b->key, ENTRY, ctl_fill, b->ctl, &e);
	if (!b->err &&
	    !pattern_ok(b->key, cache_entry_data(e), cache_entry_size(e)))
		b->err = -EBADMSG;
	cache_put(b->c, e);
	return NULL;
}

static void *prefill_thread(void *arg)
{
	struct blocked_get *b = arg;

	b->err = cache_prefill(b->c, b->key, ENTRY, ctl_fill, b->ctl);
	return NULL;
}

/* Prefill never waits for a pending fill, and a get waits for a prefill. */
START_TEST(test_prefill_pending)
{
	struct cache *c = cache_new("data", ROOM_FOR(64), ENTRY);
	sem_t gate;
	struct fill_ctl ctl = { .gate = &gate };
	struct fill_ctl other = { 0 };
	struct blocked_get b = { .c = c, .ctl = &ctl, .key = 5 };
	struct blocked_get b2 = { .c = c, .ctl = &other, .key = 6 };
	pthread_t t, t2;

	sem_init(&gate, 0, 0);
	pthread_create(&t, NULL, blocked_get_thread, &b);
	wait_calls(&ctl, 1);
	ck_assert(cache_contains(c, 5));
	ck_assert_int_eq(cache_prefill(c, 5, ENTRY, ctl_fill, &other), -EEXIST);
	ck_assert_int_eq(atomic_load(&other.calls), 0);
	sem_post(&gate);
	pthread_join(t, NULL);
	ck_assert_int_eq(b.err, 0);

	/* A get that comes while a prefill runs waits for it. */
	b.key = 6;
	b.ctl = &ctl;
	atomic_store(&ctl.calls, 0);
	pthread_create(&t, NULL, prefill_thread, &b);
	wait_calls(&ctl, 1);
	pthread_create(&t2, NULL, blocked_get_thread, &b2);
	wait_waiters(c, 0, 1);
	sem_post(&gate);
	pthread_join(t, NULL);
	pthread_join(t2, NULL);
	ck_assert_int_eq(b.err, 0);
	ck_assert_int_eq(b2.err, 0);
	ck_assert_int_eq(atomic_load(&ctl.calls), 1);
	ck_assert_int_eq(atomic_load(&other.calls), 0);
	sem_destroy(&gate);
	cache_free(c);
}
END_TEST

/* One shard of 4 entries: prefill must not push out entries that were hit. */
START_TEST(test_prefill_enospc)
{
	struct cache *c = cache_new("data", ROOM_FOR(4) + 200, ENTRY);
	struct fill_ctl ctl = { 0 };
	struct cache_stats st;
	uint64_t k;
	int round, present = 0;

	for (round = 0; round < 3; round++)
		for (k = 0; k < 4; k++)
			get_put(c, k, &ctl);
	ck_assert_int_eq(cache_prefill(c, 10, ENTRY, ctl_fill, &ctl), -ENOSPC);
	ck_assert(!cache_contains(c, 10));
	st = stats(c);
	ck_assert_uint_eq(st.evictions, 0);
	for (k = 0; k < 4; k++)
		get_put(c, k, &ctl);
	ck_assert_uint_eq(stats(c).misses, 4);

	/* A demand miss may evict a hot entry; it lands in S. */
	get_put(c, 20, &ctl);
	ck_assert_uint_eq(stats(c).evictions, 1);
	/* A prefill displaces the cold S entry, not the hot ones. */
	ck_assert_int_eq(cache_prefill(c, 21, ENTRY, ctl_fill, &ctl), 0);
	ck_assert(!cache_contains(c, 20));
	ck_assert(cache_contains(c, 21));
	for (k = 0; k < 4; k++)
		present += cache_contains(c, k);
	ck_assert_int_eq(present, 3);
	st = stats(c);
	get_put(c, 21, &ctl);
	ck_assert_uint_eq(stats(c).hits, st.hits + 1);
	ck_assert_uint_eq(stats(c).misses, st.misses);
	ck_assert_uint_le(stats(c).peak_bytes, st.budget);
	cache_free(c);
}
END_TEST

START_TEST(test_free_many)
{
	struct cache *c = cache_new("data", 64 * 1024 * 1024, ENTRY);
	struct fill_ctl ok = { .len = 64 };
	struct fill_ctl bad = { .err = -EFSCORRUPTED };
	struct cache_entry *e;
	uint64_t k;

	for (k = 0; k < 50000; k++) {
		if (k % 10 == 9) {
			ck_assert_int_eq(cache_get(c, k, ENTRY, ctl_fill, &bad,
						   &e),
					 -EFSCORRUPTED);
		} else if (k % 10 == 8) {
			ck_assert_int_eq(
				cache_prefill(c, k, ENTRY, ctl_fill, &ok), 0);
		} else {
			get_put(c, k, &ok);
		}
	}
	ck_assert_uint_eq(stats(c).entries, 50000);
	ck_assert_uint_eq(stats(c).evictions, 0);
	cache_free(c);
}
END_TEST

/* NTHREADS threads of random gets over a key space 4x the budget. */
#define STRESS_BUDGET (2 * 1024 * 1024)
#define STRESS_ENTRY 4096
/* Keys are offsets; entries average STRESS_ENTRY / 2 bytes. */
#define STRESS_KEYS (4 * STRESS_BUDGET / (STRESS_ENTRY / 2))

struct stress {
	struct cache *c;
	uint64_t seed;
	unsigned int ops;
	atomic_int *fills;
	unsigned long bad;
	unsigned long errors;
};

static void *stress_thread(void *arg)
{
	struct stress *t = arg;
	uint64_t rng = t->seed;
	unsigned int i;

	for (i = 0; i < t->ops; i++) {
		uint64_t key = (rng_next(&rng) % STRESS_KEYS) * STRESS_ENTRY;
		struct cache_entry *e;
		int err;

		if ((t->seed & 3) == 3 && rng_next(&rng) % 4 == 0) {
			err = cache_prefill(t->c, key, STRESS_ENTRY, key_fill,
					    t->fills);
			if (err && err != -EEXIST && err != -ENOSPC &&
			    !(err == -EFSCORRUPTED && key_corrupt(key)) &&
			    !(err == -EIO && key_flaky(key)))
				t->bad++;
			continue;
		}
		err = cache_get(t->c, key, STRESS_ENTRY, key_fill, t->fills,
				&e);
		if (err) {
			t->errors++;
			if (!(err == -EFSCORRUPTED && key_corrupt(key)) &&
			    !(err == -EIO && key_flaky(key)))
				t->bad++;
			continue;
		}
		if (key_corrupt(key) || key_flaky(key) ||
		    cache_entry_size(e) != key_len(key, STRESS_ENTRY) ||
		    !pattern_ok(key, cache_entry_data(e), cache_entry_size(e)))
			t->bad++;
		cache_put(t->c, e);
	}
	return NULL;
}

START_TEST(test_stress)
{
	struct cache *c = cache_new("data", STRESS_BUDGET, STRESS_ENTRY);
	struct stress t[NTHREADS];
	pthread_t tid[NTHREADS];
	atomic_int fills = 0;
	struct cache_stats st;
	uint64_t gets = 0;
	int i;

	for (i = 0; i < NTHREADS; i++) {
		t[i] = (struct stress){ .c = c,
					.seed = 0xdeadbeefULL + i,
					.ops = 200000 / slow_factor(),
					.fills = &fills };
		pthread_create(&tid[i], NULL, stress_thread, &t[i]);
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(tid[i], NULL);
		ck_assert_msg(t[i].bad == 0, "thread %d: %lu bad results", i,
			      t[i].bad);
	}
	st = stats(c);
	ck_assert_uint_le(st.peak_bytes, STRESS_BUDGET);
	ck_assert_uint_le(st.bytes, STRESS_BUDGET);
	ck_assert_uint_gt(st.evictions, 0);
	/* Every fill is one miss or one prefill; no hidden refills. */
	ck_assert_uint_le(st.misses, (uint64_t)atomic_load(&fills));
	for (i = 0; i < NTHREADS; i++)
		gets += t[i].errors;
	printf("stress: %llu hits, %llu misses, %llu waits, %llu evictions, "
	       "%llu bypass, %llu fill errors, %llu get errors, peak %llu\n",
	       (unsigned long long)st.hits, (unsigned long long)st.misses,
	       (unsigned long long)st.waits, (unsigned long long)st.evictions,
	       (unsigned long long)st.bypass,
	       (unsigned long long)st.fill_errors, (unsigned long long)gets,
	       (unsigned long long)st.peak_bytes);
	cache_free(c);
}
END_TEST

/* Informative: the cost of a get + put pair that hits. */
struct bench {
	struct cache *c;
	unsigned int ops;
	unsigned int nkeys;
	uint64_t seed;
	double cpu_ns; /* CPU time the thread used */
};

static int bench_fill(void *arg, uint64_t key, void *buf, size_t cap,
		      size_t *len)
{
	(void)arg;
	(void)key;
	memset(buf, 0, cap);
	*len = cap;
	return 0;
}

static double clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *bench_thread(void *arg)
{
	struct bench *b = arg;
	uint64_t rng = b->seed;
	unsigned int i;

	for (i = 0; i < b->ops; i++) {
		uint64_t key = (rng_next(&rng) % b->nkeys) * 131072;
		struct cache_entry *e;

		if (cache_get(b->c, key, 64, bench_fill, NULL, &e) == 0)
			cache_put(b->c, e);
	}
	b->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

static void bench_run(struct cache *c, int nthreads, unsigned int nkeys)
{
	const unsigned int ops = 2000000;
	struct bench b[NTHREADS];
	pthread_t tid[NTHREADS];
	double t0, t1, cpu = 0;
	int i;

	t0 = clock_ns(CLOCK_MONOTONIC);
	for (i = 0; i < nthreads; i++) {
		b[i] = (struct bench){ .c = c,
				       .ops = ops / nthreads,
				       .nkeys = nkeys,
				       .seed = 99 + i };
		pthread_create(&tid[i], NULL, bench_thread, &b[i]);
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(tid[i], NULL);
		cpu += b[i].cpu_ns;
	}
	t1 = clock_ns(CLOCK_MONOTONIC);
	/* Wall time per pair (all threads), and CPU time per pair. */
	printf("bench: %d thread(s), %4u key(s): %6.1f ns/op wall, "
	       "%6.1f ns/op CPU\n",
	       nthreads, nkeys, (t1 - t0) / ops, cpu / ops);
}

START_TEST(test_bench_hit_path)
{
	struct cache *c;
	struct cache_entry *e;
	uint64_t k;

	if (slow_factor() > 1)
		return;
	c = cache_new("bench", 64 * 1024 * 1024, 64 * 1024);
	for (k = 0; k < 1024; k++) {
		ck_assert_int_eq(
			cache_get(c, k * 131072, 64, bench_fill, NULL, &e), 0);
		cache_put(c, e);
	}
	bench_run(c, 1, 1024);
	bench_run(c, 2, 1024);
	bench_run(c, 8, 1024);
	bench_run(c, 1, 1);
	bench_run(c, 2, 1);
	bench_run(c, 8, 1);
	ck_assert_uint_eq(stats(c).misses, 1024);
	cache_free(c);
}
END_TEST

/* THREADS: the case runs threads of its own (TSan runs only those). */
#define THREADS true

static void add_case(Suite *s, const char *name, const TTest *test,
		     double timeout, bool threads)
{
	TCase *tc = tcase_create(name);

	if (threads)
		tcase_set_tags(tc, "threads");
	tcase_set_timeout(tc, timeout);
	tcase_add_test(tc, test);
	suite_add_tcase(s, tc);
}

static Suite *cache_suite(void)
{
	Suite *s = suite_create("cache");

	add_case(s, "basics", test_basics, 10, false);
	add_case(s, "hit_miss", test_hit_miss, 10, false);
	add_case(s, "data_integrity", test_data_integrity, 10, false);
	add_case(s, "single_flight", test_single_flight, 20, THREADS);
	add_case(s, "single_flight_error", test_single_flight_error, 20,
		 THREADS);
	add_case(s, "again_refilled", test_again_refilled, 20, THREADS);
	add_case(s, "eio_not_remembered", test_eio_not_remembered, 10, false);
	add_case(s, "corrupt_remembered", test_corrupt_remembered, 10, false);
	add_case(s, "budget_concurrent", test_budget_concurrent, 120, THREADS);
	add_case(s, "bypass_pinned", test_bypass_pinned, 10, false);
	add_case(s, "budget_zero", test_budget_zero, 10, false);
	add_case(s, "scan_resistance", test_scan_resistance, 30, false);
	add_case(s, "ghost_readmission", test_ghost_readmission, 10, false);
	add_case(s, "prefill_basic", test_prefill_basic, 10, false);
	add_case(s, "prefill_pending", test_prefill_pending, 20, THREADS);
	add_case(s, "prefill_enospc", test_prefill_enospc, 10, false);
	add_case(s, "free_many", test_free_many, 60, false);
	add_case(s, "stress", test_stress, 300, THREADS);
	add_case(s, "bench_hit_path", test_bench_hit_path, 120, THREADS);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cache_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

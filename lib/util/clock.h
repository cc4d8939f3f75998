/* SPDX-License-Identifier: MIT */
/*
 * This file has the monotonic clock helpers the library, the daemon,
 * mountctl and the Slurm node side share: a reading, the time in
 * nanoseconds or in seconds, seconds elapsed since a reading, and a sleep
 * that signals do not cut short; and the deadlines that
 * pthread_cond_timedwait() takes: CLOCK_REALTIME by default,
 * CLOCK_MONOTONIC for a condition variable made by cond_init_mono().
 */
#ifndef SQC_UTIL_CLOCK_H
#define SQC_UTIL_CLOCK_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

/**
 * mono_now() - Read CLOCK_MONOTONIC.
 * @t: filled in
 *
 * Context: any thread.
 */
static inline void mono_now(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

/**
 * mono_ns() - CLOCK_MONOTONIC in nanoseconds.
 *
 * Return: nanoseconds since an unspecified start (boot, on Linux).
 * Context: any thread.
 */
static inline int64_t mono_ns(void)
{
	struct timespec t;

	mono_now(&t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/**
 * mono_sec() - CLOCK_MONOTONIC in seconds, for deadlines kept as a double
 * ("mono_sec() + 5.0").
 *
 * Return: seconds since an unspecified start (boot, on Linux).
 * Context: any thread; cannot fail.
 */
static inline double mono_sec(void)
{
	return (double)mono_ns() / 1e9;
}

/**
 * sleep_ms() - Sleep for @ms milliseconds, the whole time even if signals
 * arrive.
 * @ms: milliseconds, >= 0
 *
 * Context: any thread; cannot fail.
 */
static inline void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/**
 * mono_since() - Seconds elapsed since a CLOCK_MONOTONIC reading.
 * @t0: the earlier reading
 *
 * Return: now - @t0, in seconds.
 * Context: any thread.
 */
static inline double mono_since(const struct timespec *t0)
{
	struct timespec t;

	mono_now(&t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Add @ms (>= 0) milliseconds to @t. */
static inline void timespec_add_ms(struct timespec *t, long ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000;
	if (t->tv_nsec >= 1000000000) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000;
	}
}

/**
 * deadline_in_ms() - The CLOCK_REALTIME time @ms milliseconds from now.
 * @t: filled in, for pthread_cond_timedwait()
 * @ms: milliseconds, >= 0
 *
 * Context: any thread.
 */
static inline void deadline_in_ms(struct timespec *t, long ms)
{
	clock_gettime(CLOCK_REALTIME, t);
	timespec_add_ms(t, ms);
}

/**
 * mono_deadline_in_ms() - The CLOCK_MONOTONIC time @ms milliseconds from
 * now, for a condition variable made by cond_init_mono() (a deadline that
 * a step of the wall clock does not move).
 * @t: filled in
 * @ms: milliseconds, >= 0
 *
 * Context: any thread.
 */
static inline void mono_deadline_in_ms(struct timespec *t, long ms)
{
	mono_now(t);
	timespec_add_ms(t, ms);
}

/**
 * cond_init_mono() - Initialise a condition variable whose timed waits
 * take CLOCK_MONOTONIC deadlines (mono_deadline_in_ms()).
 * @c: the condition variable
 *
 * Context: any thread.
 */
static inline void cond_init_mono(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

#endif /* SQC_UTIL_CLOCK_H */

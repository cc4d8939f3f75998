/* SPDX-License-Identifier: MIT */
/*
 * This file has the one clock helper the library and the daemon share:
 * seconds elapsed on the monotonic clock.
 */
#ifndef SQC_UTIL_CLOCK_H
#define SQC_UTIL_CLOCK_H

#include <time.h>

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

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

#endif /* SQC_UTIL_CLOCK_H */

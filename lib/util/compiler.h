/* SPDX-License-Identifier: MIT */
/*
 * This file implements the small compiler helpers every module uses:
 * branch hints, printf checking, array sizes and a few min/max macros.
 */
#ifndef SQC_UTIL_COMPILER_H
#define SQC_UTIL_COMPILER_H

#include <stddef.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define __printf(a, b) __attribute__((format(printf, a, b)))
#define __unused __attribute__((unused))
#define __must_check __attribute__((warn_unused_result))
#define __noinline __attribute__((noinline))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

#endif /* SQC_UTIL_COMPILER_H */

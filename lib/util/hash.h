/* SPDX-License-Identifier: MIT */
/*
 * This file has the one string hash of the project: 64-bit FNV-1a.  The
 * control socket's default address is made from it (ctl.h), so its value
 * for a given string must never change.
 */
#ifndef SQC_UTIL_HASH_H
#define SQC_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a of @len bytes at @p. */
static inline uint64_t fnv1a64(const void *p, size_t len)
{
	const unsigned char *c = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ c[i]) * 1099511628211ull;
	return h;
}

#endif /* SQC_UTIL_HASH_H */

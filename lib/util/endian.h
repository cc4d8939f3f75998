/* SPDX-License-Identifier: MIT */
/*
 * This file implements little-endian field types for on-disk structures.
 *
 * SquashFS stores every integer little-endian and unaligned.  An on-disk
 * struct declares its fields as struct le16/le32/le64, which are byte arrays:
 * the only way to get a number out of one is le16_dec() and friends, so a
 * raw field can never be used by mistake as a native integer.  That gives the
 * checking that the kernel gets from __le32 and sparse, with a plain compiler.
 */
#ifndef SQC_UTIL_ENDIAN_H
#define SQC_UTIL_ENDIAN_H

#include <stdint.h>

struct le16 {
	uint8_t b[2];
};

struct le32 {
	uint8_t b[4];
};

struct le64 {
	uint8_t b[8];
};

static inline uint16_t le16_dec(struct le16 v)
{
	return (uint16_t)(v.b[0] | (unsigned int)v.b[1] << 8);
}

static inline uint32_t le32_dec(struct le32 v)
{
	return (uint32_t)v.b[0] | (uint32_t)v.b[1] << 8 |
	       (uint32_t)v.b[2] << 16 | (uint32_t)v.b[3] << 24;
}

static inline uint64_t le64_dec(struct le64 v)
{
	uint64_t r = 0;

	for (int i = 7; i >= 0; i--)
		r = r << 8 | v.b[i];
	return r;
}

/* Decode from a raw byte pointer, for arrays of plain numbers. */
static inline uint16_t le16_get(const void *p)
{
	const uint8_t *b = p;

	return (uint16_t)(b[0] | (unsigned int)b[1] << 8);
}

static inline uint32_t le32_get(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static inline uint64_t le64_get(const void *p)
{
	const uint8_t *b = p;

	return (uint64_t)le32_get(b) | (uint64_t)le32_get(b + 4) << 32;
}

/* Encoders, used by tests and tools that write images. */
static inline void le16_put(void *p, uint16_t v)
{
	uint8_t *b = p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static inline void le32_put(void *p, uint32_t v)
{
	uint8_t *b = p;

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static inline void le64_put(void *p, uint64_t v)
{
	uint8_t *b = p;

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

#endif /* SQC_UTIL_ENDIAN_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file implements the private interface between the decompressor
 * registry (registry.c) and the codec files (zlib.c, xz.c, lz4.c, lzo.c,
 * zstd.c): the codec descriptor and the helpers every codec shares.
 *
 * A codec file defines one const struct dec_codec per compressor id it
 * serves and does nothing else that is visible outside it.  The registry
 * owns the id -> codec table and the "unknown (id N)" entries.
 */
#ifndef SQC_DECOMPRESS_DECOMPRESS_I_H
#define SQC_DECOMPRESS_DECOMPRESS_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decompress/decompress.h"

/*
 * Size of the buffer that holds the name of an unknown codec:
 * "unknown (id 4294967295)" plus the terminating NUL.
 */
#define DEC_NAME_MAX 24

/*
 * One compressor.  Known codecs are const and statically allocated; entries
 * for unknown ids are filled in once by the registry and never change
 * afterwards, so every field may be read without a lock.
 */
struct dec_codec {
	const char *name; /* as mksquashfs spells it; never NULL */
	unsigned int id; /* SquashFS compressor id */
	bool supported; /* false: both callbacks are NULL */

	/*
	 * Validate the compressor options block (@opts, @len bytes).
	 * Return: 0, -EFSCORRUPTED (malformed) or -ENOTSUP (valid, but asks
	 * for something this reader cannot do).  NULL: no options defined.
	 */
	int (*check_options)(const void *opts, size_t len);

	/*
	 * Decompress @src_len bytes at @src into at most @dst_cap bytes at
	 * @dst and store the output length in *@out_len.  Must not read or
	 * write outside either buffer whatever @src holds.
	 * Return: 0, -EFSCORRUPTED or -ENOMEM.
	 */
	int (*decompress)(const void *src, size_t src_len, void *dst,
			  size_t dst_cap, size_t *out_len);

	char name_buf[DEC_NAME_MAX]; /* storage of @name for unknown ids */
};

/* The codecs, one per file (zlib.c, xz.c, lzo.c, lz4.c, zstd.c). */
extern const struct dec_codec dec__gzip;
extern const struct dec_codec dec__lzma;
extern const struct dec_codec dec__lzo;
extern const struct dec_codec dec__xz;
extern const struct dec_codec dec__lz4;
extern const struct dec_codec dec__zstd;

/*
 * Memory limit for decoders whose state size comes from the stream header
 * (xz and lzma).  SquashFS blocks are at most 1 MiB, so real images need a
 * few MiB at most; the limit keeps a hostile header from asking for GiBs.
 */
#define DEC_MEMLIMIT (64u << 20)

#endif /* SQC_DECOMPRESS_DECOMPRESS_I_H */

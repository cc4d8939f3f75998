// SPDX-License-Identifier: MIT
/*
 * This file implements the "lz4" codec (SquashFS compressor id 5): each
 * block is one raw LZ4 block, as LZ4_compress_default() or LZ4_compress_HC()
 * make it, with no frame around it, decoded with LZ4_decompress_safe().
 *
 * An LZ4 block carries neither its size nor a checksum.  The decoder does
 * require the last sequence to end exactly at the end of the input, so
 * short or overlong input is refused, but a flipped bit inside literals
 * decodes to wrong bytes of the right length; the caller's length check
 * and the image's structure are all the checking there is.
 *
 * mksquashfs always writes an options block for lz4:
 *	le32 version	1 (LZ4_LEGACY, the only one defined)
 *	le32 flags	bit 0: made with LZ4 HC
 */
#define LOG_MOD "decompress"

#include <limits.h>
#include <lz4.h>

#include "decompress/decompress_i.h"
#include "util/compiler.h"
#include "util/endian.h"
#include "util/err.h"
#include "util/log.h"

#define LZ4_OPTS_LEN 8 /* bytes in the options block */
#define LZ4_OPTS_VERSION 1 /* LZ4_LEGACY */
#define LZ4_OPTS_FLAGS_KNOWN 0x1u /* bit 0: LZ4 HC */

static int lz4_decompress(const void *src, size_t src_len, void *dst,
			  size_t dst_cap, size_t *out_len)
{
	int n;

	/* LZ4 counts in int; no SquashFS block comes near 2 GiB. */
	if (src_len > INT_MAX)
		return -EFSCORRUPTED;
	dst_cap = MIN(dst_cap, (size_t)INT_MAX);

	n = LZ4_decompress_safe(src, dst, (int)src_len, (int)dst_cap);
	if (n < 0)
		return -EFSCORRUPTED;
	*out_len = (size_t)n;
	return 0;
}

static int lz4_check_options(const void *opts, size_t len)
{
	uint32_t version;
	uint32_t flags;

	if (len != LZ4_OPTS_LEN) {
		log_debug("lz4 options: length %zu, expected %d", len,
			  LZ4_OPTS_LEN);
		return -EFSCORRUPTED;
	}
	version = le32_get(opts);
	flags = le32_get((const uint8_t *)opts + 4);
	if (version != LZ4_OPTS_VERSION) {
		log_debug("lz4 options: unknown version %u", version);
		return -ENOTSUP;
	}
	if (flags & ~LZ4_OPTS_FLAGS_KNOWN) {
		log_debug("lz4 options: unknown flags 0x%x",
			  flags & ~LZ4_OPTS_FLAGS_KNOWN);
		return -ENOTSUP;
	}
	return 0;
}

const struct dec_codec dec__lz4 = {
	.name = "lz4",
	.id = DEC_ID_LZ4,
	.supported = true,
	.check_options = lz4_check_options,
	.decompress = lz4_decompress,
};

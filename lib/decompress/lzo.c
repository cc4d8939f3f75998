// SPDX-License-Identifier: MIT
/*
 * This file implements the "lzo" codec (SquashFS compressor id 3): each
 * block is raw LZO1X data, decoded with liblzo2's lzo1x_decompress_safe(),
 * which checks every input and output bound and needs no work memory.
 *
 * liblzo2 must be initialised once with lzo_init(), which checks that the
 * library and these headers agree; if they do not, every call fails with
 * -ENOTSUP and the reason is logged once.
 *
 * The options block mksquashfs writes when the options differ from the
 * defaults (lzo1x_999 at level 8) is
 *	le32 algorithm		0 lzo1x_1, 1 lzo1x_1_11, 2 lzo1x_1_12,
 *				3 lzo1x_1_15, 4 lzo1x_999
 *	le32 compression level	1..9 for lzo1x_999, 0 for the others
 * All five algorithms write the same LZO1X format.  An algorithm number
 * beyond them may be a format this decoder does not read.
 */
#define LOG_MOD "decompress"

#include <lzo/lzo1x.h>
#include <pthread.h>

#include "decompress/decompress_i.h"
#include "util/endian.h"
#include "util/err.h"
#include "util/log.h"

#define LZO_OPTS_LEN 8 /* bytes in the options block */
#define LZO_ALG_1X_999 4 /* the one algorithm that takes a level */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_err; /* lzo_init() result; set once by init_once */

static void lzo_init_once(void)
{
	init_err = lzo_init();
	if (init_err != LZO_E_OK)
		log_err("cannot initialise liblzo2: error %d", init_err);
}

static int lzo_decompress(const void *src, size_t src_len, void *dst,
			  size_t dst_cap, size_t *out_len)
{
	lzo_uint n = dst_cap;
	int lret;

	pthread_once(&init_once, lzo_init_once);
	if (init_err != LZO_E_OK)
		return -ENOTSUP;

	/*
	 * Any result but LZO_E_OK is corruption: an overrun of input,
	 * output or look-behind, a missing end marker, or bytes after it
	 * (LZO_E_INPUT_NOT_CONSUMED).
	 */
	lret = lzo1x_decompress_safe(src, src_len, dst, &n, NULL);
	if (lret != LZO_E_OK)
		return -EFSCORRUPTED;
	*out_len = n;
	return 0;
}

static int lzo_check_options(const void *opts, size_t len)
{
	uint32_t alg;
	uint32_t level;

	if (len != LZO_OPTS_LEN) {
		log_debug("lzo options: length %zu, expected %d", len,
			  LZO_OPTS_LEN);
		return -EFSCORRUPTED;
	}
	alg = le32_get(opts);
	level = le32_get((const uint8_t *)opts + 4);
	if (alg > LZO_ALG_1X_999) {
		log_debug("lzo options: unknown algorithm %u", alg);
		return -ENOTSUP;
	}
	/* The rule mksquashfs and squashfs-tools-ng both apply on reading. */
	if (alg == LZO_ALG_1X_999 ? level < 1 || level > 9 : level != 0) {
		log_debug("lzo options: bad level %u for algorithm %u", level,
			  alg);
		return -EFSCORRUPTED;
	}
	return 0;
}

const struct dec_codec dec__lzo = {
	.name = "lzo",
	.id = DEC_ID_LZO,
	.supported = true,
	.check_options = lzo_check_options,
	.decompress = lzo_decompress,
};

// SPDX-License-Identifier: MIT
/*
 * This file implements the "zstd" codec (SquashFS compressor id 6): each
 * block is a zstd frame, as ZSTD_compressCCtx() makes it, decoded in one
 * shot with ZSTD_decompressDCtx().
 *
 * Each thread keeps one ZSTD_DCtx, made on its first block and freed by a
 * pthread key destructor when the thread exits; if the key cannot be made,
 * each call uses a context of its own.  One-shot decoding writes straight
 * into the caller's buffer, so the window size a frame asks for costs no
 * memory.  A frame that states its content size must produce exactly that
 * many bytes; the library checks it.  Bytes after the last frame that do
 * not form another frame are corruption.
 *
 * The options block mksquashfs writes when the level is not the default
 * (15) is
 *	le32 compression level	1..ZSTD_maxCLevel()
 * The level does not change how a block is decoded.
 */
#define LOG_MOD "decompress"

#include <pthread.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "decompress/decompress_i.h"
#include "util/endian.h"
#include "util/err.h"
#include "util/log.h"

#define ZSTD_OPTS_LEN 4 /* bytes in the options block */

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key; /* this thread's ZSTD_DCtx; set once by key_once */
static int key_err; /* pthread_key_create() result; set once by key_once */

static void dctx_free(void *p)
{
	ZSTD_freeDCtx(p);
}

static void key_make(void)
{
	key_err = pthread_key_create(&key, dctx_free);
}

/*
 * Get this thread's context.  *@own is set when the context could not be
 * attached to the thread and the caller must free it.
 */
static ZSTD_DCtx *dctx_get(bool *own)
{
	ZSTD_DCtx *dctx;

	*own = false;
	pthread_once(&key_once, key_make);
	if (key_err)
		goto out_own;

	dctx = pthread_getspecific(key);
	if (dctx)
		return dctx;
	dctx = ZSTD_createDCtx();
	if (!dctx)
		return NULL;
	if (pthread_setspecific(key, dctx) == 0)
		return dctx;
	ZSTD_freeDCtx(dctx);
out_own:
	*own = true;
	return ZSTD_createDCtx();
}

static int zstd_decompress(const void *src, size_t src_len, void *dst,
			   size_t dst_cap, size_t *out_len)
{
	ZSTD_DCtx *dctx;
	size_t n;
	bool own;
	int ret;

	dctx = dctx_get(&own);
	if (!dctx)
		return -ENOMEM;

	/*
	 * A one-shot call starts from a clean frame state, so a context
	 * left mid-frame by an earlier error needs no reset.  Every error
	 * but a failed allocation is the input's.
	 */
	n = ZSTD_decompressDCtx(dctx, dst, dst_cap, src, src_len);
	if (ZSTD_isError(n)) {
		ret = ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ?
			      -ENOMEM :
			      -EFSCORRUPTED;
	} else {
		*out_len = n;
		ret = 0;
	}

	if (own)
		ZSTD_freeDCtx(dctx);
	return ret;
}

static int zstd_check_options(const void *opts, size_t len)
{
	uint32_t level;

	if (len != ZSTD_OPTS_LEN) {
		log_debug("zstd options: length %zu, expected %d", len,
			  ZSTD_OPTS_LEN);
		return -EFSCORRUPTED;
	}
	/* The rule mksquashfs applies when it reads the block back. */
	level = le32_get(opts);
	if (level < 1 || level > (uint32_t)ZSTD_maxCLevel()) {
		log_debug("zstd options: bad compression level %u", level);
		return -EFSCORRUPTED;
	}
	return 0;
}

const struct dec_codec dec__zstd = {
	.name = "zstd",
	.id = DEC_ID_ZSTD,
	.supported = true,
	.check_options = zstd_check_options,
	.decompress = zstd_decompress,
};

// SPDX-License-Identifier: MIT
/*
 * This file implements the "gzip" codec (SquashFS compressor id 1): each
 * block is a zlib stream (deflate data with the two-byte zlib header and
 * the Adler-32 trailer), decoded with zlib's inflate().
 *
 * Setting up an inflate state costs more than inflating a metadata block,
 * so each thread keeps one z_stream, made on its first block, reset with
 * inflateReset() before every block and freed by a pthread key destructor
 * when the thread exits.  If the key cannot be made, each call uses a
 * stream of its own.
 *
 * The options block mksquashfs writes when the options differ from the
 * defaults (level 9, window 15, no strategies) is
 *	le32 compression level	1..9
 *	le16 window size	8..15 (log2 of the window in bytes)
 *	le16 strategies		bitmask: default 1, filtered 2, huffman_only 4,
 *				run_length_encoded 8, fixed 16
 * None of these changes how a block is decoded (the zlib header carries
 * the window size), so unknown strategy bits are accepted.
 */
#define LOG_MOD "decompress"
#define ZLIB_CONST

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <zlib.h>

#include "decompress/decompress_i.h"
#include "util/compiler.h"
#include "util/endian.h"
#include "util/err.h"
#include "util/log.h"

#define GZIP_OPTS_LEN 8 /* bytes in the options block */

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key; /* this thread's z_stream; set once by key_once */
static int key_err; /* pthread_key_create() result; set once by key_once */

static void stream_free(void *p)
{
	z_stream *zs = p;

	inflateEnd(zs);
	free(zs);
}

static void key_make(void)
{
	key_err = pthread_key_create(&key, stream_free);
}

static z_stream *stream_new(void)
{
	z_stream *zs = calloc(1, sizeof(*zs));

	if (!zs)
		return NULL;
	if (inflateInit(zs) != Z_OK) {
		free(zs);
		return NULL;
	}
	return zs;
}

/*
 * Get this thread's stream, ready for a new block.  *@own is set when the
 * stream could not be attached to the thread and the caller must free it.
 */
static z_stream *stream_get(bool *own)
{
	z_stream *zs;

	*own = false;
	pthread_once(&key_once, key_make);
	if (key_err)
		goto out_own;

	zs = pthread_getspecific(key);
	if (zs) {
		if (inflateReset(zs) == Z_OK)
			return zs;
		/* Cannot happen with a valid stream; start afresh. */
		pthread_setspecific(key, NULL);
		stream_free(zs);
	}
	zs = stream_new();
	if (!zs)
		return NULL;
	if (pthread_setspecific(key, zs) == 0)
		return zs;
	stream_free(zs);
out_own:
	*own = true;
	return stream_new();
}

static int gzip_decompress(const void *src, size_t src_len, void *dst,
			   size_t dst_cap, size_t *out_len)
{
	unsigned char dummy;
	z_stream *zs;
	bool own;
	int zret;
	int ret;

	/* zlib counts in uInt; no SquashFS block comes near 4 GiB. */
	if (src_len > UINT_MAX)
		return -EFSCORRUPTED;
	dst_cap = MIN(dst_cap, (size_t)UINT_MAX);

	zs = stream_get(&own);
	if (!zs)
		return -ENOMEM;

	zs->next_in = src;
	zs->avail_in = (uInt)src_len;
	/* inflate() refuses a NULL next_out even with no room in it. */
	zs->next_out = dst_cap ? dst : &dummy;
	zs->avail_out = (uInt)dst_cap;

	zret = inflate(zs, Z_FINISH);
	switch (zret) {
	case Z_STREAM_END:
		/* Bytes after the Adler-32 trailer are not ours to ignore. */
		if (zs->avail_in) {
			ret = -EFSCORRUPTED;
			break;
		}
		*out_len = dst_cap - zs->avail_out;
		ret = 0;
		break;
	case Z_MEM_ERROR:
		ret = -ENOMEM;
		break;
	default:
		/*
		 * Z_OK and Z_BUF_ERROR: the output did not fit or the input
		 * ended early; Z_DATA_ERROR, Z_NEED_DICT: a bad stream.
		 */
		ret = -EFSCORRUPTED;
		break;
	}

	if (own)
		stream_free(zs);
	return ret;
}

static int gzip_check_options(const void *opts, size_t len)
{
	uint32_t level;
	uint16_t window;

	if (len != GZIP_OPTS_LEN) {
		log_debug("gzip options: length %zu, expected %d", len,
			  GZIP_OPTS_LEN);
		return -EFSCORRUPTED;
	}
	level = le32_get(opts);
	window = le16_get((const uint8_t *)opts + 4);
	if (level < 1 || level > 9) {
		log_debug("gzip options: bad compression level %u", level);
		return -EFSCORRUPTED;
	}
	if (window < 8 || window > 15) {
		log_debug("gzip options: bad window size %u",
			  (unsigned int)window);
		return -EFSCORRUPTED;
	}
	return 0;
}

const struct dec_codec dec__gzip = {
	.name = "gzip",
	.id = DEC_ID_GZIP,
	.supported = true,
	.check_options = gzip_check_options,
	.decompress = gzip_decompress,
};

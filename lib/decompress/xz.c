// SPDX-License-Identifier: MIT
/*
 * This file implements the two liblzma codecs: "xz" (SquashFS compressor
 * id 4), where each block is a complete .xz stream, and the legacy "lzma"
 * (id 2), where each block is a .lzma ("lzma_alone") stream.
 *
 * Both decoders take their state size from the stream header, so both run
 * under DEC_MEMLIMIT: a header that asks for more is corruption, not an
 * allocation.  Neither keeps state between calls.
 *
 * xz: lzma_stream_buffer_decode() decodes one stream, whatever filters it
 * names (LZMA2 and the BCJ filters mksquashfs may put in front), and checks
 * its integrity check.  Bytes after the stream are corruption.  The options
 * block mksquashfs writes when the options differ from the defaults
 * (dictionary = block size, no BCJ filter) is
 *	le32 dictionary size	2^n or 2^n + 2^(n+1) bytes
 *	le32 filters		bitmask of the BCJ filters tried: x86 1,
 *				powerpc 2, ia64 4, arm 8, armthumb 16,
 *				sparc 32, arm64 64 (newer mksquashfs)
 * The stream itself names the filters used, so the bitmask is advisory, but
 * an unknown bit means a filter this reader was not built for.
 *
 * lzma: a block starts with the 13-byte .lzma header (properties byte,
 * le32 dictionary size, le64 uncompressed size).  mksquashfs writes the
 * real uncompressed size there and, since it encodes with liblzma's
 * lzma_alone_encoder(), also ends the data with an end-of-payload marker.
 * liblzma 5.4 decodes such a stream to exactly the stated size and then
 * consumes the marker; older versions stop before the marker, so they are
 * refused at build time rather than reporting every block as corrupt.
 * Legacy lzma has no options block.
 */
#define LOG_MOD "decompress"

#include <lzma.h>

#include "decompress/decompress_i.h"
#include "util/endian.h"
#include "util/err.h"
#include "util/log.h"

#if LZMA_VERSION < 50040000
#error "xz.c needs liblzma 5.4 or later (end marker after a known size)"
#endif

#define XZ_OPTS_LEN 8 /* bytes in the xz options block */
#define XZ_FILTERS_KNOWN 0x7fu /* x86 .. sparc, arm64 */

#define LZMA_HDR_LEN 13 /* .lzma header: props, dict size, size */
#define LZMA_HDR_SIZE_OFF 5 /* offset of the le64 uncompressed size */

static int map_lzma_ret(lzma_ret lret)
{
	/*
	 * LZMA_MEMLIMIT_ERROR is the header asking for more than any real
	 * block needs; LZMA_BUF_ERROR is output that did not fit or input
	 * that ended early; the rest are bad streams.
	 */
	return lret == LZMA_MEM_ERROR ? -ENOMEM : -EFSCORRUPTED;
}

static int xz_decompress(const void *src, size_t src_len, void *dst,
			 size_t dst_cap, size_t *out_len)
{
	uint64_t memlimit = DEC_MEMLIMIT;
	size_t in_pos = 0;
	size_t out_pos = 0;
	lzma_ret lret;

	lret = lzma_stream_buffer_decode(&memlimit, 0, NULL, src, &in_pos,
					 src_len, dst, &out_pos, dst_cap);
	if (lret != LZMA_OK)
		return map_lzma_ret(lret);
	if (in_pos != src_len)
		return -EFSCORRUPTED; /* bytes after the stream */
	*out_len = out_pos;
	return 0;
}

static bool is_xz_dict_size(uint32_t dict)
{
	uint64_t low;

	if (!dict)
		return false;
	low = dict & -dict; /* lowest set bit: 2^n */
	return dict == low || dict == low * 3; /* 2^n or 2^n + 2^(n+1) */
}

static int xz_check_options(const void *opts, size_t len)
{
	uint32_t dict;
	uint32_t filters;

	if (len != XZ_OPTS_LEN) {
		log_debug("xz options: length %zu, expected %d", len,
			  XZ_OPTS_LEN);
		return -EFSCORRUPTED;
	}
	dict = le32_get(opts);
	filters = le32_get((const uint8_t *)opts + 4);
	if (!is_xz_dict_size(dict)) {
		log_debug("xz options: bad dictionary size %u", dict);
		return -EFSCORRUPTED;
	}
	if (filters & ~XZ_FILTERS_KNOWN) {
		log_debug("xz options: unknown filters 0x%x",
			  filters & ~XZ_FILTERS_KNOWN);
		return -ENOTSUP;
	}
	return 0;
}

static int lzma_decompress(const void *src, size_t src_len, void *dst,
			   size_t dst_cap, size_t *out_len)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	uint8_t spare;
	uint64_t size;
	size_t n;
	lzma_ret lret;
	int ret;

	if (src_len < LZMA_HDR_LEN)
		return -EFSCORRUPTED;
	/* All ones means "unknown, ends with a marker": also bounded. */
	size = le64_get((const uint8_t *)src + LZMA_HDR_SIZE_OFF);
	if (size != UINT64_MAX && size > dst_cap)
		return -EFSCORRUPTED;

	lret = lzma_alone_decoder(&strm, DEC_MEMLIMIT);
	if (lret != LZMA_OK) {
		ret = map_lzma_ret(lret);
		goto out_end;
	}
	strm.next_in = src;
	strm.avail_in = src_len;
	/*
	 * With no room for output the decoder makes no progress at all, not
	 * even through an empty stream, so it gets one spare byte that a
	 * valid block never uses.
	 */
	strm.next_out = dst_cap ? dst : &spare;
	strm.avail_out = dst_cap ? dst_cap : 1;

	lret = lzma_code(&strm, LZMA_FINISH);
	if (lret != LZMA_STREAM_END) {
		ret = map_lzma_ret(lret);
		goto out_end;
	}
	if (strm.avail_in) {
		ret = -EFSCORRUPTED; /* bytes after the stream */
		goto out_end;
	}
	n = (size_t)strm.total_out;
	if (n > dst_cap) {
		ret = -EFSCORRUPTED; /* it used the spare byte */
		goto out_end;
	}
	*out_len = n;
	ret = 0;
out_end:
	lzma_end(&strm);
	return ret;
}

const struct dec_codec dec__xz = {
	.name = "xz",
	.id = DEC_ID_XZ,
	.supported = true,
	.check_options = xz_check_options,
	.decompress = xz_decompress,
};

const struct dec_codec dec__lzma = {
	.name = "lzma",
	.id = DEC_ID_LZMA,
	.supported = true,
	.check_options = NULL, /* the format defines no options */
	.decompress = lzma_decompress,
};

/* SPDX-License-Identifier: MIT */
/*
 * This file declares the decompressor registry: one entry per SquashFS
 * compressor id, each backed by the Debian library for that codec.
 *
 * A codec is looked up once per image by its on-disk id.  Unknown or
 * unbuilt ids resolve to a named "unsupported" entry, never to NULL, so the
 * caller always has something to print.  Decompression takes explicit input
 * and output capacities; output that would not fit is corruption.  Codecs
 * that need state keep one context per thread, created on first use, so
 * any number of threads may decompress at once.
 */
#ifndef SQC_DECOMPRESS_DECOMPRESS_H
#define SQC_DECOMPRESS_DECOMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* SquashFS compressor ids (superblock field "compression_id"). */
enum dec_id {
	DEC_ID_GZIP = 1, /* zlib stream (deflate with zlib header) */
	DEC_ID_LZMA = 2, /* legacy .lzma ("lzma_alone") stream */
	DEC_ID_LZO = 3, /* lzo1x */
	DEC_ID_XZ = 4, /* .xz stream, optional BCJ filters */
	DEC_ID_LZ4 = 5, /* raw LZ4 block (LZ4_compress_default / HC) */
	DEC_ID_ZSTD = 6, /* zstd frame */
};

struct dec_codec; /* opaque, statically allocated, never freed */

/**
 * dec_lookup() - Find the codec for an on-disk compressor id.
 * @id: compressor id from the superblock
 *
 * Return: the codec; for an unknown id a codec whose dec_is_supported() is
 * false and whose name says "unknown (id N)" (after 64 distinct unknown ids,
 * one shared entry named "unknown (id not recorded)").  Never NULL.
 * Ownership: static storage, valid until the program exits.
 * Context: any thread; cannot fail.
 */
const struct dec_codec *dec_lookup(unsigned int id);

/**
 * dec_name() - Name of a codec as mksquashfs spells it ("gzip", "zstd").
 * @c: codec from dec_lookup()
 *
 * Return: static string.  Context: any thread; cannot fail.
 */
const char *dec_name(const struct dec_codec *c);

/**
 * dec_is_supported() - Tell whether this build can decompress @c.
 * @c: codec from dec_lookup()
 *
 * Return: true if dec_decompress() can work.  Context: any thread.
 */
bool dec_is_supported(const struct dec_codec *c);

/**
 * dec_check_options() - Validate the compressor options block.
 * @c: codec
 * @opts: the decoded (uncompressed) options metadata block
 * @len: its length in bytes
 *
 * SquashFS writes this block after the superblock when the
 * COMPRESSOR_OPTIONS flag is set.  Its layout depends on the codec.  Options
 * that this reader would decode wrongly (an unknown lzo algorithm, say) are
 * refused here so that the mount fails up front.
 *
 * Each codec's block has a fixed length and a length that differs is
 * malformed.  lzma defines no options block, so any block is -ENOTSUP.
 *
 * Return: 0; -EFSCORRUPTED if the block is malformed; -ENOTSUP if it asks
 * for something this reader cannot do, or @c is unsupported; -EINVAL if
 * @opts is NULL with a non-zero @len.
 * Context: any thread.
 */
int dec_check_options(const struct dec_codec *c, const void *opts, size_t len);

/**
 * dec_decompress() - Decompress one block.
 * @c: codec
 * @src: compressed bytes
 * @src_len: their length
 * @dst: output buffer
 * @dst_cap: its capacity; output longer than this is corruption
 * @out_len: set to the number of bytes written on success
 *
 * The caller compares *@out_len with the size it expects: an lz4 or lzo
 * block carries no size or checksum, so a damaged one may decode to the
 * wrong bytes or a different length.  Output exactly filling @dst_cap is
 * valid.  Nothing outside @src[0..@src_len) and @dst[0..@dst_cap) is read or
 * written, whatever @src holds; on error @dst holds unspecified bytes.
 *
 * Return: 0; -EFSCORRUPTED if the input is not a valid stream for @c (an
 * empty or truncated one, bytes after its end, a failed check) or does not
 * fit in @dst_cap; -ENOTSUP for an unsupported codec; -ENOMEM; -EINVAL if
 * @src is NULL, or @dst is NULL with a non-zero @dst_cap.  *@out_len is 0
 * on error.
 * Ownership: caller owns both buffers.
 * Context: any thread; per-thread state is allocated on first use and
 * freed when the thread exits.
 */
int dec_decompress(const struct dec_codec *c, const void *src, size_t src_len,
		   void *dst, size_t dst_cap, size_t *out_len);

#endif /* SQC_DECOMPRESS_DECOMPRESS_H */

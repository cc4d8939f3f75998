// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/decompress.
 *
 * Every codec is fed what the real compression library makes (zlib, liblzma
 * in .xz and .lzma form, LZ4 and LZ4 HC, LZO1X-1 and LZO1X-999, zstd) for
 * random and text-like data of several sizes, and must give the bytes back
 * exactly, refuse output that does not fit, and refuse truncated input and
 * trailing bytes.  Thousands of random mutations of valid blocks must give
 * an error or output that fits, never a crash.  Options blocks are checked
 * against bytes mksquashfs 4.5.1 writes (hard-coded, and again from images
 * made by mksquashfs when it is installed), and against broken ones.
 * Several threads decompress at once, with different and with the same
 * codecs, to exercise the per-thread contexts.
 */
/* TSAN: yes */

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lz4.h>
#include <lz4hc.h>
#include <lzma.h>
#include <lzo/lzo1x.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "decompress/decompress.h"
#include "util/compiler.h"
#include "util/endian.h"
#include "util/err.h"

/* ---- deterministic data ---- */

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static void gen_random(uint8_t *buf, size_t n, uint64_t seed)
{
	uint64_t s = seed | 1;

	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)(rng_next(&s) >> 56);
}

/* Words, numbers and line breaks: compresses like source code or logs. */
static void gen_text(uint8_t *buf, size_t n, uint64_t seed)
{
	static const char *const words[] = {
		"squashfs", "block",  "inode",	  "fragment", "the",
		"of",	    "cache",  "offset",	  "return",   "static",
		"int",	    "struct", "0x7fff",	  "if",	      "else",
		"for",	    "(",      ");",	  "{",	      "}",
		"data",	    "size_t", "compress", "error",    "-EIO",
	};
	uint64_t s = seed | 1;
	size_t i = 0;

	while (i < n) {
		uint64_t r = rng_next(&s);
		const char *w = words[r % ARRAY_SIZE(words)];
		char num[24];

		if ((r >> 20) % 11 == 0) {
			snprintf(num, sizeof(num), "%u",
				 (unsigned int)(r >> 40) % 100000);
			w = num;
		}
		for (; *w && i < n; w++)
			buf[i++] = (uint8_t)*w;
		if (i < n)
			buf[i++] = (r >> 33) % 9 == 0 ? '\n' : ' ';
	}
}

/* ---- compressors, using the real libraries ---- */

/* Worst-case compressed size for every codec here, and then some. */
static size_t comp_bound(size_t n)
{
	return n + n / 8 + 4096;
}

/* Each returns the compressed length, or 0 on failure. */
typedef size_t (*compress_fn)(const uint8_t *in, size_t n, uint8_t *out,
			      size_t cap);

static size_t c_gzip(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	uLongf len = cap;

	if (compress2(out, &len, in, n, 6) != Z_OK)
		return 0;
	return len;
}

/* mksquashfs -Xwindow-size 10 -Xcompression-level 9 */
static size_t c_gzip_w10(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	z_stream zs = { 0 };
	size_t len = 0;

	if (deflateInit2(&zs, 9, Z_DEFLATED, 10, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) == Z_STREAM_END)
		len = zs.total_out;
	deflateEnd(&zs);
	return len;
}

static uint32_t dict_for(size_t n)
{
	return n < LZMA_DICT_SIZE_MIN ? LZMA_DICT_SIZE_MIN : (uint32_t)n;
}

/* As mksquashfs and squashfs-tools-ng do it: end marker, then the size. */
static size_t c_lzma(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	lzma_options_lzma opt;
	size_t len = 0;

	lzma_lzma_preset(&opt, 5);
	opt.dict_size = dict_for(n);
	if (lzma_alone_encoder(&strm, &opt) != LZMA_OK)
		goto out;
	strm.next_in = in;
	strm.avail_in = n;
	strm.next_out = out;
	strm.avail_out = cap;
	if (lzma_code(&strm, LZMA_FINISH) != LZMA_STREAM_END)
		goto out;
	len = strm.total_out;
	le64_put(out + 5, n);
out:
	lzma_end(&strm);
	return len;
}

/*
 * A .lzma block with a known size and no end marker, as the LZMA SDK's
 * LzmaCompress() writes it: a MicroLZMA stream with its first byte
 * restored, behind a 13-byte header.
 */
static size_t c_lzma_noeopm(const uint8_t *in, size_t n, uint8_t *out,
			    size_t cap)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	lzma_options_lzma opt;
	size_t len = 0;

	lzma_lzma_preset(&opt, 5);
	opt.dict_size = dict_for(n);
	if (lzma_microlzma_encoder(&strm, &opt) != LZMA_OK)
		goto out;
	strm.next_in = in;
	strm.avail_in = n;
	strm.next_out = out + 13;
	strm.avail_out = cap - 13;
	if (lzma_code(&strm, LZMA_FINISH) != LZMA_STREAM_END ||
	    strm.total_in != n)
		goto out;
	out[0] = (uint8_t)~out[13]; /* the properties byte */
	out[13] = 0;
	le32_put(out + 1, opt.dict_size);
	le64_put(out + 5, n);
	len = 13 + strm.total_out;
out:
	lzma_end(&strm);
	return len;
}

static size_t c_xz(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	size_t pos = 0;

	if (lzma_easy_buffer_encode(LZMA_PRESET_DEFAULT, LZMA_CHECK_CRC32, NULL,
				    in, n, out, &pos, cap) != LZMA_OK)
		return 0;
	return pos;
}

/* A BCJ filter in front of LZMA2, as mksquashfs -Xbcj tries it. */
static size_t xz_bcj(lzma_vli bcj, lzma_check check, const uint8_t *in,
		     size_t n, uint8_t *out, size_t cap)
{
	lzma_options_lzma opt;
	lzma_filter filters[3];
	size_t pos = 0;

	lzma_lzma_preset(&opt, LZMA_PRESET_DEFAULT);
	opt.dict_size = dict_for(n);
	filters[0].id = bcj;
	filters[0].options = NULL;
	filters[1].id = LZMA_FILTER_LZMA2;
	filters[1].options = &opt;
	filters[2].id = LZMA_VLI_UNKNOWN;
	if (lzma_stream_buffer_encode(filters, check, NULL, in, n, out, &pos,
				      cap) != LZMA_OK)
		return 0;
	return pos;
}

static size_t c_xz_x86(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	return xz_bcj(LZMA_FILTER_X86, LZMA_CHECK_CRC64, in, n, out, cap);
}

static size_t c_xz_arm64(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	return xz_bcj(LZMA_FILTER_ARM64, LZMA_CHECK_CRC32, in, n, out, cap);
}

static size_t c_lz4(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	int r = LZ4_compress_default((const char *)in, (char *)out, (int)n,
				     (int)MIN(cap, (size_t)INT_MAX));

	return r > 0 ? (size_t)r : 0;
}

static size_t c_lz4hc(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	int r = LZ4_compress_HC((const char *)in, (char *)out, (int)n,
				(int)MIN(cap, (size_t)INT_MAX),
				LZ4HC_CLEVEL_DEFAULT);

	return r > 0 ? (size_t)r : 0;
}

static size_t
lzo_with(int (*fn)(const lzo_bytep, lzo_uint, lzo_bytep, lzo_uintp, lzo_voidp),
	 size_t wrk_len, const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	lzo_uint len = cap;
	void *wrk = malloc(wrk_len);
	int r;

	if (!wrk || lzo_init() != LZO_E_OK) {
		free(wrk);
		return 0;
	}
	r = fn(in, n, out, &len, wrk);
	free(wrk);
	return r == LZO_E_OK && len <= cap ? len : 0;
}

static size_t c_lzo1x_1(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	return lzo_with(lzo1x_1_compress, LZO1X_1_MEM_COMPRESS, in, n, out,
			cap);
}

static size_t c_lzo1x_999(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	return lzo_with(lzo1x_999_compress, LZO1X_999_MEM_COMPRESS, in, n, out,
			cap);
}

static size_t c_zstd(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	size_t r = ZSTD_compress(out, cap, in, n, 3);

	return ZSTD_isError(r) ? 0 : r;
}

/* mksquashfs's default zstd level. */
static size_t c_zstd15(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	size_t r = ZSTD_compress(out, cap, in, n, 15);

	return ZSTD_isError(r) ? 0 : r;
}

struct variant {
	const char *name; /* for messages */
	unsigned int id; /* codec that must decode it */
	compress_fn compress;
	bool has_size; /* the stream states its size or has a checksum */
};

static const struct variant variants[] = {
	{ "gzip", DEC_ID_GZIP, c_gzip, true },
	{ "gzip-w10", DEC_ID_GZIP, c_gzip_w10, true },
	{ "lzma", DEC_ID_LZMA, c_lzma, true },
	{ "lzma-noeopm", DEC_ID_LZMA, c_lzma_noeopm, true },
	{ "xz", DEC_ID_XZ, c_xz, true },
	{ "xz-x86", DEC_ID_XZ, c_xz_x86, true },
	{ "xz-arm64", DEC_ID_XZ, c_xz_arm64, true },
	{ "lz4", DEC_ID_LZ4, c_lz4, false },
	{ "lz4hc", DEC_ID_LZ4, c_lz4hc, false },
	{ "lzo1x_1", DEC_ID_LZO, c_lzo1x_1, false },
	{ "lzo1x_999", DEC_ID_LZO, c_lzo1x_999, false },
	{ "zstd", DEC_ID_ZSTD, c_zstd, true },
	{ "zstd15", DEC_ID_ZSTD, c_zstd15, true },
};

#define N_VARIANTS ARRAY_SIZE(variants)

static const struct variant *variant_named(const char *name)
{
	for (size_t i = 0; i < N_VARIANTS; i++)
		if (strcmp(variants[i].name, name) == 0)
			return &variants[i];
	ck_abort_msg("no variant %s", name);
	return NULL;
}

/* A compressed block and the data it holds. */
struct sample {
	uint8_t *plain;
	size_t n;
	uint8_t *comp;
	size_t clen;
};

static void sample_make(struct sample *s, const struct variant *v, size_t n,
			bool text, uint64_t seed)
{
	size_t cap = comp_bound(n);

	s->n = n;
	s->plain = malloc(n ? n : 1);
	s->comp = malloc(cap);
	ck_assert(s->plain && s->comp);
	if (text)
		gen_text(s->plain, n, seed);
	else
		gen_random(s->plain, n, seed);
	s->clen = v->compress(s->plain, n, s->comp, cap);
	ck_assert_msg(s->clen > 0, "%s cannot compress %zu bytes", v->name, n);
}

static void sample_free(struct sample *s)
{
	free(s->plain);
	free(s->comp);
}

/* ---- round trips ---- */

static const size_t sizes[] = { 0, 1, 4096, 131072, 1048576 };

/*
 * Loop index: variant, size and data kind.  The output buffer always has
 * exactly the capacity under test, so AddressSanitizer sees any overrun.
 */
START_TEST(test_roundtrip)
{
	const struct variant *v = &variants[_i / (2 * ARRAY_SIZE(sizes))];
	size_t n = sizes[(_i / 2) % ARRAY_SIZE(sizes)];
	bool text = _i % 2;
	const struct dec_codec *c = dec_lookup(v->id);
	struct sample s;
	uint8_t *dst;
	uint8_t *src;
	size_t out;
	int ret;

	sample_make(&s, v, n, text, 0x5eed0000u + (uint64_t)_i);

	/* Exactly the right capacity; a NULL buffer when that is 0. */
	dst = n ? malloc(n) : NULL;
	ret = dec_decompress(c, s.comp, s.clen, dst, n, &out);
	ck_assert_msg(ret == 0, "%s n=%zu text=%d: %d", v->name, n, text, ret);
	ck_assert_uint_eq(out, n);
	ck_assert(n == 0 || memcmp(dst, s.plain, n) == 0);
	free(dst);

	/* Room to spare. */
	dst = malloc(n + 4096);
	ret = dec_decompress(c, s.comp, s.clen, dst, n + 4096, &out);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(out, n);
	ck_assert(n == 0 || memcmp(dst, s.plain, n) == 0);
	free(dst);

	/* One byte short. */
	if (n) {
		dst = malloc(n);
		ret = dec_decompress(c, s.comp, s.clen, dst, n - 1, &out);
		ck_assert_msg(ret == -EFSCORRUPTED, "%s n=%zu short: %d",
			      v->name, n, ret);
		ck_assert_uint_eq(out, 0);
		free(dst);
	}

	/* Truncated input: an error, or (never seen) all of the data. */
	dst = malloc(n + 4096);
	for (size_t cut = 1; cut <= 64 && cut < s.clen; cut *= 2) {
		size_t len = s.clen - cut;

		src = malloc(len);
		memcpy(src, s.comp, len);
		ret = dec_decompress(c, src, len, dst, n + 4096, &out);
		ck_assert_msg(ret == -EFSCORRUPTED || (ret == 0 && out == n),
			      "%s n=%zu cut %zu: ret %d out %zu", v->name, n,
			      cut, ret, out);
		free(src);
	}
	src = malloc(s.clen / 2 + 1);
	memcpy(src, s.comp, s.clen / 2);
	ret = dec_decompress(c, src, s.clen / 2, dst, n + 4096, &out);
	ck_assert(ret == -EFSCORRUPTED || (ret == 0 && out == n));
	free(src);

	/* Bytes after the end of the stream. */
	for (unsigned int extra = 1; extra <= 16; extra *= 4) {
		src = malloc(s.clen + extra);
		memcpy(src, s.comp, s.clen);
		gen_random(src + s.clen, extra, extra);
		ret = dec_decompress(c, src, s.clen + extra, dst, n + 4096,
				     &out);
		ck_assert_msg(ret == -EFSCORRUPTED,
			      "%s n=%zu %u trailing bytes: %d", v->name, n,
			      extra, ret);
		free(src);
	}
	free(dst);
	sample_free(&s);
}
END_TEST

/* ---- mutations ---- */

/* Damage a copy of @s->comp in one of several ways; return its length. */
static size_t mutate(const struct sample *s, uint8_t *buf, size_t cap,
		     uint64_t *rng)
{
	uint64_t r = rng_next(rng);
	size_t len = s->clen;
	unsigned int flips;

	memcpy(buf, s->comp, len);
	switch (r % 6) {
	case 0: /* flip 1..3 bits */
	case 1:
		flips = 1 + (unsigned int)(r >> 8) % 3;
		for (unsigned int i = 0; i < flips; i++) {
			uint64_t b = rng_next(rng);

			buf[b % len] ^= (uint8_t)(1u << ((b >> 32) % 8));
		}
		break;
	case 2: /* overwrite a byte */
		buf[(r >> 8) % len] = (uint8_t)(r >> 56);
		break;
	case 3: /* truncate */
		len = 1 + (r >> 8) % len;
		break;
	case 4: /* damage the first bytes, where the headers are */
		buf[(r >> 8) % MIN(len, (size_t)24)] ^= (uint8_t)(r >> 56 | 1);
		break;
	default: /* copy a run over another place, then maybe extend */
	{
		size_t from = (r >> 8) % len;
		size_t to = (r >> 24) % len;
		size_t run = 1 + (r >> 40) % 32;

		run = MIN(run, MIN(len - from, len - to));
		memmove(buf + to, buf + from, run);
		if ((r >> 60) & 1 && len + 8 <= cap) {
			gen_random(buf + len, 8, r);
			len += 8;
		}
		break;
	}
	}
	return len;
}

#define MUTATIONS_SMALL 3000 /* of a 4 KiB block */
#define MUTATIONS_LARGE 300 /* of a 128 KiB block */

static void mutate_many(const struct variant *v, size_t n, unsigned int count,
			uint64_t seed)
{
	const struct dec_codec *c = dec_lookup(v->id);
	unsigned int ok = 0;
	unsigned int ok_wrong_len = 0;
	uint64_t rng = seed;
	struct sample s;
	uint8_t *buf;
	uint8_t *dst;
	size_t bcap;

	sample_make(&s, v, n, true, seed);
	bcap = s.clen + 8;
	for (unsigned int i = 0; i < count; i++) {
		size_t len;
		size_t cap = i % 2 ? n : 2 * n;
		size_t out = SIZE_MAX;
		int ret;

		/* Exact-size buffers, so any overrun is seen. */
		buf = malloc(bcap);
		dst = malloc(cap);
		len = mutate(&s, buf, bcap, &rng);
		ret = dec_decompress(c, buf, len, dst, cap, &out);
		ck_assert_msg(ret == 0 || ret == -EFSCORRUPTED,
			      "%s mutation %u: %d", v->name, i, ret);
		if (ret == 0) {
			ck_assert_uint_le(out, cap);
			ok++;
			if (out != n)
				ok_wrong_len++;
		} else {
			ck_assert_uint_eq(out, 0);
		}
		free(buf);
		free(dst);
	}
	/*
	 * A stream that states its size or carries a checksum can be damaged
	 * into a different valid stream only with a different header, which
	 * is rare enough not to happen in these runs.
	 */
	if (v->has_size)
		ck_assert_msg(ok_wrong_len == 0,
			      "%s: %u mutations decoded to a wrong length",
			      v->name, ok_wrong_len);
	sample_free(&s);
	(void)ok;
}

START_TEST(test_mutations)
{
	const struct variant *v = &variants[_i];

	mutate_many(v, 4096, MUTATIONS_SMALL, 0xbad0000u + (uint64_t)_i);
	mutate_many(v, 131072, MUTATIONS_LARGE, 0xbad1000u + (uint64_t)_i);
}
END_TEST

/* Blocks of one codec handed to another must be refused, never crash. */
START_TEST(test_wrong_codec)
{
	const struct variant *v = &variants[_i];
	uint8_t *dst = malloc(131072);
	struct sample s;

	sample_make(&s, v, 131072, true, 77);
	for (unsigned int id = DEC_ID_GZIP; id <= DEC_ID_ZSTD; id++) {
		size_t out;
		int ret;

		if (id == v->id)
			continue;
		ret = dec_decompress(dec_lookup(id), s.comp, s.clen, dst,
				     131072, &out);
		ck_assert_msg(ret == -EFSCORRUPTED || ret == 0,
			      "%s read as id %u: %d", v->name, id, ret);
	}
	free(dst);
	sample_free(&s);
}
END_TEST

/*
 * Headers that ask for a huge dictionary are refused by the memory limit
 * without allocating it.
 */
START_TEST(test_hostile_headers)
{
	uint8_t *dst = malloc(4096);
	struct sample s;
	uint8_t *hdr;
	size_t out;
	size_t hlen;
	size_t i;

	/* .lzma: the dictionary size is bytes 1..4 of the header. */
	sample_make(&s, variant_named("lzma"), 4096, true, 5);
	le32_put(s.comp + 1, 0xc0000000u);
	ck_assert_int_eq(dec_decompress(dec_lookup(DEC_ID_LZMA), s.comp, s.clen,
					dst, 4096, &out),
			 -EFSCORRUPTED);
	sample_free(&s);

	/*
	 * .xz: the LZMA2 filter flags in the block header after the 12-byte
	 * stream header are 0x21 0x01 <dictionary byte>; 40 asks for 4 GiB.
	 * The header's CRC32 is fixed up so that only the size is wrong.
	 */
	sample_make(&s, variant_named("xz"), 4096, true, 6);
	hdr = s.comp + 12;
	hlen = ((size_t)hdr[0] + 1) * 4;
	for (i = 2; i + 2 < hlen - 4; i++)
		if (hdr[i] == 0x21 && hdr[i + 1] == 0x01)
			break;
	ck_assert_uint_lt(i + 2, hlen - 4);
	hdr[i + 2] = 40;
	le32_put(hdr + hlen - 4, lzma_crc32(hdr, hlen - 4, 0));
	ck_assert_int_eq(dec_decompress(dec_lookup(DEC_ID_XZ), s.comp, s.clen,
					dst, 4096, &out),
			 -EFSCORRUPTED);
	/* The same edit with a sane dictionary decodes: the test is sound. */
	hdr[i + 2] = 10;
	le32_put(hdr + hlen - 4, lzma_crc32(hdr, hlen - 4, 0));
	ck_assert_int_eq(dec_decompress(dec_lookup(DEC_ID_XZ), s.comp, s.clen,
					dst, 4096, &out),
			 0);
	ck_assert_uint_eq(out, 4096);
	sample_free(&s);
	free(dst);
}
END_TEST

/* ---- registry ---- */

START_TEST(test_known_ids)
{
	static const struct {
		unsigned int id;
		const char *name;
	} known[] = {
		{ DEC_ID_GZIP, "gzip" }, { DEC_ID_LZMA, "lzma" },
		{ DEC_ID_LZO, "lzo" },	 { DEC_ID_XZ, "xz" },
		{ DEC_ID_LZ4, "lz4" },	 { DEC_ID_ZSTD, "zstd" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
		const struct dec_codec *c = dec_lookup(known[i].id);

		ck_assert_ptr_nonnull(c);
		ck_assert_ptr_eq(c, dec_lookup(known[i].id));
		ck_assert_str_eq(dec_name(c), known[i].name);
		ck_assert(dec_is_supported(c));
	}
}
END_TEST

START_TEST(test_unknown_ids)
{
	static const unsigned int ids[] = {
		0, 7, 8, 255, 4660, 65535, UINT_MAX
	};
	uint8_t src[64] = { 0x78, 0x9c };
	uint8_t dst[64];

	for (size_t i = 0; i < ARRAY_SIZE(ids); i++) {
		const struct dec_codec *c = dec_lookup(ids[i]);
		char want[32];
		size_t out = 123;

		ck_assert_ptr_nonnull(c);
		ck_assert_ptr_eq(c, dec_lookup(ids[i]));
		ck_assert(!dec_is_supported(c));
		snprintf(want, sizeof(want), "unknown (id %u)", ids[i]);
		ck_assert_str_eq(dec_name(c), want);
		ck_assert_int_eq(dec_decompress(c, src, sizeof(src), dst,
						sizeof(dst), &out),
				 -ENOTSUP);
		ck_assert_uint_eq(out, 0);
		ck_assert_int_eq(dec_check_options(c, src, 8), -ENOTSUP);
	}
}
END_TEST

/* More distinct unknown ids than the registry records: still named. */
START_TEST(test_unknown_overflow)
{
	for (unsigned int id = 1000; id < 1200; id++) {
		const struct dec_codec *c = dec_lookup(id);
		char want[32];

		ck_assert_ptr_nonnull(c);
		ck_assert(!dec_is_supported(c));
		snprintf(want, sizeof(want), "unknown (id %u)", id);
		ck_assert(strcmp(dec_name(c), want) == 0 ||
			  strcmp(dec_name(c), "unknown (id not recorded)") ==
				  0);
		if (id == 1000)
			ck_assert_str_eq(dec_name(c), want);
	}
}
END_TEST

START_TEST(test_bad_args)
{
	uint8_t dst[16];
	size_t out = 1;

	for (unsigned int id = DEC_ID_GZIP; id <= DEC_ID_ZSTD; id++) {
		const struct dec_codec *c = dec_lookup(id);

		ck_assert_int_eq(dec_decompress(c, NULL, 4, dst, 16, &out),
				 -EINVAL);
		ck_assert_int_eq(dec_decompress(c, dst, 4, NULL, 16, &out),
				 -EINVAL);
		/* No stream is empty. */
		ck_assert_int_eq(dec_decompress(c, dst, 0, dst, 16, &out),
				 -EFSCORRUPTED);
		ck_assert_uint_eq(out, 0);
		ck_assert_int_eq(dec_check_options(c, NULL, 8),
				 id == DEC_ID_LZMA ? -ENOTSUP : -EINVAL);
	}
}
END_TEST

/* ---- options blocks ---- */

struct opts_case {
	unsigned int id;
	uint8_t bytes[12];
	size_t len;
	int want;
};

/* Written by mksquashfs 4.5.1 (see the mksquashfs test below). */
static const struct opts_case real_opts[] = {
	/* -Xcompression-level 1 */
	{ DEC_ID_GZIP, { 1, 0, 0, 0, 15, 0, 0, 0 }, 8, 0 },
	/* -Xwindow-size 8 */
	{ DEC_ID_GZIP, { 9, 0, 0, 0, 8, 0, 0, 0 }, 8, 0 },
	/* -Xstrategy filtered */
	{ DEC_ID_GZIP, { 9, 0, 0, 0, 15, 0, 2, 0 }, 8, 0 },
	/* -Xcompression-level 5 -Xwindow-size 10 -Xstrategy (all five) */
	{ DEC_ID_GZIP, { 5, 0, 0, 0, 10, 0, 0x1f, 0 }, 8, 0 },
	/* -Xalgorithm lzo1x_1, _1_11, _1_12, _1_15 */
	{ DEC_ID_LZO, { 0, 0, 0, 0, 0, 0, 0, 0 }, 8, 0 },
	{ DEC_ID_LZO, { 1, 0, 0, 0, 0, 0, 0, 0 }, 8, 0 },
	{ DEC_ID_LZO, { 2, 0, 0, 0, 0, 0, 0, 0 }, 8, 0 },
	{ DEC_ID_LZO, { 3, 0, 0, 0, 0, 0, 0, 0 }, 8, 0 },
	/* -Xalgorithm lzo1x_999 -Xcompression-level 1, 9 */
	{ DEC_ID_LZO, { 4, 0, 0, 0, 1, 0, 0, 0 }, 8, 0 },
	{ DEC_ID_LZO, { 4, 0, 0, 0, 9, 0, 0, 0 }, 8, 0 },
	/* -Xbcj x86 */
	{ DEC_ID_XZ, { 0, 0, 2, 0, 1, 0, 0, 0 }, 8, 0 },
	/* -Xdict-size 75% */
	{ DEC_ID_XZ, { 0, 0x80, 1, 0, 0, 0, 0, 0 }, 8, 0 },
	/* -Xdict-size 8K */
	{ DEC_ID_XZ, { 0, 0x20, 0, 0, 0, 0, 0, 0 }, 8, 0 },
	/* -Xbcj x86,powerpc,ia64,arm,armthumb,sparc -Xdict-size 50% */
	{ DEC_ID_XZ, { 0, 0, 1, 0, 0x3f, 0, 0, 0 }, 8, 0 },
	/* -b 1M -Xdict-size 75% */
	{ DEC_ID_XZ, { 0, 0, 0x0c, 0, 0, 0, 0, 0 }, 8, 0 },
	/* (default), -Xhc */
	{ DEC_ID_LZ4, { 1, 0, 0, 0, 0, 0, 0, 0 }, 8, 0 },
	{ DEC_ID_LZ4, { 1, 0, 0, 0, 1, 0, 0, 0 }, 8, 0 },
	/* -Xcompression-level 1, 19, 22 */
	{ DEC_ID_ZSTD, { 1, 0, 0, 0 }, 4, 0 },
	{ DEC_ID_ZSTD, { 19, 0, 0, 0 }, 4, 0 },
	{ DEC_ID_ZSTD, { 22, 0, 0, 0 }, 4, 0 },
};

static const struct opts_case bad_opts[] = {
	/* gzip: length, level 1..9, window 8..15 */
	{ DEC_ID_GZIP, { 9, 0, 0, 0, 15, 0, 0 }, 7, -EFSCORRUPTED },
	{ DEC_ID_GZIP, { 9, 0, 0, 0, 15, 0, 0, 0, 0 }, 9, -EFSCORRUPTED },
	{ DEC_ID_GZIP, { 0 }, 0, -EFSCORRUPTED },
	{ DEC_ID_GZIP, { 0, 0, 0, 0, 15, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_GZIP, { 10, 0, 0, 0, 15, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_GZIP, { 9, 0, 0, 1, 15, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_GZIP, { 9, 0, 0, 0, 7, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_GZIP, { 9, 0, 0, 0, 16, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_GZIP, { 9, 0, 0, 0, 15, 1, 0, 0 }, 8, -EFSCORRUPTED },
	/* Strategies only steer the compressor: unknown bits are fine. */
	{ DEC_ID_GZIP, { 9, 0, 0, 0, 15, 0, 0xff, 0xff }, 8, 0 },
	/* xz: length, dictionary 2^n or 3 * 2^n, known filters */
	{ DEC_ID_XZ, { 0, 0, 2, 0 }, 4, -EFSCORRUPTED },
	{ DEC_ID_XZ, { 0, 0, 0, 0, 0, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_XZ, { 1, 0, 2, 0, 0, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_XZ, { 0, 0, 5, 0, 0, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_XZ, { 0, 0, 7, 0, 0, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_XZ, { 0, 0, 0, 0x80, 0, 0, 0, 0 }, 8, 0 },
	{ DEC_ID_XZ, { 0, 0, 0, 0xc0, 0, 0, 0, 0 }, 8, 0 },
	{ DEC_ID_XZ, { 0, 0, 2, 0, 0x40, 0, 0, 0 }, 8, 0 }, /* arm64 */
	{ DEC_ID_XZ, { 0, 0, 2, 0, 0x80, 0, 0, 0 }, 8, -ENOTSUP },
	{ DEC_ID_XZ, { 0, 0, 2, 0, 0, 0, 0, 0x80 }, 8, -ENOTSUP },
	/* lz4: length, version 1, flags bit 0 */
	{ DEC_ID_LZ4, { 1, 0, 0, 0 }, 4, -EFSCORRUPTED },
	{ DEC_ID_LZ4, { 0, 0, 0, 0, 0, 0, 0, 0 }, 8, -ENOTSUP },
	{ DEC_ID_LZ4, { 2, 0, 0, 0, 0, 0, 0, 0 }, 8, -ENOTSUP },
	{ DEC_ID_LZ4, { 1, 0, 0, 0, 2, 0, 0, 0 }, 8, -ENOTSUP },
	{ DEC_ID_LZ4, { 1, 0, 0, 0, 0, 0, 0, 0x80 }, 8, -ENOTSUP },
	/* lzo: length, algorithm 0..4, level */
	{ DEC_ID_LZO,
	  { 4, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0 },
	  12,
	  -EFSCORRUPTED },
	{ DEC_ID_LZO, { 5, 0, 0, 0, 0, 0, 0, 0 }, 8, -ENOTSUP },
	{ DEC_ID_LZO, { 0, 0, 0, 1, 0, 0, 0, 0 }, 8, -ENOTSUP },
	{ DEC_ID_LZO, { 4, 0, 0, 0, 0, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_LZO, { 4, 0, 0, 0, 10, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_LZO, { 0, 0, 0, 0, 1, 0, 0, 0 }, 8, -EFSCORRUPTED },
	/* zstd: length, level 1..22 */
	{ DEC_ID_ZSTD, { 0 }, 0, -EFSCORRUPTED },
	{ DEC_ID_ZSTD, { 15, 0, 0, 0, 0, 0, 0, 0 }, 8, -EFSCORRUPTED },
	{ DEC_ID_ZSTD, { 0, 0, 0, 0 }, 4, -EFSCORRUPTED },
	{ DEC_ID_ZSTD, { 23, 0, 0, 0 }, 4, -EFSCORRUPTED },
	{ DEC_ID_ZSTD, { 0xff, 0xff, 0xff, 0xff }, 4, -EFSCORRUPTED },
	/* lzma has no options block at all */
	{ DEC_ID_LZMA, { 0 }, 0, -ENOTSUP },
	{ DEC_ID_LZMA, { 1, 0, 0, 0, 0, 0, 0, 0 }, 8, -ENOTSUP },
};

static void check_opts_cases(const struct opts_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct opts_case *t = &cases[i];
		uint8_t *copy = malloc(t->len ? t->len : 1);
		int ret;

		/* An exact-size copy, so reading past it is seen. */
		memcpy(copy, t->bytes, t->len);
		ret = dec_check_options(dec_lookup(t->id), copy, t->len);
		ck_assert_msg(ret == t->want, "case %zu (%s, %zu bytes): %d", i,
			      dec_name(dec_lookup(t->id)), t->len, ret);
		free(copy);
	}
}

START_TEST(test_options_real)
{
	check_opts_cases(real_opts, ARRAY_SIZE(real_opts));
}
END_TEST

START_TEST(test_options_bad)
{
	check_opts_cases(bad_opts, ARRAY_SIZE(bad_opts));
}
END_TEST

/* Every length 0..16 with random bytes: an answer, never a crash. */
START_TEST(test_options_random)
{
	uint64_t rng = 42;

	for (unsigned int id = 0; id <= 8; id++) {
		for (size_t len = 0; len <= 16; len++) {
			for (int k = 0; k < 200; k++) {
				uint8_t *b = malloc(len ? len : 1);
				int ret;

				for (size_t j = 0; j < len; j++)
					b[j] = (uint8_t)(rng_next(&rng) >> 56);
				ret = dec_check_options(dec_lookup(id), b, len);
				ck_assert(ret == 0 || ret == -EFSCORRUPTED ||
					  ret == -ENOTSUP);
				free(b);
			}
		}
	}
}
END_TEST

/* ---- real mksquashfs images ---- */

struct mksq_case {
	const char *args; /* after "-comp" */
	unsigned int id;
	const uint8_t *opts; /* expected options block, NULL: none */
	size_t opts_len;
};

static const uint8_t o_gzip[] = { 5, 0, 0, 0, 10, 0, 0x1f, 0 };
static const uint8_t o_lzo[] = { 3, 0, 0, 0, 0, 0, 0, 0 };
static const uint8_t o_lzo999[] = { 4, 0, 0, 0, 9, 0, 0, 0 };
static const uint8_t o_xz[] = { 0, 0, 1, 0, 0x3f, 0, 0, 0 };
static const uint8_t o_xz8k[] = { 0, 0x20, 0, 0, 0, 0, 0, 0 };
static const uint8_t o_lz4[] = { 1, 0, 0, 0, 0, 0, 0, 0 };
static const uint8_t o_lz4hc[] = { 1, 0, 0, 0, 1, 0, 0, 0 };
static const uint8_t o_zstd[] = { 19, 0, 0, 0 };

#define OPTS(a) a, sizeof(a)

static const struct mksq_case mksq_cases[] = {
	{ "gzip", DEC_ID_GZIP, NULL, 0 },
	{ "gzip -Xcompression-level 5 -Xwindow-size 10 -Xstrategy "
	  "default,filtered,huffman_only,run_length_encoded,fixed",
	  DEC_ID_GZIP, OPTS(o_gzip) },
	{ "lzma", DEC_ID_LZMA, NULL, 0 },
	{ "lzo", DEC_ID_LZO, NULL, 0 },
	{ "lzo -Xalgorithm lzo1x_1_15", DEC_ID_LZO, OPTS(o_lzo) },
	{ "lzo -Xalgorithm lzo1x_999 -Xcompression-level 9", DEC_ID_LZO,
	  OPTS(o_lzo999) },
	{ "xz", DEC_ID_XZ, NULL, 0 },
	{ "xz -Xbcj x86,powerpc,ia64,arm,armthumb,sparc -Xdict-size 50%",
	  DEC_ID_XZ, OPTS(o_xz) },
	{ "xz -Xdict-size 8K", DEC_ID_XZ, OPTS(o_xz8k) },
	{ "lz4", DEC_ID_LZ4, OPTS(o_lz4) },
	{ "lz4 -Xhc", DEC_ID_LZ4, OPTS(o_lz4hc) },
	{ "zstd", DEC_ID_ZSTD, NULL, 0 },
	{ "zstd -Xcompression-level 19", DEC_ID_ZSTD, OPTS(o_zstd) },
};

#define SB_LEN 96 /* SquashFS 4.0 superblock */
#define SB_FLAG_COMP_OPTS 0x0400
#define META_UNCOMPRESSED 0x8000
#define META_MAX 8192
#define NO_TABLE UINT64_MAX

static char *tmpdir_make(void)
{
	const char *base = getenv("TMPDIR");
	char *dir;

	if (asprintf(&dir, "%s/sqc-dec-XXXXXX", base ? base : "/tmp") < 0)
		return NULL;
	if (!mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

static void write_file(const char *path, const uint8_t *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, SB_LEN);
	rewind(f);
	buf = malloc((size_t)n);
	ck_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* A tree whose inode and directory tables span several metadata blocks. */
static void make_tree(const char *dir)
{
	static uint8_t data[20000];
	char path[PATH_MAX];

	gen_text(data, sizeof(data), 9);
	for (int i = 0; i < 600; i++) {
		snprintf(path, sizeof(path), "%s/file-with-a-long-name-%04d",
			 dir, i);
		write_file(path, data + i, (size_t)i % 97);
	}
	snprintf(path, sizeof(path), "%s/big", dir);
	write_file(path, data, sizeof(data));
}

/*
 * Decode every metadata block from the inode table up to the first table
 * index after it: inode, directory and fragment metadata blocks.
 */
static unsigned int check_meta_blocks(const struct dec_codec *c,
				      const uint8_t *img, size_t img_len)
{
	static const unsigned int idx_offs[] = { 48, 80, 88 }; /* id, frag,
								  export */
	uint64_t start = le64_get(img + 64);
	uint64_t end = NO_TABLE;
	unsigned int compressed = 0;
	uint8_t *dst = malloc(META_MAX);
	uint64_t off;

	for (size_t i = 0; i < ARRAY_SIZE(idx_offs); i++) {
		uint64_t t = le64_get(img + idx_offs[i]);

		if (t != NO_TABLE && t > start && t < end)
			end = t;
	}
	ck_assert(end != NO_TABLE && end <= img_len);
	for (off = start; off < end;) {
		uint16_t h;
		size_t len;
		size_t out;

		ck_assert(off + 2 <= end);
		h = le16_get(img + off);
		len = h & ~META_UNCOMPRESSED;
		ck_assert(off + 2 + len <= end);
		if (!(h & META_UNCOMPRESSED)) {
			ck_assert_int_eq(dec_decompress(c, img + off + 2, len,
							dst, META_MAX, &out),
					 0);
			ck_assert_uint_le(out, META_MAX);
			compressed++;
		}
		off += 2 + len;
	}
	ck_assert_uint_eq(off, end);
	free(dst);
	return compressed;
}

START_TEST(test_mksquashfs)
{
	const struct mksq_case *t = &mksq_cases[_i];
	const struct dec_codec *c = dec_lookup(t->id);
	char *dir;
	char *cmd;
	char *img_path;
	char *src_path;
	uint8_t *img;
	size_t img_len;
	uint16_t flags;

	if (system("mksquashfs -version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "mksquashfs not installed; '%s' not tried\n",
			t->args);
		return;
	}
	dir = tmpdir_make();
	ck_assert_ptr_nonnull(dir);
	ck_assert(asprintf(&src_path, "%s/src", dir) > 0);
	ck_assert(asprintf(&img_path, "%s/img", dir) > 0);
	ck_assert_int_eq(mkdir(src_path, 0755), 0);
	make_tree(src_path);
	ck_assert(asprintf(&cmd,
			   "mksquashfs '%s' '%s' -noappend -quiet -no-progress"
			   " -comp %s >/dev/null 2>&1",
			   src_path, img_path, t->args) > 0);
	ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);

	img = read_file(img_path, &img_len);
	ck_assert_uint_eq(le16_get(img + 20), t->id);
	flags = le16_get(img + 24);
	if (t->opts) {
		uint16_t h;

		ck_assert(flags & SB_FLAG_COMP_OPTS);
		h = le16_get(img + SB_LEN);
		ck_assert(h & META_UNCOMPRESSED);
		ck_assert_uint_eq(h & ~META_UNCOMPRESSED, t->opts_len);
		ck_assert(memcmp(img + SB_LEN + 2, t->opts, t->opts_len) == 0);
		ck_assert_int_eq(
			dec_check_options(c, img + SB_LEN + 2, t->opts_len), 0);
	} else {
		ck_assert(!(flags & SB_FLAG_COMP_OPTS));
	}
	ck_assert_uint_gt(check_meta_blocks(c, img, img_len), 0);

	free(img);
	snprintf(cmd, strlen(cmd) + 1, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	free(img_path);
	free(src_path);
	free(dir);
}
END_TEST

/* ---- threads ---- */

#define THREAD_SAMPLES 6
#define THREAD_ROUNDS 40

struct worker {
	const struct variant *v;
	struct sample s[THREAD_SAMPLES];
	pthread_barrier_t *start;
	unsigned int failures; /* written by the worker, read after join */
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	const struct dec_codec *c = dec_lookup(w->v->id);
	uint8_t *dst = malloc(131072);

	pthread_barrier_wait(w->start);
	for (int r = 0; r < THREAD_ROUNDS; r++) {
		for (int k = 0; k < THREAD_SAMPLES; k++) {
			const struct sample *s = &w->s[k];
			size_t out;

			if (dec_decompress(c, s->comp, s->clen, dst, 131072,
					   &out) != 0 ||
			    out != s->n || memcmp(dst, s->plain, s->n) != 0)
				w->failures++;
		}
		/* Unknown ids from many threads at once. */
		if (strncmp(dec_name(dec_lookup(2000 + (unsigned int)r)),
			    "unknown", 7) != 0)
			w->failures++;
	}
	free(dst);
	return NULL;
}

static void run_workers(const struct variant *const *vs, size_t nthreads)
{
	struct worker *w = calloc(nthreads, sizeof(*w));
	pthread_t *tid = calloc(nthreads, sizeof(*tid));
	pthread_barrier_t start;

	ck_assert(w && tid);
	pthread_barrier_init(&start, NULL, (unsigned int)nthreads);
	for (size_t t = 0; t < nthreads; t++) {
		w[t].v = vs[t];
		w[t].start = &start;
		for (int k = 0; k < THREAD_SAMPLES; k++)
			sample_make(&w[t].s[k], vs[t], (size_t)4096 << k,
				    k % 3 != 0, t * 100 + (uint64_t)k);
	}
	for (size_t t = 0; t < nthreads; t++)
		ck_assert_int_eq(
			pthread_create(&tid[t], NULL, worker_run, &w[t]), 0);
	for (size_t t = 0; t < nthreads; t++)
		ck_assert_int_eq(pthread_join(tid[t], NULL), 0);
	for (size_t t = 0; t < nthreads; t++) {
		ck_assert_msg(w[t].failures == 0,
			      "thread %zu (%s): %u failures", t, w[t].v->name,
			      w[t].failures);
		for (int k = 0; k < THREAD_SAMPLES; k++)
			sample_free(&w[t].s[k]);
	}
	pthread_barrier_destroy(&start);
	free(tid);
	free(w);
}

START_TEST(test_threads_mixed)
{
	const struct variant *vs[] = {
		variant_named("gzip"),	    variant_named("xz"),
		variant_named("lz4"),	    variant_named("zstd"),
		variant_named("lzo1x_999"), variant_named("lzma"),
	};

	/* Four codecs at once, then all six. */
	run_workers(vs, 4);
	run_workers(vs, ARRAY_SIZE(vs));
}
END_TEST

/* Many threads on the codecs with per-thread contexts. */
START_TEST(test_threads_same)
{
	const struct variant *gz[4];
	const struct variant *zs[4];

	for (int i = 0; i < 4; i++) {
		gz[i] = variant_named("gzip");
		zs[i] = variant_named("zstd");
	}
	run_workers(gz, 4);
	run_workers(zs, 4);
}
END_TEST

static void *short_lived(void *arg)
{
	const struct sample *s = arg;
	uint8_t *dst = malloc(s[0].n + s[1].n);
	size_t out;
	uintptr_t bad = 0;

	bad |= dec_decompress(dec_lookup(DEC_ID_GZIP), s[0].comp, s[0].clen,
			      dst, s[0].n, &out) != 0;
	bad |= dec_decompress(dec_lookup(DEC_ID_ZSTD), s[1].comp, s[1].clen,
			      dst, s[1].n, &out) != 0;
	free(dst);
	return (void *)bad;
}

/* Threads that exit free their contexts (LeakSanitizer would see it). */
START_TEST(test_threads_exit)
{
	struct sample s[2];

	sample_make(&s[0], variant_named("gzip"), 8192, true, 1);
	sample_make(&s[1], variant_named("zstd"), 8192, true, 2);
	for (int round = 0; round < 25; round++) {
		pthread_t tid[4];
		void *bad;

		for (int t = 0; t < 4; t++)
			ck_assert_int_eq(pthread_create(&tid[t], NULL,
							short_lived, s),
					 0);
		for (int t = 0; t < 4; t++) {
			ck_assert_int_eq(pthread_join(tid[t], &bad), 0);
			ck_assert_ptr_null(bad);
		}
	}
	sample_free(&s[0]);
	sample_free(&s[1]);
}
END_TEST

static Suite *decompress_suite(void)
{
	Suite *s = suite_create("decompress");
	TCase *tc;

	tc = tcase_create("registry");
	tcase_add_test(tc, test_known_ids);
	tcase_add_test(tc, test_unknown_ids);
	tcase_add_test(tc, test_unknown_overflow);
	tcase_add_test(tc, test_bad_args);
	suite_add_tcase(s, tc);

	tc = tcase_create("options");
	tcase_add_test(tc, test_options_real);
	tcase_add_test(tc, test_options_bad);
	tcase_add_test(tc, test_options_random);
	tcase_add_loop_test(tc, test_mksquashfs, 0, ARRAY_SIZE(mksq_cases));
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);

	tc = tcase_create("roundtrip");
	tcase_add_loop_test(tc, test_roundtrip, 0,
			    (int)(N_VARIANTS * ARRAY_SIZE(sizes) * 2));
	tcase_add_loop_test(tc, test_wrong_codec, 0, N_VARIANTS);
	tcase_add_test(tc, test_hostile_headers);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);

	tc = tcase_create("mutations");
	tcase_add_loop_test(tc, test_mutations, 0, N_VARIANTS);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);

	tc = tcase_create("threads");
	tcase_set_tags(tc, "threads"); /* what TSan runs */
	tcase_add_test(tc, test_threads_mixed);
	tcase_add_test(tc, test_threads_same);
	tcase_add_test(tc, test_threads_exit);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(decompress_suite());
	int failures;

	srunner_run_all(sr, CK_NORMAL);
	failures = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failures > 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

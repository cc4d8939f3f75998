// SPDX-License-Identifier: MIT
/*
 * This file implements the libFuzzer target for lib/decompress.
 *
 * Input layout:
 *	byte 0		compressor id, taken modulo 8, so ids 0 and 7 (unknown)
 *			are tried as well as the six codecs
 *	bytes 1..3	le24 output capacity, taken modulo 1 MiB + 4 KiB + 1
 *	the rest	the compressed block, also tried as an options block
 *
 * The output buffer is allocated with exactly the capacity, so
 * AddressSanitizer sees any write past it.  Any result other than 0,
 * -EFSCORRUPTED, -ENOMEM or -ENOTSUP, and output longer than the
 * capacity, are bugs and abort.
 *
 * The codec libraries are the system's, built without coverage, so
 * libFuzzer would see only the few edges of lib/decompress and drop every
 * seed that decodes.  An extra counter per (codec, result, log2 of the
 * output length) gives it a reason to keep inputs that decode, and decode
 * to more.  ASan cannot see inside those libraries either: replay the
 * corpus under valgrind to check their accesses to our buffers.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decompress/decompress.h"
#include "util/err.h"

#define FUZZ_HDR_LEN 4
#define FUZZ_CAP_MAX ((1u << 20) + 4096)

/* libFuzzer reads counters placed in this section as extra coverage. */
__attribute__((section("__libfuzzer_extra_counters"),
	       used)) static uint8_t outcome[8][2][24];

static void note_outcome(unsigned int id, int ret, size_t out)
{
	unsigned int cls = 0;

	while (out && cls < 23) {
		out >>= 1;
		cls++;
	}
	outcome[id][ret == 0][cls]++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct dec_codec *c;
	unsigned int id;
	const uint8_t *src;
	size_t src_len;
	uint8_t *dst;
	size_t cap;
	size_t out = 0;
	int ret;

	if (size < FUZZ_HDR_LEN)
		return 0;
	id = data[0] % 8u;
	c = dec_lookup(id);
	cap = (data[1] | (size_t)data[2] << 8 | (size_t)data[3] << 16) %
	      (FUZZ_CAP_MAX + 1);
	src = data + FUZZ_HDR_LEN;
	src_len = size - FUZZ_HDR_LEN;

	dst = malloc(cap ? cap : 1);
	if (!dst)
		return 0;
	ret = dec_decompress(c, src, src_len, dst, cap, &out);
	if (ret != 0 && ret != -EFSCORRUPTED && ret != -ENOMEM &&
	    ret != -ENOTSUP)
		abort();
	if (ret == 0 && out > cap)
		abort();
	if (ret != 0 && out != 0)
		abort();
	note_outcome(id, ret, out);
	free(dst);

	ret = dec_check_options(c, src, src_len);
	if (ret != 0 && ret != -EFSCORRUPTED && ret != -ENOTSUP)
		abort();
	return 0;
}

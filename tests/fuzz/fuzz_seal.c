// SPDX-License-Identifier: MIT
/*
 * This file implements the libFuzzer target for a seal file (lib/seal):
 * the input is the file, written to a memfd and opened with seal_open()
 * as the daemon opens one (any size, any root).  A seal that opens is
 * then used: seal_check() of the first blocks of a range of zeros, and
 * of its last block.  The replay driver tests/tools/fuzz_replay.c
 * compiles this file in and runs tests/fuzz/regress/seal-* and
 * tests/fuzz/seeds/fuzz_seal/ through it.
 *
 * Oracle, besides crashes, leaks and sanitizer reports: an opened seal's
 * size is within SEAL_DATA_MAX and its file is exactly its head and tree
 * (a seal is never larger than the input's 4 KiB head plus 1/128 of its
 * data, give or take a block a level), and seal_check() answers 0 or
 * -EBADMSG for bytes where they may be.  A violation aborts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "seal/seal.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void seal_fail(const char *what)
{
	fprintf(stderr, "fuzz_seal: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t zeros[1u << 20];
	uint64_t n, last;
	struct seal *s;
	int fd, err;

	log_set_level(getenv("SQC_FUZZ_LOG") ? LOG_DEBUG : -1);
	fd = memfd_create("fuzz_seal", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	err = seal_open(fd, "fuzz", 0, NULL, &s);
	close(fd);
	if (err)
		return 0;
	n = seal_data_size(s);
	if (!n || n > SEAL_DATA_MAX || n / SEAL_BLOCK_SIZE / 128 > size)
		seal_fail("a seal opened with a size its file cannot hold");
	err = seal_check(s, 0, zeros,
			 (size_t)(n < sizeof(zeros) ? n : sizeof(zeros)), NULL);
	if (err && err != -EBADMSG)
		seal_fail("seal_check() of its first blocks failed otherwise");
	last = (n - 1) / SEAL_BLOCK_SIZE * SEAL_BLOCK_SIZE;
	err = seal_check(s, last, zeros, (size_t)(n - last), NULL);
	if (err && err != -EBADMSG)
		seal_fail("seal_check() of its last block failed otherwise");
	seal_free(s);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the libFuzzer target for the image reader: each
 * input is a SquashFS image, opened and walked the way `mountctl check`
 * and a mount would (tests/fuzz/walk.h, shared with the replay driver
 * tests/tools/fuzz_replay.c that `make check` runs over
 * tests/fuzz/regress/image-*).
 *
 * Logging is off unless SQC_FUZZ_LOG=1 is set: a corrupt image logs on
 * every run otherwise.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../fuzz/walk.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *v = getenv("SQC_FUZZ_LOG");

	(void)argc;
	(void)argv;
	if (!v || strcmp(v, "1"))
		log_set_level(-1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	walk_image_buf(data, size, NULL);
	return 0;
}

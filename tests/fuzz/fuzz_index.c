// SPDX-License-Identifier: MIT
/*
 * This file implements the libFuzzer target for lib/index: each input is
 * a SquashFS image, opened with small budgets and walked the way listing
 * ahead walks a mount (statahead=all): depth-first in listing order, each
 * directory put in an index table and its path built back from it (the
 * step walk_index() of tests/fuzz/walk.h, shared with the replay driver
 * tests/tools/fuzz_replay.c, which `make check` runs over
 * tests/fuzz/regress/index-*).  Only a crash, a sanitizer report, a leak
 * or a timeout is a failure: a damaged directory table must end the walk
 * with an error.
 *
 * Logging is off unless SQC_FUZZ_LOG=1 is set.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../fuzz/walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* No LLVMFuzzerInitialize(): the replay driver would then call it
 * through a weak symbol that is always set; logging goes off here. */
static void quiet_logs(void)
{
	static bool done;
	const char *v = getenv("SQC_FUZZ_LOG");

	if (!done && (!v || strcmp(v, "1")))
		log_set_level(-1);
	done = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct img_opts o = { .meta_cache = 1u << 20,
			      .data_cache = 1u << 20,
			      .stage = STAGE_NONE };
	struct walk_state w = { .name = NULL };
	struct img_inode root;
	char path[64];
	size_t done = 0;
	ssize_t n;
	int fd;

	quiet_logs();
	fd = memfd_create("fuzz-index", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	while (done < size) {
		n = write(fd, data + done, size - done);
		if (n <= 0)
			goto out_close;
		done += (size_t)n;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (img_open(path, &o, &w.img))
		goto out_close;
	if (!img_inode_get(w.img, img_get_super(w.img)->root_ref, &root))
		walk_index(&w, &root);
	img_close(w.img);
out_close:
	close(fd);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/prefetch: readahead fills the
 * data cache so that later reads are hits, a full queue drops jobs without running them,
 * and stopping with jobs queued frees them.
 */
/* TSAN: yes */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/image.h"
#include "prefetch/prefetch.h"

static char workdir[PATH_MAX / 2];
static char image[PATH_MAX / 2 + 32];

static struct img *open_image(enum stage_mode stage)
{
	struct img_opts o;
	struct img *img;

	img_opts_default(&o);
	o.stage = stage;
	o.ram = 1ull << 30;
	ck_assert_int_eq(img_open(image, &o, &img), 0);
	return img;
}

static void lookup(struct img *img, const char *name, struct img_inode *out)
{
	struct img_inode root;
	struct img_dirent de;

	ck_assert_int_eq(
		img_inode_get(img, img_get_super(img)->root_ref, &root), 0);
	ck_assert_int_eq(img_dir_lookup(img, &root, name, strlen(name), &de),
			 0);
	ck_assert_int_eq(img_inode_get(img, de.ref, out), 0);
}

START_TEST(test_readahead)
{
	struct img *img = open_image(STAGE_NONE);
	struct pf_opts o = { .workers = 2, .queue_max = 16 };
	struct img_stats before, after;
	struct img_inode ino;
	struct pf_stats ps;
	uint8_t *buf = malloc(4 << 20);
	size_t got;
	struct pf *pf;

	lookup(img, "big", &ino);
	ck_assert_uint_ge(ino.file.nblocks, 16);
	ck_assert_int_eq(pf_new(img, &o, &pf), 0);
	ck_assert_int_eq(pf_readahead(pf, &ino, 0, ino.file.nblocks), 0);
	for (int i = 0; i < 500; i++) {
		pf_get_stats(pf, &ps);
		if (ps.done == 1)
			break;
		usleep(10000);
	}
	ck_assert_uint_eq(ps.done, 1);
	ck_assert_uint_eq(ps.errors, 0);
	img_get_stats(img, &before);
	ck_assert_uint_ge(before.data.entries, ino.file.nblocks);
	/* Now every block is a hit. */
	ck_assert_int_eq(img_file_read(img, NULL, &ino, 0, buf, 4 << 20, &got),
			 0);
	ck_assert_uint_eq(got, ino.size);
	img_get_stats(img, &after);
	ck_assert_uint_eq(after.data.misses, before.data.misses);
	ck_assert_uint_ge(after.data.hits - before.data.hits, ino.file.nblocks);
	pf_free(pf);
	img_close(img);
	free(buf);
}
END_TEST

START_TEST(test_queue_full)
{
	struct img *img = open_image(STAGE_NONE);
	struct pf_opts o = { .workers = 1, .queue_max = 2 };
	struct img_inode ino;
	struct pf_stats ps;
	struct pf *pf;
	int refused = 0;

	lookup(img, "big", &ino);
	ck_assert_int_eq(pf_new(img, &o, &pf), 0);
	for (int i = 0; i < 200; i++)
		if (pf_readahead(pf, &ino, (uint32_t)i % ino.file.nblocks,
				 ino.file.nblocks) == -EAGAIN)
			refused++;
	pf_get_stats(pf, &ps);
	ck_assert_int_gt(refused, 0);
	ck_assert_uint_eq(ps.dropped, (uint64_t)refused);
	ck_assert_uint_eq(ps.queued + ps.dropped, 200);
	/* Stopping with jobs still queued frees them (ASan checks). */
	pf_free(pf);
	img_close(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prefetch");
	TCase *tc = tcase_create("prefetch");
	char cmd[PATH_MAX * 4];
	SRunner *sr;
	int failed;

	snprintf(workdir, sizeof(workdir), "/tmp/sqc-test-pf.XXXXXX");
	if (!mkdtemp(workdir))
		return 1;
	snprintf(image, sizeof(image), "%s/img.sqfs", workdir);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/src' && seq 1 500000 > '%s/src/big' "
		 "&& mksquashfs '%s/src' '%s' -comp lz4 -b 64K -noappend "
		 "-no-progress -quiet >/dev/null",
		 workdir, workdir, workdir, image);
	if (system(cmd)) {
		printf("cannot make the test image (is squashfs-tools installed?)\n");
		return 77;
	}
	tcase_set_tags(tc, "threads"); /* the worker pool's: TSan runs it */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_readahead);
	tcase_add_test(tc, test_queue_full);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
	if (system(cmd))
		return EXIT_FAILURE;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

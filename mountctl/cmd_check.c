// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl check`: open an image and walk all of it
 * with img_check() (every directory, inode, file byte, symlink and xattr),
 * the deepest of the three validation depths.  The library logs each
 * problem on stderr; the counts go to stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "mountctl.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

#define LABEL "%-11s " /* the column of labels */

static void print_report(const struct img_check_report *rep)
{
	char sz[32];

	printf(LABEL "%llu\n", "inodes", (unsigned long long)rep->inodes);
	printf(LABEL "%llu\n", "directories", (unsigned long long)rep->dirs);
	printf(LABEL "%llu (%s read)\n", "files",
	       (unsigned long long)rep->files,
	       size_format(rep->file_bytes, sz, sizeof(sz)));
	printf(LABEL "%llu\n", "symlinks", (unsigned long long)rep->symlinks);
	printf(LABEL "%llu\n", "xattrs", (unsigned long long)rep->xattrs);
	printf(LABEL "%llu\n", "problems", (unsigned long long)rep->errors);
}

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "max-errors", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct img_super *sb;
	struct img_check_report rep;
	struct img_opts opts;
	unsigned long long max_errors = 0;
	struct img *img;
	const char *path;
	char sz[32], t[32], *end;
	double start;
	int c, err;

	while ((c = getopt_long(argc, argv, "m:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			errno = 0;
			max_errors = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || *optarg == '-')
				return mc_bad_usage(
					&mc_cmd_check,
					"bad --max-errors '%s' (a count; 0 for no limit)",
					optarg);
			break;
		case 'h':
			mc_usage(&mc_cmd_check, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_check, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return mc_bad_usage(&mc_cmd_check,
				    "expected one IMAGE, got %d arguments",
				    argc - optind);
	path = argv[optind];
	log_set_level(LOG_WARNING);
	img_opts_default(&opts);
	opts.stage = STAGE_NONE;
	err = img_open(path, &opts, &img);
	if (err) {
		mc_err("cannot open image '%s': %s", path,
		       err == -EMEDIUMTYPE ? "not a SquashFS image" :
					     err_str(err));
		return MC_EXIT_USAGE;
	}
	sb = img_get_super(img);
	printf(LABEL "%s\n", "image", path);
	printf(LABEL "%s, %u KiB blocks, %s\n", "format", img_compressor(img),
	       sb->block_size / 1024,
	       size_format(sb->bytes_used, sz, sizeof(sz)));
	fflush(stdout);
	start = mono_sec();
	err = img_check(img, &rep, max_errors);
	print_report(&rep);
	if (!err)
		printf(LABEL "sound (checked in %s)\n", "result",
		       mc_fmt_duration(mono_sec() - start, t, sizeof(t)));
	else if (err == -EFSCORRUPTED)
		printf(LABEL "corrupt: %llu problem%s (listed on stderr)\n",
		       "result", (unsigned long long)rep.errors,
		       rep.errors == 1 ? "" : "s");
	else
		printf(LABEL "not checked in full: %s\n", "result",
		       err_str(err));
	img_close(img);
	if (!err)
		return MC_EXIT_OK;
	return err == -EFSCORRUPTED ? MC_EXIT_FAIL : MC_EXIT_USAGE;
}

const struct mc_cmd mc_cmd_check = {
	.name = "check",
	.args = "[--max-errors N] IMAGE",
	.summary = "read all of an image and report whether it is sound",
	.help = "\n"
		"Walks every directory, inode, file, symlink and xattr of IMAGE and\n"
		"checks them (the deepest validation squashcache has).  Problems\n"
		"are listed on stderr, the counts on stdout.\n"
		"\n"
		"  -m, --max-errors N stop after N problems (default 0: no limit)\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 sound, 1 corrupt, 2 cannot open IMAGE, the check\n"
		"could not finish (read error, out of memory), or usage error.\n",
	.run = run,
};

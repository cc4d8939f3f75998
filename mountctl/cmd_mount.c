// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl mount`: parse the options and run the
 * mount service, mc_mount_image() (mount.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mountctl.h"

/* Is each -o option something mountctl can live with? */
static int check_opts(const char *opts)
{
	const char *p = opts;

	while (*p) {
		size_t n = 0;

		while (p[n] && p[n] != ',') {
			if (p[n] == '\\' && p[n + 1])
				n++;
			n++;
		}
		if (n == 5 && !strncmp(p, "debug", 5)) {
			mc_err("-o debug keeps squashcached in the foreground; run squashcached -d IMAGE MOUNTPOINT directly instead");
			return -EINVAL;
		}
		if (n > 4 && !strncmp(p, "ctl=", 4))
			fprintf(stderr,
				"mountctl: note: with -o ctl=PATH, mountctl status, wait and umount cannot find this mount's daemon\n");
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "options", required_argument, NULL, 'o' },
		{ "timeout", required_argument, NULL, 't' },
		{ "sif", no_argument, NULL, 'S' },
		{ "keep", no_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char real[PATH_MAX];
	char *opts = NULL;
	double timeout = 0;
	bool sif = false;
	int c, ret = MC_EXIT_FAIL;

	while ((c = getopt_long(argc, argv, "o:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (mc_append_opts(&opts, optarg))
				goto out_free;
			break;
		case 't':
			if (mc_parse_seconds(optarg, &timeout)) {
				ret = mc_bad_usage(
					&mc_cmd_mount,
					"bad --timeout '%s' (seconds, e.g. 30)",
					optarg);
				goto out_free;
			}
			break;
		case 'S':
			sif = true;
			break;
		case 'K':
			if (mc_append_opts(&opts, "keep"))
				goto out_free;
			break;
		case 'h':
			mc_usage(&mc_cmd_mount, stdout);
			ret = MC_EXIT_OK;
			goto out_free;
		default:
			mc_usage(&mc_cmd_mount, stderr);
			ret = MC_EXIT_USAGE;
			goto out_free;
		}
	}
	if (argc - optind != 1 && argc - optind != 2) {
		ret = mc_bad_usage(
			&mc_cmd_mount,
			"expected IMAGE and MOUNTPOINT, got %d arguments",
			argc - optind);
		goto out_free;
	}
	if (opts && check_opts(opts)) {
		ret = MC_EXIT_USAGE;
		goto out_free;
	}
	ret = mc_mount_image(argv[optind], argv[optind + 1], opts, timeout, sif,
			     real);
	if (!ret)
		printf("%s\n", real);
out_free:
	free(opts);
	return ret;
}

const struct mc_cmd mc_cmd_mount = {
	.name = "mount",
	.args = "[-o OPTIONS] [--timeout S] [--sif] [--keep] IMAGE [MOUNTPOINT]",
	.summary = "mount a SquashFS image with squashcached",
	.help = "\n"
		"Creates MOUNTPOINT (mode 0700, and its parents) if missing, starts\n"
		"squashcached, and returns once the mount answers.  Prints the\n"
		"mountpoint on success.  squashcached is taken from the directory\n"
		"of mountctl, else from PATH; SQUASHCACHED=PROGRAM overrides.\n"
		"\n"
		"  -o, --options OPTS squashcached options, comma separated (ram=,\n"
		"                     stage=, cache=, meta=, direct_io, allow_other,\n"
		"                     threads=, workers=, readahead=, log=FILE; see\n"
		"                     squashcached --help); may be repeated\n"
		"  -t, --timeout S    give up and stop the daemon after S seconds\n"
		"                     (default: squashcached's own limit, 60 s)\n"
		"      --sif          IMAGE is an Apptainer SIF file: mount its\n"
		"                     SquashFS partition (also done when the file\n"
		"                     starts with the SIF magic), i.e. -o offset=N\n"
		"      --keep         stage into a copy the keeper holds after the\n"
		"                     mount, and start from the one it kept of this\n"
		"                     image (-o keep; needs mountctl keeper; preview)\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 mounted; 1 failed (the mountpoint is taken or\n"
		"cannot be made, or squashcached failed); 2 usage error, a bad\n"
		"-o option included; 4 IMAGE is missing, unreadable or not\n"
		"SquashFS.\n",
	.run = run,
};

// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl wait`: parse the options and run the
 * wait-for-staging service, mc_wait_staged() (stage.c).
 */
#include <getopt.h>

#include "mountctl.h"

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char path[PATH_MAX];
	double timeout = 0;
	struct mountinfo_mount m;
	int c;

	while ((c = getopt_long(argc, argv, "t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (mc_parse_seconds(optarg, &timeout))
				return mc_bad_usage(
					&mc_cmd_wait,
					"bad --timeout '%s' (seconds, e.g. 600)",
					optarg);
			break;
		case 'h':
			mc_usage(&mc_cmd_wait, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_wait, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return mc_bad_usage(&mc_cmd_wait,
				    "expected one MOUNTPOINT, got %d arguments",
				    argc - optind);
	if (mc_resolve_arg(argv[optind], path, &m))
		return MC_EXIT_USAGE;
	return mc_wait_staged(&m, timeout);
}

const struct mc_cmd mc_cmd_wait = {
	.name = "wait",
	.args = "[--timeout S] MOUNTPOINT",
	.summary = "wait until a mount's image is staged in RAM",
	.help = "\n"
		"Returns once the daemon has staged all it plans to (or staging is\n"
		"off, or the image already sits in RAM).  Shows progress on stderr:\n"
		"a bar (bytes, %, MB/s, ETA) on a terminal, a plain line every 5 s\n"
		"otherwise.\n"
		"\n"
		"  -t, --timeout S    give up after S seconds (default: no limit)\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 staged, 1 timed out, 2 not a squashcache mount, its\n"
		"daemon does not answer, or usage error.\n",
	.run = run,
};

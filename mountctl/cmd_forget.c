// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl forget`: drop one's kept copies of an
 * image, or all of them, from the keeper (root: anyone's).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keep/keep.h"
#include "mountctl.h"
#include "util/err.h"

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *name = "";
	char abs[PATH_MAX];
	bool all = false;
	uint64_t n;
	int c, err;

	while ((c = getopt_long(argc, argv, "as:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			all = true;
			break;
		case 's':
			path = optarg;
			break;
		case 'h':
			mc_usage(&mc_cmd_forget, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_forget, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (argc - optind != (all ? 0 : 1))
		return mc_bad_usage(&mc_cmd_forget,
				    "expected one IMAGE or --all");
	if (!all) /* kept under the name the daemon gave: absolute */
		name = realpath(argv[optind], abs) ? abs : argv[optind];
	err = keep_ask(path, KEEP_FORGET, name, 0, KEEP_BUDGET_MS, &n);
	if (err == -ENOENT) {
		mc_err("no keeper runs (see mountctl keeper)");
		return MC_EXIT_FAIL;
	}
	if (err == -ETIMEDOUT) {
		mc_err("forget: the keeper did not answer within %d s; try again later",
		       KEEP_BUDGET_MS / 1000);
		return MC_EXIT_FAIL;
	}
	if (err) {
		mc_err("forget: %s", err_str(err));
		return MC_EXIT_FAIL;
	}
	printf("forgot %llu kept cop%s\n", (unsigned long long)n,
	       n == 1 ? "y" : "ies");
	return MC_EXIT_OK;
}

const struct mc_cmd mc_cmd_forget = {
	.name = "forget",
	.args = "[--socket PATH] IMAGE | --all",
	.summary = "drop one's staged copies the keeper holds (preview)",
	.help = "\n"
		"Asks the keeper (mountctl keeper) to drop the caller's kept\n"
		"copies of IMAGE, or all of them with --all; root drops anyone's.\n"
		"A copy in use by a mount is dropped when the mount ends.\n"
		"\n"
		"  -a, --all          every copy one may drop\n"
		"  -s, --socket PATH  the keeper's socket (default\n"
		"                     " KEEP_SOCKET ")\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 done, 1 no keeper runs or it refused, 2 usage\n"
		"error.\n",
	.run = run,
};

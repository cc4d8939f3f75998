// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl stage`: start or extend staging of a
 * mount made with stage=none or stage=meta, or with a ram= budget smaller
 * than the image, through the daemon's "stage" command (lib/ctl/ctl.h),
 * and with --wait follow it like `mountctl wait` does.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "mountctl.h"
#include "util/err.h"
#include "util/size.h"

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "meta", no_argument, NULL, 'm' },
		{ "ram", required_argument, NULL, 'r' },
		{ "wait", no_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char path[PATH_MAX], cmd[64], why[PATH_MAX + 256], msg[256];
	bool meta = false, wait = false;
	double timeout = 0;
	uint64_t ram = 0;
	struct mc_mount m;
	char *reply = NULL;
	int c, err;

	while ((c = getopt_long(argc, argv, "mr:wt:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			meta = true;
			break;
		case 'r':
			if (size_parse(optarg, size_ram_total(), &ram) ||
			    ram == 0)
				return mc_bad_usage(
					&mc_cmd_stage,
					"bad --ram '%s' (a size such as 8G, 512M or 25%%)",
					optarg);
			break;
		case 'w':
			wait = true;
			break;
		case 't':
			if (mc_parse_seconds(optarg, &timeout))
				return mc_bad_usage(
					&mc_cmd_stage,
					"bad --timeout '%s' (seconds, e.g. 600)",
					optarg);
			break;
		case 'h':
			mc_usage(&mc_cmd_stage, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_stage, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return mc_bad_usage(&mc_cmd_stage,
				    "expected one MOUNTPOINT, got %d arguments",
				    argc - optind);
	if (mc_resolve_arg(argv[optind], path, &m))
		return MC_EXIT_USAGE;
	snprintf(cmd, sizeof(cmd), "stage %s %llu", meta ? "meta" : "full",
		 (unsigned long long)ram);
	err = mc_request(&m, cmd, &reply);
	if (err) {
		mc_err("%s", mc_explain(&m, err, true, why, sizeof(why)));
		return MC_EXIT_USAGE;
	}
	if (!mc_json_is_true(reply, "ok")) {
		if (ctl_json_str(reply, "error", msg, sizeof(msg)))
			snprintf(msg, sizeof(msg), "%s", reply);
		mc_err("the daemon of '%s' cannot stage: %s (is it older than this mountctl?)",
		       m.path, msg);
		free(reply);
		return MC_EXIT_FAIL;
	}
	free(reply);
	if (!wait)
		return MC_EXIT_OK;
	return mc_wait_staged(&m, timeout);
}

const struct mc_cmd mc_cmd_stage = {
	.name = "stage",
	.args = "[--meta] [--ram SIZE] [--wait [--timeout S]] MOUNTPOINT",
	.summary = "start or extend staging of a mount's image into RAM",
	.help = "\n"
		"For a mount made with stage=none or stage=meta, or with a ram=\n"
		"smaller than its image: the daemon stages what is not in RAM yet,\n"
		"metadata first.  Bytes already staged stay; the budget only grows.\n"
		"\n"
		"  -m, --meta         stage only the metadata tables (default: all)\n"
		"  -r, --ram SIZE     RAM budget, e.g. 8G or 25% (default: the\n"
		"                     mount's ram=, itself half of memory by default)\n"
		"  -w, --wait         wait until staged, showing progress like wait\n"
		"  -t, --timeout S    with --wait: give up after S seconds\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 started (or staged, with --wait), 1 the daemon\n"
		"refused or --wait timed out, 2 not a squashcache mount, its daemon\n"
		"does not answer, or usage error.\n",
	.run = run,
};

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

/* Ask the daemon of @m to stage. */
static int stage(const struct mountinfo_mount *m, enum ctl_stage_mode mode,
		 uint64_t budget)
{
	const struct ctl_req req = { .cmd = CTL_CMD_STAGE,
				     .stage = { mode, budget } };
	char why[PATH_MAX + 256];
	struct ctl_reply *rep;
	int err;

	rep = malloc(sizeof(*rep));
	if (!rep) {
		mc_err("out of memory");
		return MC_EXIT_FAIL;
	}
	err = mc_request(m, &req, rep, NULL);
	if (err == -EBADMSG && rep->error[0]) {
		/* Refused, not unreachable: exit 1 as the help says. */
		mc_err("the daemon of '%s' cannot stage: %s", m->path,
		       rep->error);
		free(rep);
		return MC_EXIT_FAIL;
	}
	free(rep);
	if (err) {
		mc_err("%s", mc_explain(m, err, true, why, sizeof(why)));
		return MC_EXIT_USAGE;
	}
	return MC_EXIT_OK;
}

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
	char path[PATH_MAX];
	bool meta = false, wait = false;
	double timeout = 0;
	uint64_t ram = 0;
	struct mountinfo_mount m;
	int c;

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
	c = stage(&m, meta ? CTL_STAGE_META : CTL_STAGE_FULL, ram);
	if (c || !wait)
		return c;
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

// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl keeper`: its options, and asking a
 * running keeper to evict.  The server itself, root's, is
 * slurm/keep_srv.c (keep_serve()), its logic lib/keep's; see
 * slurm/README.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "keep/keep.h"
#include "mountctl.h"
#include "slurm/keep_site.h"
#include "slurm/keep_srv.h"
#include "util/err.h"
#include "util/size.h"

/* --evict: ask the running keeper to free @bytes. */
static int evict(const char *path, uint64_t bytes)
{
	uint64_t freed;
	char a[32];
	int err =
		keep_ask(path, KEEP_EVICT, NULL, bytes, KEEP_BUDGET_MS, &freed);

	if (err) {
		mc_err("keeper: cannot evict: %s", err_str(err));
		return MC_EXIT_FAIL;
	}
	printf("freed %s\n", size_format(freed, a, sizeof(a)));
	return MC_EXIT_OK;
}

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "keep", required_argument, NULL, 'k' },
		{ "socket", required_argument, NULL, 's' },
		{ "min-available", required_argument, NULL, 'm' },
		{ "evict", required_argument, NULL, 'e' },
		{ "site", required_argument, NULL, 'S' },
		{ "site-keep", required_argument, NULL, 'K' },
		{ "site-seal", required_argument, NULL, 'L' },
		{ "site-roots", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t total = size_ram_total(), budget = total / 4,
		 floor = total / 20, site_budget = 0;
	const char *path = KEEP_SOCKET;
	struct keep_srv_opts o = { 0 };
	struct stat st = { 0 };
	uint64_t bytes = 0;
	bool ev = false, site_keep = false;
	int c;

	while ((c = getopt_long(argc, argv, "k:s:m:e:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'S':
			if (optarg[0] && optarg[0] != '/')
				return mc_bad_usage(
					&mc_cmd_keeper,
					"bad --site '%s': absolute paths, ':' separated",
					optarg);
			o.site = optarg;
			break;
		case 'K':
			site_keep = true;
			if (size_parse(optarg, total, &site_budget))
				return mc_bad_usage(&mc_cmd_keeper,
						    "bad --site-keep '%s'",
						    optarg);
			break;
		case 'L':
			if (!strcmp(optarg, "auto"))
				o.site_seal = KEEP_SITE_SEAL_AUTO;
			else if (!strcmp(optarg, "require"))
				o.site_seal = KEEP_SITE_SEAL_REQUIRE;
			else if (!strcmp(optarg, "root"))
				o.site_seal = KEEP_SITE_SEAL_ROOT;
			else
				return mc_bad_usage(
					&mc_cmd_keeper,
					"bad --site-seal '%s' (auto, require or root)",
					optarg);
			break;
		case 'R':
			if (optarg[0] != '/')
				return mc_bad_usage(
					&mc_cmd_keeper,
					"bad --site-roots '%s': an absolute path",
					optarg);
			o.site_roots = optarg;
			break;
		case 'e':
			ev = true;
			if (size_parse(optarg, 0, &bytes))
				return mc_bad_usage(&mc_cmd_keeper,
						    "bad --evict '%s'", optarg);
			break;
		case 'k':
			if (size_parse(optarg, total, &budget))
				return mc_bad_usage(&mc_cmd_keeper,
						    "bad --keep '%s'", optarg);
			break;
		case 's':
			path = optarg;
			break;
		case 'm':
			if (size_parse(optarg, total, &floor))
				return mc_bad_usage(&mc_cmd_keeper,
						    "bad --min-available '%s'",
						    optarg);
			break;
		case 'h':
			mc_usage(&mc_cmd_keeper, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_keeper, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (optind != argc)
		return mc_bad_usage(&mc_cmd_keeper, "takes no arguments");
	if (ev)
		return evict(path, bytes);
	if (o.site_seal == KEEP_SITE_SEAL_ROOT && !o.site_roots)
		return mc_bad_usage(&mc_cmd_keeper,
				    "--site-seal root needs --site-roots FILE");
	o.socket = path;
	o.budget = budget;
	o.floor = floor;
	/* Site copies have a budget of their own, --keep's by default. */
	o.site_budget = site_keep ? site_budget : budget;
	/* The daemon this mountctl runs: its processes use copies. */
	o.has_daemon = !mc_daemon_stat(&st);
	o.daemon_dev = st.st_dev;
	o.daemon_ino = st.st_ino;
	return keep_serve(&o) ? MC_EXIT_FAIL : MC_EXIT_OK;
}

const struct mc_cmd mc_cmd_keeper = {
	.name = "keeper",
	.args = "[--keep SIZE] [--min-available SIZE] [--socket PATH] [--site PREFIXES [--site-keep SIZE] [--site-seal auto|require|root] [--site-roots FILE]] | --evict SIZE",
	.summary = "hold staged copies between a user's mounts (root; preview)",
	.help = "\n"
		"Runs in the foreground as root and holds the staged copy of an\n"
		"image once its mount (squashcached -o keep) ends, so that the\n"
		"same user's next mount of the same, unchanged image starts\n"
		"staged.  What copies not in use hold in memory, all users\n"
		"together, stays within --keep: the user whose copies hold the\n"
		"most loses their least recently used first.  A copy is in use\n"
		"while a live squashcached of its user serves a mount from it.\n"
		"When MemAvailable falls below --min-available, copies not in\n"
		"use are dropped too.  Copies are held in memory only: when the\n"
		"keeper ends, they are gone.  A user other than root has at most\n"
		"64 connections and 64 copies at once.\n"
		"\n"
		"With --site, images whose real path is under one of PREFIXES\n"
		"(':' separated) are the site's: the keeper itself reads each\n"
		"once from storage into a copy that no user can write, checked\n"
		"against the image's seal (IMAGE.sqcseal), and every user's mount\n"
		"of it that can open the image uses that one copy; the mounts serve\n"
		"at once and use its chunks as they land.  Users' own images stay\n"
		"per user.\n"
		"\n"
		"  -k, --keep SIZE           kept copies at most (default 25%)\n"
		"  -m, --min-available SIZE  drop kept copies below this much\n"
		"                            available memory (default 5%)\n"
		"  -s, --socket PATH         default " KEEP_SOCKET "\n"
		"  -e, --evict SIZE          ask the running keeper to drop kept\n"
		"                            copies until SIZE is freed (root)\n"
		"      --site PREFIXES       the site's images, shared by all users\n"
		"      --site-keep SIZE      site copies not in use at most\n"
		"                            (default: --keep's size, besides it)\n"
		"      --site-seal MODE      auto: check against a seal if there is\n"
		"                            one (default); require: a seal, or no\n"
		"                            site copy; root: a seal whose root hash\n"
		"                            --site-roots names\n"
		"      --site-roots FILE     lines 'HEX PATH': the root hash of the\n"
		"                            image at PATH (root's file); a root it\n"
		"                            names is required in any mode\n"
		"  -h, --help                this text\n"
		"\n"
		"Exit status: 0 stopped by SIGTERM/SIGINT, 1 cannot start, 2 usage\n"
		"error.\n",
	.run = run,
};

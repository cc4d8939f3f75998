// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl umount`: parse the options and run the
 * unmount service, mc_unmount() (unmount.c).
 */
#include <errno.h>
#include <getopt.h>

#include "mountctl.h"
#include "util/err.h"

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lazy", no_argument, NULL, 'l' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double timeout = MC_UMOUNT_TIMEOUT_S;
	char path[PATH_MAX];
	struct mountinfo_mount m;
	bool lazy = false;
	int c, err;

	while ((c = getopt_long(argc, argv, "lt:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			lazy = true;
			break;
		case 't':
			if (mc_parse_seconds(optarg, &timeout))
				return mc_bad_usage(
					&mc_cmd_umount,
					"bad --timeout '%s' (seconds, e.g. 10)",
					optarg);
			break;
		case 'h':
			mc_usage(&mc_cmd_umount, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_umount, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return mc_bad_usage(&mc_cmd_umount,
				    "expected one MOUNTPOINT, got %d arguments",
				    argc - optind);
	err = mc_resolve(argv[optind], path, &m);
	if (err == -ENOENT) {
		mc_err("'%s' is not a squashcache mount (see mountctl status)",
		       argv[optind]);
		return MC_EXIT_FAIL;
	}
	if (err == -EMEDIUMTYPE) {
		mc_err("'%s' is a %s mount, not a squashcache mount: mountctl leaves it alone",
		       argv[optind], m.fstype);
		return MC_EXIT_FAIL;
	}
	if (err) {
		mc_err("cannot resolve mountpoint '%s': %s", argv[optind],
		       err_str(err));
		return MC_EXIT_FAIL;
	}
	return mc_unmount(&m, lazy, timeout) ? MC_EXIT_FAIL : MC_EXIT_OK;
}

const struct mc_cmd mc_cmd_umount = {
	.name = "umount",
	.args = "[--lazy] [--timeout S] MOUNTPOINT",
	.summary = "unmount a squashcache mount and stop its daemon",
	.help = "\n"
		"Asks the daemon to unmount and waits until the mount is gone and\n"
		"the daemon has exited.  If the daemon does not answer (a stale\n"
		"mount), unmounts with umount (root) or fusermount3 -u.\n"
		"\n"
		"  -l, --lazy         when the daemon does not answer, detach the\n"
		"                     mount even if files are open on it\n"
		"  -t, --timeout S    wait at most S seconds (default 10)\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 unmounted, 1 not a squashcache mount or could not\n"
		"unmount, 2 usage error.\n",
	.run = run,
};

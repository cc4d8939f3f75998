// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl wait`: poll a mount's daemon until it has
 * staged everything it plans to keep in RAM, so that a job script can
 * start training only once reads no longer touch the shared filesystem.
 * Progress goes to stderr: a bar redrawn in place on a terminal, a plain
 * line every few seconds otherwise.  `mountctl stage --wait` shares it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mountctl.h"
#include "util/err.h"

#define WAIT_POLL_MS 200 /* between two stats requests */
#define WAIT_PLAIN_S 5 /* between two plain lines when not on a terminal */

int mc_wait_staged(struct mc_mount *m, double timeout)
{
	char line[256], why[PATH_MAX + 256];
	bool tty = isatty(STDERR_FILENO), shown = false;
	double deadline = mc_now() + timeout, next_plain = 0;
	char *st = NULL;
	int err;

	for (;;) {
		free(st);
		err = mc_request(m, "stats", &st);
		if (err) {
			if (shown)
				fputc('\n', stderr);
			mc_err("%s",
			       mc_explain(m, err, true, why, sizeof(why)));
			return MC_EXIT_USAGE;
		}
		if (mc_is_staged(st))
			break;
		if (tty) {
			fprintf(stderr, "\r%s\033[K",
				mc_stage_line(st, line, sizeof(line)));
			shown = true;
		} else if (mc_now() >= next_plain) {
			fprintf(stderr, "%s\n",
				mc_stage_line(st, line, sizeof(line)));
			next_plain = mc_now() + WAIT_PLAIN_S;
		}
		if (timeout > 0 && mc_now() >= deadline) {
			if (shown)
				fputc('\n', stderr);
			mc_err("staging of '%s' is not done after %g s: %s",
			       m->path, timeout,
			       mc_stage_line(st, line, sizeof(line)));
			free(st);
			return MC_EXIT_FAIL;
		}
		mc_sleep_ms(WAIT_POLL_MS);
	}
	/* The last line says how it ended, on a terminal or not. */
	fprintf(stderr, "%s%s%s\n", tty ? "\r" : "",
		mc_stage_line(st, line, sizeof(line)), tty ? "\033[K" : "");
	free(st);
	return MC_EXIT_OK;
}

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char path[PATH_MAX];
	double timeout = 0;
	struct mc_mount m;
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

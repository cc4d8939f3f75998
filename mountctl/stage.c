// SPDX-License-Identifier: MIT
/*
 * This file implements mountctl's wait-for-staging service,
 * mc_wait_staged(), shared by `mountctl wait` and `mountctl stage --wait`:
 * poll a mount's daemon until it has staged everything it plans to keep
 * in RAM, so that a job script can start training only once reads no
 * longer touch the shared filesystem.  Progress goes to stderr: a bar
 * redrawn in place on a terminal, a plain line every few seconds
 * otherwise.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mountctl.h"
#include "util/clock.h"
#include "util/err.h"

#define WAIT_POLL_MS 200 /* between two stats requests */
#define WAIT_PLAIN_S 5 /* between two plain lines when not on a terminal */

int mc_wait_staged(struct mountinfo_mount *m, double timeout)
{
	const struct ctl_req req = { .cmd = CTL_CMD_STATS };
	char line[256], why[PATH_MAX + 256];
	bool tty = isatty(STDERR_FILENO), shown = false;
	double deadline = mono_sec() + timeout, next_plain = 0;
	struct ctl_reply *rep = malloc(sizeof(*rep));
	const struct ctl_stats *st;
	int err, ret = MC_EXIT_OK;

	if (!rep) {
		mc_err("out of memory");
		return MC_EXIT_FAIL;
	}
	st = &rep->stats;
	for (;;) {
		err = mc_request(m, &req, rep, NULL);
		if (err) {
			if (shown)
				fputc('\n', stderr);
			mc_err("%s",
			       mc_explain(m, err, true, why, sizeof(why)));
			ret = MC_EXIT_USAGE;
			goto out_free;
		}
		if (mc_is_staged(st))
			break;
		if (tty) {
			fprintf(stderr, "\r%s\033[K",
				mc_stage_line(st, line, sizeof(line)));
			shown = true;
		} else if (mono_sec() >= next_plain) {
			fprintf(stderr, "%s\n",
				mc_stage_line(st, line, sizeof(line)));
			next_plain = mono_sec() + WAIT_PLAIN_S;
		}
		if (timeout > 0 && mono_sec() >= deadline) {
			if (shown)
				fputc('\n', stderr);
			mc_err("staging of '%s' is not done after %g s: %s",
			       m->path, timeout,
			       mc_stage_line(st, line, sizeof(line)));
			ret = MC_EXIT_FAIL;
			goto out_free;
		}
		sleep_ms(WAIT_POLL_MS);
	}
	/* The last line says how it ended, on a terminal or not. */
	fprintf(stderr, "%s%s%s\n", tty ? "\r" : "",
		mc_stage_line(st, line, sizeof(line)), tty ? "\033[K" : "");
out_free:
	free(rep);
	return ret;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements mountctl's entry point: global options, the verb
 * table and the messages every verb shares.
 *
 * Each verb lives in its own cmd_<verb>.c and is listed in cmds[] below;
 * it receives its own argv whose argv[0] is "mountctl VERB", so getopt's
 * messages name the verb.  Exit codes: 0 done, 1 failed (each verb says
 * what that means), 2 usage error or cannot start.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mountctl.h"

static const struct mc_cmd *const cmds[] = {
	&mc_cmd_mount, &mc_cmd_umount, &mc_cmd_status,	&mc_cmd_wait,
	&mc_cmd_stage, &mc_cmd_check,  &mc_cmd_acquire, &mc_cmd_release,
	&mc_cmd_job,   &mc_cmd_order,  &mc_cmd_keeper,	&mc_cmd_forget,
	&mc_cmd_seal,
};

static void usage(FILE *f)
{
	fprintf(f, "usage: mountctl [--help] [--version] COMMAND [ARGS]\n"
		   "\n"
		   "Mount SquashFS images with squashcached and watch them.\n"
		   "\n"
		   "commands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		fprintf(f, "  %-7s %s\n", cmds[i]->name, cmds[i]->summary);
	fprintf(f,
		"\n"
		"Run 'mountctl COMMAND --help' for a command's options.\n"
		"Exit status: 0 done, 1 failed, 2 usage error (see each command).\n");
}

void mc_usage(const struct mc_cmd *c, FILE *f)
{
	fprintf(f, "usage: mountctl %s %s\n\n%s\n%s", c->name, c->args,
		c->summary, c->help);
}

int mc_bad_usage(const struct mc_cmd *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mountctl %s: ", c->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	mc_usage(c, stderr);
	return MC_EXIT_USAGE;
}

void mc_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mountctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

int mc_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

static const struct mc_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(cmds[i]->name, name))
			return cmds[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct mc_cmd *c;
	char prog[64];

	if (argc < 2) {
		fprintf(stderr, "mountctl: no command given\n");
		usage(stderr);
		return MC_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return MC_EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("mountctl %s\n", SQC_VERSION);
		return MC_EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc < 3) {
			usage(stdout);
			return MC_EXIT_OK;
		}
		c = find_cmd(argv[2]);
		if (c) {
			mc_usage(c, stdout);
			return MC_EXIT_OK;
		}
		fprintf(stderr, "mountctl: unknown command '%s'\n", argv[2]);
		usage(stderr);
		return MC_EXIT_USAGE;
	}
	if (argv[1][0] == '-') {
		fprintf(stderr, "mountctl: unknown option '%s'\n", argv[1]);
		usage(stderr);
		return MC_EXIT_USAGE;
	}
	c = find_cmd(argv[1]);
	if (!c) {
		fprintf(stderr, "mountctl: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return MC_EXIT_USAGE;
	}
	snprintf(prog, sizeof(prog), "mountctl %s", c->name);
	argv[1] = prog;
	return c->run(argc - 1, argv + 1);
}

/* SPDX-License-Identifier: MIT */
/*
 * This file declares squashcached's command line: see options.c.
 */
#ifndef SQC_DAEMON_OPTIONS_H
#define SQC_DAEMON_OPTIONS_H

struct sqcd_opts;

/**
 * sqcd_opts_parse() - Parse the command line into options, defaults first.
 * @o: zeroed options, set here (but threads=, which depends on the image:
 *     0 if not given)
 * @argc: main()'s
 * @argv: main()'s; @o keeps pointers into it
 * @status: set to the exit status when not going on
 *
 * Return: 0 to go on; otherwise main() exits with *@status: -ECANCELED
 * after --help or --version (status 0), -EINVAL after a usage error
 * (said on stderr; status 2).
 * Context: main thread, at start.
 */
int sqcd_opts_parse(struct sqcd_opts *o, int argc, char **argv, int *status);

#endif /* SQC_DAEMON_OPTIONS_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file holds what the unit tests that build images share: sh(), which
 * runs a fixture command (mksquashfs, cp, dd) and ends the test binary
 * when it fails, since every check after it would test nothing.
 */
#ifndef SQC_TESTS_UNIT_FIXTURE_H
#define SQC_TESTS_UNIT_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0) {
		fprintf(stderr, "fixture command failed: %s\n", cmd);
		exit(1);
	}
}

#endif /* SQC_TESTS_UNIT_FIXTURE_H */

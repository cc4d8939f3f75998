/* SPDX-License-Identifier: MIT */
/*
 * This file implements the project's error conventions: functions return 0 or
 * a negative errno, and image corruption is -EFSCORRUPTED, as in the kernel.
 */
#ifndef SQC_UTIL_ERR_H
#define SQC_UTIL_ERR_H

#include <errno.h>

#ifndef EFSCORRUPTED
#define EFSCORRUPTED EUCLEAN /* the image's bytes are not valid SquashFS */
#endif

/**
 * err_str() - Describe a negative (or positive) errno value.
 * @err: error code, either sign
 *
 * Return: a static string; -EFSCORRUPTED gives "image is corrupt".
 * Context: any thread; cannot fail.
 */
const char *err_str(int err);

#endif /* SQC_UTIL_ERR_H */

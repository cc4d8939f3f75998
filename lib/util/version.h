/* SPDX-License-Identifier: MIT */
/*
 * This file has the one version string of the project, printed by
 * `squashcached --version` and `mountctl --version`.  A build may override
 * it with -DSQC_VERSION='"x.y"'.
 */
#ifndef SQC_UTIL_VERSION_H
#define SQC_UTIL_VERSION_H

#ifndef SQC_VERSION
#define SQC_VERSION "0.1"
#endif

#endif /* SQC_UTIL_VERSION_H */

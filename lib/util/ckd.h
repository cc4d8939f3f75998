/* SPDX-License-Identifier: MIT */
/*
 * This file implements checked integer arithmetic in the shape of C23's
 * <stdckdint.h>: each macro stores the result through its first argument and
 * returns true when the mathematically correct result did not fit.  Every
 * offset or size derived from image bytes is computed with these.
 */
#ifndef SQC_UTIL_CKD_H
#define SQC_UTIL_CKD_H

#include <stdbool.h>

#define ckd_add(r, a, b) __builtin_add_overflow((a), (b), (r))
#define ckd_sub(r, a, b) __builtin_sub_overflow((a), (b), (r))
#define ckd_mul(r, a, b) __builtin_mul_overflow((a), (b), (r))

#endif /* SQC_UTIL_CKD_H */

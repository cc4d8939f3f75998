// SPDX-License-Identifier: MIT
/*
 * This file implements err_str(), the one place that turns error codes into
 * words for users.
 */
#include <string.h>

#include "util/err.h"

const char *err_str(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case EFSCORRUPTED:
		return "image is corrupt";
	case ENOTSUP:
		return "not supported";
	default:
		return strerror(err);
	}
}

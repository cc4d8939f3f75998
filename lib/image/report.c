// SPDX-License-Identifier: MIT
/*
 * This file implements corruption reporting (IMG_CORRUPT()) and logging
 * once per image and place in the code.  It calls nothing else of
 * lib/image, so that every other file may call it.
 */
#define LOG_MOD "image"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "image/image_i.h"
#include "util/hash.h"
#include "util/log.h"

static uint64_t site_key(const char *file, int line)
{
	uint64_t h = fnv1a64(file, strlen(file));

	return (h << 20 | (uint64_t)(line & 0xfffff)) | 1;
}

bool img__log_once(struct img *img, const char *file, int line)
{
	uint64_t key = site_key(file, line);
	size_t n = ARRAY_SIZE(img->logged);

	for (size_t i = 0; i < n; i++) {
		size_t slot = (key + i) % n;
		uint64_t cur = atomic_load(&img->logged[slot]);

		while (cur == 0) {
			if (atomic_compare_exchange_weak(&img->logged[slot],
							 &cur, key))
				return true;
		}
		if (cur == key)
			return false;
	}
	return false; /* table full: enough has been said */
}

int img__corrupt(struct img *img, const char *file, const char *func, int line,
		 const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	atomic_fetch_add_explicit(&img->corrupt, 1, memory_order_relaxed);
	if (!img__log_once(img, file, line))
		return -EFSCORRUPTED;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_err("corrupt image '%s': %s [%s:%d]", img->path, msg, func, line);
	return -EFSCORRUPTED;
}

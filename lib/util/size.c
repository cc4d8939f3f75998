// SPDX-License-Identifier: MIT
/*
 * This file implements the byte-size parser and printer of size.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/ckd.h"
#include "util/size.h"

int size_parse(const char *s, uint64_t total, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (*end == '%') {
		if (!total || end[1] || v > 100)
			return -EINVAL;
		*out = total / 100 * v;
		return 0;
	}
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end) {
		end++;
		if (!strcasecmp(end, "ib") || !strcasecmp(end, "b"))
			end += strlen(end);
	}
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

char *size_format(uint64_t bytes, char *buf, size_t cap)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	unsigned int i = 0;

	while (v >= 1024 && i + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, cap, "%.1f %s", v, unit[i]);
	return buf;
}

uint64_t size_ram_total(void)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	long psz = sysconf(_SC_PAGESIZE);
	uint64_t r;

	if (pages <= 0 || psz <= 0)
		return 0;
	if (ckd_mul(&r, (uint64_t)pages, (uint64_t)psz))
		return 0;
	return r;
}

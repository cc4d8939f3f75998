// SPDX-License-Identifier: MIT
/*
 * This file implements reading /proc/self/mountinfo (see mountinfo.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mountinfo.h"

#define MAX_FIELDS 64

static bool is_octal(char c, char max)
{
	return c >= '0' && c <= max;
}

/* Undo the kernel's octal escapes in place ("\040" becomes a space). */
static void unescape(char *s)
{
	char *dst = s;

	while (*s) {
		if (s[0] == '\\' && is_octal(s[1], '3') &&
		    is_octal(s[2], '7') && is_octal(s[3], '7')) {
			*dst++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
					(s[3] - '0'));
			s += 4;
		} else {
			*dst++ = *s++;
		}
	}
	*dst = '\0';
}

int mountinfo_parse_line(char *line, struct mountinfo_entry *e)
{
	char *f[MAX_FIELDS];
	int n = 0, dash = -1;
	char *p = line;

	while (*p && n < MAX_FIELDS) {
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		f[n] = p;
		while (*p && *p != ' ' && *p != '\n')
			p++;
		if (*p)
			*p++ = '\0';
		/* The separator follows the six fixed fields. */
		if (dash < 0 && n >= 6 && !strcmp(f[n], "-"))
			dash = n;
		n++;
	}
	if (dash < 0 || n < dash + 3 ||
	    sscanf(f[2], "%u:%u", &e->major, &e->minor) != 2)
		return -EINVAL;
	unescape(f[4]);
	unescape(f[dash + 1]);
	unescape(f[dash + 2]);
	e->mountpoint = f[4];
	e->fstype = f[dash + 1];
	e->source = f[dash + 2];
	e->super_opts = n > dash + 3 ? f[dash + 3] : "";
	return 0;
}

int mountinfo_scan(FILE *f,
		   int (*fn)(const struct mountinfo_entry *e, void *arg),
		   void *arg)
{
	struct mountinfo_entry e;
	char *line = NULL;
	size_t cap = 0;
	int err = 0;

	for (;;) {
		errno = 0;
		if (getline(&line, &cap, f) < 0) {
			if (errno == ENOMEM)
				err = -ENOMEM;
			break;
		}
		if (mountinfo_parse_line(line, &e))
			continue;
		err = fn(&e, arg);
		if (err)
			break;
	}
	free(line);
	return err;
}

int mountinfo_foreach(int (*fn)(const struct mountinfo_entry *e, void *arg),
		      void *arg)
{
	FILE *f;
	int err;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	err = mountinfo_scan(f, fn, arg);
	fclose(f);
	return err;
}

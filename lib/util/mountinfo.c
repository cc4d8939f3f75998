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

/* Open /proc/self/mountinfo.  Return: the stream, or NULL (errno set). */
static FILE *open_table(void)
{
	return fopen("/proc/self/mountinfo", "re");
}

int mountinfo_foreach(int (*fn)(const struct mountinfo_entry *e, void *arg),
		      void *arg)
{
	FILE *f;
	int err;

	f = open_table();
	if (!f)
		return -errno;
	err = mountinfo_scan(f, fn, arg);
	fclose(f);
	return err;
}

/* The user_id= value in a comma-separated option list, or (uid_t)-1. */
static uid_t opt_uid(const char *opts)
{
	const char *p = opts;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n > 8 && !strncmp(p, "user_id=", 8)) {
			char num[24];

			if (n - 8 >= sizeof(num))
				break;
			memcpy(num, p + 8, n - 8);
			num[n - 8] = '\0';
			return (uid_t)strtoul(num, NULL, 10);
		}
		p += n + (p[n] == ',');
	}
	return (uid_t)-1;
}

/* Copy @src into @dst of @cap bytes; -ENAMETOOLONG if it does not fit. */
static int copy_field(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

/* Copy @e into @m.  Return: 0; -ENAMETOOLONG for a field too long. */
static int copy_mount(const struct mountinfo_entry *e,
		      struct mountinfo_mount *m)
{
	if (copy_field(m->path, sizeof(m->path), e->mountpoint) ||
	    copy_field(m->fstype, sizeof(m->fstype), e->fstype) ||
	    copy_field(m->source, sizeof(m->source), e->source))
		return -ENAMETOOLONG;
	m->uid = opt_uid(e->super_opts);
	return 0;
}

struct find_arg {
	const char *path; /* the mount point looked for */
	struct mountinfo_mount *out; /* the last mount there */
	struct mountinfo_mount *m; /* scratch */
	bool found;
};

static int find_one(const struct mountinfo_entry *e, void *arg)
{
	struct find_arg *a = arg;

	/* Keep going: the last match is the top of a stack of mounts. */
	if (!strcmp(e->mountpoint, a->path) && !copy_mount(e, a->m)) {
		*a->out = *a->m;
		a->found = true;
	}
	return 0;
}

int mountinfo_find_in(FILE *f, const char *path, struct mountinfo_mount *out)
{
	struct find_arg a = { .path = path, .out = out };
	int err;

	a.m = malloc(sizeof(*a.m));
	if (!a.m)
		return -ENOMEM;
	err = mountinfo_scan(f, find_one, &a);
	free(a.m);
	if (err)
		return err;
	return a.found ? 0 : -ENOENT;
}

int mountinfo_find(const char *path, struct mountinfo_mount *out)
{
	FILE *f = open_table();
	int err;

	if (!f)
		return -errno;
	err = mountinfo_find_in(f, path, out);
	fclose(f);
	return err;
}

struct list_arg {
	const char *fstype; /* the type listed */
	struct mountinfo_mount *v; /* the mounts */
	size_t n; /* how many */
	size_t cap; /* room in @v */
};

static int list_one(const struct mountinfo_entry *e, void *arg)
{
	struct list_arg *a = arg;

	if (strcmp(e->fstype, a->fstype))
		return 0;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 4;
		struct mountinfo_mount *v = reallocarray(a->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	/* A field too long to copy is not one of ours: skip it. */
	if (!copy_mount(e, &a->v[a->n]))
		a->n++;
	return 0;
}

int mountinfo_list_in(FILE *f, const char *fstype, struct mountinfo_mount **out,
		      size_t *n)
{
	struct list_arg a = { .fstype = fstype };
	int err = mountinfo_scan(f, list_one, &a);

	if (err) {
		free(a.v);
		return err;
	}
	*out = a.v;
	*n = a.n;
	return 0;
}

int mountinfo_list(const char *fstype, struct mountinfo_mount **out, size_t *n)
{
	FILE *f = open_table();
	int err;

	if (!f)
		return -errno;
	err = mountinfo_list_in(f, fstype, out, n);
	fclose(f);
	return err;
}

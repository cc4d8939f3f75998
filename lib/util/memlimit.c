// SPDX-License-Identifier: MIT
/*
 * This file implements memlimit.h: the memory this process may use, from
 * physical RAM and the memory limits of its cgroups (v1, v2 or both).
 *
 * A cgroup's limit applies to everything below it, so the limit a process
 * lives under is the lowest one on the way from its cgroup up to the root,
 * not its own cgroup's alone: Slurm, for one, puts the job's limit on
 * job_N and leaves the step's and task's cgroups below it unlimited.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/memlimit.h"
#include "util/size.h"

/* A limit at or above this is none: more than any machine has, and below
 * the 9223372036854771712 (2^63 less a page) that v1 writes for none. */
#define LIMIT_NONE (1ull << 62)
/* Digits of the largest uint64_t. */
#define LIMIT_DIGITS_MAX 20

/* The bytes of a limit file, or 0 for none: "max", empty, not a plain
 * decimal number (a sign, spaces, a suffix), too large, or 0. */
static uint64_t parse_limit(char *s)
{
	size_t len = strcspn(s, "\n");
	unsigned long long v;
	char *end;

	if (s[len] == '\n' && s[len + 1])
		return 0; /* more than one line */
	s[len] = '\0';
	if (len == 0 || len > LIMIT_DIGITS_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v >= LIMIT_NONE)
		return 0;
	return v;
}

/* The limit in @file, or 0 for none (see parse_limit()). */
static uint64_t read_limit(const char *file)
{
	char buf[LIMIT_DIGITS_MAX + 3]; /* digits, '\n', one more, NUL */
	ssize_t n;
	int fd;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return parse_limit(buf);
}

/* Is @p an absolute cgroup path with no "." or ".." component? */
static bool is_cgroup_path(const char *p)
{
	if (*p != '/')
		return false;
	while (*p) {
		const char *c = p + 1;
		size_t n = strcspn(c, "/");

		if ((n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		p = c + n;
	}
	return true;
}

/* Is "memory" one of the comma-separated controllers of @list? */
static bool has_memory(const char *list)
{
	while (*list) {
		size_t n = strcspn(list, ",");

		if (n == 6 && !strncmp(list, "memory", 6))
			return true;
		list += n;
		if (*list)
			list++;
	}
	return false;
}

/* ml->source = @label @path, cut at the field's end: it only names. */
static void name_source(struct memlimit *ml, const char *label,
			const char *path)
{
	size_t k = strlen(label), n = strlen(path);

	if (k > sizeof(ml->source) - 1)
		k = sizeof(ml->source) - 1;
	if (n > sizeof(ml->source) - 1 - k)
		n = sizeof(ml->source) - 1 - k;
	memcpy(ml->source, label, k);
	memcpy(ml->source + k, path, n);
	ml->source[k + n] = '\0';
}

/*
 * Lower @ml->cgroup to the limit in @file of the cgroup @path under @dir,
 * or of any of its ancestors, and say which in @ml->source, as @label
 * followed by the cgroup's path.
 */
static void walk_up(struct memlimit *ml, const char *dir, const char *path,
		    const char *file, const char *label)
{
	char cg[PATH_MAX];
	char f[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(cg))
		return;
	memcpy(cg, path, len + 1);
	while (len > 0 && cg[len - 1] == '/')
		cg[--len] = '\0'; /* the root, "/", becomes "" */
	for (;;) {
		int n = snprintf(f, sizeof(f), "%s%s/%s", dir, cg, file);
		uint64_t v = 0;

		if (n > 0 && (size_t)n < sizeof(f))
			v = read_limit(f);
		if (v && (!ml->cgroup || v < ml->cgroup)) {
			ml->cgroup = v;
			name_source(ml, label, len ? cg : "/");
		}
		if (!len)
			break;
		len = (size_t)(strrchr(cg, '/') - cg);
		cg[len] = '\0';
	}
}

/* One line of /proc/self/cgroup: "ID:CONTROLLERS:PATH". */
static void scan_line(struct memlimit *ml, char *line, const char *cgroup_root)
{
	char dir[PATH_MAX];
	char *ctrl, *path;
	int n;

	line[strcspn(line, "\n")] = '\0';
	ctrl = strchr(line, ':');
	if (!ctrl)
		return;
	*ctrl++ = '\0';
	path = strchr(ctrl, ':');
	if (!path)
		return;
	*path++ = '\0';
	if (!is_cgroup_path(path))
		return;
	if (!strcmp(line, "0") && !*ctrl) {
		walk_up(ml, cgroup_root, path, "memory.max", "cgroup v2 ");
		return;
	}
	if (!has_memory(ctrl))
		return;
	n = snprintf(dir, sizeof(dir), "%s/memory", cgroup_root);
	if (n > 0 && (size_t)n < sizeof(dir))
		walk_up(ml, dir, path, "memory.limit_in_bytes",
			"cgroup v1 memory:");
}

void memlimit_read(const char *proc_root, const char *cgroup_root, uint64_t ram,
		   struct memlimit *ml)
{
	char file[PATH_MAX];
	char *line = NULL;
	size_t cap = 0;
	FILE *f = NULL;
	int n;

	memset(ml, 0, sizeof(*ml));
	ml->ram = ram;
	n = snprintf(file, sizeof(file), "%s/self/cgroup", proc_root);
	if (n > 0 && (size_t)n < sizeof(file))
		f = fopen(file, "re");
	if (f) {
		while (getline(&line, &cap, f) > 0)
			scan_line(ml, line, cgroup_root);
		free(line);
		fclose(f);
	}
	if (ml->cgroup && (!ram || ml->cgroup < ram)) {
		ml->usable = ml->cgroup; /* walk_up() said which */
	} else {
		ml->usable = ram;
		snprintf(ml->source, sizeof(ml->source), "%s",
			 ram ? "physical RAM" : "unknown");
	}
}

void memlimit_get(struct memlimit *ml)
{
	memlimit_read("/proc", "/sys/fs/cgroup", size_ram_total(), ml);
}

uint64_t memlimit_budget(const struct memlimit *ml)
{
	return ml->usable ? ml->usable / 2 : MEMLIMIT_BUDGET_FALLBACK;
}

uint64_t memlimit_available(void)
{
	unsigned long long kb;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");
	uint64_t v = UINT64_MAX;

	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			v = (uint64_t)kb << 10;
	fclose(f);
	return v;
}

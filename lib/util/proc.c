// SPDX-License-Identifier: MIT
/*
 * This file implements reading a process's start time from /proc/PID/stat
 * (proc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/proc.h"

int proc_start_time(pid_t pid, uint64_t *start)
{
	char path[64], line[1024], *p;
	unsigned long long v;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	line[n] = '\0';
	/* The command name may hold spaces and parentheses: skip past the
	 * last ')', then field 3 (state) up to field 22 (starttime). */
	p = strrchr(line, ')');
	if (!p)
		return -EPROTO;
	p++;
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EPROTO;
		if (field == 22)
			break;
		while (*p && *p != ' ')
			p++;
	}
	if (sscanf(p, "%llu", &v) != 1)
		return -EPROTO;
	*start = v;
	return 0;
}

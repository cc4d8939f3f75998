// SPDX-License-Identifier: MIT
/*
 * This file implements the names of the control protocol (ctl.h): the
 * canonical form of a mount path, the default address derived from it,
 * fresh fallback addresses, and finding fallback names in a socket table.
 * It makes no connection.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "ctl/ctl.h"
#include "util/hash.h"

/* /proc/net/unix flags a listening socket with __SO_ACCEPTCON. */
#define CTL_SO_ACCEPTCON (1u << 16)

int ctl_canonical_mountpoint(const char *path, char *buf, size_t cap)
{
	char *copy, *slash, *base, *dir;
	char real[PATH_MAX];
	int n, err = 0;

	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	/* Drop trailing slashes, but keep "/" itself. */
	for (n = (int)strlen(copy); n > 1 && copy[n - 1] == '/'; n--)
		copy[n - 1] = '\0';
	slash = strrchr(copy, '/');
	if (!slash) {
		dir = ".";
		base = copy;
	} else if (slash == copy) {
		dir = "/";
		base = slash + 1;
	} else {
		*slash = '\0';
		dir = copy;
		base = slash + 1;
	}
	if (!realpath(dir, real)) {
		err = -errno;
		goto out;
	}
	if (!*base || !strcmp(base, "."))
		n = snprintf(buf, cap, "%s", real);
	else
		n = snprintf(buf, cap, "%s%s%s", real,
			     strcmp(real, "/") ? "/" : "", base);
	if (n < 0 || (size_t)n >= cap)
		err = -ENAMETOOLONG;
out:
	free(copy);
	return err;
}

int ctl_default_address(const char *canonical, char *buf, size_t cap)
{
	uint64_t h = fnv1a64(canonical, strlen(canonical));
	int n;

	n = snprintf(buf, cap, "@squashcache-%016llx", (unsigned long long)h);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int ctl_fallback_address(const char *canonical, char *buf, size_t cap)
{
	char def[CTL_PATH_MAX];
	uint64_t r;
	ssize_t got;
	int n, err;

	err = ctl_default_address(canonical, def, sizeof(def));
	if (err)
		return err;
	do
		got = getrandom(&r, sizeof(r), 0);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	if (got != (ssize_t)sizeof(r))
		return -EIO;
	n = snprintf(buf, cap, "%s-%016llx", def, (unsigned long long)r);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Is @name @def, '-' and 16 lowercase hex digits, as ctl_fallback_address()
 * makes them? */
static bool is_fallback_name(const char *name, const char *def)
{
	size_t n = strlen(def);

	if (strncmp(name, def, n) || name[n] != '-')
		return false;
	name += n + 1;
	for (int i = 0; i < 16; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		      (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return !name[16];
}

int ctl_fallback_names(FILE *table, const char *canonical,
		       int (*fn)(const char *addr, void *arg), void *arg)
{
	char def[CTL_PATH_MAX], line[512];
	bool tail = false;
	unsigned int flags, type;
	size_t len;
	int pos, err;

	err = ctl_default_address(canonical, def, sizeof(def));
	if (err)
		return err;
	while (fgets(line, sizeof(line), table)) {
		/* A line longer than @line holds no name of ours (a name is
		 * at most 107 bytes): skip it, all its pieces. */
		bool skip = tail;

		len = strlen(line);
		if (len && line[len - 1] == '\n') {
			line[--len] = '\0';
			tail = false;
		} else {
			tail = !feof(table);
		}
		if (skip || tail)
			continue;
		/* "Num: RefCount Protocol Flags Type St Inode Path", in hex
		 * but for the inode; the header line does not parse. */
		pos = -1;
		if (sscanf(line, "%*x: %*x %*x %x %x %*x %*u %n", &flags, &type,
			   &pos) != 2 ||
		    pos < 0)
			continue;
		if (!(flags & CTL_SO_ACCEPTCON) || type != SOCK_STREAM)
			continue; /* not listening: a client or an accepted one */
		if (!is_fallback_name(line + pos, def))
			continue;
		err = fn(line + pos, arg);
		if (err)
			return err;
	}
	return ferror(table) ? -EIO : 0;
}

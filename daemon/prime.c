// SPDX-License-Identifier: MIT
/*
 * This file implements -o prime: once the mount answers, the daemon lists
 * the whole tree through its own mount, as a training job's ImageFolder
 * would.  Each listing is a readdirplus, so the kernel ends up holding a
 * dentry and an inode for every entry, and warm.c pushes the listed files
 * into the page cache.  A reader that opens files from a list of paths
 * without ever listing (a CSV of samples, an index file) then sends no
 * lookup, and once a file is warmed, no read.
 *
 * Cost: one kernel dentry and inode per entry (about 1 KB each, reclaimable
 * like any dentry), and the CPU of the listing, at a lower priority than
 * the FUSE workers.  While a directory is being listed its descriptor is
 * open, so a plain `umount` at that moment fails with EBUSY; that is why
 * priming is asked for, not on by default.
 *
 * Robustness: the walk never leaves the mount (it follows no symlinks and
 * names come from the kernel, which has already vetted them), skips a
 * directory it has seen (by inode number: a damaged image may loop), stops
 * at PRIME_DEPTH levels, and ends at once when the daemon stops.
 */
#define LOG_MOD "prime"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

#define PRIME_DEPTH 256 /* directory levels walked at most */

struct prime_dir {
	char *path; /* absolute, under the mountpoint */
	unsigned int depth; /* 0 for the root */
};

/* An open-addressing set of directory inode numbers (0 is never one). */
struct ino_set {
	uint64_t *slot;
	size_t cap, len; /* cap is a power of two */
};

static bool ino_set_add(struct ino_set *s, uint64_t ino)
{
	size_t i;

	if (2 * (s->len + 1) > s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 1024;
		uint64_t *n = calloc(ncap, sizeof(*n));

		if (!n)
			return true; /* no memory: walk on without the check */
		for (size_t j = 0; j < s->cap; j++) {
			if (!s->slot[j])
				continue;
			i = (size_t)(s->slot[j] * 0x9e3779b97f4a7c15ull) &
			    (ncap - 1);
			while (n[i])
				i = (i + 1) & (ncap - 1);
			n[i] = s->slot[j];
		}
		free(s->slot);
		s->slot = n;
		s->cap = ncap;
	}
	i = (size_t)(ino * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
	while (s->slot[i]) {
		if (s->slot[i] == ino)
			return false;
		i = (i + 1) & (s->cap - 1);
	}
	s->slot[i] = ino;
	s->len++;
	return true;
}

struct prime_stack {
	struct prime_dir *v;
	size_t len, cap;
};

static int push(struct prime_stack *st, char *path, unsigned int depth)
{
	if (st->len == st->cap) {
		size_t ncap = st->cap ? 2 * st->cap : 64;
		struct prime_dir *n = realloc(st->v, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		st->v = n;
		st->cap = ncap;
	}
	st->v[st->len++] = (struct prime_dir){ .path = path, .depth = depth };
	return 0;
}

/* List one directory; push its subdirectories.  Return: 0 or -errno. */
static int list_dir(struct sqcd *d, struct prime_stack *st,
		    struct ino_set *seen, const struct prime_dir *dir)
{
	size_t plen = strlen(dir->path);
	struct dirent *de;
	DIR *dp;
	int err = 0;

	dp = opendir(dir->path);
	if (!dp)
		return -errno;
	d->prime_dirs++;
	while (!atomic_load(&d->prime_stop)) {
		size_t nlen;
		char *child;

		errno = 0;
		de = readdir(dp);
		if (!de) {
			err = -errno;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		d->prime_entries++;
		if (de->d_type != DT_DIR || dir->depth + 1 >= PRIME_DEPTH ||
		    !ino_set_add(seen, de->d_ino))
			continue;
		nlen = strlen(de->d_name);
		if (plen + 1 + nlen >= PATH_MAX)
			continue;
		child = malloc(plen + 1 + nlen + 1);
		if (!child) {
			err = -ENOMEM;
			break;
		}
		memcpy(child, dir->path, plen);
		child[plen] = '/';
		memcpy(child + plen + 1, de->d_name, nlen + 1);
		err = push(st, child, dir->depth + 1);
		if (err) {
			free(child);
			break;
		}
	}
	closedir(dp);
	return err;
}

static void *prime_main(void *arg)
{
	struct sqcd *d = arg;
	struct prime_stack st = { 0 };
	struct ino_set seen = { 0 };
	unsigned long errors = 0;
	struct stat sb;
	char *root;
	double secs;
	int err = 0;

	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	/* Started before the session loop: this waits until it answers. */
	if (stat(d->o.canonical, &sb)) {
		atomic_store(&d->prime_state, SQCD_PRIME_STOPPED);
		return NULL;
	}
	root = strdup(d->o.canonical);
	if (!root || push(&st, root, 0)) {
		free(root);
		err = -ENOMEM;
	}
	while (!err && st.len && !atomic_load(&d->prime_stop)) {
		struct prime_dir dir = st.v[--st.len];
		int e = list_dir(d, &st, &seen, &dir);

		free(dir.path);
		if (e == -ENOMEM || e == -ENOTCONN || e == -ECONNABORTED) {
			err = e;
		} else if (e) {
			/* a damaged directory: EIO there, the rest goes on */
			errors++;
		}
	}
	while (st.len)
		free(st.v[--st.len].path);
	free(st.v);
	free(seen.slot);
	secs = mono_since(&d->prime_t0);
	atomic_store(&d->prime_ms, (uint64_t)(secs * 1e3));
	if (atomic_load(&d->prime_stop) || err) {
		atomic_store(&d->prime_state, SQCD_PRIME_STOPPED);
		if (err && !atomic_load(&d->prime_stop))
			log_warn("priming stopped after %llu entries: %s",
				 (unsigned long long)atomic_load(
					 &d->prime_entries),
				 err_str(err));
	} else {
		atomic_store(&d->prime_state, SQCD_PRIME_DONE);
		log_info("primed %llu entries in %llu directories in %.2f s%s",
			 (unsigned long long)atomic_load(&d->prime_entries),
			 (unsigned long long)atomic_load(&d->prime_dirs), secs,
			 errors ? " (some directories could not be listed)" :
				  "");
	}
	return NULL;
}

int sqcd_prime_start(struct sqcd *d)
{
	int err;

	if (!d->o.prime)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &d->prime_t0);
	atomic_store(&d->prime_state, SQCD_PRIME_RUNNING);
	err = -pthread_create(&d->prime_thread, NULL, prime_main, d);
	if (err) {
		atomic_store(&d->prime_state, SQCD_PRIME_OFF);
		log_warn("cannot start priming: %s", err_str(err));
		return err;
	}
	d->prime_running = true;
	return 0;
}

void sqcd_prime_stop(struct sqcd *d)
{
	atomic_store(&d->prime_stop, true);
}

void sqcd_prime_join(struct sqcd *d)
{
	if (!d->prime_running)
		return;
	pthread_join(d->prime_thread, NULL);
	d->prime_running = false;
}

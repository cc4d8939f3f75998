// SPDX-License-Identifier: MIT
/*
 * This file implements stress, a test tool for load tests: many threads
 * read random files of a tree for a bounded time and check every byte
 * against a manifest of CRC-32s made from the source tree.
 *
 *   stress --manifest ROOT > MANIFEST
 *   stress [--drop-every SECS] ROOT MANIFEST THREADS SECONDS [SEED]
 *
 * A manifest line is "CRC SIZE PATH" (path relative to ROOT).  Each read
 * opens a random file, reads it whole in random-sized pieces (sometimes
 * with pread at scattered offsets), and compares size and CRC.  Prints
 * one summary line; exits 1 on any mismatch or error.  The seed (the
 * time when not given) is in that line.
 *
 * --drop-every SECS: every SECS seconds one more thread drops the page
 * cache of every file of the manifest (posix_fadvise DONTNEED), so that
 * the kernel's cache does not answer every read; the files of ROOT only,
 * unlike /proc/sys/vm/drop_caches, which drops everyone's.
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

struct entry {
	char *path;
	unsigned long size;
	unsigned long crc;
};

static struct entry *entries;
static size_t nentries;
static const char *root;
static size_t root_len;
static double deadline;
static double drop_every; /* seconds between drops; 0: none */
static atomic_ulong files_read, bytes_read, errors, drops;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int crc_file(const char *path, unsigned long *crc, unsigned long *size)
{
	static char buf[1 << 16];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	*crc = crc32(0, NULL, 0);
	*size = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		*crc = crc32(*crc, (const Bytef *)buf, (uInt)n);
		*size += (unsigned long)n;
	}
	close(fd);
	return n < 0 ? -1 : 0;
}

static int manifest_one(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	unsigned long crc, size;

	(void)st;
	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	if (crc_file(path, &crc, &size)) {
		perror(path);
		return 1;
	}
	printf("%08lx %lu %s\n", crc, size, path + root_len + 1);
	return 0;
}

static void load_manifest(const char *file)
{
	char line[8192], path[8192];
	size_t cap = 0;
	FILE *f = fopen(file, "r");

	if (!f) {
		perror(file);
		exit(2);
	}
	while (fgets(line, sizeof(line), f)) {
		struct entry e;

		if (sscanf(line, "%lx %lu %8191[^\n]", &e.crc, &e.size, path) !=
		    3)
			continue;
		e.path = strdup(path);
		if (nentries == cap) {
			cap = cap ? cap * 2 : 1024;
			entries = realloc(entries, cap * sizeof(*entries));
		}
		entries[nentries++] = e;
	}
	fclose(f);
	if (!nentries) {
		fprintf(stderr, "stress: empty manifest\n");
		exit(2);
	}
}

static void report(const char *what, const struct entry *e, const char *why)
{
	/* The first few say what went wrong; the rest are only counted. */
	if (atomic_fetch_add(&errors, 1) < 20)
		fprintf(stderr, "stress: %s: %s: %s\n", what, e->path, why);
}

static void check_one(const struct entry *e, unsigned int *seed, char *buf,
		      size_t cap)
{
	char path[8192];
	unsigned long crc = crc32(0, NULL, 0), got = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, e->path);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return report("open", e, strerror(errno));
	for (;;) {
		size_t want = 1 + (size_t)rand_r(seed) % cap;

		n = read(fd, buf, want);
		if (n <= 0)
			break;
		crc = crc32(crc, (const Bytef *)buf, (uInt)n);
		got += (unsigned long)n;
	}
	if (n < 0)
		report("read", e, strerror(errno));
	else if (got != e->size)
		report("size", e, "differs from the manifest");
	else if (crc != e->crc)
		report("content", e, "CRC differs from the manifest");
	/* A few scattered preads, compared with a second sequential pass. */
	if (n >= 0 && e->size > 1 && rand_r(seed) % 4 == 0) {
		char *whole = malloc(e->size);
		off_t off = (off_t)((unsigned long)rand_r(seed) % e->size);
		size_t len = 1 + (size_t)rand_r(seed) % (e->size - (size_t)off);

		if (whole && pread(fd, whole, e->size, 0) == (ssize_t)e->size &&
		    crc32(crc32(0, NULL, 0), (const Bytef *)whole,
			  (uInt)e->size) == e->crc) {
			if (len > cap)
				len = cap;
			if (pread(fd, buf, len, off) != (ssize_t)len ||
			    memcmp(buf, whole + off, len))
				report("pread", e, "differs");
		} else {
			report("pread", e, "whole-file pread failed");
		}
		free(whole);
	}
	close(fd);
	atomic_fetch_add(&files_read, 1);
	atomic_fetch_add(&bytes_read, got);
}

static void *worker(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	size_t cap = 1 << 20;
	char *buf = malloc(cap);

	while (now() < deadline)
		check_one(&entries[(size_t)rand_r(&seed) % nentries], &seed,
			  buf, cap);
	free(buf);
	return NULL;
}

/* --drop-every: drop the page cache of every file, then wait. */
static void *dropper(void *arg)
{
	char path[8192];

	(void)arg;
	while (now() < deadline) {
		double next = now() + drop_every;

		for (size_t i = 0; i < nentries && now() < deadline; i++) {
			int fd;

			snprintf(path, sizeof(path), "%s/%s", root,
				 entries[i].path);
			fd = open(path, O_RDONLY);
			if (fd < 0)
				continue;
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			close(fd);
		}
		atomic_fetch_add(&drops, 1);
		while (now() < next && now() < deadline) {
			double left = next - now();
			struct timespec ts = {
				(time_t)left,
				(long)((left - (double)(time_t)left) * 1e9)
			};

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t *t, drop_thread;
	unsigned int threads, seed;
	double secs, start;

	if (argc == 3 && !strcmp(argv[1], "--manifest")) {
		root = argv[2];
		root_len = strlen(root);
		return nftw(root, manifest_one, 64, FTW_PHYS) ? 1 : 0;
	}
	if (argc > 2 && !strcmp(argv[1], "--drop-every")) {
		drop_every = atof(argv[2]);
		argc -= 2;
		argv += 2;
	}
	if (argc < 5) {
		fprintf(stderr,
			"usage: stress --manifest ROOT\n"
			"       stress [--drop-every SECS] ROOT MANIFEST THREADS "
			"SECONDS [SEED]\n");
		return 2;
	}
	root = argv[1];
	load_manifest(argv[2]);
	threads = (unsigned int)atoi(argv[3]);
	secs = atof(argv[4]);
	seed = argc > 5 ? (unsigned int)atoi(argv[5]) :
			  (unsigned int)time(NULL);
	t = calloc(threads, sizeof(*t));
	start = now();
	deadline = start + secs;
	for (unsigned int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker,
			       (void *)(uintptr_t)(seed * 31u + i));
	if (drop_every > 0)
		pthread_create(&drop_thread, NULL, dropper, NULL);
	for (unsigned int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	if (drop_every > 0)
		pthread_join(drop_thread, NULL);
	printf("stress: %u threads, %.1f s, seed %u: %lu files, %.1f MB, %lu errors, %.0f files/s",
	       threads, now() - start, seed, (unsigned long)files_read,
	       (double)bytes_read / 1e6, (unsigned long)errors,
	       (double)files_read / (now() - start));
	if (drop_every > 0)
		printf(", page cache dropped %lu times", (unsigned long)drops);
	printf("\n");
	free(t);
	return errors ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements preader, the benchmark's C reader: the access
 * pattern of a training loader with the interpreter taken out.
 *
 *   preader read ROOT LIST THREADS [SEED [LIMIT]]
 *	Reads the relative paths in LIST, shuffles them with SEED (0: keep
 *	the list order), keeps the first LIMIT (0: all), and has THREADS
 *	threads take the next path in turn and open(), read() the whole file
 *	into a 1 MiB buffer, close().
 *   preader walk ROOT THREADS
 *	Walks the tree under ROOT: readdir every directory and lstat every
 *	entry; THREADS threads share a queue of directories.
 *   preader first ROOT PATH
 *	Opens ROOT/PATH and reads one byte (used after a mount command).
 *
 * Prints one JSON line: files, dirs, bytes, errors, seconds, files_per_s,
 * mb_per_s (10^6 bytes).  Time runs from the threads' start to the last
 * join.  Exit status 0 if no file failed, 1 otherwise, 2 on usage errors.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE (1u << 20) /* read() buffer per thread */
#define MAX_THREADS 256

struct reader {
	int rootfd; /* ROOT, O_DIRECTORY */
	char **paths; /* relative paths, shuffled */
	size_t npaths; /* entries in paths */
	atomic_size_t next; /* next index to take */
	atomic_uint_fast64_t bytes; /* bytes read */
	atomic_uint_fast64_t files; /* files read to EOF */
	atomic_uint_fast64_t errors; /* open/read failures */
};

struct dirq {
	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t more; /* a directory was queued or all done */
	char **items; /* queued directory paths (relative) */
	size_t n; /* queued */
	size_t cap; /* allocated */
	unsigned int busy; /* threads working on a directory */
	int rootfd; /* ROOT */
	uint64_t files; /* non-directory entries lstat'ed */
	uint64_t dirs; /* directories read */
	uint64_t errors; /* failures */
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: good enough to shuffle, same result everywhere */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void die(const char *what)
{
	fprintf(stderr, "preader: %s: %s\n", what, strerror(errno));
	exit(2);
}

static char **read_list(const char *file, size_t *count)
{
	FILE *f = fopen(file, "re");
	char **v = NULL;
	size_t n = 0, cap = 0, len = 0;
	char *line = NULL;
	ssize_t got;

	if (!f)
		die(file);
	while ((got = getline(&line, &len, f)) > 0) {
		while (got > 0 &&
		       (line[got - 1] == '\n' || line[got - 1] == '\r'))
			line[--got] = '\0';
		if (!got)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				die("realloc");
		}
		v[n] = strdup(line);
		if (!v[n])
			die("strdup");
		n++;
	}
	free(line);
	fclose(f);
	*count = n;
	return v;
}

static void *read_main(void *arg)
{
	struct reader *r = arg;
	char *buf = malloc(BUF_SIZE);
	size_t i;

	if (!buf)
		die("malloc");
	while ((i = atomic_fetch_add(&r->next, 1)) < r->npaths) {
		int fd = openat(r->rootfd, r->paths[i], O_RDONLY | O_CLOEXEC);
		uint64_t got = 0;
		ssize_t n;

		if (fd < 0) {
			atomic_fetch_add(&r->errors, 1);
			continue;
		}
		while ((n = read(fd, buf, BUF_SIZE)) > 0)
			got += (uint64_t)n;
		if (n < 0)
			atomic_fetch_add(&r->errors, 1);
		else
			atomic_fetch_add(&r->files, 1);
		atomic_fetch_add(&r->bytes, got);
		close(fd);
	}
	free(buf);
	return NULL;
}

static void report(uint64_t files, uint64_t dirs, uint64_t bytes,
		   uint64_t errors, double secs)
{
	printf("{\"files\":%llu,\"dirs\":%llu,\"bytes\":%llu,\"errors\":%llu,"
	       "\"seconds\":%.6f,\"files_per_s\":%.1f,\"mb_per_s\":%.2f}\n",
	       (unsigned long long)files, (unsigned long long)dirs,
	       (unsigned long long)bytes, (unsigned long long)errors, secs,
	       secs > 0 ? (double)files / secs : 0.0,
	       secs > 0 ? (double)bytes / secs / 1e6 : 0.0);
}

static int start_threads(pthread_t *tid, unsigned int n, void *(*fn)(void *),
			 void *arg)
{
	for (unsigned int t = 0; t < n; t++) {
		errno = pthread_create(&tid[t], NULL, fn, arg);
		if (errno)
			die("pthread_create");
	}
	return 0;
}

static int cmd_read(const char *root, const char *list, unsigned int nthr,
		    uint64_t seed, size_t limit)
{
	static pthread_t tid[MAX_THREADS];
	struct reader r = { 0 };
	double t0, t1;

	r.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r.rootfd < 0)
		die(root);
	r.paths = read_list(list, &r.npaths);
	if (seed) {
		uint64_t s = seed;

		for (size_t i = r.npaths; i > 1; i--) {
			size_t j = (size_t)(rng_next(&s) % i);
			char *tmp = r.paths[i - 1];

			r.paths[i - 1] = r.paths[j];
			r.paths[j] = tmp;
		}
	}
	if (limit && limit < r.npaths)
		r.npaths = limit;
	t0 = now();
	start_threads(tid, nthr, read_main, &r);
	for (unsigned int t = 0; t < nthr; t++)
		pthread_join(tid[t], NULL);
	t1 = now();
	report(r.files, 0, r.bytes, r.errors, t1 - t0);
	return r.errors ? 1 : 0;
}

/* Takes ownership of path. */
static void dirq_push(struct dirq *q, char *path)
{
	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 1024;
		q->items = realloc(q->items, q->cap * sizeof(*q->items));
		if (!q->items)
			die("realloc");
	}
	q->items[q->n++] = path;
	pthread_cond_signal(&q->more);
}

static void walk_dir(struct dirq *q, const char *rel)
{
	int fd = openat(q->rootfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t files = 0, errors = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		pthread_mutex_lock(&q->lock);
		q->errors++;
		pthread_mutex_unlock(&q->lock);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
			errors++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			size_t len = strlen(rel) + strlen(de->d_name) + 2;
			char *sub = malloc(len);

			if (!sub)
				die("malloc");
			snprintf(sub, len, "%s/%s", rel, de->d_name);
			pthread_mutex_lock(&q->lock);
			dirq_push(q, sub);
			pthread_mutex_unlock(&q->lock);
		} else {
			files++;
		}
	}
	closedir(d);
	pthread_mutex_lock(&q->lock);
	q->files += files;
	q->errors += errors;
	q->dirs++;
	pthread_mutex_unlock(&q->lock);
}

static void *walk_main(void *arg)
{
	struct dirq *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		char *rel;

		while (!q->n && q->busy)
			pthread_cond_wait(&q->more, &q->lock);
		if (!q->n)
			break; /* nothing queued, nobody can queue more */
		rel = q->items[--q->n];
		q->busy++;
		pthread_mutex_unlock(&q->lock);
		walk_dir(q, rel);
		free(rel);
		pthread_mutex_lock(&q->lock);
		q->busy--;
		if (!q->n && !q->busy)
			pthread_cond_broadcast(&q->more);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

static int cmd_walk(const char *root, unsigned int nthr)
{
	static pthread_t tid[MAX_THREADS];
	struct dirq q = { .lock = PTHREAD_MUTEX_INITIALIZER,
			  .more = PTHREAD_COND_INITIALIZER };
	double t0, t1;

	q.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (q.rootfd < 0)
		die(root);
	t0 = now();
	q.items = NULL;
	dirq_push(&q, strdup("."));
	start_threads(tid, nthr, walk_main, &q);
	for (unsigned int t = 0; t < nthr; t++)
		pthread_join(tid[t], NULL);
	t1 = now();
	report(q.files, q.dirs, 0, q.errors, t1 - t0);
	free(q.items);
	return q.errors ? 1 : 0;
}

static int cmd_first(const char *root, const char *path)
{
	char b;
	double t0 = now(), t1;
	int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = dfd < 0 ? -1 : openat(dfd, path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, &b, 1);

	t1 = now();
	report(n == 1, 0, n == 1, n != 1, t1 - t0);
	return n == 1 ? 0 : 1;
}

static unsigned int parse_threads(const char *s)
{
	long v = strtol(s, NULL, 10);

	if (v < 1 || v > MAX_THREADS) {
		fprintf(stderr, "preader: THREADS must be 1..%d\n",
			MAX_THREADS);
		exit(2);
	}
	return (unsigned int)v;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "read"))
		return cmd_read(argv[2], argv[3], parse_threads(argv[4]),
				argc > 5 ? strtoull(argv[5], NULL, 10) : 0,
				argc > 6 ? strtoull(argv[6], NULL, 10) : 0);
	if (argc == 4 && !strcmp(argv[1], "walk"))
		return cmd_walk(argv[2], parse_threads(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "first"))
		return cmd_first(argv[2], argv[3]);
	fprintf(stderr, "usage: preader read ROOT LIST THREADS [SEED [LIMIT]]\n"
			"       preader walk ROOT THREADS\n"
			"       preader first ROOT PATH\n");
	return 2;
}

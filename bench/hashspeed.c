// SPDX-License-Identifier: MIT
/*
 * This file implements hashspeed, a measurement tool: how fast this
 * machine hashes with SHA-256 in the shape checked bytes need it (4 KiB
 * blocks, docs/design.md "Checked bytes"), through libcrypto's one-shot
 * SHA256(), through EVP with the digest fetched once and the context
 * reused (what lib/seal does), and through seal_check() itself over
 * 128 KiB chunks (what staging pays per chunk, with the comparisons), on
 * one thread and on N at once.
 *
 *   hashspeed [-m MIB] [-r RUNS] [-t THREADS]
 *
 * A buffer of MIB MiB (default 256) is filled and sealed in memory; each
 * way hashes it whole RUNS times (default 5) and the median is printed,
 * in MB/s (10^6 bytes), with the CPU's model and whether it has the SHA
 * instructions (sha_ni in /proc/cpuinfo).  Run it on a quiet machine: a
 * busy core halves the figure.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "seal/seal.h"

#define BLK 4096u
#define CHUNK (128u << 10)

static size_t size;
static uint8_t *buf;
static struct seal *seal;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Hash [lo, hi) of the buffer one way; 0 or -1. */
static int way_oneshot(size_t lo, size_t hi)
{
	uint8_t md[32];

	for (size_t o = lo; o < hi; o += BLK)
		SHA256(buf + o, BLK, md);
	return 0;
}

static int way_evp(size_t lo, size_t hi)
{
	EVP_MD *m = EVP_MD_fetch(NULL, "SHA256", NULL);
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	uint8_t md[32];
	unsigned int n;
	int err = 0;

	if (!m || !c)
		err = -1;
	for (size_t o = lo; o < hi && !err; o += BLK)
		if (!EVP_DigestInit_ex2(c, m, NULL) ||
		    !EVP_DigestUpdate(c, buf + o, BLK) ||
		    !EVP_DigestFinal_ex(c, md, &n))
			err = -1;
	EVP_MD_CTX_free(c);
	EVP_MD_free(m);
	return err;
}

static int way_seal(size_t lo, size_t hi)
{
	for (size_t o = lo; o < hi; o += CHUNK)
		if (seal_check(seal, o, buf + o,
			       hi - o < CHUNK ? hi - o : CHUNK, NULL))
			return -1;
	return 0;
}

struct slice {
	int (*way)(size_t lo, size_t hi);
	size_t lo, hi;
	int err;
};

static void *slice_main(void *arg)
{
	struct slice *s = arg;

	s->err = s->way(s->lo, s->hi);
	return NULL;
}

/* MB/s of @way over the buffer on @threads threads, median of @runs. */
static double measure(int (*way)(size_t, size_t), int threads, int runs)
{
	double *t = calloc((size_t)runs, sizeof(*t)), med;
	struct slice s[64];
	pthread_t th[64];
	size_t per = size / (size_t)threads / CHUNK * CHUNK;

	for (int r = 0; r < runs; r++) {
		double t0 = now();

		for (int i = 0; i < threads; i++) {
			s[i] = (struct slice){ way, per * (size_t)i,
					       i == threads - 1 ?
						       size :
						       per * (size_t)(i + 1),
					       0 };
			pthread_create(&th[i], NULL, slice_main, &s[i]);
		}
		for (int i = 0; i < threads; i++) {
			pthread_join(th[i], NULL);
			if (s[i].err) {
				fprintf(stderr, "hashspeed: a way failed\n");
				exit(1);
			}
		}
		t[r] = (double)size / (now() - t0) / 1e6;
	}
	qsort(t, (size_t)runs, sizeof(*t), cmp_double);
	med = t[runs / 2];
	free(t);
	return med;
}

static void cpu_line(void)
{
	char line[512], model[256] = "unknown";
	bool sha = false;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10) && strchr(line, ':'))
			snprintf(model, sizeof(model), "%s",
				 strchr(line, ':') + 2);
		if (!strncmp(line, "flags", 5) && strstr(line, " sha_ni"))
			sha = true;
	}
	if (f)
		fclose(f);
	model[strcspn(model, "\n")] = '\0';
	printf("cpu: %s, %ld online, SHA instructions: %s\n", model,
	       sysconf(_SC_NPROCESSORS_ONLN), sha ? "yes" : "no");
	printf("libcrypto: %s\n", OpenSSL_version(OPENSSL_VERSION));
}

int main(int argc, char **argv)
{
	int runs = 5, threads = 2, c, in, out;
	uint8_t root[SEAL_HASH_SIZE];
	size_t mib = 256;

	while ((c = getopt(argc, argv, "m:r:t:")) != -1) {
		switch (c) {
		case 'm':
			mib = (size_t)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			runs = atoi(optarg);
			break;
		case 't':
			threads = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: hashspeed [-m MIB] [-r RUNS] [-t THREADS]\n");
			return 2;
		}
	}
	if (!mib || runs < 1 || threads < 1 || threads > 64) {
		fprintf(stderr,
			"hashspeed: MIB >= 1, RUNS >= 1, 1 <= THREADS <= 64\n");
		return 2;
	}
	size = mib << 20;
	buf = malloc(size);
	if (!buf)
		return 1;
	for (size_t i = 0; i < size; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 24);
	in = memfd_create("hashspeed-data", MFD_CLOEXEC);
	out = memfd_create("hashspeed-seal", MFD_CLOEXEC);
	if (in < 0 || out < 0 || write(in, buf, size) != (ssize_t)size ||
	    seal_write(in, 0, size, out, root) ||
	    seal_open(out, "hashspeed", size, root, &seal)) {
		fprintf(stderr, "hashspeed: cannot seal the buffer: %s\n",
			strerror(errno));
		return 1;
	}
	close(in);
	close(out);
	cpu_line();
	printf("buffer %zu MiB, median of %d runs, MB/s (10^6 bytes/s)\n", mib,
	       runs);
	printf("%-44s %10s %10s\n", "way", "1 thread", "threads");
	printf("%-44s %10.0f %10.0f\n", "SHA256() one-shot, 4 KiB blocks",
	       measure(way_oneshot, 1, runs),
	       measure(way_oneshot, threads, runs));
	printf("%-44s %10.0f %10.0f\n", "EVP, fetched digest, reused context",
	       measure(way_evp, 1, runs), measure(way_evp, threads, runs));
	printf("%-44s %10.0f %10.0f\n", "seal_check(), 128 KiB chunks",
	       measure(way_seal, 1, runs), measure(way_seal, threads, runs));
	printf("(threads: %d)\n", threads);
	seal_free(seal);
	free(buf);
	return 0;
}

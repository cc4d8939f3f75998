// SPDX-License-Identifier: MIT
/*
 * This file implements fuzz_replay, the driver that runs fuzz inputs
 * through the same code as the libFuzzer targets, built with the normal
 * compiler and flags, so that `make check` replays every input that ever
 * crashed a target (tests/fuzz/regress/) without clang or libFuzzer.
 *
 *   fuzz_replay [-q] PATH...
 *       Replay files; a directory stands for the files in it.  A file
 *       named decompress-* goes to the fuzz_decompress target (when
 *       tests/fuzz/fuzz_decompress.c exists; it is compiled in here with
 *       its entry point renamed), index-* to fuzz_index, ctl-* to
 *       fuzz_ctl and seal-* to fuzz_seal (likewise), and
 *       anything else (image-*, *.sqfs) to the image walk of
 *       tests/fuzz/walk.h, which fuzz_image shares.
 *
 *   fuzz_replay [-q] --mutate N [--seed S] [--keep DIR] IMAGE...
 *       The mutation smoke test: N copies of each image, each with 1 or 2
 *       random bytes flipped (seeded by S, printed), through the image
 *       walk.  Inputs that kill the walk are written to DIR (default .).
 *
 * Each input runs in a child process, so one crash does not hide the
 * next; a child killed by a signal (or exiting non-zero) is a failure and
 * its input is named on stderr.  A child is also killed after 60 s (a
 * hang is a failure too).  -q silences the library's log.
 *
 * Exit status: 0 every input ran cleanly, 1 some did not, 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../fuzz/walk.h"

/* The other targets, compiled in with their libFuzzer entry points
 * renamed; their optional initialisers are weak so that either way links. */
int fuzz_decompress_one(const uint8_t *data, size_t size);
int fuzz_decompress_init(int *argc, char ***argv) __attribute__((weak));
int fuzz_index_one(const uint8_t *data, size_t size);
int fuzz_index_init(int *argc, char ***argv) __attribute__((weak));
int fuzz_ctl_one(const uint8_t *data, size_t size);
int fuzz_seal_one(const uint8_t *data, size_t size);

#if __has_include("../fuzz/fuzz_decompress.c")
#define HAVE_FUZZ_DECOMPRESS 1
#define LLVMFuzzerTestOneInput fuzz_decompress_one
#define LLVMFuzzerInitialize fuzz_decompress_init
#include "../fuzz/fuzz_decompress.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize
#else
#define HAVE_FUZZ_DECOMPRESS 0
#endif

#if __has_include("../fuzz/fuzz_index.c")
#define HAVE_FUZZ_INDEX 1
#define LLVMFuzzerTestOneInput fuzz_index_one
#define LLVMFuzzerInitialize fuzz_index_init
#include "../fuzz/fuzz_index.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize
#else
#define HAVE_FUZZ_INDEX 0
#endif

#if __has_include("../fuzz/fuzz_ctl.c")
#define HAVE_FUZZ_CTL 1
#define LLVMFuzzerTestOneInput fuzz_ctl_one
#include "../fuzz/fuzz_ctl.c"
#undef LLVMFuzzerTestOneInput
#else
#define HAVE_FUZZ_CTL 0
#endif

#if __has_include("../fuzz/fuzz_seal.c")
#define HAVE_FUZZ_SEAL 1
#define LLVMFuzzerTestOneInput fuzz_seal_one
#include "../fuzz/fuzz_seal.c"
#undef LLVMFuzzerTestOneInput
#else
#define HAVE_FUZZ_SEAL 0
#endif

#define CHILD_TIMEOUT_S 60

static bool quiet;
static unsigned int ran, failed, skipped;

static int read_file(const char *path, uint8_t **data, size_t *size)
{
	struct stat st;
	uint8_t *p;
	size_t done = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	p = malloc((size_t)st.st_size + 1);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	while (done < (size_t)st.st_size) {
		n = read(fd, p + done, (size_t)st.st_size - done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	*data = p;
	*size = done;
	return 0;
}

enum target { T_IMAGE, T_DECOMPRESS, T_INDEX, T_CTL, T_SEAL };

static enum target target_of(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "decompress-", 11))
		return T_DECOMPRESS;
	if (!strncmp(base, "index-", 6))
		return T_INDEX;
	if (!strncmp(base, "ctl-", 4))
		return T_CTL;
	if (!strncmp(base, "seal-", 5))
		return T_SEAL;
	return T_IMAGE;
}

static void run_target(enum target t, const uint8_t *data, size_t size,
		       const char *name)
{
	int argc = 1;
	char *args[] = { "fuzz_replay", NULL };
	char **argv = args;

	switch (t) {
	case T_IMAGE:
		walk_image_buf(data, size, name);
		break;
	case T_DECOMPRESS:
#if HAVE_FUZZ_DECOMPRESS
		if (fuzz_decompress_init)
			fuzz_decompress_init(&argc, &argv);
		if (quiet)
			log_set_level(-1);
		fuzz_decompress_one(data, size);
#endif
		break;
	case T_INDEX:
#if HAVE_FUZZ_INDEX
		if (fuzz_index_init)
			fuzz_index_init(&argc, &argv);
		if (quiet)
			log_set_level(-1);
		fuzz_index_one(data, size);
#endif
		break;
	case T_CTL:
#if HAVE_FUZZ_CTL
		fuzz_ctl_one(data, size);
#endif
		break;
	case T_SEAL:
#if HAVE_FUZZ_SEAL
		fuzz_seal_one(data, size);
#endif
		break;
	}
	(void)argc;
	(void)argv;
}

/* Run one input in a child.  Return: true if it ran cleanly. */
static bool run_child(enum target t, const uint8_t *data, size_t size,
		      const char *name)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fuzz_replay: fork");
		exit(1);
	}
	if (pid == 0) {
		alarm(CHILD_TIMEOUT_S);
		run_target(t, data, size, name);
		fflush(NULL);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("fuzz_replay: waitpid");
			exit(1);
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	if (WIFSIGNALED(status))
		fprintf(stderr, "fuzz_replay: %s: killed by signal %d (%s)%s\n",
			name, WTERMSIG(status), strsignal(WTERMSIG(status)),
			WTERMSIG(status) == SIGALRM ? ": hang" : "");
	else
		fprintf(stderr, "fuzz_replay: %s: exit status %d\n", name,
			WEXITSTATUS(status));
	return false;
}

static void replay_file(const char *path)
{
	enum target t = target_of(path);
	uint8_t *data;
	size_t size;
	int err;

	if ((t == T_DECOMPRESS && !HAVE_FUZZ_DECOMPRESS) ||
	    (t == T_INDEX && !HAVE_FUZZ_INDEX) ||
	    (t == T_CTL && !HAVE_FUZZ_CTL)) {
		fprintf(stderr, "fuzz_replay: %s: skipped (target not built)\n",
			path);
		skipped++;
		return;
	}
	err = read_file(path, &data, &size);
	if (err) {
		fprintf(stderr, "fuzz_replay: cannot read '%s': %s\n", path,
			strerror(-err));
		failed++;
		return;
	}
	ran++;
	if (run_child(t, data, size, path)) {
		if (!quiet)
			printf("ok   %s\n", path);
	} else {
		printf("FAIL %s\n", path);
		failed++;
	}
	free(data);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_path(const char *path)
{
	struct dirent *de;
	struct stat st;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *d;

	if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
		replay_file(path);
		return;
	}
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "fuzz_replay: cannot open '%s': %s\n", path,
			strerror(errno));
		failed++;
		return;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				abort();
		}
		if (asprintf(&names[n], "%s/%s", path, de->d_name) < 0)
			abort();
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		replay_file(names[i]);
		free(names[i]);
	}
	free(names);
}

/* xorshift64*: a small PRNG whose sequence the seed alone decides. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static int write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -errno;
	if (fwrite(data, 1, size, f) != size) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) ? -errno : 0;
}

static void mutate_image(const char *path, unsigned int count, uint64_t seed,
			 const char *keep)
{
	const char *base = strrchr(path, '/');
	uint8_t *orig, *buf;
	size_t size;
	uint64_t s;
	int err;

	base = base ? base + 1 : path;
	err = read_file(path, &orig, &size);
	if (err || size == 0) {
		fprintf(stderr, "fuzz_replay: cannot read '%s': %s\n", path,
			err ? strerror(-err) : "empty");
		failed++;
		return;
	}
	buf = malloc(size);
	if (!buf)
		abort();
	/* One stream per image, so adding an image changes no other. */
	s = seed ^ 0x9e3779b97f4a7c15ull;
	for (const char *p = base; *p; p++)
		s = (s ^ (unsigned char)*p) * 1099511628211ull;
	if (!s)
		s = 1;
	for (unsigned int i = 0; i < count; i++) {
		char name[512], what[128];
		unsigned int nflips = 1 + (unsigned int)(rng_next(&s) % 2);
		int w = 0;

		memcpy(buf, orig, size);
		for (unsigned int k = 0; k < nflips; k++) {
			/* Half the flips in the first 4 KiB (superblock and
			 * small tables), half anywhere. */
			size_t lim = (rng_next(&s) & 1) && size > 4096 ? 4096 :
									 size;
			size_t off = (size_t)(rng_next(&s) % lim);
			uint8_t x = (uint8_t)(rng_next(&s) % 255 + 1);

			buf[off] ^= x;
			w += snprintf(what + w, sizeof(what) - (size_t)w,
				      "%s%zu^%02x", k ? "," : "", off, x);
		}
		snprintf(name, sizeof(name), "%s/mut-%s-%u-%s", keep, base, i,
			 what);
		ran++;
		if (!run_child(T_IMAGE, buf, size, name)) {
			err = write_file(name, buf, size);
			printf("FAIL %s%s\n", name,
			       err ? " (could not be kept)" : "");
			failed++;
		}
	}
	free(buf);
	free(orig);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fuzz_replay [-q] PATH...\n"
		"       fuzz_replay [-q] --mutate N [--seed S] [--keep DIR] IMAGE...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long mutate = 0;
	uint64_t seed = (uint64_t)time(NULL);
	const char *keep = ".";
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-q"))
			quiet = true;
		else if (!strcmp(argv[i], "--mutate") && i + 1 < argc)
			mutate = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else
			usage();
	}
	if (i == argc)
		usage();
	if (quiet)
		log_set_level(-1);
	if (mutate)
		printf("mutation seed %llu, %lu mutations per image\n",
		       (unsigned long long)seed, mutate);
	for (; i < argc; i++) {
		if (mutate)
			mutate_image(argv[i], (unsigned int)mutate, seed, keep);
		else
			replay_path(argv[i]);
	}
	printf("fuzz_replay: %u inputs, %u failed, %u skipped\n", ran, failed,
	       skipped);
	return failed ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/stage, over a source in
 * memory: the stager threads bring the whole range in, each byte read
 * once, and say so; a reader stages a planned chunk itself and a warming
 * read takes only what is staged; a budget and a metadata-only plan stop
 * where they should; resuming grows the plan; a failed read stops it; a
 * stage on a backing copy leaves its complete chunks there for the next
 * stage, which reads only the others, and a copy of something else is
 * refused; two processes staging one copy at once read each chunk once
 * in all, and one killed mid-read leaves its chunk to the other, which
 * reads it again once and does not hang, nor for longer than the bound
 * when the reader is alive but stuck; a stage that adopts a copy maps
 * it in without a reader.
 */
/* TSAN: yes */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stage/stage.h"
#include "util/log.h"

#define SIZE ((5u << 20) + 12345u) /* not a whole number of chunks */
#define META (4u << 20) /* the metadata: the last 1 MiB and a bit */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older C libraries lack the name */
#endif

struct mem_src {
	uint8_t *bytes; /* the range */
	_Atomic uint64_t stager; /* bytes read by stager threads */
	_Atomic uint64_t readers; /* bytes read for stage_get() callers */
	_Atomic uint64_t fail_at; /* reads that reach this offset fail */
	_Atomic unsigned int watched; /* watch() calls */
};

static int mem_read(void *arg, uint64_t off, void *dst, size_t len,
		    const void *reader)
{
	struct mem_src *m = arg;

	if (off + len > atomic_load(&m->fail_at))
		return -EIO;
	memcpy(dst, m->bytes + off, len);
	atomic_fetch_add(reader ? &m->readers : &m->stager, len);
	return 0;
}

static void mem_watch(void *arg)
{
	atomic_fetch_add(&((struct mem_src *)arg)->watched, 1);
}

static struct mem_src *src_new(void)
{
	struct mem_src *m = calloc(1, sizeof(*m));

	ck_assert_ptr_nonnull(m);
	m->bytes = malloc(SIZE);
	ck_assert_ptr_nonnull(m->bytes);
	for (uint32_t i = 0; i < SIZE; i++)
		m->bytes[i] = (uint8_t)(i * 2654435761u >> 24);
	atomic_store(&m->fail_at, UINT64_MAX);
	return m;
}

static void src_free(struct mem_src *m)
{
	free(m->bytes);
	free(m);
}

static struct stage *open_stage(struct mem_src *m, enum stage_mode mode,
				uint64_t budget)
{
	struct stage_src src = { mem_read, mem_watch, m, "test", NULL };
	struct stage_opts o = { SIZE, META, mode, budget, NULL, 0 };
	struct stage *st;

	ck_assert_int_eq(stage_new(&src, &o, &st), 0);
	return st;
}

/* The number of stager threads once it reaches @n, or after 10 s.  The
 * first thread starts the others one by one once it has something to
 * read, and a small stage can be done before the last one is running. */
static unsigned int wait_threads(struct stage *st, unsigned int n)
{
	struct stage_stats ss;

	for (int i = 0; i < 10000; i++) {
		stage_get_stats(st, &ss);
		if (ss.threads >= n)
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return ss.threads;
}

START_TEST(test_threads)
{
	struct mem_src *m = src_new();
	struct stage *st = open_stage(m, STAGE_FULL, 1ull << 30);
	struct stage_stats ss;
	const void *p;

	ck_assert(stage_is_done(st)); /* no thread runs */
	ck_assert_int_eq(stage_start(st, 4), 0);
	ck_assert_int_eq(stage_start(st, 4), -EALREADY);
	ck_assert_int_eq(stage_wait(st, 20000), 0);
	stage_get_stats(st, &ss);
	ck_assert_int_eq(ss.state, STAGE_DONE);
	ck_assert_uint_eq(ss.staged, SIZE);
	ck_assert_uint_eq(ss.planned, SIZE);
	ck_assert_uint_eq(wait_threads(st, 4), 4);
	ck_assert(ss.seconds >= 0);
	ck_assert_uint_eq(atomic_load(&m->stager), SIZE);
	ck_assert_int_eq(stage_get(st, 0, SIZE, STAGE_GET_STAGED_ONLY, m, &p),
			 0);
	ck_assert_mem_eq(p, m->bytes, SIZE);
	stage_free(st);
	src_free(m);
}
END_TEST

/* A stage with nothing to read runs the watcher only; the others start
 * once a plan has something to read. */
START_TEST(test_threads_lazy)
{
	struct mem_src *m = src_new();
	struct stage *st = open_stage(m, STAGE_NONE, 0);
	struct stage_stats ss;

	ck_assert_int_eq(stage_start(st, 4), 0);
	ck_assert_int_eq(stage_wait(st, 20000), 0);
	stage_get_stats(st, &ss);
	ck_assert_uint_eq(ss.threads, 1);
	ck_assert_uint_eq(ss.staged, 0);
	ck_assert_int_eq(stage_resume(st, STAGE_FULL, 1ull << 30), 0);
	while (stage_get_stats(st, &ss), ss.state != STAGE_DONE)
		ck_assert_int_eq(stage_wait(st, 20000), 0);
	ck_assert_uint_eq(ss.staged, SIZE);
	ck_assert_uint_eq(wait_threads(st, 4), 4);
	stage_stop(st);
	stage_get_stats(st, &ss);
	ck_assert_uint_eq(ss.threads, 0);
	stage_free(st);
	src_free(m);
}
END_TEST

static _Atomic unsigned int ended_lines; /* "staged ... into RAM" logged */

static void count_ended(int level, const char *line)
{
	(void)level;
	if (strstr(line, "staged ") && strstr(line, " into RAM in "))
		atomic_fetch_add(&ended_lines, 1);
}

/* The end of a plan is logged once, and only when it staged something: a
 * stage=none stage whose empty plan is done says nothing. */
START_TEST(test_ended_log)
{
	struct mem_src *m = src_new();
	struct stage *st = open_stage(m, STAGE_NONE, 0);
	struct stage_stats ss;

	log_set_hook(count_ended);
	ck_assert_int_eq(stage_start(st, 2), 0);
	ck_assert_int_eq(stage_wait(st, 20000), 0);
	ck_assert_int_eq(stage_resume(st, STAGE_FULL, 1ull << 30), 0);
	while (stage_get_stats(st, &ss), ss.state != STAGE_DONE)
		ck_assert_int_eq(stage_wait(st, 20000), 0);
	stage_stop(st); /* joined: whatever they log is logged */
	ck_assert_uint_eq(atomic_load(&ended_lines), 1);
	log_set_hook(NULL);
	stage_free(st);
	src_free(m);
}
END_TEST

START_TEST(test_readers)
{
	struct mem_src *m = src_new();
	struct stage *st = open_stage(m, STAGE_FULL, 1ull << 30);
	struct stage_stats ss;
	const void *p;

	/* Warming: not staged yet, and it may not stage it. */
	ck_assert_int_eq(stage_get(st, 1000, 10, STAGE_GET_STAGED_ONLY, m, &p),
			 -ENODATA);
	ck_assert_int_eq(stage_get(st, SIZE - 1, 2, 0, m, &p), -ERANGE);
	/* A reader stages the chunks its range touches, in one read. */
	ck_assert_int_eq(stage_get(st, 1000, 200000, 0, m, &p), 0);
	ck_assert_mem_eq(p, m->bytes + 1000, 200000);
	ck_assert_uint_eq(atomic_load(&m->readers), 256u << 10);
	ck_assert_int_eq(stage_get(st, 1000, 10, STAGE_GET_STAGED_ONLY, m, &p),
			 0);
	while (stage_next(st) == 1)
		;
	stage_get_stats(st, &ss);
	ck_assert_uint_eq(ss.by_readers, 256u << 10);
	ck_assert_uint_eq(atomic_load(&m->readers) + atomic_load(&m->stager),
			  SIZE);
	stage_free(st);
	src_free(m);
}
END_TEST

START_TEST(test_plans)
{
	struct mem_src *m = src_new();
	struct stage *st = open_stage(m, STAGE_FULL, 2u << 20);
	struct stage_stats ss;

	while (stage_next(st) == 1)
		;
	stage_get_stats(st, &ss);
	ck_assert_uint_le(ss.planned, 2u << 20);
	ck_assert_uint_eq(ss.staged, ss.planned);
	stage_free(st);

	st = open_stage(m, STAGE_NONE, 1ull << 30);
	ck_assert_int_eq(stage_state(st), STAGE_OFF);
	ck_assert_int_eq(stage_next(st), 0);
	ck_assert_int_eq(stage_resume(st, STAGE_NONE, 1), -EINVAL);
	/* Metadata only: whole chunks from META to the end. */
	ck_assert_int_eq(stage_resume(st, STAGE_META, 1ull << 30), 0);
	ck_assert_int_eq(stage_state(st), STAGE_IDLE);
	while (stage_next(st) == 1)
		;
	stage_get_stats(st, &ss);
	ck_assert_int_eq(ss.state, STAGE_DONE);
	ck_assert_uint_eq(ss.staged, SIZE - META);
	/* A smaller budget does not shrink it; full brings the rest. */
	ck_assert_int_eq(stage_resume(st, STAGE_FULL, 1), 0);
	while (stage_next(st) == 1)
		;
	stage_get_stats(st, &ss);
	ck_assert_uint_eq(ss.staged, SIZE);
	ck_assert_uint_ge(ss.budget, 1ull << 30);
	stage_free(st);
	src_free(m);
}
END_TEST

START_TEST(test_failure)
{
	struct mem_src *m = src_new();
	struct stage *st;
	struct stage_stats ss;
	const void *p;

	atomic_store(&m->fail_at, 3u << 20);
	st = open_stage(m, STAGE_FULL, 1ull << 30);
	while (stage_next(st) == 1)
		;
	stage_get_stats(st, &ss);
	ck_assert_int_eq(ss.error, EIO);
	ck_assert_uint_lt(ss.staged, SIZE);
	/* What failed is not in RAM: readers go to the source. */
	ck_assert_int_eq(stage_get(st, SIZE - 10, 10, 0, m, &p), -ENODATA);
	stage_free(st);
	src_free(m);
}
END_TEST

#define CHUNK (128u << 10) /* lib/stage's chunk */

static struct stage *open_backed(struct mem_src *m, int fd, const char *key)
{
	struct stage_src src = { mem_read, mem_watch, m, "test", NULL };
	struct stage_backing b = { fd, key, strlen(key), false, -1, NULL };
	struct stage_opts o = { SIZE, META, STAGE_FULL, 1ull << 30, &b, 0 };
	struct stage *st;

	ck_assert_int_eq(stage_new(&src, &o, &st), 0);
	return st;
}

/* A reader stages three chunks into a copy; the stage after it adopts them
 * and reads only the rest, and the copy says all is complete. */
START_TEST(test_backing_adopt)
{
	struct mem_src *m = src_new();
	struct stage_stats ss;
	struct stage *st;
	uint64_t size = 0, complete = 0;
	const void *p;
	int fd;

	ck_assert_int_eq(stage_backing_new(SIZE, "k1", 2, "test", &fd), 0);
	ck_assert_int_eq(stage_backing_check(fd, &size, "k1", 2, &complete), 0);
	ck_assert_uint_eq(size, SIZE);
	ck_assert_uint_eq(complete, 0);
	st = open_backed(m, fd, "k1");
	ck_assert_int_eq(stage_get(st, 10, 3 * CHUNK - 20, 0, m, &p), 0);
	stage_get_stats(st, &ss);
	ck_assert_int_eq(ss.backing, STAGE_BACKING_USED);
	ck_assert_uint_eq(ss.adopted, 0);
	stage_free(st);
	ck_assert_uint_eq(atomic_load(&m->readers), 3 * CHUNK);
	ck_assert_int_eq(stage_backing_check(fd, &size, "k1", 2, &complete), 0);
	ck_assert_uint_eq(complete, 3 * CHUNK);

	atomic_store(&m->readers, 0);
	st = open_backed(m, fd, "k1");
	stage_get_stats(st, &ss);
	ck_assert_uint_eq(ss.adopted, 3 * CHUNK);
	ck_assert_uint_eq(ss.staged, 3 * CHUNK);
	ck_assert_int_eq(
		stage_get(st, 0, 3 * CHUNK, STAGE_GET_STAGED_ONLY, m, &p), 0);
	while (stage_next(st) == 1)
		;
	ck_assert_uint_eq(atomic_load(&m->stager), SIZE - 3 * CHUNK);
	ck_assert_uint_eq(atomic_load(&m->readers), 0);
	ck_assert_int_eq(stage_get(st, 0, SIZE, STAGE_GET_STAGED_ONLY, m, &p),
			 0);
	ck_assert_mem_eq(p, m->bytes, SIZE);
	stage_free(st);
	ck_assert_int_eq(stage_backing_check(fd, &size, NULL, 0, &complete), 0);
	ck_assert_uint_eq(complete, SIZE);
	close(fd);
	src_free(m);
}
END_TEST

/* Resident bytes (smaps' Rss, page table entries of this process) of the
 * mapping that holds @p. */
static uint64_t mapped_bytes(const void *p)
{
	unsigned long lo, hi, kb;
	char line[256];
	bool in = false;
	uint64_t rss = UINT64_MAX;
	FILE *f = fopen("/proc/self/smaps", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && sscanf(line, "Rss: %lu kB", &kb) == 1) {
			rss = (uint64_t)kb << 10;
			break;
		}
	}
	fclose(f);
	ck_assert_uint_ne(rss, UINT64_MAX);
	return rss;
}

/* A stage that adopts a complete copy maps it in once started (a fresh
 * mapping has no page table entries, and readers would fault each page
 * in), without a reader touching it. */
START_TEST(test_backing_mapped)
{
	struct mem_src *m = src_new();
	struct stage *st;
	const void *p;
	uint64_t rss = 0;
	void *probe;
	int fd;

	probe = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(probe, MAP_FAILED);
	if (madvise(probe, 4096, MADV_POPULATE_READ) && errno == EINVAL) {
		munmap(probe, 4096);
		src_free(m);
		fprintf(stderr,
			"test_backing_mapped: skipped, this kernel has no MADV_POPULATE_READ (Linux 5.14)\n");
		return;
	}
	munmap(probe, 4096);
	ck_assert_int_eq(stage_backing_new(SIZE, "k1", 2, "test", &fd), 0);
	st = open_backed(m, fd, "k1");
	while (stage_next(st) == 1)
		;
	stage_free(st);

	st = open_backed(m, fd, "k1");
	ck_assert_int_eq(stage_get(st, 0, SIZE, STAGE_GET_STAGED_ONLY, m, &p),
			 0);
	ck_assert_uint_lt(mapped_bytes(p), SIZE / 2);
	ck_assert_int_eq(stage_start(st, 1), 0);
	for (int i = 0; i < 10000 && rss < SIZE; i++) {
		rss = mapped_bytes(p);
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	ck_assert_uint_ge(rss, SIZE);
	ck_assert_mem_eq(p, m->bytes, SIZE);
	stage_stop(st);
	stage_free(st);
	close(fd);
	src_free(m);
}
END_TEST

/* A copy of another key or size, or with a broken trailer, is refused:
 * the stage reads everything into anonymous memory. */
START_TEST(test_backing_refused)
{
	struct mem_src *m = src_new();
	struct stage_stats ss;
	struct stage *st;
	uint64_t size = SIZE + 1, complete;
	char junk[8] = "NOTSTAGE";
	struct stat sb;
	int fd;

	ck_assert_int_eq(stage_backing_new(SIZE, "k1", 2, "test", &fd), 0);
	st = open_backed(m, fd, "k1");
	while (stage_next(st) == 1)
		;
	stage_free(st);
	ck_assert_int_eq(stage_backing_check(fd, &size, "k1", 2, NULL),
			 -ESTALE);
	size = 0;
	ck_assert_int_eq(stage_backing_check(fd, &size, "k2", 2, NULL),
			 -ESTALE);
	atomic_store(&m->stager, 0);
	st = open_backed(m, fd, "k2");
	stage_get_stats(st, &ss);
	ck_assert_int_eq(ss.backing, STAGE_BACKING_REFUSED);
	ck_assert_uint_eq(ss.adopted, 0);
	while (stage_next(st) == 1)
		;
	ck_assert_uint_eq(atomic_load(&m->stager), SIZE);
	stage_free(st);
	/* A chunk's word that is no state (2, a claim of pid 0): refused. */
	for (int i = 0; i < 2; i++) {
		uint32_t w = i ? 0x80000000u : 2, zero = 0;
		off_t at = (SIZE + 4095) / 4096 * 4096 + 4;

		ck_assert_int_eq(pwrite(fd, &w, 4, at), 4);
		ck_assert_int_eq(stage_backing_check(fd, &size, NULL, 0, NULL),
				 0);
		ck_assert_int_eq(stage_backing_check(fd, &size, NULL, 0,
						     &complete),
				 -EBADMSG);
		st = open_backed(m, fd, "k1");
		stage_get_stats(st, &ss);
		ck_assert_int_eq(ss.backing, STAGE_BACKING_REFUSED);
		stage_free(st);
		ck_assert_int_eq(pwrite(fd, &zero, 4, at), 4);
	}
	ck_assert_int_eq(stage_backing_check(fd, &size, "k1", 2, &complete), 0);
	/* Sealed: it can neither grow nor shrink. */
	ck_assert_int_ne(ftruncate(fd, 1 << 30), 0);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), sb.st_size - 96), 8);
	ck_assert_int_eq(stage_backing_check(fd, &size, NULL, 0, NULL),
			 -EBADMSG);
	atomic_store(&m->stager, 0);
	st = open_backed(m, fd, "k1");
	stage_get_stats(st, &ss);
	ck_assert_int_eq(ss.backing, STAGE_BACKING_REFUSED);
	stage_free(st);
	close(fd);
	src_free(m);
}
END_TEST

#define NCHUNKS ((SIZE + CHUNK - 1) / CHUNK)
#define STALL 5u /* the chunk whose read stalls in test_backing_killed */

/* A source that processes share (a shared mapping): it counts the reads
 * of each chunk, all processes' together. */
struct shared_src {
	const uint8_t *bytes; /* the range (each process's copy of it) */
	_Atomic uint32_t reads[NCHUNKS]; /* reads that covered each chunk */
	int stalled; /* a pipe: a byte once the stalled read began */
};

static bool stall_here; /* this process's read of STALL never ends */

static int shared_read(void *arg, uint64_t off, void *dst, size_t len,
		       const void *reader)
{
	struct shared_src *s = arg;

	(void)reader;
	for (uint64_t c = off / CHUNK; c <= (off + len - 1) / CHUNK; c++) {
		atomic_fetch_add(&s->reads[c], 1);
		if (stall_here && c == STALL) {
			if (write(s->stalled, "x", 1) != 1)
				_exit(3);
			for (;;)
				pause();
		}
	}
	/* Slow enough that two stages overlap. */
	nanosleep(&(struct timespec){ 0, 200000 }, NULL);
	memcpy(dst, s->bytes + off, len);
	return 0;
}

static struct shared_src *shared_new(const struct mem_src *m)
{
	struct shared_src *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(s, MAP_FAILED);
	memset(s, 0, sizeof(*s));
	s->bytes = m->bytes;
	return s;
}

static struct stage *shared_stage(struct shared_src *s, int fd)
{
	struct stage_src src = { shared_read, NULL, s, "test", NULL };
	struct stage_backing b = { fd, "k1", 2, false, -1, NULL };
	struct stage_opts o = { SIZE, META, STAGE_FULL, 1ull << 30, &b, 0 };
	struct stage *st;

	return stage_new(&src, &o, &st) ? NULL : st;
}

/* One of two processes: wait for @go, stage the copy with threads while
 * reading it chunk by chunk from the end, and check every byte.  Exits. */
static void __attribute__((noreturn))
share_child(struct shared_src *s, const struct mem_src *m, int fd, int go)
{
	struct stage *st;
	const void *p;
	char b;

	if (read(go, &b, 1) != 0 || !(st = shared_stage(s, fd)) ||
	    stage_start(st, 4))
		_exit(1);
	for (uint32_t c = NCHUNKS; c-- > 0;)
		if (stage_get(st, (uint64_t)c * CHUNK, 1, 0, s, &p))
			_exit(2);
	stage_wait(st, -1);
	if (stage_get(st, 0, SIZE, STAGE_GET_STAGED_ONLY, s, &p) ||
	    memcmp(p, m->bytes, SIZE))
		_exit(4);
	stage_free(st);
	_exit(0);
}

/* Two processes stage one copy at once: every chunk is read once in all,
 * and both see every byte right. */
START_TEST(test_backing_shared)
{
	struct mem_src *m = src_new();
	struct shared_src *s = shared_new(m);
	uint64_t size = 0, complete = 0;
	int fd, go[2], status;
	pid_t pid[2];

	ck_assert_int_eq(stage_backing_new(SIZE, "k1", 2, "test", &fd), 0);
	ck_assert_int_eq(pipe(go), 0);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		ck_assert_int_ge(pid[i], 0);
		if (!pid[i]) {
			close(go[1]);
			share_child(s, m, fd, go[0]);
		}
	}
	close(go[1]); /* both start */
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
		ck_assert(WIFEXITED(status));
		ck_assert_int_eq(WEXITSTATUS(status), 0);
	}
	for (uint32_t c = 0; c < NCHUNKS; c++)
		ck_assert_uint_eq(atomic_load(&s->reads[c]), 1);
	ck_assert_int_eq(stage_backing_check(fd, &size, "k1", 2, &complete), 0);
	ck_assert_uint_eq(complete, SIZE);
	close(go[0]);
	close(fd);
	munmap(s, sizeof(*s));
	src_free(m);
}
END_TEST

/* Fork a process that stages the copy @fd and stalls in its read of
 * chunk STALL, holding its claim; return once it is in that read. */
static pid_t stall_child(struct shared_src *s, int fd, int pfd[2])
{
	struct stage *st;
	const void *p;
	pid_t pid;
	char b;

	ck_assert_int_eq(pipe(pfd), 0);
	s->stalled = pfd[1];
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		stall_here = true;
		st = shared_stage(s, fd);
		if (st)
			stage_get(st, (uint64_t)STALL * CHUNK, 1, 0, s, &p);
		_exit(1);
	}
	ck_assert_int_eq(read(pfd[0], &b, 1), 1);
	return pid;
}

/* Stage the copy @fd to the end in this process, check its bytes, and
 * return the seconds it took. */
static double stage_rest(struct shared_src *s, const struct mem_src *m, int fd)
{
	struct timespec t0, t1;
	struct stage_stats ss;
	struct stage *st;
	const void *p;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	st = shared_stage(s, fd);
	ck_assert_ptr_nonnull(st);
	while (stage_next(st) == 1)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_eq(stage_get(st, 0, SIZE, STAGE_GET_STAGED_ONLY, s, &p),
			 0);
	ck_assert_mem_eq(p, m->bytes, SIZE);
	stage_get_stats(st, &ss);
	ck_assert_uint_eq(ss.staged, SIZE);
	stage_free(st);
	for (uint32_t c = 0; c < NCHUNKS; c++)
		ck_assert_uint_eq(atomic_load(&s->reads[c]),
				  c == STALL ? 2 : 1);
	return (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

/* A process killed in the middle of a chunk's read (and not reaped yet)
 * leaves its claim; another stage of the copy takes it over at once,
 * reads that chunk again, once, and every other chunk once. */
START_TEST(test_backing_killed)
{
	struct mem_src *m = src_new();
	struct shared_src *s = shared_new(m);
	int fd, pfd[2], status;
	pid_t pid;

	ck_assert_int_eq(stage_backing_new(SIZE, "k1", 2, "test", &fd), 0);
	pid = stall_child(s, fd, pfd);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	/* Well within the bound for a live owner's claim (5 s). */
	ck_assert_double_lt(stage_rest(s, m, fd), 3);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status));
	close(pfd[0]);
	close(pfd[1]);
	close(fd);
	munmap(s, sizeof(*s));
	src_free(m);
}
END_TEST

/* A process alive but stuck in a chunk's read (storage that hangs), that
 * holds the copy: its claim is never taken over (it may still write the
 * chunk's bytes).  A reader of this process waits claim_stale_ms for it,
 * then reads its bytes itself (stage_get() says -ENODATA: the caller
 * reads the source); the chunk stays the stuck process's.  Once that
 * process is gone, the chunk is read again, once. */
START_TEST(test_backing_stuck)
{
	struct mem_src *m = src_new();
	struct shared_src *s = shared_new(m);
	struct stage_src src = { shared_read, NULL, s, "test", NULL };
	struct stage_backing b = { -1, "k1", 2, false, -1, NULL };
	struct stage_opts o = { SIZE, META, STAGE_FULL, 1ull << 30, &b, 200 };
	struct timespec t0, t1;
	int fd, pfd[2], status;
	struct stage *st;
	const void *p;
	double took;
	pid_t pid;

	ck_assert_int_eq(stage_backing_new(SIZE, "k1", 2, "test", &fd), 0);
	b.fd = fd;
	pid = stall_child(s, fd, pfd);
	ck_assert_int_eq(stage_new(&src, &o, &st), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(stage_get(st, (uint64_t)STALL * CHUNK, 1, 0, s, &p),
			 -ENODATA);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	ck_assert_double_ge(took, 0.19);
	/* Not read here: the stuck process's read is the only one. */
	ck_assert_uint_eq(atomic_load(&s->reads[STALL]), 1);
	stage_free(st);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_double_lt(stage_rest(s, m, fd), 3);
	close(pfd[0]);
	close(pfd[1]);
	close(fd);
	munmap(s, sizeof(*s));
	src_free(m);
}
END_TEST

/* The owner's check of chunks: it refuses the chunks whose bit is set in
 * bad (chunk index < 64), and counts its calls. */
static _Atomic uint64_t bad_chunks;
static _Atomic unsigned int checks;

static int mem_check(void *arg, uint64_t off, const void *bytes, size_t len)
{
	struct mem_src *m = arg;
	uint64_t c = off / CHUNK;

	atomic_fetch_add(&checks, 1);
	/* It is given the chunk's bytes, in place. */
	ck_assert(off % CHUNK == 0);
	ck_assert_uint_eq(len, off + CHUNK <= SIZE ? CHUNK : SIZE - off);
	ck_assert(!memcmp(bytes, m->bytes + off, len));
	return c < 64 && atomic_load(&bad_chunks) >> c & 1 ? -EBADMSG : 0;
}

static struct stage *open_checked(struct mem_src *m, int fd, const char *key)
{
	struct stage_src src = { mem_read, mem_watch, m, "test", mem_check };
	struct stage_backing b = { fd,	  key, key ? strlen(key) : 0,
				   false, -1,  NULL };
	struct stage_opts o = {
		SIZE, META, STAGE_FULL, 1ull << 30, fd >= 0 ? &b : NULL, 0
	};
	struct stage *st;

	ck_assert_int_eq(stage_new(&src, &o, &st), 0);
	return st;
}

/* A chunk that fails its check is not staged: readers get -ENODATA (they
 * go to the source), staging goes on past it to the end, and the stats
 * count it; one a reader reads itself likewise. */
START_TEST(test_check)
{
	struct mem_src *m = src_new();
	struct stage_stats ss;
	struct stage *st;
	const void *p;

	atomic_store(&bad_chunks, 1ull << 3 | 1ull << 20);
	atomic_store(&checks, 0);
	st = open_checked(m, -1, NULL);
	/* A reader's fill of chunks 2..4: 3 fails, 2 and 4 are staged. */
	ck_assert_int_eq(stage_get(st, 2 * CHUNK + 5, 3 * CHUNK - 10, 0, m, &p),
			 -ENODATA);
	ck_assert_int_eq(stage_get(st, 2 * CHUNK, CHUNK, STAGE_GET_STAGED_ONLY,
				   m, &p),
			 0);
	ck_assert_int_eq(
		stage_get(st, 4 * CHUNK, 10, STAGE_GET_STAGED_ONLY, m, &p), 0);
	ck_assert_int_eq(stage_start(st, 4), 0);
	ck_assert_int_eq(stage_wait(st, 20000), 0);
	stage_get_stats(st, &ss);
	ck_assert_int_eq(ss.state, STAGE_DONE);
	ck_assert_int_eq(ss.error, 0);
	ck_assert_uint_eq(ss.refused, 2 * CHUNK);
	ck_assert_uint_eq(ss.staged, SIZE - 2 * CHUNK);
	ck_assert_uint_eq(atomic_load(&checks), (SIZE + CHUNK - 1) / CHUNK);
	ck_assert_int_eq(stage_get(st, 20 * CHUNK + 7, 1, 0, m, &p), -ENODATA);
	ck_assert(!stage_holds(st, 3 * CHUNK, 1));
	ck_assert_int_eq(stage_get(st, 21 * CHUNK, SIZE - 21 * CHUNK, 0, m, &p),
			 0);
	ck_assert_mem_eq(p, m->bytes + 21 * CHUNK, SIZE - 21 * CHUNK);
	stage_free(st);
	src_free(m);
}
END_TEST

/* In a backing copy a chunk that fails its check is never marked
 * complete: the copy holds the others, and the next stage reads it
 * again.  Another stage of the copy in the same process, which finds a
 * chunk completed by the first, checks it before it takes it. */
START_TEST(test_check_backing)
{
	struct mem_src *m = src_new();
	uint64_t size = 0, complete = 0;
	struct stage_stats ss;
	struct stage *a, *b;
	const void *p;
	int fd;

	ck_assert_int_eq(stage_backing_new(SIZE, "k1", 2, "test", &fd), 0);
	atomic_store(&bad_chunks, 1ull << 5);
	a = open_checked(m, fd, "k1");
	while (stage_next(a) == 1)
		;
	stage_get_stats(a, &ss);
	ck_assert_uint_eq(ss.refused, CHUNK);
	ck_assert_int_eq(stage_backing_check(fd, &size, "k1", 2, &complete), 0);
	ck_assert_uint_eq(complete, SIZE - CHUNK);
	stage_free(a);

	/* The check passes now: the next stage adopts the rest and reads
	 * chunk 5 alone. */
	atomic_store(&bad_chunks, 0);
	atomic_store(&m->stager, 0);
	a = open_checked(m, fd, "k1");
	while (stage_next(a) == 1)
		;
	ck_assert_uint_eq(atomic_load(&m->stager), CHUNK);
	ck_assert_int_eq(stage_backing_check(fd, &size, "k1", 2, &complete), 0);
	ck_assert_uint_eq(complete, SIZE);
	stage_free(a);
	close(fd);

	/* Two stages of one new copy: b finds what a completed, and checks
	 * it: chunk 7 it refuses. */
	ck_assert_int_eq(stage_backing_new(SIZE, "k2", 2, "test", &fd), 0);
	a = open_checked(m, fd, "k2");
	b = open_checked(m, fd, "k2");
	while (stage_next(a) == 1)
		;
	atomic_store(&bad_chunks, 1ull << 7);
	ck_assert_int_eq(stage_get(b, 6 * CHUNK, 3 * CHUNK, 0, m, &p),
			 -ENODATA);
	ck_assert_int_eq(stage_get(b, 6 * CHUNK, CHUNK, STAGE_GET_STAGED_ONLY,
				   m, &p),
			 0);
	ck_assert_mem_eq(p, m->bytes + 6 * CHUNK, CHUNK);
	stage_get_stats(b, &ss);
	ck_assert_uint_eq(ss.refused, CHUNK);
	ck_assert_uint_eq(ss.peers, 2 * CHUNK); /* chunks 6 and 8 */
	stage_free(b);
	stage_free(a);
	close(fd);
	atomic_store(&bad_chunks, 0);
	src_free(m);
}
END_TEST

/* A writer's copy (stage_backing_new_writer()), mapped by its stage,
 * sealed against other writes, and a descriptor of it for reading only:
 * what root's keeper hands a user's mount of a site image. */
static int writer_copy(struct mem_src *m, const char *key, struct stage **w,
		       int *rw)
{
	struct stage_src src = { mem_read, NULL, m, "writer", NULL };
	struct stage_backing b = { -1, key, strlen(key), false, -1, NULL };
	struct stage_opts o = { SIZE, META, STAGE_FULL, 1ull << 30, &b, 0 };
	char path[64];
	int ro;

	ck_assert_int_eq(stage_backing_new_writer(SIZE, key, strlen(key),
						  "test", rw),
			 0);
	b.fd = *rw;
	ck_assert_int_eq(stage_new(&src, &o, w), 0);
	ck_assert_int_eq(fcntl(*rw, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", *rw);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(ro, 0);
	return ro;
}

static struct stage *follower(struct mem_src *m, int fd, const char *key,
			      int writer, bool checked)
{
	struct stage_src src = { mem_read, mem_watch, m, "follower",
				 checked ? mem_check : NULL };
	struct stage_backing b = { fd, key, strlen(key), true, writer, NULL };
	/* Its own budget and mode do not limit what it takes. */
	struct stage_opts o = { SIZE, META, STAGE_META, CHUNK, &b, 0 };
	struct stage *st;

	ck_assert_int_eq(stage_new(&src, &o, &st), 0);
	return st;
}

/* The permissions of the mapping holding @p, as /proc/self/maps says. */
static const char *map_perms(const void *p)
{
	static char perms[8];
	unsigned long lo, hi;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	ck_assert_ptr_nonnull(f);
	perms[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 &&
		    (uintptr_t)p >= lo && (uintptr_t)p < hi)
			break;
	fclose(f);
	return perms;
}

/* A follower takes the chunks its writer completed, as they land, and
 * reads nothing: a chunk not complete is -ENODATA (its reader reads the
 * source); one that fails the follower's check is not staged; it never
 * writes the copy (its mapping cannot); once the writer says it ended,
 * the follower's staging ends too. */
START_TEST(test_follow)
{
	struct mem_src *m = src_new(), *fm = src_new();
	struct stage_stats ss;
	struct stage *w, *f;
	const void *p;
	int rw, ro;

	atomic_store(&bad_chunks, 1ull << 9);
	ro = writer_copy(m, "site", &w, &rw);
	/* The writer completed chunk 3 (a reader of its own filled it). */
	ck_assert_int_eq(stage_get(w, 3 * CHUNK, 1, 0, m, &p), 0);
	f = follower(fm, ro, "site", -1, true);
	stage_get_stats(f, &ss);
	ck_assert_uint_eq(ss.adopted, CHUNK);
	ck_assert_uint_eq(ss.planned, SIZE);
	ck_assert_int_eq(stage_get(f, 3 * CHUNK, CHUNK, 0, fm, &p), 0);
	ck_assert_mem_eq(p, m->bytes + 3 * CHUNK, CHUNK);
	ck_assert_int_eq(stage_get(f, 4 * CHUNK, 1, 0, fm, &p), -ENODATA);
	/* It lands: a reader takes it at once. */
	ck_assert_int_eq(stage_get(w, 4 * CHUNK, 1, 0, m, &p), 0);
	ck_assert_int_eq(stage_get(f, 4 * CHUNK, 2, 0, fm, &p), 0);
	ck_assert_mem_eq(p, m->bytes + 4 * CHUNK, 2);
	ck_assert_int_eq(stage_resume(f, STAGE_FULL, 1ull << 30), 0);

	/* Its stager thread follows the writer to the end: every chunk
	 * complete, chunk 9 refused by its check. */
	ck_assert_int_eq(stage_start(f, 4), 0);
	ck_assert_int_eq(stage_start(w, 4), 0);
	ck_assert_int_eq(stage_wait(w, 10000), 0);
	ck_assert_int_eq(stage_wait(f, 10000), 0);
	ck_assert_int_eq(stage_backing_end(f), -EINVAL);
	stage_get_stats(f, &ss);
	ck_assert_int_eq(ss.state, STAGE_DONE);
	ck_assert_uint_le(ss.threads, 1);
	ck_assert_uint_eq(ss.refused, CHUNK);
	ck_assert_uint_eq(ss.staged, SIZE - CHUNK);
	ck_assert_int_eq(stage_get(f, 9 * CHUNK, 1, 0, fm, &p), -ENODATA);
	ck_assert_int_eq(stage_get(f, 10 * CHUNK, SIZE - 10 * CHUNK, 0, fm, &p),
			 0);
	ck_assert_mem_eq(p, m->bytes + 10 * CHUNK, SIZE - 10 * CHUNK);
	/* It read nothing itself. */
	ck_assert_uint_eq(atomic_load(&fm->stager) + atomic_load(&fm->readers),
			  0);
	/* Its mapping cannot be written: shared, read-only. */
	ck_assert_int_eq(stage_get(f, 0, 1, 0, fm, &p), 0);
	ck_assert_str_eq(map_perms(p), "r--s");
	stage_free(f);
	stage_free(w);
	close(ro);
	close(rw);
	atomic_store(&bad_chunks, 0);

	/* A writer whose staging stopped (its last chunk's read failed):
	 * its follower waits for the rest until the writer says it ended. */
	atomic_store(&m->fail_at, SIZE - 100);
	ro = writer_copy(m, "site2", &w, &rw);
	f = follower(fm, ro, "site2", -1, false);
	ck_assert_int_eq(stage_start(f, 0), 0);
	while (stage_next(w) == 1)
		;
	stage_get_stats(w, &ss);
	ck_assert_int_ne(ss.error, 0);
	/* Watched for 200 ms: ten of its looks. */
	ck_assert_int_eq(stage_wait(f, 200), -ETIMEDOUT);
	ck_assert_int_eq(stage_backing_end(w), 0);
	ck_assert_int_eq(stage_wait(f, 10000), 0);
	stage_get_stats(f, &ss);
	ck_assert_int_eq(ss.state, STAGE_DONE);
	ck_assert_uint_lt(ss.staged, SIZE);
	ck_assert_int_eq(stage_get(f, SIZE - 1, 1, 0, fm, &p), -ENODATA);
	ck_assert_uint_eq(atomic_load(&fm->stager) + atomic_load(&fm->readers),
			  0);
	stage_free(f);
	stage_free(w);
	close(ro);
	close(rw);
	src_free(fm);
	src_free(m);
}
END_TEST

/* A writer in another process that dies mid-staging: its follower's
 * staging ends (its pidfd), with only the chunks the writer completed,
 * each right; the others are -ENODATA. */
START_TEST(test_follow_writer_gone)
{
	struct mem_src *m = src_new(), *fm = src_new();
	struct stage_stats ss;
	struct stage *w, *f;
	const void *p;
	int rw, ro, go[2], pidfd, status;
	pid_t pid;
	char b;

	ro = writer_copy(m, "site", &w, &rw);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		/* Half the range, then it is killed. */
		if (stage_get(w, 0, SIZE / 2, 0, m, &p) ||
		    write(go[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	ck_assert_int_ge(pidfd, 0);
	ck_assert_int_eq(read(go[0], &b, 1), 1);
	f = follower(fm, ro, "site", pidfd, false);
	ck_assert_int_eq(stage_start(f, 0), 0);
	ck_assert_int_eq(stage_wait(f, 100), -ETIMEDOUT);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(stage_wait(f, 10000), 0);
	stage_get_stats(f, &ss);
	ck_assert_int_eq(ss.state, STAGE_DONE);
	ck_assert_uint_ge(ss.staged, SIZE / 2);
	ck_assert_uint_lt(ss.staged, SIZE);
	ck_assert_int_eq(stage_get(f, 0, SIZE / 2, 0, fm, &p), 0);
	ck_assert_mem_eq(p, m->bytes, SIZE / 2);
	ck_assert_int_eq(stage_get(f, SIZE - 1, 1, 0, fm, &p), -ENODATA);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	stage_free(f);
	stage_free(w);
	close(pidfd);
	close(ro);
	close(rw);
	close(go[0]);
	close(go[1]);
	src_free(fm);
	src_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stage");
	TCase *tt = tcase_create("stager");
	TCase *tc = tcase_create("stage");
	SRunner *sr;
	int failed;

	/* The stager's threads (stage_start()): TSan runs these. */
	tcase_set_tags(tt, "threads");
	tcase_set_timeout(tt, 60);
	tcase_add_test(tt, test_threads);
	tcase_add_test(tt, test_threads_lazy);
	tcase_add_test(tt, test_ended_log);
	tcase_add_test(tt, test_backing_mapped);
	tcase_add_test(tt, test_backing_refused);
	suite_add_tcase(s, tt);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_readers);
	tcase_add_test(tc, test_plans);
	tcase_add_test(tc, test_failure);
	tcase_add_test(tc, test_check);
	tcase_add_test(tc, test_check_backing);
	tcase_add_test(tc, test_backing_adopt);
	tcase_add_test(tc, test_backing_shared);
	tcase_add_test(tc, test_backing_killed);
	tcase_add_test(tc, test_backing_stuck);
	tcase_add_test(tc, test_follow);
	tcase_add_test(tc, test_follow_writer_gone);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the chunks of the staged copy: who reads a chunk
 * (the compare-and-swap from PLANNED to INFLIGHT), the read itself, and
 * stage_get(), through which a reader takes a staged range or stages it.
 * See stage_i.h for the design.
 */
#define LOG_MOD "stage"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>

#include "stage/stage_i.h"
#include "util/ckd.h"
#include "util/clock.h"

uint32_t stage__run_claim(struct stage *st, uint32_t c, uint32_t max,
			  uint8_t *s)
{
	uint32_t n = 0;

	*s = STAGE_CHUNK_PLANNED;
	if (!atomic_compare_exchange_strong(&st->chunk[c], s,
					    STAGE_CHUNK_INFLIGHT))
		return 0;
	for (n = 1; n < max && c + n < st->nchunks; n++) {
		uint8_t p = STAGE_CHUNK_PLANNED;

		if (!atomic_compare_exchange_strong(&st->chunk[c + n], &p,
						    STAGE_CHUNK_INFLIGHT))
			break;
	}
	return n;
}

/* Count a read of chunks [c, c + n) that ended, and wake who waits.
 * @whole: it was one read of the source (the pacing measures those). */
static void read_ended(struct stage *st, uint32_t c, uint32_t n, bool stager,
		       int err, bool whole, int64_t t0)
{
	unsigned int was;

	pthread_mutex_lock(&st->lock);
	st->filling--;
	if (stager) {
		was = st->target;
		st->inflight--;
		if (!err && whole && n == STAGE_RUN && !(c % STAGE_RUN))
			stage__pace(st, mono_ns() - t0);
		/* A slot is free: one stager may take it (more if the
		 * target grew). */
		if (st->target > was)
			pthread_cond_broadcast(&st->slot);
		else
			pthread_cond_signal(&st->slot);
	}
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
}

static void set_state(struct stage *st, uint32_t c, uint32_t n, uint8_t s)
{
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&st->chunk[c + i], s,
				      memory_order_release);
}

bool stage__chunk_checked(struct stage *st, uint32_t c)
{
	uint64_t start = (uint64_t)c << STAGE_CHUNK_SHIFT;
	uint64_t len = stage__chunks_len(st, c, 1);

	if (!st->src.check ||
	    !st->src.check(st->src.arg, start, st->mem + start, (size_t)len))
		return true;
	atomic_fetch_add(&st->refused, len);
	return false;
}

/* Read chunks [c, c + n) from the source into the staged copy (claimed in
 * the backing, if there is one) and set their state: each is staged once
 * it passes the owner's check.  Return: 0 or -errno of the read (a chunk
 * that fails its check is not an error of the read: staging goes on). */
static int source_read(struct stage *st, uint32_t c, uint32_t n,
		       const void *reader)
{
	uint64_t start = (uint64_t)c << STAGE_CHUNK_SHIFT;
	uint64_t len = stage__chunks_len(st, c, n);
	int err;

	err = st->src.read(st->src.arg, start, st->mem + start, (size_t)len,
			   reader);
	if (err) {
		/* Give the untouched pages back; readers go to the source. */
		madvise(st->mem + start, (size_t)len, MADV_DONTNEED);
		if (st->trail)
			stage__backing_done(st, c, n, false);
		set_state(st, c, n, STAGE_CHUNK_FAILED);
		return err;
	}
	for (uint32_t i = c; i < c + n; i++) {
		uint64_t at = (uint64_t)i << STAGE_CHUNK_SHIFT;
		uint64_t k = stage__chunks_len(st, i, 1);
		bool ok = stage__chunk_checked(st, i);

		if (ok) {
			atomic_fetch_add(&st->staged, k);
			if (reader)
				atomic_fetch_add(&st->by_readers, k);
		} else {
			madvise(st->mem + at, (size_t)k, MADV_DONTNEED);
		}
		/* Complete in the copy only once checked. */
		if (st->trail)
			stage__backing_done(st, i, 1, ok);
		set_state(st, i, 1,
			  ok ? STAGE_CHUNK_STAGED : STAGE_CHUNK_FAILED);
	}
	/* A fill that continues the last one is a reader streaming ahead of
	 * the stager: the stager goes on after it.  Readers in random order
	 * leave it be. */
	if (reader && atomic_exchange(&st->fill_end, c + n) == c)
		atomic_store(&st->follow, c + n);
	return 0;
}

/*
 * Chunks [c, c + n) with a backing copy that other processes' stages may
 * stage too: each is claimed in the copy before it is read, the chunks
 * claimed in a row read in one read; one another process completed is
 * taken as it is, one it is reading is waited for (a reader waits
 * claim_stale_ms at most).  *@whole is cleared unless the run was one
 * read.  Return: 0; -EAGAIN if a reader gave up waiting (the chunks from
 * there on are planned again); or the first read's -errno (the chunks
 * after it fail here too).
 */
static int shared_read(struct stage *st, uint32_t c, uint32_t n,
		       const void *reader, bool *whole)
{
	enum stage_wait wait = reader ? STAGE_WAIT_STALE : STAGE_WAIT_DONE;
	uint32_t i = 0, j;
	int err = 0, got;

	while (i < n && !err) {
		got = stage__backing_claim(st, c + i, wait);
		if (got == STAGE_CLAIM_BUSY) {
			/* Another live process has read it for long: this
			 * reader reads its bytes itself; the chunk stays
			 * planned, for that process to complete. */
			set_state(st, c + i, n - i, STAGE_CHUNK_PLANNED);
			return -EAGAIN;
		}
		if (got == STAGE_CLAIM_DONE) {
			uint64_t len = stage__chunks_len(st, c + i, 1);
			bool ok = stage__chunk_checked(st, c + i);

			*whole = false;
			if (ok) {
				atomic_fetch_add(&st->staged, len);
				atomic_fetch_add(&st->peers, len);
			}
			set_state(st, c + i++, 1,
				  ok ? STAGE_CHUNK_STAGED : STAGE_CHUNK_FAILED);
			continue;
		}
		for (j = i + 1;
		     j < n && stage__backing_claim(st, c + j, STAGE_WAIT_NO) ==
				      STAGE_CLAIM_MINE;
		     j++)
			;
		if (j - i < n)
			*whole = false;
		err = source_read(st, c + i, j - i, reader);
		i = j;
	}
	if (i < n)
		set_state(st, c + i, n - i, STAGE_CHUNK_FAILED);
	return err;
}

int stage__chunk_read(struct stage *st, uint32_t c, uint32_t n,
		      const void *reader)
{
	int64_t t0 = mono_ns();
	bool whole = true;
	int err;

	if (st->trail)
		err = shared_read(st, c, n, reader, &whole);
	else
		err = source_read(st, c, n, reader);
	read_ended(st, c, n, !reader, err, whole, t0);
	return err;
}

/*
 * Make chunk @c staged for a reader: it is, or another thread is reading
 * it (wait), or it is planned: then read it, with the planned chunks after
 * it up to @last, in one read.  False if it stays out of RAM: not planned,
 * or its read failed.
 */
static bool chunk_fill(struct stage *st, uint32_t c, uint32_t last,
		       const void *reader)
{
	uint32_t n;
	uint8_t s;

	n = stage__run_claim(st, c, last - c + 1, &s);
	if (n) {
		pthread_mutex_lock(&st->lock);
		st->filling++;
		pthread_mutex_unlock(&st->lock);
		stage__chunk_read(st, c, n, reader);
		/* Set by this thread's read: staged, or failed (the read, or
		 * the chunk's check). */
		return atomic_load_explicit(&st->chunk[c],
					    memory_order_acquire) ==
		       STAGE_CHUNK_STAGED;
	}
	if (s == STAGE_CHUNK_INFLIGHT) {
		pthread_mutex_lock(&st->lock);
		while ((s = atomic_load_explicit(&st->chunk[c],
						 memory_order_acquire)) ==
		       STAGE_CHUNK_INFLIGHT)
			pthread_cond_wait(&st->cond, &st->lock);
		pthread_mutex_unlock(&st->lock);
	}
	return s == STAGE_CHUNK_STAGED;
}

int stage_get(struct stage *st, uint64_t off, size_t len, unsigned int flags,
	      const void *reader, const void **out)
{
	uint64_t end, c, last;

	if (ckd_add(&end, off, len) || end > st->size)
		return -ERANGE;
	if (!st->mem || !len)
		return -ENODATA;
	assert(reader); /* NULL stands for a stager thread */
	c = off >> STAGE_CHUNK_SHIFT;
	last = (end - 1) >> STAGE_CHUNK_SHIFT;
	for (; c <= last; c++) {
		if (atomic_load_explicit(&st->chunk[c], memory_order_acquire) ==
		    STAGE_CHUNK_STAGED)
			continue;
		/* A follower takes what its writer completed, and reads
		 * nothing: the reader reads the source itself. */
		if (st->follower) {
			if (stage__follow_take(st, (uint32_t)c) !=
			    STAGE_CHUNK_STAGED)
				return -ENODATA;
			continue;
		}
		/* Warming takes only what is staged: it neither reads nor
		 * waits for a read under way (it tries again later). */
		if (flags & STAGE_GET_STAGED_ONLY ||
		    !chunk_fill(st, (uint32_t)c, (uint32_t)last, reader))
			return -ENODATA;
	}
	*out = st->mem + off;
	return 0;
}

bool stage_holds(struct stage *st, uint64_t off, uint64_t len)
{
	uint64_t end, c, last;
	uint8_t s;

	if (!len || ckd_add(&end, off, len) || end > st->size || !st->mem)
		return false;
	last = (end - 1) >> STAGE_CHUNK_SHIFT;
	for (c = off >> STAGE_CHUNK_SHIFT; c <= last; c++) {
		s = atomic_load_explicit(&st->chunk[c], memory_order_acquire);
		if (s == STAGE_CHUNK_EMPTY || s == STAGE_CHUNK_FAILED)
			return false;
	}
	return true;
}

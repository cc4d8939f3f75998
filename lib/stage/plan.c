// SPDX-License-Identifier: MIT
/*
 * This file implements the plan: which chunks are staged and in what
 * order (the metadata first, then the data from the start, within the
 * budget), and stage_next(), the step each stager thread takes through it.
 */
#define LOG_MOD "stage"

#include <pthread.h>

#include "stage/stage_i.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

static void plan_add(struct stage *st, uint32_t c)
{
	uint64_t len = stage__chunks_len(st, c, 1);
	uint8_t s = atomic_load(&st->chunk[c]);

	if (s == STAGE_CHUNK_STAGED || s == STAGE_CHUNK_INFLIGHT)
		return; /* counted in planned already */
	if (st->planned + len > st->budget)
		return;
	/* EMPTY or FAILED (tried again) become PLANNED; a reader may claim
	 * the chunk from here on. */
	atomic_store(&st->chunk[c], STAGE_CHUNK_PLANNED);
	st->plan[st->plan_len++] = c;
	st->planned += len;
}

void stage__plan_build(struct stage *st, enum stage_mode mode)
{
	uint32_t meta_first, c;
	uint64_t held = 0;

	for (c = 0; c < st->nchunks; c++) {
		uint8_t s = atomic_load(&st->chunk[c]);

		if (s == STAGE_CHUNK_STAGED || s == STAGE_CHUNK_INFLIGHT)
			held += stage__chunks_len(st, c, 1);
	}
	st->plan_len = 0;
	st->plan_pos = 0;
	st->mode = (int)mode;
	st->planned = held;
	st->base = atomic_load(&st->staged);
	atomic_store(&st->error, 0);
	/* Metadata first: a mount answers lookups from it at once. */
	meta_first = (uint32_t)(st->meta_start >> STAGE_CHUNK_SHIFT);
	for (c = meta_first; c < st->nchunks; c++)
		plan_add(st, c);
	st->plan_meta = st->plan_len;
	if (mode == STAGE_FULL)
		for (c = 0; c < meta_first; c++)
			plan_add(st, c);
}

/*
 * Take the next run of chunks for a stager thread: its first chunk, and in
 * *n how many (at most @run); UINT32_MAX when the plan is done.  Under
 * lock.
 */
static uint32_t plan_take(struct stage *st, uint32_t *n, uint32_t run)
{
	uint32_t c = atomic_load(&st->follower);
	uint8_t s;

	/* Where the readers are, once the metadata is in. */
	if (st->plan_pos >= st->plan_meta && c < st->nchunks &&
	    (*n = stage__run_claim(st, c, run - c % run, &s))) {
		atomic_store(&st->follow, c + *n);
		return c;
	}
	while (st->plan_pos < st->plan_len) {
		c = st->plan[st->plan_pos++];
		if ((*n = stage__run_claim(st, c, run - c % run, &s)))
			return c;
	}
	return UINT32_MAX;
}

/* Apply a pending stage_resume().  Under lock. */
static void take_request(struct stage *st)
{
	enum stage_mode mode;

	if (!atomic_exchange(&st->want, false))
		return;
	mode = atomic_load(&st->want_mode);
	if (st->mode == STAGE_FULL)
		mode = STAGE_FULL;
	st->budget =
		MAX(atomic_load(&st->budget), atomic_load(&st->want_budget));
	stage__plan_build(st, mode);
}

/* A stager read failed: stop the plan here.  The source is failing, and
 * each read of it may take long; what is not staged is read from it. */
static void stager_failed(struct stage *st, uint32_t c, int err)
{
	pthread_mutex_lock(&st->lock);
	st->plan_pos = st->plan_len;
	pthread_mutex_unlock(&st->lock);
	if (!atomic_exchange(&st->error, -err))
		log_err("staging of '%s' stopped at %llu: %s; what is not in RAM is read from the image file",
			st->src.name,
			(unsigned long long)c << STAGE_CHUNK_SHIFT,
			err_str(err));
}

int stage_next(struct stage *st)
{
	struct timespec until;
	uint32_t c, n;
	int err;

	if (!st->mem)
		return 0;
	if (st->follower)
		return stage__follow_step(st);
	pthread_mutex_lock(&st->lock);
	take_request(st);
	if (st->inflight >= st->target) {
		/* Enough under way: wait for one to end, then ask again. */
		deadline_in_ms(&until, STAGE_WAIT_MS);
		pthread_cond_timedwait(&st->slot, &st->lock, &until);
		pthread_mutex_unlock(&st->lock);
		return 1;
	}
	c = plan_take(st, &n, STAGE_RUN);
	if (c == UINT32_MAX) {
		/* Done once the last chunk read, a reader's too, is in. */
		while (st->filling)
			pthread_cond_wait(&st->cond, &st->lock);
		if (st->mode != STAGE_NONE)
			atomic_store(&st->state, STAGE_DONE);
		pthread_mutex_unlock(&st->lock);
		return 0;
	}
	atomic_store(&st->state, STAGE_RUNNING);
	st->filling++;
	st->inflight++;
	st->inflight_max = MAX(st->inflight_max, st->inflight);
	pthread_mutex_unlock(&st->lock);

	err = stage__chunk_read(st, c, n, NULL);
	if (err)
		stager_failed(st, c, err);
	return 1;
}

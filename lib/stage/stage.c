// SPDX-License-Identifier: MIT
/*
 * This file implements the life cycle of a stage (the mapping, the chunk
 * table, the first plan, its stager threads), resuming it with a new
 * plan, and its state and stats.  The threads (stager.c) reach the stage
 * only through the callbacks given here: a step of the plan, the source's
 * watch(), and the log line once a plan is done.  See stage_i.h for the
 * design.
 */
#define LOG_MOD "stage"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stage/stage_i.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

/* The mapping, the chunk table and the plan's storage.  Return: 0, also
 * when no address space was left (then st->mem is NULL); -ENOMEM. */
static int map_range(struct stage *st, const struct stage_opts *o)
{
	st->chunk = calloc(st->nchunks, sizeof(*st->chunk));
	st->plan = calloc(st->nchunks, sizeof(*st->plan));
	if (st->nchunks && (!st->chunk || !st->plan))
		return -ENOMEM;
	if (st->size && o->mode != STAGE_NONE && o->budget)
		stage__backing_map(st, o);
	if (st->mem)
		return 0;
	st->map_len = (size_t)st->size;
	st->mem = mmap(NULL, st->map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (st->mem == MAP_FAILED) {
		st->mem = NULL;
		if (o->mode != STAGE_NONE && o->budget)
			log_warn(
				"cannot reserve address space to stage '%s' (%s); reading on demand",
				st->src.name, err_str(errno));
	}
	return 0;
}

static int stager_step(void *arg)
{
	return stage_next(arg);
}

static void stager_watch(void *arg)
{
	struct stage *st = arg;

	if (st->src.watch)
		st->src.watch(st->src.arg);
}

static void stager_ended(void *arg, double seconds)
{
	struct stage *st = arg;
	char a[32];

	if (stage_state(st) == STAGE_DONE)
		log_info("staged %s of '%s' into RAM in %.1f s",
			 size_format(atomic_load(&st->staged), a, sizeof(a)),
			 st->src.name, seconds);
}

int stage_new(const struct stage_src *src, const struct stage_opts *o,
	      struct stage **out)
{
	struct stage *st;
	int err;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->src = *src;
	st->size = o->size;
	st->meta_start = MIN(o->meta_start, o->size);
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->cond, NULL);
	pthread_cond_init(&st->slot, NULL);
	atomic_store(&st->state, STAGE_OFF);
	atomic_store(&st->follow, UINT32_MAX);
	atomic_store(&st->fill_end, UINT32_MAX);
	st->target = STAGE_TARGET_START;
	st->mode = (int)STAGE_NONE;
	st->backing_fd = -1;
	st->writer = -1;
	st->claim_stale_ms = o->claim_stale_ms ? o->claim_stale_ms :
						 STAGE_CLAIM_STALE_MS;
	/*
	 * The mapping and the chunk table exist even when nothing is to be
	 * staged now (they cost address space, one byte and one plan entry
	 * per chunk), so that stage_resume() can start staging later
	 * without readers ever seeing them change.
	 */
	st->budget = o->budget;
	st->nchunks =
		(uint32_t)DIV_ROUND_UP(o->size, (uint64_t)STAGE_CHUNK_SIZE);
	err = stage__stager_new(&(struct stager_ops){ stager_step, stager_watch,
						      stager_ended, st },
				&st->stager);
	if (!err)
		err = map_range(st, o);
	if (err) {
		stage_free(st);
		return err;
	}
	if (st->mem && st->follower) {
		/* Its writer's plan: the whole range, whatever the budget
		 * (the copy's memory is the writer's). */
		st->mode = (int)STAGE_FULL;
		atomic_store(&st->planned, st->size);
		atomic_store(&st->state, STAGE_IDLE);
	} else if (st->mem && o->mode != STAGE_NONE && o->budget) {
		stage__plan_build(st, o->mode);
		atomic_store(&st->state, STAGE_IDLE);
	}
	*out = st;
	return 0;
}

int stage_backing_fd(const struct stage *st)
{
	return st->backing_fd;
}

void stage_free(struct stage *st)
{
	if (!st)
		return;
	stage__stager_free(st->stager);
	stage__backing_unmap(st);
	if (st->mem)
		munmap(st->mem, st->map_len);
	if (st->backing_fd >= 0)
		close(st->backing_fd);
	if (st->writer >= 0)
		close(st->writer);
	free(st->chunk);
	free(st->plan);
	pthread_cond_destroy(&st->cond);
	pthread_cond_destroy(&st->slot);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

int stage_resume(struct stage *st, enum stage_mode mode, uint64_t budget)
{
	if (mode != STAGE_FULL && mode != STAGE_META)
		return -EINVAL;
	if (!st->mem)
		return -ENOMEM;
	if (st->follower)
		return 0; /* its writer stages the whole range */
	atomic_store(&st->want_mode, (int)mode);
	atomic_store(&st->want_budget, budget);
	/* Idle before the request shows, so that the stager's "done" for
	 * the old plan cannot come after it. */
	atomic_store(&st->state, STAGE_IDLE);
	atomic_store(&st->want, true);
	stage__stager_resume(st->stager);
	return 0;
}

enum stage_state stage_state(const struct stage *st)
{
	return (enum stage_state)atomic_load(&st->state);
}

void stage_get_stats(struct stage *st, struct stage_stats *out)
{
	out->state = stage_state(st);
	out->budget = atomic_load(&st->budget);
	out->planned = atomic_load(&st->planned);
	out->staged = atomic_load(&st->staged);
	out->base = atomic_load(&st->base);
	out->by_readers = atomic_load(&st->by_readers);
	out->peers = atomic_load(&st->peers);
	out->refused = atomic_load(&st->refused);
	out->error = atomic_load(&st->error);
	out->backing = (enum stage_backing_use)st->backing;
	out->adopted = st->adopted;
	out->inflight = out->inflight_max = out->target = 0;
	out->read_ms_min = out->read_ms = 0;
	pthread_mutex_lock(&st->lock);
	if (!st->mem)
		goto out_unlock; /* no staging area: no stager reads */
	out->inflight = st->inflight;
	out->inflight_max = st->inflight_max;
	out->target = st->target;
	out->read_ms_min = (double)st->rtt_min / 1e6;
	out->read_ms = (double)st->rtt_last / 1e6;
out_unlock:
	pthread_mutex_unlock(&st->lock);
	stage__stager_stats(st->stager, &out->threads, &out->seconds);
}

int stage_start(struct stage *st, unsigned int threads)
{
	stage__backing_start(st);
	/* A follower's one thread only looks for chunks that landed. */
	return stage__stager_start(st->stager, st->follower ? 1 : threads);
}

void stage_stop(struct stage *st)
{
	if (st)
		stage__stager_stop(st->stager);
}

int stage_wait(struct stage *st, int timeout_ms)
{
	return stage__stager_wait(st->stager, timeout_ms);
}

bool stage_is_done(struct stage *st)
{
	return stage__stager_is_done(st->stager);
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the stager threads: each calls stage_next() until
 * the plan is done, then sleeps until staging resumes; the first one also
 * calls the source's watch() about once a second, for the life of the
 * stage.  It also implements waiting for staging to end.
 *
 * stage_start() starts the first thread only, and it starts the others
 * once the plan turns out to have something to read: a mount that stages
 * nothing (an image on tmpfs, stage=none) never pays for them, and one that
 * does starts them off the mount's path (about 0.1 ms each here: 1.2 ms of
 * a 10-11 ms mount for the 15).
 */
#define LOG_MOD "stage"

#include <errno.h>
#include <pthread.h>

#include "stage/stage_i.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/size.h"

void stage__threads_init(struct stage *st)
{
	pthread_mutex_init(&st->thr_lock, NULL);
	pthread_cond_init(&st->resume, NULL);
	pthread_cond_init(&st->ended, NULL);
	st->done = true; /* no thread runs */
	mono_now(&st->started);
}

void stage__threads_release(struct stage *st)
{
	pthread_cond_destroy(&st->ended);
	pthread_cond_destroy(&st->resume);
	pthread_mutex_destroy(&st->thr_lock);
}

static void watch(struct stage *st)
{
	if (st->src.watch)
		st->src.watch(st->src.arg);
}

/* The plan is done: sleep until staging resumes or stops, the watcher at
 * most STAGE_WATCH_MS.  Called with thr_lock held; returns without it. */
static void idle_wait(struct stage *st, bool watcher)
{
	struct timespec deadline;

	if (watcher) {
		deadline_in_ms(&deadline, STAGE_WATCH_MS);
		pthread_cond_timedwait(&st->resume, &st->thr_lock, &deadline);
	} else {
		pthread_cond_wait(&st->resume, &st->thr_lock);
	}
	pthread_mutex_unlock(&st->thr_lock);
	if (watcher)
		watch(st);
}

/*
 * stage_next() found the plan done.  Return: false if staging resumed
 * since @seen (plan again at once), else true; the first thread to get
 * here says staging ended.
 */
static bool plan_ended(struct stage *st, unsigned int seen)
{
	struct stage_stats ss;
	char a[32];
	bool first;

	pthread_mutex_lock(&st->thr_lock);
	if (st->resumes != seen) {
		pthread_mutex_unlock(&st->thr_lock);
		return false;
	}
	first = !st->done;
	if (first) {
		st->done = true;
		st->seconds = mono_since(&st->started);
		pthread_cond_broadcast(&st->ended);
	}
	pthread_mutex_unlock(&st->thr_lock);
	if (first && stage_state(st) == STAGE_DONE) {
		stage_get_stats(st, &ss);
		log_info("staged %s of '%s' into RAM in %.1f s",
			 size_format(ss.staged, a, sizeof(a)), st->src.name,
			 ss.seconds);
	}
	return true;
}

static void *stager_main(void *arg);

/* Start stager threads up to st->want_threads.  Return: 0 or -errno from
 * pthread_create(). */
static int grow(struct stage *st)
{
	pthread_t t;
	int err;

	for (;;) {
		pthread_mutex_lock(&st->thr_lock);
		if (st->stopping || st->nthreads >= st->want_threads) {
			pthread_mutex_unlock(&st->thr_lock);
			return 0;
		}
		pthread_mutex_unlock(&st->thr_lock);
		err = -pthread_create(&t, NULL, stager_main, st);
		if (err)
			return err;
		pthread_mutex_lock(&st->thr_lock);
		st->threads[st->nthreads++] = t;
		pthread_mutex_unlock(&st->thr_lock);
	}
}

static void *stager_main(void *arg)
{
	struct stage *st = arg;
	unsigned int seen = 0; /* st->resumes when stage_next() ran */
	struct timespec last;
	bool done = false, watcher;

	pthread_mutex_lock(&st->thr_lock);
	/* The first, which stage_start() started. */
	watcher = pthread_equal(pthread_self(), st->threads[0]);
	pthread_mutex_unlock(&st->thr_lock);
	mono_now(&last);
	for (;;) {
		pthread_mutex_lock(&st->thr_lock);
		if (st->stopping) {
			pthread_mutex_unlock(&st->thr_lock);
			break;
		}
		if (done && st->resumes != seen)
			done = false; /* staging was resumed */
		if (done) {
			/* Only the first watches from now on; the others
			 * sleep until staging resumes or stops. */
			idle_wait(st, watcher);
			continue;
		}
		seen = st->resumes;
		pthread_mutex_unlock(&st->thr_lock);

		if (stage_next(st) == 0) {
			if (!(done = plan_ended(st, seen)))
				continue; /* resumed meanwhile */
		} else if (watcher && grow(st)) {
			pthread_mutex_lock(&st->thr_lock);
			log_warn(
				"cannot start more stager threads: staging with %u",
				st->nthreads);
			st->want_threads = st->nthreads; /* do not try again */
			pthread_mutex_unlock(&st->thr_lock);
		}
		if (watcher && mono_since(&last) * 1000 >= STAGE_WATCH_MS) {
			watch(st);
			mono_now(&last);
		}
	}
	return NULL;
}

int stage_start(struct stage *st, unsigned int threads)
{
	unsigned int n = threads ? threads : STAGE_THREADS_MAX;
	pthread_t t;
	int err;

	pthread_mutex_lock(&st->thr_lock);
	if (st->nthreads || st->stopping) {
		pthread_mutex_unlock(&st->thr_lock);
		return -EALREADY;
	}
	st->done = false;
	st->want_threads = MIN(n, STAGE_THREADS_MAX);
	mono_now(&st->started);
	/* The first thread (the watcher, see grow()) under the lock, so
	 * that it finds itself in threads[0]. */
	err = -pthread_create(&t, NULL, stager_main, st);
	if (!err)
		st->threads[st->nthreads++] = t;
	else
		st->done = true; /* no thread runs */
	pthread_mutex_unlock(&st->thr_lock);
	return err;
}

void stage_stop(struct stage *st)
{
	unsigned int n;

	if (!st)
		return;
	pthread_mutex_lock(&st->thr_lock);
	st->stopping = true;
	pthread_cond_broadcast(&st->resume);
	pthread_cond_broadcast(&st->ended);
	n = st->nthreads;
	pthread_mutex_unlock(&st->thr_lock);
	/* The first starts the others (grow()): once it is joined, none
	 * comes any more. */
	if (n)
		pthread_join(st->threads[0], NULL);
	pthread_mutex_lock(&st->thr_lock);
	n = st->nthreads;
	pthread_mutex_unlock(&st->thr_lock);
	for (unsigned int i = 1; i < n; i++)
		pthread_join(st->threads[i], NULL);
	pthread_mutex_lock(&st->thr_lock);
	st->nthreads = 0;
	pthread_mutex_unlock(&st->thr_lock);
}

void stage__threads_resume(struct stage *st)
{
	pthread_mutex_lock(&st->thr_lock);
	if (st->nthreads) {
		st->resumes++;
		st->done = false;
		mono_now(&st->started);
		pthread_cond_broadcast(&st->resume);
	}
	pthread_mutex_unlock(&st->thr_lock);
}

int stage_wait(struct stage *st, int timeout_ms)
{
	struct timespec deadline;
	int err = 0;

	if (timeout_ms >= 0)
		deadline_in_ms(&deadline, timeout_ms);
	pthread_mutex_lock(&st->thr_lock);
	while (!st->done && !st->stopping && !err) {
		if (timeout_ms < 0)
			pthread_cond_wait(&st->ended, &st->thr_lock);
		else
			err = -pthread_cond_timedwait(&st->ended, &st->thr_lock,
						      &deadline);
	}
	pthread_mutex_unlock(&st->thr_lock);
	return err == -ETIMEDOUT ? -ETIMEDOUT : 0;
}

bool stage_is_done(struct stage *st)
{
	/* Asked per lookup by listing ahead: no lock, no system call. */
	return atomic_load(&st->done) || atomic_load(&st->stopping);
}

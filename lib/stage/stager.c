// SPDX-License-Identifier: MIT
/*
 * This file implements the stager threads: each takes steps (stage_next())
 * until the plan is done, then sleeps until staging resumes; the first one
 * also calls watch() (the source's) about once a second, for the life of
 * the stage.  It also implements waiting for staging to end.  The threads
 * own their struct and its lock; they know the stage only by the
 * callbacks of struct stager_ops (stage.c gives them), so nothing here
 * calls into the rest of lib/stage.
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

#include <stdlib.h>

#include "stage/stage_i.h"
#include "util/clock.h"
#include "util/log.h"

#define STAGE_WATCH_MS 1000 /* how often the first thread calls watch() */

struct stager {
	struct stager_ops ops; /* what the threads do */
	pthread_mutex_t lock; /* protects the fields below */
	pthread_cond_t resume; /* staging resumed or stopping */
	pthread_cond_t ended; /* staging ended or stopping */
	pthread_t threads[STAGE_THREADS_MAX]; /* started */
	unsigned int nthreads; /* how many */
	unsigned int want_threads; /* how many once there is work */
	/* Written under lock; stage__stager_is_done() reads them without. */
	atomic_bool stopping; /* stage__stager_stop() was called */
	atomic_bool done; /* the plan is done, or no thread runs */
	unsigned int resumes; /* stage__stager_resume() calls */
	struct timespec started; /* when staging began */
	double seconds; /* set when staging ends */
};

int stage__stager_new(const struct stager_ops *ops, struct stager **out)
{
	struct stager *sg = calloc(1, sizeof(*sg));

	if (!sg)
		return -ENOMEM;
	sg->ops = *ops;
	pthread_mutex_init(&sg->lock, NULL);
	pthread_cond_init(&sg->resume, NULL);
	pthread_cond_init(&sg->ended, NULL);
	sg->done = true; /* no thread runs */
	mono_now(&sg->started);
	*out = sg;
	return 0;
}

void stage__stager_free(struct stager *sg)
{
	if (!sg)
		return;
	stage__stager_stop(sg);
	pthread_cond_destroy(&sg->ended);
	pthread_cond_destroy(&sg->resume);
	pthread_mutex_destroy(&sg->lock);
	free(sg);
}

/* The plan is done: sleep until staging resumes or stops, the watcher at
 * most STAGE_WATCH_MS.  Called with the lock held; returns without it. */
static void idle_wait(struct stager *sg, bool watcher)
{
	struct timespec deadline;

	if (watcher) {
		deadline_in_ms(&deadline, STAGE_WATCH_MS);
		pthread_cond_timedwait(&sg->resume, &sg->lock, &deadline);
	} else {
		pthread_cond_wait(&sg->resume, &sg->lock);
	}
	pthread_mutex_unlock(&sg->lock);
	if (watcher)
		sg->ops.watch(sg->ops.arg);
}

/*
 * A step found the plan done.  Return: false if staging resumed since
 * @seen (plan again at once), else true; the first thread to get here
 * says staging ended.
 */
static bool plan_ended(struct stager *sg, unsigned int seen)
{
	double seconds = 0;
	bool first;

	pthread_mutex_lock(&sg->lock);
	if (sg->resumes != seen) {
		pthread_mutex_unlock(&sg->lock);
		return false;
	}
	first = !sg->done;
	if (first) {
		sg->done = true;
		sg->seconds = seconds = mono_since(&sg->started);
		pthread_cond_broadcast(&sg->ended);
	}
	pthread_mutex_unlock(&sg->lock);
	if (first)
		sg->ops.ended(sg->ops.arg, seconds);
	return true;
}

static void *stager_main(void *arg);

/* Start threads up to sg->want_threads.  Return: 0 or -errno from
 * pthread_create(). */
static int grow(struct stager *sg)
{
	pthread_t t;
	int err;

	for (;;) {
		pthread_mutex_lock(&sg->lock);
		if (sg->stopping || sg->nthreads >= sg->want_threads) {
			pthread_mutex_unlock(&sg->lock);
			return 0;
		}
		pthread_mutex_unlock(&sg->lock);
		err = -pthread_create(&t, NULL, stager_main, sg);
		if (err)
			return err;
		pthread_mutex_lock(&sg->lock);
		sg->threads[sg->nthreads++] = t;
		pthread_mutex_unlock(&sg->lock);
	}
}

static void *stager_main(void *arg)
{
	struct stager *sg = arg;
	unsigned int seen = 0; /* sg->resumes when the step ran */
	struct timespec last;
	bool done = false, watcher;

	pthread_mutex_lock(&sg->lock);
	/* The first, which stage__stager_start() started. */
	watcher = pthread_equal(pthread_self(), sg->threads[0]);
	pthread_mutex_unlock(&sg->lock);
	mono_now(&last);
	for (;;) {
		pthread_mutex_lock(&sg->lock);
		if (sg->stopping) {
			pthread_mutex_unlock(&sg->lock);
			break;
		}
		if (done && sg->resumes != seen)
			done = false; /* staging was resumed */
		if (done) {
			/* Only the first watches from now on; the others
			 * sleep until staging resumes or stops. */
			idle_wait(sg, watcher);
			continue;
		}
		seen = sg->resumes;
		pthread_mutex_unlock(&sg->lock);

		if (sg->ops.step(sg->ops.arg) == 0) {
			if (!(done = plan_ended(sg, seen)))
				continue; /* resumed meanwhile */
		} else if (watcher && grow(sg)) {
			pthread_mutex_lock(&sg->lock);
			log_warn(
				"cannot start more stager threads: staging with %u",
				sg->nthreads);
			sg->want_threads = sg->nthreads; /* do not try again */
			pthread_mutex_unlock(&sg->lock);
		}
		if (watcher && mono_since(&last) * 1000 >= STAGE_WATCH_MS) {
			sg->ops.watch(sg->ops.arg);
			mono_now(&last);
		}
	}
	return NULL;
}

int stage__stager_start(struct stager *sg, unsigned int threads)
{
	unsigned int n = threads ? threads : STAGE_THREADS_MAX;
	pthread_t t;
	int err;

	pthread_mutex_lock(&sg->lock);
	if (sg->nthreads || sg->stopping) {
		pthread_mutex_unlock(&sg->lock);
		return -EALREADY;
	}
	sg->done = false;
	sg->want_threads = MIN(n, STAGE_THREADS_MAX);
	mono_now(&sg->started);
	/* The first thread (the watcher, see grow()) under the lock, so
	 * that it finds itself in threads[0]. */
	err = -pthread_create(&t, NULL, stager_main, sg);
	if (!err)
		sg->threads[sg->nthreads++] = t;
	else
		sg->done = true; /* no thread runs */
	pthread_mutex_unlock(&sg->lock);
	return err;
}

void stage__stager_stop(struct stager *sg)
{
	unsigned int n;

	pthread_mutex_lock(&sg->lock);
	sg->stopping = true;
	pthread_cond_broadcast(&sg->resume);
	pthread_cond_broadcast(&sg->ended);
	n = sg->nthreads;
	pthread_mutex_unlock(&sg->lock);
	/* The first starts the others (grow()): once it is joined, none
	 * comes any more. */
	if (n)
		pthread_join(sg->threads[0], NULL);
	pthread_mutex_lock(&sg->lock);
	n = sg->nthreads;
	pthread_mutex_unlock(&sg->lock);
	for (unsigned int i = 1; i < n; i++)
		pthread_join(sg->threads[i], NULL);
	pthread_mutex_lock(&sg->lock);
	sg->nthreads = 0;
	pthread_mutex_unlock(&sg->lock);
}

void stage__stager_resume(struct stager *sg)
{
	pthread_mutex_lock(&sg->lock);
	if (sg->nthreads) {
		sg->resumes++;
		sg->done = false;
		mono_now(&sg->started);
		pthread_cond_broadcast(&sg->resume);
	}
	pthread_mutex_unlock(&sg->lock);
}

int stage__stager_wait(struct stager *sg, int timeout_ms)
{
	struct timespec deadline;
	int err = 0;

	if (timeout_ms >= 0)
		deadline_in_ms(&deadline, timeout_ms);
	pthread_mutex_lock(&sg->lock);
	while (!sg->done && !sg->stopping && !err) {
		if (timeout_ms < 0)
			pthread_cond_wait(&sg->ended, &sg->lock);
		else
			err = -pthread_cond_timedwait(&sg->ended, &sg->lock,
						      &deadline);
	}
	pthread_mutex_unlock(&sg->lock);
	return err == -ETIMEDOUT ? -ETIMEDOUT : 0;
}

bool stage__stager_is_done(struct stager *sg)
{
	/* Asked per lookup by listing ahead: no lock, no system call. */
	return atomic_load(&sg->done) || atomic_load(&sg->stopping);
}

void stage__stager_stats(struct stager *sg, unsigned int *threads,
			 double *seconds)
{
	pthread_mutex_lock(&sg->lock);
	*threads = sg->nthreads;
	*seconds = sg->done ? sg->seconds : mono_since(&sg->started);
	pthread_mutex_unlock(&sg->lock);
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the idle timeout declared in idle.h: FUSE workers
 * stamp the time of each request and count open handles (atomics, no
 * lock), told by the core's events; one thread wakes at most once a second and, once the mount has
 * had no handle open and no request for the timeout, asks the daemon to
 * unmount the way the control socket's "umount" does (SIGTERM to itself:
 * the session's handler unmounts cleanly).
 */
#define LOG_MOD "idle"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "idle.h"
#include "util/clock.h"
#include "util/log.h"

#define IDLE_TICK_MS 1000 /* the longest between two looks */

struct idle {
	struct sqcd *d; /* not owned */
	unsigned int timeout; /* seconds */
	_Atomic int64_t open; /* handles open now */
	_Atomic uint64_t last_ms; /* CLOCK_MONOTONIC of the last request */
	pthread_mutex_t lock; /* protects stopping */
	pthread_cond_t wake; /* stopping was set */
	bool stopping; /* idle_stop() was called */
	pthread_t thread;
};

static uint64_t now_ms(void)
{
	return mono_ns() / 1000000;
}

/* Milliseconds the mount has been idle, or 0 while a handle is open. */
static uint64_t idle_ms(struct idle *idle)
{
	uint64_t last = atomic_load(&idle->last_ms), now = now_ms();

	if (atomic_load(&idle->open) > 0)
		return 0;
	return now > last ? now - last : 0;
}

static void *idle_main(void *arg)
{
	struct idle *idle = arg;
	struct timespec at;

	pthread_mutex_lock(&idle->lock);
	while (!idle->stopping) {
		if (idle_ms(idle) >= (uint64_t)idle->timeout * 1000) {
			log_info(
				"no open file and no request for %u s: unmounting",
				idle->timeout);
			kill(getpid(), SIGTERM);
			break;
		}
		deadline_in_ms(&at, IDLE_TICK_MS);
		pthread_cond_timedwait(&idle->wake, &idle->lock, &at);
	}
	pthread_mutex_unlock(&idle->lock);
	return NULL;
}

int idle_start(struct sqcd *d, void **out)
{
	struct idle *idle;
	int err;

	*out = NULL;
	if (!d->o.timeout)
		return 0;
	idle = calloc(1, sizeof(*idle));
	if (!idle)
		return -ENOMEM;
	idle->d = d;
	idle->timeout = d->o.timeout;
	atomic_store(&idle->last_ms, now_ms());
	pthread_mutex_init(&idle->lock, NULL);
	pthread_cond_init(&idle->wake, NULL);
	err = -pthread_create(&idle->thread, NULL, idle_main, idle);
	if (err)
		goto out_free;
	*out = idle;
	return 0;

out_free:
	pthread_cond_destroy(&idle->wake);
	pthread_mutex_destroy(&idle->lock);
	free(idle);
	return err;
}

void idle_stop(void *f)
{
	struct idle *idle = f;

	if (!idle)
		return;
	pthread_mutex_lock(&idle->lock);
	idle->stopping = true;
	pthread_cond_broadcast(&idle->wake);
	pthread_mutex_unlock(&idle->lock);
	pthread_join(idle->thread, NULL);
}

void idle_free(void *f)
{
	struct idle *idle = f;

	if (!idle)
		return;
	pthread_cond_destroy(&idle->wake);
	pthread_mutex_destroy(&idle->lock);
	free(idle);
}

void idle_stats_json(struct idle *idle, struct json_buf *b)
{
	if (!idle) {
		json_buf_printf(b, "\"idle\":{\"timeout\":0},");
		return;
	}
	json_buf_printf(b,
			"\"idle\":{\"timeout\":%u,\"open\":%lld,"
			"\"idle_s\":%.1f},",
			idle->timeout, (long long)atomic_load(&idle->open),
			(double)idle_ms(idle) / 1e3);
}

void idle_on_event(void *arg, const struct sqcd_event *ev)
{
	struct idle *idle = arg;

	switch (ev->type) {
	case SQCD_EV_REQUEST:
		atomic_store_explicit(&idle->last_ms, now_ms(),
				      memory_order_relaxed);
		break;
	case SQCD_EV_HANDLE_OPENED:
		atomic_fetch_add(&idle->open, 1);
		break;
	case SQCD_EV_HANDLE_RELEASED:
		/* Also a request: the idle time counts from the last
		 * release. */
		atomic_store_explicit(&idle->last_ms, now_ms(),
				      memory_order_relaxed);
		atomic_fetch_sub(&idle->open, 1);
		break;
	default:
		break;
	}
}

const struct sqcd_feature idle_feature = {
	.name = "idle timeout",
	.start = idle_start,
	.stop = idle_stop,
	.free = idle_free,
	.events = SQCD_EV_BIT(SQCD_EV_REQUEST) |
		  SQCD_EV_BIT(SQCD_EV_HANDLE_OPENED) |
		  SQCD_EV_BIT(SQCD_EV_HANDLE_RELEASED),
	.on_event = idle_on_event,
};

// SPDX-License-Identifier: MIT
/*
 * This file implements the holders feature (see holders.h for who keeps
 * the list and why it is race-free): the table of holders, the thread
 * that watches them die, and the decision to unmount after the last one.
 */
#define LOG_MOD "holders"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "holders.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/proc.h"

#define WATCH_MS 200 /* how often the grace period and stop are checked */

struct holder {
	pid_t pid; /* the process */
	uint64_t start; /* its start time, clock ticks since boot */
	int pidfd; /* readable once it exits; -1 without pidfd_open() */
};

struct holders {
	pthread_mutex_t lock; /* protects the fields up to "closing" */
	struct holder *v; /* the holders, unordered */
	unsigned int n; /* how many */
	bool closing; /* decided to unmount: no new holder */
	unsigned int added; /* holders ever added (stats) */
	unsigned int died; /* removed because they exited (stats) */
	double grace; /* seconds with no holder before unmounting */
	int dir_fd; /* the mount point's parent directory, for flock() */
	atomic_bool stop; /* holders_stop() asks the thread to end */
	pthread_t thread; /* watches the holders */
	bool running; /* thread was started */
	char mountpoint[PATH_MAX]; /* for log lines */
};

/* Is the holder still the process it was when added? */
static bool is_alive(const struct holder *x)
{
	return proc_is_alive(x->pidfd, x->pid, x->start);
}

/* Remove entry @i; h->lock held. */
static void drop(struct holders *h, unsigned int i)
{
	if (h->v[i].pidfd >= 0)
		close(h->v[i].pidfd);
	h->v[i] = h->v[--h->n];
}

int holders_add(struct holders *h, pid_t pid, uint64_t start)
{
	struct holder x = { .pid = pid, .start = start, .pidfd = -1 };
	uint64_t now;
	int ret;

	if (!h)
		return -EOPNOTSUPP;
	if (pid <= 0)
		return -ESRCH;
	/* The pidfd pins the process that has the pid now; its start time,
	 * read after, proves that it is the one the caller meant. */
	x.pidfd = proc_pidfd(pid);
	if (x.pidfd < 0 && errno == ESRCH)
		return -ESRCH;
	if (proc_start_time(pid, &now) || now != start) {
		if (x.pidfd >= 0)
			close(x.pidfd);
		return -ESRCH;
	}
	pthread_mutex_lock(&h->lock);
	for (unsigned int i = 0; i < h->n; i++) {
		if (h->v[i].pid == pid && h->v[i].start == start) {
			ret = (int)h->n;
			goto out_close;
		}
	}
	if (h->closing) {
		ret = -ESHUTDOWN;
		goto out_close;
	}
	if (h->n >= HOLDERS_MAX) {
		ret = -ENOSPC;
		goto out_close;
	}
	h->v[h->n++] = x;
	h->added++;
	ret = (int)h->n;
	pthread_mutex_unlock(&h->lock);
	log_info("pid %d holds '%s' (%d holders)", (int)pid, h->mountpoint,
		 ret);
	return ret;

out_close:
	pthread_mutex_unlock(&h->lock);
	if (x.pidfd >= 0)
		close(x.pidfd);
	return ret;
}

int holders_remove(struct holders *h, pid_t pid)
{
	int ret = -ENOENT;

	if (!h)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&h->lock);
	for (unsigned int i = 0; i < h->n; i++) {
		if (h->v[i].pid == pid) {
			drop(h, i);
			ret = (int)h->n;
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
	if (ret >= 0)
		log_info("pid %d released '%s' (%d holders)", (int)pid,
			 h->mountpoint, ret);
	return ret;
}

/* Drop the holders that exited; return how many are left. */
static unsigned int reap(struct holders *h)
{
	unsigned int n;

	pthread_mutex_lock(&h->lock);
	for (unsigned int i = 0; i < h->n;) {
		if (is_alive(&h->v[i])) {
			i++;
			continue;
		}
		log_info("holder pid %d of '%s' exited", (int)h->v[i].pid,
			 h->mountpoint);
		h->died++;
		drop(h, i);
	}
	n = h->n;
	pthread_mutex_unlock(&h->lock);
	return n;
}

/*
 * No holder is left: decide to go, under the directory lock that
 * acquirers take.  Return: true once decided (the lock stays held until
 * the process exits); false if an acquirer holds the lock or a holder
 * came back.
 */
static bool try_close(struct holders *h)
{
	bool go;

	if (flock(h->dir_fd, LOCK_EX | LOCK_NB))
		return false;
	pthread_mutex_lock(&h->lock);
	go = h->n == 0;
	if (go)
		h->closing = true;
	pthread_mutex_unlock(&h->lock);
	if (!go) {
		flock(h->dir_fd, LOCK_UN);
		return false;
	}
	log_info("no holder left for '%s': unmounting", h->mountpoint);
	/* The session's signal handler unmounts cleanly. */
	kill(getpid(), SIGTERM);
	return true;
}

static void *watch_main(void *arg)
{
	struct holders *h = arg;
	struct timespec empty_since;
	bool empty = false;

	while (!atomic_load(&h->stop)) {
		struct pollfd p[64];
		unsigned int np = 0;

		/* Sleep on the first pidfds: any exit wakes the thread. */
		pthread_mutex_lock(&h->lock);
		for (unsigned int i = 0; i < h->n && np < 64; i++)
			if (h->v[i].pidfd >= 0)
				p[np++] = (struct pollfd){ .fd = h->v[i].pidfd,
							   .events = POLLIN };
		pthread_mutex_unlock(&h->lock);
		poll(p, np, WATCH_MS);
		if (reap(h)) {
			empty = false;
			continue;
		}
		if (!empty) {
			empty = true;
			mono_now(&empty_since);
		}
		if (mono_since(&empty_since) >= h->grace && try_close(h))
			break;
	}
	return NULL;
}

int holders_start(struct sqcd *d, void **out)
{
	struct holders *h;
	char parent[PATH_MAX], *slash;
	int err;

	*out = NULL;
	if (!d->o.hold_pid)
		return 0;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->v = calloc(HOLDERS_MAX, sizeof(*h->v));
	if (!h->v) {
		free(h);
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	h->grace = d->o.grace;
	h->dir_fd = -1;
	snprintf(h->mountpoint, sizeof(h->mountpoint), "%s", d->o.canonical);
	snprintf(parent, sizeof(parent), "%s", d->o.canonical);
	slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	h->dir_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (h->dir_fd < 0) {
		err = -errno;
		log_err("cannot open '%s' to lock it: %s", parent,
			err_str(err));
		goto out_free;
	}
	err = holders_add(h, d->o.hold_pid, d->o.hold_start);
	if (err < 0) {
		log_err("first holder pid %d is gone: %s", (int)d->o.hold_pid,
			err_str(err));
		goto out_free;
	}
	err = -pthread_create(&h->thread, NULL, watch_main, h);
	if (err)
		goto out_free;
	h->running = true;
	*out = h;
	return 0;

out_free:
	holders_stop(h);
	holders_free(h);
	return err;
}

void holders_stop(void *f)
{
	struct holders *h = f;

	if (!h)
		return;
	atomic_store(&h->stop, true);
	if (h->running)
		pthread_join(h->thread, NULL);
	h->running = false;
}

void holders_free(void *f)
{
	struct holders *h = f;

	if (!h)
		return;
	while (h->n)
		drop(h, 0);
	if (h->dir_fd >= 0)
		close(h->dir_fd);
	pthread_mutex_destroy(&h->lock);
	free(h->v);
	free(h);
}

void holders_stats_json(struct holders *h, struct json_buf *b)
{
	if (!h) {
		json_buf_printf(b, "\"holders\":[],\"holder_managed\":false,");
		return;
	}
	pthread_mutex_lock(&h->lock);
	json_buf_printf(b, "\"holders\":[");
	for (unsigned int i = 0; i < h->n; i++)
		json_buf_printf(b, "%s%d", i ? "," : "", (int)h->v[i].pid);
	json_buf_printf(b,
			"],\"holder_managed\":true,\"holder_stats\":{"
			"\"added\":%u,\"died\":%u,\"grace_s\":%g,"
			"\"closing\":%s},",
			h->added, h->died, h->grace,
			h->closing ? "true" : "false");
	pthread_mutex_unlock(&h->lock);
}

const struct sqcd_feature holders_feature = {
	.name = "holders",
	.start = holders_start,
	.stop = holders_stop,
	.free = holders_free,
};

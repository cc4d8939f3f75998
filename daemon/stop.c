// SPDX-License-Identifier: MIT
/*
 * This file implements the stop on a signal declared in stop.h.
 *
 * Why not libfuse's handlers: they end the session loop at once, and the
 * loop stops reading /dev/fuse.  A request the kernel has queued is then
 * never answered.  Warming's push (notify_store) locks each page it fills;
 * when a reader's READ of the same file is queued, the kernel holds that
 * page locked until the READ is answered, so the push waits, in an
 * uninterruptible sleep, for a READ that nobody will read: the warming
 * thread can never be joined, the daemon never unmounts, SIGKILL cannot
 * end it, and the reader hangs with it (087 found this under ASan).
 *
 * So SIGTERM, SIGINT and SIGHUP (the control socket's umount and the idle
 * timeout send SIGTERM to the daemon itself) only note the signal and
 * write a byte to a pipe.  A thread waiting on that pipe first calls the
 * daemon back to stop what must stop while the workers still answer, then
 * ends the loop as libfuse's own handler does: the session's exit flag,
 * then a signal to the thread that runs the loop, whose wait a signal
 * interrupts before it looks at the flag again.  It sends that signal
 * again every STOP_WAKE_MS until the loop has returned, in case the first
 * came before the loop thread began to wait.
 */
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stop.h"
#include "util/clock.h"

#define STOP_WAKE_MS 20 /* between two wake-ups of the loop thread */

static const int stop_sigs[] = { SIGTERM, SIGINT, SIGHUP };

static int wake_pipe[2] = { -1, -1 }; /* the handler writes, the thread reads */
static atomic_int first_sig; /* the first signal taken, or 0 */

struct stop {
	struct fuse_session *se;
	void (*serving)(void *); /* stop_start()'s callback */
	void *arg;
	pthread_t loop; /* the thread that runs the session loop */
	pthread_t thread; /* stop_main() */
	pthread_mutex_t lock; /* protects ended */
	pthread_cond_t cond; /* ended was set */
	bool ended; /* stop_end() was called: the loop has returned */
};

/* Async-signal-safe: an atomic and a write to a non-blocking pipe (full,
 * it holds a byte already). */
static void on_signal(int sig)
{
	int saved = errno, none = 0;
	char c = 1;
	ssize_t n;

	atomic_compare_exchange_strong(&first_sig, &none, sig);
	n = write(wake_pipe[1], &c, 1);
	(void)n;
	errno = saved;
}

int stop_install(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK)) {
		int err = errno;

		fprintf(stderr, "squashcached: cannot make a pipe: %s\n",
			strerror(err));
		return -err;
	}
	/* No SA_RESTART, as libfuse's handlers: a signal interrupts the
	 * detaching parent's wait and the loop thread's. */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
		sigaction(stop_sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

void stop_remove(void)
{
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
		signal(stop_sigs[i], SIG_DFL);
}

int stop_signal(void)
{
	return atomic_load(&first_sig);
}

static bool is_ended(struct stop *s)
{
	bool ended;

	pthread_mutex_lock(&s->lock);
	ended = s->ended;
	pthread_mutex_unlock(&s->lock);
	return ended;
}

static void *stop_main(void *arg)
{
	struct stop *s = arg;
	struct timespec at;
	char buf[64];

	/* A signal, or the loop's end without one (stop_end() writes too). */
	while (!atomic_load(&first_sig) && !is_ended(s)) {
		struct pollfd p = { .fd = wake_pipe[0], .events = POLLIN };

		if (poll(&p, 1, -1) > 0)
			while (read(wake_pipe[0], buf, sizeof(buf)) > 0)
				;
	}
	if (is_ended(s))
		return NULL;
	s->serving(s->arg);
	fuse_session_exit(s->se);
	pthread_mutex_lock(&s->lock);
	while (!s->ended) {
		pthread_kill(s->loop, SIGTERM);
		mono_deadline_in_ms(&at, STOP_WAKE_MS);
		pthread_cond_timedwait(&s->cond, &s->lock, &at);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int stop_start(struct fuse_session *se, void (*serving)(void *), void *arg,
	       struct stop **out)
{
	struct stop *s = calloc(1, sizeof(*s));
	sigset_t all, old;
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->se = se;
	s->serving = serving;
	s->arg = arg;
	s->loop = pthread_self();
	pthread_mutex_init(&s->lock, NULL);
	cond_init_mono(&s->cond);
	/* The thread takes no signal: they are for the loop thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = -pthread_create(&s->thread, NULL, stop_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return err;
	}
	*out = s;
	return 0;
}

void stop_end(struct stop *s)
{
	char c = 0;
	ssize_t n;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->ended = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	n = write(wake_pipe[1], &c, 1);
	(void)n;
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

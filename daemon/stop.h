/* SPDX-License-Identifier: MIT */
/*
 * This file declares the stop on a signal (stop.c): SIGTERM, SIGINT and
 * SIGHUP end the session loop only once the features whose threads may
 * wait on a FUSE request have stopped, while the workers still answer.
 */
#ifndef SQC_DAEMON_STOP_H
#define SQC_DAEMON_STOP_H

struct fuse_session;
struct stop;

/**
 * stop_install() - Take SIGTERM, SIGINT and SIGHUP; ignore SIGPIPE.
 *
 * From here on such a signal only notes itself, for the thread of
 * stop_start() (one that comes earlier waits for it).
 *
 * Return: 0; -errno (said on stderr).
 * Context: main thread, before the mount and before detaching.
 */
int stop_install(void);

/**
 * stop_start() - Start the thread that acts on the first signal.
 * @se: the session whose loop the signal ends
 * @serving: called once, on that thread, before the loop is ended
 * @arg: for @serving
 * @out: set to the thread's handle
 *
 * On the first signal the thread calls @serving (the FUSE workers still
 * answer requests), then ends the session loop that the calling thread
 * runs next.
 *
 * Return: 0; -ENOMEM; -errno from pthread_create().
 * Context: main thread, the one that then runs the session loop; after
 * detaching.
 */
int stop_start(struct fuse_session *se, void (*serving)(void *), void *arg,
	       struct stop **out);

/**
 * stop_end() - The session loop has returned: end the thread and free it.
 * @s: from stop_start(), or NULL
 *
 * Waits for @serving if it is under way.
 * Context: main thread, after the session loop.
 */
void stop_end(struct stop *s);

/**
 * stop_signal() - The first signal taken, or 0 if none.
 */
int stop_signal(void);

/**
 * stop_remove() - Give SIGTERM, SIGINT and SIGHUP back their defaults.
 * Context: main thread, once the session loop is over.
 */
void stop_remove(void);

#endif

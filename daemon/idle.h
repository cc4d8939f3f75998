/* SPDX-License-Identifier: MIT */
/*
 * This file declares the idle timeout (-o timeout=S): the daemon unmounts
 * itself once it has had no open file or directory and no FUSE request
 * for S seconds, as squashfuse_ll does, so that a forgotten mount does
 * not hold its RAM for ever.
 *
 * Open files are counted from OPEN and RELEASE, so a mount with a timeout
 * never asks the kernel to skip OPEN (no_open) or OPENDIR (no_opendir).
 */
#ifndef SQC_DAEMON_IDLE_H
#define SQC_DAEMON_IDLE_H

struct sqcd;
struct sqcd_feature;
struct sqcd_event;
struct idle;
struct json_buf;

/**
 * idle_start() - Start watching for idleness.
 * @d: the daemon; d->o.timeout is the timeout in seconds
 * @out: set to the module, or NULL when the timeout is off (0)
 *
 * Return: 0; -ENOMEM; -errno from pthread_create().
 * Context: main thread, before the session loop.
 */
int idle_start(struct sqcd *d, void **out);

/**
 * idle_stop() - Stop the watching thread.
 * @f: the module; NULL is fine
 *
 * Context: main thread, after the session loop; cannot fail.
 */
void idle_stop(void *f);

/**
 * idle_free() - Free the module, stopped.
 * @f: the module; NULL is fine
 *
 * Context: main thread, once no FUSE worker or io_uring thread can call
 * in; cannot fail.
 */
void idle_free(void *f);

/**
 * idle_on_event() - Hear the core's events (events.h).
 * @f: the module (struct idle)
 * @ev: SQCD_EV_REQUEST (a request: the idle time starts again),
 *      SQCD_EV_HANDLE_OPENED and SQCD_EV_HANDLE_RELEASED (release is also
 *      a request); others are ignored
 *
 * Context: FUSE workers and io_uring threads; lock-free.
 */
void idle_on_event(void *f, const struct sqcd_event *ev);

/**
 * idle_stats_json() - Append "idle":{timeout,open,idle_s}, and a comma.
 * @idle: the module; NULL appends a timeout of 0
 * @b: the stats reply
 *
 * Context: the control thread.
 */
void idle_stats_json(struct idle *idle, struct json_buf *b);

/* The feature as the core knows it (daemon.h): idle_start(), idle_stop(),
 * idle_free() and the events idle_on_event() hears. */
extern const struct sqcd_feature idle_feature;

#endif /* SQC_DAEMON_IDLE_H */

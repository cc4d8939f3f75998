/* SPDX-License-Identifier: MIT */
/*
 * This file declares the io_uring transport: FUSE requests served from
 * io_uring queues (FUSE_OVER_IO_URING) instead of /dev/fuse reads, when
 * this build, the running libfuse and the kernel allow it (see uring.c).
 * The module owns its threads, rings and counters.
 */
#ifndef SQC_DAEMON_URING_H
#define SQC_DAEMON_URING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct sqcd;
struct sqcd_event;
struct sqcd_feature;
struct uring;
struct json_buf;

/**
 * uring_start() - Start serving requests over io_uring, if possible.
 * @d: the daemon, mounted, its session not yet looping
 * @out: set to the module, or NULL when io_uring is not used
 *
 * Does nothing with -o no_uring, when io_uring is not available (built
 * without liburing, or a libfuse other than 3.14.x: one log line, see
 * uring_available()), or when the fuse module's enable_uring parameter is
 * off.  Otherwise starts one thread per queue entry and hooks the
 * session's I/O, so that the INIT reply asks for io_uring if the kernel
 * offers it and every ring was set up.  *@out is set before the threads
 * start (the session's I/O hooks find the module through the core).
 *
 * Return: 0; -ENOMEM; -errno.
 * Context: main thread, after detaching, before the session loop.
 */
int uring_start(struct sqcd *d, void **out);

/**
 * uring_stop() - Stop the io_uring threads.
 * @f: the module; NULL is fine
 *
 * Context: main thread, after warming stopped (a push may wait for a
 * READ that a ring thread answers); cannot fail.
 */
void uring_stop(void *f);

/**
 * uring_free() - Free the module, stopped.
 * @f: the module; NULL is fine
 *
 * Context: main thread, after uring_stop(); cannot fail.
 */
void uring_free(void *f);

/**
 * uring_stats_json() - Append the "fuse" object's io_uring members:
 * "uring_threads", "uring_requests", "uring_available" and
 * "uring_unavailable" (why, "" when available), with no trailing comma.
 * @u: the module; NULL appends 0 threads and requests
 * @b: the stats reply, inside the "fuse" object
 *
 * Context: the control thread.
 */
void uring_stats_json(struct uring *u, struct json_buf *b);

/**
 * uring_available() - Whether this build and libfuse can use io_uring.
 * @why: set to the reason when not ("" when available)
 * @len: bytes at @why
 * @log: log the fallback to /dev/fuse (once per process)
 *
 * False when built without liburing (SQC_HAVE_URING=0) or with, or running
 * on, a libfuse other than the tested 3.14.x (see daemon/uring.c).
 * Configuration (-o no_uring, the fuse module's enable_uring) is not asked.
 *
 * Return: true when io_uring may be used.
 * Context: any thread.
 */
bool uring_available(char *why, size_t len, bool log);

/* Whether requests go over io_uring (INIT asked for it). */
bool uring_is_on(const struct uring *u);

/* How many threads serve io_uring queues; 0 when not in use. */
unsigned int uring_threads(const struct uring *u);

/**
 * uring_reply_buf() - Where a READ's raw bytes go on this thread.
 *
 * An io_uring thread copies every reply into its payload buffer, so the
 * bytes a READ reads from the image file are best read there
 * (struct img_read_ctx.reply_buf).  Reads only the calling thread's own
 * state: callable without the module.
 *
 * Return: the calling io_uring thread's payload (IMG_REPLY_BYTES bytes),
 * or NULL on any other thread.
 * Context: FUSE workers and io_uring threads.
 */
void *uring_reply_buf(void);

/**
 * uring_gate() - The push counter the calling thread counts in.
 * @busy: left alone, or set to the counter of the thread's queue
 * @max: left alone, or set to how many of that queue's threads may push
 *
 * A push can wait for a READ that the kernel queued on the same core, so
 * every queue keeps one thread free of pushes.  Reads only the calling
 * thread's own state: callable without the module.
 *
 * Context: FUSE workers and io_uring threads.
 */
void uring_gate(atomic_uint **busy, unsigned int *max);

/**
 * uring_on_event() - Hear the core's events (events.h).
 * @f: the feature (struct uring)
 * @ev: the event: SQCD_EV_INIT, once the kernel offered io_uring, asks
 *      for no FUSE_CAP_SPLICE_WRITE (a ring entry copies every reply);
 *      others are ignored.
 *
 * Context: the thread that answers INIT; cannot fail.
 */
void uring_on_event(void *f, const struct sqcd_event *ev);

/* The feature as the core knows it (daemon.h): uring_start(), uring_stop(),
 * uring_free(), and the event uring_on_event() hears. */
extern const struct sqcd_feature uring_feature;

#endif /* SQC_DAEMON_URING_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file declares listing ahead (statahead=N|all, statahead_wait=S): a
 * thread of the daemon lists directories through the daemon's own mount,
 * so that the kernel holds their entries before a reader asks for them.
 * What it walks, and in which order, comes from lib/index; statahead.c
 * holds the FUSE side (see its design block).
 *
 * The feature hears the core's events (statahead_on_event()).  When
 * statahead=all has listed the whole mount, it emits one itself,
 * SQCD_EV_TREE_LISTED (events.h), never calling another feature.
 */
#ifndef SQC_DAEMON_STATAHEAD_H
#define SQC_DAEMON_STATAHEAD_H

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl/ctl.h"
#include "image/image.h"

struct sqcd;
struct sqcd_feature;
struct sqcd_event;
struct statahead;

/* Bytes the table of directories the kernel was shown may take: 2^21
 * slots of 32 bytes (a million directories at half load) and names. */
#define STATAHEAD_TABLE_BUDGET (128ull << 20)

/* Where statahead=all stands. */
enum statahead_all_state {
	STATAHEAD_ALL_OFF, /* not asked for */
	STATAHEAD_ALL_RUNNING, /* listing the mount */
	STATAHEAD_ALL_DONE, /* listed all of it */
	STATAHEAD_ALL_STOPPED, /* the daemon stopped first, or an error */
};

/**
 * statahead_start() - Start the thread that lists directories ahead.
 * @d: daemon, mounted, its session not yet looping
 * @out: set to the feature, or NULL with statahead=0
 *
 * The thread waits for the mount to answer, lists the whole tree with
 * statahead=all, then lists what readers are about to need.
 *
 * Return: 0; -ENOMEM; -EFSCORRUPTED (the root inode); -errno from
 * pthread_create().
 * Ownership: the caller stops with statahead_stop(), then frees with
 * statahead_free().
 * Context: main thread, before the session loop.
 */
int statahead_start(struct sqcd *d, void **out);

/**
 * statahead_stop() - Ask the listing thread to stop, without waiting.
 * @f: the feature, or NULL
 *
 * A listing blocked on a request of the mount is released only once the
 * FUSE connection is gone, so the daemon asks early and joins late, in
 * statahead_free().
 *
 * Context: main thread, after the session loop; cannot fail.
 */
void statahead_stop(void *f);

/**
 * statahead_free() - Wait for the listing thread, and free the feature.
 * @f: the feature, or NULL
 *
 * Call once the FUSE connection is gone (a listing blocked on a request
 * of the mount ends only then) and nothing calls the hooks below (FUSE
 * workers and the ready check are joined).
 *
 * Context: main thread; cannot fail.
 */
void statahead_free(void *f);

/**
 * statahead_stats_json() - Append "statahead":{...}, and a comma.
 * @sa: the feature, or NULL (all counters 0, all_state "off")
 * @b: buffer
 *
 * Keys: window (statahead=N, 0 when off), walks (walks gone on with from
 * a reader's listing), lookup_dirs (directories listed because their
 * entries were looked up), dirs and entries (listed for both),
 * all_state (off, running, done, stopped), all_dirs, all_entries and
 * all_seconds (statahead=all), table_dirs, table_bytes and table_budget
 * (the directories the kernel was shown, and the bytes they take),
 * names_only (readers' listings give regular files names only),
 * names_dirs (listings that did) and filled_dirs (of them, listed again
 * with attributes).
 *
 * Context: any thread.
 */
void statahead_stats_json(struct statahead *sa, struct json_buf *b);

/**
 * statahead_ready() - Before the mount is said to answer: wait for
 * statahead=all to end, up to statahead_wait= seconds.
 * @f: the feature, or NULL (returns at once, as without statahead=all
 *     or with statahead_wait=0)
 *
 * A reader that starts the moment the mount command returns would race
 * the listing for the CPU and send the lookups the listing exists to
 * save.  Logs a line when the listing goes on after the wait.
 *
 * Context: the thread that reports readiness; polls once a millisecond.
 */
void statahead_ready(void *f);

/**
 * statahead_on_event() - Hear the core's events (events.h).
 * @f: the feature (struct statahead)
 * @ev: the event:
 *      SQCD_EV_LOOKED_UP: a looked-up directory is remembered (so that
 *      the thread can reach it), and once enough entries of @ev->dir were
 *      looked up, the thread lists it; a regular file of a listing that
 *      gave names only ends the names-only phase: the thread lists those
 *      directories again with attributes;
 *      SQCD_EV_ENTRY_LISTED: a listed directory is remembered;
 *      SQCD_EV_DIR_LISTED: a reader that ends a listing itself has the
 *      thread walk on from there, or, if it got names only (@ev->names),
 *      list it again once that phase ends;
 *      SQCD_EV_FORGOTTEN: a directory the kernel dropped may be listed
 *      again;
 *      SQCD_EV_INIT: while readers' listings give names only, the kernel
 *      is asked to choose plain listings past a first batch
 *      (FUSE_CAP_READDIRPLUS_AUTO).
 *      Others are ignored.
 *
 * Context: FUSE workers and io_uring threads; takes the feature's lock,
 * never waits on the listing itself.
 */
void statahead_on_event(void *f, const struct sqcd_event *ev);

/* The feature as the core knows it (daemon.h): statahead_start(),
 * statahead_stop(), statahead_free(), statahead_ready(), the events
 * statahead_on_event() hears, and its answer to names_only (events.h):
 * a reader's listing while names only holds, and the lister's ahead of
 * such a reader, give regular files names only. */
extern const struct sqcd_feature statahead_feature;

#endif /* SQC_DAEMON_STATAHEAD_H */

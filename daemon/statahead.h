/* SPDX-License-Identifier: MIT */
/*
 * This file declares listing ahead (statahead=N|all, statahead_wait=S): a
 * thread of the daemon lists directories through the daemon's own mount,
 * so that the kernel holds their entries before a reader asks for them.
 * What it walks, and in which order, comes from lib/index; statahead.c
 * holds the FUSE side (see its design block).
 *
 * The core calls the hooks below from its FUSE handlers; each does
 * nothing when given NULL (listing ahead is off).  When statahead=all has
 * listed the whole mount, the feature calls the core hook
 * sqcd_tree_listed() (daemon.h), never another feature.
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
 * @core: daemon, mounted, its session not yet looping
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
int statahead_start(struct sqcd *core, struct statahead **out);

/**
 * statahead_cancel() - Ask the listing thread to stop, without waiting.
 * @sa: the feature, or NULL
 *
 * A listing blocked on a request of the mount is released only once the
 * FUSE connection is gone, so the daemon asks early and joins late.
 *
 * Context: main thread, after the session loop; cannot fail.
 */
void statahead_cancel(struct statahead *sa);

/**
 * statahead_stop() - Stop the listing thread and wait for it.
 * @sa: the feature, or NULL
 *
 * Call once the FUSE connection is gone (a listing blocked on a request
 * of the mount ends only then).
 *
 * Context: main thread; cannot fail.
 */
void statahead_stop(struct statahead *sa);

/**
 * statahead_free() - Free the feature, stopped.
 * @sa: the feature, or NULL
 *
 * Call once nothing calls the hooks below (FUSE workers and the ready
 * check are joined).
 *
 * Context: main thread; cannot fail.
 */
void statahead_free(struct statahead *sa);

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
 * (the directories the kernel was shown, and the bytes they take).
 *
 * Context: any thread.
 */
void statahead_stats_json(struct statahead *sa, struct ctl_buf *b);

/**
 * statahead_wait_all() - Wait for statahead=all to end.
 * @sa: the feature, or NULL (returns at once)
 * @seconds: the longest to wait
 *
 * Logs a line when the listing goes on after @seconds.
 *
 * Context: the thread that reports readiness; polls once a millisecond.
 */
void statahead_wait_all(struct statahead *sa, unsigned int seconds);

/**
 * statahead_dir() - The kernel was shown a directory.
 * @sa: the feature, or NULL
 * @parent: the parent directory's inode number
 * @name: the directory's name in it (vetted by lib/image)
 * @dir: the directory
 *
 * Remembers where it is, so that the listing thread can reach it.
 *
 * Context: FUSE workers (LOOKUP, READDIRPLUS).
 */
void statahead_dir(struct statahead *sa, uint32_t parent, const char *name,
		   const struct img_inode *dir);

/**
 * statahead_lookup() - A reader looked up an entry of @dir that exists.
 * @sa: the feature, or NULL
 * @req: the LOOKUP
 * @dir: the directory
 * @child: the entry
 *
 * Once enough of its entries were looked up, the thread lists it.
 *
 * Context: FUSE workers; never blocks on the listing itself.
 */
void statahead_lookup(struct statahead *sa, fuse_req_t req,
		      const struct img_inode *dir,
		      const struct img_inode *child);

/**
 * statahead_listing() - A READDIRPLUS of @dir is being answered.
 * @sa: the feature, or NULL
 * @req: the request
 * @dir: the directory
 * @first: the request starts at the first entry
 * @eof: the reply ends the listing (and holds entries)
 * @names: its regular files carry names only (or it is a plain listing)
 *
 * A reader that ends a listing itself has the thread walk on from there,
 * unless it got names only: then the thread lists it again, with
 * attributes, once a reader looks up an entry of such a listing.
 *
 * Context: FUSE workers; never blocks on the listing itself.
 */
void statahead_listing(struct statahead *sa, fuse_req_t req,
		       const struct img_inode *dir, bool first, bool eof,
		       bool names);

/**
 * statahead_names_only() - Whether a READDIRPLUS may carry names only.
 * @sa: the feature, or NULL (false: nobody would make the inodes later)
 * @req: the READDIRPLUS, or NULL (then: for a reader)
 *
 * True for a reader's listing until a reader looks up an entry of a
 * listing that was names only; never for the listing thread's own.
 * Only regular files go without attributes (see statahead.c).
 *
 * Context: any thread.
 */
bool statahead_names_only(struct statahead *sa, fuse_req_t req);

/**
 * statahead_wants_auto() - Whether the kernel should choose readdirplus
 * or a plain listing by itself (FUSE_CAP_READDIRPLUS_AUTO).
 * @sa: the feature, or NULL (false)
 *
 * True when readers' listings may carry names only: a plain listing
 * carries no more and costs a third of the bytes.  The listing thread
 * then has the kernel use readdirplus for each of its batches.
 *
 * Context: init, before any listing.
 */
bool statahead_wants_auto(struct statahead *sa);

/**
 * statahead_forget() - The kernel dropped an inode.
 * @sa: the feature, or NULL
 * @ino: the inode
 *
 * A directory's entries went with it: it may be listed again.
 *
 * Context: FUSE workers (FORGET).
 */
void statahead_forget(struct statahead *sa, const struct img_inode *ino);

#endif /* SQC_DAEMON_STATAHEAD_H */

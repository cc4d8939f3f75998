/* SPDX-License-Identifier: MIT */
/*
 * This file declares the core's events: what the core tells the features,
 * through one interface.  The FUSE operations (ops.c) and listing ahead
 * emit named events with sqcd_emit(); the features table in main.c
 * subscribes each feature's handler (<feature>_on_event()) to the events
 * it hears, in the table's order, once the feature has started.  The core
 * calls a feature from a request only through these events and through
 * the one question it asks them (sqcd_ask(): does a listing give names
 * only?), and a feature never calls another: a feature that has something
 * to say (listing ahead has listed the mount) emits an event too.
 *
 * Dispatch is on the hot path of every request: no allocation and no
 * lock, a loop over the few handlers subscribed to that event, none at
 * all for a feature that is off.  The table is written by the main thread
 * before the session loop starts and only read afterwards.
 */
#ifndef SQC_DAEMON_EVENTS_H
#define SQC_DAEMON_EVENTS_H

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/image.h"

/* What happened; the members of struct sqcd_event each one sets. */
enum sqcd_ev {
	SQCD_EV_REQUEST, /* a request is served (any counted kind) */
	SQCD_EV_HANDLE_OPENED, /* OPEN or OPENDIR gave the kernel a handle */
	SQCD_EV_HANDLE_RELEASED, /* RELEASE or RELEASEDIR gave one back */
	SQCD_EV_LOOKED_UP, /* LOOKUP found @ino, @name in @dir; @req */
	SQCD_EV_ENTRY_LISTED, /* READDIRPLUS shows the kernel @ino (@node),
			       * @name in @dir */
	SQCD_EV_DIR_LISTED, /* a listing of @dir begins (@first) or ends,
			     * with entries (@eof); regular files got
			     * names only (@names); @req */
	SQCD_EV_RANGE_READ, /* READ of @size bytes at @off of file @ino
			     * (@node), before the reply */
	SQCD_EV_READER, /* something reads the mount (no members) */
	SQCD_EV_FILE_OPENED, /* file @ino (@node) was just opened to be read
			      * (CPython's open() asks isatty()), before the
			      * reply */
	SQCD_EV_TREE_LISTED, /* listing ahead listed the whole mount, for
			      * readers about to come (no members) */
	SQCD_EV_FORGOTTEN, /* the kernel dropped inode @ino, and its pages
			    * and entries */
	SQCD_EV_INIT, /* the kernel's INIT: a handler may change what the
		       * daemon asks for (@conn->want) before the reply */
	SQCD_EV__COUNT
};

#define SQCD_EV_BIT(ev) (1u << (ev))

/* One event; members an event does not name are zero. */
struct sqcd_event {
	enum sqcd_ev type; /* what happened */
	fuse_req_t req; /* the request it happened in, or NULL */
	fuse_ino_t node; /* @ino's node id, as given to the kernel */
	const struct img_inode *ino; /* the inode it is about */
	const struct img_inode *dir; /* the directory @ino is listed in */
	const char *name; /* @ino's name in @dir (vetted by lib/image) */
	uint64_t off; /* RANGE_READ: the first byte asked for */
	size_t size; /* RANGE_READ: how many */
	bool first; /* DIR_LISTED: the reply begins the listing */
	bool eof; /* DIR_LISTED: the reply ends it, with entries */
	bool names; /* DIR_LISTED: regular files got names only in it (or it
		     * is a plain listing) */
	struct fuse_conn_info *conn; /* INIT: what the kernel offers and the
				      * daemon asks for */
};

/* The most handlers per event: one per feature at most. */
#define SQCD_EV_SUBS_MAX 8

/* A feature's handler of the events it subscribed to, and its module. */
struct sqcd_sub {
	void (*fn)(void *f, const struct sqcd_event *ev);
	void *f; /* the feature's handle (struct warm, ...) */
};

/* A question the core asks of the one feature that can answer it. */
struct sqcd_query {
	bool (*fn)(void *f, fuse_req_t req); /* or NULL: nobody answers */
	void *f; /* the feature's handle */
};

/* The handlers of each event, in subscription order, and who answers the
 * core's questions. */
struct sqcd_events {
	uint32_t heard; /* SQCD_EV_BIT()s of events with a handler */
	unsigned int n[SQCD_EV__COUNT]; /* handlers per event */
	struct sqcd_sub sub[SQCD_EV__COUNT][SQCD_EV_SUBS_MAX];
	/* Whether a READDIRPLUS reply to @req gives regular files names
	 * only, keeping their inodes for later (listing ahead's
	 * names_only); false without an answer. */
	struct sqcd_query names_only;
};

/**
 * sqcd_subscribe() - Have @fn hear the events in @mask.
 * @evs: the core's table (struct sqcd's events)
 * @mask: SQCD_EV_BIT()s
 * @fn: the handler; called in the emitting thread, must not block on
 *      anything a request thread waits for
 * @f: passed to @fn: the feature's handle
 *
 * Handlers of one event are called in the order they subscribed.
 *
 * Return: 0; -ENOSPC if an event has SQCD_EV_SUBS_MAX handlers already
 * (nothing subscribed then).
 * Context: main thread, before the session loop (features[] in main.c).
 */
int sqcd_subscribe(struct sqcd_events *evs, uint32_t mask,
		   void (*fn)(void *f, const struct sqcd_event *ev), void *f);

/**
 * sqcd_hears() - Whether any handler hears an event of @mask.
 * @evs: the core's table
 * @mask: SQCD_EV_BIT()s
 *
 * Lets the core skip the work of making an event (decoding an inode) that
 * nobody hears.
 *
 * Context: any thread; cannot fail.
 */
static inline bool sqcd_hears(const struct sqcd_events *evs, uint32_t mask)
{
	return evs->heard & mask;
}

/**
 * sqcd_emit() - Tell an event to its handlers.
 * @evs: the core's table
 * @ev: the event; its pointers need only live through the call
 *
 * Context: any thread; takes no lock and allocates nothing (the handlers
 * may, as their headers say).
 */
static inline void sqcd_emit(const struct sqcd_events *evs,
			     const struct sqcd_event *ev)
{
	const struct sqcd_sub *s = evs->sub[ev->type];

	for (unsigned int i = 0; i < evs->n[ev->type]; i++)
		s[i].fn(s[i].f, ev);
}

/**
 * sqcd_ask() - Ask a question of the feature that answers it.
 * @q: the question (a member of struct sqcd_events)
 * @req: the request it is asked about
 *
 * On the hot path: one pointer load, and a call only while a feature
 * answers.
 *
 * Return: the answer; false when no feature answers.
 * Context: any thread; cannot fail.
 */
static inline bool sqcd_ask(const struct sqcd_query *q, fuse_req_t req)
{
	return q->fn && q->fn(q->f, req);
}

/**
 * sqcd_push_gate() - The push counter of the calling request thread.
 * @busy: left alone, or set to the counter of the thread's queue
 * @max: left alone, or set to how many of that queue's threads may push
 *
 * The transport's (io_uring: every queue keeps a thread free of pushes,
 * since a push can wait for a READ queued on the same core); left alone
 * on a /dev/fuse worker.  For handlers that push into the page cache.
 *
 * Context: FUSE workers and io_uring threads; cannot fail.
 */
void sqcd_push_gate(atomic_uint **busy, unsigned int *max);

/**
 * sqcd_reply_buf() - Where a READ's raw bytes go on the calling thread.
 *
 * The transport's: an io_uring thread copies every reply into its payload
 * buffer, so the bytes a READ reads from the image file are read there
 * (struct img_read_ctx.reply_buf); NULL on a /dev/fuse worker.
 *
 * Return: IMG_REPLY_BYTES bytes of the calling thread, or NULL.
 * Context: FUSE workers and io_uring threads; cannot fail.
 */
void *sqcd_reply_buf(void);

#endif /* SQC_DAEMON_EVENTS_H */

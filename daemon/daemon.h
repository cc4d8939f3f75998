/* SPDX-License-Identifier: MIT */
/*
 * This file declares what the daemon's files share: the running daemon's
 * state, its options, a feature as the core knows it (struct
 * sqcd_feature; sqcd_feature() is main.c's), and the entry points of
 * ops.c, splice.c and stats.c.
 */
#ifndef SQC_DAEMON_DAEMON_H
#define SQC_DAEMON_DAEMON_H

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "ctl/ctl.h"
#include "events.h"
#include "image/image.h"
#include "prefetch/prefetch.h"
#include "util/memlimit.h"

/* The image never changes: let the kernel keep what it learns. */
#define SQCD_TIMEOUT (365.0 * 86400.0)
/* st_blksize of every inode: the page size tmpfs and ext4 report. */
#define SQCD_IO_BLKSIZE 4096

struct sqcd_opts {
	const char *image; /* IMAGE argument */
	const char *mountpoint; /* MOUNTPOINT argument */
	char canonical[PATH_MAX]; /* mountpoint, canonical */
	char image_abs[PATH_MAX]; /* image, absolute */
	char ctl_addr[CTL_PATH_MAX]; /* control socket address */
	const char *logfile; /* log=FILE, or NULL */
	bool foreground; /* -f */
	bool debug; /* -d / -o debug */
	bool allow_other; /* -o allow_other */
	bool direct_io; /* -o direct_io: no page cache for file data */
	bool no_splice; /* -o no_splice: never splice from the image */
	bool no_uring; /* -o no_uring: requests through /dev/fuse only */
	uint64_t warm; /* -o warm=SIZE: page-cache warming budget */
	bool statahead_all; /* -o statahead=all: list the whole mount once it answers */
	unsigned int statahead_wait; /* -o statahead_wait=S: detach waits this */
	const char *deprecated; /* an old option name was used: say so */
	unsigned int statahead; /* -o statahead=N: entries listed ahead */
	bool list_attrs; /* -o list_attrs: readers' listings carry attributes */
	unsigned int threads; /* -o threads=N: FUSE workers at most */
	unsigned int readahead; /* -o readahead=N: blocks decoded ahead */
	unsigned int workers; /* -o workers=N: prefetch threads */
	pid_t hold_pid; /* -o hold=PID:START: first holder, or 0 */
	uint64_t hold_start; /* its start time (proc_start_time()) */
	double grace; /* -o grace=S: holderless seconds before unmounting */
	unsigned int timeout; /* -o timeout=S: unmount when idle (idle.c) */
	struct img_opts img; /* ram=, cache=, meta=, stage= */
	const char *keep; /* -o keep[=PATH]: the keeper's socket, or NULL */
	/* -o seal=auto|off|require|PATH: the image's seal (verify.c) */
	const char *seal;
	uint8_t seal_root[32]; /* -o seal_root=HEX: the root it must have */
	bool seal_root_set; /* seal_root= was given */
	uint64_t order_window; /* -o order_window=SIZE: the epoch order's */
	uint64_t order_plans; /* -o order_plans=SIZE: its plans' budget */
	/* the memory the daemon may use, read at start: the defaults of
	 * ram= and warm= come from it (memlimit.h) */
	struct memlimit mem;
};

#define SQCD_FEATURES_MAX 12 /* features of the daemon, at most */

enum sqcd_op {
	SQCD_OP_LOOKUP,
	SQCD_OP_GETATTR,
	SQCD_OP_READLINK,
	SQCD_OP_OPEN,
	SQCD_OP_READ,
	SQCD_OP_OPENDIR,
	SQCD_OP_READDIR,
	SQCD_OP_READDIRPLUS,
	SQCD_OP_STATFS,
	SQCD_OP_GETXATTR,
	SQCD_OP_LISTXATTR,
	SQCD_OP_WRITE, /* anything that would write: EROFS */
	SQCD_OP_IOCTL, /* e.g. isatty() from CPython's open(): ENOTTY */
	SQCD_OP__COUNT
};

struct sqcd {
	struct sqcd_opts o; /* set before the session starts */
	struct img *img; /* the image */
	struct order *order; /* its epoch order (order_attach()); the
				image's, freed by img_close() */
	struct pf *pf; /* readahead; NULL until started (the stager
			  threads are img_stage(img)'s) */
	struct fuse_session *se; /* the FUSE session */
	/* held around every notify a thread other than a FUSE worker sends;
	 * notify_off, set under it before the unmount, ends them: none
	 * overlaps the unmount's close of the device (sqcd_notify_end()) */
	pthread_mutex_t notify_lock;
	bool notify_off;
	uint64_t root_ref; /* root directory's inode reference */
	atomic_bool no_open; /* the kernel skips open for files (set by init) */
	bool no_opendir; /* and for directories */
	bool splice; /* replies may splice from the image file */
	struct timespec started; /* CLOCK_MONOTONIC at start */
	_Atomic uint64_t ops[SQCD_OP__COUNT]; /* requests per kind */
	_Atomic uint64_t bytes_served; /* file bytes replied */
	_Atomic uint64_t eio; /* EIO replies (corruption, I/O) */
	_Atomic uint64_t readaheads; /* readahead jobs queued */
	_Atomic uint64_t spliced; /* read replies spliced from the file */
	/* the features' handlers of the core's events (events.h): set by
	 * main.c before the session loop, read-only afterwards */
	struct sqcd_events events;
	/* each feature by its place in features[] (main.c; sqcd_feature()),
	 * or NULL when off: set before the session loop, read-only
	 * afterwards until freed */
	void *features[SQCD_FEATURES_MAX];
	/* the table of each place, set by main.c before anything starts:
	 * sqcd_feature() finds a feature without knowing main.c's list */
	const struct sqcd_feature *feature_tables[SQCD_FEATURES_MAX];
};

/*
 * A feature of the daemon as the core knows it: each feature exports one
 * (<feature>_feature in its header), and features[] in main.c lists them
 * in start order.  One life cycle for all, every step safe on NULL:
 * start, after the prefetcher, in order; stop, in reverse order, before
 * the unmount or after it as features[] says (its threads end, or are
 * asked to when one may wait on a request of the mount); free, in
 * reverse order, once the session is destroyed and no request thread can
 * call in (what is left of its threads ends, and its memory goes).
 */
struct sqcd_feature {
	const char *name; /* for the log */
	/* before the image is opened: 0 or -errno; may set up what
	 * img_open() must find in d->o.img and set *f early, or NULL */
	int (*prepare)(struct sqcd *d, void **f);
	/* 0 or -errno; sets *f to the feature, or to NULL when it is off
	 * (*f may hold what was set up before: the control socket) */
	int (*start)(struct sqcd *d, void **f);
	void (*stop)(void *f); /* cannot fail */
	void (*free)(void *f); /* cannot fail */
	/* before the mount is said to answer, what readers should find
	 * done is waited for (the ready check's thread), or NULL */
	void (*ready)(void *f);
	uint32_t events; /* SQCD_EV_BIT()s its handler hears */
	void (*on_event)(void *f, const struct sqcd_event *ev); /* or NULL */
	/* whether a READDIRPLUS reply to a request gives regular files
	 * names only (struct sqcd_events' names_only), or NULL: one
	 * feature of features[] at most answers it */
	bool (*names_only)(void *f, fuse_req_t req);
};

/**
 * sqcd_feature() - A feature of the daemon.
 * @d: the daemon
 * @ft: the feature's table (<feature>_feature)
 *
 * Return: the feature (struct warm for warm_feature, ...), or NULL when
 * it is off, not started, or freed.
 * Context: any thread; from the session loop's start until features are
 * freed, the answer does not change.  Inline: every feature asks it, and
 * the core's list (main.c) stays the core's.
 */
static inline void *sqcd_feature(const struct sqcd *d,
				 const struct sqcd_feature *ft)
{
	for (int i = 0; i < SQCD_FEATURES_MAX; i++)
		if (d->feature_tables[i] == ft)
			return d->features[i];
	return NULL;
}

extern const struct fuse_lowlevel_ops sqcd_ops;

/**
 * sqcd_drop_listing() - Have the kernel drop its cached listing of a
 * directory.
 * @d: daemon
 * @ref: the directory's inode reference
 *
 * Listing ahead calls it before it lists a directory again with every
 * attribute, which a listing answered from the kernel's cache would not
 * send (FUSE notify_inval_inode; nothing happens if the kernel does not
 * hold the directory).
 *
 * Nothing is sent once sqcd_notify_end() has returned.
 *
 * Context: any thread but a FUSE worker answering a request on @ref.
 */
void sqcd_drop_listing(struct sqcd *d, uint64_t ref);

/**
 * sqcd_notify_end() - Send no notify any more, and wait for the one under
 * way (a notify does not wait on a request: it ends).
 * @d: daemon
 *
 * Context: the main thread, before the unmount closes the FUSE device.
 */
void sqcd_notify_end(struct sqcd *d);

/*
 * The bytes of a file range, ready to send (splice.c): either all of them
 * in a pipe of the calling thread, spliced from the image file (@fd), or
 * in memory (@spans).
 */
struct sqcd_bytes {
	struct img_span *spans; /* the caller's array */
	unsigned int cap; /* its size */
	const struct img_read_ctx *rc; /* the caller's: on whose behalf, and
					  where raw bytes go; or NULL */
	unsigned int n; /* spans filled */
	unsigned int nfd; /* of them, ranges of the image file */
	size_t total; /* bytes mapped first (sqcd_bytes_map()) */
	int fd; /* the pipe holding every byte, or -1: from @spans */
};

/**
 * sqcd_bytes_map() - Map a range of a file, to be sent.
 * @d: daemon
 * @ino: a regular file
 * @off: first byte
 * @size: bytes wanted; clipped at the end of the file
 * @b: @spans and @cap set by the caller; the rest is set here
 *
 * Raw bytes that are not staged stay ranges of the image file when
 * replies may be spliced (d->splice); everything else is in memory.
 *
 * Return: 0; -errno as img_file_spans() (nothing is then pinned).
 * Ownership: the caller calls sqcd_bytes_ready(), sends, then
 * sqcd_bytes_put().
 * Context: any thread.
 */
int sqcd_bytes_map(struct sqcd *d, const struct img_inode *ino, uint64_t off,
		   size_t size, struct sqcd_bytes *b);

/**
 * sqcd_bytes_ready() - Make mapped bytes ready to send.
 * @d: daemon
 * @ino: as given to sqcd_bytes_map()
 * @off: as given to sqcd_bytes_map()
 * @size: as given to sqcd_bytes_map()
 * @b: mapped by sqcd_bytes_map()
 *
 * Bytes all in the image file are spliced into this thread's pipe
 * (@b->fd).  A range that mixes file and memory, or whose splice fell
 * short, is mapped again in memory, where errors are reported; @b->total
 * stays as mapped first.
 *
 * Return: 0; -errno as img_file_spans() (nothing is then pinned).
 * Context: the thread that mapped @b.
 */
int sqcd_bytes_ready(struct sqcd *d, const struct img_inode *ino, uint64_t off,
		     size_t size, struct sqcd_bytes *b);

/**
 * sqcd_bytes_put() - Release bytes once sent.
 * @d: daemon
 * @b: from sqcd_bytes_ready(), or from sqcd_bytes_map() alone
 *
 * Empties this thread's pipe and unpins the spans.
 * Context: the thread that mapped @b; cannot fail.
 */
void sqcd_bytes_put(struct sqcd *d, struct sqcd_bytes *b);

/**
 * sqcd_stats_json() - Describe the daemon's state as one JSON object.
 * @d: daemon
 * @b: buffer to append to
 *
 * The core's keys, and each feature's from its <feature>_stats_json()
 * (stats.c, which lists them all); the control socket serves it.
 *
 * Context: any thread.
 */
void sqcd_stats_json(struct sqcd *d, struct json_buf *b);

#endif /* SQC_DAEMON_DAEMON_H */

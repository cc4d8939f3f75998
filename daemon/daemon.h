/* SPDX-License-Identifier: MIT */
/*
 * This file declares what the daemon's files share: the running daemon's
 * state, its options, and the entry points of ops.c and ctl_srv.c.
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
#include "image/image.h"
#include "prefetch/prefetch.h"

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
	bool prime; /* -o statahead=all: list the whole mount once it answers */
	unsigned int prime_wait; /* -o statahead_wait=S: detach waits this */
	const char *deprecated; /* an old option name was used: say so */
	unsigned int statahead; /* -o statahead=N: entries listed ahead */
	unsigned int threads; /* -o threads=N: FUSE workers at most */
	unsigned int readahead; /* -o readahead=N: blocks decoded ahead */
	unsigned int workers; /* -o workers=N: prefetch threads */
	pid_t hold_pid; /* -o hold=PID:START: first holder, or 0 */
	uint64_t hold_start; /* its start time (ctl_proc_start()) */
	double grace; /* -o grace=S: holderless seconds before unmounting */
	unsigned int timeout; /* -o timeout=S: unmount when idle (idle.c) */
	struct img_opts img; /* ram=, cache=, meta=, stage= */
};

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
	struct pf *pf; /* stager and readahead; NULL until started */
	struct fuse_session *se; /* the FUSE session */
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
	_Atomic uint64_t warm_files; /* files pushed into the page cache */
	_Atomic uint64_t warm_bytes; /* bytes pushed */
	_Atomic uint64_t warm_dropped; /* files not queued: queue full */
	_Atomic uint64_t open_files; /* files pushed when opened */
	_Atomic uint64_t open_bytes; /* bytes pushed when opened */
	struct warm *warm; /* the warming thread, or NULL */
	struct idle *idle; /* idle timeout (idle.c), or NULL when off */
	struct sqcd_uring *uring; /* io_uring threads, or NULL */
	_Atomic uint64_t uring_requests; /* requests served over io_uring */
	/* feature: listing ahead (statahead.h), or NULL when off */
	struct statahead *statahead;
	int ctl_fd; /* listening control socket, or -1 */
	pthread_t ctl_thread; /* serves it */
	bool ctl_running; /* ctl_thread was started */
	struct holders *holders; /* holders.h; NULL unless -o hold= */
};

extern const struct fuse_lowlevel_ops sqcd_ops;

/**
 * sqcd_warm_start() - Start pushing listed files into the page cache.
 * @d: daemon, with its session and prefetcher set up
 *
 * Does nothing when d->o.warm is 0 or with direct_io.
 *
 * Return: 0; -ENOMEM; -errno from pthread_create().
 * Context: main thread, before the session loop.
 */
int sqcd_warm_start(struct sqcd *d);

/**
 * sqcd_warm_stop() - Stop the warming thread.
 * @d: daemon
 *
 * What it keeps stays for pushes at open until sqcd_warm_free().
 *
 * Context: main thread, after the session loop; cannot fail.
 */
void sqcd_warm_stop(struct sqcd *d);

/**
 * sqcd_warm_free() - Free what warming kept, once nothing pushes.
 * @d: daemon
 *
 * Context: main thread, after sqcd_warm_stop(), sqcd_uring_stop() and
 * statahead_stop() (the listing thread arms warming when statahead=all
 * ends, through sqcd_tree_listed()).
 */
void sqcd_warm_free(struct sqcd *d);

/**
 * sqcd_tree_listed() - Core hook: listing ahead listed the whole mount.
 * @core: daemon
 *
 * statahead=all calls it once its listing of the mount is done.  The core
 * forwards it to the features that want it, in this order: warming (the
 * listing stands for a reader, so the files it listed may be pushed
 * without waiting for a first read: sqcd_warm_read(core, NULL, 0, 0)).
 *
 * Context: the listing thread; never blocks on the warming itself.
 */
void sqcd_tree_listed(struct sqcd *core);

/**
 * sqcd_warm_add() - Queue a file that the kernel has just been shown.
 * @d: daemon
 * @node: its node id, as given to the kernel
 * @ref: its inode reference
 *
 * Context: FUSE workers; never blocks on the warming itself.
 */
void sqcd_warm_add(struct sqcd *d, fuse_ino_t node, uint64_t ref);

/**
 * sqcd_warm_push() - Push an open file into the page cache, once.
 * @d: daemon
 * @node: its node id; the kernel holds the inode (the file is open)
 * @ino: the file
 * @from: the first byte to push: 0 for a file being opened, or where the
 *        READ being answered ends (its own pages stay locked until then)
 *
 * Pushes bytes @from to the end (files up to 1 MiB) before the caller
 * replies, so that the reader finds them in the page cache.  Does nothing
 * without warming, for other inodes, if the kernel was given the file
 * since it made the inode, or if enough workers are pushing already:
 * half the FUSE workers, or over io_uring all but one thread of the
 * caller's queue (a push can wait for a READ, which needs a worker).
 *
 * Context: FUSE workers, inside a request on the open file, before the
 * reply.
 */
void sqcd_warm_push(struct sqcd *d, fuse_ino_t node,
		    const struct img_inode *ino, uint64_t from);

/**
 * sqcd_warm_read() - A file's data was asked for.
 * @d: daemon
 * @ino: the file, or NULL (the caller stands for a reader: statahead=all)
 * @off: first byte asked for
 * @size: how many
 *
 * Files listed before this call may now be pushed: something reads the
 * mount.  A request for all of @ino marks it given, so warming skips it.
 *
 * Context: FUSE workers (READ, ioctl), any thread; takes no lock
 * unless the warming thread waits for a read.
 */
void sqcd_warm_read(struct sqcd *d, const struct img_inode *ino, uint64_t off,
		    size_t size);

/**
 * sqcd_warm_forget() - The kernel dropped an inode, and its page cache.
 * @d: daemon
 * @ino: the inode
 *
 * Context: FUSE workers (FORGET).
 */
void sqcd_warm_forget(struct sqcd *d, const struct img_inode *ino);

/**
 * sqcd_splice_fill() - Splice image bytes into this thread's pipe.
 * @spans: file ranges from img_file_map(), all with data == NULL
 * @n: how many
 * @fd: set to the pipe's read end, holding every byte of @spans
 *
 * Return: 0; a negative errno if not every byte could be spliced (the
 * pipe is then empty again).
 * Ownership: the caller hands @fd to libfuse, then calls
 * sqcd_splice_drain().  Context: any thread.
 */
int sqcd_splice_fill(const struct img_span *spans, unsigned int n, int *fd);

/**
 * sqcd_splice_drain() - Empty this thread's pipe of whatever is left.
 *
 * Context: the thread that filled it; cannot fail.
 */
void sqcd_splice_drain(void);

/**
 * sqcd_splice_reply() - Answer a read with image bytes, spliced.
 * @req: the read request
 * @spans: file ranges from img_file_map(), all with data == NULL
 * @n: how many
 * @total: their total length
 *
 * Return: 0 once replied; a negative errno if the bytes could not all be
 * spliced (nothing was sent: the caller answers through memory).
 * Context: a FUSE worker thread; uses a pipe of that thread.
 */
int sqcd_splice_reply(fuse_req_t req, const struct img_span *spans,
		      unsigned int n, size_t total);

/**
 * sqcd_uring_start() - Start serving requests over io_uring, if possible.
 * @d: daemon, mounted, its session not yet looping
 *
 * Does nothing with -o no_uring, when io_uring is not available (built
 * without liburing, or a libfuse other than 3.14.x: one log line, see
 * sqcd_uring_available()), or when the fuse module's enable_uring
 * parameter is off.  Otherwise starts one thread per queue entry and hooks
 * the session's I/O, so that the INIT reply asks for io_uring if the kernel
 * offers it and every ring was set up.
 *
 * Return: 0; -ENOMEM; -errno.
 * Context: main thread, after detaching, before the session loop.
 */
int sqcd_uring_start(struct sqcd *d);

/**
 * sqcd_uring_stop() - Stop the io_uring threads and free them.
 * @d: daemon
 *
 * Context: main thread, after unmounting; cannot fail.
 */
void sqcd_uring_stop(struct sqcd *d);

/**
 * sqcd_uring_available() - Whether this build and libfuse can use io_uring.
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
bool sqcd_uring_available(char *why, size_t len, bool log);

/* Whether the kernel offered io_uring in INIT (and it may be used). */
bool sqcd_uring_offered(const struct sqcd *d);

/* Whether requests go over io_uring (INIT asked for it). */
bool sqcd_uring_on(const struct sqcd *d);

/* How many threads serve io_uring queues; 0 when not in use. */
unsigned int sqcd_uring_threads(const struct sqcd *d);

/**
 * sqcd_uring_gate() - The push counter the calling thread counts in.
 * @busy: left alone, or set to the counter of the thread's queue
 * @max: left alone, or set to how many of that queue's threads may push
 *
 * A push can wait for a READ that the kernel queued on the same core, so
 * every queue keeps one thread free of pushes.
 *
 * Context: FUSE workers and io_uring threads.
 */
void sqcd_uring_gate(atomic_uint **busy, unsigned int *max);

/**
 * sqcd_ctl_start() - Serve the control socket from a thread.
 * @d: daemon; d->ctl_fd is the listening socket, or -1 to create it
 *
 * Return: 0; -EADDRINUSE if another daemon answers on the address; -errno.
 * Context: main thread, before the session loop.
 */
int sqcd_ctl_start(struct sqcd *d);

/**
 * sqcd_ctl_stop() - Stop serving the control socket.
 * @d: daemon
 *
 * Context: main thread, after the session loop.
 */
void sqcd_ctl_stop(struct sqcd *d);

/**
 * sqcd_stats_json() - Describe the daemon's state as one JSON object.
 * @d: daemon
 * @b: buffer to append to
 *
 * Context: any thread.
 */
void sqcd_stats_json(struct sqcd *d, struct ctl_buf *b);

#endif /* SQC_DAEMON_DAEMON_H */

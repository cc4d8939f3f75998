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

enum sqcd_prime_state {
	SQCD_PRIME_OFF,
	SQCD_PRIME_RUNNING,
	SQCD_PRIME_DONE,
	SQCD_PRIME_STOPPED, /* the daemon stopped first, or an error */
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
	struct warm *warm; /* page-cache warming (warm.h), or NULL */
	struct idle *idle; /* idle timeout (idle.c), or NULL when off */
	struct uring *uring; /* io_uring transport (uring.h), or NULL */
	struct ahead *ahead; /* the listing thread (ahead.c), or NULL */
	_Atomic uint64_t ahead_walks; /* walks it went on with */
	_Atomic uint64_t ahead_lookup_dirs; /* directories lookups asked for */
	_Atomic uint64_t ahead_dirs; /* directories it listed ahead */
	_Atomic uint64_t ahead_entries; /* entries it listed ahead */
	_Atomic int prime_state; /* enum sqcd_prime_state */
	_Atomic uint64_t prime_dirs; /* directories listed */
	_Atomic uint64_t prime_entries; /* entries listed */
	struct timespec prime_t0; /* CLOCK_MONOTONIC when it started */
	_Atomic uint64_t prime_ms; /* how long it took, once done */
	struct ctl_srv *ctl; /* control socket (ctl_srv.h), or NULL */
	struct holders *holders; /* holders.h; NULL unless -o hold= */
};

extern const struct fuse_lowlevel_ops sqcd_ops;

/**
 * sqcd_dir_listed() - Core hook: directories were listed for readers.
 * @core: the daemon
 *
 * Listing ahead calls this when it has listed the mount for readers that
 * are about to come (-o statahead=all done): the files the listing showed
 * the kernel may be warmed now, without waiting for a first read.  The
 * core forwards it to its subscribers in a fixed order: warming
 * (warm_read() with no file).  Features never call each other; this is
 * the one way listing ahead asks for warming.
 *
 * Context: any thread, while the session runs; cannot fail.
 */
void sqcd_dir_listed(struct sqcd *core);

/**
 * sqcd_ahead_start() - Start the thread that lists directories ahead.
 * @d: daemon, mounted
 *
 * The thread waits for the mount to answer, lists the whole tree with
 * -o prime, then lists what readers are about to need (see ahead.c).
 * Does nothing with statahead=0 and without -o prime.
 *
 * Return: 0; -ENOMEM; -EFSCORRUPTED (the root inode); -errno from
 * pthread_create().
 * Context: main thread, before the session loop.
 */
int sqcd_ahead_start(struct sqcd *d);

/**
 * sqcd_ahead_stop() - Ask the listing thread to stop.
 * @d: daemon
 *
 * Context: main thread, after the session loop; cannot fail.
 */
void sqcd_ahead_stop(struct sqcd *d);

/**
 * sqcd_ahead_join() - Wait for the listing thread to end, and free it.
 * @d: daemon
 *
 * Call once the FUSE connection is gone, so that a listing blocked on a
 * request is released, and no FUSE worker calls the hooks below.
 *
 * Context: main thread; cannot fail.
 */
void sqcd_ahead_join(struct sqcd *d);

/**
 * sqcd_ahead_dir() - The kernel was shown a directory.
 * @d: daemon
 * @parent: the parent directory's inode number
 * @name: the directory's name in it (vetted by lib/image)
 * @dir: the directory
 *
 * Remembers where it is, so that the listing thread can reach it.
 *
 * Context: FUSE workers (LOOKUP, READDIRPLUS).
 */
void sqcd_ahead_dir(struct sqcd *d, uint32_t parent, const char *name,
		    const struct img_inode *dir);

/**
 * sqcd_ahead_lookup() - A reader looked up an entry of @dir that exists.
 * @d: daemon
 * @req: the LOOKUP
 * @dir: the directory
 *
 * Once enough of its entries were looked up, the thread lists it.
 *
 * Context: FUSE workers; never blocks on the listing itself.
 */
void sqcd_ahead_lookup(struct sqcd *d, fuse_req_t req,
		       const struct img_inode *dir);

/**
 * sqcd_ahead_listing() - A READDIRPLUS of @dir is being answered.
 * @d: daemon
 * @req: the request
 * @dir: the directory
 * @first: the request starts at the first entry
 * @eof: the reply ends the listing (and holds entries)
 *
 * A reader that ends a listing itself has the thread walk on from there.
 *
 * Context: FUSE workers; never blocks on the listing itself.
 */
void sqcd_ahead_listing(struct sqcd *d, fuse_req_t req,
			const struct img_inode *dir, bool first, bool eof);

/**
 * sqcd_ahead_forget() - The kernel dropped an inode.
 * @d: daemon
 * @ino: the inode
 *
 * A directory's entries went with it: it may be listed again.
 *
 * Context: FUSE workers (FORGET).
 */
void sqcd_ahead_forget(struct sqcd *d, const struct img_inode *ino);

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
 * sqcd_stats_json() - Describe the daemon's state as one JSON object.
 * @d: daemon
 * @b: buffer to append to
 *
 * Context: any thread.
 */
void sqcd_stats_json(struct sqcd *d, struct ctl_buf *b);

#endif /* SQC_DAEMON_DAEMON_H */

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
	uint64_t hold_start; /* its start time (ctl_proc_start()) */
	double grace; /* -o grace=S: holderless seconds before unmounting */
	unsigned int timeout; /* -o timeout=S: unmount when idle (idle.c) */
	struct img_opts img; /* ram=, cache=, meta=, stage= */
	/* the memory the daemon may use, read at start: the defaults of
	 * ram= and warm= come from it (memlimit.h) */
	struct memlimit mem;
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
	/* feature: listing ahead (statahead.h), or NULL when off */
	struct statahead *statahead;
	struct ctl_srv *ctl; /* control socket (ctl_srv.h), or NULL */
	struct holders *holders; /* holders.h; NULL unless -o hold= */
};

extern const struct fuse_lowlevel_ops sqcd_ops;

/**
 * sqcd_drop_listing() - Have the kernel drop its cached listing of a
 * directory.
 * @core: daemon
 * @ref: the directory's inode reference
 *
 * Listing ahead calls it before it lists a directory again with every
 * attribute, which a listing answered from the kernel's cache would not
 * send (FUSE notify_inval_inode; nothing happens if the kernel does not
 * hold the directory).
 *
 * Context: any thread but a FUSE worker answering a request on @ref.
 */
void sqcd_drop_listing(struct sqcd *core, uint64_t ref);

/**
 * sqcd_tree_listed() - Core hook: listing ahead listed the whole mount.
 * @core: daemon
 *
 * statahead=all calls it once its listing of the mount is done: the
 * listing stands for readers about to come, so the files it showed the
 * kernel may be warmed now, without waiting for a first read.  The core
 * forwards it to its subscribers in a fixed order: warming (warm_read()
 * with no file).  Features never call each other; this is the one way
 * listing ahead asks for warming.
 *
 * Context: the listing thread; never blocks on the warming itself.
 */
void sqcd_tree_listed(struct sqcd *core);

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

/* SPDX-License-Identifier: MIT */
/*
 * This file declares page-cache warming (-o warm=SIZE): files that a
 * listing showed the kernel, and files being opened, are pushed into the
 * kernel's page cache (see warm.c).  The module owns its thread, its queue
 * and its counters; the core calls it from ops.c and main.c only.
 */
#ifndef SQC_DAEMON_WARM_H
#define SQC_DAEMON_WARM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"

struct warm;
struct ctl_buf;

/**
 * warm_start() - Start pushing listed files into the page cache.
 * @core: the daemon, with its session and prefetcher set up
 * @out: set to the module, or NULL when warming is off (warm=0, direct_io)
 *
 * Return: 0; -ENOMEM; -errno from pthread_create().
 * Context: main thread, before the session loop.
 */
int warm_start(struct sqcd *core, struct warm **out);

/**
 * warm_stop() - Stop the warming thread.
 * @f: the module; NULL is fine
 *
 * What it keeps stays for pushes at open until warm_free(): FUSE workers
 * and io_uring threads may still push.
 *
 * Context: main thread, after the session loop; cannot fail.
 */
void warm_stop(struct warm *f);

/**
 * warm_free() - Free what warming kept, once nothing pushes.
 * @f: the module, stopped; NULL is fine
 *
 * Context: main thread, once every request thread and the listing thread
 * (which calls sqcd_tree_listed()) are joined.
 */
void warm_free(struct warm *f);

/**
 * warm_add() - Queue a file that the kernel has just been shown.
 * @f: the module; NULL is fine
 * @node: its node id, as given to the kernel
 * @ino: the file, as decoded for the listing (IMG_REG)
 *
 * Files are pushed in the order their data lies in the image, which is
 * the order the stager brings them in.
 *
 * Context: FUSE workers; never blocks on the warming itself.
 */
void warm_add(struct warm *f, fuse_ino_t node, const struct img_inode *ino);

/*
 * The push counter a thread counts in, and how many may push at once: the
 * transport's, when it limits pushes per queue of threads (uring_gate()).
 */
struct warm_gate {
	atomic_uint *busy;
	unsigned int max;
};

/**
 * warm_push() - Push an open file into the page cache, once.
 * @f: the module; NULL is fine
 * @node: its node id; the kernel holds the inode (the file is open)
 * @ino: the file
 * @from: the first byte to push: 0 for a file being opened, or where the
 *        READ being answered ends (its own pages stay locked until then)
 * @gate: the counter the calling thread pushes under, or NULL for
 *        warming's own
 *
 * Pushes bytes @from to the end (files up to 1 MiB) before the caller
 * replies, so that the reader finds them in the page cache.  Does nothing
 * for other inodes, if the kernel was given the file since it made the
 * inode, or if enough workers are pushing already (a push can wait for a
 * READ, which needs a worker): those counted in @gate, or without one half
 * the FUSE workers.
 *
 * Context: FUSE workers, inside a request on the open file, before the
 * reply.
 */
void warm_push(struct warm *f, fuse_ino_t node, const struct img_inode *ino,
	       uint64_t from, const struct warm_gate *gate);

/**
 * warm_read() - A file's data was asked for.
 * @f: the module; NULL is fine
 * @ino: the file, or NULL (the caller stands for a reader)
 * @off: first byte asked for
 * @size: how many
 *
 * Files listed before this call may now be pushed: something reads the
 * mount.  A request for all of @ino marks it given, so warming skips it.
 *
 * Context: FUSE workers (READ, ioctl), any thread; takes no lock
 * unless the warming thread waits for a read.
 */
void warm_read(struct warm *f, const struct img_inode *ino, uint64_t off,
	       size_t size);

/**
 * warm_forget() - The kernel dropped an inode, and its page cache.
 * @f: the module; NULL is fine
 * @ino: the inode
 *
 * Context: FUSE workers (FORGET).
 */
void warm_forget(struct warm *f, const struct img_inode *ino);

/**
 * warm_stats_json() - Append "warm":{budget,files,bytes,dropped,open_files,
 * open_bytes}, and a comma.
 * @f: the module; NULL appends zeros
 * @b: the stats reply
 *
 * Context: the control thread.
 */
void warm_stats_json(struct warm *f, struct ctl_buf *b);

#endif /* SQC_DAEMON_WARM_H */

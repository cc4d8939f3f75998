/* SPDX-License-Identifier: MIT */
/*
 * This file declares the prefetcher: the threads that work ahead of the
 * readers.
 *
 * - The stager streams the compressed image into RAM (img_stage_next()),
 *   metadata first, in large sequential reads, and then keeps watching the
 *   image file for changes once a second.
 * - A pool of workers, one per core by default, decompresses blocks ahead
 *   of a reader that goes through a file sequentially (readahead), so the
 *   next blocks are in the data cache when the reads for them arrive.
 *
 * Jobs follow libuv's rule: if pf_readahead() fails, nothing runs; a job
 * that was queued is freed by the worker once it has run.
 */
#ifndef SQC_PREFETCH_PREFETCH_H
#define SQC_PREFETCH_PREFETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "image/image.h"

struct pf; /* opaque */

struct pf_opts {
	unsigned int workers; /* readahead threads; 0 = one per core */
	unsigned int queue_max; /* jobs waiting at most; more are dropped */
	bool stage; /* run the stager, which also watches the file */
	unsigned int stagers; /* stager threads; 0 = the default (4) */
};

struct pf_stats {
	uint64_t queued; /* readahead jobs accepted */
	uint64_t done; /* jobs run */
	uint64_t dropped; /* jobs refused: queue full */
	uint64_t errors; /* jobs that failed */
	double stage_seconds; /* staging time so far (or total when done) */
	unsigned int workers; /* worker threads running */
	unsigned int stagers; /* stager threads running */
};

/**
 * pf_new() - Start the prefetcher for an image.
 * @img: the image; must outlive the prefetcher
 * @opts: settings, or NULL for defaults (staging on)
 * @out: set to the prefetcher
 *
 * Return: 0; -ENOMEM; -errno from pthread_create().
 * Ownership: the caller stops and frees it with pf_free().
 * Context: any thread.
 */
int pf_new(struct img *img, const struct pf_opts *opts, struct pf **out);

/**
 * pf_free() - Stop every thread and free the prefetcher.
 * @pf: prefetcher, may be NULL
 *
 * Queued jobs that have not run are dropped.  Context: not from a worker.
 */
void pf_free(struct pf *pf);

/**
 * pf_readahead() - Queue decompression of blocks of a file.
 * @pf: prefetcher
 * @ino: the file's inode (copied)
 * @first: first block
 * @count: number of blocks
 *
 * Return: 0 if queued; -EAGAIN if the queue is full (the job is dropped);
 * -ENOMEM.  Context: any thread; never blocks on the workers.
 */
int pf_readahead(struct pf *pf, const struct img_inode *ino, uint32_t first,
		 uint32_t count);

/**
 * pf_get_stats() - Snapshot the counters.
 * @pf: prefetcher
 * @out: filled in
 *
 * Context: any thread.
 */
void pf_get_stats(struct pf *pf, struct pf_stats *out);

/**
 * pf_stage_resume() - Wake the stager after img_stage_resume().
 * @pf: prefetcher
 *
 * The stager plans again and streams what is missing; the staging time
 * and rate in pf_get_stats() count from now.  Does nothing if the
 * prefetcher runs no stager.
 *
 * Context: any thread but the stager.
 */
void pf_stage_resume(struct pf *pf);

/**
 * pf_wait_staged() - Wait until staging has finished.
 * @pf: prefetcher
 * @timeout_ms: give up after this long; negative waits for ever
 *
 * Return: 0 when staging is done or off; -ETIMEDOUT.
 * Context: any thread but the stager.
 */
int pf_wait_staged(struct pf *pf, int timeout_ms);

#endif /* SQC_PREFETCH_PREFETCH_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file declares the prefetcher: a pool of workers, one per core by
 * default, that decompresses blocks ahead of a reader that goes through a
 * file sequentially (readahead), so the next blocks are in the data cache
 * when the reads for them arrive.  Staging the compressed image into RAM
 * is lib/stage's (stage.h).
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
};

struct pf_stats {
	uint64_t queued; /* readahead jobs accepted */
	uint64_t done; /* jobs run */
	uint64_t dropped; /* jobs refused: queue full */
	uint64_t errors; /* jobs that failed */
	unsigned int workers; /* worker threads running */
};

/**
 * pf_new() - Start the prefetcher for an image.
 * @img: the image; must outlive the prefetcher
 * @opts: settings, or NULL for defaults
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

#endif /* SQC_PREFETCH_PREFETCH_H */

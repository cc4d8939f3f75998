/* SPDX-License-Identifier: MIT */
/*
 * This file declares the epoch order: byte ranges of a source (the
 * compressed image) that readers will want, in the order they will want
 * them, read ahead into a window of RAM by a few threads and dropped once
 * read.  A training epoch that reads its files in a random order costs
 * one storage round trip per file; told the order, the reads overlap, so
 * the storage stays busy at its bandwidth.
 *
 * Orders come from clients: each process that reads (a rank of a training
 * job, each with its own shard of the data set) gives its own order, under
 * a key its owner chooses, and a new order of a client replaces that
 * client's order only.  The order serves them all at once: one plan of
 * ranges shared by every client (a range two clients need is read once
 * and held until both took it), read ahead by one set of threads within
 * one window, each next read taken for the client whose readers are
 * nearest to it (the fewest files between their place and that range),
 * each client at most its share of the window (the window over the clients
 * with ranges to read or held).
 *
 * The owner (plan.c, for an image) turns each file of an order into the
 * ranges a read of it needs (struct order_range), leaving out what staging
 * holds.  order.c knows nothing of SquashFS.  Each range is read from the
 * source once: by a thread ahead of the readers, or by the first reader
 * that needs it before a thread got to it (others wait for that read).
 * Ranges may overlap (blocks that files share): a read is served by a
 * range that holds all its bytes, the one whose client's readers are
 * nearest to it.  Bytes readers take count for one client that needs the
 * range (the one whose readers are nearest to it), which moves that
 * client's place; a range is dropped when each of its users took it whole,
 * or when their clients' readers are ORDER_LAG files past it.  The plans
 * (ranges and each client's list of them) stay within a byte budget.
 */
#ifndef SQC_ORDER_ORDER_H
#define SQC_ORDER_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct order; /* opaque, shared by all threads */

/* How far readers may go past a range before it is dropped unread. */
#define ORDER_LAG 1024u
#define ORDER_THREADS_MAX 64u
#define ORDER_RANGE_MAX (8u << 20) /* longest range; the owner splits */
#define ORDER_CLIENTS_MAX 256u /* clients at once, at most */

/* How the order reads its source; the owner's. */
struct order_src {
	/* Read @len bytes at @off into @dst, all or fail.  Return: 0 or a
	 * negative errno.  Context: any thread. */
	int (*read)(void *arg, uint64_t off, void *dst, size_t len);
	void *arg;
};

struct order_opts {
	uint64_t window; /* bytes held at most; 0 turns the order off */
	unsigned int threads; /* reads under way at most; 0: 16 */
	uint64_t plans; /* bytes the plans may take in all; 0: no bound */
	unsigned int clients; /* clients at most; 0: ORDER_CLIENTS_MAX */
};

/* One range of an order. */
struct order_range {
	uint64_t off; /* in the source */
	uint32_t len; /* bytes, 1 .. ORDER_RANGE_MAX */
	uint32_t item; /* which file of the order needs it (0-based,
			  non-decreasing along the array) */
};

struct order_stats {
	uint64_t window; /* the budget */
	uint64_t held; /* bytes read or being read, not dropped */
	uint64_t held_max; /* the most at once */
	uint64_t orders; /* orders set (order_set() with ranges) */
	uint64_t clients; /* clients with an order now */
	uint64_t items; /* files in their orders */
	uint64_t ranges; /* distinct ranges of their orders */
	uint64_t planned; /* their bytes */
	uint64_t plans; /* bytes the plans take */
	uint64_t plans_max; /* the most at once */
	uint64_t plans_budget; /* what they may take (0: no bound) */
	uint64_t refused; /* orders refused for the budget or clients */
	uint64_t read; /* bytes read from the source (since order_new()) */
	uint64_t served; /* bytes readers took from the window */
	uint64_t hits; /* order_get() calls served */
	uint64_t skipped; /* bytes counted as taken from a cache instead
			     (order_skip()) */
	uint64_t waits; /* of those, that waited for a read under way */
	uint64_t by_readers; /* bytes a reader read before a thread did */
	uint64_t dropped_unread; /* bytes dropped before any reader took
				    them (passed by ORDER_LAG, or their
				    clients left) */
	uint64_t errors; /* failed source reads */
	unsigned int threads; /* threads running */
};

/* One client's order and how far its readers are. */
struct order_client_stats {
	uint64_t client; /* the key its owner gave (order_set()) */
	uint64_t orders; /* orders it gave */
	uint64_t items; /* files in its order */
	uint64_t at; /* files its readers reached: the latest file they took
			bytes of, plus one (0: none yet) */
	uint64_t ranges; /* distinct ranges of its order */
	uint64_t planned; /* their bytes */
	uint64_t taken; /* bytes of them its readers took (or found in a
			   cache) */
	uint64_t ahead; /* bytes the threads read for it, not dropped */
	uint64_t plans; /* bytes its list of ranges takes */
};

/**
 * order_new() - Set up an order with no client.
 * @src: how to read the source; copied, @src->arg must outlive it
 * @o: window, threads, budget of the plans, clients
 * @out: set to the order
 *
 * No thread starts until the first order_set() with ranges.
 * Return: 0; -ENOMEM.  Ownership: order_free().  Context: any thread.
 */
int order_new(const struct order_src *src, const struct order_opts *o,
	      struct order **out);

/**
 * order_free() - Stop the threads and free the order and its window.
 * @ord: may be NULL
 *
 * Context: no other thread may use @ord any more.
 */
void order_free(struct order *ord);

/**
 * order_set() - Replace a client's order.
 * @ord: order
 * @client: the client's key (the owner's: a process id, say)
 * @r: its ranges, in order (item non-decreasing); taken over (freed with
 *     free() by the order), may be NULL with @n 0 to clear the client's
 *     order (the client is forgotten)
 * @n: how many
 * @items: files in the order (counted in the stats)
 *
 * Ranges with the same offset and length are one range, for this client
 * and with every other client's.  What the window holds that no order
 * needs any more is dropped; what the new order needs of it stays.  Other
 * clients' orders are not touched.  Starts the threads the first time.
 * Waits for reads and copies of ranges no order needs any more (one
 * source read at most), not for anything else.
 *
 * Return: 0; -EOPNOTSUPP if the window is 0 (@r is freed); -EINVAL for a
 * range of length 0 or over ORDER_RANGE_MAX or ending past 2^64, or
 * items going back; -ENOSPC if the plans would pass their budget;
 * -EUSERS if the order has its most clients already (on error @r is
 * freed and the client's order before stays); -ENOMEM; -errno from
 * pthread_create().
 * Context: any thread; calls are carried out one at a time.
 */
int order_set(struct order *ord, uint64_t client, struct order_range *r,
	      size_t n, uint64_t items);

/**
 * order_get() - Copy bytes from the window.
 * @ord: order, may be NULL
 * @off: offset in the source
 * @len: bytes
 * @dst: destination
 *
 * If a range of an order holds all of [@off, @off + @len) (of several
 * that overlap: one held, or the one whose client's readers are nearest
 * to it): copies from it, reading it first if no thread has yet, or
 * waiting for a read under way.  The bytes taken count towards dropping
 * the range, for the client whose readers are nearest to it.
 *
 * Return: 0; -ENODATA if no range of the order holds them (or its read
 * failed: the caller reads the source itself).
 * Context: any thread.
 */
int order_get(struct order *ord, uint64_t off, size_t len, void *dst);

/**
 * order_skip() - Readers took bytes of a range from elsewhere.
 * @ord: order, may be NULL
 * @off: offset in the source of the range's bytes they needed
 * @len: how many (all in one range)
 * @amount: how many bytes of the range that counts as taken
 *
 * A block found in a cache of decoded blocks needs none of its range's
 * bytes: the range counts as taken as if they were (it is dropped once
 * all is taken, or not read at all if it was not yet), and the readers'
 * place in the order moves on.
 *
 * Context: any thread; cannot fail.
 */
void order_skip(struct order *ord, uint64_t off, size_t len, uint64_t amount);

/**
 * order_has() - Whether a range of an order holds [@off, @off + @len).
 * @ord: order, may be NULL
 * @off: offset in the source
 * @len: bytes
 *
 * Context: any thread; the answer may be stale by the time it is used.
 */
bool order_has(struct order *ord, uint64_t off, size_t len);

/**
 * order_get_stats() - Snapshot the counters.
 * @ord: order
 * @out: filled in
 *
 * Context: any thread; cannot fail.
 */
void order_get_stats(struct order *ord, struct order_stats *out);

/**
 * order_get_client() - Snapshot one client's counters.
 * @ord: order
 * @client: its key
 * @out: filled in, or zeroed if it has no order
 *
 * Return: true if it has an order.
 * Context: any thread; cannot fail.
 */
bool order_get_client(struct order *ord, uint64_t client,
		      struct order_client_stats *out);

/**
 * order_get_clients() - Snapshot each client's counters.
 * @ord: order
 * @out: filled with the first @cap clients, in the order they came
 * @cap: room in @out
 *
 * Return: the number of clients (may be more than @cap).
 * Context: any thread; cannot fail.
 */
size_t order_get_clients(struct order *ord, struct order_client_stats *out,
			 size_t cap);

/*
 * The epoch order of a SquashFS image (plan.c, this module's only use of
 * lib/image; lib/image knows nothing of the order): an order that reads
 * the image and serves its readers as the image's window (struct
 * img_window, image.h), and the plans it reads ahead, built file by file
 * from the stored bytes a read of each file needs.
 */
struct img;
struct img_inode;

/*
 * An epoch order being built: the ranges of the image that reading its
 * files needs, in their order.  Zero it before the first
 * order_plan_add(); order_plan_set() takes the ranges, or
 * order_plan_release() frees them.
 */
struct order_plan {
	struct order_range *r; /* the ranges */
	size_t n; /* how many */
	size_t cap; /* room in @r */
	uint64_t items; /* files added */
	uint64_t bytes; /* the ranges' bytes */
	uint64_t staged; /* bytes left out: staging holds them */
};

/**
 * order_attach() - Set up the epoch order of an image.
 * @img: image, opened and not yet read by anyone but img_open()
 * @o: window (0: orders are refused, -EOPNOTSUPP), threads, budget of
 *     the plans, clients
 * @out: set to the order, for order_plan_set() and its stats
 *
 * The order reads the image (img_window_read()) and is the image's window
 * (img_set_window()): reads of the image take bytes it holds.
 *
 * Return: 0; -ENOMEM; -EBUSY if @img has a window already.
 * Ownership: the image's: img_close() frees the order.
 * Context: before the image is shared.
 */
int order_attach(struct img *img, const struct order_opts *o,
		 struct order **out);

/**
 * order_plan_add() - Add a file to an epoch order being built.
 * @p: the order being built
 * @img: image
 * @f: a regular file
 *
 * Adds the image ranges a read of the whole file needs: its data blocks
 * (in pieces of at most ORDER_RANGE_MAX, split between blocks) and its
 * tail (only the tail's bytes of a fragment stored uncompressed, the
 * whole fragment block otherwise), but for those staging holds or has
 * planned.  Sparse blocks need nothing.
 *
 * Return: 0; -EINVAL if not a regular file; -EFSCORRUPTED; -EIO;
 * -ENOMEM.  On error @p is as it was.
 * Context: any thread.
 */
int order_plan_add(struct order_plan *p, struct img *img,
		   const struct img_inode *f);

/**
 * order_plan_set() - Read ahead a client's epoch order from now on.
 * @ord: the image's order (order_attach()), or NULL
 * @client: the client's key (order_set())
 * @p: the order built with order_plan_add(); its ranges are taken (@p is
 *     zeroed), also on error
 *
 * Replaces the client's order before it; an empty @p clears it.
 *
 * Return: as order_set(); -EOPNOTSUPP if @ord is NULL.
 * Context: any thread.
 */
int order_plan_set(struct order *ord, uint64_t client, struct order_plan *p);

/**
 * order_plan_release() - Free an order not given to order_plan_set().
 * @p: the order being built; zeroed
 *
 * Context: any thread; cannot fail.
 */
void order_plan_release(struct order_plan *p);

#endif /* SQC_ORDER_ORDER_H */

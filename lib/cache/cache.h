/* SPDX-License-Identifier: MIT */
/*
 * This file declares the block cache: refcounted buffers keyed by a 64-bit
 * number (for squashcache, the byte offset of a block in the image), filled
 * once, held under a byte budget.
 *
 * Single flight: an entry is EMPTY, PENDING (one thread is filling it, the
 * others wait), VALID or ERROR.  The filler's error is handed to every
 * waiter, and -EFSCORRUPTED is remembered so a bad block is not decoded
 * again; any other error (an I/O error, ENOMEM) is not kept, so the next
 * reader tries again.  A FUSE read and a prefetch job therefore never
 * decompress the same block twice.
 *
 * Budget: the bytes of all entries in the cache (data plus bookkeeping)
 * never exceed the budget given to cache_new().  When the budget is taken
 * by pinned entries, a fill is served from a private buffer that is freed
 * on cache_put() ("bypass") rather than growing the cache.
 *
 * Eviction suits shuffled reads: a newly filled entry that is never read
 * again leaves first, and an entry that is hit (a fragment block shared by
 * many small files) is kept.
 */
#ifndef SQC_CACHE_CACHE_H
#define SQC_CACHE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cache; /* opaque */
struct cache_entry; /* opaque; pinned from cache_get() to cache_put() */

struct cache_stats {
	uint64_t budget; /* bytes allowed */
	uint64_t bytes; /* bytes held now, data plus bookkeeping */
	uint64_t peak_bytes; /* the most ever held at once */
	uint64_t entries; /* entries held now, remembered errors included */
	uint64_t hits; /* lookups served from a VALID entry */
	uint64_t misses; /* lookups that ran a fill (not cache_prefill()) */
	uint64_t waits; /* lookups that waited for another thread's fill */
	uint64_t evictions; /* entries dropped to make room */
	uint64_t bypass; /* fills not kept: no room could be made */
	uint64_t fill_errors; /* fills that failed, prefills included */
};

/**
 * typedef cache_fill_fn - Produce the bytes of one entry.
 * @arg: the caller's cookie given to cache_get()
 * @key: the key being filled
 * @buf: where to write, @cap bytes
 * @cap: capacity of @buf
 * @len: set to the number of bytes written
 *
 * Return: 0, or a negative errno that becomes cache_get()'s result.
 * Context: called without any cache lock held, in the thread that called
 * cache_get() or cache_prefill(); it may use the cache, but must not get
 * @key itself (it would wait for its own fill).
 */
typedef int cache_fill_fn(void *arg, uint64_t key, void *buf, size_t cap,
			  size_t *len);

/**
 * cache_new() - Create a cache.
 * @name: short name for stats and logs ("data", "meta"); not copied
 * @budget: most bytes held at once; 0 caches nothing (every get bypasses)
 * @max_entry: the largest @cap callers will pass, used to size internals
 *
 * Return: the cache, or NULL (ENOMEM).
 * Ownership: caller frees with cache_free().
 * Context: any thread.
 */
struct cache *cache_new(const char *name, size_t budget, size_t max_entry);

/**
 * cache_free() - Destroy a cache and every entry in it.
 * @c: cache, may be NULL
 *
 * Context: no entry may still be pinned and no thread may be in a call.
 */
void cache_free(struct cache *c);

/**
 * cache_get() - Find or fill the entry for @key and pin it.
 * @c: cache
 * @key: key
 * @cap: buffer size to give @fill on a miss
 * @fill: fills the buffer on a miss
 * @arg: passed to @fill
 * @out: set to the pinned entry on success
 *
 * Return: 0; or the negative errno of the fill (this thread's or the one it
 * waited for, except -EAGAIN: a fill that this thread waited for and that
 * returned -EAGAIN is run again by this thread), or a remembered
 * -EFSCORRUPTED; -ENOMEM.  A fill that cannot
 * be given room (budget 0, @cap larger than the cache can hold, everything
 * pinned or being filled) still succeeds, as a bypass entry.
 * Ownership: on success the caller must cache_put() the entry exactly once.
 * Context: any thread; may sleep waiting for another thread's fill.
 */
int cache_get(struct cache *c, uint64_t key, size_t cap, cache_fill_fn *fill,
	      void *arg, struct cache_entry **out);

/**
 * cache_prefill() - Fill the entry for @key ahead of use, without pinning.
 * @c: cache
 * @key: key
 * @cap: buffer size to give @fill
 * @fill: fills the buffer
 * @arg: passed to @fill
 *
 * Does nothing if the entry is present or being filled (it never waits),
 * or if it could only be held by evicting entries that were hit.
 *
 * Return: 0 if filled now; -EEXIST if present (remembered errors too) or
 * pending; -ENOSPC if room could only be made by evicting entries that
 * were hit, or not at all; -ENOMEM; or the fill's error (-EFSCORRUPTED is
 * remembered as for cache_get()).
 * Context: any thread (prefetch workers).
 */
int cache_prefill(struct cache *c, uint64_t key, size_t cap,
		  cache_fill_fn *fill, void *arg);

/**
 * cache_contains() - Tell whether @key is VALID or being filled.
 * @c: cache
 * @key: key
 *
 * Return: true if so (a hint only: it may be evicted right after).
 * Context: any thread.
 */
bool cache_contains(struct cache *c, uint64_t key);

/**
 * cache_entry_data() - The bytes of a pinned entry.
 * @e: entry pinned by cache_get()
 *
 * Return: pointer valid until cache_put(), not NULL even for 0 bytes.
 * Context: any thread; cannot fail.
 */
const void *cache_entry_data(const struct cache_entry *e);

/**
 * cache_entry_size() - Number of bytes the fill produced.
 * @e: entry pinned by cache_get()
 *
 * Return: the length.  Context: any thread; cannot fail.
 */
size_t cache_entry_size(const struct cache_entry *e);

/**
 * cache_put() - Unpin an entry.
 * @c: the cache it came from
 * @e: entry; NULL is ignored
 *
 * Context: any thread; cannot fail.
 */
void cache_put(struct cache *c, struct cache_entry *e);

/**
 * cache_get_stats() - Snapshot the counters.
 * @c: cache
 * @out: filled in
 *
 * Context: any thread; counters are read without stopping readers, so
 * they may be a few operations apart from each other.
 */
void cache_get_stats(struct cache *c, struct cache_stats *out);

/**
 * cache_name() - The name given to cache_new().
 * @c: cache
 *
 * Return: the name.  Context: any thread; cannot fail.
 */
const char *cache_name(const struct cache *c);

#endif /* SQC_CACHE_CACHE_H */

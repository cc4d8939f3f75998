// SPDX-License-Identifier: MIT
/*
 * This file implements the block cache declared in cache.h: refcounted
 * entries keyed by a 64-bit number, filled once by a caller's fill function
 * (single flight), held under a byte budget and evicted with S3-FIFO.
 *
 * Design
 *
 * Shards.  A key is mixed with the splitmix64 finalizer (image offsets have
 * patterned low bits); the top bits of the mix pick one of N shards and the
 * low bits a hash bucket.  N is a power of two, at most 16, and the largest
 * for which every shard still holds 8 entries of max_entry bytes.  Each
 * shard has its own mutex, condition variable, chained hash table, queues,
 * ghost table and a 1/N share of the budget.  A shard never holds more than
 * its share, so the cache never holds more than the budget.
 *
 * Entries.  A miss inserts a PENDING entry in the table and runs the fill
 * with no lock held; other lookups of the key wait on the shard's condition
 * variable.  The fill ends VALID (the data is then immutable until the entry
 * is freed), ERROR (-EFSCORRUPTED, kept so the block is never decoded
 * again), or EMPTY (any other error: the waiters get it, the entry leaves
 * the table and the next lookup fills again).  refs counts the pins of
 * cache_get() callers plus the threads waiting for the fill.  An entry is
 * freed only when it is unpinned and out of the table: by eviction, which
 * only picks unpinned entries, or by the last unpin of a detached entry.
 *
 * Budget.  A miss reserves sizeof(struct cache_entry) + cap before its fill
 * starts, evicting unpinned VALID and ERROR entries to make room, and lowers
 * the charge to the real allocation when the fill is done (the buffer is
 * shrunk with realloc() when the fill used less than 3/4 of cap).  What a
 * fill may use is thus taken before it starts and concurrent fills cannot
 * overshoot.  Each shard counts the bytes of its unpinned entries, so a miss
 * knows before evicting anything whether room can be made at all.  If it
 * cannot (the share is pinned or pending, the budget is 0, or cap is larger
 * than a share), the entry is a bypass entry: charged nothing, still single
 * flight while PENDING, out of the table once filled, freed by the last
 * cache_put().  A corrupt block filled as a bypass entry is not remembered.
 * Not charged: the shards' bucket arrays (one or two pointers per entry)
 * and the fixed structures of the cache and its shards.
 *
 * Eviction is S3-FIFO (Yang et al., "FIFO queues are all you need for cache
 * eviction", SOSP 2023), per shard.  A new entry enters the small FIFO S,
 * whose target is 10% of the share.  A hit only bumps a 2-bit counter; it
 * never moves the entry.  To make room, S is evicted while it is at or over
 * its target (or nothing else is evictable): its oldest entry moves to the
 * main FIFO M if it was hit at least twice, otherwise it is dropped and its
 * key remembered in the ghost table.  M is a CLOCK: its oldest entry goes
 * back to the head with its counter decremented while the counter is not
 * zero, else it is dropped.  A miss on a key found in the ghost table goes
 * straight to M.  A pinned entry that reaches the tail of either queue is
 * moved along to the head and the next one is tried.
 *
 * Why S3-FIFO: in shuffled epochs over a dataset larger than the cache,
 * most blocks are read once (or by two adjacent reads), so they pass
 * through S and leave without disturbing M, and a one-pass scan never
 * reaches M because evictions come from S while S is over its target.
 * Fragment blocks shared by many small files are hit several times within a
 * short time, are promoted to M and stay there while they are hit.  Unlike
 * LRU, a hit costs a counter bump under the shard lock, with no list moves.
 *
 * The ghost table holds mixed keys only: a fixed set-associative array of
 * (key, sequence number) slots; a key counts as present when it was added
 * within the last "window" additions, about as many entries as the shard
 * holds.  Its memory is taken out of the shard's share.
 *
 * cache_prefill() evicts from S only (which may promote hit entries to M)
 * and never from M, so prefetched data cannot push out hot fragment blocks.
 *
 * Locking.  s->lock protects everything in a shard and the bookkeeping of
 * its entries.  An entry's data and length are written by its filler while
 * PENDING and never change once VALID, so pinned holders read them without
 * a lock.  c->bytes (the sum of the shards' charges) and c->peak are atomics
 * updated under the shard locks; since a shard subtracts evicted bytes
 * before it adds a reservation, c->bytes never exceeds the budget, even
 * counted across shards.  The other counters are relaxed atomics written
 * under the shard lock and read by cache_get_stats() without it.
 */
#define LOG_MOD "cache"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "util/ckd.h"
#include "util/compiler.h"
#include "util/err.h"
#include "util/log.h"

#define CACHE_MAX_SHARDS 16 /* power of two, at most 256 */
#define CACHE_MIN_PER_SHARD 8 /* max-size entries each shard must hold */
#define CACHE_SMALL_PERCENT 10 /* S3-FIFO small queue share */
#define CACHE_FREQ_MAX 3 /* 2-bit hit counter */
#define CACHE_PROMOTE_FREQ 2 /* hits in S that earn a place in M */
#define CACHE_GHOST_WAYS 4 /* slots per ghost set */
#define CACHE_GHOST_SHARE 32 /* ghost takes at most 1/32 of a share */
#define CACHE_MIN_BUCKETS 16
#define CACHE_MAX_BUCKETS ((size_t)1 << 26)
#define CACHE_LINE 64

enum entry_state {
	ENTRY_EMPTY, /* fill failed and not remembered; out of the table */
	ENTRY_PENDING, /* one thread is filling it */
	ENTRY_VALID, /* data and len hold the fill's bytes */
	ENTRY_ERROR, /* err holds a remembered -EFSCORRUPTED */
};

enum entry_queue {
	QUEUE_NONE, /* pending, detached or bypass */
	QUEUE_SMALL, /* S3-FIFO S */
	QUEUE_MAIN, /* S3-FIFO M */
};

/* A link in a circular doubly linked queue with a sentinel head. */
struct qlink {
	struct qlink *prev; /* towards the head (newer) */
	struct qlink *next; /* towards the tail (older) */
};

struct cache_entry {
	uint64_t key; /* immutable once in the table */
	struct cache_entry *hnext; /* hash chain; protected by s->lock */
	struct qlink q; /* S or M queue link; protected by s->lock */
	void *data; /* written by the filler while PENDING, then immutable */
	size_t len; /* bytes in data; same rule as data */
	size_t charge; /* bytes charged to the shard; protected by s->lock */
	uint32_t refs; /* pins plus waiters; protected by s->lock */
	int err; /* the fill's error when ERROR or EMPTY; protected by s->lock */
	uint8_t state; /* enum entry_state; protected by s->lock */
	uint8_t queue; /* enum entry_queue; protected by s->lock */
	uint8_t freq; /* hits, saturating at 3; protected by s->lock */
	bool in_table; /* in the hash table; protected by s->lock */
	bool bypass; /* charged nothing, never queued; set before insertion */
};

struct ghost_slot {
	uint64_t hash; /* mixed key */
	uint64_t seq; /* when it was added; 0 = empty slot */
};

struct cache_shard {
	pthread_mutex_t lock; /* the "s->lock" of the comments */
	pthread_cond_t fill_done; /* broadcast when a fill with waiters ends */
	struct cache_entry **buckets; /* protected by s->lock */
	size_t nbuckets; /* power of two; protected by s->lock */
	size_t nitems; /* entries in the table; protected by s->lock */
	struct qlink small; /* S, head is newest; protected by s->lock */
	struct qlink main; /* M, head is newest; protected by s->lock */
	size_t small_count; /* entries in S; protected by s->lock */
	size_t main_count; /* entries in M; protected by s->lock */
	size_t small_bytes; /* charge of S; protected by s->lock */
	size_t evictable; /* unpinned charge of S+M; protected by s->lock */
	size_t evictable_small; /* unpinned charge of S; protected by s->lock */
	size_t used; /* bytes charged; protected by s->lock */
	size_t budget; /* most bytes charged; immutable */
	size_t small_target; /* bytes S aims at; immutable */
	uint32_t nwaiters; /* threads waiting for fills; protected by s->lock */
	struct ghost_slot *ghost; /* or NULL; slots protected by s->lock */
	size_t ghost_mask; /* ghost sets - 1; immutable */
	uint64_t ghost_seq; /* additions so far; protected by s->lock */
	uint64_t ghost_window; /* additions a key is kept for; immutable */
	/* Relaxed atomics, written under s->lock, read without it. */
	_Atomic uint64_t entries; /* VALID and ERROR entries held */
	_Atomic uint64_t hits; /* see struct cache_stats */
	_Atomic uint64_t misses;
	_Atomic uint64_t waits;
	_Atomic uint64_t evictions;
	_Atomic uint64_t bypass;
	_Atomic uint64_t fill_errors;
} __attribute__((aligned(CACHE_LINE)));

struct cache {
	const char *name; /* not owned */
	size_t budget; /* immutable */
	unsigned int nshards; /* power of two; immutable */
	_Atomic uint64_t bytes; /* sum of the shards' used */
	_Atomic uint64_t peak; /* most bytes ever seen */
	struct cache_shard *shards; /* nshards, cache-line aligned */
};

/* splitmix64's finalizer: a bijection, so equal mixes mean equal keys. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static inline struct cache_shard *shard_of(const struct cache *c, uint64_t h)
{
	return &c->shards[(h >> 56) & (c->nshards - 1)];
}

static inline void stat_inc(_Atomic uint64_t *p)
{
	atomic_store_explicit(p,
			      atomic_load_explicit(p, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

static inline void stat_dec(_Atomic uint64_t *p)
{
	atomic_store_explicit(p,
			      atomic_load_explicit(p, memory_order_relaxed) - 1,
			      memory_order_relaxed);
}

static size_t round_up_pow2(size_t n)
{
	size_t p = 1;

	while (p < n && p <= SIZE_MAX / 2)
		p <<= 1;
	return p;
}

/* Charge @n bytes; the caller made room. */
static void shard_charge(struct cache *c, struct cache_shard *s, size_t n)
{
	uint64_t now, peak;

	s->used += n;
	now = atomic_fetch_add_explicit(&c->bytes, n, memory_order_relaxed) + n;
	peak = atomic_load_explicit(&c->peak, memory_order_relaxed);
	while (now > peak &&
	       !atomic_compare_exchange_weak(&c->peak, &peak, now))
		;
}

static void shard_uncharge(struct cache *c, struct cache_shard *s, size_t n)
{
	s->used -= n;
	atomic_fetch_sub_explicit(&c->bytes, n, memory_order_relaxed);
}

/* Queues: insert at the head, take from the tail. */

static void qlink_init(struct qlink *head)
{
	head->prev = head;
	head->next = head;
}

static void qlink_add_head(struct qlink *head, struct qlink *l)
{
	l->prev = head;
	l->next = head->next;
	head->next->prev = l;
	head->next = l;
}

static void qlink_del(struct qlink *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l;
	l->next = l;
}

static struct cache_entry *queue_tail(struct qlink *head)
{
	return container_of(head->prev, struct cache_entry, q);
}

static void queue_move_head(struct qlink *head, struct cache_entry *e)
{
	qlink_del(&e->q);
	qlink_add_head(head, &e->q);
}

static void queue_add(struct cache_shard *s, struct cache_entry *e,
		      enum entry_queue which)
{
	e->queue = which;
	if (which == QUEUE_SMALL) {
		qlink_add_head(&s->small, &e->q);
		s->small_count++;
		s->small_bytes += e->charge;
		if (!e->refs)
			s->evictable_small += e->charge;
	} else {
		qlink_add_head(&s->main, &e->q);
		s->main_count++;
	}
	if (!e->refs)
		s->evictable += e->charge;
}

static void queue_del(struct cache_shard *s, struct cache_entry *e)
{
	if (e->queue == QUEUE_SMALL) {
		s->small_count--;
		s->small_bytes -= e->charge;
		if (!e->refs)
			s->evictable_small -= e->charge;
	} else {
		s->main_count--;
	}
	if (!e->refs)
		s->evictable -= e->charge;
	qlink_del(&e->q);
	e->queue = QUEUE_NONE;
}

/* Pins: an unpinned queued entry is evictable. */

static void entry_pin(struct cache_shard *s, struct cache_entry *e)
{
	if (e->refs++ == 0 && e->queue != QUEUE_NONE) {
		s->evictable -= e->charge;
		if (e->queue == QUEUE_SMALL)
			s->evictable_small -= e->charge;
	}
}

/* Return: true if @e is now unreachable and the caller must free it. */
static bool entry_unpin(struct cache_shard *s, struct cache_entry *e)
{
	if (--e->refs)
		return false;
	if (e->queue != QUEUE_NONE) {
		s->evictable += e->charge;
		if (e->queue == QUEUE_SMALL)
			s->evictable_small += e->charge;
		return false;
	}
	return !e->in_table;
}

static void entry_free(struct cache_entry *e)
{
	free(e->data);
	free(e);
}

/* Free a list of entries chained through hnext, with no lock held. */
static void entry_free_list(struct cache_entry *e)
{
	while (e) {
		struct cache_entry *next = e->hnext;

		entry_free(e);
		e = next;
	}
}

/* Hash table. */

static struct cache_entry *table_find(struct cache_shard *s, uint64_t h,
				      uint64_t key)
{
	struct cache_entry *e = s->buckets[h & (s->nbuckets - 1)];

	while (e && e->key != key)
		e = e->hnext;
	return e;
}

/* Double the buckets; on ENOMEM keep the old ones (longer chains). */
static void table_grow(struct cache_shard *s)
{
	size_t n = s->nbuckets * 2, i;
	struct cache_entry **b;

	if (n > CACHE_MAX_BUCKETS)
		return;
	b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (i = 0; i < s->nbuckets; i++) {
		struct cache_entry *e = s->buckets[i], *next;

		for (; e; e = next) {
			size_t j = mix64(e->key) & (n - 1);

			next = e->hnext;
			e->hnext = b[j];
			b[j] = e;
		}
	}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
}

static void table_insert(struct cache_shard *s, struct cache_entry *e,
			 uint64_t h)
{
	size_t i;

	if (s->nitems >= s->nbuckets)
		table_grow(s);
	i = h & (s->nbuckets - 1);
	e->hnext = s->buckets[i];
	s->buckets[i] = e;
	e->in_table = true;
	s->nitems++;
}

static void table_remove(struct cache_shard *s, struct cache_entry *e)
{
	struct cache_entry **pp =
		&s->buckets[mix64(e->key) & (s->nbuckets - 1)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	e->hnext = NULL;
	e->in_table = false;
	s->nitems--;
}

/* Ghost table: recently evicted keys of S. */

static struct ghost_slot *ghost_set(struct cache_shard *s, uint64_t h)
{
	return &s->ghost[((h >> 24) & s->ghost_mask) * CACHE_GHOST_WAYS];
}

static void ghost_add(struct cache_shard *s, uint64_t h)
{
	struct ghost_slot *set, *victim;
	int i;

	if (!s->ghost)
		return;
	set = ghost_set(s, h);
	victim = &set[0];
	for (i = 0; i < CACHE_GHOST_WAYS; i++) {
		if (set[i].seq && set[i].hash == h) {
			victim = &set[i];
			break;
		}
		if (set[i].seq < victim->seq)
			victim = &set[i];
	}
	victim->hash = h;
	victim->seq = ++s->ghost_seq;
}

/* Return: true if @h was added recently; it is forgotten either way. */
static bool ghost_take(struct cache_shard *s, uint64_t h)
{
	struct ghost_slot *set;
	int i;

	if (!s->ghost)
		return false;
	set = ghost_set(s, h);
	for (i = 0; i < CACHE_GHOST_WAYS; i++) {
		if (set[i].seq && set[i].hash == h) {
			bool recent = s->ghost_seq - set[i].seq <
				      s->ghost_window;

			set[i].seq = 0;
			return recent;
		}
	}
	return false;
}

/* Eviction. */

/* Drop the unpinned entry @e; it is freed from @dead after unlocking. */
static void entry_evict(struct cache *c, struct cache_shard *s,
			struct cache_entry *e, struct cache_entry **dead)
{
	queue_del(s, e);
	table_remove(s, e);
	shard_uncharge(c, s, e->charge);
	e->charge = 0;
	stat_dec(&s->entries);
	stat_inc(&s->evictions);
	e->hnext = *dead;
	*dead = e;
}

/*
 * Look at each entry of S once, from the tail, until one is dropped.
 * Return: true if one was dropped; false if every unpinned entry of S was
 * promoted to M instead.
 */
static bool evict_small(struct cache *c, struct cache_shard *s,
			struct cache_entry **dead)
{
	size_t n = s->small_count;

	while (n--) {
		struct cache_entry *e = queue_tail(&s->small);

		if (e->refs) {
			queue_move_head(&s->small, e);
		} else if (e->freq >= CACHE_PROMOTE_FREQ) {
			queue_del(s, e);
			queue_add(s, e, QUEUE_MAIN);
		} else {
			ghost_add(s, mix64(e->key));
			entry_evict(c, s, e, dead);
			return true;
		}
	}
	return false;
}

/* CLOCK over M.  Return: true if an entry was dropped. */
static bool evict_main(struct cache *c, struct cache_shard *s,
		       struct cache_entry **dead)
{
	size_t n = s->main_count * (CACHE_FREQ_MAX + 2);

	while (n--) {
		struct cache_entry *e = queue_tail(&s->main);

		if (e->refs) {
			queue_move_head(&s->main, e);
		} else if (e->freq) {
			e->freq--;
			queue_move_head(&s->main, e);
		} else {
			entry_evict(c, s, e, dead);
			return true;
		}
	}
	return false;
}

/*
 * Evict until @need bytes are free, from S only when @small_only.
 * Return: true if they are; false if they cannot be (some entries may have
 * been dropped or promoted on the way when @small_only).
 */
static bool make_room(struct cache *c, struct cache_shard *s, size_t need,
		      bool small_only, struct cache_entry **dead)
{
	size_t reach = small_only ? s->evictable_small : s->evictable;

	if (need > s->budget || need > s->budget - s->used + reach)
		return false;
	while (s->budget - s->used < need) {
		bool from_small = s->evictable_small &&
				  (small_only ||
				   s->small_bytes >= s->small_target ||
				   s->evictable == s->evictable_small);

		if (from_small) {
			if (!evict_small(c, s, dead) &&
			    (small_only || s->evictable_small))
				return false;
		} else if (small_only || !s->evictable ||
			   !evict_main(c, s, dead)) {
			return false;
		}
	}
	return true;
}

/* Lookups. */

/*
 * Serve a lookup that found @e.  Called and returns with s->lock held; may
 * wait on it.  Sets *doomed when the caller must free @e after unlocking.
 */
static int serve_found(struct cache_shard *s, struct cache_entry *e,
		       struct cache_entry **out, struct cache_entry **doomed)
{
	bool waited = false;
	int err;

	if (e->state == ENTRY_PENDING) {
		waited = true;
		entry_pin(s, e);
		stat_inc(&s->waits);
		s->nwaiters++;
		do
			pthread_cond_wait(&s->fill_done, &s->lock);
		while (e->state == ENTRY_PENDING);
		s->nwaiters--;
	} else if (e->state == ENTRY_VALID) {
		entry_pin(s, e);
		stat_inc(&s->hits);
	}
	if (e->freq < CACHE_FREQ_MAX)
		e->freq++;
	if (e->state == ENTRY_VALID) {
		*out = e;
		return 0;
	}
	err = e->err;
	if (waited && entry_unpin(s, e))
		*doomed = e;
	return err;
}

/*
 * Insert @e for @key as PENDING and charge it, or make it a bypass entry.
 * Called with s->lock held.  Return: 0, or -ENOSPC (prefill only, @e not
 * inserted).
 */
static int start_fill(struct cache *c, struct cache_shard *s,
		      struct cache_entry *e, uint64_t h, uint64_t key,
		      size_t cap, bool prefill, struct cache_entry **dead)
{
	size_t need;
	bool room;

	memset(e, 0, sizeof(*e));
	e->key = key;
	e->refs = 1;
	e->state = ENTRY_PENDING;
	qlink_init(&e->q);
	room = !ckd_add(&need, sizeof(*e), cap) &&
	       make_room(c, s, need, prefill, dead);
	if (room) {
		shard_charge(c, s, need);
		e->charge = need;
	} else if (prefill) {
		return -ENOSPC;
	} else {
		e->bypass = true;
		stat_inc(&s->bypass);
	}
	if (!prefill)
		stat_inc(&s->misses);
	table_insert(s, e, h);
	return 0;
}

/*
 * Run @fill into a new buffer of @cap bytes, with no lock held.
 * Return: 0 with e->data, e->len and *alloc (bytes kept) set, or an error.
 */
static int run_fill(struct cache_entry *e, size_t cap, cache_fill_fn *fill,
		    void *arg, size_t *alloc)
{
	size_t len = 0;
	void *buf, *p;
	int err;

	buf = malloc(cap ? cap : 1);
	if (!buf)
		return -ENOMEM;
	err = fill(arg, e->key, buf, cap, &len);
	if (!err && len > cap) {
		log_debug("fill of key %llu returned %zu bytes, more than %zu",
			  (unsigned long long)e->key, len, cap);
		err = -EIO;
	}
	if (err) {
		free(buf);
		return err;
	}
	*alloc = cap;
	if (len < cap - cap / 4) {
		p = realloc(buf, len ? len : 1);
		if (p) {
			buf = p;
			*alloc = len;
		}
	}
	e->data = buf;
	e->len = len;
	return 0;
}

/*
 * Publish the result @err of the fill of @e and wake its waiters.  Called
 * with s->lock held; @e is still pinned by the filler.
 */
static void end_fill(struct cache *c, struct cache_shard *s,
		     struct cache_entry *e, uint64_t h, int err, size_t alloc,
		     bool prefill)
{
	size_t keep = sizeof(*e) + alloc;

	if (!err) {
		e->state = ENTRY_VALID;
	} else {
		stat_inc(&s->fill_errors);
		e->err = err;
		e->state = err == -EFSCORRUPTED ? ENTRY_ERROR : ENTRY_EMPTY;
		keep = sizeof(*e);
	}
	if (e->bypass || e->state == ENTRY_EMPTY) {
		/* Not kept: the last unpin frees it. */
		table_remove(s, e);
		shard_uncharge(c, s, e->charge);
		e->charge = 0;
	} else {
		/* Kept: charge what it holds now, queue it. */
		shard_uncharge(c, s, e->charge - keep);
		e->charge = keep;
		if (!err && !prefill && ghost_take(s, h))
			queue_add(s, e, QUEUE_MAIN);
		else
			queue_add(s, e, QUEUE_SMALL);
		stat_inc(&s->entries);
	}
	if (s->nwaiters)
		pthread_cond_broadcast(&s->fill_done);
}

int cache_get(struct cache *c, uint64_t key, size_t cap, cache_fill_fn *fill,
	      void *arg, struct cache_entry **out)
{
	uint64_t h = mix64(key);
	struct cache_shard *s = shard_of(c, h);
	struct cache_entry *e, *fresh = NULL, *dead = NULL;
	size_t alloc = 0;
	int err;

	*out = NULL;
again:
	pthread_mutex_lock(&s->lock);
	e = table_find(s, h, key);
	if (likely(e && e->state == ENTRY_VALID)) {
		entry_pin(s, e);
		if (e->freq < CACHE_FREQ_MAX)
			e->freq++;
		stat_inc(&s->hits);
		pthread_mutex_unlock(&s->lock);
		*out = e;
		return 0;
	}
	if (!e) {
		/* Allocate outside the lock, then look again. */
		pthread_mutex_unlock(&s->lock);
		fresh = malloc(sizeof(*fresh));
		if (!fresh)
			return -ENOMEM;
		pthread_mutex_lock(&s->lock);
		e = table_find(s, h, key);
	}
	if (e) {
		err = serve_found(s, e, out, &dead);
		pthread_mutex_unlock(&s->lock);
		free(fresh);
		entry_free_list(dead);
		/* -EAGAIN: the other caller may not fill it (a warming thread
		 * reads only what is in RAM), which says nothing of this one:
		 * the entry is gone, fill it here. */
		if (err == -EAGAIN) {
			fresh = NULL;
			dead = NULL;
			goto again;
		}
		return err;
	}

	e = fresh;
	start_fill(c, s, e, h, key, cap, false, &dead);
	pthread_mutex_unlock(&s->lock);
	entry_free_list(dead);
	dead = NULL;

	err = run_fill(e, cap, fill, arg, &alloc);

	pthread_mutex_lock(&s->lock);
	end_fill(c, s, e, h, err, alloc, false);
	if (err && entry_unpin(s, e))
		dead = e;
	pthread_mutex_unlock(&s->lock);
	entry_free_list(dead);
	if (err)
		return err;
	*out = e;
	return 0;
}

int cache_prefill(struct cache *c, uint64_t key, size_t cap,
		  cache_fill_fn *fill, void *arg)
{
	uint64_t h = mix64(key);
	struct cache_shard *s = shard_of(c, h);
	struct cache_entry *e, *dead = NULL;
	size_t alloc = 0;
	bool present;
	int err;

	pthread_mutex_lock(&s->lock);
	present = table_find(s, h, key);
	pthread_mutex_unlock(&s->lock);
	if (present)
		return -EEXIST;

	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	if (table_find(s, h, key))
		err = -EEXIST;
	else
		err = start_fill(c, s, e, h, key, cap, true, &dead);
	pthread_mutex_unlock(&s->lock);
	entry_free_list(dead);
	if (err) {
		free(e);
		return err;
	}
	dead = NULL;

	err = run_fill(e, cap, fill, arg, &alloc);

	pthread_mutex_lock(&s->lock);
	end_fill(c, s, e, h, err, alloc, true);
	if (entry_unpin(s, e))
		dead = e;
	pthread_mutex_unlock(&s->lock);
	entry_free_list(dead);
	return err;
}

bool cache_contains(struct cache *c, uint64_t key)
{
	uint64_t h = mix64(key);
	struct cache_shard *s = shard_of(c, h);
	struct cache_entry *e;
	bool ret;

	pthread_mutex_lock(&s->lock);
	e = table_find(s, h, key);
	ret = e && (e->state == ENTRY_VALID || e->state == ENTRY_PENDING);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

const void *cache_entry_data(const struct cache_entry *e)
{
	return e->data;
}

size_t cache_entry_size(const struct cache_entry *e)
{
	return e->len;
}

void cache_put(struct cache *c, struct cache_entry *e)
{
	struct cache_shard *s;
	bool doomed;

	if (!e)
		return;
	s = shard_of(c, mix64(e->key));
	pthread_mutex_lock(&s->lock);
	doomed = entry_unpin(s, e);
	pthread_mutex_unlock(&s->lock);
	if (doomed)
		entry_free(e);
}

void cache_get_stats(struct cache *c, struct cache_stats *out)
{
	unsigned int i;

	memset(out, 0, sizeof(*out));
	out->budget = c->budget;
	out->bytes = atomic_load_explicit(&c->bytes, memory_order_relaxed);
	out->peak_bytes = atomic_load_explicit(&c->peak, memory_order_relaxed);
	for (i = 0; i < c->nshards; i++) {
		struct cache_shard *s = &c->shards[i];

		out->entries +=
			atomic_load_explicit(&s->entries, memory_order_relaxed);
		out->hits +=
			atomic_load_explicit(&s->hits, memory_order_relaxed);
		out->misses +=
			atomic_load_explicit(&s->misses, memory_order_relaxed);
		out->waits +=
			atomic_load_explicit(&s->waits, memory_order_relaxed);
		out->evictions += atomic_load_explicit(&s->evictions,
						       memory_order_relaxed);
		out->bypass +=
			atomic_load_explicit(&s->bypass, memory_order_relaxed);
		out->fill_errors += atomic_load_explicit(&s->fill_errors,
							 memory_order_relaxed);
	}
}

const char *cache_name(const struct cache *c)
{
	return c->name;
}

/* Setup and teardown. */

/* The most shards (a power of two) that each hold 8 max-size entries. */
static unsigned int pick_shards(size_t budget, size_t max_entry)
{
	unsigned int n = 1;
	size_t unit, per;

	if (ckd_add(&unit, max_entry, sizeof(struct cache_entry)) ||
	    ckd_mul(&per, unit, (size_t)CACHE_MIN_PER_SHARD))
		return 1;
	while (n < CACHE_MAX_SHARDS && budget / (n * 2) >= per)
		n *= 2;
	return n;
}

/* Size the ghost table of a shard with @share bytes; it comes out of it. */
static int ghost_init(struct cache_shard *s, size_t share, size_t max_entry)
{
	size_t window = share / (max_entry + sizeof(struct cache_entry));
	size_t sets, bytes;

	if (!window)
		return 0;
	sets = round_up_pow2(DIV_ROUND_UP(window * 2, CACHE_GHOST_WAYS));
	for (;; sets /= 2) {
		if (!sets)
			return 0;
		bytes = sets * CACHE_GHOST_WAYS * sizeof(struct ghost_slot);
		if (bytes <= share / CACHE_GHOST_SHARE)
			break;
	}
	s->ghost = calloc(sets * CACHE_GHOST_WAYS, sizeof(*s->ghost));
	if (!s->ghost)
		return -ENOMEM;
	s->ghost_mask = sets - 1;
	s->ghost_window = window;
	s->budget -= bytes;
	return 0;
}

static int shard_init(struct cache_shard *s, size_t share, size_t max_entry)
{
	pthread_mutexattr_t attr;
	size_t n;
	int err;

	memset(s, 0, sizeof(*s));
	s->budget = share;
	qlink_init(&s->small);
	qlink_init(&s->main);
	err = ghost_init(s, share, max_entry);
	if (err)
		return err;
	s->small_target = s->budget / 100 * CACHE_SMALL_PERCENT;

	n = share / (max_entry + sizeof(struct cache_entry));
	n = round_up_pow2(MAX(n, (size_t)CACHE_MIN_BUCKETS));
	s->nbuckets = MIN(n, CACHE_MAX_BUCKETS);
	s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
	if (!s->buckets)
		goto out_ghost;

	if (pthread_mutexattr_init(&attr))
		goto out_buckets;
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
	/* Critical sections are a few dozen instructions: spin briefly. */
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
	err = pthread_mutex_init(&s->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	if (err)
		goto out_buckets;
	if (pthread_cond_init(&s->fill_done, NULL))
		goto out_mutex;
	return 0;

out_mutex:
	pthread_mutex_destroy(&s->lock);
out_buckets:
	free(s->buckets);
out_ghost:
	free(s->ghost);
	return -ENOMEM;
}

static void shard_release(struct cache_shard *s)
{
	size_t i;

	for (i = 0; i < s->nbuckets; i++) {
		struct cache_entry *e = s->buckets[i], *next;

		for (; e; e = next) {
			next = e->hnext;
			entry_free(e);
		}
	}
	free(s->buckets);
	free(s->ghost);
	pthread_cond_destroy(&s->fill_done);
	pthread_mutex_destroy(&s->lock);
}

struct cache *cache_new(const char *name, size_t budget, size_t max_entry)
{
	struct cache *c;
	unsigned int i;
	size_t share;

	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->name = name;
	c->budget = budget;
	max_entry = MAX(max_entry, (size_t)1);
	c->nshards = pick_shards(budget, max_entry);
	share = budget / c->nshards;
	c->shards = aligned_alloc(CACHE_LINE,
				  c->nshards * sizeof(struct cache_shard));
	if (!c->shards)
		goto out_cache;
	for (i = 0; i < c->nshards; i++) {
		if (shard_init(&c->shards[i], share, max_entry))
			goto out_shards;
	}
	log_debug("cache '%s': budget %zu bytes in %u shards", name, budget,
		  c->nshards);
	return c;

out_shards:
	while (i--)
		shard_release(&c->shards[i]);
	free(c->shards);
out_cache:
	free(c);
	return NULL;
}

void cache_free(struct cache *c)
{
	unsigned int i;

	if (!c)
		return;
	for (i = 0; i < c->nshards; i++)
		shard_release(&c->shards[i]);
	free(c->shards);
	free(c);
}

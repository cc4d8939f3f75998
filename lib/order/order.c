// SPDX-License-Identifier: MIT
/*
 * This file implements the epoch order declared in order.h: the plan of
 * ranges, the threads that read them ahead within the window, and the
 * readers' side that takes bytes from it and drops what they are done
 * with.
 *
 * Everything is under one mutex but the source reads and the copies out
 * of the window.  A range being read (READING) or copied out (pins) keeps
 * its buffer; order_set() waits for those to end before it frees the old
 * plan, and meanwhile nobody starts another (ord->replacing).
 */
#define LOG_MOD "order"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "order/order.h"
#include "util/compiler.h"
#include "util/log.h"

#define ORDER_THREADS_DEFAULT 16u

enum ent_state {
	ENT_EMPTY, /* not read yet */
	ENT_READING, /* a thread or a reader reads it */
	ENT_HELD, /* in the window */
	ENT_DONE, /* dropped, merged into another, or its read failed */
};

/* One range of the plan. */
struct ent {
	uint64_t off; /* in the source */
	uint8_t *buf; /* its bytes once HELD */
	uint64_t served; /* bytes readers took */
	uint32_t len; /* bytes */
	uint32_t first; /* item of its first user */
	uint32_t last; /* item of its last user */
	uint32_t refs; /* users (ranges merged into it, plus one) */
	uint16_t pins; /* copies out of @buf under way */
	uint8_t state; /* enum ent_state */
	bool by_reader; /* a reader read it, not a thread */
};

struct order {
	struct order_src src; /* how to read */
	uint64_t window; /* budget */
	unsigned int nthreads_want; /* threads to start */
	pthread_mutex_t lock; /* everything below */
	pthread_cond_t cond; /* a read or copy ended, room, a new plan, stop */
	struct ent *ents; /* the plan, in order */
	uint32_t *byoff; /* indexes of live ranges, by offset */
	uint64_t *reach; /* reach[i]: the furthest end of byoff[0..i] */
	size_t n; /* entries in @ents */
	size_t nbyoff; /* entries in @byoff */
	size_t next; /* first entry a thread may still read */
	size_t sweep; /* entries before it were passed */
	uint32_t front; /* the latest item readers took bytes of */
	unsigned int busy; /* reads and copies under way */
	bool replacing; /* order_set() waits for @busy to reach 0 */
	uint64_t gen; /* plans set so far: a waiter's entry is gone once it
			 changed */
	/* A plan with ranges is set: without one, order_get() and
	 * order_has() answer without the lock (every read outside the
	 * staged copy asks). */
	atomic_bool active;
	bool stopping; /* order_free() */
	pthread_t threads[ORDER_THREADS_MAX];
	unsigned int nthreads; /* started */
	struct order_stats st; /* counters (window and threads set on read) */
};

int order_new(const struct order_src *src, const struct order_opts *o,
	      struct order **out)
{
	struct order *ord;

	*out = NULL;
	ord = calloc(1, sizeof(*ord));
	if (!ord)
		return -ENOMEM;
	ord->src = *src;
	ord->window = o->window;
	ord->nthreads_want = o->threads ? MIN(o->threads, ORDER_THREADS_MAX) :
					  ORDER_THREADS_DEFAULT;
	pthread_mutex_init(&ord->lock, NULL);
	pthread_cond_init(&ord->cond, NULL);
	*out = ord;
	return 0;
}

/* Free the plan's buffers and arrays.  Context: under the lock, busy 0. */
static void plan_release(struct order *ord)
{
	for (size_t i = 0; i < ord->n; i++)
		free(ord->ents[i].buf);
	free(ord->ents);
	free(ord->byoff);
	free(ord->reach);
	ord->ents = NULL;
	ord->byoff = NULL;
	ord->reach = NULL;
	ord->n = ord->nbyoff = 0;
	ord->next = ord->sweep = 0;
	ord->front = 0;
	ord->st.held = 0;
}

void order_free(struct order *ord)
{
	if (!ord)
		return;
	pthread_mutex_lock(&ord->lock);
	ord->stopping = true;
	pthread_cond_broadcast(&ord->cond);
	pthread_mutex_unlock(&ord->lock);
	for (unsigned int i = 0; i < ord->nthreads; i++)
		pthread_join(ord->threads[i], NULL);
	plan_release(ord);
	pthread_cond_destroy(&ord->cond);
	pthread_mutex_destroy(&ord->lock);
	free(ord);
}

/* Drop @e's bytes.  @unread: no reader took all of them.  Context: under
 * the lock, @e HELD and not pinned. */
static void drop(struct order *ord, struct ent *e, bool unread)
{
	free(e->buf);
	e->buf = NULL;
	e->state = ENT_DONE;
	ord->st.held -= e->len;
	if (unread)
		ord->st.dropped_unread += e->len;
	pthread_cond_broadcast(&ord->cond);
}

/* Has the front passed every user of @e by ORDER_LAG items? */
static bool is_passed(const struct order *ord, const struct ent *e)
{
	return (uint64_t)e->last + ORDER_LAG < ord->front;
}

/*
 * The readers are at item ord->front: drop what they passed.  An entry
 * still being read or copied, or with a user ahead (a range shared by
 * files far apart), is left; it is dropped when its read ends, or once
 * all its users took it.
 */
static void sweep(struct order *ord)
{
	struct ent *e;

	while (ord->sweep < ord->n) {
		e = &ord->ents[ord->sweep];
		if ((uint64_t)e->first + ORDER_LAG >= ord->front)
			break;
		if (e->state == ENT_EMPTY)
			e->state = ENT_DONE; /* nobody will want it now */
		else if (e->state == ENT_HELD && !e->pins && is_passed(ord, e))
			drop(ord, e, true);
		ord->sweep++;
	}
}

/* Have readers taken all of @e, for each of its users? */
static bool is_taken(const struct ent *e)
{
	return e->served >= (uint64_t)e->len * e->refs;
}

/* Readers took bytes of @e: move their place, drop what they are done
 * with.  Context: under the lock. */
static void taken(struct order *ord, struct ent *e, uint64_t amount)
{
	e->served += amount;
	if (e->first > ord->front)
		ord->front = e->first;
	if (is_taken(e)) {
		if (e->state == ENT_EMPTY)
			e->state = ENT_DONE; /* needed by nobody now */
		else if (e->state == ENT_HELD && !e->pins)
			drop(ord, e, false);
	}
	sweep(ord);
}

/* Read @e, which the caller moved to READING and counted in @busy.
 * Context: called and returns under the lock, which it drops meanwhile. */
static void read_ent(struct order *ord, struct ent *e)
{
	uint8_t *buf;
	int err;

	pthread_mutex_unlock(&ord->lock);
	buf = malloc(e->len);
	err = buf ? ord->src.read(ord->src.arg, e->off, buf, e->len) : -ENOMEM;
	pthread_mutex_lock(&ord->lock);
	ord->busy--;
	if (err) {
		free(buf);
		e->state = ENT_DONE;
		ord->st.held -= e->len;
		ord->st.errors++;
		pthread_cond_broadcast(&ord->cond);
		return;
	}
	e->buf = buf;
	e->state = ENT_HELD;
	ord->st.read += e->len;
	if (e->by_reader)
		ord->st.by_readers += e->len;
	if (is_passed(ord, e) || is_taken(e))
		drop(ord, e, true);
	pthread_cond_broadcast(&ord->cond);
}

/* Claim @e for a read.  Context: under the lock, @e EMPTY. */
static void claim(struct order *ord, struct ent *e)
{
	e->state = ENT_READING;
	ord->busy++;
	ord->st.held += e->len;
	ord->st.held_max = MAX(ord->st.held_max, ord->st.held);
}

/* The next entry a thread should read, or NULL to wait. */
static struct ent *next_ent(struct order *ord)
{
	struct ent *e;

	if (ord->replacing)
		return NULL;
	while (ord->next < ord->n && ord->ents[ord->next].state != ENT_EMPTY)
		ord->next++;
	if (ord->next == ord->n)
		return NULL;
	e = &ord->ents[ord->next];
	/* Within the window; a range larger than it goes alone. */
	if (ord->st.held && ord->st.held + e->len > ord->window)
		return NULL;
	return e;
}

static void *thread_main(void *arg)
{
	struct order *ord = arg;
	struct ent *e;

	pthread_mutex_lock(&ord->lock);
	while (!ord->stopping) {
		e = next_ent(ord);
		if (!e) {
			pthread_cond_wait(&ord->cond, &ord->lock);
			continue;
		}
		claim(ord, e);
		ord->next++;
		read_ent(ord, e);
	}
	pthread_mutex_unlock(&ord->lock);
	return NULL;
}

static int start_threads(struct order *ord)
{
	int err;

	while (ord->nthreads < ord->nthreads_want) {
		err = -pthread_create(&ord->threads[ord->nthreads], NULL,
				      thread_main, ord);
		if (err)
			return ord->nthreads ? 0 : err;
		ord->nthreads++;
	}
	return 0;
}

/* A range as sorted by offset. */
struct key {
	uint64_t off;
	uint32_t len;
	uint32_t idx; /* its entry */
};

/* qsort() by offset, length, then position in the plan. */
static int by_off(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Index @ents by offset into @byoff, merging ranges equal in offset and
 * length into the first of them.  Return: live entries; -ENOMEM. */
static ssize_t index_ents(struct ent *ents, uint32_t *byoff, size_t n)
{
	struct key *k = malloc((n ? n : 1) * sizeof(*k));
	size_t live = 0;

	if (!k)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		k[i] = (struct key){ ents[i].off, ents[i].len, (uint32_t)i };
	qsort(k, n, sizeof(*k), by_off);
	for (size_t i = 0; i < n; i++) {
		struct ent *e = &ents[k[i].idx], *keep;

		keep = live ? &ents[byoff[live - 1]] : NULL;
		if (keep && keep->off == e->off && keep->len == e->len) {
			keep->refs++;
			keep->last = MAX(keep->last, e->last);
			e->state = ENT_DONE;
			continue;
		}
		byoff[live++] = k[i].idx;
	}
	free(k);
	return (ssize_t)live;
}

/* Check @r and turn it into a plan.  Return: 0; -EINVAL; -ENOMEM. */
static int build(const struct order_range *r, size_t n, struct ent **ents_out,
		 uint32_t **byoff_out, size_t *live)
{
	struct ent *ents;
	uint32_t *byoff;
	ssize_t got;

	if (n > UINT32_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!r[i].len || r[i].len > ORDER_RANGE_MAX ||
		    r[i].off > UINT64_MAX - r[i].len ||
		    (i && r[i].item < r[i - 1].item))
			return -EINVAL;
	ents = calloc(n ? n : 1, sizeof(*ents));
	byoff = calloc(n ? n : 1, sizeof(*byoff));
	if (!ents || !byoff) {
		free(ents);
		free(byoff);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		ents[i].off = r[i].off;
		ents[i].len = r[i].len;
		ents[i].first = ents[i].last = r[i].item;
		ents[i].refs = 1;
	}
	got = index_ents(ents, byoff, n);
	if (got < 0) {
		free(ents);
		free(byoff);
		return (int)got;
	}
	*live = (size_t)got;
	*ents_out = ents;
	*byoff_out = byoff;
	return 0;
}

int order_set(struct order *ord, struct order_range *r, size_t n,
	      uint64_t items)
{
	struct ent *ents = NULL, *e;
	uint32_t *byoff = NULL;
	uint64_t planned = 0, *reach;
	size_t live = 0;
	int err;

	if (!ord->window) {
		free(r);
		return -EOPNOTSUPP;
	}
	err = build(r, n, &ents, &byoff, &live);
	free(r);
	if (err)
		return err;
	reach = malloc((live ? live : 1) * sizeof(*reach));
	if (!reach) {
		free(ents);
		free(byoff);
		return -ENOMEM;
	}
	for (size_t i = 0; i < live; i++) {
		e = &ents[byoff[i]];
		planned += e->len;
		reach[i] = MAX(i ? reach[i - 1] : 0, e->off + e->len);
	}
	pthread_mutex_lock(&ord->lock);
	ord->replacing = true;
	while (ord->busy)
		pthread_cond_wait(&ord->cond, &ord->lock);
	plan_release(ord);
	ord->ents = ents;
	ord->byoff = byoff;
	ord->reach = reach;
	ord->n = n;
	ord->nbyoff = live;
	ord->replacing = false;
	ord->gen++;
	atomic_store_explicit(&ord->active, live > 0, memory_order_relaxed);
	ord->st.orders++;
	ord->st.items = items;
	ord->st.ranges = live;
	ord->st.planned = planned;
	ord->st.read = ord->st.served = ord->st.hits = ord->st.waits = 0;
	ord->st.by_readers = ord->st.dropped_unread = 0;
	err = n ? start_threads(ord) : 0;
	pthread_cond_broadcast(&ord->cond);
	pthread_mutex_unlock(&ord->lock);
	return err;
}

/* Is @e still to be read or held (not dropped, merged or failed)? */
static bool is_live(const struct ent *e)
{
	return e->state != ENT_DONE;
}

/* Is @a a better answer than @b for a read?  A live range over one
 * dropped; of two live ones, the one whose first user comes first (the
 * readers go in order, so it is the one they are at). */
static bool better(const struct ent *a, const struct ent *b)
{
	if (!b)
		return true;
	if (is_live(a) != is_live(b))
		return is_live(a);
	return a->first < b->first;
}

/*
 * The entry holding [@off, @off + @len), or NULL; a live one if any does.
 * Ranges may overlap (blocks that files share without being equal: the
 * same start, one inside another, a long one before a short one), so
 * every range starting at or before @off that reaches @off + @len is a
 * candidate: they are those before the last one starting at or before
 * @off, back to where ord->reach says none before reaches that far.
 * Context: under the lock.
 */
static struct ent *find(struct order *ord, uint64_t off, size_t len)
{
	size_t lo = 0, hi = ord->nbyoff;
	struct ent *e, *best = NULL;
	uint64_t end;

	if (len > UINT64_MAX - off)
		return NULL;
	end = off + len;
	/* Past the last entry starting at or before @off. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ord->ents[ord->byoff[mid]].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo > 0 && ord->reach[lo - 1] >= end) {
		e = &ord->ents[ord->byoff[--lo]];
		if (e->off + e->len >= end && better(e, best))
			best = e;
	}
	return best;
}

bool order_has(struct order *ord, uint64_t off, size_t len)
{
	struct ent *e;
	bool has;

	if (!ord || !atomic_load_explicit(&ord->active, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&ord->lock);
	e = ord->replacing ? NULL : find(ord, off, len);
	has = e && is_live(e);
	pthread_mutex_unlock(&ord->lock);
	return has;
}

/* Wait until @e is read or can be read here; read it if so.  Return: true
 * if it is HELD.  Context: under the lock. */
static bool get_held(struct order *ord, struct ent *e)
{
	uint64_t gen = ord->gen;
	bool waited = false;

	/* A waiter is not counted in @busy: once the plan changed, @e is
	 * freed or about to be. */
	while (!ord->replacing && ord->gen == gen && e->state == ENT_READING) {
		waited = true;
		pthread_cond_wait(&ord->cond, &ord->lock);
	}
	if (ord->replacing || ord->gen != gen)
		return false;
	if (e->state == ENT_EMPTY) {
		claim(ord, e);
		e->by_reader = true;
		read_ent(ord, e);
	}
	if (e->state != ENT_HELD)
		return false;
	ord->st.waits += waited;
	return true;
}

int order_get(struct order *ord, uint64_t off, size_t len, void *dst)
{
	struct ent *e;

	if (!ord || !len ||
	    !atomic_load_explicit(&ord->active, memory_order_relaxed))
		return -ENODATA;
	pthread_mutex_lock(&ord->lock);
	e = ord->replacing ? NULL : find(ord, off, len);
	if (!e || !get_held(ord, e)) {
		pthread_mutex_unlock(&ord->lock);
		return -ENODATA;
	}
	e->pins++;
	ord->busy++;
	pthread_mutex_unlock(&ord->lock);

	memcpy(dst, e->buf + (off - e->off), len);

	pthread_mutex_lock(&ord->lock);
	e->pins--;
	ord->busy--;
	ord->st.served += len;
	ord->st.hits++;
	taken(ord, e, len);
	pthread_cond_broadcast(&ord->cond);
	pthread_mutex_unlock(&ord->lock);
	return 0;
}

void order_skip(struct order *ord, uint64_t off, size_t len, uint64_t amount)
{
	struct ent *e;

	if (!ord || !len ||
	    !atomic_load_explicit(&ord->active, memory_order_relaxed))
		return;
	pthread_mutex_lock(&ord->lock);
	e = ord->replacing ? NULL : find(ord, off, len);
	if (e && is_live(e)) {
		ord->st.skipped += amount;
		taken(ord, e, amount);
	}
	pthread_mutex_unlock(&ord->lock);
}

void order_get_stats(struct order *ord, struct order_stats *out)
{
	pthread_mutex_lock(&ord->lock);
	*out = ord->st;
	out->window = ord->window;
	out->threads = ord->nthreads;
	pthread_mutex_unlock(&ord->lock);
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the epoch order declared in order.h: the clients'
 * orders, the one plan of ranges they share, the threads that read ranges
 * ahead within the window, and the readers' side that takes bytes from it
 * and drops what every client is done with.
 *
 * Design:
 * - A struct ent is a range of the source, one per distinct offset and
 *   length of all orders.  A struct cref is one client's use of an ent: a
 *   client's order is an array of them, in its order.  A cref is done once
 *   its client's readers took the range whole, or went ORDER_LAG files
 *   past it; an ent is wanted while one of its crefs is not done, and
 *   dropped (or never read) once none is.
 * - The crefs of an ent that are not done hang from it in groups, one per
 *   client, each in its client's order (ent->users, then next_group from
 *   each group's first, next_same within a group).  A compressed fragment
 *   block may serve thousands of small files, but it is shared by a few
 *   clients at most: who took bytes is found among the groups' firsts,
 *   and a cref that is done is a group's first (its client's readers go in
 *   order), taken off in a step.
 * - The index (byoff, reach) lists every ent of every order by offset, for
 *   the readers.  order_set() builds the new one outside the lock and
 *   swaps it in under it.
 * - Locks: set_lock makes order_set() calls one at a time.  Only they add
 *   or remove ents, crefs, clients and index arrays, so under set_lock
 *   alone they may read those (the offsets and lengths, which never
 *   change, and the counts of users), and they take the lock to change
 *   them.  The lock guards everything else: states, buffers, pins,
 *   places, counters.  Source reads and copies out of the window run
 *   without either.
 * - An ent that no order needs any more is left out of the new index;
 *   order_set() then waits for the read and the copies of it under way
 *   (READING, pins) and frees it.  A reader pins the ent it found while it
 *   waits for a read or copies, so nothing it holds is freed under it.
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

/* ent->scratch, order_set()'s own (set_lock): the low bits count the old
 * crefs of the client being replaced; the flags say what it found. */
#define SCRATCH_KEPT (1u << 31) /* the new order needs it too */
#define SCRATCH_DYING (1u << 30) /* on the list of ents to free */
#define SCRATCH_COUNT (SCRATCH_DYING - 1)

enum ent_state {
	ENT_EMPTY, /* not read yet */
	ENT_READING, /* a thread or a reader reads it */
	ENT_HELD, /* in the window */
	ENT_DONE, /* dropped, never to be read, or its read failed */
};

struct client;
struct cref;

/* A range of the source that orders need. */
struct ent {
	uint64_t off; /* in the source; never changes */
	uint8_t *buf; /* its bytes once HELD */
	struct cref *users; /* its crefs not done: the first group */
	struct client *charged; /* the client a thread read it for (counted
				   in that client's ahead), or NULL */
	uint32_t len; /* bytes; never changes */
	uint32_t nusers; /* crefs on @users */
	uint32_t ndone; /* of those, done */
	uint32_t pins; /* copies out of @buf and readers waiting on it */
	uint32_t scratch; /* order_set()'s, under set_lock */
	uint8_t state; /* enum ent_state */
	bool by_reader; /* a reader read it, not a thread */
	bool taken_any; /* readers took some of its bytes */
};

/* A client's use of a range: one file of its order needs it. */
struct cref {
	struct ent *e; /* the range */
	struct cref *next_group; /* on a group's first: the next group */
	struct cref *next_same; /* the client's next cref of the range */
	struct client *cl; /* whose */
	uint32_t item; /* which file of the client's order */
	uint32_t taken; /* bytes of it the client's readers took */
	bool done; /* taken whole, or passed */
};

/* A client and its order. */
struct client {
	uint64_t key; /* the owner's */
	struct cref *refs; /* its order */
	size_t n; /* crefs in @refs */
	size_t next; /* first cref a thread may still read for it */
	size_t sweep; /* crefs before it were passed */
	uint32_t front; /* the latest file its readers took bytes of */
	bool started; /* @front is set */
	uint64_t items; /* files in its order */
	uint64_t ranges; /* distinct ranges of it */
	uint64_t planned; /* their bytes */
	uint64_t taken; /* bytes its readers took */
	uint64_t ahead; /* bytes of ents charged to it, not dropped */
	uint64_t orders; /* orders it gave */
	uint64_t plans; /* bytes its list takes (crefs and this struct) */
};

/* What the plans cost in memory. */
#define ENT_COST (sizeof(struct ent) + sizeof(struct ent *) + sizeof(uint64_t))
#define CREF_COST (sizeof(struct cref))
#define CLIENT_COST (sizeof(struct client))

struct order {
	struct order_src src; /* how to read */
	uint64_t window; /* budget of the window */
	uint64_t plans_budget; /* budget of the plans, 0: none */
	unsigned int clients_max; /* room in @clients */
	unsigned int nthreads_want; /* threads to start */
	pthread_mutex_t set_lock; /* order_set(): one at a time */
	pthread_mutex_t lock; /* everything below */
	pthread_cond_t cond; /* a read or copy ended, room, a new plan, stop */
	struct ent **byoff; /* every ent of every order, by offset, length */
	uint64_t *reach; /* reach[i]: the furthest end of byoff[0..i] */
	size_t nbyoff; /* entries in @byoff */
	struct client **clients; /* the clients, in the order they came */
	size_t nclients; /* how many */
	/* An order with ranges is set: without one, order_get() and
	 * order_has() answer without the lock (every read outside the
	 * staged copy asks). */
	atomic_bool active;
	bool stopping; /* order_free() */
	pthread_t threads[ORDER_THREADS_MAX];
	unsigned int nthreads; /* started */
	struct order_stats st; /* counters (window, threads set on read) */
};

int order_new(const struct order_src *src, const struct order_opts *o,
	      struct order **out)
{
	struct order *ord;

	*out = NULL;
	ord = calloc(1, sizeof(*ord));
	if (!ord)
		return -ENOMEM;
	ord->clients_max = o->clients ? MIN(o->clients, ORDER_CLIENTS_MAX) :
					ORDER_CLIENTS_MAX;
	ord->clients = calloc(ord->clients_max, sizeof(*ord->clients));
	if (!ord->clients) {
		free(ord);
		return -ENOMEM;
	}
	ord->src = *src;
	ord->window = o->window;
	ord->plans_budget = o->plans;
	ord->nthreads_want = o->threads ? MIN(o->threads, ORDER_THREADS_MAX) :
					  ORDER_THREADS_DEFAULT;
	pthread_mutex_init(&ord->set_lock, NULL);
	pthread_mutex_init(&ord->lock, NULL);
	pthread_cond_init(&ord->cond, NULL);
	*out = ord;
	return 0;
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
	/* Every ent with a user is in the index; no other is left. */
	for (size_t i = 0; i < ord->nbyoff; i++) {
		free(ord->byoff[i]->buf);
		free(ord->byoff[i]);
	}
	for (size_t i = 0; i < ord->nclients; i++) {
		free(ord->clients[i]->refs);
		free(ord->clients[i]);
	}
	free(ord->byoff);
	free(ord->reach);
	free(ord->clients);
	pthread_cond_destroy(&ord->cond);
	pthread_mutex_destroy(&ord->lock);
	pthread_mutex_destroy(&ord->set_lock);
	free(ord);
}

/* Does a client still need @e? */
static bool is_wanted(const struct ent *e)
{
	return e->ndone < e->nusers;
}

/* @e no longer counts in its client's share of the window. */
static void discharge(struct ent *e)
{
	if (e->charged) {
		e->charged->ahead -= e->len;
		e->charged = NULL;
	}
}

/* Drop @e's bytes.  Context: under the lock, @e HELD and not pinned. */
static void drop(struct order *ord, struct ent *e)
{
	free(e->buf);
	e->buf = NULL;
	e->state = ENT_DONE;
	ord->st.held -= e->len;
	if (!e->taken_any)
		ord->st.dropped_unread += e->len;
	discharge(e);
	pthread_cond_broadcast(&ord->cond);
}

/* Drop @e, or mark it never to be read, once no client needs it and
 * nobody copies from it.  Context: under the lock. */
static void settle(struct order *ord, struct ent *e)
{
	if (is_wanted(e) || e->pins)
		return;
	if (e->state == ENT_HELD)
		drop(ord, e);
	else if (e->state == ENT_EMPTY)
		e->state = ENT_DONE;
}

/* Take @c off its ent's groups.  It is its group's first but for a
 * client whose readers skipped back, whose group is walked. */
static void unlink_cref(struct cref *c)
{
	struct cref **p = &c->e->users, **q;

	while ((*p)->cl != c->cl)
		p = &(*p)->next_group;
	if (*p == c) {
		if (c->next_same) {
			c->next_same->next_group = c->next_group;
			*p = c->next_same;
		} else {
			*p = c->next_group;
		}
		return;
	}
	for (q = &(*p)->next_same; *q != c; q = &(*q)->next_same)
		;
	*q = c->next_same;
}

/* @c's client is done with its range. */
static void cref_done(struct order *ord, struct cref *c)
{
	if (c->done)
		return;
	c->done = true;
	unlink_cref(c);
	c->e->ndone++;
	settle(ord, c->e);
}

/* The readers of @cl are at cl->front: what they passed by ORDER_LAG
 * files they will not read from here (a file read from the page cache
 * never asks). */
static void sweep(struct order *ord, struct client *cl)
{
	struct cref *c;

	while (cl->sweep < cl->n) {
		c = &cl->refs[cl->sweep];
		if ((uint64_t)c->item + ORDER_LAG >= cl->front)
			break;
		cref_done(ord, c);
		cl->sweep++;
	}
}

/* How many files lie between @c and its client's readers, either way; a
 * client whose readers took nothing yet is taken to be before its first
 * file, so that of two users at the same file, one whose readers are known
 * to be there is the nearer. */
static uint32_t distance(const struct cref *c)
{
	uint64_t f = c->cl->started ? c->cl->front : 0, i = c->item;

	if (!c->cl->started)
		i++;
	return (uint32_t)MIN(i >= f ? i - f : f - i, (uint64_t)UINT32_MAX);
}

/* How many files @c is ahead of its client's readers (0: behind). */
static uint32_t ahead_of(const struct cref *c)
{
	uint32_t f = c->cl->front;

	return c->item > f ? c->item - f : 0;
}

/* The user of @e that bytes readers take count for: of each client's
 * first not done, the one whose client's readers are nearest, or NULL. */
static struct cref *nearest_user(const struct ent *e)
{
	struct cref *best = NULL;

	for (struct cref *c = e->users; c; c = c->next_group)
		if (!best || distance(c) < distance(best))
			best = c;
	return best;
}

/* Are all the users of @e that are not done @cl's? */
static bool is_sole_client(const struct ent *e, const struct client *cl)
{
	return e->users && e->users->cl == cl && !e->users->next_group;
}

/*
 * Readers took @amount bytes of @e: move their client's place, drop what
 * every client is done with.  Which client read it is not known (FUSE
 * names a thread, and a DataLoader's workers are processes of their own),
 * so it counts for the user whose client's readers are nearest.  A range
 * that clients share moves a client's place only within ORDER_LAG files
 * of it: counted for the wrong one, it must not make that client pass
 * its own ranges.  Context: under the lock.
 */
static void taken(struct order *ord, struct ent *e, uint64_t amount)
{
	struct cref *c = nearest_user(e);
	struct client *cl;

	e->taken_any = true;
	if (!c)
		return;
	cl = c->cl;
	c->taken = (uint32_t)MIN((uint64_t)e->len, c->taken + amount);
	cl->taken += amount;
	if ((!cl->started || c->item > cl->front) &&
	    (distance(c) <= ORDER_LAG || is_sole_client(e, cl))) {
		cl->front = c->item;
		cl->started = true;
	}
	if (c->taken >= e->len)
		cref_done(ord, c);
	sweep(ord, cl);
}

/* Read @e, which the caller claimed.  Context: called and returns under
 * the lock, which it drops meanwhile; @e is not freed meanwhile (READING). */
static void read_ent(struct order *ord, struct ent *e)
{
	uint8_t *buf;
	int err;

	pthread_mutex_unlock(&ord->lock);
	buf = malloc(e->len);
	err = buf ? ord->src.read(ord->src.arg, e->off, buf, e->len) : -ENOMEM;
	pthread_mutex_lock(&ord->lock);
	if (err) {
		free(buf);
		e->state = ENT_DONE;
		ord->st.held -= e->len;
		ord->st.errors++;
		discharge(e);
		pthread_cond_broadcast(&ord->cond);
		return;
	}
	e->buf = buf;
	e->state = ENT_HELD;
	ord->st.read += e->len;
	if (e->by_reader)
		ord->st.by_readers += e->len;
	settle(ord, e); /* its users left, or passed it, meanwhile */
	pthread_cond_broadcast(&ord->cond);
}

/* Claim @e for a read, for client @cl (a thread's) or a reader (NULL).
 * Context: under the lock, @e EMPTY. */
static void claim(struct order *ord, struct ent *e, struct client *cl)
{
	e->state = ENT_READING;
	e->by_reader = !cl;
	e->charged = cl;
	if (cl)
		cl->ahead += e->len;
	ord->st.held += e->len;
	ord->st.held_max = MAX(ord->st.held_max, ord->st.held);
}

/*
 * The range a thread should read next, or NULL to wait: of each client's
 * next range still to read, the one fewest files ahead of its client's
 * readers, among the clients within their share of the window (the
 * window over the clients with ranges to read or held; a client with
 * nothing held may always read one range).  Context: under the lock.
 */
static struct cref *next_cref(struct order *ord)
{
	struct cref *best = NULL, *c;
	struct client *cl;
	size_t active = 0;
	uint64_t share;

	for (size_t i = 0; i < ord->nclients; i++) {
		cl = ord->clients[i];
		while (cl->next < cl->n &&
		       (cl->refs[cl->next].done ||
			cl->refs[cl->next].e->state != ENT_EMPTY))
			cl->next++;
		if (cl->next < cl->n || cl->ahead)
			active++;
	}
	share = ord->window / MAX(active, 1);
	for (size_t i = 0; i < ord->nclients; i++) {
		cl = ord->clients[i];
		if (cl->next == cl->n)
			continue;
		c = &cl->refs[cl->next];
		if (cl->ahead && cl->ahead + c->e->len > share)
			continue;
		if (!best || ahead_of(c) < ahead_of(best) ||
		    (ahead_of(c) == ahead_of(best) &&
		     cl->ahead < best->cl->ahead))
			best = c;
	}
	/* Within the window; a range larger than it goes alone. */
	if (!best ||
	    (ord->st.held && ord->st.held + best->e->len > ord->window))
		return NULL;
	return best;
}

static void *thread_main(void *arg)
{
	struct order *ord = arg;
	struct cref *c;
	struct ent *e;

	pthread_mutex_lock(&ord->lock);
	while (!ord->stopping) {
		c = next_cref(ord);
		if (!c) {
			pthread_cond_wait(&ord->cond, &ord->lock);
			continue;
		}
		e = c->e;
		claim(ord, e, c->cl);
		c->cl->next++;
		read_ent(ord, e);
	}
	pthread_mutex_unlock(&ord->lock);
	return NULL;
}

/* Context: under the lock. */
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

/* Order two ranges by offset, then length. */
static int cmp_range(uint64_t aoff, uint32_t alen, uint64_t boff, uint32_t blen)
{
	if (aoff != boff)
		return aoff < boff ? -1 : 1;
	return alen < blen ? -1 : alen > blen;
}

/* A range of a new order as sorted by offset. */
struct key {
	uint64_t off;
	uint32_t len;
	uint32_t idx; /* its place in the order */
};

/* qsort() by offset, length, then place in the order. */
static int by_off(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	int c = cmp_range(x->off, x->len, y->off, y->len);

	return c ? c : x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The ent of @v (sorted, @n of them) with this offset and length, or
 * NULL. */
static struct ent *lookup(struct ent **v, size_t n, uint64_t off, uint32_t len)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_range(v[mid]->off, v[mid]->len, off, len);

		if (!c)
			return v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Check @r: lengths, ends, items in order.  Return: 0 or -EINVAL. */
static int check(const struct order_range *r, size_t n)
{
	if (n > UINT32_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!r[i].len || r[i].len > ORDER_RANGE_MAX ||
		    r[i].off > UINT64_MAX - r[i].len ||
		    (i && r[i].item < r[i - 1].item))
			return -EINVAL;
	return 0;
}

/* An order_set() being carried out: what prepare() found and built. */
struct change {
	struct client *cl; /* the client: found, or made (@made) */
	bool made; /* @cl is new, not in ord->clients */
	struct client *gone; /* @cl once cleared and taken out: to free */
	size_t at; /* its place in ord->clients when found */
	struct cref *refs; /* its new order (NULL to clear it) */
	size_t n; /* crefs in @refs */
	uint64_t items; /* files in it */
	uint64_t ranges; /* its distinct ranges */
	uint64_t planned; /* their bytes */
	struct ent **fresh; /* ents it adds, by offset */
	size_t nfresh; /* how many */
	struct ent **dying; /* ents no order needs after it */
	size_t ndying; /* how many */
	struct ent **byoff; /* the new index */
	uint64_t *reach; /* its reach */
	size_t nbyoff; /* its entries */
	uint64_t all_planned; /* the bytes of every ent in it */
	uint64_t plans; /* what all plans take after it */
};

/* Free what @ch still owns: its fresh ents and the new index if it was not
 * swapped in (after a failure), the old lists and index after it was. */
static void change_release(struct change *ch)
{
	if (ch->fresh)
		for (size_t i = 0; i < ch->nfresh; i++)
			free(ch->fresh[i]);
	if (ch->made)
		free(ch->cl);
	if (ch->gone)
		free(ch->gone->refs);
	free(ch->gone);
	free(ch->refs);
	free(ch->fresh);
	free(ch->dying);
	free(ch->byoff);
	free(ch->reach);
}

/* The ents a new order of @n ranges @r needs: found in the index, or made
 * (ch->fresh, by offset).  Context: set_lock. */
static int map_ranges(struct order *ord, const struct order_range *r, size_t n,
		      struct change *ch)
{
	struct key *k = malloc((n ? n : 1) * sizeof(*k));
	struct ent *e = NULL;

	ch->refs = calloc(n ? n : 1, sizeof(*ch->refs));
	ch->fresh = calloc(n ? n : 1, sizeof(*ch->fresh));
	if (!k || !ch->refs || !ch->fresh) {
		free(k);
		return -ENOMEM;
	}
	ch->n = n;
	for (size_t i = 0; i < n; i++)
		k[i] = (struct key){ r[i].off, r[i].len, (uint32_t)i };
	qsort(k, n, sizeof(*k), by_off);
	for (size_t i = 0; i < n; i++) {
		if (!i || cmp_range(k[i].off, k[i].len, e->off, e->len)) {
			e = lookup(ord->byoff, ord->nbyoff, k[i].off, k[i].len);
			if (e) {
				e->scratch |= SCRATCH_KEPT;
			} else {
				e = calloc(1, sizeof(*e));
				if (!e) {
					free(k);
					return -ENOMEM;
				}
				e->off = k[i].off;
				e->len = k[i].len;
				ch->fresh[ch->nfresh++] = e;
			}
			ch->ranges++;
			ch->planned += e->len;
		}
		ch->refs[k[i].idx] =
			(struct cref){ .e = e, .item = r[k[i].idx].item };
	}
	free(k);
	return 0;
}

/* The ents of the client's old order that no order needs after the new
 * one: all their users are old crefs of the client, and the new order
 * does not have them.  Context: set_lock. */
static int find_dying(struct change *ch)
{
	struct client *cl = ch->made ? NULL : ch->cl;
	struct ent *e;

	if (!cl)
		return 0;
	ch->dying = calloc(cl->n ? cl->n : 1, sizeof(*ch->dying));
	if (!ch->dying)
		return -ENOMEM;
	for (size_t i = 0; i < cl->n; i++)
		if (!(cl->refs[i].e->scratch & SCRATCH_KEPT))
			cl->refs[i].e->scratch++;
	for (size_t i = 0; i < cl->n; i++) {
		e = cl->refs[i].e;
		if (!(e->scratch & (SCRATCH_KEPT | SCRATCH_DYING)) &&
		    (e->scratch & SCRATCH_COUNT) == e->nusers) {
			e->scratch |= SCRATCH_DYING;
			ch->dying[ch->ndying++] = e;
		}
	}
	return 0;
}

/* The index after the change: the old one but the dying ents, merged
 * with the fresh ones.  Context: set_lock. */
static int build_index(struct order *ord, struct change *ch)
{
	size_t cap = ord->nbyoff + ch->nfresh, i = 0, j = 0, n = 0;
	struct ent *e;

	ch->byoff = malloc((cap ? cap : 1) * sizeof(*ch->byoff));
	ch->reach = malloc((cap ? cap : 1) * sizeof(*ch->reach));
	if (!ch->byoff || !ch->reach)
		return -ENOMEM;
	while (i < ord->nbyoff || j < ch->nfresh) {
		if (j == ch->nfresh ||
		    (i < ord->nbyoff &&
		     cmp_range(ord->byoff[i]->off, ord->byoff[i]->len,
			       ch->fresh[j]->off, ch->fresh[j]->len) < 0))
			e = ord->byoff[i++];
		else
			e = ch->fresh[j++];
		if (e->scratch & SCRATCH_DYING)
			continue;
		ch->byoff[n] = e;
		ch->reach[n] = MAX(n ? ch->reach[n - 1] : 0, e->off + e->len);
		ch->all_planned += e->len;
		n++;
	}
	ch->nbyoff = n;
	return 0;
}

/* Forget what map_ranges() and find_dying() marked (also after they
 * failed half way).  Context: set_lock. */
static void clear_scratch(struct change *ch)
{
	for (size_t i = 0; ch->refs && i < ch->n; i++)
		if (ch->refs[i].e)
			ch->refs[i].e->scratch = 0;
	if (!ch->made)
		for (size_t i = 0; i < ch->cl->n; i++)
			ch->cl->refs[i].e->scratch = 0;
}

/* The client of @key, its place in *@at; NULL if none.  Context: set_lock
 * or the lock. */
static struct client *find_client(struct order *ord, uint64_t key, size_t *at)
{
	for (size_t i = 0; i < ord->nclients; i++) {
		if (ord->clients[i]->key == key) {
			*at = i;
			return ord->clients[i];
		}
	}
	return NULL;
}

/*
 * Work out a client's new order without the lock: its crefs, the ents it
 * adds, those that go, the new index, the cost against the budget.
 * Return: 0; -EUSERS; -ENOSPC; -ENOMEM.  Context: set_lock.
 */
static int prepare(struct order *ord, uint64_t key, const struct order_range *r,
		   size_t n, uint64_t items, struct change *ch)
{
	uint64_t plans;
	int err;

	ch->cl = find_client(ord, key, &ch->at);
	if (!ch->cl) {
		if (ord->nclients >= ord->clients_max)
			return -EUSERS;
		ch->cl = calloc(1, sizeof(*ch->cl));
		if (!ch->cl)
			return -ENOMEM;
		ch->cl->key = key;
		ch->made = true;
	}
	ch->items = items;
	err = map_ranges(ord, r, n, ch);
	if (!err)
		err = find_dying(ch);
	if (!err)
		err = build_index(ord, ch);
	clear_scratch(ch);
	if (err)
		return err;
	plans = ord->st.plans - (ch->made ? 0 : ch->cl->plans);
	plans += n ? n * CREF_COST + CLIENT_COST : 0;
	plans += ch->nfresh * ENT_COST;
	plans -= ch->ndying * ENT_COST;
	if (n && ord->plans_budget && plans > ord->plans_budget)
		return -ENOSPC;
	ch->plans = plans;
	return 0;
}

/* Take the client's old crefs off their ents: its group on each (the
 * crefs not done).  Context: under the lock and set_lock (scratch). */
static void detach(struct client *cl)
{
	struct cref **p;

	for (size_t i = 0; i < cl->n; i++) {
		struct cref *c = &cl->refs[i];
		struct ent *e = c->e;

		e->nusers--;
		if (c->done)
			e->ndone--;
		if (e->scratch)
			continue; /* its group is off already */
		e->scratch = 1;
		for (p = &e->users; *p && (*p)->cl != cl; p = &(*p)->next_group)
			;
		if (*p)
			*p = (*p)->next_group;
	}
	for (size_t i = 0; i < cl->n; i++)
		cl->refs[i].e->scratch = 0;
}

/* Put @cl's new crefs @refs (@n, in its order) on their ents: a group on
 * each, in that order.  Context: under the lock and set_lock (scratch). */
static void attach(struct client *cl, struct cref *refs, size_t n)
{
	for (size_t i = n; i-- > 0;) {
		struct cref *c = &refs[i];
		struct ent *e = c->e;

		c->cl = cl;
		e->nusers++;
		if (!e->scratch) {
			/* The last of the client's crefs of @e: a new group. */
			e->scratch = 1;
			c->next_same = NULL;
			c->next_group = e->users;
		} else {
			/* Before the group's first, which is e->users. */
			c->next_same = e->users;
			c->next_group = e->users->next_group;
		}
		e->users = c;
		if (e->state == ENT_DONE) {
			e->state = ENT_EMPTY; /* wanted again */
			e->taken_any = false;
		}
	}
	for (size_t i = 0; i < n; i++)
		refs[i].e->scratch = 0;
}

/* Does @cl need @e?  Context: under the lock. */
static bool is_user(const struct ent *e, const struct client *cl)
{
	for (const struct cref *c = e->users; c; c = c->next_group)
		if (c->cl == cl)
			return true;
	return false;
}

/* Put the new index in, the old one into @ch.  Context: under the lock. */
static void swap_index(struct order *ord, struct change *ch)
{
	struct ent **byoff = ord->byoff;
	uint64_t *reach = ord->reach;

	ord->byoff = ch->byoff;
	ord->reach = ch->reach;
	ord->nbyoff = ch->nbyoff;
	ch->byoff = byoff;
	ch->reach = reach;
}

/*
 * Carry out the change under the lock: the client's crefs replaced, its
 * old ranges settled, the new index in, then the dying ents freed once
 * nobody reads or copies them.  Return: 0, or -errno from
 * pthread_create() if no thread could start (the change is made).
 * Context: set_lock.
 */
static int commit(struct order *ord, struct change *ch)
{
	struct client *cl = ch->cl;
	struct cref *old = cl->refs;
	size_t nold = cl->n;
	int err = 0;

	pthread_mutex_lock(&ord->lock);
	detach(cl);
	attach(cl, ch->refs, ch->n);
	for (size_t i = 0; i < nold; i++) {
		struct ent *e = old[i].e;

		if (e->charged == cl && !is_user(e, cl))
			discharge(e);
		settle(ord, e);
	}
	ord->st.items = ord->st.items - cl->items + (ch->n ? ch->items : 0);
	cl->refs = ch->refs;
	cl->n = ch->n;
	cl->next = cl->sweep = 0;
	cl->front = 0;
	cl->started = false;
	cl->items = ch->n ? ch->items : 0;
	cl->ranges = ch->ranges;
	cl->planned = ch->planned;
	cl->taken = 0;
	cl->plans = ch->n ? ch->n * CREF_COST + CLIENT_COST : 0;
	ch->refs = old; /* freed by change_release() */
	if (ch->n) {
		cl->orders++;
		ord->st.orders++;
		if (ch->made)
			ord->clients[ord->nclients++] = cl;
		ch->made = false;
	} else {
		/* Cleared: forgotten.  Nothing is charged to it any more. */
		memmove(&ord->clients[ch->at], &ord->clients[ch->at + 1],
			(ord->nclients - ch->at - 1) * sizeof(*ord->clients));
		ord->nclients--;
		ch->gone = cl;
	}
	/* The fresh ents are the index's now; the old index is freed by
	 * change_release(). */
	free(ch->fresh);
	ch->fresh = NULL;
	swap_index(ord, ch);
	atomic_store_explicit(&ord->active, ord->nbyoff > 0,
			      memory_order_relaxed);
	ord->st.clients = ord->nclients;
	ord->st.ranges = ord->nbyoff;
	ord->st.planned = ch->all_planned;
	ord->st.plans = ch->plans;
	ord->st.plans_max = MAX(ord->st.plans_max, ord->st.plans);
	if (ch->n)
		err = start_threads(ord);
	pthread_cond_broadcast(&ord->cond);
	/* Out of the index and with no user: only readers that pinned them
	 * before, and reads under way, still reach the dying ents. */
	for (size_t i = 0; i < ch->ndying; i++) {
		struct ent *e = ch->dying[i];

		while (e->pins || e->state == ENT_READING)
			pthread_cond_wait(&ord->cond, &ord->lock);
		settle(ord, e);
	}
	pthread_mutex_unlock(&ord->lock);
	for (size_t i = 0; i < ch->ndying; i++)
		free(ch->dying[i]);
	return err;
}

int order_set(struct order *ord, uint64_t client, struct order_range *r,
	      size_t n, uint64_t items)
{
	struct change ch = { 0 };
	int err;

	if (!ord->window) {
		free(r);
		return -EOPNOTSUPP;
	}
	err = check(r, n);
	if (err) {
		free(r);
		return err;
	}
	pthread_mutex_lock(&ord->set_lock);
	err = prepare(ord, client, r, n, items, &ch);
	free(r);
	if (!err && (n || !ch.made))
		err = commit(ord, &ch);
	if (err == -ENOSPC || err == -EUSERS) {
		pthread_mutex_lock(&ord->lock);
		ord->st.refused++;
		pthread_mutex_unlock(&ord->lock);
	}
	change_release(&ch);
	pthread_mutex_unlock(&ord->set_lock);
	return err;
}

/* The user of @e nearest to its client's readers, in files; UINT32_MAX if
 * no client needs it. */
static uint32_t user_distance(const struct ent *e)
{
	const struct cref *c = nearest_user(e);

	return c ? distance(c) : UINT32_MAX;
}

/* Is @a a better answer than @b for a read?  A live range (not dropped)
 * over one that is not; of two live ones, the one whose user's readers
 * are nearer, then one read or being read. */
static bool better(const struct ent *a, const struct ent *b)
{
	uint32_t da, db;

	if (!b)
		return true;
	if ((a->state != ENT_DONE) != (b->state != ENT_DONE))
		return a->state != ENT_DONE;
	da = user_distance(a);
	db = user_distance(b);
	if (da != db)
		return da < db;
	return (a->state == ENT_HELD || a->state == ENT_READING) &&
	       b->state == ENT_EMPTY;
}

/*
 * The ent holding [@off, @off + @len), or NULL; a live one if any does.
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

		if (ord->byoff[mid]->off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo > 0 && ord->reach[lo - 1] >= end) {
		e = ord->byoff[--lo];
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
	e = find(ord, off, len);
	has = e && e->state != ENT_DONE;
	pthread_mutex_unlock(&ord->lock);
	return has;
}

/* A reader is done with @e.  Context: under the lock, @e pinned. */
static void unpin(struct order *ord, struct ent *e)
{
	if (--e->pins)
		return;
	if (!e->nusers)
		pthread_cond_broadcast(&ord->cond); /* order_set() frees it */
	settle(ord, e);
}

int order_get(struct order *ord, uint64_t off, size_t len, void *dst)
{
	bool waited = false;
	struct ent *e;

	if (!ord || !len ||
	    !atomic_load_explicit(&ord->active, memory_order_relaxed))
		return -ENODATA;
	pthread_mutex_lock(&ord->lock);
	e = find(ord, off, len);
	if (!e || e->state == ENT_DONE) {
		pthread_mutex_unlock(&ord->lock);
		return -ENODATA;
	}
	e->pins++;
	if (e->state == ENT_EMPTY) {
		claim(ord, e, NULL);
		read_ent(ord, e);
	}
	while (e->state == ENT_READING) {
		waited = true;
		pthread_cond_wait(&ord->cond, &ord->lock);
	}
	if (e->state != ENT_HELD) {
		unpin(ord, e);
		pthread_mutex_unlock(&ord->lock);
		return -ENODATA;
	}
	pthread_mutex_unlock(&ord->lock);

	memcpy(dst, e->buf + (off - e->off), len);

	pthread_mutex_lock(&ord->lock);
	ord->st.served += len;
	ord->st.hits++;
	ord->st.waits += waited;
	taken(ord, e, len);
	unpin(ord, e);
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
	e = find(ord, off, len);
	if (e && e->state != ENT_DONE) {
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
	out->plans_budget = ord->plans_budget;
	out->threads = ord->nthreads;
	pthread_mutex_unlock(&ord->lock);
}

/* @cl's counters.  Context: under the lock. */
static struct order_client_stats client_stats(const struct client *cl)
{
	return (struct order_client_stats){
		.client = cl->key,
		.orders = cl->orders,
		.items = cl->items,
		.at = cl->started ? (uint64_t)cl->front + 1 : 0,
		.ranges = cl->ranges,
		.planned = cl->planned,
		.taken = cl->taken,
		.ahead = cl->ahead,
		.plans = cl->plans,
	};
}

bool order_get_client(struct order *ord, uint64_t client,
		      struct order_client_stats *out)
{
	struct client *cl;
	size_t at;

	pthread_mutex_lock(&ord->lock);
	cl = find_client(ord, client, &at);
	*out = cl ? client_stats(cl) : (struct order_client_stats){ 0 };
	pthread_mutex_unlock(&ord->lock);
	return cl;
}

size_t order_get_clients(struct order *ord, struct order_client_stats *out,
			 size_t cap)
{
	size_t n;

	pthread_mutex_lock(&ord->lock);
	n = ord->nclients;
	for (size_t i = 0; i < MIN(n, cap); i++)
		out[i] = client_stats(ord->clients[i]);
	pthread_mutex_unlock(&ord->lock);
	return n;
}

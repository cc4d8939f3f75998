// SPDX-License-Identifier: MIT
/*
 * This file implements the keeper's logic (keep.h): the copies it holds,
 * each of one user and one image identity, in use by the connections of
 * that user's mounts of it (one copy for all: the stages share it) or
 * kept; the requests; and the budget of kept copies, least recently used
 * dropped first, whole copies, never one in use.  The caller owns the
 * sockets and tells who is asking (SO_PEERCRED); nothing here trusts a
 * field of a request for that.
 */
#define LOG_MOD "keeper"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keep/keep.h"
#include "stage/stage.h"
#include "util/err.h"
#include "util/log.h"

struct copy {
	struct copy *next;
	uid_t uid; /* whose */
	struct keep_key key; /* of what */
	char name[KEEP_NAME_MAX]; /* for display */
	int fd; /* the memfd */
	uint64_t bytes; /* its size (sealed) */
	unsigned int users; /* connections using it; 0: kept */
	bool forgotten; /* drop it once its connection closes */
	uint64_t seq; /* of its last use: the least is dropped first */
	int64_t last_use; /* seconds since the epoch */
};

/* A connection that asked for a copy. */
struct conn {
	struct conn *next;
	int fd; /* the socket */
	uid_t uid; /* its peer */
	bool pending; /* answered NONE: a PUT may follow */
	bool reserved; /* pending, and other GETs of key wait for its PUT */
	bool waiting; /* a GET of key not answered yet: it waits for the
			 PUT of the connection that reserved key */
	int64_t reserved_at; /* CLOCK_MONOTONIC seconds, when reserved */
	struct keep_key key; /* what was asked for */
	uint64_t file_size; /* of the image, at the GET */
	char name[KEEP_NAME_MAX]; /* as asked */
	struct copy *copy; /* in use, or NULL */
};

struct keeper {
	uint64_t budget; /* bytes of kept copies */
	struct copy *copies;
	struct conn *conns;
	uint64_t seq; /* uses so far */
};

int keeper_new(uint64_t budget, struct keeper **out)
{
	struct keeper *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->budget = budget;
	*out = k;
	return 0;
}

static void drop_copy(struct keeper *k, struct copy *c)
{
	for (struct copy **p = &k->copies; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	close(c->fd);
	free(c);
}

void keeper_free(struct keeper *k)
{
	if (!k)
		return;
	while (k->copies)
		drop_copy(k, k->copies);
	while (k->conns) {
		struct conn *c = k->conns;

		k->conns = c->next;
		free(c);
	}
	free(k);
}

static struct conn *conn_of(struct keeper *k, int fd, uid_t uid)
{
	struct conn *c;

	for (c = k->conns; c; c = c->next)
		if (c->fd == fd)
			return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = fd;
	c->uid = uid;
	c->next = k->conns;
	k->conns = c;
	return c;
}

uint64_t keeper_kept(const struct keeper *k, unsigned int *copies)
{
	uint64_t sum = 0;
	unsigned int n = 0;

	for (const struct copy *c = k->copies; c; c = c->next, n++)
		if (!c->users)
			sum += c->bytes;
	if (copies)
		*copies = n;
	return sum;
}

/* The least recently used kept copy, or NULL. */
static struct copy *lru_kept(struct keeper *k)
{
	struct copy *best = NULL;

	for (struct copy *c = k->copies; c; c = c->next)
		if (!c->users && (!best || c->seq < best->seq))
			best = c;
	return best;
}

uint64_t keeper_evict(struct keeper *k, uint64_t bytes)
{
	uint64_t freed = 0;
	struct copy *c;

	while (freed < bytes && (c = lru_kept(k))) {
		freed += c->bytes;
		log_info("dropping the kept copy of '%s' (uid %u)", c->name,
			 (unsigned int)c->uid);
		drop_copy(k, c);
	}
	return freed;
}

static int answer(int conn, uint32_t op, int status, uint64_t a, int fd)
{
	struct keep_msg m = { .op = op, .status = status, .a = a };

	return keep_send(conn, &m, fd);
}

/* Bytes of @c's complete chunks (its trailer); *@range (if given): of the
 * range it holds. */
static uint64_t complete_of(const struct copy *c, uint64_t *range)
{
	uint64_t size = 0, complete = 0;

	if (stage_backing_check(c->fd, &size, NULL, 0, &complete))
		size = complete = 0;
	if (range)
		*range = size;
	return complete;
}

/* Drop @uid's kept copies of the image @c asked for that are of another
 * identity now (the same name, or the same file and offset). */
static void drop_changed(struct keeper *k, const struct conn *c)
{
	struct copy *p, *next;

	for (p = k->copies; p; p = next) {
		next = p->next;
		if (p->uid != c->uid || p->users ||
		    !memcmp(&p->key, &c->key, sizeof(c->key)))
			continue;
		if (!strcmp(p->name, c->name) ||
		    (p->key.dev == c->key.dev && p->key.ino == c->key.ino &&
		     p->key.offset == c->key.offset)) {
			log_info(
				"the image of the kept copy of '%s' (uid %u) changed; dropping it",
				p->name, (unsigned int)p->uid);
			drop_copy(k, p);
		}
	}
}

/* A name for display, shown to root by mountctl status: control
 * characters become '?'. */
static void name_copy(char *dst, const char *src)
{
	for (size_t i = 0; i < KEEP_NAME_MAX; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[i] = ch && (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
}

static int64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

static bool same_ask(const struct conn *a, const struct conn *b)
{
	return a->uid == b->uid && !memcmp(&a->key, &b->key, sizeof(a->key));
}

/* The connection that holds the reservation of what @c asks for, or
 * NULL. */
static struct conn *reserver_of(struct keeper *k, const struct conn *c)
{
	for (struct conn *r = k->conns; r; r = r->next)
		if (r != c && r->reserved && same_ask(r, c))
			return r;
	return NULL;
}

/* Answer @w, waiting, NONE; it holds the reservation if @reserve.  A
 * waiter that cannot be answered is left to its close. */
static void answer_none(struct conn *w, bool reserve)
{
	w->waiting = false;
	w->pending = true;
	w->reserved = reserve;
	w->reserved_at = now_s();
	if (answer(w->fd, KEEP_NONE, 0, 0, -1))
		w->pending = w->reserved = false;
}

/* @r gives up its reservation: one waiter for it takes it over (NONE), or
 * with @all every waiter is answered NONE, none holding it. */
static void release(struct keeper *k, struct conn *r, bool all)
{
	r->reserved = false;
	for (struct conn *w = k->conns; w; w = w->next) {
		if (!w->waiting || !same_ask(w, r))
			continue;
		answer_none(w, !all);
		if (!all && w->reserved)
			return;
	}
}

void keeper_expire(struct keeper *k)
{
	int64_t now = now_s();

	for (struct conn *r = k->conns; r; r = r->next) {
		if (!r->reserved || now - r->reserved_at < KEEP_RESERVE_S)
			continue;
		log_info(
			"no copy of '%s' (uid %u) came in %d s; not waiting for it",
			r->name, (unsigned int)r->uid, KEEP_RESERVE_S);
		release(k, r, true);
	}
}

/* GET: the copy of the image @fd for @c's user, kept or in use by the
 * user's other mounts of it (they share it), or NONE, which reserves the
 * copy for @c until it PUTs or closes: a GET of the same meanwhile waits
 * (is answered then), so that one mount makes the copy, not each. */
static int on_get(struct keeper *k, struct conn *c, const struct keep_msg *m,
		  int fd)
{
	struct copy *p;
	struct stat sb;

	if (fd < 0 || c->copy || c->waiting)
		return answer(c->fd, KEEP_DONE, fd < 0 ? -EBADF : -EBUSY, 0,
			      -1);
	/* The identity from the kernel, and proof the user can open the
	 * image now. */
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode))
		return answer(c->fd, KEEP_DONE, -EINVAL, 0, -1);
	if (c->reserved)
		release(k, c, false); /* asks anew */
	keep_key_of(&sb, m->a, &c->key);
	c->file_size = (uint64_t)sb.st_size;
	name_copy(c->name, m->name);
	drop_changed(k, c);
	for (p = k->copies; p; p = p->next) {
		if (p->uid != c->uid || p->forgotten ||
		    memcmp(&p->key, &c->key, sizeof(c->key)))
			continue;
		p->users++;
		p->seq = ++k->seq;
		c->copy = p;
		c->pending = false;
		return answer(c->fd, KEEP_COPY, 0, complete_of(p, NULL), p->fd);
	}
	if (reserver_of(k, c)) {
		c->pending = false;
		c->waiting = true; /* answered by the PUT, or the close */
		return 0;
	}
	c->pending = c->reserved = true;
	c->reserved_at = now_s();
	return answer(c->fd, KEEP_NONE, 0, 0, -1);
}

/* The new copy @p came: the GETs waiting for it are answered with it,
 * each a user of it as if it had been there at its GET. */
static void give_waiters(struct keeper *k, struct conn *c, struct copy *p)
{
	for (struct conn *w = k->conns; w; w = w->next) {
		if (!w->waiting || !same_ask(w, c))
			continue;
		w->waiting = false;
		p->users++;
		w->copy = p;
		if (answer(w->fd, KEEP_COPY, 0, complete_of(p, NULL), p->fd)) {
			p->users--; /* left to its close */
			w->copy = NULL;
		}
	}
}

/* Whether @fd is a copy fit to hold for @c: sealed so that it cannot
 * grow, of the image asked for, no larger than the image's copy can be.
 * Return: 0 or -errno; *@bytes set to its size. */
static int check_put(const struct conn *c, int fd, uint64_t *bytes)
{
	uint64_t range = 0;
	struct stat sb;
	int seals, err;

	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_GROW | F_SEAL_SHRINK)) !=
				 (F_SEAL_GROW | F_SEAL_SHRINK))
		return -EINVAL;
	err = stage_backing_check(fd, &range, &c->key, sizeof(c->key), NULL);
	if (err)
		return err;
	if (c->key.offset > c->file_size ||
	    range > c->file_size - c->key.offset || fstat(fd, &sb))
		return -EINVAL;
	*bytes = (uint64_t)sb.st_size;
	return 0;
}

/* PUT: hold the new copy @fd, in use by @c. */
static int on_put(struct keeper *k, struct conn *c, int fd)
{
	struct copy *p;
	uint64_t bytes;
	int err;

	if (fd < 0 || !c->pending)
		return answer(c->fd, KEEP_DONE, fd < 0 ? -EBADF : -EPROTO, 0,
			      -1);
	err = check_put(c, fd, &bytes);
	if (err)
		goto out_close;
	p = calloc(1, sizeof(*p));
	err = -ENOMEM;
	if (!p)
		goto out_close;
	p->uid = c->uid;
	p->key = c->key;
	memcpy(p->name, c->name, sizeof(p->name));
	p->fd = fd;
	p->bytes = bytes;
	p->users = 1;
	p->seq = ++k->seq;
	p->last_use = (int64_t)time(NULL);
	p->next = k->copies;
	k->copies = p;
	c->copy = p;
	c->pending = c->reserved = false;
	err = answer(c->fd, KEEP_DONE, 0, 0, -1);
	give_waiters(k, c, p);
	return err;

out_close:
	close(fd);
	if (c->reserved)
		release(k, c, false); /* a GET waiting makes the copy */
	return answer(c->fd, KEEP_DONE, err, 0, -1);
}

static bool visible(const struct copy *p, uid_t uid)
{
	return uid == 0 || p->uid == uid;
}

static int on_list(struct keeper *k, struct conn *c)
{
	uint64_t n = 0;
	int err;

	for (struct copy *p = k->copies; p; p = p->next) {
		struct keep_msg e = { .op = KEEP_ENTRY };
		uint64_t range;

		if (!visible(p, c->uid))
			continue;
		e.uid = (uint32_t)p->uid;
		e.a = p->bytes;
		e.b = complete_of(p, &range);
		e.partial = e.b < range;
		e.c = (uint64_t)p->last_use;
		e.in_use = p->users != 0;
		memcpy(e.name, p->name, sizeof(e.name));
		err = keep_send(c->fd, &e, -1);
		if (err)
			return err;
		n++;
	}
	return answer(c->fd, KEEP_DONE, 0, n, -1);
}

/* FORGET: drop the user's copies of one image (by name), or all; root's
 * of anyone.  One in use is dropped when its mount ends. */
static int on_forget(struct keeper *k, struct conn *c, const struct keep_msg *m)
{
	struct copy *p, *next;
	uint64_t n = 0;

	for (p = k->copies; p; p = next) {
		next = p->next;
		if (!visible(p, c->uid) ||
		    (m->name[0] && strcmp(p->name, m->name)))
			continue;
		n++;
		if (p->users)
			p->forgotten = true;
		else
			drop_copy(k, p);
	}
	return answer(c->fd, KEEP_DONE, 0, n, -1);
}

int keeper_request(struct keeper *k, int conn, uid_t uid,
		   const struct keep_msg *m, int fd)
{
	struct conn *c;

	keeper_expire(k);
	c = conn_of(k, conn, uid);
	if (!c) {
		if (fd >= 0)
			close(fd);
		return answer(conn, KEEP_DONE, -ENOMEM, 0, -1);
	}
	if (m->op == KEEP_GET) {
		int err = on_get(k, c, m, fd);

		if (fd >= 0)
			close(fd); /* the image: only fstat()ed */
		return err;
	}
	if (m->op == KEEP_PUT)
		return on_put(k, c, fd);
	if (fd >= 0)
		close(fd);
	switch (m->op) {
	case KEEP_LIST:
		return on_list(k, c);
	case KEEP_FORGET:
		return on_forget(k, c, m);
	case KEEP_EVICT:
		if (uid != 0)
			return answer(conn, KEEP_DONE, -EPERM, 0, -1);
		return answer(conn, KEEP_DONE, 0, keeper_evict(k, m->a), -1);
	default:
		return answer(conn, KEEP_DONE, -EOPNOTSUPP, 0, -1);
	}
}

/* A mount of @p ended: once it was the last, keep @p within the budget,
 * or drop it. */
static void keep_copy(struct keeper *k, struct copy *p)
{
	struct copy *q, *next;
	uint64_t kept;

	if (--p->users)
		return; /* still shared by another mount */
	p->seq = ++k->seq;
	p->last_use = (int64_t)time(NULL);
	/* An older kept copy of the same goes (two mounts whose GETs both
	 * came before either PUT made one each). */
	for (q = k->copies; q; q = next) {
		next = q->next;
		if (q != p && !q->users && q->uid == p->uid &&
		    !memcmp(&q->key, &p->key, sizeof(p->key)))
			drop_copy(k, q);
	}
	if (p->forgotten || p->bytes > k->budget) {
		drop_copy(k, p);
		return;
	}
	p->users = 1; /* not evicted while making room */
	kept = keeper_kept(k, NULL);
	if (kept + p->bytes > k->budget)
		keeper_evict(k, kept + p->bytes - k->budget);
	p->users = 0;
}

void keeper_closed(struct keeper *k, int conn)
{
	for (struct conn **pc = &k->conns; *pc; pc = &(*pc)->next) {
		struct conn *c = *pc;

		if (c->fd != conn)
			continue;
		*pc = c->next;
		if (c->reserved)
			release(k, c, false);
		if (c->copy)
			keep_copy(k, c->copy);
		free(c);
		return;
	}
}

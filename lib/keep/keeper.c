// SPDX-License-Identifier: MIT
/*
 * This file implements the keeper's logic (keep.h): the copies it holds,
 * each of one user and one image identity, in use by the connections of
 * that user's mounts of it (one copy for all: the stages share it) or
 * kept; the requests; and the budget.  The server (slurm/keep_srv.c)
 * owns the sockets, tells who is asking (SO_PEERCRED), takes every look
 * at a user's descriptor that a user could make wait off this thread,
 * and says which connections' peers are live daemons that hold their
 * copy (keeper_set_used()).  Nothing here trusts a field of a request for
 * who asks, and nothing here sends: answers are queued per connection.
 *
 * Memory.  A copy costs what its memfd holds (st_blocks), measured at
 * PUT and once a second: the sealed size says nothing (a sparse copy).  A
 * copy no checked connection uses counts against the budget, whether or
 * not a connection holds it; when the copies not in use hold more than
 * the budget, the user whose copies not in use hold the most loses the
 * least recently used of them, again until they fit: no user can push
 * another's copies out unless that user holds more.
 *
 * Site copies.  A copy of a site image (keeper_get_site()) is root's, one
 * per image identity for every user who can open the image: the server
 * makes it (a job of root's opens the image itself and stages it) and
 * says when it is ready, so a GET of one waits for it, KEEP_SITE_READY_MS
 * at most, then is answered as for the user's own image.  Site copies
 * are never any user's copy (uid 0, their key's pid namespace 0, skipped
 * by every per-user rule), have a budget of their own (those not in use,
 * least recently used first; never one root still stages), and are
 * dropped last when memory is short.
 */
#define LOG_MOD "keeper"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "keep/keep.h"
#include "stage/stage.h"
#include "util/err.h"
#include "util/log.h"

/* One answer queued on a connection. */
struct answer {
	struct answer *next;
	struct keep_msg m;
	int fd; /* a dup of the copy's memfd to pass, or -1 */
};

/* Where a site copy stands. */
enum site_state {
	SITE_MAKING, /* root opens the image: GETs wait for it */
	SITE_STAGING, /* ready: given out, root stages it */
	SITE_DONE, /* root's staging ended */
};

struct copy {
	struct copy *next;
	uid_t uid; /* whose (0 for a site copy) */
	struct keep_key key; /* of what */
	char name[KEEP_NAME_MAX]; /* for display, fit to print */
	int fd; /* the memfd */
	uint64_t held; /* bytes its memfd holds (st_blocks), measured */
	uint64_t range; /* bytes of its range (its trailer) */
	unsigned int conns; /* connections using it; 0: kept */
	unsigned int used; /* of those, checked: a live daemon holds it */
	bool forgotten; /* drop it once its connections close */
	uint64_t seq; /* of its last use: the least is dropped first */
	int64_t last_use; /* seconds since the epoch */
	bool site; /* a site copy: the fields below */
	uint64_t site_id; /* the server's name for its making */
	int site_state; /* enum site_state */
	int64_t site_since; /* keeper clock, ms, when making began */
	char root_hex[65]; /* the root hash it is checked against, or "" */
};

/* A site copy that could not be made, not tried again before @until. */
struct site_fail {
	struct site_fail *next;
	struct keep_key key;
	int64_t until; /* keeper clock, ms */
};

/* A connection. */
struct conn {
	struct conn *next;
	int id; /* the server's socket */
	uid_t uid; /* its peer */
	uint64_t pidns; /* its peer's pid namespace */
	bool pending; /* answered NONE: a PUT may follow */
	bool reserved; /* pending, and other GETs of key wait for its PUT */
	bool waiting; /* a GET of key not answered yet: it waits for the
			 PUT of the connection that reserved key */
	bool used; /* the server found its peer holding its copy */
	int64_t reserved_at; /* keeper clock, ms, when reserved */
	struct keep_key key; /* what was asked for */
	uint64_t file_size; /* of the image, at the GET */
	char name[KEEP_NAME_MAX]; /* as asked, fit to print */
	struct copy *copy; /* in use, or NULL */
	struct answer *out, **out_tail; /* queued answers */
	/* A GET of a site image waiting for its copy to be made: its id,
	 * and what to answer as for the user's own image if it is not. */
	uint64_t site_wait; /* 0: none */
	struct keep_msg site_m;
	struct stat site_sb;
};

struct keeper {
	struct keeper_opts o;
	struct copy *copies;
	struct conn *conns;
	uint64_t seq; /* uses so far */
	uint64_t site_ids; /* site copies begun so far */
	struct site_fail *site_fails;
};

static int64_t now_ms(const struct keeper *k)
{
	struct timespec ts;

	if (k->o.now_ms)
		return k->o.now_ms(k->o.clock_arg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int keeper_new(const struct keeper_opts *o, struct keeper **out)
{
	struct keeper *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->o = *o;
	if (!k->o.user_copies)
		k->o.user_copies = KEEP_USER_COPIES;
	*out = k;
	return 0;
}

static void drop_copy(struct keeper *k, struct copy *c)
{
	/* Root's job that makes or stages it ends. */
	if (c->site && c->site_state != SITE_DONE && k->o.site_stop)
		k->o.site_stop(k->o.site_arg, c->site_id);
	for (struct copy **p = &k->copies; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	/* A connection still holding it (not a checked daemon: see
	 * pick_victim()) keeps nothing of it. */
	for (struct conn *n = k->conns; n; n = n->next)
		if (n->copy == c)
			n->copy = NULL;
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static void drop_answers(struct conn *c)
{
	while (c->out) {
		struct answer *a = c->out;

		c->out = a->next;
		if (a->fd >= 0)
			close(a->fd);
		free(a);
	}
	c->out_tail = &c->out;
}

void keeper_free(struct keeper *k)
{
	if (!k)
		return;
	while (k->conns) {
		struct conn *c = k->conns;

		k->conns = c->next;
		drop_answers(c);
		free(c);
	}
	while (k->copies)
		drop_copy(k, k->copies);
	while (k->site_fails) {
		struct site_fail *f = k->site_fails;

		k->site_fails = f->next;
		free(f);
	}
	free(k);
}

static struct conn *conn_of(struct keeper *k, int id)
{
	for (struct conn *c = k->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

int keeper_open(struct keeper *k, int conn, uid_t uid, uint64_t pidns)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->id = conn;
	c->uid = uid;
	c->pidns = pidns;
	c->out_tail = &c->out;
	c->next = k->conns;
	k->conns = c;
	return 0;
}

/* Queue @m (with a dup of @fd, if not -1) on @c.  Return: 0; -ENOMEM. */
static int queue(struct conn *c, const struct keep_msg *m, int fd)
{
	struct answer *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->m = *m;
	a->m.magic = KEEP_MAGIC;
	a->fd = -1;
	if (fd >= 0) {
		a->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (a->fd < 0) {
			free(a);
			return -errno;
		}
	}
	*c->out_tail = a;
	c->out_tail = &a->next;
	return 0;
}

static int answer(struct conn *c, uint32_t op, int status, uint64_t a, int fd)
{
	struct keep_msg m = { .op = op, .status = status, .a = a };

	return queue(c, &m, fd);
}

bool keeper_answer_next(struct keeper *k, int conn, struct keep_msg *m, int *fd)
{
	struct conn *c = conn_of(k, conn);

	if (!c || !c->out)
		return false;
	*m = c->out->m;
	*fd = c->out->fd;
	return true;
}

void keeper_answer_sent(struct keeper *k, int conn)
{
	struct conn *c = conn_of(k, conn);
	struct answer *a;

	if (!c || !c->out)
		return;
	a = c->out;
	c->out = a->next;
	if (!c->out)
		c->out_tail = &c->out;
	if (a->fd >= 0)
		close(a->fd);
	free(a);
}

/* Whether @p counts against the budget: no checked daemon uses it (and,
 * for a site copy, root is done making and staging it). */
static bool evictable(const struct copy *p)
{
	return !p->used && (!p->site || p->site_state == SITE_DONE);
}

uint64_t keeper_kept(const struct keeper *k, unsigned int *copies)
{
	uint64_t sum = 0;
	unsigned int n = 0;

	for (const struct copy *c = k->copies; c; c = c->next, n++)
		if (evictable(c))
			sum += c->held;
	if (copies)
		*copies = n;
	return sum;
}

/* Bytes the copies not in use of @uid hold. */
static uint64_t kept_of(const struct keeper *k, uid_t uid)
{
	uint64_t sum = 0;

	for (const struct copy *c = k->copies; c; c = c->next)
		if (c->uid == uid && !c->site && evictable(c))
			sum += c->held;
	return sum;
}

/* The copy to drop next: of the user whose copies not in use hold the
 * most (on a tie, the one whose oldest is older), the least recently
 * used; one no connection holds before one an unchecked connection
 * holds.  NULL if every copy is in use.  @spare is not taken. */
static struct copy *pick_victim(struct keeper *k, const struct copy *spare)
{
	struct copy *best = NULL;
	uint64_t best_user = 0;

	for (struct copy *c = k->copies; c; c = c->next) {
		uint64_t mine;

		if (c == spare || c->site || !evictable(c))
			continue;
		mine = kept_of(k, c->uid);
		if (!best || mine > best_user ||
		    (mine == best_user &&
		     ((!c->conns && best->conns) ||
		      (!c->conns == !best->conns && c->seq < best->seq)))) {
			best = c;
			best_user = mine;
		}
	}
	return best;
}

static uint64_t evict_but(struct keeper *k, uint64_t bytes,
			  const struct copy *spare)
{
	uint64_t freed = 0;
	struct copy *c;

	while (freed < bytes && (c = pick_victim(k, spare))) {
		freed += c->held;
		log_info("dropping the kept copy of '%s' (uid %u, %llu bytes)",
			 c->name, (unsigned int)c->uid,
			 (unsigned long long)c->held);
		drop_copy(k, c);
	}
	return freed;
}

/* The least recently used site copy not in use, but @spare; NULL if
 * none. */
static struct copy *site_victim(struct keeper *k, const struct copy *spare)
{
	struct copy *best = NULL;

	for (struct copy *c = k->copies; c; c = c->next)
		if (c->site && c != spare && evictable(c) &&
		    (!best || c->seq < best->seq))
			best = c;
	return best;
}

/* Drop site copies not in use, least recently used first, but @spare,
 * until @bytes are freed.  Return: the bytes freed. */
static uint64_t evict_site(struct keeper *k, uint64_t bytes,
			   const struct copy *spare)
{
	uint64_t freed = 0;
	struct copy *c;

	while (freed < bytes && (c = site_victim(k, spare))) {
		freed += c->held;
		log_info("dropping the site copy of '%s' (%llu bytes)", c->name,
			 (unsigned long long)c->held);
		drop_copy(k, c);
	}
	return freed;
}

uint64_t keeper_evict(struct keeper *k, uint64_t bytes)
{
	uint64_t freed = evict_but(k, bytes, NULL);

	/* Site copies serve every user: the last to go. */
	if (freed < bytes)
		freed += evict_site(k, bytes - freed, NULL);
	return freed;
}

/* Bytes site copies not in use hold. */
static uint64_t site_kept(const struct keeper *k)
{
	uint64_t sum = 0;

	for (const struct copy *c = k->copies; c; c = c->next)
		if (c->site && evictable(c))
			sum += c->held;
	return sum;
}

/* Keep what site copies not in use hold within the site budget; @spare
 * (the copy just let go) goes last. */
static void fit_site(struct keeper *k, const struct copy *spare)
{
	uint64_t kept = site_kept(k);

	if (kept > k->o.site_budget)
		kept -= evict_site(k, kept - k->o.site_budget, spare);
	if (spare && kept > k->o.site_budget)
		evict_site(k, kept - k->o.site_budget, NULL);
}

/* Keep what users' copies not in use hold within the budget; @spare (the
 * copy just kept) goes last. */
static void fit_budget(struct keeper *k, const struct copy *spare)
{
	uint64_t kept = keeper_kept(k, NULL) - site_kept(k);

	if (kept > k->o.budget)
		kept -= evict_but(k, kept - k->o.budget, spare);
	if (spare && kept > k->o.budget)
		evict_but(k, kept - k->o.budget, NULL);
}

/* Bytes @fd (a memfd) holds in memory. */
static uint64_t held_of(int fd)
{
	struct stat sb;

	if (fstat(fd, &sb))
		return 0;
	return (uint64_t)sb.st_blocks * 512;
}

/* Bytes of @c's complete chunks; *@range: of the range; *@flags:
 * KEEP_F_PARTIAL and KEEP_F_INCONSISTENT.  The work is bounded by what
 * the copy holds (stage_backing_check()). */
static uint64_t complete_of(const struct copy *c, uint64_t *range,
			    uint32_t *flags)
{
	uint64_t size = 0, complete = 0;

	*flags = 0;
	if (stage_backing_check(c->fd, &size, NULL, 0, &complete)) {
		*flags = KEEP_F_INCONSISTENT;
		size = c->range;
		complete = 0;
	}
	if (complete < size)
		*flags |= KEEP_F_PARTIAL;
	*range = size;
	return complete;
}

/* Drop @c's user's kept copies of the image @c asked for that are of
 * another identity now (the same name, or the same file), of the same
 * range and pid namespace: a copy of another range of the file (offset=,
 * each partition of a SIF file, all of one name) or of the mounts of
 * another pid namespace is no copy of a changed image. */
static void drop_changed(struct keeper *k, const struct conn *c)
{
	struct copy *p, *next;

	for (p = k->copies; p; p = next) {
		next = p->next;
		if (p->site || p->uid != c->uid || p->conns ||
		    !memcmp(&p->key, &c->key, sizeof(c->key)) ||
		    p->key.offset != c->key.offset ||
		    p->key.pidns != c->key.pidns)
			continue;
		if (!strcmp(p->name, c->name) ||
		    (p->key.dev == c->key.dev && p->key.ino == c->key.ino)) {
			log_info(
				"the image of the kept copy of '%s' (uid %u) changed; dropping it",
				p->name, (unsigned int)p->uid);
			drop_copy(k, p);
		}
	}
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

/* Answer @w, waiting, NONE; it holds the reservation if @reserve. */
static void answer_none(struct keeper *k, struct conn *w, bool reserve)
{
	w->waiting = false;
	w->pending = true;
	w->reserved = reserve;
	w->reserved_at = now_ms(k);
	if (answer(w, KEEP_NONE, 0, 0, -1))
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
		answer_none(k, w, !all);
		if (!all && w->reserved)
			return;
	}
}

static void site_expire(struct keeper *k);

static void expire(struct keeper *k)
{
	int64_t now = now_ms(k);

	site_expire(k);
	for (struct conn *r = k->conns; r; r = r->next) {
		if (!r->reserved ||
		    now - r->reserved_at < (int64_t)KEEP_RESERVE_S * 1000)
			continue;
		log_info(
			"no copy of '%s' (uid %u) came in %d s; not waiting for it",
			r->name, (unsigned int)r->uid, KEEP_RESERVE_S);
		release(k, r, true);
	}
}

/* @c uses @p from now on. */
static void attach(struct keeper *k, struct conn *c, struct copy *p)
{
	p->conns++;
	p->seq = ++k->seq;
	c->copy = p;
	c->used = false; /* until the server checks its peer */
	c->pending = false;
}

/* Answer COPY to @c, which uses @p now. */
static int give(struct keeper *k, struct conn *c, struct copy *p)
{
	uint64_t range;
	uint32_t flags;

	attach(k, c, p);
	return answer(c, KEEP_COPY, 0, complete_of(p, &range, &flags), p->fd);
}

/* GET: the copy of the image @sb for @c's user, kept or in use by the
 * user's other mounts of it (they share it), or NONE, which reserves the
 * copy for @c until it PUTs or closes: a GET of the same meanwhile waits
 * (is answered then), so that one mount makes the copy, not each. */
static int on_get(struct keeper *k, struct conn *c, const struct keep_msg *m,
		  const struct stat *sb)
{
	struct copy *p;

	if (!sb)
		return answer(c, KEEP_DONE, -EBADF, 0, -1);
	if (c->copy || c->waiting)
		return answer(c, KEEP_DONE, -EBUSY, 0, -1);
	if (!S_ISREG(sb->st_mode))
		return answer(c, KEEP_DONE, -EINVAL, 0, -1);
	if (c->reserved)
		release(k, c, false); /* asks anew */
	keep_key_of(sb, m->a, c->pidns, &c->key);
	c->file_size = (uint64_t)sb->st_size;
	keep_name_print(c->name, m->name);
	drop_changed(k, c);
	for (p = k->copies; p; p = p->next)
		if (!p->site && p->uid == c->uid && !p->forgotten &&
		    !memcmp(&p->key, &c->key, sizeof(c->key)))
			return give(k, c, p);
	if (reserver_of(k, c)) {
		c->pending = false;
		c->waiting = true; /* answered by the PUT, or the close */
		return 0;
	}
	c->pending = c->reserved = true;
	c->reserved_at = now_ms(k);
	return answer(c, KEEP_NONE, 0, 0, -1);
}

/* The new copy @p came: the GETs waiting for it are answered with it,
 * each a user of it as if it had been there at its GET. */
static void give_waiters(struct keeper *k, struct conn *c, struct copy *p)
{
	for (struct conn *w = k->conns; w; w = w->next) {
		if (!w->waiting || !same_ask(w, c))
			continue;
		w->waiting = false;
		if (give(k, w, p)) {
			p->conns--; /* left to its close */
			w->copy = NULL;
		}
	}
}

/* Whether @fd is a copy fit to hold for @c: sealed so that it cannot
 * grow, shrink or be sealed otherwise, of the image asked for, no larger
 * than the image's copy can be.  Return: 0 or -errno; *@range set. */
static int check_put(const struct conn *c, int fd, uint64_t *range)
{
	const int need = F_SEAL_SEAL | F_SEAL_GROW | F_SEAL_SHRINK;
	struct statfs fs;
	int seals, err;

	*range = 0;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & need) != need)
		return -EINVAL;
	/* shmem only: a hugetlbfs memfd takes seals too, but its holes
	 * read as data, so a scan of it would cost what its size says. */
	if (fstatfs(fd, &fs) || fs.f_type != TMPFS_MAGIC)
		return -EINVAL;
	err = stage_backing_check(fd, range, &c->key, sizeof(c->key), NULL);
	if (err)
		return err;
	if (c->key.offset > c->file_size ||
	    *range > c->file_size - c->key.offset)
		return -EINVAL;
	return 0;
}

/* Copies of @uid. */
static unsigned int copies_of(const struct keeper *k, uid_t uid)
{
	unsigned int n = 0;

	for (const struct copy *c = k->copies; c; c = c->next)
		n += c->uid == uid && !c->site;
	return n;
}

/* The least recently used copy of @uid that no connection uses, or NULL. */
static struct copy *lru_unused_of(struct keeper *k, uid_t uid)
{
	struct copy *best = NULL;

	for (struct copy *c = k->copies; c; c = c->next)
		if (c->uid == uid && !c->site && !c->conns &&
		    (!best || c->seq < best->seq))
			best = c;
	return best;
}

/* Room for one more copy of @uid: within the user's count (their least
 * recently used copy that no connection uses goes) and the keeper's.
 * Return: 0; -EDQUOT. */
static int make_room(struct keeper *k, uid_t uid)
{
	unsigned int all;
	struct copy *p;

	if (uid != 0 && copies_of(k, uid) >= k->o.user_copies) {
		p = lru_unused_of(k, uid);
		if (!p)
			return -EDQUOT;
		drop_copy(k, p);
	}
	keeper_kept(k, &all);
	if (k->o.max_copies && all >= k->o.max_copies) {
		p = pick_victim(k, NULL);
		if (!p)
			p = site_victim(k, NULL);
		if (!p)
			return -EDQUOT;
		drop_copy(k, p);
	}
	return 0;
}

/* PUT: hold the new copy @fd, in use by @c. */
static int on_put(struct keeper *k, struct conn *c, int fd)
{
	struct copy *p;
	uint64_t range;
	int err;

	if (fd < 0 || !c->pending) {
		err = fd < 0 ? -EBADF : -EPROTO;
		goto out_close;
	}
	err = check_put(c, fd, &range);
	if (!err)
		err = make_room(k, c->uid);
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
	p->held = held_of(fd);
	p->range = range;
	p->last_use = (int64_t)time(NULL);
	p->next = k->copies;
	k->copies = p;
	attach(k, c, p);
	c->reserved = false;
	err = answer(c, KEEP_DONE, 0, 0, -1);
	give_waiters(k, c, p);
	return err;

out_close:
	if (fd >= 0)
		close(fd); /* proven shmem by the server: no user can stall it */
	c->pending = false;
	if (c->reserved)
		release(k, c, false); /* a GET waiting makes the copy */
	return answer(c, KEEP_DONE, err, 0, -1);
}

/* Whether @uid may see @p, and forget it: their own; root anyone's.  A
 * site copy every user may see (it is of an image under the site's
 * prefixes), only root forget. */
static bool visible(const struct copy *p, uid_t uid)
{
	return uid == 0 || (p->uid == uid && !p->site);
}

/* The users of site copy @p that @c may see (root: all; a user: only
 * themselves), one USER answer each.  Return: 0; -ENOMEM. */
static int list_users(struct keeper *k, struct conn *c, const struct copy *p)
{
	for (struct conn *n = k->conns; n; n = n->next) {
		struct keep_msg u = { .op = KEEP_USER };
		bool first = true;
		int err;

		if (n->copy != p || (c->uid && n->uid != c->uid))
			continue;
		/* Once per uid: at its first connection using @p. */
		for (struct conn *o = k->conns; o != n; o = o->next)
			if (o->copy == p && o->uid == n->uid)
				first = false;
		if (!first)
			continue;
		u.uid = (uint32_t)n->uid;
		for (struct conn *o = n; o; o = o->next) {
			if (o->copy != p || o->uid != n->uid)
				continue;
			u.in_use++;
			if (o->used)
				u.flags |= KEEP_F_USED;
		}
		err = queue(c, &u, -1);
		if (err)
			return err;
	}
	return 0;
}

static int on_list(struct keeper *k, struct conn *c)
{
	uint64_t n = 0;
	int err;

	for (struct copy *p = k->copies; p; p = p->next) {
		struct keep_msg e = { .op = KEEP_ENTRY };

		if (!visible(p, c->uid) && !p->site)
			continue;
		if (p->site && p->site_state == SITE_MAKING)
			continue; /* nothing to show yet */
		e.uid = (uint32_t)p->uid;
		e.a = p->held;
		e.b = complete_of(p, &e.d, &e.flags);
		if (p->used)
			e.flags |= KEEP_F_USED;
		if (p->site)
			e.flags |= KEEP_F_SITE;
		if (p->site && p->site_state == SITE_STAGING)
			e.flags |= KEEP_F_STAGING;
		e.c = (uint64_t)p->last_use;
		e.in_use = p->conns;
		memcpy(e.name, p->name, sizeof(e.name));
		err = queue(c, &e, -1);
		if (!err && p->site)
			err = list_users(k, c, p);
		if (err)
			return err;
		n++;
	}
	return answer(c, KEEP_DONE, 0, n, -1);
}

/* FORGET: drop the user's copies of one image (by name), or all; root's
 * of anyone.  One in use is dropped when its mounts end. */
static int on_forget(struct keeper *k, struct conn *c, const struct keep_msg *m)
{
	char name[KEEP_NAME_MAX];
	struct copy *p, *next;
	uint64_t n = 0;

	keep_name_print(name, m->name);
	for (p = k->copies; p; p = next) {
		next = p->next;
		if (!visible(p, c->uid) || (name[0] && strcmp(p->name, name)) ||
		    (m->a & KEEP_F_SITE && !p->site) ||
		    (m->flags & KEEP_F_OF_UID &&
		     (p->site || p->uid != m->uid)) ||
		    (p->site && p->site_state == SITE_MAKING))
			continue;
		n++;
		if (p->conns)
			p->forgotten = true;
		else
			drop_copy(k, p);
	}
	return answer(c, KEEP_DONE, 0, n, -1);
}

/* The site copy being made as @id, or NULL. */
static struct copy *site_of(struct keeper *k, uint64_t id)
{
	for (struct copy *p = k->copies; p; p = p->next)
		if (p->site && p->site_id == id)
			return p;
	return NULL;
}

/* Answer COPY of site copy @p to @c, which uses it from now on. */
static int give_site(struct keeper *k, struct conn *c, struct copy *p)
{
	struct keep_msg m = { .op = KEEP_COPY, .flags = KEEP_F_SITE };
	uint32_t flags;

	attach(k, c, p);
	m.a = complete_of(p, &m.b, &flags);
	memcpy(m.name, p->root_hex, sizeof(p->root_hex));
	return queue(c, &m, p->fd);
}

/* Whether a site copy of @key failed lately (and is not to be tried
 * again yet); forgets those whose time is up. */
static bool site_failed_lately(struct keeper *k, const struct keep_key *key)
{
	int64_t now = now_ms(k);
	bool found = false;

	for (struct site_fail **pf = &k->site_fails; *pf;) {
		struct site_fail *f = *pf;

		if (now >= f->until) {
			*pf = f->next;
			free(f);
			continue;
		}
		found |= !memcmp(&f->key, key, sizeof(*key));
		pf = &f->next;
	}
	return found;
}

static void site_remember_failure(struct keeper *k, const struct keep_key *key)
{
	struct site_fail *f = calloc(1, sizeof(*f));

	if (!f)
		return; /* tried again at the next GET: no harm */
	f->key = *key;
	f->until = now_ms(k) + (int64_t)KEEP_SITE_RETRY_S * 1000;
	f->next = k->site_fails;
	k->site_fails = f;
}

/* Answer the GETs waiting for site copy @p as for their users' own
 * images, and drop it: it could not be made. */
static void site_give_up(struct keeper *k, struct copy *p, int err)
{
	log_warn(
		"no site copy of '%s': %s; its mounts keep as for a user's own image",
		p->name, err_str(err));
	site_remember_failure(k, &p->key);
	for (struct conn *w = k->conns; w; w = w->next) {
		if (w->site_wait != p->site_id)
			continue;
		w->site_wait = 0;
		if (on_get(k, w, &w->site_m, &w->site_sb))
			w->pending = w->reserved = false;
	}
	drop_copy(k, p);
}

/* Site copies not made within KEEP_SITE_READY_MS are given up. */
static void site_expire(struct keeper *k)
{
	int64_t now = now_ms(k);
	struct copy *p, *next;

	for (p = k->copies; p; p = next) {
		next = p->next;
		if (p->site && p->site_state == SITE_MAKING &&
		    now - p->site_since >= KEEP_SITE_READY_MS)
			site_give_up(k, p, -ETIMEDOUT);
	}
}

/* Site copies of the image at @path (by name, or by file and offset)
 * whose identity is not @key any more: the image changed.  Those no
 * mount uses are dropped, the others given to no new GET. */
static void site_drop_changed(struct keeper *k, const char *name,
			      const struct keep_key *key)
{
	struct copy *p, *next;

	for (p = k->copies; p; p = next) {
		next = p->next;
		if (!p->site || p->site_state == SITE_MAKING ||
		    !memcmp(&p->key, key, sizeof(*key)))
			continue;
		if (strcmp(p->name, name) &&
		    (p->key.dev != key->dev || p->key.ino != key->ino ||
		     p->key.offset != key->offset))
			continue;
		log_info("the image of the site copy of '%s' changed; %s",
			 p->name,
			 p->conns ? "its mounts keep it, new ones get another" :
				    "dropping it");
		if (p->conns)
			p->forgotten = true;
		else
			drop_copy(k, p);
	}
}

int keeper_get_site(struct keeper *k, int conn, const struct keep_msg *m,
		    const struct stat *image, const char *path)
{
	struct conn *c = conn_of(k, conn);
	struct keep_key key;
	struct copy *p;
	int err;

	if (!c)
		return -ENOENT;
	expire(k);
	if (c->copy || c->waiting || c->site_wait)
		return answer(c, KEEP_DONE, -EBUSY, 0, -1);
	if (!S_ISREG(image->st_mode))
		return answer(c, KEEP_DONE, -EINVAL, 0, -1);
	if (c->reserved)
		release(k, c, false); /* asks anew */
	/* No pid namespace: no stage of a user claims a chunk of it. */
	keep_key_of(image, m->a, 0, &key);
	c->site_m = *m;
	c->site_sb = *image;
	if (!k->o.site_start || site_failed_lately(k, &key) ||
	    m->a > (uint64_t)image->st_size)
		return on_get(k, c, m, image);
	site_drop_changed(k, path, &key);
	for (p = k->copies; p; p = p->next) {
		if (!p->site || p->forgotten ||
		    memcmp(&p->key, &key, sizeof(key)))
			continue;
		if (p->site_state != SITE_MAKING)
			return give_site(k, c, p);
		c->site_wait = p->site_id; /* answered once it is made */
		return 0;
	}
	/* Its range is at most the file past the offset. */
	if ((uint64_t)image->st_size - m->a > k->o.site_budget) {
		log_info(
			"no site copy of '%s': %llu bytes, more than the site budget of %llu",
			path, (unsigned long long)image->st_size - m->a,
			(unsigned long long)k->o.site_budget);
		site_remember_failure(k, &key);
		return on_get(k, c, m, image);
	}
	p = calloc(1, sizeof(*p));
	if (!p || make_room(k, 0)) {
		free(p);
		return on_get(k, c, m, image);
	}
	p->site = true;
	p->site_id = ++k->site_ids;
	p->site_state = SITE_MAKING;
	p->site_since = now_ms(k);
	p->fd = -1;
	p->key = key;
	keep_name_print(p->name, path);
	p->last_use = (int64_t)time(NULL);
	p->seq = ++k->seq;
	err = k->o.site_start(k->o.site_arg, p->site_id, c->uid, path, image,
			      m->a);
	if (err) {
		if (err != -EBUSY)
			site_remember_failure(k, &key);
		free(p);
		return on_get(k, c, m, image);
	}
	p->next = k->copies;
	k->copies = p;
	c->site_wait = p->site_id;
	return 0;
}

int keeper_site_ready(struct keeper *k, uint64_t id, int fd, uint64_t range,
		      const uint8_t *root)
{
	struct copy *p = site_of(k, id);
	static const char hex[] = "0123456789abcdef";

	if (!p || p->site_state != SITE_MAKING)
		return -ENOENT;
	if (range > k->o.site_budget || range > p->key.size - p->key.offset) {
		site_give_up(k, p, -EFBIG);
		return -EFBIG;
	}
	p->fd = fd;
	p->range = range;
	p->held = held_of(fd);
	p->site_state = SITE_STAGING;
	p->root_hex[0] = '\0';
	for (int i = 0; root && i < 32; i++) {
		p->root_hex[2 * i] = hex[root[i] >> 4];
		p->root_hex[2 * i + 1] = hex[root[i] & 15];
		p->root_hex[2 * i + 2] = '\0';
	}
	for (struct conn *w = k->conns; w; w = w->next) {
		if (w->site_wait != id)
			continue;
		w->site_wait = 0;
		if (give_site(k, w, p)) {
			p->conns--; /* left to its close */
			w->copy = NULL;
		}
	}
	return 0;
}

void keeper_site_failed(struct keeper *k, uint64_t id, int err)
{
	struct copy *p = site_of(k, id);

	if (!p)
		return;
	if (p->site_state == SITE_MAKING) {
		site_give_up(k, p, err);
		return;
	}
	keeper_site_ended(k, id, err ? err : -EIO);
}

void keeper_site_ended(struct keeper *k, uint64_t id, int err)
{
	struct copy *p = site_of(k, id);

	if (!p || p->site_state == SITE_MAKING)
		return;
	p->site_state = SITE_DONE;
	p->held = held_of(p->fd);
	if (!err)
		return;
	log_warn(
		"staging the site copy of '%s' stopped: %s; it is given to no new mount",
		p->name, err_str(err));
	site_remember_failure(k, &p->key);
	if (p->conns)
		p->forgotten = true;
	else
		drop_copy(k, p);
}

int keeper_request(struct keeper *k, int conn, const struct keep_msg *m,
		   const struct stat *image, int fd)
{
	struct conn *c = conn_of(k, conn);

	if (!c) {
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	expire(k);
	if (m->op == KEEP_PUT)
		return on_put(k, c, fd);
	if (fd >= 0)
		close(fd);
	switch (m->op) {
	case KEEP_GET:
		if (c->site_wait)
			return answer(c, KEEP_DONE, -EBUSY, 0, -1);
		return on_get(k, c, m, image);
	case KEEP_LIST:
		return on_list(k, c);
	case KEEP_FORGET:
		return on_forget(k, c, m);
	case KEEP_PING:
		return answer(c, KEEP_DONE, 0, keeper_kept(k, NULL), -1);
	case KEEP_EVICT:
		if (c->uid != 0)
			return answer(c, KEEP_DONE, -EPERM, 0, -1);
		return answer(c, KEEP_DONE, 0, keeper_evict(k, m->a), -1);
	default:
		return answer(c, KEEP_DONE, -EOPNOTSUPP, 0, -1);
	}
}

/* A connection using @p ended: once it was the last, keep @p within the
 * budget, or drop it. */
static void let_go(struct keeper *k, struct copy *p, bool used)
{
	struct copy *q, *next;

	p->conns--;
	p->used -= used;
	p->last_use = (int64_t)time(NULL);
	if (p->conns)
		return; /* still shared by another mount */
	p->seq = ++k->seq;
	if (p->site) {
		p->held = held_of(p->fd);
		/* One that stopped short goes, once no mount uses it; one
		 * root still stages stays for the next. */
		if (p->forgotten || p->held > k->o.site_budget)
			drop_copy(k, p);
		else
			fit_site(k, p);
		return;
	}
	/* An older kept copy of the same goes (two mounts whose GETs both
	 * came before either PUT made one each). */
	for (q = k->copies; q; q = next) {
		next = q->next;
		if (q != p && !q->conns && q->uid == p->uid &&
		    !memcmp(&q->key, &p->key, sizeof(p->key)))
			drop_copy(k, q);
	}
	p->held = held_of(p->fd);
	if (p->forgotten || p->held > k->o.budget) {
		drop_copy(k, p);
		return;
	}
	fit_budget(k, p);
}

void keeper_closed(struct keeper *k, int conn)
{
	for (struct conn **pc = &k->conns; *pc; pc = &(*pc)->next) {
		struct conn *c = *pc;

		if (c->id != conn)
			continue;
		*pc = c->next;
		if (c->reserved)
			release(k, c, false);
		/* A GET waiting for a site copy is forgotten; the copy is
		 * made for the next. */
		if (c->copy)
			let_go(k, c->copy, c->used);
		drop_answers(c);
		free(c);
		return;
	}
}

int keeper_copy_fd(struct keeper *k, int conn)
{
	struct conn *c = conn_of(k, conn);

	return c && c->copy ? c->copy->fd : -1;
}

void keeper_set_used(struct keeper *k, int conn, bool used)
{
	struct conn *c = conn_of(k, conn);

	if (!c || !c->copy || c->used == used)
		return;
	c->used = used;
	if (used)
		c->copy->used++;
	else
		c->copy->used--;
}

void keeper_tick(struct keeper *k)
{
	expire(k);
	for (struct copy *c = k->copies; c; c = c->next)
		if (c->fd >= 0)
			c->held = held_of(c->fd);
	fit_budget(k, NULL);
	fit_site(k, NULL);
}

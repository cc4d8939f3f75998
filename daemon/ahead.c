// SPDX-License-Identifier: MIT
/*
 * This file implements listing ahead: one thread of the daemon lists
 * directories through the daemon's own mount, so that the kernel holds
 * their entries before a reader asks for them.  Each listing is a
 * readdirplus, and the kernel makes a dentry and an inode for every entry
 * it returns, in the lister's context; a reader then finds the entries in
 * the dentry cache and sends nothing.  On a machine with a core to spare,
 * that work moves off the reader's critical path.  Three things start it:
 *
 *   -o prime	the whole tree, once the mount answers (the mount command
 *		waits for it, up to prime_wait).
 *   a walk	find, du, os.walk, ImageFolder: when a reader has listed a
 *		directory itself, the thread goes on from that directory in
 *		the order such a walk takes (the directory's subtree, then
 *		the directories after it in its parent, then those after its
 *		parent, ...), for at most statahead= entries.  Each directory
 *		the reader reaches before the thread does moves the thread's
 *		start there, so it keeps ahead of the reader.  A directory a
 *		reader is listing at that moment is left to it.
 *   lookups	a reader that opens files by path without listing (a list
 *		of samples): every file the kernel has not seen costs a
 *		LOOKUP round trip.  Once a directory has had an eighth of its
 *		entries looked up (at least 4) since it was last listed, the
 *		thread lists it whole: one readdirplus per hundred-odd entries
 *		instead of a LOOKUP each.  Listing costs about an eighth of
 *		what looking the same entries up does, so waiting for an
 *		eighth bounds the loss on a reader that stops there to about
 *		as much as it had already paid.
 *
 * The thread learns what a directory holds, and in which order, from the
 * image itself, and goes through the mount only to have the kernel list a
 * directory it does not hold yet (a pull: opendir, readdir to the end).
 * To reach a directory it needs its path: it keeps, for every directory
 * the kernel has been shown, its parent, its name and its inode reference
 * (an image never changes, so neither do they; at most AHEAD_DIRS_MAX
 * directories), and the state of its listing.  Its own requests are told
 * apart by its thread id, so that they never count as a reader's.
 *
 * Cost: the kernel's dentry and inode per entry (about 1 KB, reclaimable
 * like any other) and the CPU of the listing, at a lower priority than the
 * FUSE workers.  While a directory is being pulled its descriptor is open,
 * so a plain `umount` at that moment fails with EBUSY; SIGTERM, mountctl
 * umount and `fusermount3 -u -z` always work.
 *
 * Robustness: the thread never leaves the mount (it follows no symlinks,
 * and names come from lib/image, which rejects '/', '.' and '..'), goes
 * through a directory once per run (by inode number: a damaged image may
 * loop), stops at AHEAD_DEPTH levels, and ends at once when the daemon
 * stops.  An image error in a directory skips it; the reader that gets
 * there gets the error.
 */
#define LOG_MOD "ahead"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

#define AHEAD_DEPTH 256 /* directory levels walked at most */
#define AHEAD_DIRS_MAX (1u << 20) /* directories remembered at most */
#define AHEAD_ONE_MAX 64 /* lookup-started listings waiting at most */
#define AHEAD_LOOKUPS_MIN 4 /* lookups that start a listing, at least */
#define AHEAD_ENTRY_BYTES 24 /* listing bytes per entry, about */

enum ahead_state {
	AHEAD_NEW, /* not listed since the kernel made its inode */
	AHEAD_QUEUED, /* lookups queued it for the thread */
	AHEAD_READER, /* a reader is listing it */
	AHEAD_LISTED, /* listed whole since the kernel made its inode */
};

struct ahead_dir {
	uint64_t ref; /* its inode reference */
	uint32_t ino; /* inode number; 0 marks a free slot */
	uint32_t parent; /* the parent's inode number */
	uint32_t lookups; /* entries looked up since it was last listed */
	uint8_t state; /* enum ahead_state */
	char *name; /* its name in the parent; NULL for the root */
};

/* What the thread was asked to do by readers. */
struct ahead {
	struct sqcd *d; /* the daemon */
	pthread_t thread; /* the lister */
	atomic_int tid; /* its thread id, once it runs */
	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t more; /* work arrived, or stopping */
	struct ahead_dir *slot; /* directories, open addressing by ino */
	uint32_t cap; /* slots, a power of two */
	uint32_t len; /* slots in use */
	uint32_t root; /* the root's inode number */
	uint32_t one[AHEAD_ONE_MAX]; /* directories to list, from lookups */
	unsigned int one_head, one_len; /* ring of @one */
	uint32_t walk; /* where a walk goes on from; 0: nowhere */
	unsigned int walk_gen; /* bumped each time @walk is set */
	atomic_bool stop; /* the daemon is stopping (set under @lock) */
};

/* An open-addressing set of directory inode numbers (0 is never one). */
struct ino_set {
	uint32_t *slot;
	size_t cap, len; /* cap is a power of two */
};

static size_t hash32(uint32_t v, size_t cap)
{
	return (size_t)((v * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static bool ino_set_add(struct ino_set *s, uint32_t ino)
{
	size_t i;

	if (2 * (s->len + 1) > s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 1024;
		uint32_t *n = calloc(ncap, sizeof(*n));

		if (!n)
			return true; /* no memory: walk on without the check */
		for (size_t j = 0; j < s->cap; j++) {
			if (!s->slot[j])
				continue;
			i = hash32(s->slot[j], ncap);
			while (n[i])
				i = (i + 1) & (ncap - 1);
			n[i] = s->slot[j];
		}
		free(s->slot);
		s->slot = n;
		s->cap = ncap;
	}
	i = hash32(ino, s->cap);
	while (s->slot[i]) {
		if (s->slot[i] == ino)
			return false;
		i = (i + 1) & (s->cap - 1);
	}
	s->slot[i] = ino;
	s->len++;
	return true;
}

/* The slot of directory @ino, or NULL.  Called with a->lock held. */
static struct ahead_dir *dir_find(struct ahead *a, uint32_t ino)
{
	uint32_t i;

	if (!a->cap || !ino)
		return NULL;
	for (i = (uint32_t)hash32(ino, a->cap); a->slot[i].ino;
	     i = (i + 1) & (a->cap - 1))
		if (a->slot[i].ino == ino)
			return &a->slot[i];
	return NULL;
}

/* Double the table.  Return: false if it is full or memory is short.
 * Called with a->lock held. */
static bool dir_grow(struct ahead *a)
{
	uint32_t ncap = a->cap ? 2 * a->cap : 1024, i;
	struct ahead_dir *n;

	if (ncap > 2 * AHEAD_DIRS_MAX)
		return false;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return false;
	for (uint32_t j = 0; j < a->cap; j++) {
		if (!a->slot[j].ino)
			continue;
		for (i = (uint32_t)hash32(a->slot[j].ino, ncap); n[i].ino;
		     i = (i + 1) & (ncap - 1))
			;
		n[i] = a->slot[j];
	}
	free(a->slot);
	a->slot = n;
	a->cap = ncap;
	return true;
}

/* Remember directory @ino at @ref, named @name in @parent.  Return: its
 * slot, or NULL if it cannot be remembered.  Called with a->lock held. */
static struct ahead_dir *dir_add(struct ahead *a, uint32_t parent,
				 const char *name, uint32_t ino, uint64_t ref)
{
	struct ahead_dir *e = dir_find(a, ino);
	uint32_t i;

	if (e || !ino)
		return e;
	if (2 * (a->len + 1) > a->cap && !dir_grow(a))
		return NULL;
	for (i = (uint32_t)hash32(ino, a->cap); a->slot[i].ino;
	     i = (i + 1) & (a->cap - 1))
		;
	e = &a->slot[i];
	e->name = name ? strdup(name) : NULL;
	if (name && !e->name)
		return NULL;
	e->ino = ino;
	e->ref = ref;
	e->parent = parent;
	e->lookups = 0;
	e->state = AHEAD_NEW;
	a->len++;
	return e;
}

/*
 * The path of directory @ino under the mountpoint, from the names the
 * kernel was given.  Return: a new string, or NULL if a link is missing,
 * the path is too deep or too long, or memory is short.
 */
static char *dir_path(struct ahead *a, uint32_t ino)
{
	const char *names[AHEAD_DEPTH];
	const char *top = a->d->o.canonical;
	size_t len = strlen(top), n = 0;
	char *path = NULL, *p;

	pthread_mutex_lock(&a->lock);
	while (ino != a->root) {
		struct ahead_dir *e = dir_find(a, ino);

		if (!e || !e->name || n == AHEAD_DEPTH)
			goto out;
		names[n++] = e->name;
		len += 1 + strlen(e->name);
		ino = e->parent;
	}
	if (len >= PATH_MAX)
		goto out;
	path = malloc(len + 1);
	if (!path)
		goto out;
	p = stpcpy(path, top);
	while (n) {
		*p++ = '/';
		p = stpcpy(p, names[--n]);
	}
out:
	pthread_mutex_unlock(&a->lock);
	return path;
}

/* Whether @req comes from the listing thread itself. */
static bool from_lister(struct ahead *a, fuse_req_t req)
{
	return fuse_req_ctx(req)->pid == atomic_load(&a->tid);
}

/* What one walk of the thread is doing. */
struct run {
	bool prime; /* the -o prime walk: counted there, never preempted */
	unsigned int gen; /* a->walk_gen it started at (walks) */
	uint64_t budget; /* entries it may still go past */
	struct ino_set seen; /* directories it has been through */
};

/* Whether @r should end: the daemon stops, the budget is spent, or a
 * reader moved the walk elsewhere. */
static bool run_over(struct ahead *a, const struct run *r)
{
	bool over;

	pthread_mutex_lock(&a->lock);
	over = a->stop || !r->budget || (!r->prime && a->walk_gen != r->gen);
	pthread_mutex_unlock(&a->lock);
	return over;
}

/*
 * Have the kernel list @path, directory @ino, through the mount, unless it
 * holds the listing already (or a reader is getting it now).  Counted in
 * the prime stats for -o prime (@prime), else in the ahead stats.
 * Return: 0; -ECANCELED if the daemon stops; -errno of opendir() or
 * readdir().
 */
static int pull(struct ahead *a, bool prime, const char *path, uint32_t ino)
{
	struct sqcd *d = a->d;
	struct ahead_dir *e;
	struct dirent *de;
	bool listed;
	DIR *dp;
	int err = 0;

	pthread_mutex_lock(&a->lock);
	e = dir_find(a, ino);
	listed = e && (e->state == AHEAD_LISTED || e->state == AHEAD_READER);
	pthread_mutex_unlock(&a->lock);
	if (listed)
		return 0;
	dp = opendir(path);
	if (!dp)
		return -errno;
	atomic_fetch_add(prime ? &d->prime_dirs : &d->ahead_dirs, 1);
	for (;;) {
		if (atomic_load(&a->stop)) {
			err = -ECANCELED;
			break;
		}
		errno = 0;
		de = readdir(dp);
		if (!de) {
			err = -errno;
			break;
		}
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			atomic_fetch_add(prime ? &d->prime_entries :
						 &d->ahead_entries,
					 1);
	}
	closedir(dp);
	return err;
}

/* A directory to go through: where it is in the image and in the mount. */
struct spot {
	uint64_t ref; /* its inode reference */
	uint32_t ino; /* its inode number */
	char *path; /* under the mountpoint */
	unsigned int depth; /* levels below the root */
};

/* Spots found in one directory, in listing order. */
struct spots {
	struct spot *v;
	size_t len, cap;
};

static void spots_clear(struct spots *s)
{
	while (s->len)
		free(s->v[--s->len].path);
}

/* Append @sp; on success @s owns its path.  Return: 0 or -ENOMEM. */
static int spots_push(struct spots *s, struct spot sp)
{
	if (s->len == s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 64;
		struct spot *n = realloc(s->v, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->v = n;
		s->cap = ncap;
	}
	s->v[s->len++] = sp;
	return 0;
}

/* Append subdirectory @name of @dir.  Return: 0 or -ENOMEM. */
static int spots_add(struct spots *s, const struct spot *dir,
		     const struct img_dirent *de)
{
	size_t dlen = strlen(dir->path), nlen = de->name_len;
	char *p;

	if (dlen + 1 + nlen >= PATH_MAX || dir->depth + 1 >= AHEAD_DEPTH)
		return 0; /* too long or too deep: left out */
	p = malloc(dlen + 1 + nlen + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p, dir->path, dlen);
	p[dlen] = '/';
	memcpy(p + dlen + 1, de->name, nlen + 1);
	if (spots_push(s,
		       (struct spot){ de->ref, de->ino, p, dir->depth + 1 })) {
		free(p);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Add to @out the subdirectories of @dir that the image lists after the
 * entry named @after (all of them if NULL), skipping those @r has been
 * through; every entry gone past counts against @r's budget.  The image
 * gives the order and the names, so nothing goes through the mount here.
 * Return: 0; -ENOMEM; an error of the image (the directory is skipped).
 */
static int subdirs(struct ahead *a, struct run *r, const struct spot *dir,
		   const char *after, struct spots *out)
{
	struct img *img = a->d->img;
	struct img_inode ino;
	struct img_dir_iter it;
	struct img_dirent de;
	bool past = !after;
	int err;

	err = img_inode_get(img, dir->ref, &ino);
	if (!err)
		err = img_dir_open(img, &ino, 0, &it);
	while (!err && (err = img_dir_next(&it, &de)) == 1) {
		err = 0;
		if (r->budget)
			r->budget--;
		if (!past) {
			past = !strcmp(de.name, after);
			continue;
		}
		if (de.type == IMG_DIR && ino_set_add(&r->seen, de.ino))
			err = spots_add(out, dir, &de);
	}
	return err;
}

/* Whether a pull's error ends the walk: the mount is gone, or stopping. */
static bool fatal(int err)
{
	return err == -ENOMEM || err == -ENOTCONN || err == -ECONNABORTED ||
	       err == -ECANCELED;
}

/*
 * Go through the subtree of @top in the order a depth-first reader takes
 * (listing order), pulling each directory into the kernel, within @r.
 * Return: 0, or an error that ends the walk (see fatal()); a directory
 * that cannot be listed is left out.
 */
static int walk_tree(struct ahead *a, struct run *r, const struct spot *top)
{
	struct spots stack = { 0 }, sub = { 0 };
	char *path = strdup(top->path);
	int err;

	if (!path || spots_push(&stack, (struct spot){ top->ref, top->ino, path,
						       top->depth })) {
		free(path);
		return -ENOMEM;
	}
	err = 0;
	while (!err && stack.len && !run_over(a, r)) {
		struct spot s = stack.v[--stack.len];
		int e = pull(a, r->prime, s.path, s.ino);

		if (fatal(e))
			err = e;
		else if (!e)
			err = subdirs(a, r, &s, NULL, &sub);
		free(s.path);
		if (err == -EFSCORRUPTED || err == -EIO)
			err = 0; /* the reader gets the error there */
		/* Reversed, so that the first subdirectory comes out first. */
		while (!err && sub.len) {
			err = spots_push(&stack, sub.v[sub.len - 1]);
			if (!err)
				sub.len--;
		}
	}
	spots_clear(&sub);
	free(sub.v);
	spots_clear(&stack);
	free(stack.v);
	return err;
}

/* -o prime: the whole tree, counted in the prime stats. */
static void run_prime(struct ahead *a)
{
	struct sqcd *d = a->d;
	struct run r = { .prime = true, .budget = UINT64_MAX };
	struct spot top = { d->root_ref, a->root, d->o.canonical, 0 };
	double secs;
	int err;

	mono_now(&d->prime_t0);
	ino_set_add(&r.seen, a->root);
	err = walk_tree(a, &r, &top);
	free(r.seen.slot);
	secs = mono_since(&d->prime_t0);
	atomic_store(&d->prime_ms, (uint64_t)(secs * 1e3));
	if (atomic_load(&a->stop) || err) {
		atomic_store(&d->prime_state, SQCD_PRIME_STOPPED);
		if (err && !atomic_load(&a->stop))
			log_warn("priming stopped after %llu entries: %s",
				 (unsigned long long)atomic_load(
					 &d->prime_entries),
				 err_str(err));
		return;
	}
	atomic_store(&d->prime_state, SQCD_PRIME_DONE);
	/* Priming prepares the mount for reading: the files it listed may
	 * be pushed without waiting for a first read. */
	sqcd_dir_listed(d); /* core hook: warming may push */
	log_info("primed %llu entries in %llu directories in %.2f s",
		 (unsigned long long)atomic_load(&d->prime_entries),
		 (unsigned long long)atomic_load(&d->prime_dirs), secs);
}

/* The reference and parent of directory @ino, from the table.  Return:
 * false if it is not there. */
static bool dir_where(struct ahead *a, uint32_t ino, uint64_t *ref,
		      uint32_t *parent)
{
	struct ahead_dir *e;

	pthread_mutex_lock(&a->lock);
	e = dir_find(a, ino);
	if (e) {
		*ref = e->ref;
		*parent = e->parent;
	}
	pthread_mutex_unlock(&a->lock);
	return e != NULL;
}

/*
 * A reader listed directory @ino: go on from there in depth-first order
 * (its subtree, then what follows it in each of its ancestors), until the
 * window is spent or a reader moves the walk again.
 */
static void run_walk(struct ahead *a, uint32_t ino, unsigned int gen)
{
	struct run r = { .gen = gen, .budget = a->d->o.statahead };
	size_t top = strlen(a->d->o.canonical);
	struct spots sub = { 0 };
	struct spot at = { .ino = ino };
	uint32_t parent;
	char *slash;
	int err;

	at.path = dir_path(a, ino);
	if (!at.path || !dir_where(a, ino, &at.ref, &parent))
		goto out;
	atomic_fetch_add(&a->d->ahead_walks, 1);
	for (const char *p = at.path + top; *p; p++)
		at.depth += *p == '/';
	ino_set_add(&r.seen, ino);
	err = walk_tree(a, &r, &at);
	/* Then what follows it in its parent, then in the parent's parent,
	 * up to the mountpoint: the path is cut back one name at a time. */
	while (!err && ino != a->root && !run_over(a, &r)) {
		struct spot up = { 0, parent, at.path, at.depth - 1 };

		ino = parent;
		if (!dir_where(a, ino, &up.ref, &parent))
			break;
		slash = strrchr(at.path, '/');
		*slash = '\0';
		at.depth--;
		err = subdirs(a, &r, &up, slash + 1, &sub);
		for (size_t i = 0; i < sub.len && !err && !run_over(a, &r); i++)
			err = walk_tree(a, &r, &sub.v[i]);
		spots_clear(&sub);
		if (!fatal(err))
			err = 0;
	}
	free(sub.v);
out:
	free(r.seen.slot);
	free(at.path);
}

/* Lookups asked for directory @ino: list it, unless listed meanwhile. */
static void run_one(struct ahead *a, uint32_t ino)
{
	struct ahead_dir *e;
	char *path = NULL;
	bool queued;

	pthread_mutex_lock(&a->lock);
	e = dir_find(a, ino);
	queued = e && e->state == AHEAD_QUEUED;
	pthread_mutex_unlock(&a->lock);
	if (queued)
		path = dir_path(a, ino);
	queued = path != NULL;
	if (path) {
		atomic_fetch_add(&a->d->ahead_lookup_dirs, 1);
		pull(a, false, path, ino);
		free(path);
	}
	/* Listed now, or not listable: count lookups afresh either way. */
	pthread_mutex_lock(&a->lock);
	e = dir_find(a, ino);
	if (e && e->state == AHEAD_QUEUED) {
		e->state = queued ? AHEAD_LISTED : AHEAD_NEW;
		e->lookups = 0;
	}
	pthread_mutex_unlock(&a->lock);
}

static void *ahead_main(void *arg)
{
	struct ahead *a = arg;
	struct sqcd *d = a->d;
	struct stat sb;

	atomic_store(&a->tid, (int)syscall(SYS_gettid));
	/* Readers first: this thread only uses what they leave. */
	setpriority(PRIO_PROCESS, (id_t)atomic_load(&a->tid), 10);
	/* Started before the session loop: this waits until it answers. */
	if (stat(d->o.canonical, &sb)) {
		if (d->o.prime)
			atomic_store(&d->prime_state, SQCD_PRIME_STOPPED);
		return NULL;
	}
	if (d->o.prime)
		run_prime(a);
	for (;;) {
		uint32_t ino = 0, walk = 0;
		unsigned int gen = 0;

		pthread_mutex_lock(&a->lock);
		while (!a->stop && !a->one_len && !a->walk)
			pthread_cond_wait(&a->more, &a->lock);
		if (a->stop) {
			pthread_mutex_unlock(&a->lock);
			return NULL;
		}
		if (a->one_len) {
			ino = a->one[a->one_head];
			a->one_head = (a->one_head + 1) % AHEAD_ONE_MAX;
			a->one_len--;
		} else {
			walk = a->walk;
			gen = a->walk_gen;
			a->walk = 0;
		}
		pthread_mutex_unlock(&a->lock);
		if (ino)
			run_one(a, ino);
		else
			run_walk(a, walk, gen);
	}
}

int sqcd_ahead_start(struct sqcd *d)
{
	struct img_inode root;
	struct ahead *a;
	int err;

	if (!d->o.prime && !d->o.statahead)
		return 0;
	err = img_inode_get(d->img, d->root_ref, &root);
	if (err)
		return err;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->d = d;
	a->root = root.ino;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->more, NULL);
	if (!dir_add(a, root.ino, NULL, root.ino, root.ref)) {
		err = -ENOMEM;
		goto out_free;
	}
	if (d->o.prime)
		atomic_store(&d->prime_state, SQCD_PRIME_RUNNING);
	err = -pthread_create(&a->thread, NULL, ahead_main, a);
	if (err) {
		atomic_store(&d->prime_state, SQCD_PRIME_OFF);
		log_warn("cannot start listing ahead: %s", err_str(err));
		goto out_free;
	}
	d->ahead = a;
	return 0;

out_free:
	free(a->slot);
	pthread_cond_destroy(&a->more);
	pthread_mutex_destroy(&a->lock);
	free(a);
	return err;
}

void sqcd_ahead_stop(struct sqcd *d)
{
	struct ahead *a = d->ahead;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	atomic_store(&a->stop, true);
	pthread_cond_signal(&a->more);
	pthread_mutex_unlock(&a->lock);
}

void sqcd_ahead_join(struct sqcd *d)
{
	struct ahead *a = d->ahead;

	if (!a)
		return;
	pthread_join(a->thread, NULL);
	for (uint32_t i = 0; i < a->cap; i++)
		free(a->slot[i].name);
	free(a->slot);
	pthread_cond_destroy(&a->more);
	pthread_mutex_destroy(&a->lock);
	free(a);
	d->ahead = NULL;
}

void sqcd_ahead_dir(struct sqcd *d, uint32_t parent, const char *name,
		    const struct img_inode *dir)
{
	struct ahead *a = d->ahead;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	dir_add(a, parent, name, dir->ino, dir->ref);
	pthread_mutex_unlock(&a->lock);
}

void sqcd_ahead_lookup(struct sqcd *d, fuse_req_t req,
		       const struct img_inode *dir)
{
	struct ahead *a = d->ahead;
	struct ahead_dir *e;
	uint32_t want;

	if (!a || !d->o.statahead || from_lister(a, req))
		return;
	want = (uint32_t)MIN(dir->size / AHEAD_ENTRY_BYTES / 8, UINT32_MAX);
	want = MAX(want, AHEAD_LOOKUPS_MIN);
	pthread_mutex_lock(&a->lock);
	e = dir_find(a, dir->ino);
	if (e && ++e->lookups >= want &&
	    (e->state == AHEAD_NEW || e->state == AHEAD_LISTED) &&
	    a->one_len < AHEAD_ONE_MAX && !a->stop) {
		e->state = AHEAD_QUEUED;
		a->one[(a->one_head + a->one_len++) % AHEAD_ONE_MAX] = e->ino;
		pthread_cond_signal(&a->more);
	}
	pthread_mutex_unlock(&a->lock);
}

void sqcd_ahead_listing(struct sqcd *d, fuse_req_t req,
			const struct img_inode *dir, bool first, bool eof)
{
	struct ahead *a = d->ahead;
	bool reader;
	struct ahead_dir *e;

	if (!a)
		return;
	reader = !from_lister(a, req);
	pthread_mutex_lock(&a->lock);
	e = dir_find(a, dir->ino);
	if (e && eof) {
		e->state = AHEAD_LISTED;
		e->lookups = 0;
		/* A reader got here itself: walk on from here. */
		if (reader && d->o.statahead && !a->stop) {
			a->walk = e->ino;
			a->walk_gen++;
			pthread_cond_signal(&a->more);
		}
	} else if (e && first && reader) {
		e->state = AHEAD_READER;
	}
	pthread_mutex_unlock(&a->lock);
}

void sqcd_ahead_forget(struct sqcd *d, const struct img_inode *ino)
{
	struct ahead *a = d->ahead;
	struct ahead_dir *e;

	if (!a || ino->type != IMG_DIR)
		return;
	pthread_mutex_lock(&a->lock);
	e = dir_find(a, ino->ino);
	if (e && e->state != AHEAD_QUEUED) {
		e->state = AHEAD_NEW;
		e->lookups = 0;
	}
	pthread_mutex_unlock(&a->lock);
}

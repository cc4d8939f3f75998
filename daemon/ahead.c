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
 *		start there, so it keeps ahead of the reader.  Directories a
 *		reader is listing at that moment are left to it.
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
 * The thread needs a path to list a directory: it keeps, for every
 * directory the kernel has been shown, its parent and its name (an image
 * never changes, so neither do they; at most AHEAD_DIRS_MAX directories),
 * and the state of its listing.  Its own requests are told apart by its
 * thread id, so that they never count as a reader's.
 *
 * Cost: the kernel's dentry and inode per entry (about 1 KB, reclaimable
 * like any other) and the CPU of the listing, at a lower priority than the
 * FUSE workers.  While a directory is being listed its descriptor is open,
 * so a plain `umount` at that moment fails with EBUSY; SIGTERM, mountctl
 * umount and `fusermount3 -u -z` always work.
 *
 * Robustness: the thread never leaves the mount (it follows no symlinks,
 * and names come from the kernel, which has vetted them), skips a
 * directory it has seen in the same run (by inode number: a damaged image
 * may loop), stops at AHEAD_DEPTH levels, and ends at once when the daemon
 * stops.
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

/* Remember directory @ino, named @name in @parent.  Return: its slot, or
 * NULL if it cannot be remembered.  Called with a->lock held. */
static struct ahead_dir *dir_add(struct ahead *a, uint32_t parent,
				 const char *name, uint32_t ino)
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
	uint64_t budget; /* entries it may still list */
	struct ino_set seen; /* directories it has listed */
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

/* Subdirectories found by one listing, in listing order. */
struct subdirs {
	char **path;
	size_t len, cap;
};

static void subdirs_clear(struct subdirs *s)
{
	while (s->len)
		free(s->path[--s->len]);
}

static int subdirs_add(struct subdirs *s, const char *dir, const char *name)
{
	size_t dlen = strlen(dir), nlen = strlen(name);
	char *p;

	if (dlen + 1 + nlen >= PATH_MAX)
		return 0; /* too long to open: left out */
	if (s->len == s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 64;
		char **n = realloc(s->path, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->path = n;
		s->cap = ncap;
	}
	p = malloc(dlen + 1 + nlen + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p, dir, dlen);
	p[dlen] = '/';
	memcpy(p + dlen + 1, name, nlen + 1);
	s->path[s->len++] = p;
	return 0;
}

/*
 * List @path.  Its subdirectories that come after the entry named @after
 * (all of them if NULL) go to @sub, if not NULL, except those a reader is
 * listing now (it gets there first) and those @r has listed.
 * Return: 0; -ENOMEM; -ECANCELED if the daemon stops; -errno of opendir()
 * or readdir().
 */
static int list_dir(struct ahead *a, struct run *r, const char *path,
		    const char *after, struct subdirs *sub)
{
	struct sqcd *d = a->d;
	struct dirent *de;
	bool past = !after;
	DIR *dp;
	int err = 0;

	dp = opendir(path);
	if (!dp)
		return -errno;
	atomic_fetch_add(r->prime ? &d->prime_dirs : &d->ahead_dirs, 1);
	for (;;) {
		struct ahead_dir *e;
		bool skip;

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
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		atomic_fetch_add(
			r->prime ? &d->prime_entries : &d->ahead_entries, 1);
		if (r->budget)
			r->budget--;
		if (!past) {
			past = !strcmp(de->d_name, after);
			continue;
		}
		if (!sub || de->d_type != DT_DIR || de->d_ino > UINT32_MAX)
			continue;
		pthread_mutex_lock(&a->lock);
		e = dir_find(a, (uint32_t)de->d_ino);
		skip = a->stop || (!r->prime && e && e->state == AHEAD_READER);
		pthread_mutex_unlock(&a->lock);
		if (skip || !ino_set_add(&r->seen, (uint32_t)de->d_ino))
			continue;
		err = subdirs_add(sub, path, de->d_name);
		if (err)
			break;
	}
	closedir(dp);
	return err;
}

/*
 * Walk the subtree of @top in the order a depth-first reader takes
 * (listing order), @depth levels below the root, within @r.
 * Return: 0, or -ENOMEM / -ENOTCONN / -ECONNABORTED / -ECANCELED (the walk
 * cannot go on); a directory that cannot be listed is left out.
 */
static int walk_tree(struct ahead *a, struct run *r, const char *top,
		     unsigned int depth)
{
	struct {
		char *path;
		unsigned int depth;
	} *stack = NULL;
	size_t len = 0, cap = 0;
	struct subdirs sub = { 0 };
	int err = 0;

	stack = malloc(sizeof(*stack) * 64);
	if (!stack || !(stack[0].path = strdup(top))) {
		free(stack);
		return -ENOMEM;
	}
	stack[0].depth = depth;
	len = 1;
	cap = 64;
	while (len && !run_over(a, r)) {
		char *path = stack[--len].path;
		unsigned int lvl = stack[len].depth;
		int e = list_dir(a, r, path, NULL, &sub);

		free(path);
		if (e == -ENOMEM || e == -ENOTCONN || e == -ECONNABORTED ||
		    e == -ECANCELED) {
			err = e;
			break;
		}
		if (lvl + 1 >= AHEAD_DEPTH)
			subdirs_clear(&sub);
		if (len + sub.len > cap) {
			size_t ncap = 2 * (len + sub.len);
			void *n = realloc(stack, ncap * sizeof(*stack));

			if (!n) {
				err = -ENOMEM;
				break;
			}
			stack = n;
			cap = ncap;
		}
		/* Reversed, so that the first subdirectory comes out first. */
		while (sub.len) {
			stack[len].path = sub.path[--sub.len];
			stack[len].depth = lvl + 1;
			len++;
		}
	}
	subdirs_clear(&sub);
	free(sub.path);
	while (len)
		free(stack[--len].path);
	free(stack);
	return err;
}

/* -o prime: the whole tree, counted in the prime stats. */
static void run_prime(struct ahead *a)
{
	struct sqcd *d = a->d;
	struct run r = { .prime = true, .budget = UINT64_MAX };
	double secs;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &d->prime_t0);
	ino_set_add(&r.seen, a->root);
	err = walk_tree(a, &r, d->o.canonical, 0);
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
	sqcd_warm_read(d, NULL, 0, 0);
	log_info("primed %llu entries in %llu directories in %.2f s",
		 (unsigned long long)atomic_load(&d->prime_entries),
		 (unsigned long long)atomic_load(&d->prime_dirs), secs);
}

/*
 * A reader listed directory @ino: list on from there in depth-first order
 * (its subtree, then what follows it in each of its ancestors), until the
 * window is spent or a reader moves the walk again.
 */
static void run_walk(struct ahead *a, uint32_t ino, unsigned int gen)
{
	struct run r = { .gen = gen, .budget = a->d->o.statahead };
	size_t top = strlen(a->d->o.canonical);
	struct subdirs sub = { 0 };
	char *path = dir_path(a, ino), *slash;
	unsigned int depth = 0;
	int err;

	if (!path)
		return;
	atomic_fetch_add(&a->d->ahead_walks, 1);
	for (const char *p = path + top; *p; p++)
		depth += *p == '/';
	ino_set_add(&r.seen, ino);
	err = walk_tree(a, &r, path, depth);
	/* Then what follows it in its parent, then in the parent's parent,
	 * up to the mountpoint: @path is cut back one name at a time. */
	while (!err && strlen(path) > top && !run_over(a, &r)) {
		slash = strrchr(path, '/');
		*slash = '\0';
		depth--;
		err = list_dir(a, &r, path, slash + 1, &sub);
		for (size_t i = 0; i < sub.len && !run_over(a, &r); i++)
			if (walk_tree(a, &r, sub.path[i], depth + 1))
				break;
		subdirs_clear(&sub);
	}
	free(sub.path);
	free(r.seen.slot);
	free(path);
}

/* Lookups asked for directory @ino: list it, unless listed meanwhile. */
static void run_one(struct ahead *a, uint32_t ino)
{
	struct run r = { .budget = UINT64_MAX };
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
		list_dir(a, &r, path, NULL, NULL);
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
	if (!dir_add(a, root.ino, NULL, root.ino)) {
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
		    uint32_t ino)
{
	struct ahead *a = d->ahead;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	dir_add(a, parent, name, ino);
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

// SPDX-License-Identifier: MIT
/*
 * This file implements listing ahead (statahead.h), its FUSE side: one
 * thread of the daemon lists directories through the daemon's own mount,
 * so that the kernel holds their entries before a reader asks for them.
 * Each listing is a readdirplus, and the kernel makes a dentry and an
 * inode for every entry it returns, in the lister's context; a reader then
 * finds the entries in the dentry cache and sends nothing.  On a machine with a core to spare,
 * that work moves off the reader's critical path.  Three things start it:
 *
 *   all	statahead=all: the whole tree, once the mount answers (the
 *		mount command waits for it, up to statahead_wait=).
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
 *		as much as it had already paid.  While the image is still
 *		being staged, 4 lookups list a directory: warming then
 *		pushes its files as the stager brings them in.
 *
 * Names only: ImageFolder lists every class folder and stats nothing, and
 * a readdirplus has the kernel make an inode for each entry it returns,
 * which costs it about three times what the listing does: at ImageNet's
 * 1.28M files, most of the time users wait for the first batch.  So a
 * reader's listing gives regular files names and types only (node id 0:
 * the kernel makes nothing for them), and everything else, directories
 * and symlinks, with attributes.  A reader that has made three such
 * listings and looked nothing up in them is listing only: the thread
 * walks ahead of it as above, with listings of names too, which the
 * kernel keeps (it caches a listing whole) and answers the reader from:
 * the kernel's copy of each entry into its cache, which makes a first
 * listing cost about 1.7 times what an uncached one does, is then the
 * thread's, not the reader's.  (A walk that stats looks up
 * in the first directory with files, before a third listing.)  The
 * thread makes the inodes later, off the reader's path,
 * by listing those directories again itself (its own listings carry every
 * attribute; the kernel's cached listing is dropped first, see
 * sqcd_drop_listing()): all of them, in the order readers listed them,
 * once a reader looks up an entry of one (the first epoch opening its
 * samples, or a walk that stats what it listed), and then it walks the
 * tree from the top.  From then on readers' listings carry every
 * attribute again, so a walk that stats is served as before, at the cost
 * of one directory's lookups.  Warming needs those inodes: it can push a
 * file only once the kernel holds its inode.
 *
 * The thread learns what a directory holds, and in which order, from the
 * image itself, and goes through the mount only to have the kernel list a
 * directory it does not hold yet (a pull: opendir, readdir to the end).
 * It makes those requests through the lister process (lister.h), never
 * itself: a thread of the daemon waiting on the daemon's own mount keeps
 * a killed daemon, and its mount, from ever going away.
 * To reach a directory it needs its path: it keeps, for every directory
 * the kernel has been shown, its parent, its name and its inode reference
 * (an image never changes, so neither do they; a lib/index table within
 * STATAHEAD_TABLE_BUDGET bytes), and the state of its listing.  The walk
 * itself, in the image's listing order, is lib/index's idx_walk.  The
 * lister's requests are told apart by its pid, so that they never count as
 * a reader's.
 *
 * Cost: the kernel's dentry and inode per entry (about 1 KB, reclaimable
 * like any other) and the CPU of the listing, at a lower priority than the
 * FUSE workers (the lister process runs at the thread's priority; it
 * holds no memory of the daemon's).  While a directory is being pulled its
 * descriptor is open, so a plain `umount` at that moment fails with
 * EBUSY; SIGTERM, mountctl umount and `fusermount3 -u -z` always work.
 *
 * Robustness: the thread never leaves the mount (it follows no symlinks,
 * and names come from lib/image, which rejects '/', '.' and '..'), goes
 * through a directory once per run (by inode number: a damaged image may
 * loop; lib/index reports it as corruption), stops at IDX_DEPTH_MAX
 * levels, and ends at once when the daemon stops.  An image error in a
 * directory skips it; the reader that gets there gets the error.
 */
#define LOG_MOD "statahead"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "index/index.h"
#include "lister.h"
#include "statahead.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

#define LOOKUP_QUEUE_MAX 64 /* lookup-started listings waiting at most */
#define LOOKUPS_MIN 4 /* lookups that start a listing, at least */
#define ENTRY_BYTES 24 /* listing bytes per entry, about */
/* Readers' listings of names before names are listed ahead of them. */
#define NAMES_AHEAD_AFTER 3

/* The listing state of a directory the kernel was shown, kept in
 * idx_dir.state (and the lookups since its last listing in .count). */
enum dir_state {
	DIR_NEW, /* not listed since the kernel made its inode */
	DIR_QUEUED, /* lookups queued it for the thread */
	DIR_READER, /* a reader is listing it */
	DIR_LISTED, /* listed whole since the kernel made its inode */
	DIR_NAMES, /* a reader listed it whole, names only */
};

struct statahead {
	struct sqcd *d; /* the daemon */
	struct img *img; /* its image */
	const char *top; /* the mountpoint, canonical */
	uint64_t root_ref; /* the root's inode reference */
	uint32_t root; /* the root's inode number */
	unsigned int window; /* statahead=N: entries a walk may go past */
	bool all; /* statahead=all: list the whole mount first */
	pthread_t thread; /* the listing thread */
	bool running; /* @thread was started */
	atomic_bool stop; /* the daemon is stopping (set under @lock) */
	/* Readers' listings give regular files names only, and the kernel
	 * chooses plain listings past a first batch: set at start, cleared
	 * for good once a reader looks up such a file. */
	atomic_bool list_names;
	/* The lister process (pid; its requests carry it): its listings
	 * carry every attribute, unless it is listing ahead of a reader
	 * that got names only (@lister_names, set by the listing thread
	 * around such a listing). */
	atomic_int lister_pid;
	atomic_bool lister_names;

	pthread_mutex_t lock; /* protects the fields up to @walk_gen */
	struct lister *lister; /* the process the thread lists through */
	pthread_cond_t more; /* work arrived, or stopping */
	struct idx_dirs dirs; /* directories the kernel was shown */
	uint32_t lookup_queue[LOOKUP_QUEUE_MAX]; /* dirs lookups asked for */
	unsigned int lookup_head; /* first of @lookup_queue, a ring */
	unsigned int lookup_len; /* how many are queued */
	uint32_t walk_from; /* where a walk goes on from; 0: nowhere */
	unsigned int walk_gen; /* bumped each time @walk_from is set */
	uint32_t *fill; /* directories listed names only, in that order */
	uint32_t fill_len; /* how many @fill holds */
	uint32_t fill_cap; /* and has room for */
	uint32_t fill_next; /* the next one the thread lists again */
	bool filling; /* a reader looked up in one: list them again */
	unsigned int reader_names; /* readers' listings of names only */

	/* Counters, read by the stats at any time. */
	_Atomic uint64_t walks; /* walks gone on with from a reader */
	_Atomic uint64_t lookup_dirs; /* directories lookups asked for */
	_Atomic uint64_t dirs_listed; /* directories listed ahead */
	_Atomic uint64_t entries_listed; /* entries listed ahead */
	_Atomic int all_state; /* enum statahead_all_state */
	_Atomic uint64_t all_dirs; /* statahead=all: directories listed */
	_Atomic uint64_t all_entries; /* and entries */
	struct timespec all_t0; /* CLOCK_MONOTONIC when it started; @lock */
	_Atomic uint64_t all_ms; /* how long it took, once ended */
	_Atomic uint64_t table_dirs; /* copies of dirs.len and */
	_Atomic uint64_t table_bytes; /* idx_dirs_bytes(), for the stats */
	_Atomic uint64_t names_dirs; /* directories listed names only */
	_Atomic uint64_t filled_dirs; /* and listed again by the thread */
};

/* Whether @req comes from the lister process, not from a reader. */
static bool from_lister(struct statahead *sa, fuse_req_t req)
{
	return fuse_req_ctx(req)->pid == atomic_load(&sa->lister_pid);
}

/* Remember directory @ino.  Called with sa->lock held. */
static void remember_dir(struct statahead *sa, uint32_t parent,
			 const char *name, uint32_t ino, uint64_t ref)
{
	/* Past the budget a directory is not remembered: the thread then
	 * cannot reach it, and readers list it themselves. */
	if (idx_dirs_add(&sa->dirs, parent, name, ino, ref, NULL))
		return;
	atomic_store(&sa->table_dirs, sa->dirs.len);
	atomic_store(&sa->table_bytes, idx_dirs_bytes(&sa->dirs));
}

/* The entry of directory @ino, or NULL.  Called with sa->lock held. */
static struct idx_dir *find_dir(struct statahead *sa, uint32_t ino)
{
	struct idx_dir *e;

	return idx_dirs_find(&sa->dirs, ino, &e) ? NULL : e;
}

/* The path of directory @ino under the mountpoint.  Return: a new string,
 * or NULL if it cannot be built (see idx_dirs_path()). */
static char *dir_path(struct statahead *sa, uint32_t ino)
{
	char *path = NULL;

	pthread_mutex_lock(&sa->lock);
	if (idx_dirs_path(&sa->dirs, sa->root, ino, sa->top, &path))
		path = NULL;
	pthread_mutex_unlock(&sa->lock);
	return path;
}

/* The reference and parent of directory @ino.  Return: false if it is
 * not in the table. */
static bool dir_where(struct statahead *sa, uint32_t ino, uint64_t *ref,
		      uint32_t *parent)
{
	struct idx_dir *e;

	pthread_mutex_lock(&sa->lock);
	e = find_dir(sa, ino);
	if (e) {
		*ref = e->ref;
		*parent = e->parent;
	}
	pthread_mutex_unlock(&sa->lock);
	return e != NULL;
}

/* One run of the thread: statahead=all, or a walk from a reader. */
struct listing_run {
	bool all; /* statahead=all: counted there, never preempted */
	bool names; /* ahead of a reader that gets names only: so does it */
	unsigned int gen; /* sa->walk_gen it started at (walks) */
	struct idx_walk *walk; /* what it goes through, within its window */
};

/* Whether @r should end: the daemon stops, its window is spent, or a
 * reader moved the walk elsewhere. */
static bool run_is_over(struct statahead *sa, const struct listing_run *r)
{
	bool over;

	pthread_mutex_lock(&sa->lock);
	over = sa->stop || idx_walk_is_spent(r->walk) ||
	       (!r->all && sa->walk_gen != r->gen);
	pthread_mutex_unlock(&sa->lock);
	return over;
}

/* What a pull does with a directory (pull_action()). */
enum pull_action {
	PULL_SKIP, /* the kernel holds the listing it needs */
	PULL_LIST, /* list it */
	PULL_RELIST, /* drop the kernel's cached listing, then list it */
};

/* What pull() does with directory @e (NULL: not in the table) for a
 * listing of names only (@names) or with attributes.  Called with
 * sa->lock held. */
static enum pull_action pull_action(const struct idx_dir *e, bool names)
{
	switch (e ? (enum dir_state)e->state : DIR_NEW) {
	case DIR_LISTED:
	case DIR_READER:
		return PULL_SKIP;
	case DIR_NAMES:
	case DIR_QUEUED:
		/* Listed names only, or queued by lookups (which list it
		 * with attributes): enough for names.  For attributes, the
		 * kernel may hold the listing and would answer from its
		 * cache, with no request to make inodes from. */
		return names ? PULL_SKIP : PULL_RELIST;
	case DIR_NEW:
	default:
		return PULL_LIST;
	}
}

/*
 * Have the kernel list @path, directory @ino, through the mount, unless it
 * holds the listing already (or a reader is getting it now).  Counted in
 * the all_* stats for statahead=all (@all), else in dirs and entries.
 * With @names, regular files get names only, as the reader this lists
 * ahead of gets them (the kernel then keeps the listing for that reader,
 * and makes nothing for the files); a listing of names is then enough.
 * Return: 0; -ECANCELED if the daemon stops; -errno of opendir() or
 * readdir().
 */
static int pull(struct statahead *sa, bool all, bool names, const char *path,
		uint32_t ino)
{
	enum pull_action act;
	struct idx_dir *e;
	uint64_t ref = 0, n = 0;
	int err;

	pthread_mutex_lock(&sa->lock);
	e = find_dir(sa, ino);
	act = pull_action(e, names);
	if (e)
		ref = e->ref;
	pthread_mutex_unlock(&sa->lock);
	if (act == PULL_SKIP)
		return 0;
	/* Stopping: no listing more.  The notify is sent only while the
	 * device is open (sqcd_notify_end(), before the unmount). */
	if (atomic_load(&sa->stop))
		return -ECANCELED;
	if (act == PULL_RELIST)
		sqcd_drop_listing(sa->d, ref);
	if (atomic_load(&sa->stop))
		return -ECANCELED;
	atomic_store(&sa->lister_names, names);
	err = lister_list(sa->lister, path, names, &n);
	atomic_store(&sa->lister_names, false);
	if (err)
		return err;
	atomic_fetch_add(all ? &sa->all_dirs : &sa->dirs_listed, 1);
	atomic_fetch_add(all ? &sa->all_entries : &sa->entries_listed, n);
	return 0;
}

/* Whether an error ends the run: the mount is gone, the daemon stops, or
 * memory is short.  Other errors leave one directory out. */
static bool ends_run(int err)
{
	return err == -ENOMEM || err == -ENOTCONN || err == -ECONNABORTED ||
	       err == -ECANCELED;
}

/*
 * Go through what @r's walk holds, in the order a depth-first reader
 * takes (listing order), pulling each directory into the kernel and then
 * going into it.  Return: 0, or an error that ends the run (see
 * ends_run()); a directory that cannot be listed is left out, and one
 * whose listing is damaged is left to the reader that gets there.
 */
static int pull_walk(struct statahead *sa, struct listing_run *r)
{
	const struct idx_walk_dir *dir;
	int err = 0;

	while (!err && !run_is_over(sa, r) && idx_walk_next(r->walk, &dir)) {
		err = pull(sa, r->all, r->names, dir->path, dir->ino);
		if (ends_run(err))
			break;
		if (!err)
			err = idx_walk_descend(r->walk, dir, NULL);
		if (!ends_run(err))
			err = 0;
	}
	return err;
}

/* statahead=all: the whole tree, counted in the all_* stats. */
static void run_all(struct statahead *sa)
{
	struct listing_run r = { .all = true };
	double secs;
	int err;

	pthread_mutex_lock(&sa->lock);
	mono_now(&sa->all_t0);
	pthread_mutex_unlock(&sa->lock);
	err = idx_walk_new(sa->img, UINT64_MAX, &r.walk);
	if (!err)
		err = idx_walk_add(r.walk, sa->root_ref, sa->root, sa->top, 0);
	if (!err)
		err = pull_walk(sa, &r);
	idx_walk_free(r.walk);
	pthread_mutex_lock(&sa->lock);
	secs = mono_since(&sa->all_t0);
	pthread_mutex_unlock(&sa->lock);
	atomic_store(&sa->all_ms, (uint64_t)(secs * 1e3));
	if (atomic_load(&sa->stop) || err) {
		atomic_store(&sa->all_state, STATAHEAD_ALL_STOPPED);
		if (err && !atomic_load(&sa->stop))
			log_warn(
				"listing the mount stopped after %llu entries: %s",
				(unsigned long long)atomic_load(
					&sa->all_entries),
				err_str(err));
		return;
	}
	atomic_store(&sa->all_state, STATAHEAD_ALL_DONE);
	/* For readers about to come: warming may push what was listed. */
	sqcd_emit(&sa->d->events,
		  &(struct sqcd_event){ .type = SQCD_EV_TREE_LISTED });
	log_info("listed %llu entries in %llu directories in %.2f s",
		 (unsigned long long)atomic_load(&sa->all_entries),
		 (unsigned long long)atomic_load(&sa->all_dirs), secs);
}

/*
 * A reader listed directory @ino: go on from there in depth-first order
 * (its subtree, then what follows it in each of its ancestors), until the
 * window is spent or a reader moves the walk again.
 */
static void run_walk(struct statahead *sa, uint32_t ino, unsigned int gen)
{
	struct listing_run r = { .gen = gen,
				 .names = atomic_load(&sa->list_names) };
	struct idx_walk_dir at = { .ino = ino };
	uint32_t parent;
	char *slash;
	int err;

	at.path = dir_path(sa, ino);
	if (!at.path || !dir_where(sa, ino, &at.ref, &parent) ||
	    idx_walk_new(sa->img, sa->window, &r.walk))
		goto out;
	atomic_fetch_add(&sa->walks, 1);
	for (const char *p = at.path + strlen(sa->top); *p; p++)
		at.depth += *p == '/';
	err = idx_walk_add(r.walk, at.ref, ino, at.path, at.depth);
	if (!err)
		err = pull_walk(sa, &r);
	/* Then what follows it in its parent, then in the parent's parent,
	 * up to the mountpoint: the path is cut back one name at a time. */
	while (!err && ino != sa->root && !run_is_over(sa, &r)) {
		struct idx_walk_dir up = { 0, parent, at.depth - 1, at.path };

		ino = parent;
		if (!dir_where(sa, ino, &up.ref, &parent))
			break;
		slash = strrchr(at.path, '/');
		*slash = '\0';
		at.depth--;
		err = idx_walk_descend(r.walk, &up, slash + 1);
		if (!ends_run(err))
			err = pull_walk(sa, &r);
		if (!ends_run(err))
			err = 0;
	}
out:
	idx_walk_free(r.walk);
	free(at.path);
}

/* Lookups asked for directory @ino: list it, unless listed meanwhile. */
static void run_lookups(struct statahead *sa, uint32_t ino)
{
	struct idx_dir *e;
	char *path = NULL;
	bool queued;

	pthread_mutex_lock(&sa->lock);
	e = find_dir(sa, ino);
	queued = e && e->state == DIR_QUEUED;
	pthread_mutex_unlock(&sa->lock);
	if (queued)
		path = dir_path(sa, ino);
	queued = path != NULL;
	if (path) {
		atomic_fetch_add(&sa->lookup_dirs, 1);
		pull(sa, false, false, path, ino);
		free(path);
	}
	/* Listed now, or not listable: count lookups afresh either way. */
	pthread_mutex_lock(&sa->lock);
	e = find_dir(sa, ino);
	if (e && e->state == DIR_QUEUED) {
		e->state = queued ? DIR_LISTED : DIR_NEW;
		e->count = 0;
	}
	pthread_mutex_unlock(&sa->lock);
}

/* A reader looked up in a directory it had listed names only: list again
 * the next of those directories, with every attribute. */
static void run_fill(struct statahead *sa, uint32_t ino)
{
	struct idx_dir *e;
	char *path = NULL;
	bool names;

	pthread_mutex_lock(&sa->lock);
	e = find_dir(sa, ino);
	names = e && e->state == DIR_NAMES;
	pthread_mutex_unlock(&sa->lock);
	if (names)
		path = dir_path(sa, ino);
	if (path && !pull(sa, false, false, path, ino))
		atomic_fetch_add(&sa->filled_dirs, 1);
	free(path);
	pthread_mutex_lock(&sa->lock);
	e = find_dir(sa, ino);
	if (names && e && e->state == DIR_NAMES)
		e->state = DIR_LISTED;
	pthread_mutex_unlock(&sa->lock);
}

/*
 * Start the lister process, the first time there is work for it.  With
 * statahead=all, also wait until the mount answers (the thread starts
 * before the session loop); other work comes from readers' requests.
 * Return: 0, or -errno (logged) and the thread has nothing left to do.
 */
static int start_lister(struct statahead *sa)
{
	struct lister *l;
	int err;

	if (sa->lister)
		return 0;
	err = lister_spawn(&l);
	if (err) {
		log_warn(
			"cannot start the lister process (%s): not listing ahead",
			err_str(err));
		return err;
	}
	atomic_store(&sa->lister_pid, (int)lister_pid(l));
	pthread_mutex_lock(&sa->lock);
	sa->lister = l;
	if (sa->stop) /* statahead_stop() came first */
		lister_cancel(l);
	pthread_mutex_unlock(&sa->lock);
	if (sa->all)
		err = lister_stat(l, sa->top);
	return err;
}

static void *thread_main(void *arg)
{
	struct statahead *sa = arg;

	/* Readers first: this thread, and the lister process it starts,
	 * only use what they leave. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	if (sa->all) {
		if (start_lister(sa)) {
			atomic_store(&sa->all_state, STATAHEAD_ALL_STOPPED);
			return NULL;
		}
		run_all(sa);
	}
	for (;;) {
		uint32_t ino = 0, walk_from = 0, fill = 0;
		unsigned int gen = 0;

		pthread_mutex_lock(&sa->lock);
		while (!sa->stop && !sa->lookup_len && !sa->walk_from &&
		       !(sa->filling && sa->fill_next < sa->fill_len))
			pthread_cond_wait(&sa->more, &sa->lock);
		if (sa->stop) {
			pthread_mutex_unlock(&sa->lock);
			return NULL;
		}
		if (sa->lookup_len) {
			ino = sa->lookup_queue[sa->lookup_head];
			sa->lookup_head =
				(sa->lookup_head + 1) % LOOKUP_QUEUE_MAX;
			sa->lookup_len--;
		} else if (sa->filling && sa->fill_next < sa->fill_len) {
			fill = sa->fill[sa->fill_next++];
		} else {
			walk_from = sa->walk_from;
			gen = sa->walk_gen;
			sa->walk_from = 0;
		}
		pthread_mutex_unlock(&sa->lock);
		if (start_lister(sa))
			return NULL;
		if (ino)
			run_lookups(sa, ino);
		else if (fill)
			run_fill(sa, fill);
		else
			run_walk(sa, walk_from, gen);
	}
}

int statahead_start(struct sqcd *d, void **out)
{
	struct img_inode root;
	struct statahead *sa;
	int err;

	*out = NULL;
	if (!d->o.statahead_all && !d->o.statahead)
		return 0;
	err = img_inode_get(d->img, d->root_ref, &root);
	if (err)
		return err;
	sa = calloc(1, sizeof(*sa));
	if (!sa)
		return -ENOMEM;
	sa->d = d;
	sa->img = d->img;
	sa->top = d->o.canonical;
	sa->root_ref = root.ref;
	sa->root = root.ino;
	sa->window = d->o.statahead;
	sa->all = d->o.statahead_all;
	atomic_store(&sa->list_names, sa->window > 0 && !d->o.list_attrs);
	pthread_mutex_init(&sa->lock, NULL);
	pthread_cond_init(&sa->more, NULL);
	idx_dirs_init(&sa->dirs, 1024, STATAHEAD_TABLE_BUDGET);
	err = idx_dirs_add(&sa->dirs, root.ino, NULL, root.ino, root.ref, NULL);
	if (err)
		goto out_free;
	atomic_store(&sa->table_dirs, sa->dirs.len);
	atomic_store(&sa->table_bytes, idx_dirs_bytes(&sa->dirs));
	if (sa->all) {
		mono_now(&sa->all_t0); /* again once the mount answers */
		atomic_store(&sa->all_state, STATAHEAD_ALL_RUNNING);
	}
	err = -pthread_create(&sa->thread, NULL, thread_main, sa);
	if (err) {
		log_warn("cannot start listing ahead: %s", err_str(err));
		goto out_free;
	}
	sa->running = true;
	*out = sa;
	return 0;

out_free:
	statahead_free(sa);
	return err;
}

void statahead_stop(void *f)
{
	struct statahead *sa = f;

	if (!sa)
		return;
	pthread_mutex_lock(&sa->lock);
	atomic_store(&sa->stop, true);
	pthread_cond_signal(&sa->more);
	lister_cancel(sa->lister); /* a pull under way returns */
	pthread_mutex_unlock(&sa->lock);
}

void statahead_free(void *f)
{
	struct statahead *sa = f;

	if (!sa)
		return;
	statahead_stop(sa);
	if (sa->running)
		pthread_join(sa->thread, NULL);
	lister_free(sa->lister);
	idx_dirs_release(&sa->dirs);
	free(sa->fill);
	pthread_cond_destroy(&sa->more);
	pthread_mutex_destroy(&sa->lock);
	free(sa);
}

/* Polled: one atomic load per millisecond, for a bounded time.  The
 * listing takes about 3 us per entry when nothing competes with it. */
void statahead_ready(void *f)
{
	struct statahead *sa = f;
	struct timespec t0, tick = { 0, 1000000 };
	unsigned int seconds;

	if (!sa || !sa->all || !sa->d->o.statahead_wait)
		return;
	seconds = sa->d->o.statahead_wait;
	mono_now(&t0);
	while (atomic_load(&sa->all_state) == STATAHEAD_ALL_RUNNING &&
	       mono_since(&t0) < seconds)
		nanosleep(&tick, NULL);
	if (atomic_load(&sa->all_state) == STATAHEAD_ALL_RUNNING)
		log_info(
			"listing the mount goes on after the mount command returned (%llu entries so far; statahead_wait=%u s)",
			(unsigned long long)atomic_load(&sa->all_entries),
			seconds);
}

void statahead_stats_json(struct statahead *sa, struct json_buf *b)
{
	static const char *const names[] = { "off", "running", "done",
					     "stopped" };
	int state = sa ? atomic_load(&sa->all_state) : STATAHEAD_ALL_OFF;
	double secs = sa ? (double)atomic_load(&sa->all_ms) / 1e3 : 0;

	if (state == STATAHEAD_ALL_RUNNING) {
		pthread_mutex_lock(&sa->lock);
		secs = mono_since(&sa->all_t0);
		pthread_mutex_unlock(&sa->lock);
	}
#define SA_U64(field) (unsigned long long)(sa ? atomic_load(&sa->field) : 0)
	json_buf_printf(b,
			"\"statahead\":{\"window\":%u,\"walks\":%llu,"
			"\"lookup_dirs\":%llu,\"dirs\":%llu,\"entries\":%llu,"
			"\"all_state\":\"%s\",\"all_dirs\":%llu,"
			"\"all_entries\":%llu,\"all_seconds\":%.3f,"
			"\"table_dirs\":%llu,\"table_bytes\":%llu,"
			"\"table_budget\":%llu,\"names_only\":%s,"
			"\"names_dirs\":%llu,\"filled_dirs\":%llu},",
			sa ? sa->window : 0, SA_U64(walks), SA_U64(lookup_dirs),
			SA_U64(dirs_listed), SA_U64(entries_listed),
			names[state & 3], SA_U64(all_dirs), SA_U64(all_entries),
			secs, SA_U64(table_dirs), SA_U64(table_bytes),
			(unsigned long long)(sa ? STATAHEAD_TABLE_BUDGET : 0),
			sa && atomic_load(&sa->list_names) ? "true" : "false",
			SA_U64(names_dirs), SA_U64(filled_dirs));
#undef SA_U64
}

/* The kernel was shown directory @dir, @name in @parent: remember where it
 * is, so that the listing thread can reach it. */
static void shown_dir(struct statahead *sa, uint32_t parent, const char *name,
		      const struct img_inode *dir)
{
	pthread_mutex_lock(&sa->lock);
	remember_dir(sa, parent, name, dir->ino, dir->ref);
	pthread_mutex_unlock(&sa->lock);
}

/* Whether the stager is still bringing the image into RAM. */
static bool is_staging(struct img *img)
{
	return !stage_is_done(img_stage(img));
}

/* A reader looked up @child, an entry of @dir that exists: once enough of
 * its entries were, the thread lists it. */
static void looked_up(struct statahead *sa, fuse_req_t req,
		      const struct img_inode *dir,
		      const struct img_inode *child)
{
	struct idx_dir *e;
	uint32_t want;

	if (!sa->window || from_lister(sa, req))
		return;
	want = (uint32_t)MIN(dir->size / ENTRY_BYTES / 8, UINT32_MAX);
	want = MAX(want, LOOKUPS_MIN);
	/* While the image is staged from slow storage, listing is worth
	 * more than the lookups it saves: warming can push a file only once
	 * the kernel holds its inode, and then pushes it as soon as the
	 * stager brings it in, before a reader asks. */
	if (sa->d->o.warm && is_staging(sa->img))
		want = LOOKUPS_MIN;
	pthread_mutex_lock(&sa->lock);
	e = find_dir(sa, dir->ino);
	/* An entry of a listing that was names only is wanted after all:
	 * list them all again, and readers get attributes from now on. */
	if (e && e->state == DIR_NAMES && child->type == IMG_REG &&
	    !sa->filling) {
		sa->filling = true;
		atomic_store(&sa->list_names, false);
		/* A reader that stats what it listed: once the listings are
		 * done again, walk the tree from the top (within the window:
		 * what is listed already is only gone through). */
		sa->walk_from = sa->root;
		sa->walk_gen++;
		pthread_cond_signal(&sa->more);
	}
	if (e && ++e->count >= want &&
	    (e->state == DIR_NEW || e->state == DIR_LISTED ||
	     e->state == DIR_NAMES) &&
	    sa->lookup_len < LOOKUP_QUEUE_MAX && !sa->stop) {
		e->state = DIR_QUEUED;
		sa->lookup_queue[(sa->lookup_head + sa->lookup_len++) %
				 LOOKUP_QUEUE_MAX] = e->ino;
		pthread_cond_signal(&sa->more);
	}
	pthread_mutex_unlock(&sa->lock);
}

/* Drop from the list what is done or was forgotten.  Called with
 * sa->lock. */
static void compact_fill(struct statahead *sa)
{
	uint32_t n = 0;
	struct idx_dir *e;

	for (uint32_t i = sa->fill_next; i < sa->fill_len; i++) {
		e = find_dir(sa, sa->fill[i]);
		if (e && e->state == DIR_NAMES)
			sa->fill[n++] = sa->fill[i];
	}
	sa->fill_len = n;
	sa->fill_next = 0;
}

/* Remember that a reader listed @e names only.  Called with sa->lock. */
static void listed_names(struct statahead *sa, struct idx_dir *e)
{
	uint32_t cap;
	uint32_t *p;

	if (e->state == DIR_NAMES)
		return; /* a later batch of the same listing */
	e->state = DIR_NAMES;
	e->count = 0;
	atomic_fetch_add(&sa->names_dirs, 1);
	/* Listed again after a FORGET: keep only what is still to do, so
	 * that the list never outgrows the directories the kernel holds. */
	if (sa->fill_len == sa->fill_cap && sa->fill_len >= 2 * sa->dirs.len)
		compact_fill(sa);
	if (sa->fill_len == sa->fill_cap) {
		cap = sa->fill_cap ? sa->fill_cap * 2 : 256;
		p = realloc(sa->fill, cap * sizeof(*p));
		if (!p)
			return; /* left to lookups */
		sa->fill = p;
		sa->fill_cap = cap;
	}
	sa->fill[sa->fill_len++] = e->ino;
	if (sa->filling)
		pthread_cond_signal(&sa->more);
}

/* A listing of @dir begins (@first) or ends (@eof); regular files got
 * names only in it (@names).  A reader that ends a listing itself has the
 * thread walk on from there; a listing of names only, the reader's or the
 * thread's ahead of it, is listed again later if a reader wants more. */
static void listed(struct statahead *sa, fuse_req_t req,
		   const struct img_inode *dir, bool first, bool eof,
		   bool names)
{
	struct idx_dir *e;
	bool reader, walk;

	reader = !from_lister(sa, req);
	/* Once readers get attributes, a reader's plain listing is the
	 * kernel's choice past a first batch (READDIRPLUS_AUTO), not names
	 * only: a walk that stats looks the rest up itself.  Listing it
	 * again would drop the listing the reader is in, and the walk ahead
	 * must go on from there as from any listing. */
	if (reader && !atomic_load(&sa->list_names))
		names = false;
	pthread_mutex_lock(&sa->lock);
	e = find_dir(sa, dir->ino);
	if (e && eof) {
		walk = reader;
		if (names && (reader || atomic_load(&sa->lister_names))) {
			listed_names(sa, e);
			/* A reader that lists names only and looks up none
			 * of them (ImageFolder) gets listings of names
			 * ahead of it, once it has made a few itself: a
			 * walk that stats looks up in the first one that
			 * has files, and the listings would be made again
			 * with attributes. */
			walk = reader && atomic_load(&sa->list_names) &&
			       ++sa->reader_names >= NAMES_AHEAD_AFTER;
		} else {
			e->state = DIR_LISTED;
			e->count = 0;
		}
		/* A reader got here itself: walk on from here. */
		if (walk && sa->window && !sa->stop) {
			sa->walk_from = e->ino;
			sa->walk_gen++;
			pthread_cond_signal(&sa->more);
		}
	} else if (e && first && reader) {
		e->state = DIR_READER;
	}
	pthread_mutex_unlock(&sa->lock);
}

/* The kernel dropped @ino: a directory's entries went with it, so it may
 * be listed again. */
static void forgot(struct statahead *sa, const struct img_inode *ino)
{
	struct idx_dir *e;

	if (ino->type != IMG_DIR)
		return;
	pthread_mutex_lock(&sa->lock);
	e = find_dir(sa, ino->ino);
	if (e && e->state != DIR_QUEUED) {
		e->state = DIR_NEW;
		e->count = 0;
	}
	pthread_mutex_unlock(&sa->lock);
}

void statahead_on_event(void *arg, const struct sqcd_event *ev)
{
	struct statahead *sa = arg;

	switch (ev->type) {
	case SQCD_EV_LOOKED_UP:
		if (ev->ino->type == IMG_DIR)
			shown_dir(sa, ev->dir->ino, ev->name, ev->ino);
		looked_up(sa, ev->req, ev->dir, ev->ino);
		break;
	case SQCD_EV_ENTRY_LISTED:
		if (ev->ino->type == IMG_DIR)
			shown_dir(sa, ev->dir->ino, ev->name, ev->ino);
		break;
	case SQCD_EV_DIR_LISTED:
		listed(sa, ev->req, ev->dir, ev->first, ev->eof, ev->names);
		break;
	case SQCD_EV_FORGOTTEN:
		forgot(sa, ev->ino);
		break;
	case SQCD_EV_INIT:
		/* Readdirplus for a listing's first batch, and for the next
		 * one after a lookup or a stat in the directory; plain
		 * listings, a third of the bytes, for the rest.  The
		 * lister's own listings are all plus; -o list_attrs wants
		 * every reader's listing plus. */
		if (atomic_load(&sa->list_names) &&
		    (ev->conn->capable & FUSE_CAP_READDIRPLUS_AUTO))
			ev->conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
		break;
	default:
		break;
	}
}

/* A reader's listing while list_names holds, or the lister's of what such
 * a reader is about to list: regular files get names only. */
static bool names_only(void *arg, fuse_req_t req)
{
	struct statahead *sa = arg;

	return atomic_load(&sa->list_names) &&
	       (!from_lister(sa, req) || atomic_load(&sa->lister_names));
}

const struct sqcd_feature statahead_feature = {
	.name = "listing ahead",
	.start = statahead_start,
	.stop = statahead_stop,
	.free = statahead_free,
	.ready = statahead_ready,
	.events = SQCD_EV_BIT(SQCD_EV_LOOKED_UP) |
		  SQCD_EV_BIT(SQCD_EV_ENTRY_LISTED) |
		  SQCD_EV_BIT(SQCD_EV_DIR_LISTED) |
		  SQCD_EV_BIT(SQCD_EV_FORGOTTEN) | SQCD_EV_BIT(SQCD_EV_INIT),
	.on_event = statahead_on_event,
	.names_only = names_only,
};

// SPDX-License-Identifier: MIT
/*
 * This file implements page-cache warming: files that a directory listing
 * has just shown the kernel are pushed into the kernel's page cache in the
 * background (FUSE notify_store), so that the first epoch finds them there
 * instead of sending a read for each.
 *
 * Why it works: a training job lists its dataset first (ImageFolder scans
 * every class folder), and readdirplus makes the kernel instantiate an
 * inode for every entry.  The kernel accepts stored data only for inodes it
 * holds, which is exactly those.  Every file must be copied into the page
 * cache once anyway; doing it here, in file order and without a request
 * and a reply per file, takes the round trips out of the first epoch.
 *
 * Files are also pushed when they are opened, if the opener asks something
 * of the open file first.  CPython's open() asks isatty() of every file
 * (an ioctl, which the kernel always forwards), so a Python reader's first
 * epoch gets each file with that round trip instead of a read's: one round
 * trip per file fewer.  Other readers send a READ of at most 128 KiB (the
 * kernel's readahead) first: the rest of the file is pushed before that
 * READ is answered, so a larger file needs no second one.  A bitmap
 * remembers which files the kernel has been given since it made their
 * inode, so that nothing is pushed twice; a FORGET (the kernel dropped the
 * inode and its pages) clears the bit.
 *
 * A listing alone is no reason to push: find, du, an indexer or a backup
 * walk the tree and stat every file without reading any.  So a listed file
 * is pushed only once some file of the mount has been read (a READ, or the
 * ioctl that CPython's open() sends before one) after it was listed:
 * ImageFolder's listing is followed by the first epoch's reads within
 * moments, and a walk that only stats costs no push at all.
 *
 * Bounds: at most warm= bytes are pushed over the mount's life (the kernel
 * may evict them like any page cache); only bytes already staged are
 * pushed, so warming never reads the storage that readers wait on: it
 * follows the stager through the image, and during a first epoch from
 * slow storage the files the stager has brought in reach the page cache
 * before the readers ask for them; nothing is pushed while a listing goes
 * on; the thread runs at a lower priority than the FUSE workers; each of
 * its two queues (files listed, files a read has followed) grows to 1 Mi
 * files and drops what does not fit.
 */
#define LOG_MOD "warm"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "warm.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

#define WARM_QUEUE_MIN 4096 /* each queue's first size, in files */
#define WARM_QUEUE_MAX (1u << 20) /* files waiting at most: 40 MiB */
#define WARM_FILE_MAX (16u << 20) /* larger files are read on demand */
#define WARM_CHUNK (1u << 20) /* bytes per notify_store */
#define WARM_OPEN_MAX (1u << 20) /* larger opened files are read on demand */
#define WARM_STAGE_POLL_MS 5 /* how often a file not staged yet is tried */

/* The kernel makes inodes from a readdirplus reply after it has been
 * sent, in the lister's context: a push right away could find none. */
#define WARM_DELAY_NS 20000000ll

/* Pushing competes with a listing for the CPU and the FUSE device: on 2
 * busy cores it made a walk of 300,000 entries 2-3 times slower.  So
 * nothing is pushed until no entry has been listed for this long: a
 * listing sends its requests back to back, well under 1 ms apart.  Kept
 * below WARM_DELAY_NS, so the last files of a listing are pushed as soon
 * as before, and a reading that follows the listing gets them early. */
#define WARM_QUIET_NS 10000000ll

struct warm_item {
	uint64_t pos; /* where its data starts in the image: the queue's order */
	fuse_ino_t node; /* the kernel's node id */
	uint64_t ref; /* the inode's reference */
	long long queued; /* CLOCK_MONOTONIC ns when queued */
	uint32_t reads; /* warm->reads when queued */
	bool retried; /* pushed once already, found no inode */
};

struct warm {
	struct sqcd *d; /* the daemon */
	pthread_t thread; /* pushes */
	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t more; /* a file listed, one read while @waiting, or stop */
	/* Files to push: a binary min-heap on item position, so that files
	 * are pushed in the image's order, the stager's.  Only files some
	 * file was read after: one listed since the last read never holds
	 * up those before it. */
	struct warm_item *heap;
	unsigned int cap; /* its size */
	unsigned int len; /* items queued */
	/* Files listed that no read has followed yet, in listing order (so
	 * their @reads never decrease): a ring, that grows while a listing
	 * goes on.  A read moves them all into the heap. */
	struct warm_item *listed;
	unsigned int listed_cap; /* its size */
	unsigned int listed_head; /* the oldest */
	unsigned int listed_len; /* items in it */
	bool stop; /* warm_stop() was called */
	bool full; /* the byte budget is spent */
	long long last_add; /* CLOCK_MONOTONIC ns of the newest listed file */
	/* Bit ino - 1: the kernel was given the file's data since it made
	 * the file's inode.  Lock-free: the bits are only a hint. */
	_Atomic uint64_t *given;
	uint32_t inode_count; /* bits in @given */
	/* FUSE workers pushing an opened file now, and at most how many.  A
	 * push waits on page locks that a reader's pending READ holds, and
	 * that READ needs a free worker: half of them are kept free. */
	atomic_uint opening;
	unsigned int opening_max;
	/* Files read so far (it wraps; only differences count), and whether
	 * the thread sleeps until the next one.  Lock-free, so that a READ
	 * takes no lock; a reader that sees @waiting signals under the lock,
	 * and the thread sets @waiting before it looks at @reads again. */
	atomic_uint reads;
	atomic_bool waiting;
	uint64_t budget; /* -o warm=SIZE: bytes pushed at most */
	_Atomic uint64_t files; /* listed files pushed */
	_Atomic uint64_t bytes; /* their bytes */
	_Atomic uint64_t dropped; /* files not queued: queue full */
	_Atomic uint64_t open_files; /* files pushed when opened */
	_Atomic uint64_t open_bytes; /* their bytes */
};

/*
 * The push counter a thread counts in, and how many may push at once: the
 * transport's, when it limits pushes per queue of threads.
 */
struct warm_gate {
	atomic_uint *busy;
	unsigned int max;
};

static void arm(struct warm *w);
static void enqueue(struct warm *w, const struct warm_item *it);
static void dequeue(struct warm *w, struct warm_item *out);

/* Mark inode number @nr given; return whether it was already. */
static bool given_test_set(struct warm *w, uint32_t nr)
{
	uint64_t bit = 1ull << ((nr - 1) & 63);

	return atomic_fetch_or_explicit(&w->given[(nr - 1) / 64], bit,
					memory_order_relaxed) &
	       bit;
}

static void given_clear(struct warm *w, uint32_t nr)
{
	uint64_t bit = 1ull << ((nr - 1) & 63);

	atomic_fetch_and_explicit(&w->given[(nr - 1) / 64], ~bit,
				  memory_order_relaxed);
}

/*
 * Push @ino from byte @from to its end into the page cache of the kernel's
 * @node.  Return: 0 with *@pushed the bytes pushed; -ENOENT if the kernel
 * holds no such inode; another negative errno.
 */
static int push_file(struct sqcd *d, const struct img_read_ctx *rc,
		     fuse_ino_t node, const struct img_inode *ino,
		     uint64_t from, uint64_t *pushed)
{
	struct img_span spans[64];
	struct sqcd_bytes b = { .spans = spans, .cap = 64, .rc = rc };
	struct fuse_bufvec *bv;
	uint64_t off = from;
	int err = 0;

	*pushed = 0;
	bv = malloc(sizeof(*bv) + 64 * sizeof(struct fuse_buf));
	if (!bv)
		return -ENOMEM;
	while (off < ino->size) {
		err = sqcd_bytes_map(d, ino, off, WARM_CHUNK, &b);
		if (err || !b.n)
			break;
		err = sqcd_bytes_ready(d, ino, off, WARM_CHUNK, &b);
		if (err || !b.n)
			break;
		memset(bv, 0, sizeof(*bv) + 64 * sizeof(struct fuse_buf));
		if (b.fd >= 0) {
			bv->count = 1;
			bv->buf[0].size = b.total;
			bv->buf[0].flags = FUSE_BUF_IS_FD;
			bv->buf[0].fd = b.fd;
		} else {
			bv->count = b.n;
			for (unsigned int i = 0; i < b.n; i++) {
				bv->buf[i].mem = (void *)spans[i].data;
				bv->buf[i].size = spans[i].len;
			}
		}
		err = fuse_lowlevel_notify_store(d->se, node, (off_t)off, bv,
						 0);
		sqcd_bytes_put(d, &b);
		if (err) {
			/* -ENOENT: the kernel let the inode go. */
			log_debug("cannot push node %llu: %s",
				  (unsigned long long)node, err_str(err));
			break;
		}
		off += b.total;
		*pushed = off - from;
	}
	free(bv);
	if (!err && off < ino->size)
		err = -EIO; /* the image ended early; a read reports it */
	return err;
}

/*
 * Push @ino from @from on unless the kernel was given it already, and count
 * the push in @files and @bytes.  Return: as push_file(); 0 if given.
 */
static int push_once(struct warm *w, const struct img_read_ctx *rc,
		     fuse_ino_t node, const struct img_inode *ino,
		     uint64_t from, _Atomic uint64_t *files,
		     _Atomic uint64_t *bytes)
{
	uint64_t pushed;
	int err;

	if (given_test_set(w, ino->ino))
		return 0;
	err = push_file(w->d, rc, node, ino, from, &pushed);
	atomic_fetch_add_explicit(bytes, pushed, memory_order_relaxed);
	if (err)
		given_clear(w, ino->ino); /* the reads will tell */
	else
		atomic_fetch_add_explicit(files, 1, memory_order_relaxed);
	return err;
}

/* Push a listed file, unless the kernel has it already. */
static int warm_file(struct warm *w, const struct warm_item *it)
{
	/* Only bytes in RAM: it never reads what a reader reads twice. */
	static const struct img_read_ctx rc = { IMG_READ_WARM, NULL };
	struct sqcd *d = w->d;
	struct img_inode ino;
	int err;

	err = img_inode_get_as(d->img, &rc, it->ref, &ino);
	if (err || ino.type != IMG_REG || ino.size == 0 ||
	    ino.size > WARM_FILE_MAX)
		return err;
	return push_once(w, &rc, it->node, &ino, 0, &w->files, &w->bytes);
}

/*
 * Sleep until @it is old enough for the kernel to hold its inode and no
 * listing has gone on for WARM_QUIET_NS, in steps of at most that, so
 * that a stop is seen.  Return: false if the daemon is stopping.
 */
static bool wait_quiet(struct warm *w, const struct warm_item *it)
{
	long long until, wait;
	bool stop;

	for (;;) {
		pthread_mutex_lock(&w->lock);
		until = MAX(it->queued + WARM_DELAY_NS,
			    w->last_add + WARM_QUIET_NS);
		stop = w->stop;
		pthread_mutex_unlock(&w->lock);
		if (stop)
			return false;
		wait = until - mono_ns();
		if (wait <= 0)
			return true;
		wait = MIN(wait, WARM_QUIET_NS);
		nanosleep(&(struct timespec){ 0, (long)wait }, NULL);
	}
}

/* Whether staging has ended (or there is none): what is not staged by
 * now stays out of RAM. */
static bool staging_done(struct warm *w)
{
	return stage_is_done(img_stage(w->d->img));
}

static void *warm_main(void *arg)
{
	struct warm *w = arg;
	struct warm_item it;
	int err;

	/* Readers first: this thread only uses what they leave, and only
	 * bytes in RAM, never reading what a reader reads a second time. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	for (;;) {
		pthread_mutex_lock(&w->lock);
		for (;;) {
			arm(w);
			if (w->len || w->stop)
				break;
			/* Only a read arms listed files: be told of reads
			 * while there are some, and of nothing else (a warm
			 * epoch's reads take no lock).  Set before @reads is
			 * looked at again: a reader either sees it and
			 * signals, or its read is seen. */
			atomic_store(&w->waiting, w->listed_len > 0);
			if (w->listed_len) {
				arm(w);
				if (w->len)
					break;
			}
			pthread_cond_wait(&w->more, &w->lock);
		}
		atomic_store(&w->waiting, false);
		if (w->stop) {
			pthread_mutex_unlock(&w->lock);
			return NULL;
		}
		dequeue(w, &it);
		pthread_mutex_unlock(&w->lock);

		if (!wait_quiet(w, &it))
			return NULL;
		if (atomic_load(&w->bytes) >= w->budget) {
			pthread_mutex_lock(&w->lock);
			w->full = true;
			w->len = 0;
			w->listed_len = 0;
			pthread_mutex_unlock(&w->lock);
			log_info(
				"page-cache warming stopped at its budget of %llu bytes",
				(unsigned long long)w->budget);
			return NULL;
		}
		err = warm_file(w, &it);
		if (err == -EAGAIN && !staging_done(w)) {
			/* The stager has not brought it in yet: back in the
			 * queue, and give the stager time.  The queue is in
			 * its order, so this waits for the next file it
			 * brings in; a file listed later that comes earlier
			 * goes first. */
			pthread_mutex_lock(&w->lock);
			enqueue(w, &it);
			pthread_mutex_unlock(&w->lock);
			stage_wait(img_stage(w->d->img), WARM_STAGE_POLL_MS);
		} else if (err == -ENOENT && !it.retried) {
			/* The lister may not have made the inode yet. */
			it.retried = true;
			it.queued = mono_ns();
			pthread_mutex_lock(&w->lock);
			enqueue(w, &it);
			pthread_mutex_unlock(&w->lock);
		}
	}
}

int warm_start(struct sqcd *d, void **out)
{
	struct warm *w;
	int err;

	*out = NULL;
	if (!d->o.warm || d->o.direct_io)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->cap = WARM_QUEUE_MIN;
	w->heap = malloc(w->cap * sizeof(*w->heap));
	w->listed_cap = WARM_QUEUE_MIN;
	w->listed = malloc(w->listed_cap * sizeof(*w->listed));
	w->inode_count = img_get_super(d->img)->inode_count;
	w->given = calloc(w->inode_count / 64 + 1, sizeof(*w->given));
	err = -ENOMEM;
	if (!w->heap || !w->listed || !w->given)
		goto fail;
	w->opening_max = d->o.threads / 2;
	w->budget = d->o.warm;
	w->d = d;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->more, NULL);
	err = -pthread_create(&w->thread, NULL, warm_main, w);
	if (err) {
		pthread_cond_destroy(&w->more);
		pthread_mutex_destroy(&w->lock);
		goto fail;
	}
	*out = w;
	return 0;

fail:
	free(w->given);
	free(w->listed);
	free(w->heap);
	free(w);
	return err;
}

void warm_stop(void *f)
{
	struct warm *w = f;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->more);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
}

void warm_free(void *f)
{
	struct warm *w = f;

	if (!w)
		return;
	pthread_cond_destroy(&w->more);
	pthread_mutex_destroy(&w->lock);
	free(w->given);
	free(w->listed);
	free(w->heap);
	free(w);
}

/*
 * Double the heap, up to WARM_QUEUE_MAX; on failure it stays as it is
 * and the caller drops the item.  Called with w->lock held.  Nothing is
 * pushed while a listing goes on (WARM_QUIET_NS), so the queues must hold
 * a whole listing: 40 bytes a file.
 */
static void grow(struct warm *w)
{
	struct warm_item *n;

	if (w->cap >= WARM_QUEUE_MAX)
		return;
	n = realloc(w->heap, 2 * (size_t)w->cap * sizeof(*n));
	if (!n)
		return;
	w->heap = n;
	w->cap *= 2;
}

/* Double the ring of listed files, as grow(); the items that wrapped
 * around move to the new half.  Called with w->lock held. */
static void grow_listed(struct warm *w)
{
	struct warm_item *n;
	unsigned int wrapped;

	if (w->listed_cap >= WARM_QUEUE_MAX)
		return;
	n = realloc(w->listed, 2 * (size_t)w->listed_cap * sizeof(*n));
	if (!n)
		return;
	wrapped = w->listed_head + w->listed_len > w->listed_cap ?
			  w->listed_head + w->listed_len - w->listed_cap :
			  0;
	memcpy(n + w->listed_cap, n, wrapped * sizeof(*n));
	w->listed = n;
	w->listed_cap *= 2;
}

/*
 * Whether a queue of @cap items holding @len may take one more, after
 * @grow doubled it if full; if not, the item is counted dropped (unless
 * the budget is spent: nothing is queued then).  Called with w->lock held.
 */
static bool has_room(struct warm *w, const unsigned int *len,
		     const unsigned int *cap, void (*grow_fn)(struct warm *))
{
	if (*len == *cap && !w->full && !w->stop)
		grow_fn(w);
	if (w->full || w->stop || *len == *cap) {
		if (!w->full)
			atomic_fetch_add_explicit(&w->dropped, 1,
						  memory_order_relaxed);
		return false;
	}
	return true;
}

/* Keep a listed file until a read follows.  Called with w->lock held. */
static void park(struct warm *w, const struct warm_item *it)
{
	if (!has_room(w, &w->listed_len, &w->listed_cap, grow_listed))
		return;
	w->listed[(w->listed_head + w->listed_len++) % w->listed_cap] = *it;
	/* The thread may sleep deaf to reads: from now on it must hear. */
	if (w->listed_len == 1)
		pthread_cond_signal(&w->more);
}

/* Move the listed files that a read has followed into the heap: the
 * oldest ones, since @reads only grows.  Called with w->lock held. */
static void arm(struct warm *w)
{
	unsigned int now = atomic_load(&w->reads);

	while (w->listed_len && w->listed[w->listed_head].reads != now) {
		enqueue(w, &w->listed[w->listed_head]);
		w->listed_head = (w->listed_head + 1) % w->listed_cap;
		w->listed_len--;
	}
}

static bool item_before(const struct warm_item *a, const struct warm_item *b)
{
	return a->pos < b->pos || (a->pos == b->pos && a->node < b->node);
}

/* Called with w->lock held. */
static void enqueue(struct warm *w, const struct warm_item *it)
{
	unsigned int i, up;

	if (!has_room(w, &w->len, &w->cap, grow))
		return;
	/* Sift up from the new leaf. */
	for (i = w->len++; i > 0; i = up) {
		up = (i - 1) / 2;
		if (!item_before(it, &w->heap[up]))
			break;
		w->heap[i] = w->heap[up];
	}
	w->heap[i] = *it;
}

/* Take the first item (the queue is not empty).  Called with w->lock
 * held. */
static void dequeue(struct warm *w, struct warm_item *out)
{
	struct warm_item last;
	unsigned int i = 0, c;

	*out = w->heap[0];
	last = w->heap[--w->len];
	/* Sift the last leaf down from the root. */
	while ((c = 2 * i + 1) < w->len) {
		if (c + 1 < w->len && item_before(&w->heap[c + 1], &w->heap[c]))
			c++;
		if (!item_before(&w->heap[c], &last))
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	w->heap[i] = last;
}

/* Queue a file that the kernel has just been shown (a listed entry);
 * files are pushed in the order their data lies in the image. */
static void add_listed(struct warm *w, fuse_ino_t node,
		       const struct img_inode *ino)
{
	struct warm_item it = { 0, node, 0, mono_ns(), 0, false };

	it.pos = ino->file.blocks_start;
	it.ref = ino->ref;
	pthread_mutex_lock(&w->lock);
	/* Under the lock: the ring's @reads never decrease. */
	it.reads = atomic_load(&w->reads);
	w->last_add = it.queued;
	park(w, &it);
	pthread_mutex_unlock(&w->lock);
}

/*
 * Push an open file into the page cache, once, from byte @from (0 for a
 * file being opened, or where the READ being answered ends: its own pages
 * stay locked until then) to the end, for files up to WARM_OPEN_MAX,
 * before the caller replies.  Does nothing if the kernel was given the
 * file since it made the inode, or if enough threads are pushing already
 * (a push can wait for a READ, which needs a free thread): those counted
 * in the transport's gate of the calling thread (sqcd_push_gate()), or
 * without one half the FUSE workers.
 */
static void push_open(struct warm *w, fuse_ino_t node,
		      const struct img_inode *ino, uint64_t from)
{
	struct warm_gate gate = { NULL, 0 };
	atomic_uint *busy;
	unsigned int max;

	if (ino->type != IMG_REG || ino->size <= from ||
	    ino->size > WARM_OPEN_MAX)
		return;
	sqcd_push_gate(&gate.busy, &gate.max);
	busy = gate.busy ? gate.busy : &w->opening;
	max = gate.busy ? gate.max : w->opening_max;
	/* Enough workers busy pushing: the reads will do. */
	if (atomic_fetch_add(busy, 1) < max)
		push_once(w, NULL, node, ino, from, &w->open_files,
			  &w->open_bytes);
	atomic_fetch_sub(busy, 1);
}

/*
 * A file's data was asked for (@ino, from @off, @size bytes), or NULL: a
 * reader exists.  Files listed before may now be pushed; a request for
 * all of @ino marks it given, so it is skipped.  Takes no lock unless the
 * warming thread waits for a read.
 */
static void saw_read(struct warm *w, const struct img_inode *ino, uint64_t off,
		     size_t size)
{
	/* A READ of the whole file puts it all in the page cache: marked
	 * before the warming thread can wake up and push it. */
	if (ino && ino->type == IMG_REG && off == 0 && size >= ino->size)
		given_test_set(w, ino->ino);
	atomic_fetch_add(&w->reads, 1);
	if (atomic_load(&w->waiting)) {
		pthread_mutex_lock(&w->lock);
		pthread_cond_signal(&w->more);
		pthread_mutex_unlock(&w->lock);
	}
}

void warm_stats_json(struct warm *w, struct json_buf *b)
{
	json_buf_printf(
		b,
		"\"warm\":{\"budget\":%llu,\"files\":%llu,\"bytes\":%llu,"
		"\"dropped\":%llu,\"open_files\":%llu,\"open_bytes\":%llu},",
		(unsigned long long)(w ? w->budget : 0),
		(unsigned long long)(w ? atomic_load(&w->files) : 0),
		(unsigned long long)(w ? atomic_load(&w->bytes) : 0),
		(unsigned long long)(w ? atomic_load(&w->dropped) : 0),
		(unsigned long long)(w ? atomic_load(&w->open_files) : 0),
		(unsigned long long)(w ? atomic_load(&w->open_bytes) : 0));
}

void warm_on_event(void *arg, const struct sqcd_event *ev)
{
	struct warm *w = arg;

	switch (ev->type) {
	case SQCD_EV_ENTRY_LISTED:
		if (ev->ino->type == IMG_REG)
			add_listed(w, ev->node, ev->ino);
		break;
	case SQCD_EV_RANGE_READ:
		saw_read(w, ev->ino, ev->off, ev->size);
		/* A file larger than the kernel's first READ: push the rest
		 * before the reply, so that reading on needs no second
		 * round trip. */
		if (ev->off == 0 && ev->size < ev->ino->size)
			push_open(w, ev->node, ev->ino, ev->size);
		break;
	case SQCD_EV_READER:
	case SQCD_EV_TREE_LISTED:
		saw_read(w, NULL, 0, 0);
		break;
	case SQCD_EV_FILE_OPENED:
		push_open(w, ev->node, ev->ino, 0);
		break;
	case SQCD_EV_FORGOTTEN:
		/* The kernel's pages of the file went with its inode. */
		if (ev->ino->type == IMG_REG)
			given_clear(w, ev->ino->ino);
		break;
	default:
		break;
	}
}

const struct sqcd_feature warm_feature = {
	.name = "warming",
	.start = warm_start,
	.stop = warm_stop,
	.free = warm_free,
	.events = SQCD_EV_BIT(SQCD_EV_ENTRY_LISTED) |
		  SQCD_EV_BIT(SQCD_EV_RANGE_READ) |
		  SQCD_EV_BIT(SQCD_EV_READER) |
		  SQCD_EV_BIT(SQCD_EV_FILE_OPENED) |
		  SQCD_EV_BIT(SQCD_EV_TREE_LISTED) |
		  SQCD_EV_BIT(SQCD_EV_FORGOTTEN),
	.on_event = warm_on_event,
};

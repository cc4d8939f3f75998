// SPDX-License-Identifier: MIT
/*
 * This file implements the one bounded reader of image bytes, and staging:
 * the copy of the compressed image that a background thread streams into
 * RAM so that reads stop touching the storage the image sits on.
 *
 * Design.  The staged copy is one anonymous mapping as long as the image,
 * laid out at the same offsets, so any staged range is contiguous and can
 * be handed to a decompressor without a copy.  Pages of chunks that are not
 * planned are never touched and cost no memory; the plan holds at most the
 * RAM budget.
 *
 * Each byte of the image is read from the file once.  A chunk of the plan
 * is brought in by whoever needs it first: the stager threads walking the
 * plan, or a reader (a FUSE request, a readahead worker) that reads inside
 * it, which then reads the whole chunk into the staged copy rather than
 * only its range.  A compare-and-swap from PLANNED to INFLIGHT decides who
 * reads it; everyone else waits on the condition variable for that read
 * instead of reading the bytes a second time.  Chunks are small (128 KiB)
 * so that a reader waits for little more than its own range; the stager
 * reads runs of them, 1 MiB aligned, as many at once as the storage serves
 * without queueing them (pace()), so a reader's read queues behind few.
 * Bytes outside the plan (stage=none or meta, past ram=) are read from the
 * file at once, with pread() of just the range.
 */
#define LOG_MOD "image"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image/image_i.h"
#include "util/ckd.h"
#include "util/clock.h"
#include "util/log.h"

/* Per-thread buffers, allocated on first use, freed at thread exit. */
static pthread_key_t scratch_key, reply_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static bool tls_ok;

static void tls_init(void)
{
	/* Fails only when the process is out of keys: then ENOMEM. */
	tls_ok = !pthread_key_create(&scratch_key, free) &&
		 !pthread_key_create(&reply_key, free);
}

static void *tls_buf(pthread_key_t *key, size_t size)
{
	void *p;

	pthread_once(&tls_once, tls_init);
	if (!tls_ok)
		return NULL;
	p = pthread_getspecific(*key);
	if (p)
		return p;
	p = malloc(size);
	if (p && pthread_setspecific(*key, p)) {
		free(p);
		return NULL;
	}
	return p;
}

void *img__scratch(void)
{
	return tls_buf(&scratch_key, IMG_SCRATCH_SIZE);
}

/* The caller's own reply buffer, if it named one. */
static _Thread_local void *reply_own;

void img_reply_buf_use(void *buf)
{
	reply_own = buf;
}

void *img__reply_buf(void)
{
	return reply_own ? reply_own : tls_buf(&reply_key, IMG_REPLY_BYTES);
}

static _Thread_local int read_source; /* enum img_read_source */

void img_read_source(enum img_read_source src)
{
	read_source = (int)src;
}

/* Bytes in chunks [c, c + n), the last one maybe short. */
static uint64_t chunks_len(const struct img *img, uint32_t c, uint32_t n)
{
	uint64_t start = (uint64_t)c << IMG_CHUNK_SHIFT;

	return MIN((uint64_t)n << IMG_CHUNK_SHIFT, img->sb.bytes_used - start);
}

static uint64_t chunk_len(const struct img *img, uint32_t c)
{
	return chunks_len(img, c, 1);
}

/*
 * Claim chunk @c and up to @max - 1 planned chunks right after it, moving
 * each from PLANNED to INFLIGHT.  Returns how many were claimed: 0 when @c
 * itself is not planned (*s then holds its state).
 */
static uint32_t run_claim(struct img_stage *st, uint32_t c, uint32_t max,
			  uint8_t *s)
{
	uint32_t n = 0;

	*s = IMG_CHUNK_PLANNED;
	if (!atomic_compare_exchange_strong(&st->chunk[c], s,
					    IMG_CHUNK_INFLIGHT))
		return 0;
	for (n = 1; n < max && c + n < st->nchunks; n++) {
		uint8_t p = IMG_CHUNK_PLANNED;

		if (!atomic_compare_exchange_strong(&st->chunk[c + n], &p,
						    IMG_CHUNK_INFLIGHT))
			break;
	}
	return n;
}

static int file_pread_as(struct img *img, uint64_t off, void *dst, size_t len,
			 int src);

bool img__may_read_file(const struct img *img)
{
	return read_source != IMG_READ_WARM || img->in_ram;
}

/*
 * How many stager reads to keep under way, from how long they take (the
 * rule of TCP Vegas).  The fastest full-run read seen is the storage's
 * time with no queue; once per round (target reads), the mean time says
 * how many reads wait in a queue:
 *
 *	queued = target * (1 - rtt_min / rtt_mean)
 *
 * Fewer than IMG_STAGE_QUEUE_LOW: the storage has room (another server, a
 * free share of a link) and the target grows by one.  More than
 * IMG_STAGE_QUEUE_HIGH: reads queue behind each other, or behind readers'
 * reads, and it shrinks by one.  So a reader's read waits behind a few
 * stager reads at most, and a store that serves many reads at once gets
 * as many.
 * Context: under st->lock, after a stager read of IMG_STAGE_RUN chunks.
 */
static void pace(struct img_stage *st, int64_t rtt)
{
	double queued;

	if (rtt <= 0)
		return;
	if (!st->rtt_min || rtt < st->rtt_min)
		st->rtt_min = rtt;
	st->rtt_sum += rtt;
	if (++st->rtt_n < st->target)
		return;
	st->rtt_last = st->rtt_sum / st->rtt_n;
	queued =
		st->target * (1.0 - (double)st->rtt_min / (double)st->rtt_last);
	if (queued < IMG_STAGE_QUEUE_LOW && st->target < IMG_STAGE_TARGET_MAX)
		st->target++;
	else if (queued > IMG_STAGE_QUEUE_HIGH && st->target > 1)
		st->target--;
	st->rtt_sum = 0;
	st->rtt_n = 0;
}

/*
 * Read chunks [c, c + n), which the caller moved to INFLIGHT, into the
 * staged copy with one pread.
 * @stager: the caller is a stager thread (it counted itself in inflight).
 */
static int chunk_read(struct img *img, uint32_t c, uint32_t n, bool stager)
{
	struct img_stage *st = &img->stage;
	uint64_t start = (uint64_t)c << IMG_CHUNK_SHIFT;
	uint64_t len = chunks_len(img, c, n);
	int64_t t0 = mono_ns();
	uint8_t done;
	int err;

	err = file_pread_as(img, start, st->mem + start, (size_t)len,
			    stager ? IMG_READ_STAGER : read_source);
	if (!err) {
		atomic_fetch_add(&st->staged, len);
		if (!stager) {
			atomic_fetch_add(&st->by_readers, len);
			/* A fill that continues the last one is a reader
			 * streaming ahead of the stager: the stager goes on
			 * after it.  Readers in random order leave it be. */
			if (atomic_exchange(&st->fill_end, c + n) == c)
				atomic_store(&st->follow, c + n);
		}
		/* The staged copy serves these bytes from now on; keep the
		 * page cache from holding them a second time. */
		if (!img->in_ram)
			posix_fadvise(img->fd, (off_t)(start + img->offset),
				      (off_t)len, POSIX_FADV_DONTNEED);
		done = IMG_CHUNK_STAGED;
	} else {
		/* Give the untouched pages back; readers go to the file. */
		madvise(st->mem + start, (size_t)len, MADV_DONTNEED);
		done = IMG_CHUNK_FAILED;
	}
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&st->chunk[c + i], done,
				      memory_order_release);
	pthread_mutex_lock(&st->lock);
	st->filling--;
	if (stager) {
		unsigned int was = st->target;

		st->inflight--;
		if (!err && n == IMG_STAGE_RUN && !(c % IMG_STAGE_RUN))
			pace(st, mono_ns() - t0);
		/* A slot is free: one stager may take it (more if the
		 * target grew). */
		if (st->target > was)
			pthread_cond_broadcast(&st->slot);
		else
			pthread_cond_signal(&st->slot);
	}
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
	return err;
}

/*
 * Make chunk @c staged for a reader: it is, or another thread is reading
 * it (wait), or it is planned: then read it, with the planned chunks after
 * it up to @last, in one pread.  False if it stays out of RAM: not
 * planned, or its read failed.
 */
static bool chunk_fill(struct img *img, uint32_t c, uint32_t last)
{
	struct img_stage *st = &img->stage;
	uint32_t n;
	uint8_t s;

	/* Warming takes only what is staged: it neither reads the file nor
	 * waits for a read under way (it tries again later). */
	if (!img__may_read_file(img))
		return false;
	n = run_claim(st, c, last - c + 1, &s);
	if (n) {
		pthread_mutex_lock(&st->lock);
		st->filling++;
		pthread_mutex_unlock(&st->lock);
		return chunk_read(img, c, n, false) == 0;
	}
	if (s == IMG_CHUNK_INFLIGHT) {
		pthread_mutex_lock(&st->lock);
		while ((s = atomic_load_explicit(&st->chunk[c],
						 memory_order_acquire)) ==
		       IMG_CHUNK_INFLIGHT)
			pthread_cond_wait(&st->cond, &st->lock);
		pthread_mutex_unlock(&st->lock);
	}
	return s == IMG_CHUNK_STAGED;
}

const void *img__staged_ptr(struct img *img, uint64_t off, size_t len)
{
	struct img_stage *st = &img->stage;
	uint64_t end, c, last;

	if (ckd_add(&end, off, len) || end > img->sb.bytes_used)
		return NULL;
	if (!st->mem || !len)
		return NULL;
	c = off >> IMG_CHUNK_SHIFT;
	last = (end - 1) >> IMG_CHUNK_SHIFT;
	for (; c <= last; c++)
		if (atomic_load_explicit(&st->chunk[c], memory_order_acquire) !=
			    IMG_CHUNK_STAGED &&
		    !chunk_fill(img, (uint32_t)c, (uint32_t)last))
			return NULL;
	return st->mem + off;
}

/* Read from the file itself; short reads are the file shrinking under us.
 * @src: on whose behalf (enum img_read_source), for the counts. */
static int file_pread_as(struct img *img, uint64_t off, void *dst, size_t len,
			 int src)
{
	size_t done = 0;
	ssize_t n;

	if (atomic_load_explicit(&img->changed, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&img->src_errors, 1,
					  memory_order_relaxed);
		return -EIO;
	}
	/* bytes_used <= file_size = size - offset, checked at open. */
	off += img->offset;
	while (done < len) {
		n = pread(img->fd, (char *)dst + done, len - done,
			  (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : 0;

			atomic_fetch_add_explicit(&img->src_errors, 1,
						  memory_order_relaxed);
			if (img__log_once(img, __FILE__, __LINE__)) {
				if (err)
					log_err("cannot read image '%s' at %llu: %s",
						img->path,
						(unsigned long long)(off +
								     done),
						err_str(err));
				else
					log_err("image '%s' ends at %llu, before the %llu bytes its superblock claims (truncated while mounted?)",
						img->path,
						(unsigned long long)(off +
								     done),
						(unsigned long long)
							img->sb.bytes_used);
			}
			return -EIO;
		}
		done += (size_t)n;
	}
	atomic_fetch_add_explicit(&img->src_reads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&img->src_bytes, len, memory_order_relaxed);
	atomic_fetch_add_explicit(&img->src_by[src], len, memory_order_relaxed);
	return 0;
}

/* A read outside the staged copy, on behalf of this thread. */
static int file_pread(struct img *img, uint64_t off, void *dst, size_t len)
{
	if (!img__may_read_file(img))
		return -EAGAIN;
	return file_pread_as(img, off, dst, len, read_source);
}

int img__src(struct img *img, uint64_t off, size_t len, void *scratch,
	     size_t cap, const void **out)
{
	uint64_t end;
	const void *p;
	int err;

	if (ckd_add(&end, off, len) || end > img->sb.bytes_used)
		return IMG_CORRUPT(
			img,
			"read of %zu bytes at %llu is past the end of the filesystem (%llu)",
			len, (unsigned long long)off,
			(unsigned long long)img->sb.bytes_used);
	if (len > cap)
		return IMG_CORRUPT(
			img,
			"read of %zu bytes at %llu exceeds its buffer (%zu)",
			len, (unsigned long long)off, cap);
	p = img__staged_ptr(img, off, len);
	if (p) {
		*out = p;
		return 0;
	}
	err = file_pread(img, off, scratch, len);
	if (err)
		return err;
	*out = scratch;
	return 0;
}

int img__read(struct img *img, uint64_t off, void *dst, size_t len)
{
	uint64_t end;
	const void *p;

	if (ckd_add(&end, off, len) || end > img->sb.bytes_used)
		return IMG_CORRUPT(
			img,
			"read of %zu bytes at %llu is past the end of the filesystem (%llu)",
			len, (unsigned long long)off,
			(unsigned long long)img->sb.bytes_used);
	p = img__staged_ptr(img, off, len);
	if (p) {
		memcpy(dst, p, len);
		return 0;
	}
	return file_pread(img, off, dst, len);
}

static void plan_add(struct img *img, uint32_t c)
{
	struct img_stage *st = &img->stage;
	uint64_t len = chunk_len(img, c);
	uint8_t s = atomic_load(&st->chunk[c]);

	if (s == IMG_CHUNK_STAGED || s == IMG_CHUNK_INFLIGHT)
		return; /* counted in planned already */
	if (st->planned + len > st->budget)
		return;
	/* EMPTY or FAILED (tried again) become PLANNED; a reader may claim
	 * the chunk from here on. */
	atomic_store(&st->chunk[c], IMG_CHUNK_PLANNED);
	st->plan[st->plan_len++] = c;
	st->planned += len;
}

/* Plan every chunk not in RAM yet, metadata first, within the budget.
 * Context: under st->lock, or before any reader runs. */
static void plan_build(struct img *img, enum img_stage_mode mode)
{
	struct img_stage *st = &img->stage;
	uint32_t meta_first, c;
	uint64_t held = 0;

	for (c = 0; c < st->nchunks; c++) {
		uint8_t s = atomic_load(&st->chunk[c]);

		if (s == IMG_CHUNK_STAGED || s == IMG_CHUNK_INFLIGHT)
			held += chunk_len(img, c);
	}
	st->plan_len = 0;
	st->plan_pos = 0;
	st->mode = (int)mode;
	st->planned = held;
	st->base = atomic_load(&st->staged);
	atomic_store(&st->error, 0);
	/* Metadata first: a mount answers lookups from it at once. */
	/* Planned before the tables are checked: the superblock's inode
	 * table position is not trusted here, only clamped. */
	meta_first = (uint32_t)MIN(img->sb.inode_table >> IMG_CHUNK_SHIFT,
				   (uint64_t)st->nchunks);
	for (c = meta_first; c < st->nchunks; c++)
		plan_add(img, c);
	st->plan_meta = st->plan_len;
	if (mode == IMG_STAGE_FULL)
		for (c = 0; c < meta_first; c++)
			plan_add(img, c);
}

int img__stage_init(struct img *img, const struct img_opts *o)
{
	struct img_stage *st = &img->stage;
	uint64_t used = img->sb.bytes_used;
	enum img_stage_mode mode = o->stage;

	atomic_store(&st->state, IMG_STAGE_OFF);
	if (mode == IMG_STAGE_AUTO)
		mode = img->in_ram ? IMG_STAGE_NONE : IMG_STAGE_FULL;
	/*
	 * The mapping and the chunk table exist even when nothing is to be
	 * staged now (they cost address space, one byte and one plan entry
	 * per 1 MiB chunk), so that img_stage_resume() can start staging
	 * later without readers ever seeing them change.
	 */
	st->budget = o->ram;
	st->nchunks = (uint32_t)DIV_ROUND_UP(used, (uint64_t)IMG_CHUNK_SIZE);
	st->map_len = (size_t)used;
	st->mem = mmap(NULL, st->map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (st->mem == MAP_FAILED) {
		st->mem = NULL;
		if (mode != IMG_STAGE_NONE && o->ram)
			log_warn(
				"cannot reserve address space to stage '%s' (%s); reading on demand",
				img->path, err_str(errno));
		return 0;
	}
	st->chunk = calloc(st->nchunks, sizeof(*st->chunk));
	st->plan = calloc(st->nchunks, sizeof(*st->plan));
	if (!st->chunk || !st->plan) {
		img__stage_release(img);
		return -ENOMEM;
	}
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->cond, NULL);
	pthread_cond_init(&st->slot, NULL);
	st->sync = true;
	atomic_store(&st->follow, UINT32_MAX);
	atomic_store(&st->fill_end, UINT32_MAX);
	st->target = IMG_STAGE_TARGET_START;
	st->mode = (int)IMG_STAGE_NONE;
	if (mode == IMG_STAGE_NONE || o->ram == 0)
		return 0;
	plan_build(img, mode);
	atomic_store(&st->state, IMG_STAGE_IDLE);
	return 0;
}

void img__stage_release(struct img *img)
{
	struct img_stage *st = &img->stage;

	if (st->mem)
		munmap(st->mem, st->map_len);
	st->mem = NULL;
	free(st->chunk);
	st->chunk = NULL;
	if (st->sync) {
		pthread_cond_destroy(&st->cond);
		pthread_cond_destroy(&st->slot);
		pthread_mutex_destroy(&st->lock);
		st->sync = false;
	}
	free(st->plan);
	st->plan = NULL;
}

/*
 * Take the next run of chunks for a stager thread: its first chunk, and in
 * *n how many (at most IMG_STAGE_RUN); UINT32_MAX when the plan is done.
 * Under lock.
 */
static uint32_t plan_take(struct img *img, uint32_t *n, uint32_t run)
{
	struct img_stage *st = &img->stage;
	uint32_t c = atomic_load(&st->follow);
	uint8_t s;

	/* Where the readers are, once the metadata is in. */
	if (st->plan_pos >= st->plan_meta && c < st->nchunks &&
	    (*n = run_claim(st, c, run - c % run, &s))) {
		atomic_store(&st->follow, c + *n);
		return c;
	}
	while (st->plan_pos < st->plan_len) {
		c = st->plan[st->plan_pos++];
		if ((*n = run_claim(st, c, run - c % run, &s)))
			return c;
	}
	return UINT32_MAX;
}

int img_stage_next(struct img *img)
{
	struct img_stage *st = &img->stage;
	struct timespec until;
	uint32_t c, n;
	int err;

	if (!st->mem)
		return 0;
	pthread_mutex_lock(&st->lock);
	if (atomic_exchange(&st->want, false)) {
		enum img_stage_mode mode = atomic_load(&st->want_mode);

		if (st->mode == IMG_STAGE_FULL)
			mode = IMG_STAGE_FULL;
		st->budget = MAX(atomic_load(&st->budget),
				 atomic_load(&st->want_budget));
		plan_build(img, mode);
	}
	if (st->inflight >= st->target) {
		/* Enough under way: wait for one to end, then ask again. */
		deadline_in_ms(&until, IMG_STAGE_WAIT_MS);
		pthread_cond_timedwait(&st->slot, &st->lock, &until);
		pthread_mutex_unlock(&st->lock);
		return 1;
	}
	c = plan_take(img, &n, IMG_STAGE_RUN);
	if (c == UINT32_MAX) {
		/* Done once the last chunk read, a reader's too, is in. */
		while (st->filling)
			pthread_cond_wait(&st->cond, &st->lock);
		if (st->mode != IMG_STAGE_NONE)
			atomic_store(&st->state, IMG_STAGE_DONE);
		pthread_mutex_unlock(&st->lock);
		return 0;
	}
	atomic_store(&st->state, IMG_STAGE_RUNNING);
	st->filling++;
	st->inflight++;
	st->inflight_max = MAX(st->inflight_max, st->inflight);
	pthread_mutex_unlock(&st->lock);

	img_read_source(IMG_READ_STAGER);
	err = chunk_read(img, c, n, true);
	if (err) {
		/* Stop here: the storage is failing, and each read of it may
		 * take long.  What is not staged is read from the file. */
		pthread_mutex_lock(&st->lock);
		st->plan_pos = st->plan_len;
		pthread_mutex_unlock(&st->lock);
		if (!atomic_exchange(&st->error, -err))
			log_err("staging of '%s' stopped at %llu: %s; what is not in RAM is read from the image file",
				img->path,
				(unsigned long long)c << IMG_CHUNK_SHIFT,
				err_str(err));
	}
	return 1;
}

void img__stage_inflight(struct img *img, unsigned int *now, unsigned int *max,
			 unsigned int *target, double *rtt_min_ms,
			 double *rtt_ms)
{
	struct img_stage *st = &img->stage;

	*now = *max = *target = 0;
	*rtt_min_ms = *rtt_ms = 0;
	if (!st->sync)
		return;
	pthread_mutex_lock(&st->lock);
	*now = st->inflight;
	*max = st->inflight_max;
	*target = st->target;
	*rtt_min_ms = (double)st->rtt_min / 1e6;
	*rtt_ms = (double)st->rtt_last / 1e6;
	pthread_mutex_unlock(&st->lock);
}

int img_stage_resume(struct img *img, enum img_stage_mode mode, uint64_t budget)
{
	struct img_stage *st = &img->stage;

	if (mode != IMG_STAGE_FULL && mode != IMG_STAGE_META)
		return -EINVAL;
	if (!st->mem)
		return -ENOMEM;
	atomic_store(&st->want_mode, (int)mode);
	atomic_store(&st->want_budget, budget);
	/* Idle before the request shows, so that the stager's "done" for
	 * the old plan cannot come after it. */
	atomic_store(&st->state, IMG_STAGE_IDLE);
	atomic_store(&st->want, true);
	return 0;
}

enum img_stage_state img_stage_state(const struct img *img)
{
	return (enum img_stage_state)atomic_load(&img->stage.state);
}

bool img_check_changed(struct img *img)
{
	struct stat st;

	if (atomic_load(&img->changed))
		return true;
	if (fstat(img->fd, &st))
		return false;
	if (!S_ISREG(st.st_mode))
		return false;
	/* Size and mtime only: a rename over the image's path unlinks our
	 * inode and bumps its ctime, yet the bytes we read stay the same. */
	if ((uint64_t)st.st_size == img->file_size + img->offset &&
	    st.st_mtim.tv_sec == img->mtime.tv_sec &&
	    st.st_mtim.tv_nsec == img->mtime.tv_nsec)
		return false;
	if (!atomic_exchange(&img->changed, true))
		log_err("image '%s' changed while mounted; bytes not yet in RAM will fail with EIO (remount to serve the new image)",
			img->path);
	return true;
}

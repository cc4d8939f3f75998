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
 * RAM budget.  A chunk becomes visible to readers by a release store of its
 * ready flag after its bytes are written; readers load it with acquire.
 * Bytes that are not staged yet are read from the file with pread(), at
 * once, so a read never waits for the stream to reach it.
 */
#define LOG_MOD "image"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image_i.h"
#include "util/ckd.h"
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

static bool range_staged(struct img *img, uint64_t off, size_t len)
{
	struct img_stage *st = &img->stage;
	uint64_t c, last;

	if (!st->mem || !len)
		return false;
	c = off >> IMG_CHUNK_SHIFT;
	last = (off + len - 1) >> IMG_CHUNK_SHIFT;
	for (; c <= last; c++)
		if (!atomic_load_explicit(&st->ready[c], memory_order_acquire))
			return false;
	return true;
}

const void *img__staged_ptr(struct img *img, uint64_t off, size_t len)
{
	uint64_t end;

	if (ckd_add(&end, off, len) || end > img->sb.bytes_used)
		return NULL;
	if (!range_staged(img, off, len))
		return NULL;
	return img->stage.mem + off;
}

/* Read from the file itself; short reads are the file shrinking under us. */
static int file_pread(struct img *img, uint64_t off, void *dst, size_t len)
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
	return 0;
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

static void plan_add(struct img_stage *st, uint32_t c, uint64_t bytes_used)
{
	uint64_t start = (uint64_t)c << IMG_CHUNK_SHIFT;
	uint64_t len = MIN((uint64_t)IMG_CHUNK_SIZE, bytes_used - start);

	if (st->planned + len > st->budget)
		return;
	st->plan[st->plan_len++] = c;
	st->planned += len;
}

/* Plan every chunk not in RAM yet, metadata first, within the budget. */
static void plan_build(struct img *img, enum img_stage_mode mode)
{
	struct img_stage *st = &img->stage;
	uint64_t used = img->sb.bytes_used;
	uint32_t meta_first, c;

	st->plan_len = 0;
	st->plan_pos = 0;
	st->mode = (int)mode;
	st->planned = atomic_load(&st->staged);
	st->base = st->planned;
	/* Metadata first: a mount answers lookups from it at once. */
	meta_first = (uint32_t)(img->sb.inode_table >> IMG_CHUNK_SHIFT);
	for (c = meta_first; c < st->nchunks; c++)
		if (!atomic_load(&st->ready[c]))
			plan_add(st, c, used);
	if (mode == IMG_STAGE_FULL)
		for (c = 0; c < meta_first; c++)
			if (!atomic_load(&st->ready[c]))
				plan_add(st, c, used);
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
	 * per 2 MiB chunk), so that img_stage_resume() can start staging
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
	st->ready = calloc(st->nchunks, sizeof(*st->ready));
	st->plan = calloc(st->nchunks, sizeof(*st->plan));
	if (!st->ready || !st->plan) {
		img__stage_release(img);
		return -ENOMEM;
	}
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
	free(st->ready);
	st->ready = NULL;
	free(st->plan);
	st->plan = NULL;
}

int img_stage_next(struct img *img)
{
	struct img_stage *st = &img->stage;
	uint64_t start, len;
	uint32_t c, n;
	int err;

	if (st->mem && atomic_exchange(&st->want, false)) {
		enum img_stage_mode mode = atomic_load(&st->want_mode);

		if (st->mode == IMG_STAGE_FULL)
			mode = IMG_STAGE_FULL;
		st->budget = MAX(atomic_load(&st->budget),
				 atomic_load(&st->want_budget));
		plan_build(img, mode);
	}
	if (!st->mem || st->plan_pos >= st->plan_len) {
		if (st->mem && st->mode != IMG_STAGE_NONE)
			atomic_store(&st->state, IMG_STAGE_DONE);
		return 0;
	}
	atomic_store(&st->state, IMG_STAGE_RUNNING);
	/* One read covers up to IMG_STAGE_BATCH chunks that follow each
	 * other in both the plan and the image. */
	c = st->plan[st->plan_pos];
	for (n = 1; n < IMG_STAGE_BATCH && st->plan_pos + n < st->plan_len &&
		    st->plan[st->plan_pos + n] == c + n;
	     n++)
		;
	st->plan_pos += n;
	start = (uint64_t)c << IMG_CHUNK_SHIFT;
	len = MIN((uint64_t)n << IMG_CHUNK_SHIFT, img->sb.bytes_used - start);
	err = file_pread(img, start, st->mem + start, (size_t)len);
	if (!err) {
		for (uint32_t i = 0; i < n; i++)
			atomic_store_explicit(&st->ready[c + i], 1,
					      memory_order_release);
		atomic_fetch_add(&st->staged, len);
		/* The staged copy serves these bytes from now on; keep the
		 * page cache from holding them a second time. */
		if (!img->in_ram)
			posix_fadvise(img->fd, (off_t)(start + img->offset),
				      (off_t)len, POSIX_FADV_DONTNEED);
	} else {
		/* Give the untouched pages back; readers go to the file. */
		madvise(st->mem + start, (size_t)len, MADV_DONTNEED);
	}
	if (st->plan_pos >= st->plan_len)
		atomic_store(&st->state, IMG_STAGE_DONE);
	return 1;
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

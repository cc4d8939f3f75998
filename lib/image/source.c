// SPDX-License-Identifier: MIT
/*
 * This file implements the image file as a source of bytes: reading it
 * with counts per reader, noticing that it changed under us, and the
 * sources that the staged copy (lib/stage) and a window (struct
 * img_window, img_window_read()) read through.
 */
#define LOG_MOD "image"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image_i.h"
#include "util/ckd.h"
#include "util/log.h"

/* Log a failed or short read of the file, once per image. */
static void log_read_error(struct img *img, uint64_t at, int err)
{
	if (!img__log_once(img, __FILE__, __LINE__))
		return;
	if (err)
		log_err("cannot read image '%s' at %llu: %s", img->path,
			(unsigned long long)at, err_str(err));
	else
		log_err("image '%s' ends at %llu, before the %llu bytes its superblock claims (truncated while mounted?)",
			img->path, (unsigned long long)at,
			(unsigned long long)img->sb.bytes_used);
}

/* Short reads are the file shrinking under us. */
int img__pread(struct img *img, uint64_t off, void *dst, size_t len,
	       enum img_read_source src)
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
			atomic_fetch_add_explicit(&img->src_errors, 1,
						  memory_order_relaxed);
			log_read_error(img, off + done, n < 0 ? errno : 0);
			return -EIO;
		}
		done += (size_t)n;
	}
	atomic_fetch_add_explicit(&img->src_reads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&img->src_bytes, len, memory_order_relaxed);
	atomic_fetch_add_explicit(&img->src_by[src], len, memory_order_relaxed);
	return 0;
}

/* struct stage_src.read: bytes for the staged copy.  @reader is the
 * struct img_read_ctx of the read that stages them, NULL for a stager. */
static int stage_read(void *arg, uint64_t off, void *dst, size_t len,
		      const void *reader)
{
	const struct img_read_ctx *rc = reader;
	struct img *img = arg;
	int err;

	err = img__pread(img, off, dst, len, rc ? rc->src : IMG_READ_STAGER);
	/* The staged copy serves these bytes from now on; keep the page
	 * cache from holding them a second time. */
	if (!err && !img->in_ram)
		posix_fadvise(img->fd, (off_t)(off + img->offset), (off_t)len,
			      POSIX_FADV_DONTNEED);
	return err;
}

int img_window_read(struct img *img, uint64_t off, void *dst, size_t len)
{
	uint64_t end;
	int err;

	if (ckd_add(&end, off, len) || end > img->sb.bytes_used)
		return IMG_CORRUPT(
			img,
			"window read of %zu bytes at %llu is past the end of the filesystem",
			len, (unsigned long long)off);
	err = img__pread(img, off, dst, len, IMG_READ_ORDER);
	/* The window holds them until read: not the page cache too. */
	if (!err && !img->in_ram)
		posix_fadvise(img->fd, (off_t)(off + img->offset), (off_t)len,
			      POSIX_FADV_DONTNEED);
	return err;
}

bool img_staged(struct img *img, uint64_t off, uint64_t len)
{
	return stage_holds(img->stage, off, len);
}

/* struct stage_src.watch. */
static void stage_watch(void *arg)
{
	img_check_changed(arg);
}

int img__stage_open(struct img *img, const struct img_opts *o)
{
	struct stage_src src = { stage_read, stage_watch, img, img->path };
	struct stage_backing b = { .fd = -1 };
	struct stage_opts so = {
		.size = img->sb.bytes_used,
		/* Planned before the tables are checked: the superblock's
		 * inode table position is not trusted here, only clamped. */
		.meta_start = img->sb.inode_table,
		.mode = o->stage,
		.budget = o->ram,
	};

	if (so.mode == STAGE_AUTO)
		so.mode = img->in_ram ? STAGE_NONE : STAGE_FULL;
	/* Only what will be staged is worth a backing copy. */
	if (o->backing && so.mode != STAGE_NONE && so.budget && so.size) {
		o->backing(o->backing_arg, img->fd, img->offset, so.size, &b);
		if (b.fd >= 0)
			so.backing = &b;
	}
	return stage_new(&src, &so, &img->stage);
}

struct stage *img_stage(struct img *img)
{
	return img->stage;
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

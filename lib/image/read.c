// SPDX-License-Identifier: MIT
/*
 * This file implements the one bounded reader of image bytes: every byte
 * read from an image goes through img__src() or img__read(), which reject
 * a range past bytes_used or larger than its buffer, then take the bytes
 * from the staged copy (lib/stage; a planned chunk is staged on the way)
 * or, outside it, from the window another module holds in RAM (struct
 * img_window: the epoch order's) or the file with a read of just the
 * range (source.c).  What a read may do comes with it (struct
 * img_read_ctx).  img__unpack() reads a stored block through it, and
 * decompresses it where it is stored compressed.
 */
#define LOG_MOD "image"

#include <errno.h>
#include <string.h>

#include "image/image_i.h"
#include "util/ckd.h"

/* A read with no context is a reader's of the mount. */
static const struct img_read_ctx demand = { IMG_READ_DEMAND, NULL };

static const struct img_read_ctx *ctx_of(const struct img_read_ctx *rc)
{
	return rc ? rc : &demand;
}

bool img__may_read_file(const struct img *img, const struct img_read_ctx *rc)
{
	return ctx_of(rc)->src != IMG_READ_WARM || img->in_ram;
}

const void *img__staged_ptr(struct img *img, const struct img_read_ctx *rc,
			    uint64_t off, size_t len)
{
	unsigned int flags = 0;
	const void *p;

	if (!img->stage)
		return NULL; /* the superblock, read before staging is set up */
	/* Warming takes only what is staged: it neither reads the file nor
	 * waits for a read under way (it tries again later). */
	if (!img__may_read_file(img, rc))
		flags |= STAGE_GET_STAGED_ONLY;
	if (stage_get(img->stage, off, len, flags, ctx_of(rc), &p))
		return NULL;
	/* Bytes of the staged copy that are not checked yet (a kept copy's)
	 * are checked now; if they are wrong, the file's are read. */
	if (img->seal && !img->seal_trusted &&
	    img__seal_staged(img, off, len, p))
		return NULL;
	return p;
}

int img_set_window(struct img *img, const struct img_window *w)
{
	if (img->window.get)
		return -EBUSY;
	img->window = *w;
	return 0;
}

int img__window_get(struct img *img, uint64_t off, size_t len, void *dst)
{
	if (!img->window.get)
		return -ENODATA;
	return img->window.get(img->window.arg, off, len, dst);
}

bool img__window_has(struct img *img, uint64_t off, size_t len)
{
	return img->window.in_ram &&
	       img->window.in_ram(img->window.arg, off, len);
}

void img__window_used(struct img *img, uint64_t off, size_t len,
		      uint64_t amount)
{
	if (img->window.used)
		img->window.used(img->window.arg, off, len, amount);
}

/* A read outside the staged copy: from the window if it holds the range
 * (reading it there if it is next), else from the file. */
static int file_read(struct img *img, const struct img_read_ctx *rc,
		     uint64_t off, void *dst, size_t len)
{
	if (!img__may_read_file(img, rc))
		return -EAGAIN;
	if (!img__window_get(img, off, len, dst))
		return 0;
	if (img->seal)
		return img__sealed_pread(img, off, dst, len, ctx_of(rc)->src);
	return img__pread(img, off, dst, len, ctx_of(rc)->src);
}

/* Is [@off, @off + @len) within the filesystem?  Return: 0 or corrupt. */
static int check_range(struct img *img, uint64_t off, size_t len)
{
	uint64_t end;

	if (ckd_add(&end, off, len) || end > img->sb.bytes_used)
		return IMG_CORRUPT(
			img,
			"read of %zu bytes at %llu is past the end of the filesystem (%llu)",
			len, (unsigned long long)off,
			(unsigned long long)img->sb.bytes_used);
	return 0;
}

int img__src(struct img *img, const struct img_read_ctx *rc, uint64_t off,
	     size_t len, void *scratch, size_t cap, const void **out)
{
	const void *p;
	int err;

	err = check_range(img, off, len);
	if (err)
		return err;
	if (len > cap)
		return IMG_CORRUPT(
			img,
			"read of %zu bytes at %llu exceeds its buffer (%zu)",
			len, (unsigned long long)off, cap);
	p = img__staged_ptr(img, rc, off, len);
	if (p) {
		*out = p;
		return 0;
	}
	err = file_read(img, rc, off, scratch, len);
	if (err)
		return err;
	*out = scratch;
	return 0;
}

int img__read(struct img *img, const struct img_read_ctx *rc, uint64_t off,
	      void *dst, size_t len)
{
	const void *p;
	int err;

	err = check_range(img, off, len);
	if (err)
		return err;
	p = img__staged_ptr(img, rc, off, len);
	if (p) {
		memcpy(dst, p, len);
		return 0;
	}
	return file_read(img, rc, off, dst, len);
}

int img__unpack(struct img *img, const struct img_read_ctx *rc, uint64_t pos,
		size_t stored, bool compressed, void *out, size_t cap,
		size_t *got)
{
	const void *src;
	void *scratch;
	int err;

	if (!compressed) {
		if (stored > cap)
			return -EFBIG;
		*got = stored;
		return img__read(img, rc, pos, out, stored);
	}
	scratch = img__scratch();
	if (!scratch)
		return -ENOMEM;
	err = img__src(img, rc, pos, stored, scratch, IMG_SCRATCH_SIZE, &src);
	if (err)
		return err;
	err = dec_decompress(img->codec, src, stored, out, cap, got);
	if (err == -EFSCORRUPTED)
		return -EBADMSG;
	if (err)
		return err;
	atomic_fetch_add_explicit(&img->decompressions, 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&img->decompressed_bytes, *got,
				  memory_order_relaxed);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements checking the image's bytes against its seal
 * (lib/seal), when img_opts names one: the seal is read at open, before
 * the superblock, and from then on no byte of the image reaches a reader,
 * a cache or the staged copy unchecked.  Image bytes come in three ways,
 * and each is checked where it comes in:
 *
 *  - a chunk read into the staged copy: checked whole before it counts as
 *    staged (img__seal_chunk(), the stage's check), so a chunk that does
 *    not match is never staged, nor marked complete in a kept copy; its
 *    4 KiB blocks are then marked checked;
 *  - bytes of the staged copy that were not read by this stage (a kept
 *    copy adopted at open, which another mount made, maybe without a
 *    seal): checked at their first read, block by block, and marked
 *    (img__seal_staged()); a block that does not match is read from the
 *    file instead;
 *  - a read of the file itself (a demand read of what is not staged, an
 *    epoch order's window): the 4 KiB blocks it touches are read whole,
 *    in the same read, and checked every time (img__sealed_pread()); the
 *    file's bytes may change between two reads, the staged copy's do
 *    not.
 *
 * Raw bytes are never handed out as ranges of the file to splice
 * (file.c): the kernel would copy them unchecked.  A block that does not
 * match fails its read with -EFSCORRUPTED (EIO to a reader), counted and
 * logged once per block with its place; the mount serves on.
 */
#define LOG_MOD "image"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "image/image_i.h"
#include "seal/seal.h"
#include "util/ckd.h"
#include "util/log.h"

#define BLK ((uint64_t)SEAL_BLOCK_SIZE)
#define BITS 64u /* bits of a word of the bitmaps */

int img__seal_open(struct img *img, const struct img_opts *o)
{
	uint64_t nblocks, words;
	struct seal *s;
	struct stat sb;
	int fd, err;

	if (!o->seal)
		return 0;
	fd = open(o->seal, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOENT && o->seal_optional)
			return 0;
		log_err("cannot open the seal '%s' of image '%s': %s%s",
			o->seal, img->path, err_str(err),
			err == -ENOENT ? " (make it with mountctl seal IMAGE)" :
					 "");
		return err;
	}
	/* Its size is checked against the superblock's once that is read;
	 * a file larger than a seal of the whole image file is not read. */
	if (!fstat(fd, &sb) &&
	    (uint64_t)sb.st_size > seal_file_size(MAX(img->file_size, 1))) {
		log_err("the seal '%s' is %llu bytes, more than a seal of image '%s' can be (it seals another image)",
			o->seal, (unsigned long long)sb.st_size, img->path);
		close(fd);
		return -ESTALE;
	}
	err = seal_open(fd, o->seal, 0, o->seal_root, &s);
	close(fd);
	if (err) {
		log_err("image '%s' not mounted: its seal '%s' is refused (%s)",
			img->path, o->seal,
			err == -EKEYREJECTED ? "another root hash" :
			err == -EBADMSG	     ? "damaged" :
					       err_str(err));
		return err;
	}
	if (seal_data_size(s) > img->file_size) {
		log_err("the seal '%s' covers %llu bytes; image '%s' has %llu (it seals another image)",
			o->seal, (unsigned long long)seal_data_size(s),
			img->path, (unsigned long long)img->file_size);
		seal_free(s);
		return -ESTALE;
	}
	nblocks = DIV_ROUND_UP(seal_data_size(s), BLK);
	words = DIV_ROUND_UP(nblocks, (uint64_t)BITS);
	img->seal = s;
	img->seal_path = strdup(o->seal);
	img->checked = calloc(words, sizeof(*img->checked));
	img->bad_logged = calloc(words, sizeof(*img->bad_logged));
	if (!img->seal_path || !img->checked || !img->bad_logged)
		return -ENOMEM; /* img_close() frees what there is */
	return 0;
}

int img__seal_match(struct img *img)
{
	if (!img->seal || seal_data_size(img->seal) == img->sb.bytes_used)
		return 0;
	log_err("the seal '%s' covers %llu bytes; image '%s' has %llu (it seals another image)",
		img->seal_path, (unsigned long long)seal_data_size(img->seal),
		img->path, (unsigned long long)img->sb.bytes_used);
	return -ESTALE;
}

void img__seal_close(struct img *img)
{
	seal_free(img->seal);
	free(img->seal_path);
	free(img->checked);
	free(img->bad_logged);
	img->seal = NULL;
}

struct seal *img_seal(struct img *img, const char **path)
{
	if (path)
		*path = img->seal_path;
	return img->seal;
}

/* Block @b did not match the seal (@where it was): count it, and say so
 * the first time.  Return: -EFSCORRUPTED. */
static int seal_bad(struct img *img, uint64_t b, const char *where)
{
	uint64_t bit = 1ull << (b % BITS);

	atomic_fetch_add_explicit(&img->corrupt, 1, memory_order_relaxed);
	if (atomic_fetch_or(&img->bad_logged[b / BITS], bit) & bit)
		return -EFSCORRUPTED;
	log_err("corrupt image '%s': block %llu (bytes %llu to %llu, %s) does not match its seal '%s'",
		img->path, (unsigned long long)b, (unsigned long long)(b * BLK),
		(unsigned long long)MIN((b + 1) * BLK,
					seal_data_size(img->seal)),
		where, img->seal_path);
	return -EFSCORRUPTED;
}

/* Check @len bytes at @p, image offset @off (a block's start; whole
 * blocks but at the end of the image).  Return: 0 or -EFSCORRUPTED. */
static int check(struct img *img, uint64_t off, const void *p, size_t len,
		 const char *where)
{
	uint64_t bad = 0;
	int err = seal_check(img->seal, off, p, len, &bad);

	if (err == -EBADMSG)
		return seal_bad(img, bad, where);
	if (err == -EINVAL) /* a range this file should not have asked */
		return IMG_CORRUPT(
			img,
			"cannot check %zu bytes at %llu against the seal: %s",
			len, (unsigned long long)off, err_str(err));
	return err; /* 0; -ENOMEM, -EIO of libcrypto */
}

/* Mark blocks [@first, @end) of the staged copy checked. */
static void mark_checked(struct img *img, uint64_t first, uint64_t end)
{
	for (uint64_t b = first; b < end; b++)
		atomic_fetch_or_explicit(&img->checked[b / BITS],
					 1ull << (b % BITS),
					 memory_order_relaxed);
}

static bool is_checked(struct img *img, uint64_t b)
{
	return atomic_load_explicit(&img->checked[b / BITS],
				    memory_order_relaxed) &
	       1ull << (b % BITS);
}

int img__seal_chunk(void *arg, uint64_t off, const void *bytes, size_t len)
{
	struct img *img = arg;
	int err = check(img, off, bytes, len, "read for staging");

	if (!err)
		mark_checked(img, off / BLK, DIV_ROUND_UP(off + len, BLK));
	return err;
}

int img__seal_staged(struct img *img, uint64_t off, size_t len, const void *p)
{
	uint64_t b = off / BLK, last = (off + len - 1) / BLK, e, at;
	const uint8_t *base = (const uint8_t *)p - off; /* the copy's start */
	int err;

	for (; b <= last; b++) {
		if (is_checked(img, b))
			continue;
		/* The run of blocks not checked yet, in one call. */
		for (e = b + 1; e <= last && !is_checked(img, e); e++)
			;
		at = b * BLK;
		err = check(
			img, at, base + at,
			(size_t)(MIN(e * BLK, seal_data_size(img->seal)) - at),
			"in a kept copy");
		if (err) {
			atomic_fetch_add_explicit(&img->seal_bad_staged, 1,
						  memory_order_relaxed);
			return err;
		}
		mark_checked(img, b, e);
		b = e - 1;
	}
	return 0;
}

/*
 * Bytes [@from, @to) of the blocks read by img__sealed_pread(), which put
 * [@a, @off) in @head, [@off, @end) in @dst and [@end, ...) in @tail,
 * copied to @out.
 */
static void gather(uint8_t *out, uint64_t from, uint64_t to, uint64_t a,
		   uint64_t off, uint64_t end, const uint8_t *head,
		   const uint8_t *dst, const uint8_t *tail)
{
	for (uint64_t x = from, n; x < to; x += n) {
		if (x < off) {
			n = MIN(to, off) - x;
			memcpy(out + (x - from), head + (x - a), n);
		} else if (x < end) {
			n = MIN(to, end) - x;
			memcpy(out + (x - from), dst + (x - off), n);
		} else {
			n = to - x;
			memcpy(out + (x - from), tail + (x - end), n);
		}
	}
}

int img__sealed_pread(struct img *img, uint64_t off, void *dst, size_t len,
		      enum img_read_source src)
{
	uint64_t size = seal_data_size(img->seal), end, a, e, m0, m1, hb;
	uint8_t head[SEAL_BLOCK_SIZE], tail[SEAL_BLOCK_SIZE];
	uint8_t blk[SEAL_BLOCK_SIZE];
	struct iovec iov[3];
	int n = 0, err;

	if (!len)
		return 0;
	if (ckd_add(&end, off, len) || end > size)
		return IMG_CORRUPT(
			img,
			"read of %zu bytes at %llu is past the sealed bytes (%llu)",
			len, (unsigned long long)off, (unsigned long long)size);
	/* The blocks it touches, read whole in one read: around the range,
	 * into head and tail. */
	a = off / BLK * BLK;
	e = MIN(DIV_ROUND_UP(end, BLK) * BLK, size);
	if (off > a)
		iov[n++] = (struct iovec){ head, (size_t)(off - a) };
	iov[n++] = (struct iovec){ dst, len };
	if (e > end)
		iov[n++] = (struct iovec){ tail, (size_t)(e - end) };
	err = img__preadv(img, a, iov, n, src);
	if (err)
		return err;
	/* The first block, if the range starts inside it. */
	hb = MIN(a + BLK, e);
	if (off > a) {
		gather(blk, a, hb, a, off, end, head, dst, tail);
		err = check(img, a, blk, (size_t)(hb - a),
			    "read from the file");
		if (err)
			goto out_bad;
	}
	/* The whole blocks within the range, where they are. */
	m0 = off > a ? hb : a;
	m1 = e > end ? end / BLK * BLK : e;
	if (m0 < m1) {
		err = check(img, m0, (const uint8_t *)dst + (m0 - off),
			    (size_t)(m1 - m0), "read from the file");
		if (err)
			goto out_bad;
	}
	/* The last block, if the range ends inside it and it is not the
	 * first one. */
	if (e > end && m1 >= m0 && !(off > a && m1 == a)) {
		gather(blk, m1, e, a, off, end, head, dst, tail);
		err = check(img, m1, blk, (size_t)(e - m1),
			    "read from the file");
		if (err)
			goto out_bad;
	}
	return 0;

out_bad:
	atomic_fetch_add_explicit(&img->seal_bad_reads, 1,
				  memory_order_relaxed);
	return err;
}

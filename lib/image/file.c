// SPDX-License-Identifier: MIT
/*
 * This file implements reading regular files: locating data blocks from the
 * block size list, filling the data cache with decompressed data and
 * fragment blocks, and mapping a byte range to spans of cached bytes.
 *
 * Block locations.  Block i of a file starts at blocks_start plus the
 * stored sizes of blocks 0..i-1.  Small files (up to IMG_BMAP_STRIDE
 * blocks) read their list straight from the metadata cache.  Larger files
 * get a block map in the bmap cache: for every IMG_BMAP_STRIDE-th block,
 * its position in the image and the position of its size word in the inode
 * table, so that any block is found by summing fewer than IMG_BMAP_STRIDE
 * words.  Building the map walks the list once and checks every word.
 *
 * Sizes.  Every data block decodes to exactly block_size bytes, except the
 * last one of a file without a fragment, which decodes to the rest of the
 * file; anything else is corruption.  A fragment block decodes to at most
 * block_size bytes and must hold the file's tail where the inode says.
 */
#define LOG_MOD "image"

#include <stdlib.h>
#include <string.h>

#include "image/image_i.h"
#include "util/ckd.h"
#include "util/log.h"

/* Never written: serves sparse blocks (untouched .bss pages cost no RAM). */
static uint8_t zero_block[SQFS_BLOCK_MAX];

/* Where a block is, and what it decodes to. */
struct blk_loc {
	uint64_t pos; /* byte offset in the image */
	uint32_t word; /* size word: stored length | uncompressed bit */
	uint32_t len; /* decoded length */
};

struct bmap_point {
	uint64_t pos; /* image offset of block k * STRIDE */
	uint64_t list_block; /* metadata block of its size word */
	uint32_t list_off; /* offset of the word in that block */
	uint32_t pad;
};

static uint32_t block_len(const struct img *img, const struct img_inode *f,
			  uint32_t i)
{
	uint64_t start = (uint64_t)i << img->sb.block_log;

	if (f->file.frag == IMG_NO_FRAGMENT && i == f->file.nblocks - 1)
		return (uint32_t)(f->size - start);
	return img->sb.block_size;
}

static int check_word(struct img *img, const struct img_inode *f, uint32_t i,
		      uint32_t word)
{
	uint32_t stored = word & SQFS_BLOCK_LEN_MASK;

	if (word & ~(SQFS_BLOCK_LEN_MASK | SQFS_BLOCK_UNCOMPRESSED) ||
	    stored > img->sb.block_size ||
	    (word & SQFS_BLOCK_UNCOMPRESSED && stored == 0))
		return IMG_CORRUPT(img,
				   "file inode %u block %u has size word %#x",
				   f->ino, i, word);
	return 0;
}

/* Decode size words [first, first + n) of @f, starting at list position
 * (*@block, *@off) and image offset *@pos for block @first; all three are
 * advanced past the words read. */
static int walk_list(struct img *img, const struct img_read_ctx *rc,
		     const struct img_inode *f, uint64_t *block, uint32_t *off,
		     uint64_t *pos, uint32_t first, uint32_t n,
		     struct blk_loc *out)
{
	const struct img_region rg = img__inode_region(img);
	uint8_t raw[4 * IMG_BMAP_STRIDE];
	uint32_t done = 0, k, chunk, word;
	int err;

	while (done < n) {
		chunk = MIN(n - done, (uint32_t)IMG_BMAP_STRIDE);
		err = img__meta_read(img, rc, &rg, block, off, raw, 4 * chunk);
		if (err)
			return err;
		for (k = 0; k < chunk; k++) {
			uint32_t i = first + done + k;

			word = le32_get(raw + 4 * k);
			err = check_word(img, f, i, word);
			if (err)
				return err;
			if (out) {
				out[done + k].pos = *pos;
				out[done + k].word = word;
				out[done + k].len = block_len(img, f, i);
			}
			if (ckd_add(pos, *pos, word & SQFS_BLOCK_LEN_MASK) ||
			    *pos > img->sb.inode_table)
				return IMG_CORRUPT(
					img,
					"file inode %u block %u runs past the data area",
					f->ino, i);
		}
		done += chunk;
	}
	return 0;
}

struct bmap_fill {
	struct img *img;
	const struct img_read_ctx *rc; /* on whose behalf */
	const struct img_inode *f;
};

static int bmap_fill(void *arg, uint64_t key, void *buf, size_t cap,
		     size_t *len)
{
	struct bmap_fill *a = arg;
	const struct img_inode *f = a->f;
	struct bmap_point *pt = buf;
	uint32_t npts = DIV_ROUND_UP(f->file.nblocks, IMG_BMAP_STRIDE);
	uint64_t block = f->file.list_block;
	uint32_t off = f->file.list_off;
	uint64_t pos = f->file.blocks_start;
	uint32_t i = 0, chunk;
	int err;

	(void)key;
	if (cap < (size_t)npts * sizeof(*pt))
		return -ENOMEM;
	for (uint32_t p = 0; p < npts; p++) {
		pt[p].pos = pos;
		pt[p].list_block = block;
		pt[p].list_off = off;
		pt[p].pad = 0;
		chunk = MIN(f->file.nblocks - i, (uint32_t)IMG_BMAP_STRIDE);
		err = walk_list(a->img, a->rc, f, &block, &off, &pos, i, chunk,
				NULL);
		if (err)
			return err;
		i += chunk;
	}
	*len = (size_t)npts * sizeof(*pt);
	return 0;
}

/* Locate blocks [first, first + n) of @f. */
static int locate(struct img *img, const struct img_read_ctx *rc,
		  const struct img_inode *f, uint32_t first, uint32_t n,
		  struct blk_loc *out)
{
	struct bmap_fill arg = { img, rc, f };
	const struct bmap_point *pt;
	struct cache_entry *e;
	uint32_t base, p;
	uint64_t block, pos;
	uint32_t off;
	size_t cap;
	int err;

	if (f->file.nblocks <= IMG_BMAP_STRIDE) {
		base = 0;
		block = f->file.list_block;
		off = f->file.list_off;
		pos = f->file.blocks_start;
	} else {
		cap = (size_t)DIV_ROUND_UP(f->file.nblocks, IMG_BMAP_STRIDE) *
		      sizeof(*pt);
		err = cache_get(img->bmap, f->ref, cap, bmap_fill, &arg, &e);
		if (err)
			return err;
		p = first / IMG_BMAP_STRIDE;
		pt = cache_entry_data(e);
		if (cache_entry_size(e) < (size_t)(p + 1) * sizeof(*pt)) {
			cache_put(img->bmap, e);
			return IMG_CORRUPT(
				img,
				"block map of inode %u does not match its inode",
				f->ino);
		}
		base = p * IMG_BMAP_STRIDE;
		block = pt[p].list_block;
		off = pt[p].list_off;
		pos = pt[p].pos;
		cache_put(img->bmap, e);
	}
	/* From the checkpoint, skip to @first, then decode the n wanted. */
	err = walk_list(img, rc, f, &block, &off, &pos, base, first - base,
			NULL);
	if (err)
		return err;
	return walk_list(img, rc, f, &block, &off, &pos, first, n, out);
}

struct data_fill {
	struct img *img;
	const struct img_read_ctx *rc; /* on whose behalf */
	uint32_t word; /* size word */
	uint32_t want; /* exact decoded length, or 0 for a fragment */
	bool filled; /* set by data_fill(): the block was not cached */
};

static int data_fill(void *arg, uint64_t pos, void *buf, size_t cap,
		     size_t *len)
{
	struct data_fill *a = arg;
	struct img *img = a->img;
	uint32_t stored = a->word & SQFS_BLOCK_LEN_MASK;
	size_t got;
	int err;

	err = img__unpack(img, a->rc, pos, stored,
			  !(a->word & SQFS_BLOCK_UNCOMPRESSED), buf, cap, &got);
	if (err == -EFBIG)
		return IMG_CORRUPT(
			img,
			"uncompressed block at %llu is larger than a block",
			(unsigned long long)pos);
	if (err == -EBADMSG)
		return IMG_CORRUPT(
			img,
			"data block at %llu (%u bytes) does not decompress",
			(unsigned long long)pos, stored);
	if (err)
		return err;
	a->filled = true;
	if (a->want ? got != a->want : got == 0)
		return IMG_CORRUPT(
			img, "block at %llu decodes to %zu bytes, expected %u",
			(unsigned long long)pos, got, a->want);
	*len = got;
	return 0;
}

/*
 * Bytes of a block stored uncompressed that is not in RAM are read
 * straight from the image file into the reply buffer (the caller's, or
 * this thread's), only the part a read wants, and never enter the data
 * cache: a JPEG's block or a small file's tail in a fragment is wanted
 * once, and caching 128 KiB to send 2 KiB would only evict blocks that are
 * worth keeping.  The span stays valid until the next img_file_spans()
 * into the same buffer.
 */
struct reply_buf {
	const struct img_read_ctx *rc; /* on whose behalf */
	uint8_t *p; /* the reply buffer, IMG_REPLY_BYTES bytes */
	size_t used; /* bytes handed out by this call */
	bool fd_ok; /* img_file_map(): hand out file ranges instead */
};

static const uint8_t *read_direct(struct img *img, struct reply_buf *rb,
				  uint64_t pos, uint32_t len, int *err)
{
	const uint8_t *p;

	*err = 0;
	if (!rb->p || len > IMG_REPLY_BYTES - rb->used)
		return NULL; /* no room: go through the cache */
	*err = img__read(img, rb->rc, pos, rb->p + rb->used, len);
	if (*err)
		return NULL;
	p = rb->p + rb->used;
	rb->used += len;
	return p;
}

/* Raw bytes not in RAM: a file range, or read into the reply buffer. */
static int raw_span(struct img *img, struct reply_buf *rb, uint64_t pos,
		    uint32_t len, struct img_span *sp)
{
	uint64_t end;
	int err;

	if (!img__may_read_file(img, rb->rc))
		return -EAGAIN; /* warming: not staged, leave it to readers */
	/* A window holds it: a copy, not a file range. */
	if (rb->fd_ok && !img__window_has(img, pos, len)) {
		if (ckd_add(&end, pos, len) || end > img->sb.bytes_used)
			return IMG_CORRUPT(
				img,
				"read of %u bytes at %llu is past the end of the filesystem",
				len, (unsigned long long)pos);
		if (atomic_load_explicit(&img->changed, memory_order_relaxed))
			return -EIO;
		sp->data = NULL;
		sp->fd = img->fd;
		sp->fd_off = pos + img->offset; /* <= file size, no overflow */
		return 0;
	}
	/* A mapping for splicing takes the reply buffer only now: for bytes
	 * a window holds, which would otherwise go through the
	 * data cache (and a tail's fragment block be read whole again). */
	if (!rb->p)
		rb->p = img__reply_buf(rb->rc);
	sp->data = read_direct(img, rb, pos, len, &err);
	if (err)
		return err;
	return sp->data ? 0 : -ENOBUFS; /* no room: use the cache */
}

/* Get bytes [lo, hi) of one data block as a span. */
static int block_span(struct img *img, const struct blk_loc *b, uint32_t lo,
		      uint32_t hi, struct reply_buf *rb, struct img_span *sp)
{
	struct data_fill arg = { img, rb->rc, b->word, b->len, false };
	struct cache_entry *e;
	const uint8_t *p;
	uint32_t stored = b->word & SQFS_BLOCK_LEN_MASK;
	int err;

	sp->pin = NULL;
	sp->len = hi - lo;
	if (hi > b->len)
		return IMG_CORRUPT(img, "read past a block of %u bytes at %llu",
				   b->len, (unsigned long long)b->pos);
	if (b->word == 0) { /* sparse */
		sp->data = zero_block;
		return 0;
	}
	if (b->word & SQFS_BLOCK_UNCOMPRESSED) {
		if (stored != b->len)
			return IMG_CORRUPT(
				img,
				"uncompressed block at %llu has %u bytes, expected %u",
				(unsigned long long)b->pos, stored, b->len);
		p = img__staged_ptr(img, rb->rc, b->pos, stored);
		if (p) {
			sp->data = p + lo;
			return 0;
		}
		err = raw_span(img, rb, b->pos + lo, hi - lo, sp);
		if (err != -ENOBUFS)
			return err;
	}
	err = cache_get(img->data, b->pos, img->sb.block_size, data_fill, &arg,
			&e);
	if (err)
		return err;
	/* Decoded already: a window need not hold its bytes, and this read
	 * took its share of them. */
	if (!arg.filled)
		img__window_used(img, b->pos, stored,
				 (uint64_t)stored * (hi - lo) / b->len);
	if (cache_entry_size(e) != b->len) {
		cache_put(img->data, e);
		return IMG_CORRUPT(
			img,
			"block at %llu is shared by files that disagree on its size",
			(unsigned long long)b->pos);
	}
	sp->data = (const uint8_t *)cache_entry_data(e) + lo;
	sp->pin = e;
	return 0;
}

static int frag_loc(struct img *img, const struct img_read_ctx *rc,
		    const struct img_inode *f, struct blk_loc *out)
{
	struct sqfs_disk_frag d;
	uint64_t end;
	int err;

	err = img__table_get(img, rc, &img->frags, f->file.frag, &d);
	if (err)
		return err;
	out->pos = le64_dec(d.start);
	out->word = le32_dec(d.size);
	out->len = 0;
	if (out->word == 0 ||
	    out->word & ~(SQFS_BLOCK_LEN_MASK | SQFS_BLOCK_UNCOMPRESSED) ||
	    (out->word & SQFS_BLOCK_LEN_MASK) > img->sb.block_size ||
	    (out->word & SQFS_BLOCK_LEN_MASK) == 0 ||
	    out->pos < img->data_start ||
	    ckd_add(&end, out->pos, out->word & SQFS_BLOCK_LEN_MASK) ||
	    end > img->sb.inode_table)
		return IMG_CORRUPT(
			img, "fragment %u has position %llu and size word %#x",
			f->file.frag, (unsigned long long)out->pos, out->word);
	return 0;
}

/* Bytes [lo, hi) of the file's tail, from its fragment block. */
static int tail_span(struct img *img, const struct img_inode *f, uint32_t lo,
		     uint32_t hi, struct reply_buf *rb, struct img_span *sp)
{
	uint32_t tail = (uint32_t)(f->size & (img->sb.block_size - 1));
	struct data_fill arg = { img, rb->rc, 0, 0, false };
	struct cache_entry *e;
	const uint8_t *p;
	struct blk_loc b;
	int err;

	if (hi > tail)
		return IMG_CORRUPT(img, "read past the tail of inode %u",
				   f->ino);
	err = frag_loc(img, rb->rc, f, &b);
	if (err)
		return err;
	sp->len = hi - lo;
	sp->pin = NULL;
	if (b.word & SQFS_BLOCK_UNCOMPRESSED) {
		uint32_t stored = b.word & SQFS_BLOCK_LEN_MASK;
		uint64_t at = b.pos + f->file.frag_off + lo;

		if ((uint64_t)f->file.frag_off + tail > stored)
			return IMG_CORRUPT(
				img,
				"fragment %u (%u bytes) does not hold the tail of inode %u (%u bytes at %u)",
				f->file.frag, stored, f->ino, tail,
				f->file.frag_off);
		/* Stored as is: straight from RAM or from the file. */
		p = img__staged_ptr(img, rb->rc, at, hi - lo);
		if (p) {
			sp->data = p;
			return 0;
		}
		err = raw_span(img, rb, at, hi - lo, sp);
		if (err != -ENOBUFS)
			return err;
	}
	arg.word = b.word;
	err = cache_get(img->data, b.pos, img->sb.block_size, data_fill, &arg,
			&e);
	if (err)
		return err;
	/* A fragment block counts once for each file whose tail it holds. */
	if (!arg.filled)
		img__window_used(img, b.pos, b.word & SQFS_BLOCK_LEN_MASK,
				 b.word & SQFS_BLOCK_LEN_MASK);
	if ((uint64_t)f->file.frag_off + tail > cache_entry_size(e)) {
		cache_put(img->data, e);
		return IMG_CORRUPT(
			img,
			"fragment %u (%zu bytes) does not hold the tail of inode %u (%u bytes at %u)",
			f->file.frag, cache_entry_size(e), f->ino, tail,
			f->file.frag_off);
	}
	sp->data = (const uint8_t *)cache_entry_data(e) + f->file.frag_off + lo;
	sp->pin = e;
	return 0;
}

void img_spans_put(struct img *img, struct img_span *spans, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		cache_put(img->data, spans[i].pin);
		spans[i].pin = NULL;
	}
}

#define LOCATE_MAX (4 * IMG_BMAP_STRIDE)

static int map_range(struct img *img, const struct img_read_ctx *rc,
		     const struct img_inode *f, uint64_t off, size_t len,
		     struct img_span *spans, unsigned int max, unsigned int *n,
		     bool fd_ok)
{
	const uint32_t bs = img->sb.block_size;
	struct reply_buf rb;
	/* With a seal every byte is checked in memory: none is handed out
	 * as a range of the file, which the kernel would copy unchecked. */
	fd_ok = fd_ok && !img->seal;
	rb = (struct reply_buf){ rc, fd_ok ? NULL : img__reply_buf(rc), 0,
				 fd_ok };
	struct blk_loc locs[LOCATE_MAX];
	uint64_t end, blk_start;
	uint32_t first, last, nb, i, lo, hi;
	unsigned int k = 0;
	int err = 0;

	*n = 0;
	if (f->type != IMG_REG)
		return -EINVAL;
	if (off >= f->size || len == 0 || max == 0)
		return 0;
	end = off + MIN((uint64_t)len, f->size - off);
	first = (uint32_t)(off >> img->sb.block_log);
	last = (uint32_t)((end - 1) >> img->sb.block_log);
	/* Data blocks in [first, last] that exist (the tail is not one). */
	nb = 0;
	if (first < f->file.nblocks) {
		nb = MIN(last, f->file.nblocks - 1) - first + 1;
		nb = MIN(nb, (uint32_t)MIN((unsigned int)LOCATE_MAX, max));
		err = locate(img, rc, f, first, nb, locs);
		if (err)
			return err;
	}
	/* Each block gives the part of [off, end) that falls in it. */
	for (i = 0; i <= nb && k < max; i++) {
		uint32_t idx = first + i;

		if (i == nb && (idx != f->file.nblocks || idx > last))
			break; /* no tail in the range, or spans ran out */
		blk_start = (uint64_t)idx << img->sb.block_log;
		lo = (uint32_t)(MAX(off, blk_start) - blk_start);
		hi = (uint32_t)(MIN(end, blk_start + bs) - blk_start);
		spans[k].fd = -1;
		if (i < nb)
			err = block_span(img, &locs[i], lo, hi, &rb, &spans[k]);
		else
			err = tail_span(img, f, lo, hi, &rb, &spans[k]);
		if (err)
			goto out_unpin;
		k++;
	}
	*n = k;
	return 0;

out_unpin:
	img_spans_put(img, spans, k);
	return err;
}

int img_file_spans(struct img *img, const struct img_read_ctx *rc,
		   const struct img_inode *f, uint64_t off, size_t len,
		   struct img_span *spans, unsigned int max, unsigned int *n)
{
	return map_range(img, rc, f, off, len, spans, max, n, false);
}

int img_file_map(struct img *img, const struct img_read_ctx *rc,
		 const struct img_inode *f, uint64_t off, size_t len,
		 struct img_span *spans, unsigned int max, unsigned int *n)
{
	return map_range(img, rc, f, off, len, spans, max, n, true);
}

int img_file_read(struct img *img, const struct img_read_ctx *rc,
		  const struct img_inode *f, uint64_t off, void *buf,
		  size_t len, size_t *got)
{
	struct img_span spans[16];
	unsigned int n;
	size_t done = 0;
	int err;

	*got = 0;
	while (done < len) {
		err = img_file_spans(img, rc, f, off + done, len - done, spans,
				     ARRAY_SIZE(spans), &n);
		if (err)
			return err;
		if (n == 0)
			break;
		for (unsigned int i = 0; i < n; i++) {
			memcpy((uint8_t *)buf + done, spans[i].data,
			       spans[i].len);
			done += spans[i].len;
		}
		img_spans_put(img, spans, n);
	}
	*got = done;
	return 0;
}

int img_file_prefetch(struct img *img, const struct img_read_ctx *rc,
		      const struct img_inode *f, uint32_t first, uint32_t count)
{
	struct blk_loc locs[LOCATE_MAX];
	struct data_fill arg;
	uint32_t nb, i;
	int err;

	if (f->type != IMG_REG)
		return -EINVAL;
	while (count && first < f->file.nblocks) {
		nb = MIN(count, f->file.nblocks - first);
		nb = MIN(nb, (uint32_t)LOCATE_MAX);
		err = locate(img, rc, f, first, nb, locs);
		if (err)
			return err;
		for (i = 0; i < nb; i++) {
			/* Sparse and raw blocks are never decoded: reads
			 * take raw bytes from RAM or the file directly. */
			if (locs[i].word == 0 ||
			    locs[i].word & SQFS_BLOCK_UNCOMPRESSED)
				continue;
			arg = (struct data_fill){ img, rc, locs[i].word,
						  locs[i].len, false };
			err = cache_prefill(img->data, locs[i].pos,
					    img->sb.block_size, data_fill,
					    &arg);
			if (err && err != -EEXIST && err != -ENOSPC)
				return err;
		}
		first += nb;
		count -= nb;
	}
	if (count && f->file.frag != IMG_NO_FRAGMENT) {
		struct blk_loc b;

		err = frag_loc(img, rc, f, &b);
		if (err)
			return err;
		if (b.word & SQFS_BLOCK_UNCOMPRESSED)
			return 0;
		arg = (struct data_fill){ img, rc, b.word, 0, false };
		err = cache_prefill(img->data, b.pos, img->sb.block_size,
				    data_fill, &arg);
		if (err && err != -EEXIST && err != -ENOSPC)
			return err;
	}
	return 0;
}

/* The stored bytes of @f's data blocks, block by block (sparse blocks
 * have none). */
static int blocks_extents(struct img *img, const struct img_inode *f,
			  img_extent_fn fn, void *arg)
{
	struct blk_loc locs[LOCATE_MAX];
	uint32_t first = 0, nb, stored;
	int err;

	while (first < f->file.nblocks) {
		nb = MIN(f->file.nblocks - first, (uint32_t)LOCATE_MAX);
		err = locate(img, NULL, f, first, nb, locs);
		if (err)
			return err;
		for (uint32_t i = 0; i < nb; i++) {
			stored = locs[i].word & SQFS_BLOCK_LEN_MASK;
			err = stored ? fn(arg, locs[i].pos, stored, false) : 0;
			if (err)
				return err;
		}
		first += nb;
	}
	return 0;
}

/* The tail of @f: its own bytes of a fragment stored as is, else the
 * whole fragment block (which files share, and the data cache keeps). */
static int tail_extent(struct img *img, const struct img_inode *f,
		       img_extent_fn fn, void *arg)
{
	uint32_t tail = (uint32_t)(f->size & (img->sb.block_size - 1));
	uint32_t stored;
	struct blk_loc b;
	int err;

	if (f->file.frag == IMG_NO_FRAGMENT || !tail)
		return 0;
	err = frag_loc(img, NULL, f, &b);
	if (err)
		return err;
	stored = b.word & SQFS_BLOCK_LEN_MASK;
	if (!(b.word & SQFS_BLOCK_UNCOMPRESSED))
		return fn(arg, b.pos, stored, true);
	if ((uint64_t)f->file.frag_off + tail > stored)
		return IMG_CORRUPT(
			img,
			"fragment %u (%u bytes) does not hold the tail of inode %u (%u bytes at %u)",
			f->file.frag, stored, f->ino, tail, f->file.frag_off);
	return fn(arg, b.pos + f->file.frag_off, tail, true);
}

int img_file_extents(struct img *img, const struct img_inode *f,
		     img_extent_fn fn, void *arg)
{
	int err;

	if (f->type != IMG_REG)
		return -EINVAL;
	err = blocks_extents(img, f, fn, arg);
	if (!err)
		err = tail_extent(img, f, fn, arg);
	return err;
}

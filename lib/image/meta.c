// SPDX-License-Identifier: MIT
/*
 * This file implements metadata blocks: reading and decoding them into the
 * metadata cache, reading byte runs that cross block boundaries, and the
 * tables of fixed-size entries (ids, fragments, exports, xattr ids) that are
 * stored in them behind an index of block positions.
 *
 * A cached metadata block holds the position of the block that follows it
 * (8 bytes) and then its decoded bytes, so walking a table never reads a
 * block header twice.
 */
#define LOG_MOD "image"

#include <stdlib.h>
#include <string.h>

#include "image/image_i.h"
#include "util/ckd.h"
#include "util/endian.h"
#include "util/log.h"

#define META_ENTRY_HDR 8 /* next block position, native u64 */
#define META_ENTRY_CAP (META_ENTRY_HDR + SQFS_META_SIZE)

struct meta_fill {
	struct img *img;
	const struct img_read_ctx *rc; /* on whose behalf */
};

static int meta_fill(void *arg, uint64_t pos, void *buf, size_t cap,
		     size_t *len)
{
	const struct meta_fill *a = arg;
	struct img *img = a->img;
	uint8_t hdr[SQFS_META_HDR];
	uint8_t *out = (uint8_t *)buf + META_ENTRY_HDR;
	size_t stored, got;
	uint64_t next;
	uint16_t h;
	int err;

	(void)cap;
	err = img__read(img, a->rc, pos, hdr, sizeof(hdr));
	if (err)
		return err;
	h = le16_get(hdr);
	stored = h & SQFS_META_LEN_MASK;
	if (stored == 0 || stored > SQFS_META_SIZE)
		return IMG_CORRUPT(
			img, "metadata block at %llu has stored length %zu",
			(unsigned long long)pos, stored);
	next = pos + SQFS_META_HDR + stored;
	err = img__unpack(img, a->rc, pos + SQFS_META_HDR, stored,
			  !(h & SQFS_META_UNCOMPRESSED), out, SQFS_META_SIZE,
			  &got);
	if (err == -EBADMSG || (!err && got == 0))
		return IMG_CORRUPT(img,
				   "metadata block at %llu does not decompress",
				   (unsigned long long)pos);
	if (err)
		return err;
	memcpy(buf, &next, sizeof(next));
	*len = META_ENTRY_HDR + got;
	return 0;
}

/* The decoded metadata block at @block of region @rg, pinned in the
 * metadata cache.  Return: 0, corrupt if it is outside @rg, or -errno. */
static int block_get(struct img *img, const struct img_region *rg,
		     uint64_t block, struct meta_fill *arg,
		     struct cache_entry **e)
{
	if (block < rg->start || block >= rg->end)
		return IMG_CORRUPT(
			img,
			"metadata block at %llu is outside its table [%llu, %llu)",
			(unsigned long long)block,
			(unsigned long long)rg->start,
			(unsigned long long)rg->end);
	return cache_get(img->meta, block, META_ENTRY_CAP, meta_fill, arg, e);
}

int img__meta_read(struct img *img, const struct img_read_ctx *rc,
		   const struct img_region *rg, uint64_t *block, uint32_t *off,
		   void *dst, size_t len)
{
	struct meta_fill arg = { img, rc };
	struct cache_entry *e;
	const uint8_t *data;
	uint64_t next;
	size_t have, n;
	int err;

	while (len) {
		err = block_get(img, rg, *block, &arg, &e);
		if (err)
			return err;
		data = cache_entry_data(e);
		memcpy(&next, data, sizeof(next));
		have = cache_entry_size(e) - META_ENTRY_HDR;
		if (next > rg->end) {
			cache_put(img->meta, e);
			return IMG_CORRUPT(
				img,
				"metadata block at %llu runs past the end of its table (%llu)",
				(unsigned long long)*block,
				(unsigned long long)rg->end);
		}
		if (*off >= have) {
			cache_put(img->meta, e);
			return IMG_CORRUPT(
				img,
				"offset %u is past the end of metadata block %llu (%zu bytes)",
				*off, (unsigned long long)*block, have);
		}
		n = MIN(len, have - *off);
		if (dst) {
			memcpy(dst, data + META_ENTRY_HDR + *off, n);
			dst = (uint8_t *)dst + n;
		}
		cache_put(img->meta, e);
		len -= n;
		*off += (uint32_t)n;
		if (*off == have) {
			*block = next;
			*off = 0;
		}
	}
	return 0;
}

int img__meta_buf_read(struct img *img, const struct img_read_ctx *rc,
		       const struct img_region *rg, struct img_meta_buf *mb,
		       uint64_t *block, uint32_t *off, void *dst, size_t len)
{
	struct meta_fill arg = { img, rc };
	struct cache_entry *e;
	size_t n;
	int err;

	while (len) {
		if (mb->held != *block) {
			err = block_get(img, rg, *block, &arg, &e);
			if (err)
				return err;
			memcpy(&mb->next, cache_entry_data(e),
			       sizeof(mb->next));
			mb->len = (uint32_t)(cache_entry_size(e) -
					     META_ENTRY_HDR);
			memcpy(mb->data,
			       (const uint8_t *)cache_entry_data(e) +
				       META_ENTRY_HDR,
			       mb->len);
			cache_put(img->meta, e);
			mb->held = UINT64_MAX;
			if (mb->next > rg->end)
				return IMG_CORRUPT(
					img,
					"metadata block at %llu runs past the end of its table (%llu)",
					(unsigned long long)*block,
					(unsigned long long)rg->end);
			mb->held = *block;
		}
		if (*off >= mb->len)
			return IMG_CORRUPT(
				img,
				"offset %u is past the end of metadata block %llu (%u bytes)",
				*off, (unsigned long long)*block, mb->len);
		n = MIN(len, mb->len - *off);
		if (dst) {
			memcpy(dst, mb->data + *off, n);
			dst = (uint8_t *)dst + n;
		}
		len -= n;
		*off += (uint32_t)n;
		if (*off == mb->len) {
			*block = mb->next;
			*off = 0;
		}
	}
	return 0;
}

int img__table_get(struct img *img, const struct img_read_ctx *rc,
		   const struct img_table *t, uint64_t idx, void *dst)
{
	uint64_t byte, blk;
	struct img_region rg;
	uint64_t block;
	uint32_t off;

	if (idx >= t->count)
		return IMG_CORRUPT(
			img, "table index %llu out of range (%llu entries)",
			(unsigned long long)idx, (unsigned long long)t->count);
	byte = idx * t->entry_size;
	blk = byte / SQFS_META_SIZE;
	block = t->blocks[blk];
	off = (uint32_t)(byte % SQFS_META_SIZE);
	/* An entry never straddles blocks: sizes divide SQFS_META_SIZE. */
	rg.start = block;
	rg.end = blk + 1 < t->nblocks ? t->blocks[blk + 1] : t->index_start;
	return img__meta_read(img, rc, &rg, &block, &off, dst, t->entry_size);
}

int img__table_load(struct img *img, struct img_table *t, uint64_t start,
		    uint64_t next, const char *what)
{
	uint64_t bytes, nblocks, ilen, end, a, b;
	uint8_t *raw;
	int err;

	if (t->count == 0)
		return IMG_CORRUPT(img, "%s table has no entries", what);
	if (ckd_mul(&bytes, t->count, (uint64_t)t->entry_size))
		return IMG_CORRUPT(img, "%s table size overflows", what);
	nblocks = DIV_ROUND_UP(bytes, (uint64_t)SQFS_META_SIZE);
	ilen = nblocks * 8;
	if (ckd_add(&end, start, ilen) || end > next)
		return IMG_CORRUPT(
			img,
			"%s table index at %llu (%llu bytes) overlaps what follows it at %llu",
			what, (unsigned long long)start,
			(unsigned long long)ilen, (unsigned long long)next);
	raw = malloc(ilen);
	t->blocks = calloc(nblocks, sizeof(*t->blocks));
	if (!raw || !t->blocks) {
		free(raw);
		return -ENOMEM;
	}
	err = img__read(img, NULL, start, raw, ilen);
	if (err)
		goto out_free;
	for (uint64_t i = 0; i < nblocks; i++)
		t->blocks[i] = le64_get(raw + 8 * i);
	/* Each block lies before the next one and before the index, at most
	 * one metadata block apart, and after the data. */
	for (uint64_t i = 0; i < nblocks; i++) {
		a = t->blocks[i];
		b = i + 1 < nblocks ? t->blocks[i + 1] : start;
		if (a < img->data_start || a >= b ||
		    b - a > SQFS_META_SIZE + SQFS_META_HDR) {
			err = IMG_CORRUPT(
				img,
				"%s table block %llu at %llu is misplaced (next at %llu)",
				what, (unsigned long long)i,
				(unsigned long long)a, (unsigned long long)b);
			goto out_free;
		}
	}
	t->nblocks = (uint32_t)nblocks;
	t->index_start = start;
	free(raw);
	return 0;

out_free:
	free(raw);
	free(t->blocks);
	t->blocks = NULL;
	return err;
}

void img__table_release(struct img_table *t)
{
	free(t->blocks);
	t->blocks = NULL;
}

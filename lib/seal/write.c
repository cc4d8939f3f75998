// SPDX-License-Identifier: MIT
/*
 * This file implements making a seal (seal_write()): the range is read
 * once, in order, and the tree is written as it is built, a block of a
 * level as soon as its 128 hashes are known, so that it holds one block
 * per level whatever the range's size.  See seal_i.h for the layout.
 */
#define LOG_MOD "seal"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "seal/seal_i.h"
#include "util/compiler.h"

#define READ_STEP (1u << 20) /* bytes of the range read at a time */

struct builder {
	struct seal_geom g;
	struct seal_hasher hs;
	int out; /* the seal file */
	/* Per level: the block being filled, its hashes so far, and how
	 * many of its blocks are written. */
	uint8_t level[SEAL_LEVELS_MAX][SEAL_BLOCK_SIZE];
	unsigned int fill[SEAL_LEVELS_MAX];
	uint64_t written[SEAL_LEVELS_MAX];
	uint8_t top[SEAL_HASH_SIZE];
};

static int write_at(int fd, const void *buf, size_t len, uint64_t at)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pwrite(fd, (const uint8_t *)buf + done, len - done,
			   (off_t)(at + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

static int add_hash(struct builder *b, unsigned int lvl,
		    const uint8_t h[SEAL_HASH_SIZE]);

/* Level @lvl's block is full, or the level ends: hash it (zeros after
 * its last hash), write it, and give its hash to the level above (or
 * make it the top). */
static int close_block(struct builder *b, unsigned int lvl)
{
	uint8_t h[SEAL_HASH_SIZE];
	uint8_t *blk = b->level[lvl];
	int err;

	memset(blk + (size_t)b->fill[lvl] * SEAL_HASH_SIZE, 0,
	       SEAL_BLOCK_SIZE - (size_t)b->fill[lvl] * SEAL_HASH_SIZE);
	err = seal__hash(&b->hs, blk, SEAL_BLOCK_SIZE, false, h);
	if (!err)
		err = write_at(b->out, blk, SEAL_BLOCK_SIZE,
			       SEAL_HEAD_SIZE + b->g.at[lvl] +
				       b->written[lvl] * SEAL_BLOCK_SIZE);
	if (err)
		return err;
	b->written[lvl]++;
	b->fill[lvl] = 0;
	if (lvl + 1 == b->g.levels) {
		memcpy(b->top, h, SEAL_HASH_SIZE);
		return 0;
	}
	return add_hash(b, lvl + 1, h);
}

/* Add the next hash of level @lvl. */
static int add_hash(struct builder *b, unsigned int lvl,
		    const uint8_t h[SEAL_HASH_SIZE])
{
	memcpy(b->level[lvl] + (size_t)b->fill[lvl] * SEAL_HASH_SIZE, h,
	       SEAL_HASH_SIZE);
	if (++b->fill[lvl] < SEAL_PER_BLOCK)
		return 0;
	return close_block(b, lvl);
}

/* Read the range and hash its blocks into level 0 (or the top). */
static int hash_data(struct builder *b, int fd, uint64_t off)
{
	uint8_t h[SEAL_HASH_SIZE], *buf = malloc(READ_STEP);
	uint64_t at, n;
	size_t k, len;
	ssize_t got;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (at = 0; at < b->g.data_size && !err; at += n) {
		n = MIN((uint64_t)READ_STEP, b->g.data_size - at);
		for (k = 0; k < n; k += (size_t)got) {
			got = pread(fd, buf + k, (size_t)n - k,
				    (off_t)(off + at + k));
			if (got < 0 && errno == EINTR) {
				got = 0;
				continue;
			}
			if (got <= 0) {
				err = got < 0 ? -errno : -EIO;
				break;
			}
		}
		for (k = 0; k < n && !err; k += len) {
			len = MIN((size_t)SEAL_BLOCK_SIZE, (size_t)n - k);
			err = seal__hash(&b->hs, buf + k, len, true, h);
			if (err)
				break;
			if (b->g.levels)
				err = add_hash(b, 0, h);
			else
				memcpy(b->top, h, SEAL_HASH_SIZE);
		}
	}
	free(buf);
	return err;
}

int seal_write(int fd, uint64_t off, uint64_t size, int out,
	       uint8_t root[SEAL_HASH_SIZE])
{
	uint8_t head[SEAL_HEAD_SIZE] = { 0 };
	struct seal_disk_desc *d = (void *)head;
	struct builder *b;
	int err;

	if (!size || size > SEAL_DATA_MAX)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->out = out;
	seal__geom(size, &b->g);
	err = seal__hasher_init(&b->hs);
	if (err)
		goto out_free;
	if (ftruncate(out, (off_t)(SEAL_HEAD_SIZE + b->g.tree_bytes))) {
		err = -errno;
		goto out_release;
	}
	posix_fadvise(fd, (off_t)off, (off_t)size, POSIX_FADV_SEQUENTIAL);
	err = hash_data(b, fd, off);
	/* The last block of each level, from the bottom up: closing one
	 * adds a hash to the next. */
	for (unsigned int i = 0; !err && i < b->g.levels; i++)
		if (b->fill[i])
			err = close_block(b, i);
	/* Every level was written whole, or the geometry is wrong. */
	for (unsigned int i = 0; !err && i < b->g.levels; i++)
		if (b->written[i] != b->g.blocks[i])
			err = -EIO;
	if (err)
		goto out_release;
	memcpy(d->magic, SEAL_MAGIC, sizeof(d->magic));
	le32_put(d->version.b, SEAL_VERSION);
	d->hash_alg = SEAL_ALG_SHA256;
	d->block_log = SEAL_BLOCK_SHIFT;
	d->hash_size = SEAL_HASH_SIZE;
	d->levels = (uint8_t)b->g.levels;
	le64_put(d->data_size.b, size);
	le64_put(d->tree_bytes.b, b->g.tree_bytes);
	memcpy(d->top, b->top, SEAL_HASH_SIZE);
	err = seal__hash(&b->hs, d, sizeof(*d), false, root);
	if (!err)
		err = write_at(out, head, sizeof(head), 0);
out_release:
	seal__hasher_release(&b->hs);
out_free:
	free(b);
	return err;
}

/* SPDX-License-Identifier: MIT */
/*
 * This file declares what the files of lib/seal share: the seal's layout
 * on disk and its geometry, and the hashing they both do.
 *
 * Layout of IMAGE.sqcseal, all integers little-endian:
 *
 *   0     the descriptor (struct seal_disk_desc, 64 bytes), then zeros
 *         up to SEAL_HEAD_SIZE
 *   4096  the tree, top level first, each level a whole number of
 *         4 KiB blocks of 128 hashes, its last block zero-padded
 *
 * Level 0 holds the hash of each 4 KiB block of the data (the last one
 * zero-padded to 4 KiB before it is hashed); level i + 1 the hash of each
 * block of level i; the top level is one block, whose hash is the
 * descriptor's top.  A range of one block has no tree: its top is the
 * hash of that block.  The root hash is the SHA-256 of the descriptor,
 * so it fixes the format, the size and every byte of the data; two
 * ranges of the same bytes have the same root, wherever they are sealed
 * (no salt).
 */
#ifndef SQC_SEAL_SEAL_I_H
#define SQC_SEAL_SEAL_I_H

#include <stdint.h>

#include "seal/seal.h"
#include "util/endian.h"

#define SEAL_MAGIC "SQCSEAL" /* and a NUL: 8 bytes */
#define SEAL_VERSION 1u
#define SEAL_ALG_SHA256 1u
#define SEAL_HEAD_SIZE 4096u /* the descriptor and its padding */
#define SEAL_PER_BLOCK (SEAL_BLOCK_SIZE / SEAL_HASH_SIZE) /* 128 */
/* Levels of a tree over SEAL_DATA_MAX bytes: 2^38 blocks, 128 a level
 * up: 6.  One more is room, not need. */
#define SEAL_LEVELS_MAX 7u

/* The descriptor: what the root hash is the hash of. */
struct seal_disk_desc {
	uint8_t magic[8]; /* SEAL_MAGIC and a NUL */
	struct le32 version; /* SEAL_VERSION */
	uint8_t hash_alg; /* SEAL_ALG_SHA256 */
	uint8_t block_log; /* SEAL_BLOCK_SHIFT: 4 KiB blocks */
	uint8_t hash_size; /* SEAL_HASH_SIZE, bytes */
	uint8_t levels; /* levels of the tree stored, 0..SEAL_LEVELS_MAX */
	struct le64 data_size; /* bytes of the range sealed */
	struct le64 tree_bytes; /* bytes of the tree after the head */
	uint8_t top[SEAL_HASH_SIZE]; /* hash of the top level's block */
};

_Static_assert(sizeof(struct seal_disk_desc) == 64, "seal descriptor layout");

/* Where everything is in a seal of a range of data_size bytes. */
struct seal_geom {
	uint64_t data_size; /* bytes of the range */
	uint64_t nblocks; /* its 4 KiB blocks, the last maybe short */
	unsigned int levels; /* levels of the tree */
	uint64_t blocks[SEAL_LEVELS_MAX]; /* blocks of level i */
	uint64_t entries[SEAL_LEVELS_MAX]; /* hashes level i holds */
	uint64_t at[SEAL_LEVELS_MAX]; /* its offset in the tree, bytes */
	uint64_t tree_bytes; /* bytes of the whole tree */
};

/* The geometry of a seal of @size bytes, 1..SEAL_DATA_MAX (the caller
 * checks).  Cannot fail. */
void seal__geom(uint64_t size, struct seal_geom *g);

/* A SHA-256 hasher of one thread. */
struct seal_hasher {
	void *md; /* EVP_MD, fetched once */
	void *ctx; /* EVP_MD_CTX */
};

/* Return: 0; -ENOMEM (libcrypto's allocations, or no SHA-256). */
int seal__hasher_init(struct seal_hasher *h);
void seal__hasher_release(struct seal_hasher *h);

/* The hash of @len bytes at @p, 1..SEAL_BLOCK_SIZE, zero-padded to a
 * block; or of exactly @len bytes with @pad false.  Return: 0; -EIO if
 * libcrypto fails. */
int seal__hash(struct seal_hasher *h, const void *p, size_t len, bool pad,
	       uint8_t out[SEAL_HASH_SIZE]);

#endif /* SQC_SEAL_SEAL_I_H */

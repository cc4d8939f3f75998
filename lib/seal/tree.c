// SPDX-License-Identifier: MIT
/*
 * This file implements what reading and writing a seal share: the
 * geometry of its tree (how many levels, how many blocks each, where each
 * level is), and hashing with libcrypto.  See seal_i.h for the layout.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <string.h>

#include "seal/seal_i.h"
#include "util/compiler.h"

void seal__geom(uint64_t size, struct seal_geom *g)
{
	uint64_t entries, at = 0;
	unsigned int i;

	memset(g, 0, sizeof(*g));
	g->data_size = size;
	g->nblocks = DIV_ROUND_UP(size, (uint64_t)SEAL_BLOCK_SIZE);
	/* Each level holds the hashes of the one below, 128 to a block,
	 * until one block holds them all. */
	for (entries = g->nblocks; entries > 1 && g->levels < SEAL_LEVELS_MAX;
	     entries = g->blocks[g->levels++]) {
		g->entries[g->levels] = entries;
		g->blocks[g->levels] =
			DIV_ROUND_UP(entries, (uint64_t)SEAL_PER_BLOCK);
	}
	/* Stored from the top down. */
	for (i = g->levels; i-- > 0;) {
		g->at[i] = at;
		at += g->blocks[i] * SEAL_BLOCK_SIZE;
	}
	g->tree_bytes = at;
}

int seal__hasher_init(struct seal_hasher *h)
{
	h->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	h->ctx = EVP_MD_CTX_new();
	if (!h->md || !h->ctx) {
		seal__hasher_release(h);
		return -ENOMEM;
	}
	return 0;
}

void seal__hasher_release(struct seal_hasher *h)
{
	EVP_MD_CTX_free(h->ctx);
	EVP_MD_free(h->md);
	h->ctx = NULL;
	h->md = NULL;
}

int seal__hash(struct seal_hasher *h, const void *p, size_t len, bool pad,
	       uint8_t out[SEAL_HASH_SIZE])
{
	static const uint8_t zeros[SEAL_BLOCK_SIZE];
	unsigned int n = 0;

	if (!EVP_DigestInit_ex2(h->ctx, h->md, NULL) ||
	    !EVP_DigestUpdate(h->ctx, p, len) ||
	    (pad && len < SEAL_BLOCK_SIZE &&
	     !EVP_DigestUpdate(h->ctx, zeros, SEAL_BLOCK_SIZE - len)) ||
	    !EVP_DigestFinal_ex(h->ctx, out, &n) || n != SEAL_HASH_SIZE)
		return -EIO;
	return 0;
}

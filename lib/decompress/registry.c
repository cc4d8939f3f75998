// SPDX-License-Identifier: MIT
/*
 * This file implements the decompressor registry: the table from SquashFS
 * compressor id to codec, and the public dec_*() calls, which check their
 * arguments and dispatch to the codec.
 *
 * Unknown ids resolve to a named entry that says "unknown (id N)", never to
 * NULL [kernel decompressor.c].  Those entries are made on first lookup, in
 * a small fixed table under a mutex, and never change afterwards, so the
 * pointer dec_lookup() returns stays valid and readable without a lock.  A
 * caller that looks up more distinct unknown ids than the table holds gets
 * one shared "unknown" entry instead; no allocation can fail here.
 */
#define LOG_MOD "decompress"

#include <pthread.h>
#include <stdio.h>

#include "decompress/decompress_i.h"
#include "util/compiler.h"
#include "util/err.h"
#include "util/log.h"

/* Known codecs, indexed by compressor id. */
static const struct dec_codec *const codecs[] = {
	[DEC_ID_GZIP] = &dec__gzip, /* zlib.c */
	[DEC_ID_LZMA] = &dec__lzma, /* xz.c */
	[DEC_ID_LZO] = &dec__lzo, /* lzo.c */
	[DEC_ID_XZ] = &dec__xz, /* xz.c */
	[DEC_ID_LZ4] = &dec__lz4, /* lz4.c */
	[DEC_ID_ZSTD] = &dec__zstd, /* zstd.c */
};

/* Distinct unknown ids that get an entry naming their id. */
#define UNKNOWN_SLOTS 64

/*
 * An entry is written under unknown_lock before any caller sees it and is
 * read-only afterwards; the mutex orders the write before every read.
 */
static pthread_mutex_t unknown_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dec_codec unknown[UNKNOWN_SLOTS]; /* protected by unknown_lock */
static unsigned int unknown_used; /* protected by unknown_lock */

/* Shared by every unknown id once the table above is full. */
static const struct dec_codec unknown_overflow = {
	.name = "unknown (id not recorded)",
	.id = 0,
	.supported = false,
};

static const struct dec_codec *lookup_unknown(unsigned int id)
{
	const struct dec_codec *c = &unknown_overflow;
	struct dec_codec *u;

	pthread_mutex_lock(&unknown_lock);
	for (unsigned int i = 0; i < unknown_used; i++) {
		if (unknown[i].id == id) {
			c = &unknown[i];
			goto out_unlock;
		}
	}
	if (unknown_used == UNKNOWN_SLOTS)
		goto out_unlock;

	u = &unknown[unknown_used++];
	snprintf(u->name_buf, sizeof(u->name_buf), "unknown (id %u)", id);
	u->name = u->name_buf;
	u->id = id;
	u->supported = false;
	c = u;
out_unlock:
	pthread_mutex_unlock(&unknown_lock);
	return c;
}

const struct dec_codec *dec_lookup(unsigned int id)
{
	if (id < ARRAY_SIZE(codecs) && codecs[id])
		return codecs[id];
	return lookup_unknown(id);
}

const char *dec_name(const struct dec_codec *c)
{
	return c->name;
}

bool dec_is_supported(const struct dec_codec *c)
{
	return c->supported;
}

int dec_check_options(const struct dec_codec *c, const void *opts, size_t len)
{
	if (!c->supported)
		return -ENOTSUP;
	if (!c->check_options) {
		/* The format defines no options block for this codec. */
		log_debug("%s: compressor options are not defined", c->name);
		return -ENOTSUP;
	}
	if (len && !opts)
		return -EINVAL;
	return c->check_options(opts, len);
}

int dec_decompress(const struct dec_codec *c, const void *src, size_t src_len,
		   void *dst, size_t dst_cap, size_t *out_len)
{
	*out_len = 0;
	if (!c->supported)
		return -ENOTSUP;
	if (!src || (dst_cap && !dst))
		return -EINVAL;
	/* No codec's stream is empty; the libraries need not see it. */
	if (!src_len)
		return -EFSCORRUPTED;
	return c->decompress(src, src_len, dst, dst_cap, out_len);
}

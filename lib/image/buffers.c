// SPDX-License-Identifier: MIT
/*
 * This file implements the per-thread buffers of lib/image: one for
 * compressed bytes on their way to a decompressor, one for raw bytes read
 * for a reply when the caller named no buffer of its own.  They are
 * allocated on first use and freed when the thread exits; they change
 * neither where a read goes nor what it may do.
 */
#include <pthread.h>
#include <stdlib.h>

#include "image/image_i.h"

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

void *img__reply_buf(const struct img_read_ctx *rc)
{
	if (rc && rc->reply_buf)
		return rc->reply_buf;
	return tls_buf(&reply_key, IMG_REPLY_BYTES);
}

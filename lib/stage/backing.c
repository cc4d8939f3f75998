// SPDX-License-Identifier: MIT
/*
 * This file implements the backing copy of a stage: a memfd laid out as
 * the range, page-rounded, then the trailer: one byte per chunk (1 once
 * the chunk's bytes are complete), and in the last bytes of the file its
 * header (struct trailer), found from the file's size alone.  A stage maps it
 * shared, so what it stages outlives it in whoever else holds the
 * descriptor (the keeper, docs/design.md "Keeping a staged copy"), and a
 * later stage of the same range (same size and key) starts with the
 * complete chunks staged.  The state byte of a chunk is written only after
 * its bytes, so a process killed mid-read leaves that chunk incomplete.
 * Nothing here knows what the range or the key is.
 */
#define LOG_MOD "stage"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage/stage_i.h"
#include "util/err.h"
#include "util/log.h"

#define TRAILER_MAGIC "SQCSTAGE"
#define TRAILER_VERSION 1u
#define PAGE 4096u

/* The trailer's header, the last bytes of the copy. */
struct trailer {
	char magic[8]; /* TRAILER_MAGIC, no NUL */
	uint32_t version; /* TRAILER_VERSION */
	uint32_t chunk_size; /* STAGE_CHUNK_SIZE */
	uint64_t size; /* bytes of the range */
	uint32_t key_len; /* bytes of key */
	uint32_t reserved; /* 0 */
	uint8_t key[STAGE_KEY_MAX]; /* what the copy is of */
};

_Static_assert(sizeof(struct trailer) == 96, "trailer layout");

static uint64_t round_page(uint64_t n)
{
	return (n + PAGE - 1) / PAGE * PAGE;
}

static uint64_t nchunks_of(uint64_t size)
{
	return DIV_ROUND_UP(size, (uint64_t)STAGE_CHUNK_SIZE);
}

uint64_t stage_backing_size(uint64_t size)
{
	return round_page(round_page(size) + nchunks_of(size) +
			  sizeof(struct trailer));
}

/* Where the header of a copy of @fsize bytes is. */
static uint64_t trailer_at(uint64_t fsize)
{
	return fsize - sizeof(struct trailer);
}

int stage_backing_new(uint64_t size, const void *key, size_t key_len,
		      const char *name, int *out)
{
	struct trailer t = { .version = TRAILER_VERSION,
			     .chunk_size = STAGE_CHUNK_SIZE,
			     .size = size,
			     .key_len = (uint32_t)key_len };
	int fd, err;

	if (!key_len || key_len > STAGE_KEY_MAX || !size)
		return -EINVAL;
	memcpy(t.magic, TRAILER_MAGIC, sizeof(t.magic));
	memcpy(t.key, key, key_len);
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)stage_backing_size(size)) ||
	    pwrite(fd, &t, sizeof(t),
		   (off_t)trailer_at(stage_backing_size(size))) !=
		    (ssize_t)sizeof(t) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL))
		goto out_close;
	*out = fd;
	return 0;

out_close:
	err = -errno;
	close(fd);
	return err ? err : -EIO;
}

/* Check the header @t of a copy of @fsize bytes.  Return: as
 * stage_backing_check(). */
static int trailer_valid(const struct trailer *t, uint64_t fsize, uint64_t size,
			 const void *key, size_t key_len)
{
	if (memcmp(t->magic, TRAILER_MAGIC, sizeof(t->magic)) ||
	    t->version != TRAILER_VERSION ||
	    t->chunk_size != STAGE_CHUNK_SIZE || !t->size || t->size > fsize ||
	    stage_backing_size(t->size) != fsize || !t->key_len ||
	    t->key_len > STAGE_KEY_MAX)
		return -EBADMSG;
	if (size && t->size != size)
		return -ESTALE;
	if (key && (t->key_len != key_len || memcmp(t->key, key, key_len)))
		return -ESTALE;
	return 0;
}

/* Bytes of the complete chunks of a range of @size, by their bytes @s. */
static uint64_t complete_bytes(const uint8_t *s, uint64_t size)
{
	uint64_t n = nchunks_of(size), sum = 0;

	for (uint64_t c = 0; c < n; c++)
		if (s[c] == 1)
			sum += MIN((uint64_t)STAGE_CHUNK_SIZE,
				   size - (c << STAGE_CHUNK_SHIFT));
	return sum;
}

int stage_backing_check(int fd, uint64_t *size, const void *key, size_t key_len,
			uint64_t *complete)
{
	struct trailer t;
	struct stat sb;
	uint8_t *s;
	ssize_t n;
	int err;

	if (fstat(fd, &sb))
		return -errno;
	if ((uint64_t)sb.st_size < PAGE + sizeof(t))
		return -EBADMSG;
	n = pread(fd, &t, sizeof(t), (off_t)trailer_at((uint64_t)sb.st_size));
	if (n != (ssize_t)sizeof(t))
		return n < 0 ? -errno : -EBADMSG;
	err = trailer_valid(&t, (uint64_t)sb.st_size, *size, key, key_len);
	if (err)
		return err;
	*size = t.size;
	if (!complete)
		return 0;
	s = malloc(nchunks_of(t.size));
	if (!s)
		return -ENOMEM;
	n = pread(fd, s, nchunks_of(t.size), (off_t)round_page(t.size));
	err = n == (ssize_t)nchunks_of(t.size) ? 0 : -EBADMSG;
	if (!err)
		*complete = complete_bytes(s, t.size);
	free(s);
	return err;
}

/* Mark the chunks the backing holds complete as staged. */
static void adopt_chunks(struct stage *st)
{
	for (uint32_t c = 0; c < st->nchunks; c++) {
		if (st->trail[c] != 1)
			continue;
		atomic_store(&st->chunk[c], STAGE_CHUNK_STAGED);
		st->adopted += stage__chunks_len(st, c, 1);
	}
	atomic_store(&st->staged, st->adopted);
}

int stage__backing_map(struct stage *st, const struct stage_opts *o)
{
	const struct stage_backing *b = o->backing;
	uint64_t size = st->size;
	size_t len;
	void *m;
	int err;

	if (!b || b->fd < 0)
		return 0;
	err = stage_backing_check(b->fd, &size, b->key, b->key_len, NULL);
	if (err) {
		log_warn(
			"the kept copy of '%s' does not match it (%s); staging afresh",
			st->src.name, err_str(err));
		st->backing = STAGE_BACKING_REFUSED;
		return 0;
	}
	len = (size_t)stage_backing_size(size);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (m == MAP_FAILED) {
		log_warn(
			"cannot map the kept copy of '%s' (%s); staging afresh",
			st->src.name, err_str(errno));
		st->backing = STAGE_BACKING_REFUSED;
		return 0;
	}
	st->mem = m;
	st->map_len = len;
	st->trail = st->mem + round_page(size);
	st->backing = STAGE_BACKING_USED;
	adopt_chunks(st);
	return 0;
}

void stage__backing_mark(struct stage *st, uint32_t c, uint32_t n)
{
	if (!st->trail)
		return;
	/* After the chunk's bytes: whoever maps the copy next sees a
	 * complete byte only for bytes in place. */
	atomic_thread_fence(memory_order_release);
	memset(st->trail + c, 1, n);
}

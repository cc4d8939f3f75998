// SPDX-License-Identifier: MIT
/*
 * This file implements opening a seal (every field of the file checked,
 * then the tree from the top down), checking bytes against it, and its
 * stats.  See seal_i.h for the layout and seal.h for the contract.
 *
 * The whole tree is held in RAM once open (0.8% of the range: 128 hashes
 * of 32 bytes per 512 KiB, and 1/128 of that again for the levels
 * above), so that checking a block costs one hash and no read.
 */
#define LOG_MOD "seal"

#include <errno.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "seal/seal_i.h"
#include "util/ckd.h"
#include "util/compiler.h"
#include "util/log.h"

struct seal {
	struct seal_geom g; /* sizes and where each level is */
	uint8_t *tree; /* the tree as stored, g.tree_bytes */
	const uint8_t *leaves; /* the hash of each data block */
	uint8_t top[SEAL_HASH_SIZE]; /* hash of the top block (or the data
					block of a one-block range) */
	uint8_t root[SEAL_HASH_SIZE]; /* hash of the descriptor */
	void *md; /* EVP_MD for SHA-256, fetched once; shared */
	_Atomic uint64_t blocks_ok; /* counters, relaxed */
	_Atomic uint64_t blocks_bad;
	_Atomic uint64_t bytes_hashed;
};

/* Read @len bytes at @at, on through EINTR and short reads.  Return: 0;
 * -EBADMSG if the file ends first; -errno. */
static int read_at(int fd, void *buf, size_t len, uint64_t at)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (uint8_t *)buf + done, len - done,
			  (off_t)(at + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EBADMSG;
		done += (size_t)n;
	}
	return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Decode and check the head of a seal file of @fsize bytes; fill @g.
 * Return: 0 or -EBADMSG (logged). */
static int check_head(const uint8_t *head, uint64_t fsize, const char *name,
		      struct seal_geom *g)
{
	const struct seal_disk_desc *d = (const void *)head;
	uint64_t size = le64_dec(d->data_size), want;

	if (memcmp(d->magic, SEAL_MAGIC, sizeof(d->magic))) {
		log_err("seal '%s' is not a seal (no '%s' at its start)", name,
			SEAL_MAGIC);
		return -EBADMSG;
	}
	if (le32_dec(d->version) != SEAL_VERSION) {
		log_err("seal '%s' is of format version %u; this squashcache reads version %u (seal the image again)",
			name, le32_dec(d->version), SEAL_VERSION);
		return -EBADMSG;
	}
	if (d->hash_alg != SEAL_ALG_SHA256 || d->hash_size != SEAL_HASH_SIZE ||
	    d->block_log != SEAL_BLOCK_SHIFT) {
		log_err("seal '%s' uses hash %u of %u bytes over blocks of 2^%u bytes; only SHA-256 over 4 KiB blocks is known",
			name, d->hash_alg, d->hash_size, d->block_log);
		return -EBADMSG;
	}
	if (!size || size > SEAL_DATA_MAX) {
		log_err("seal '%s' claims to cover %llu bytes (1 .. 2^50)",
			name, (unsigned long long)size);
		return -EBADMSG;
	}
	seal__geom(size, g);
	if (d->levels != g->levels ||
	    le64_dec(d->tree_bytes) != g->tree_bytes) {
		log_err("seal '%s' gives its tree %u levels and %llu bytes; %llu bytes of data need %u and %llu",
			name, d->levels,
			(unsigned long long)le64_dec(d->tree_bytes),
			(unsigned long long)size, g->levels,
			(unsigned long long)g->tree_bytes);
		return -EBADMSG;
	}
	if (!all_zero(head + sizeof(*d), SEAL_HEAD_SIZE - sizeof(*d))) {
		log_err("seal '%s' has bytes in the padding of its head", name);
		return -EBADMSG;
	}
	want = SEAL_HEAD_SIZE + g->tree_bytes;
	if (fsize != want) {
		log_err("seal '%s' is %llu bytes; a seal of %llu bytes of data is %llu (%s)",
			name, (unsigned long long)fsize,
			(unsigned long long)size, (unsigned long long)want,
			fsize < want ? "truncated" : "bytes after its tree");
		return -EBADMSG;
	}
	return 0;
}

/* Check the tree from the top down: the top block against the top hash,
 * each block of a level against its entry one level up, and zeros past
 * the last entry of each level.  Return: 0; -EBADMSG (logged); -ENOMEM;
 * -EIO. */
static int check_tree(struct seal *s, const char *name)
{
	const struct seal_geom *g = &s->g;
	uint8_t h[SEAL_HASH_SIZE];
	struct seal_hasher hs;
	int err;

	if (!g->levels)
		return 0; /* one data block: its hash is the top */
	err = seal__hasher_init(&hs);
	if (err)
		return err;
	for (unsigned int i = g->levels; i-- > 0;) {
		const uint8_t *lvl = s->tree + g->at[i];
		const uint8_t *up = i + 1 < g->levels ? s->tree + g->at[i + 1] :
							s->top;
		uint64_t used = g->entries[i] * SEAL_HASH_SIZE;

		if (!all_zero(lvl + used,
			      g->blocks[i] * SEAL_BLOCK_SIZE - used)) {
			log_err("seal '%s' has bytes in the padding of tree level %u",
				name, i);
			err = -EBADMSG;
			goto out_release;
		}
		for (uint64_t b = 0; b < g->blocks[i]; b++) {
			err = seal__hash(&hs, lvl + b * SEAL_BLOCK_SIZE,
					 SEAL_BLOCK_SIZE, false, h);
			if (err)
				goto out_release;
			if (memcmp(h, up + b * SEAL_HASH_SIZE,
				   SEAL_HASH_SIZE)) {
				log_err("seal '%s' is damaged: block %llu of tree level %u does not match its hash",
					name, (unsigned long long)b, i);
				err = -EBADMSG;
				goto out_release;
			}
		}
	}
out_release:
	seal__hasher_release(&hs);
	return err;
}

/* The root hash: the SHA-256 of the descriptor. */
static int root_of(const uint8_t *head, uint8_t out[SEAL_HASH_SIZE])
{
	struct seal_hasher hs;
	int err = seal__hasher_init(&hs);

	if (err)
		return err;
	err = seal__hash(&hs, head, sizeof(struct seal_disk_desc), false, out);
	seal__hasher_release(&hs);
	return err;
}

/* Read and check the head of the seal @fd into @head and @g, and its
 * size against @size (0: any).  Return: as seal_peek(). */
static int read_head(int fd, const char *name, uint64_t size,
		     uint8_t head[SEAL_HEAD_SIZE], struct seal_geom *g)
{
	struct stat sb;
	int err;

	if (fstat(fd, &sb))
		return -errno;
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size < SEAL_HEAD_SIZE) {
		log_err("seal '%s' is %s; a seal has a head of %u bytes", name,
			S_ISREG(sb.st_mode) ? "shorter" : "not a regular file",
			SEAL_HEAD_SIZE);
		return -EBADMSG;
	}
	err = read_at(fd, head, SEAL_HEAD_SIZE, 0);
	if (!err)
		err = check_head(head, (uint64_t)sb.st_size, name, g);
	if (err)
		return err;
	if (size && g->data_size != size) {
		log_err("seal '%s' is of %llu bytes of data, not of these %llu (it seals another image)",
			name, (unsigned long long)g->data_size,
			(unsigned long long)size);
		return -ESTALE;
	}
	return 0;
}

int seal_peek(int fd, const char *name, uint64_t size,
	      uint8_t root[SEAL_HASH_SIZE])
{
	uint8_t head[SEAL_HEAD_SIZE];
	struct seal_geom g;
	int err = read_head(fd, name, size, head, &g);

	return err ? err : root_of(head, root);
}

int seal_open(int fd, const char *name, uint64_t size, const uint8_t *root,
	      struct seal **out)
{
	uint8_t head[SEAL_HEAD_SIZE];
	char have[SEAL_HEX_SIZE], want[SEAL_HEX_SIZE];
	struct seal_geom g;
	struct seal *s;
	int err;

	err = read_head(fd, name, size, head, &g);
	if (err)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->g = g;
	memcpy(s->top, ((const struct seal_disk_desc *)head)->top,
	       SEAL_HASH_SIZE);
	err = root_of(head, s->root);
	if (err)
		goto out_free;
	if (root && memcmp(root, s->root, SEAL_HASH_SIZE)) {
		log_err("seal '%s' has root hash %s, not %s", name,
			seal_hex(s->root, have), seal_hex(root, want));
		err = -EKEYREJECTED;
		goto out_free;
	}
	err = -ENOMEM;
	if (g.tree_bytes > SIZE_MAX)
		goto out_free;
	if (g.tree_bytes) {
		s->tree = malloc((size_t)g.tree_bytes);
		if (!s->tree)
			goto out_free;
		err = read_at(fd, s->tree, (size_t)g.tree_bytes,
			      SEAL_HEAD_SIZE);
		if (err == -EBADMSG)
			log_err("seal '%s' was cut short while it was read",
				name);
		if (err)
			goto out_free;
	}
	err = check_tree(s, name);
	if (err)
		goto out_free;
	s->leaves = g.levels ? s->tree + g.at[0] : s->top;
	s->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (!s->md) {
		err = -ENOMEM;
		goto out_free;
	}
	*out = s;
	return 0;

out_free:
	seal_free(s);
	return err;
}

void seal_free(struct seal *s)
{
	if (!s)
		return;
	EVP_MD_free(s->md);
	free(s->tree);
	free(s);
}

/* Check blocks from @first, @len bytes at @buf; count them.  *@bad: the
 * first bad one (set only if there is one); *@nbad: add the bad ones.
 * Return: 0; -EBADMSG; -ENOMEM; -EIO. */
static int check_blocks(struct seal *s, uint64_t first, const uint8_t *buf,
			size_t len, uint64_t *bad, uint64_t *nbad)
{
	struct seal_hasher hs = { s->md, EVP_MD_CTX_new() };
	uint8_t h[SEAL_HASH_SIZE];
	uint64_t ok = 0, ko = 0;
	size_t at, n;
	int err = 0;

	if (!hs.ctx)
		return -ENOMEM;
	for (at = 0; at < len; at += n, first++) {
		n = MIN((size_t)SEAL_BLOCK_SIZE, len - at);
		err = seal__hash(&hs, buf + at, n, true, h);
		if (err)
			break;
		if (!memcmp(h, s->leaves + first * SEAL_HASH_SIZE,
			    SEAL_HASH_SIZE)) {
			ok++;
			continue;
		}
		if (!ko++ && bad)
			*bad = first;
	}
	EVP_MD_CTX_free(hs.ctx);
	atomic_fetch_add_explicit(&s->blocks_ok, ok, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->blocks_bad, ko, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->bytes_hashed, at, memory_order_relaxed);
	if (nbad)
		*nbad += ko;
	return err ? err : ko ? -EBADMSG : 0;
}

int seal_check(struct seal *s, uint64_t off, const void *buf, size_t len,
	       uint64_t *bad)
{
	uint64_t end;

	if (off % SEAL_BLOCK_SIZE || !len || ckd_add(&end, off, len) ||
	    end > s->g.data_size ||
	    (len % SEAL_BLOCK_SIZE && end != s->g.data_size))
		return -EINVAL;
	return check_blocks(s, off >> SEAL_BLOCK_SHIFT, buf, len, bad, NULL);
}

#define CHECK_FD_STEP (1u << 20) /* bytes read at a time */

int seal_check_fd(struct seal *s, int fd, uint64_t off, uint64_t *bad,
		  uint64_t *nbad)
{
	uint64_t at, n, count = 0, first = UINT64_MAX;
	uint8_t *buf = malloc(CHECK_FD_STEP);
	int err = 0, e;

	if (!buf)
		return -ENOMEM;
	for (at = 0; at < s->g.data_size; at += n) {
		n = MIN((uint64_t)CHECK_FD_STEP, s->g.data_size - at);
		e = read_at(fd, buf, (size_t)n, off + at);
		if (e) {
			err = e == -EBADMSG ? -EIO : e;
			break;
		}
		e = check_blocks(s, at >> SEAL_BLOCK_SHIFT, buf, (size_t)n,
				 first == UINT64_MAX ? &first : NULL, &count);
		if (e && e != -EBADMSG) {
			err = e;
			break;
		}
	}
	free(buf);
	if (bad)
		*bad = first;
	if (nbad)
		*nbad = count;
	return err ? err : count ? -EBADMSG : 0;
}

uint64_t seal_file_size(uint64_t size)
{
	struct seal_geom g;

	if (!size || size > SEAL_DATA_MAX)
		return 0;
	seal__geom(size, &g);
	return SEAL_HEAD_SIZE + g.tree_bytes;
}

uint64_t seal_data_size(const struct seal *s)
{
	return s->g.data_size;
}

const uint8_t *seal_root(const struct seal *s)
{
	return s->root;
}

void seal_get_stats(struct seal *s, struct seal_stats *out)
{
	out->data_size = s->g.data_size;
	out->tree_bytes = s->g.tree_bytes;
	out->blocks_ok = atomic_load(&s->blocks_ok);
	out->blocks_bad = atomic_load(&s->blocks_bad);
	out->bytes_hashed = atomic_load(&s->bytes_hashed);
}

char *seal_hex(const uint8_t *hash, char out[SEAL_HEX_SIZE])
{
	static const char digits[] = "0123456789abcdef";

	for (unsigned int i = 0; i < SEAL_HASH_SIZE; i++) {
		out[2 * i] = digits[hash[i] >> 4];
		out[2 * i + 1] = digits[hash[i] & 15];
	}
	out[2 * SEAL_HASH_SIZE] = '\0';
	return out;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int seal_parse_hex(const char *text, uint8_t out[SEAL_HASH_SIZE])
{
	uint8_t h[SEAL_HASH_SIZE];

	if (strlen(text) != 2 * SEAL_HASH_SIZE)
		return -EINVAL;
	for (unsigned int i = 0; i < SEAL_HASH_SIZE; i++) {
		int hi = hex_digit(text[2 * i]),
		    lo = hex_digit(text[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		h[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(out, h, sizeof(h));
	return 0;
}

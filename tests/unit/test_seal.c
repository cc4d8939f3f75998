// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/seal: a seal written by
 * seal_write() is, byte for byte, the layout docs/design.md describes (a
 * tree built here independently, with libcrypto's SHA256(), gives the
 * same file and root hash) for ranges of one block to three levels; it
 * opens and passes its own data, whole and chunk by chunk; a flipped bit
 * anywhere in the data fails exactly its block; a flipped bit anywhere in
 * the seal file, a truncated, an oversized or a garbage file, a wrong
 * root hash or a wrong size is refused with its own error, never taken;
 * arguments out of range are refused; several threads check at once and
 * every block is counted.
 */
/* TSAN: yes */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "seal/seal.h"
#include "util/log.h"

#define BLK 4096u

/* A memfd holding @len bytes of @p. */
static int memfd_of(const void *p, size_t len)
{
	int fd = memfd_create("test_seal", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)len), 0);
	if (len)
		ck_assert_int_eq(pwrite(fd, p, len, 0), (ssize_t)len);
	return fd;
}

static uint8_t *data_new(size_t len, uint32_t seed)
{
	uint8_t *p = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i + seed) * 2654435761u >> 24);
	return p;
}

/* The whole of a file. */
static uint8_t *slurp(int fd, size_t *len)
{
	struct stat sb;
	uint8_t *p;

	ck_assert_int_eq(fstat(fd, &sb), 0);
	*len = (size_t)sb.st_size;
	p = malloc(*len);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(pread(fd, p, *len, 0), (ssize_t)*len);
	return p;
}

/*
 * The seal of @len bytes at @d, built here the plain way (every level in
 * memory) from the layout docs/design.md gives: SHA-256 of each 4 KiB
 * block, zero-padded; levels of 128 hashes a block, zero-padded, stored
 * top first after a 4 KiB head; the root the SHA-256 of the 64-byte
 * descriptor.  Returns the file's bytes and their length, and the root.
 */
static uint8_t *reference(const uint8_t *d, size_t len, size_t *flen,
			  uint8_t root[32])
{
	size_t n = (len + BLK - 1) / BLK, nlev = 0, total = 0, at;
	uint8_t *lv[8], *hashes, *file, top[32], blk[BLK];
	size_t lvblocks[8];

	hashes = malloc(n * 32);
	for (size_t i = 0; i < n; i++) {
		size_t k = len - i * BLK < BLK ? len - i * BLK : BLK;

		memset(blk, 0, BLK);
		memcpy(blk, d + i * BLK, k);
		SHA256(blk, BLK, hashes + i * 32);
	}
	while (n > 1) {
		size_t nb = (n + 127) / 128;

		lv[nlev] = calloc(nb, BLK);
		memcpy(lv[nlev], hashes, n * 32);
		lvblocks[nlev] = nb;
		free(hashes);
		hashes = malloc(nb * 32);
		for (size_t b = 0; b < nb; b++)
			SHA256(lv[nlev] + b * BLK, BLK, hashes + b * 32);
		total += nb * BLK;
		nlev++;
		n = nb;
	}
	memcpy(top, hashes, 32);
	free(hashes);
	*flen = BLK + total;
	file = calloc(1, *flen);
	memcpy(file, "SQCSEAL", 8);
	file[8] = 1; /* version, le32 */
	file[12] = 1; /* SHA-256 */
	file[13] = 12; /* 4 KiB blocks */
	file[14] = 32; /* hash bytes */
	file[15] = (uint8_t)nlev;
	for (int i = 0; i < 8; i++) {
		file[16 + i] = (uint8_t)((uint64_t)len >> (8 * i));
		file[24 + i] = (uint8_t)((uint64_t)total >> (8 * i));
	}
	memcpy(file + 32, top, 32);
	SHA256(file, 64, root);
	at = BLK;
	for (size_t i = nlev; i-- > 0;) {
		memcpy(file + at, lv[i], lvblocks[i] * BLK);
		at += lvblocks[i] * BLK;
		free(lv[i]);
	}
	return file;
}

/* Seal @len bytes at @d into a memfd; *root: its root. */
static int seal_of(const uint8_t *d, size_t len, uint8_t root[32])
{
	int in = memfd_of(d, len), out = memfd_of(NULL, 0);

	ck_assert_int_eq(seal_write(in, 0, len, out, root), 0);
	close(in);
	return out;
}

static const size_t sizes[] = {
	1,
	96,
	BLK - 1,
	BLK,
	BLK + 1,
	2 * BLK,
	128 * BLK, /* one full level-0 block */
	128 * BLK + 1, /* two levels */
	600 * 1024 + 17,
	128 * 128 * BLK + 5, /* three levels */
};

START_TEST(test_layout)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i], flen, rlen;
		uint8_t *d = data_new(len, (uint32_t)i), root[32], rroot[32];
		uint8_t *ref = reference(d, len, &rlen, rroot), *got;
		int fd = seal_of(d, len, root);

		got = slurp(fd, &flen);
		ck_assert_msg(flen == rlen && !memcmp(got, ref, rlen),
			      "size %zu: the seal is not the documented layout",
			      len);
		ck_assert_mem_eq(root, rroot, 32);
		free(got);
		free(ref);
		free(d);
		close(fd);
	}
}
END_TEST

START_TEST(test_roundtrip)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];
		uint8_t *d = data_new(len, (uint32_t)i + 7), root[32];
		int fd = seal_of(d, len, root), in = memfd_of(d, len);
		struct seal_stats st;
		struct seal *s;
		uint64_t bad = 42, nbad = 42, step = 128 << 10;

		ck_assert_int_eq(seal_open(fd, "t", len, root, &s), 0);
		ck_assert_mem_eq(seal_root(s), root, 32);
		{
			struct stat sb;

			ck_assert_int_eq(fstat(fd, &sb), 0);
			ck_assert_uint_eq(seal_file_size(len),
					  (uint64_t)sb.st_size);
			ck_assert_uint_le(seal_file_size(len),
					  seal_file_size(len + 4096));
		}
		ck_assert_uint_eq(seal_data_size(s), len);
		ck_assert_int_eq(seal_check(s, 0, d, len, &bad), 0);
		ck_assert_uint_eq(bad, 42); /* untouched */
		/* As staging checks it: 128 KiB chunks, the last one short. */
		for (uint64_t off = 0; off < len; off += step)
			ck_assert_int_eq(
				seal_check(s, off, d + off,
					   len - off < step ? len - off : step,
					   NULL),
				0);
		ck_assert_int_eq(seal_check_fd(s, in, 0, &bad, &nbad), 0);
		ck_assert_uint_eq(nbad, 0);
		seal_get_stats(s, &st);
		ck_assert_uint_eq(st.data_size, len);
		ck_assert_uint_eq(st.blocks_bad, 0);
		ck_assert_uint_eq(st.blocks_ok, 3 * ((len + BLK - 1) / BLK));
		ck_assert_uint_eq(st.bytes_hashed, 3 * len);
		/* Its head alone names the same root, and the size. */
		{
			uint8_t peek[32];

			ck_assert_int_eq(seal_peek(fd, "t", len, peek), 0);
			ck_assert_mem_eq(peek, root, 32);
			ck_assert_int_eq(seal_peek(fd, "t", 0, peek), 0);
			ck_assert_int_eq(seal_peek(fd, "t", len + 1, peek),
					 -ESTALE);
		}
		/* Also without a size or a root to match. */
		seal_free(s);
		ck_assert_int_eq(seal_open(fd, "t", 0, NULL, &s), 0);
		seal_free(s);
		close(in);
		close(fd);
		free(d);
	}
}
END_TEST

/* Data at an offset in its file, as an image is in a SIF. */
START_TEST(test_offset)
{
	size_t len = 300000, off = 12345;
	uint8_t *d = data_new(off + len, 3), root[32], root2[32];
	int in = memfd_of(d, off + len), out = memfd_of(NULL, 0), fd;
	struct seal *s;

	ck_assert_int_eq(seal_write(in, off, len, out, root), 0);
	fd = seal_of(d + off, len, root2);
	ck_assert_mem_eq(root, root2, 32); /* the same bytes, the same root */
	ck_assert_int_eq(seal_open(out, "t", len, root, &s), 0);
	ck_assert_int_eq(seal_check_fd(s, in, off, NULL, NULL), 0);
	ck_assert_int_eq(seal_check_fd(s, in, 0, NULL, NULL), -EBADMSG);
	/* A file that ends before the range. */
	ck_assert_int_eq(seal_check_fd(s, in, off + 1000, NULL, NULL), -EIO);
	seal_free(s);
	close(fd);
	close(out);
	close(in);
	/* The range leaves the file. */
	in = memfd_of(d, 1000);
	out = memfd_of(NULL, 0);
	ck_assert_int_eq(seal_write(in, 0, 5000, out, root), -EIO);
	ck_assert_int_eq(seal_write(in, 0, 0, out, root), -EINVAL);
	ck_assert_int_eq(seal_write(in, 0, (1ull << 50) + 1, out, root),
			 -EINVAL);
	ck_assert_uint_eq(seal_file_size(0), 0);
	ck_assert_uint_eq(seal_file_size((1ull << 50) + 1), 0);
	ck_assert_uint_eq(seal_file_size(1ull << 50),
			  4096 + (1ull << 43) + (1ull << 36) + (1ull << 29) +
				  (1ull << 22) + (1ull << 15) + 4096);
	close(out);
	close(in);
	free(d);
}
END_TEST

/* A flipped bit anywhere in the data fails its block, and only it. */
START_TEST(test_data_flip)
{
	size_t len = 128 * 128 * BLK + 5;
	uint8_t *d = data_new(len, 11), root[32];
	int fd = seal_of(d, len, root), in;
	const size_t at[] = { 0,       1,	BLK - 1, BLK,	 77777,
			      len / 2, len - 6, len - 5, len - 1 };
	uint64_t bad, nbad, b;
	struct seal *s;

	ck_assert_int_eq(seal_open(fd, "t", len, root, &s), 0);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		size_t c0 = at[i] / (128 << 10) * (128 << 10);
		size_t clen = len - c0 < (128 << 10) ? len - c0 : 128 << 10;

		b = at[i] / BLK;
		d[at[i]] ^= 0x10;
		bad = 0;
		ck_assert_int_eq(seal_check(s, 0, d, len, &bad), -EBADMSG);
		ck_assert_uint_eq(bad, b);
		ck_assert_int_eq(seal_check(s, c0, d + c0, clen, &bad),
				 -EBADMSG);
		ck_assert_uint_eq(bad, b);
		/* The block alone, and its neighbours pass. */
		ck_assert_int_eq(
			seal_check(s, b * BLK, d + b * BLK,
				   len - b * BLK < BLK ? len - b * BLK : BLK,
				   NULL),
			-EBADMSG);
		if (b)
			ck_assert_int_eq(seal_check(s, (b - 1) * BLK,
						    d + (b - 1) * BLK, BLK,
						    NULL),
					 0);
		d[at[i]] ^= 0x10;
	}
	/* Three bad blocks in a file: seal_check_fd counts them. */
	d[5] ^= 1;
	d[3 * BLK] ^= 0x80;
	d[len - 1] ^= 4;
	in = memfd_of(d, len);
	ck_assert_int_eq(seal_check_fd(s, in, 0, &bad, &nbad), -EBADMSG);
	ck_assert_uint_eq(bad, 0);
	ck_assert_uint_eq(nbad, 3);
	close(in);
	seal_free(s);
	close(fd);
	free(d);
}
END_TEST

/* Bytes past the end of the data in its last block are not the data's:
 * a range one byte longer is another range. */
START_TEST(test_padding_is_not_data)
{
	uint8_t *d = data_new(BLK, 5), root[32], root2[32];
	struct seal *s;
	int fd, fd2;

	d[BLK - 1] = 0; /* the 4095 bytes and a zero, padded or not */
	fd = seal_of(d, BLK - 1, root);
	fd2 = seal_of(d, BLK, root2);
	ck_assert_mem_ne(root, root2, 32);
	close(fd2);
	ck_assert_int_eq(seal_open(fd, "t", BLK - 1, NULL, &s), 0);
	ck_assert_int_eq(seal_check(s, 0, d, BLK - 1, NULL), 0);
	ck_assert_int_eq(seal_check(s, 0, d, BLK, NULL), -EINVAL);
	seal_free(s);
	ck_assert_int_eq(seal_open(fd, "t", BLK, NULL, &s), -ESTALE);
	close(fd);
	free(d);
}
END_TEST

START_TEST(test_args)
{
	size_t len = 3 * BLK + 100;
	uint8_t *d = data_new(len, 1), root[32];
	int fd = seal_of(d, len, root);
	struct seal *s;

	ck_assert_int_eq(seal_open(fd, "t", len, root, &s), 0);
	ck_assert_int_eq(seal_check(s, 1, d, BLK, NULL), -EINVAL);
	ck_assert_int_eq(seal_check(s, 0, d, 0, NULL), -EINVAL);
	ck_assert_int_eq(seal_check(s, 0, d, BLK + 1, NULL), -EINVAL);
	ck_assert_int_eq(seal_check(s, 0, d, len + 1, NULL), -EINVAL);
	ck_assert_int_eq(seal_check(s, 4 * BLK, d, 100, NULL), -EINVAL);
	ck_assert_int_eq(seal_check(s, UINT64_MAX - BLK + 1, d, BLK, NULL),
			 -EINVAL);
	ck_assert_int_eq(seal_check(s, 3 * BLK, d + 3 * BLK, 100, NULL), 0);
	seal_free(s);
	close(fd);
	free(d);
}
END_TEST

/* Open a seal of @len bytes made of @p, as the daemon does (size, and
 * maybe the root). */
static int open_bytes(const uint8_t *p, size_t len, uint64_t size,
		      const uint8_t *root)
{
	struct seal *s = NULL;
	int fd = memfd_of(p, len), err;

	err = seal_open(fd, "t", size, root, &s);
	seal_free(s);
	close(fd);
	return err;
}

/* A flipped bit anywhere in the seal: refused, with or without the root
 * pinned; never taken. */
START_TEST(test_seal_flip)
{
	size_t len = 600 * 1024 + 17, flen; /* two levels: 16 KiB of seal */
	uint8_t *d = data_new(len, 9), root[32], *f;
	int fd = seal_of(d, len, root), err;

	f = slurp(fd, &flen);
	ck_assert_uint_eq(flen, 4 * BLK);
	for (size_t i = 0; i < flen; i++) {
		for (int bit = 0; bit < 8; bit += 7) {
			f[i] ^= (uint8_t)(1 << bit);
			err = open_bytes(f, flen, len, NULL);
			ck_assert_msg(err == -EBADMSG || err == -ESTALE,
				      "bit %d of byte %zu flipped: %d", bit, i,
				      err);
			err = open_bytes(f, flen, 0, root);
			ck_assert_msg(
				err == -EBADMSG || err == -EKEYREJECTED,
				"bit %d of byte %zu flipped, root pinned: %d",
				bit, i, err);
			/* Its head alone never names the same root when
			 * a byte of the head changed. */
			if (i < BLK) {
				uint8_t peek[32];
				int m = memfd_of(f, flen);

				err = seal_peek(m, "t", 0, peek);
				ck_assert_msg(
					err || memcmp(peek, root, 32),
					"byte %zu of the head flipped: same root",
					i);
				close(m);
			}
			f[i] ^= (uint8_t)(1 << bit);
		}
	}
	ck_assert_int_eq(open_bytes(f, flen, len, root), 0);
	free(f);
	close(fd);
	free(d);
}
END_TEST

START_TEST(test_seal_sizes)
{
	size_t len = 600 * 1024 + 17, flen;
	uint8_t *d = data_new(len, 2), root[32], *f, *big;
	int fd = seal_of(d, len, root), dir;
	struct seal *s;

	f = slurp(fd, &flen);
	/* Truncated anywhere. */
	for (size_t n = 0; n < flen; n += n < 4200 ? 1 : 997)
		ck_assert_int_eq(open_bytes(f, n, len, NULL), -EBADMSG);
	/* Oversized: a byte, a block, zeros or not. */
	big = calloc(1, flen + 2 * BLK);
	memcpy(big, f, flen);
	ck_assert_int_eq(open_bytes(big, flen + 1, len, NULL), -EBADMSG);
	ck_assert_int_eq(open_bytes(big, flen + BLK, len, NULL), -EBADMSG);
	memset(big + flen, 0xab, 2 * BLK);
	ck_assert_int_eq(open_bytes(big, flen + 2 * BLK, len, NULL), -EBADMSG);
	/* Garbage of every kind of length, a head of zeros. */
	for (size_t n = 1; n < 5 * BLK; n = n * 3 + 1) {
		uint8_t *g = data_new(n, (uint32_t)n);

		ck_assert_int_eq(open_bytes(g, n, 0, NULL), -EBADMSG);
		free(g);
	}
	memset(big, 0, flen);
	ck_assert_int_eq(open_bytes(big, flen, 0, NULL), -EBADMSG);
	/* Not a regular file. */
	dir = open("/", O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(seal_open(dir, "/", 0, NULL, &s), -EBADMSG);
	close(dir);
	free(big);
	free(f);
	close(fd);
	free(d);
}
END_TEST

/* The head of a seal of 1 PiB + 1 byte, or of a newer version: refused
 * before anything is allocated for it. */
START_TEST(test_seal_fields)
{
	size_t len = 5 * BLK, flen;
	uint8_t *d = data_new(len, 4), root[32], *f;
	int fd = seal_of(d, len, root);

	f = slurp(fd, &flen);
	f[8] = 2; /* version */
	ck_assert_int_eq(open_bytes(f, flen, 0, NULL), -EBADMSG);
	f[8] = 1;
	f[12] = 2; /* another hash */
	ck_assert_int_eq(open_bytes(f, flen, 0, NULL), -EBADMSG);
	f[12] = 1;
	f[13] = 16; /* 64 KiB blocks */
	ck_assert_int_eq(open_bytes(f, flen, 0, NULL), -EBADMSG);
	f[13] = 12;
	f[22] = 4; /* data_size 2^50 + 5 * 4096 */
	ck_assert_int_eq(open_bytes(f, flen, 0, NULL), -EBADMSG);
	f[22] = 0;
	memset(f + 16, 0, 8); /* no data */
	ck_assert_int_eq(open_bytes(f, flen, 0, NULL), -EBADMSG);
	free(f);
	f = slurp(fd, &flen);
	ck_assert_int_eq(open_bytes(f, flen, 0, NULL), 0);
	ck_assert_int_eq(open_bytes(f, flen, len + 1, NULL), -ESTALE);
	root[31] ^= 1;
	ck_assert_int_eq(open_bytes(f, flen, len, root), -EKEYREJECTED);
	free(f);
	close(fd);
	free(d);
}
END_TEST

START_TEST(test_hex)
{
	uint8_t h[32], g[32];
	char hex[SEAL_HEX_SIZE + 1], up[SEAL_HEX_SIZE];

	for (int i = 0; i < 32; i++)
		h[i] = (uint8_t)(i * 37 + 1);
	seal_hex(h, hex);
	ck_assert_uint_eq(strlen(hex), 64);
	ck_assert_int_eq(seal_parse_hex(hex, g), 0);
	ck_assert_mem_eq(g, h, 32);
	for (int i = 0; i < 65; i++)
		up[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]);
	ck_assert_int_eq(seal_parse_hex(up, g), 0);
	ck_assert_mem_eq(g, h, 32);
	memset(g, 0x5a, 32);
	ck_assert_int_eq(seal_parse_hex("", g), -EINVAL);
	ck_assert_int_eq(seal_parse_hex("abc", g), -EINVAL);
	hex[10] = 'g';
	ck_assert_int_eq(seal_parse_hex(hex, g), -EINVAL);
	hex[10] = '0';
	strcat(hex, "0"); /* one digit too many */
	ck_assert_int_eq(seal_parse_hex(hex, g), -EINVAL);
	for (int i = 0; i < 32; i++)
		ck_assert_uint_eq(g[i], 0x5a); /* untouched on errors */
}
END_TEST

struct worker {
	struct seal *s;
	const uint8_t *d;
	size_t len;
	int fails;
};

static void *check_main(void *arg)
{
	struct worker *w = arg;
	size_t step = 128 << 10;

	for (int r = 0; r < 4; r++)
		for (size_t off = 0; off < w->len; off += step)
			if (seal_check(w->s, off, w->d + off,
				       w->len - off < step ? w->len - off :
							     step,
				       NULL))
				w->fails++;
	return NULL;
}

/* Readers check at once; every block is counted once per check. */
START_TEST(test_threads)
{
	size_t len = 8u << 20;
	uint8_t *d = data_new(len, 8), root[32];
	int fd = seal_of(d, len, root);
	struct worker w[4];
	pthread_t t[4];
	struct seal_stats st;
	struct seal *s;

	ck_assert_int_eq(seal_open(fd, "t", len, root, &s), 0);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ s, d, len, 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, check_main, &w[i]),
				 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(w[i].fails, 0);
	}
	seal_get_stats(s, &st);
	ck_assert_uint_eq(st.blocks_ok, 16 * (len / BLK));
	ck_assert_uint_eq(st.bytes_hashed, 16 * len);
	seal_free(s);
	close(fd);
	free(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("seal");
	TCase *tc = tcase_create("seal");
	SRunner *sr;
	int failed;

	log_set_level(LOG_CRIT); /* the refusals are expected */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_offset);
	tcase_add_test(tc, test_data_flip);
	tcase_add_test(tc, test_padding_is_not_data);
	tcase_add_test(tc, test_args);
	tcase_add_test(tc, test_seal_flip);
	tcase_add_test(tc, test_seal_sizes);
	tcase_add_test(tc, test_seal_fields);
	tcase_add_test(tc, test_hex);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

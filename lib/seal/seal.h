/* SPDX-License-Identifier: MIT */
/*
 * This file declares the seal of an image: a hash tree kept beside it
 * (IMAGE.sqcseal) that says what every 4 KiB block of the image's bytes
 * must be, and one root hash that says what the whole tree must be.
 *
 * SquashFS has no checksums: a block that decodes but is wrong (a flipped
 * bit in an uncompressed block, a storage fault) would be served as data.
 * A seal is made once from the image (seal_write(), `mountctl seal`);
 * whoever reads the image then opens the seal (seal_open(), which checks
 * the whole tree against its root from the top down) and checks each
 * block before its bytes are used (seal_check()).  The format is
 * fs-verity's idea: SHA-256 of 4 KiB blocks, hashes of 128 hashes above
 * them up to one block, and the root hash over a small descriptor (the
 * format, the data's size and the top hash); see docs/design.md,
 * "Checked bytes", for the layout.  A root hash learnt from elsewhere (a
 * site's config) pins the seal: a seal whose root differs is refused.
 *
 * This module knows nothing of SquashFS, of FUSE or of where the bytes
 * come from: the daemon (through lib/image) checks the reads of a mount,
 * and the root side can check a chunk of a copy it holds with the same
 * call.  Hashing is OpenSSL's libcrypto (EVP, SHA-256).
 */
#ifndef SQC_SEAL_SEAL_H
#define SQC_SEAL_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEAL_HASH_SIZE 32 /* bytes of a SHA-256 hash */
#define SEAL_HEX_SIZE (2 * SEAL_HASH_SIZE + 1) /* a hash in hex, and NUL */
#define SEAL_BLOCK_SHIFT 12
#define SEAL_BLOCK_SIZE (1u << SEAL_BLOCK_SHIFT) /* bytes a leaf covers */
#define SEAL_SUFFIX ".sqcseal" /* the seal of IMAGE is IMAGE.sqcseal */
/* The largest range a seal may cover: 1 PiB (a tree of 8 GiB). */
#define SEAL_DATA_MAX (1ull << 50)

struct seal; /* opaque; read-only once open, shared by all threads */

/* What a seal holds and what it has checked (seal_get_stats()). */
struct seal_stats {
	uint64_t data_size; /* bytes of the range the seal covers */
	uint64_t tree_bytes; /* bytes of its hash tree, held in RAM */
	uint64_t blocks_ok; /* blocks checked that matched */
	uint64_t blocks_bad; /* blocks checked that did not */
	uint64_t bytes_hashed; /* bytes of data hashed to check them */
};

/**
 * seal_write() - Make the seal of a byte range of a file.
 * @fd: the file, read with pread()
 * @off: where the range starts in it
 * @size: its bytes, 1..SEAL_DATA_MAX
 * @out: an empty file, written with pwrite() (its size is set)
 * @root: set to the root hash
 *
 * Reads the range once, in order, and writes the seal as it goes: it
 * holds one block per level of the tree, whatever the size.
 *
 * Return: 0; -EINVAL for a size out of range; -EIO if the file ends
 * before the range does; -errno of a read or write; -ENOMEM.
 * Context: any thread.
 */
int seal_write(int fd, uint64_t off, uint64_t size, int out,
	       uint8_t root[SEAL_HASH_SIZE]);

/**
 * seal_open() - Read a seal and check its tree.
 * @fd: the seal file
 * @name: what to call it in messages ("'%s'")
 * @size: the bytes the range it seals must have, or 0 for any
 * @root: the root hash it must have (SEAL_HASH_SIZE bytes), or NULL for
 *        any
 * @out: set to the seal
 *
 * Every field is checked before it is used (an untrusted file, like the
 * image): its magic, version, hash and block size, a size within
 * SEAL_DATA_MAX, the file's length (exactly the header and the tree its
 * size needs), zeros wherever the format has padding, and the tree from
 * the top down, each block against its hash one level up.  What is wrong
 * is logged (LOG_ERR).
 *
 * Return: 0; -EBADMSG if the file is not a sound seal (truncated, too
 * long, damaged); -ESTALE if it seals a range of another size than
 * @size; -EKEYREJECTED if its root hash is not @root; -ENOMEM; -errno
 * of fstat() or pread().
 * Ownership: the caller frees *@out with seal_free(); @fd is not kept.
 * Context: any thread.
 */
int seal_open(int fd, const char *name, uint64_t size, const uint8_t *root,
	      struct seal **out);

/**
 * seal_peek() - The root hash of a seal, from its head alone.
 * @fd: the seal file
 * @name: what to call it in messages
 * @size: the bytes the range it seals must have, or 0 for any
 * @root: set to its root hash
 *
 * Its head is checked as seal_open() checks it (the fields, the file's
 * length for them); its tree is neither read nor checked: a seal whose
 * root is what one wants may still be damaged (seal_open() says).  What
 * a root process reads first, to know before reading a large tree
 * whether a seal is the one its config names.
 *
 * Return: 0; as seal_open() otherwise (no -EKEYREJECTED).
 * Context: any thread.
 */
int seal_peek(int fd, const char *name, uint64_t size,
	      uint8_t root[SEAL_HASH_SIZE]);

/**
 * seal_free() - Free a seal.
 * @s: seal, may be NULL
 *
 * Context: no other thread may use @s any more.
 */
void seal_free(struct seal *s);

/**
 * seal_check() - Check bytes of the sealed range against the seal.
 * @s: seal
 * @off: where they are in the range: a multiple of SEAL_BLOCK_SIZE
 * @buf: the bytes
 * @len: how many: whole blocks, the last one short only where the range
 *       ends
 * @bad: set to the index of the first block that does not match (its
 *       offset is @bad * SEAL_BLOCK_SIZE), or NULL
 *
 * Every block is hashed and counted (blocks_ok, blocks_bad,
 * bytes_hashed), those after a bad one too.
 *
 * Return: 0 if every block matches; -EBADMSG if one does not; -EINVAL if
 * @off or @len is not as above or the bytes leave the range.
 * Context: any thread, any number at once.
 */
int seal_check(struct seal *s, uint64_t off, const void *buf, size_t len,
	       uint64_t *bad);

/**
 * seal_check_fd() - Check a whole sealed range as it is in a file.
 * @s: seal
 * @fd: the file, read with pread()
 * @off: where the range starts in it
 * @bad: set to the first block that does not match, or NULL
 * @nbad: set to how many do not, or NULL
 *
 * Return: 0 if every block matches; -EBADMSG if one does not; -EIO if
 * the file ends before the range does; -errno of a read; -ENOMEM.
 * Context: any thread.
 */
int seal_check_fd(struct seal *s, int fd, uint64_t off, uint64_t *bad,
		  uint64_t *nbad);

/**
 * seal_file_size() - The bytes of the seal of a range.
 * @size: bytes of the range, 1..SEAL_DATA_MAX
 *
 * The head and the tree.  It grows with @size: a seal file larger than
 * seal_file_size(N) seals more than N bytes.
 * Return: the size, or 0 for a @size out of range.
 * Context: any thread; cannot fail.
 */
uint64_t seal_file_size(uint64_t size);

/**
 * seal_data_size() - The bytes of the range a seal covers.
 * @s: seal
 *
 * Return: the size.  Context: any thread; cannot fail.
 */
uint64_t seal_data_size(const struct seal *s);

/**
 * seal_root() - The root hash of a seal.
 * @s: seal
 *
 * Return: SEAL_HASH_SIZE bytes, valid until seal_free().
 * Context: any thread; cannot fail.
 */
const uint8_t *seal_root(const struct seal *s);

/**
 * seal_get_stats() - Snapshot what a seal holds and has checked.
 * @s: seal
 * @out: filled in
 *
 * Context: any thread; cannot fail.
 */
void seal_get_stats(struct seal *s, struct seal_stats *out);

/**
 * seal_hex() - Write a hash in lowercase hex.
 * @hash: SEAL_HASH_SIZE bytes
 * @out: SEAL_HEX_SIZE bytes, NUL-terminated
 *
 * Return: @out.  Context: any thread; cannot fail.
 */
char *seal_hex(const uint8_t *hash, char out[SEAL_HEX_SIZE]);

/**
 * seal_parse_hex() - Read a hash written in hex.
 * @text: exactly 2 * SEAL_HASH_SIZE hex digits, either case
 * @out: set to the hash
 *
 * Return: 0; -EINVAL for anything else (@out unchanged).
 * Context: any thread.
 */
int seal_parse_hex(const char *text, uint8_t out[SEAL_HASH_SIZE]);

#endif /* SQC_SEAL_SEAL_H */

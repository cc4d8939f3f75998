/* SPDX-License-Identifier: MIT */
/*
 * This file declares what the files of lib/image share with each other and
 * nobody else: struct img, the bounded reader, the metadata reader and the
 * corruption reporting macro.
 *
 * Who calls whom.  report.c (corruption, log once) calls nothing of the
 * module; source.c (the file) calls report.c; read.c (the bounded reader)
 * calls source.c and lib/stage; meta.c calls read.c; inode.c, dir.c,
 * xattr.c and file.c call meta.c and read.c; super.c opens it all and
 * verify.c walks it.  No file below calls one above it.
 *
 * Regions.  Every metadata read names the region its blocks must lie in
 * (the inode table, the directory table, one table's blocks), so a
 * reference that points into the wrong table is caught the moment it is
 * followed, as the kernel does with its "next_table" checks.
 */
#ifndef SQC_IMAGE_IMAGE_I_H
#define SQC_IMAGE_IMAGE_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cache/cache.h"
#include "decompress/decompress.h"
#include "image/image.h"
#include "image/sqfs_fmt.h"
#include "stage/stage.h"
#include "util/compiler.h"
#include "util/err.h"

/* Files with more blocks than this get a block map in the bmap cache. */
#define IMG_BMAP_STRIDE 64u

/* Where a run of metadata blocks may lie: [start, end) in the image. */
struct img_region {
	uint64_t start; /* first byte of the region's first block */
	uint64_t end; /* no block may extend past this */
};

/* One table of fixed-size entries stored in metadata blocks, with an index
 * of block positions (id, fragment, export and xattr id tables). */
struct img_table {
	uint64_t *blocks; /* positions of its metadata blocks */
	uint32_t nblocks; /* number of blocks */
	uint64_t count; /* number of entries */
	uint32_t entry_size; /* bytes per entry */
	uint64_t index_start; /* where the index array begins */
};

struct img {
	char *path; /* as given to img_open() */
	int fd; /* the image file, read-only */
	/* The same file opened again with O_DIRECT, for the stage's reads
	 * (source.c), or -1 and why in dio_err (an errno, 0 if not tried);
	 * dio_refused: a read was refused, so they go through fd from now
	 * on. */
	int dio_fd;
	int dio_err;
	atomic_bool dio_refused;
	uint64_t file_size; /* at open, bytes from offset to the end */
	uint64_t offset; /* where the image starts in the file, bytes */
	struct timespec mtime; /* at open, to notice changes */
	/* At open, or at the last change of links: a ctime change without
	 * one is a write (with mtime set back), a chmod or a touch.  Used by
	 * img_check_changed() only (the stager's watch, one thread). */
	struct timespec ctime;
	nlink_t nlink;
	atomic_bool changed; /* the file changed under us */
	bool in_ram; /* the file lives on tmpfs/ramfs */

	struct img_super sb; /* decoded superblock */
	const struct dec_codec *codec; /* the image's compressor */
	uint64_t data_start; /* first byte after super + options */
	uint64_t dir_end; /* end of the directory table */
	uint64_t inode_count_max; /* bound derived from the table sizes */

	uint32_t *ids; /* the whole id table, decoded */
	struct img_table frags; /* fragment table */
	struct img_table exports; /* export table (count 0 if none) */
	struct img_table xattr_ids; /* xattr id table (count 0 if none) */
	struct img_region xattr_kv; /* key/value blocks */

	struct cache *meta; /* decoded metadata blocks, key = position */
	struct cache *data; /* data/fragment blocks, key = position */
	struct cache *bmap; /* block maps, key = inode reference */

	struct stage *stage; /* the staged copy of the image */
	/*
	 * The image's seal (sealed.c), or NULL: every byte read is checked
	 * against it.  Per 4 KiB block, a bit set once the staged copy's
	 * bytes of that block passed (checked), and one once its mismatch
	 * was logged (bad_logged); both NULL without a seal.
	 */
	struct seal *seal;
	char *seal_path; /* where it was read from */
	_Atomic uint64_t *checked;
	_Atomic uint64_t *bad_logged;
	_Atomic uint64_t seal_bad_reads; /* reads failed for a mismatch */
	_Atomic uint64_t seal_bad_staged; /* staged blocks read again */
	/* The staged copy is a follower's of a writer that checked every
	 * chunk against this very seal (its root hash): staged bytes are
	 * not checked again. */
	bool seal_trusted;
	struct img_window window; /* bytes held in RAM by another module
				     (img_set_window()); .get NULL if none */

	/* Counters; relaxed atomics. */
	_Atomic uint64_t src_reads;
	_Atomic uint64_t src_bytes;
	_Atomic uint64_t src_by[IMG_READ__COUNT]; /* src_bytes per reader */
	_Atomic uint64_t src_errors;
	_Atomic uint64_t src_direct; /* of src_bytes, read with O_DIRECT */
	_Atomic uint64_t decompressions;
	_Atomic uint64_t decompressed_bytes;
	_Atomic uint64_t corrupt;

	/* Places in the code that have already logged; see IMG_CORRUPT. */
	_Atomic uint64_t logged[64];
};

/**
 * IMG_CORRUPT() - Report corruption and produce -EFSCORRUPTED.
 * @img: the image
 * @...: printf format and arguments describing what is wrong
 *
 * The message is logged once per image and place in the code (module,
 * function and line); later hits are only counted.
 */
#define IMG_CORRUPT(img, ...) \
	img__corrupt((img), __FILE__, __func__, __LINE__, __VA_ARGS__)

int img__corrupt(struct img *img, const char *file, const char *func, int line,
		 const char *fmt, ...) __printf(5, 6);

/**
 * img__log_once() - Log an error once per image and place.
 * @img: image
 * @file: __FILE__
 * @line: __LINE__
 *
 * Return: true if the caller should log now.  Context: any thread.
 */
bool img__log_once(struct img *img, const char *file, int line);

/* read.c: the one bounded reader. */

/**
 * img__src() - Get @len image bytes at @off, from RAM or the file.
 * @img: image
 * @rc: on whose behalf, or NULL for a reader of the mount
 * @off: byte offset
 * @len: byte count, at most @cap
 * @scratch: buffer of @cap bytes used when the bytes are not staged
 * @cap: its capacity
 * @out: set to the bytes (in staged memory or @scratch)
 *
 * Return: 0; -EFSCORRUPTED if the range leaves bytes_used or exceeds @cap;
 * -EIO if the file cannot be read; -EAGAIN if @rc may not read the file
 * and the bytes are not staged.  Context: any thread.
 */
int img__src(struct img *img, const struct img_read_ctx *rc, uint64_t off,
	     size_t len, void *scratch, size_t cap, const void **out);

/**
 * img__read() - Copy @len image bytes at @off into @dst.
 * @img: image
 * @rc: on whose behalf, or NULL for a reader of the mount
 * @off: byte offset
 * @dst: destination of @len bytes
 * @len: byte count
 *
 * Return: as img__src().  Context: any thread.
 */
int img__read(struct img *img, const struct img_read_ctx *rc, uint64_t off,
	      void *dst, size_t len);

/**
 * img__unpack() - The bytes of a block, as stored or decompressed.
 * @img: image
 * @rc: on whose behalf, or NULL for a reader of the mount
 * @pos: byte offset of what is stored
 * @stored: bytes stored there
 * @compressed: they are compressed (else they are the block)
 * @out: where the block goes
 * @cap: bytes at @out
 * @got: set to the block's length
 *
 * The two errors of the bytes themselves are not said, so that the
 * caller names the block in its IMG_CORRUPT().
 *
 * Return: 0; -EFBIG if stored uncompressed and larger than @cap;
 * -EBADMSG if they do not decompress into @cap bytes; -ENOMEM; others as
 * img__src().  Context: any thread.
 */
int img__unpack(struct img *img, const struct img_read_ctx *rc, uint64_t pos,
		size_t stored, bool compressed, void *out, size_t cap,
		size_t *got);

/**
 * img__staged_ptr() - Point at staged bytes without copying.
 * @img: image
 * @rc: on whose behalf, or NULL for a reader of the mount
 * @off: byte offset
 * @len: byte count
 *
 * Bytes planned for staging and not read yet are staged now, unless @rc
 * may not read the file (img__may_read_file()).
 *
 * Return: pointer if every byte of the range is staged, else NULL.
 * Context: any thread.
 */
const void *img__staged_ptr(struct img *img, const struct img_read_ctx *rc,
			    uint64_t off, size_t len);

/* False for warming (IMG_READ_WARM), unless the image file is in RAM
 * itself: it reads only the staged copy. */
bool img__may_read_file(const struct img *img, const struct img_read_ctx *rc);

/* source.c: the image file. */

/* read.c: the window (struct img_window), if one is set. */

/* Copy [@off, @off + @len) from the window.  Return: 0; -ENODATA. */
int img__window_get(struct img *img, uint64_t off, size_t len, void *dst);

/* Does the window hold [@off, @off + @len)? */
bool img__window_has(struct img *img, uint64_t off, size_t len);

/* A read took @amount bytes' worth of [@off, @off + @len) from a cache. */
void img__window_used(struct img *img, uint64_t off, size_t len,
		      uint64_t amount);

/**
 * img__pread() - Read image bytes from the file itself, counted.
 * @img: image
 * @off: byte offset in the image (not the file)
 * @dst: destination of @len bytes
 * @len: byte count; the caller checked the range against bytes_used
 * @src: on whose behalf (enum img_read_source), for the counts
 *
 * Return: 0; -EIO if the file changed, failed or ended early (logged
 * once).  Context: any thread.
 */
int img__pread(struct img *img, uint64_t off, void *dst, size_t len,
	       enum img_read_source src);

struct iovec;
/* img__pread() into @n buffers, in one read: @iov is used up. */
int img__preadv(struct img *img, uint64_t off, struct iovec *iov, int n,
		enum img_read_source src);

/* sealed.c: checking what is read against the image's seal. */

/**
 * img__seal_open() - Read the seal img_opts names, if any.
 * @img: image with its file open, superblock not read yet
 * @o: @o->seal, @o->seal_optional, @o->seal_root
 *
 * Return: 0 (img->seal NULL if there is none); -ENOENT; -EBADMSG,
 * -ESTALE, -EKEYREJECTED as seal_open(); -errno (each logged).
 * Context: img_open().
 */
int img__seal_open(struct img *img, const struct img_opts *o);

/* The superblock is decoded: the seal must be of bytes_used bytes.
 * Return: 0; -ESTALE (logged). */
int img__seal_match(struct img *img);

void img__seal_close(struct img *img);

/**
 * img__sealed_pread() - img__pread() whose bytes are checked.
 * @img: image with a seal
 * @off: byte offset in the image
 * @dst: destination of @len bytes
 * @len: byte count; the range within the sealed bytes
 * @src: on whose behalf
 *
 * The 4 KiB blocks the range touches are read whole, in one read (the
 * bytes around the range into buffers of this call), and checked.
 *
 * Return: 0; -EFSCORRUPTED if a block does not match its seal (logged
 * once per block); as img__pread().  Context: any thread.
 */
int img__sealed_pread(struct img *img, uint64_t off, void *dst, size_t len,
		      enum img_read_source src);

/* Check the blocks of staged bytes @p of [@off, @off + @len) not checked
 * yet.  Return: 0; -EFSCORRUPTED (logged once per block). */
int img__seal_staged(struct img *img, uint64_t off, size_t len, const void *p);

/* struct stage_src.check: a chunk read into the staged copy. */
int img__seal_chunk(void *arg, uint64_t off, const void *bytes, size_t len);

/**
 * img__stage_open() - Create the staged copy of an opened image.
 * @img: image with its superblock decoded
 * @o: the mode and budget (AUTO resolved here), and whether the stage
 *     may read with O_DIRECT (@o->stage_cached)
 *
 * Return: 0; -ENOMEM.  Context: img_open().
 */
int img__stage_open(struct img *img, const struct img_opts *o);

/* buffers.c: per-thread buffers. */

/**
 * img__scratch() - This thread's buffer for compressed bytes.
 *
 * Return: a buffer of IMG_SCRATCH_SIZE bytes, or NULL (ENOMEM).
 * Context: the calling thread; freed when it exits.
 */
void *img__scratch(void);
#define IMG_SCRATCH_SIZE (SQFS_BLOCK_MAX + 64)

/**
 * img__reply_buf() - The buffer raw bytes read for a reply go to.
 * @rc: the caller's context, or NULL
 *
 * Return: @rc->reply_buf if given, else this thread's own buffer of
 * IMG_REPLY_BYTES bytes; NULL (ENOMEM).
 * Context: the calling thread; its own buffer is freed when it exits.
 */
void *img__reply_buf(const struct img_read_ctx *rc);

/* meta.c: metadata blocks. */

/**
 * img__meta_read() - Read metadata bytes at a position and advance it.
 * @img: image
 * @rc: on whose behalf, or NULL for a reader of the mount
 * @rg: region the blocks must lie in
 * @block: position of the current metadata block; updated
 * @off: offset in its decoded bytes; updated
 * @dst: destination, or NULL to skip the bytes
 * @len: bytes to read
 *
 * Return: 0; -EFSCORRUPTED; -EIO; -ENOMEM.  Context: any thread.
 */
int img__meta_read(struct img *img, const struct img_read_ctx *rc,
		   const struct img_region *rg, uint64_t *block, uint32_t *off,
		   void *dst, size_t len);

/**
 * img__meta_buf_read() - img__meta_read() through a block copy.
 * @img: image
 * @rc: on whose behalf, or NULL for a reader of the mount
 * @rg: region the blocks must lie in
 * @mb: the copy; refilled when the position leaves its block
 * @block: position of the current metadata block; updated
 * @off: offset in its decoded bytes; updated
 * @dst: destination, or NULL to skip the bytes
 * @len: bytes to read
 *
 * Return: as img__meta_read().  Context: the thread that owns @mb.
 */
int img__meta_buf_read(struct img *img, const struct img_read_ctx *rc,
		       const struct img_region *rg, struct img_meta_buf *mb,
		       uint64_t *block, uint32_t *off, void *dst, size_t len);

/**
 * img__table_get() - Read entry @idx of a table into @dst.
 * @img: image
 * @rc: on whose behalf, or NULL for a reader of the mount
 * @t: the table
 * @idx: entry index, checked against t->count
 * @dst: destination of t->entry_size bytes
 *
 * Return: 0; -EFSCORRUPTED if @idx is out of range or a block is bad;
 * -EIO.  Context: any thread.
 */
int img__table_get(struct img *img, const struct img_read_ctx *rc,
		   const struct img_table *t, uint64_t idx, void *dst);

/**
 * img__table_load() - Read and check a table's index at open.
 * @img: image
 * @t: table to fill; count and entry_size already set
 * @start: byte offset of the index
 * @next: the index and all blocks must end at or before this
 * @what: table name for messages
 *
 * Return: 0; -EFSCORRUPTED; -EIO; -ENOMEM.
 */
int img__table_load(struct img *img, struct img_table *t, uint64_t start,
		    uint64_t next, const char *what);
void img__table_release(struct img_table *t);

/* Regions of the image, from the superblock. */
static inline struct img_region img__inode_region(const struct img *img)
{
	return (struct img_region){ img->sb.inode_table, img->sb.dir_table };
}

static inline struct img_region img__dir_region(const struct img *img)
{
	return (struct img_region){ img->sb.dir_table, img->dir_end };
}

/* dir.c */

/**
 * img__dir_check_index() - Check a directory's index against its listing.
 * @img: image
 * @dir: directory inode
 *
 * Each index entry must point at a header of the listing, in order, where
 * a lookup would jump, and carry that header's first name; otherwise
 * lookups and resumed listings would go astray on an image whose listing
 * alone looks sound.  Used by img_check().
 *
 * Return: 0; -EFSCORRUPTED; -EIO; -ENOMEM.  Context: any thread.
 */
int img__dir_check_index(struct img *img, const struct img_inode *dir);

/* xattr.c */
int img__xattr_open(struct img *img);

/**
 * img__xattr_check() - Read every key and value of an inode's xattrs once.
 * @img: image
 * @ino: inode
 * @buf: scratch for the values, @cap bytes (values up to 64 KiB)
 * @cap: its capacity
 * @values: set to the number of values read
 *
 * One pass, where a lookup of each listed name would cost a pass each.
 * Used by img_check().
 *
 * Return: 0; -EFSCORRUPTED; -EIO.  Context: any thread.
 */
int img__xattr_check(struct img *img, const struct img_inode *ino, void *buf,
		     size_t cap, uint64_t *values);

#endif /* SQC_IMAGE_IMAGE_I_H */

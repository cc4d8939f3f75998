/* SPDX-License-Identifier: MIT */
/*
 * This file declares libsquashcache's SquashFS 4.0 reader.
 *
 * An image is opened once and then shared by any number of threads: every
 * call below is safe to make concurrently.  Decoded metadata blocks, data
 * and fragment blocks and the block maps of large files are kept in caches
 * with byte budgets (cache.h).  The compressed image itself can be staged
 * into RAM (img_stage(), stage.h), so that once staged no read touches the
 * storage the image sits on.  What a read may do and where its raw bytes
 * go are the caller's arguments (struct img_read_ctx), never state of the
 * calling thread.
 *
 * Validation happens at three depths: img_open() checks the superblock and
 * every table's placement and length; each inode, directory block, fragment
 * entry and xattr is checked when decoded; img_check() walks everything.
 * Corruption is reported as -EFSCORRUPTED and logged once per image and
 * place in the code.  Names from the image are never trusted: entries
 * named "", ".", ".." or containing '/' or NUL are corruption.
 */
#ifndef SQC_IMAGE_IMAGE_H
#define SQC_IMAGE_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "stage/stage.h"

#define IMG_NAME_MAX 256 /* longest entry name, bytes */
#define IMG_SYMLINK_MAX 4095 /* longest symlink target accepted, bytes */
#define IMG_NO_XATTR 0xffffffffu /* img_inode.xattr when there is none */
#define IMG_NO_FRAGMENT 0xffffffffu /* img_file.frag when there is none */

struct img; /* opaque, shared by all threads */
struct seal; /* lib/seal */

/* The metadata cache a sized budget never goes below, bytes. */
#define IMG_META_MIN (64ull << 20)
/* Decoded bytes a stored byte of metadata is taken to give, at most. */
#define IMG_META_RATIO 6

struct img_opts {
	/* bytes for decoded metadata blocks and maps; 0: sized from the
	 * image's tables, up to @meta_max (img_meta_budget()) */
	uint64_t meta_cache;
	uint64_t meta_max; /* the most a sized metadata cache gets */
	uint64_t data_cache; /* bytes for decompressed data/fragment blocks */
	uint64_t ram; /* bytes of the compressed image to stage in RAM */
	enum stage_mode stage; /* what to stage */
	/* Stage through the page cache: no second open of the file with
	 * O_DIRECT for the stage's reads (source.c says why it is the
	 * default). */
	bool stage_cached;
	uint64_t offset; /* bytes before the image in the file (SIF, ...) */
	/*
	 * Where to stage, or NULL for anonymous memory: called once by
	 * img_open(), before anything is staged, with the image file's
	 * descriptor, the image's offset in it and the bytes to stage; it
	 * fills @out (stage.h: struct stage_backing) or sets out->fd to -1.
	 * The caller keeps out->fd and out->key until img_open() returns.
	 */
	void (*backing)(void *arg, int fd, uint64_t offset, uint64_t size,
			struct stage_backing *out);
	void *backing_arg; /* passed to it */
	/*
	 * The image's seal (lib/seal, `mountctl seal`), or NULL: every byte
	 * read from the image is then checked against it before it is used
	 * or staged; a block that does not match fails its read
	 * (-EFSCORRUPTED, logged once per block) and is never staged.
	 */
	const char *seal;
	bool seal_optional; /* a missing @seal file means no seal */
	const uint8_t *seal_root; /* the root hash @seal must have
				     (SEAL_HASH_SIZE bytes), or NULL */
};

/* The decoded, validated superblock. */
struct img_super {
	uint32_t inode_count; /* number of inodes */
	uint32_t mkfs_time; /* seconds since the epoch */
	uint32_t block_size; /* data block size, bytes, 4 KiB .. 1 MiB */
	uint32_t frag_count; /* entries in the fragment table */
	uint16_t compression; /* enum dec_id */
	uint16_t block_log; /* log2(block_size) */
	uint16_t flags; /* SQFS_FLAG_* */
	uint16_t id_count; /* entries in the uid/gid table */
	uint64_t root_ref; /* inode reference of the root directory */
	uint64_t bytes_used; /* bytes of the image that are the filesystem */
	uint64_t id_table; /* byte offset of the id table's index */
	uint64_t xattr_table; /* of the xattr id table header, or ~0 */
	uint64_t inode_table; /* of the inode table's first block */
	uint64_t dir_table; /* of the directory table's first block */
	uint64_t frag_table; /* of the fragment table's index */
	uint64_t export_table; /* of the export table's index, or ~0 */
};

enum img_type {
	IMG_DIR = 1,
	IMG_REG = 2,
	IMG_SYMLINK = 3,
	IMG_BLKDEV = 4,
	IMG_CHRDEV = 5,
	IMG_FIFO = 6,
	IMG_SOCKET = 7,
};

/* A regular file's data layout. */
struct img_file {
	uint64_t blocks_start; /* byte offset of the first data block */
	uint64_t sparse; /* bytes of sparse blocks (extended inodes only) */
	uint32_t nblocks; /* full data blocks (plus a partial last one
			     when there is no fragment) */
	uint32_t frag; /* fragment index, or IMG_NO_FRAGMENT */
	uint32_t frag_off; /* offset of the tail in the fragment block */
	uint64_t list_block; /* metadata block holding the block size list */
	uint32_t list_off; /* offset of the list in that block's bytes */
};

/* A directory's listing. */
struct img_dirinfo {
	uint64_t block; /* metadata block where the listing starts */
	uint32_t off; /* offset in that block's bytes */
	uint32_t listing; /* listing length in bytes */
	uint32_t parent; /* inode number of the parent directory */
	uint32_t idx_count; /* entries in the directory index */
	uint64_t idx_block; /* metadata block of the index */
	uint32_t idx_off; /* offset of the index in that block */
};

/* One decoded, validated inode. */
struct img_inode {
	uint64_t ref; /* inode reference: block << 16 | offset */
	uint32_t ino; /* inode number, 1 .. inode_count */
	uint32_t mode; /* st_mode: S_IF* type bits | permission bits */
	uint32_t uid; /* owner, from the id table */
	uint32_t gid; /* group, from the id table */
	uint32_t mtime; /* seconds since the epoch */
	uint32_t nlink; /* link count */
	uint32_t xattr; /* xattr id, or IMG_NO_XATTR */
	uint8_t type; /* enum img_type */
	bool extended; /* stored as an extended inode */
	uint64_t size; /* st_size: file bytes, listing bytes + 3 for a
			  directory (as the kernel shows it), target
			  length for a symlink, 0 otherwise */
	union {
		struct img_file file; /* IMG_REG */
		struct img_dirinfo dir; /* IMG_DIR */
		struct { /* IMG_SYMLINK */
			uint64_t block; /* metadata block of the target */
			uint32_t off; /* offset in that block */
		} symlink;
		uint32_t rdev; /* IMG_BLKDEV, IMG_CHRDEV: raw device */
	};
};

/* One directory entry. */
struct img_dirent {
	uint64_t ref; /* inode reference of the entry */
	uint32_t ino; /* its inode number */
	uint8_t type; /* enum img_type, as the entry states it */
	uint16_t name_len; /* 1 .. IMG_NAME_MAX */
	char name[IMG_NAME_MAX + 1]; /* NUL-terminated */
	uint64_t next; /* cookie that resumes after this entry */
};

/* A copy of one decoded metadata block, so that a run of small reads
 * from it (directory entries) costs one cache lookup, not one each.
 * Fields private to lib/image. */
struct img_meta_buf {
	uint64_t held; /* position of the block copied, or UINT64_MAX */
	uint64_t next; /* position of the block after it */
	uint32_t len; /* its decoded length */
	uint8_t data[8192]; /* its decoded bytes (SquashFS metadata blocks
			       decode to at most 8 KiB) */
};

/* Directory iterator; caller's storage, fields private to lib/image. */
struct img_dir_iter {
	struct img *img;
	uint64_t block; /* metadata block of the next byte */
	uint32_t off; /* offset in it */
	uint32_t pos; /* listing bytes consumed */
	uint32_t listing; /* listing length */
	uint32_t hdr_left; /* entries left under the current header */
	uint32_t hdr_start; /* current header: inode table block */
	uint32_t hdr_ino; /* current header: base inode number */
	uint32_t skip_to; /* entries before this listing offset are skipped */
	struct img_meta_buf mb; /* the listing block being read */
};

/* One piece of a file read: bytes to send, and what keeps them alive. */
struct img_span {
	const void *data; /* the bytes; NULL for a file range (below) */
	size_t len; /* their count */
	struct cache_entry *pin; /* released by img_spans_put(), or NULL */
	int fd; /* img_file_map() only: the image file, when data is NULL */
	uint64_t fd_off; /* and the bytes' offset in it */
};

/* On whose behalf the image file is read (struct img_read_ctx). */
enum img_read_source {
	IMG_READ_DEMAND, /* a reader of the mount (the default) */
	IMG_READ_STAGER, /* the stager */
	IMG_READ_READAHEAD, /* a readahead worker */
	/* Warming: only bytes staged or planned for staging (or an image
	 * file on tmpfs), never a read of the storage besides (-EAGAIN), so
	 * that it cannot read what a reader reads at once a second time. */
	IMG_READ_WARM,
	IMG_READ_ORDER, /* a window's read-ahead (img_window_read()) */
	IMG_READ__COUNT
};

/*
 * What a read may do and where its raw bytes go: the caller's, passed to
 * each read.  NULL stands for { IMG_READ_DEMAND, NULL }.
 */
struct img_read_ctx {
	enum img_read_source src; /* on whose behalf: counted, and
				     IMG_READ_WARM reads only RAM */
	void *reply_buf; /* IMG_REPLY_BYTES bytes that raw bytes not
			    staged are read into by img_file_spans(), or
			    NULL for a buffer of the calling thread's own */
};

struct img_stats {
	struct cache_stats meta; /* decoded metadata blocks */
	struct cache_stats data; /* decompressed data and fragment blocks */
	struct cache_stats bmap; /* block maps of large files */
	uint64_t image_bytes; /* bytes_used */
	bool in_ram; /* the image file itself is on tmpfs/ramfs */
	uint64_t src_reads; /* pread calls on the image file */
	uint64_t src_bytes; /* bytes they returned */
	uint64_t src_by[IMG_READ__COUNT]; /* of those, per reader */
	uint64_t src_errors; /* failed or short reads */
	uint64_t src_direct; /* of src_bytes, read with O_DIRECT (staging) */
	bool direct; /* the stage reads with O_DIRECT (not refused) */
	/* Why not, if it was tried: a read was refused (EINVAL), or the
	 * errno of the O_DIRECT open (ESTALE: it opened another file). */
	bool direct_refused;
	int direct_err;
	uint64_t decompressions; /* blocks decompressed (data + meta) */
	uint64_t decompressed_bytes; /* bytes they produced */
	uint64_t corrupt; /* corruption events (each logged once) */
	/* With a seal (img_seal()): reads that failed because a block did
	 * not match it, and blocks of the staged copy found wrong and read
	 * from the file instead. */
	uint64_t seal_bad_reads;
	uint64_t seal_bad_staged;
};

/**
 * img_opts_default() - Fill @o with default budgets.
 * @o: options to fill
 *
 * Defaults: a metadata cache sized from the image (img_meta_budget(), up
 * to a sixteenth of the memory this process may use), 256 MiB data cache,
 * staging AUTO with a RAM budget of memlimit_budget(): half of the memory
 * this process may use, which is the lower of the machine's RAM and its
 * cgroups' memory limits.
 * Context: any thread; cannot fail.
 */
void img_opts_default(struct img_opts *o);

/**
 * img_meta_budget() - The metadata cache an image gets when none is given.
 * @sb: the image's superblock (its table offsets need not be validated yet)
 * @max: the most it may get; below IMG_META_MIN, IMG_META_MIN is the most
 *
 * Enough to hold the inode and directory tables decoded whole, so that a
 * pass over every file decodes each metadata block once: a random-order
 * pass over 1.28M files evicts 0.4 blocks a file from 64 MiB.  Their
 * decoded size is not known before they are read (a block's header tells
 * only its stored length), so it is taken as IMG_META_RATIO times their
 * stored bytes, which covers mksquashfs's tables with room (lz4 stores them
 * at 2.7 to 1, zstd at 3.8 to 1); the block maps of large files get a
 * quarter of the whole.  A budget is a ceiling: the cache holds only what
 * is read.
 *
 * Return: bytes, between IMG_META_MIN and MAX(@max, IMG_META_MIN).
 * Context: any thread; cannot fail.
 */
uint64_t img_meta_budget(const struct img_super *sb, uint64_t max);

/**
 * img_open() - Open and validate an image.
 * @path: the image file
 * @opts: budgets, or NULL for img_opts_default()
 * @out: set to the image on success
 *
 * Checks the superblock, compressor and options, and the placement and
 * length of every table, and reads the id, fragment, export and xattr id
 * indexes.  The reason for a failure is logged.
 *
 * Return: 0; -ENOENT, -EACCES, ... from open(2); -EMEDIUMTYPE if the file
 * is not SquashFS 4.0; -ENOTSUP for an unsupported compressor or option;
 * -EFSCORRUPTED; -ENOMEM.
 * Ownership: the caller frees with img_close().
 * Context: any thread.
 */
int img_open(const char *path, const struct img_opts *opts, struct img **out);

/**
 * img_read_super() - Read the superblock of the image in a file, without
 * opening it as an image: all that a process copying the image's bytes
 * for others (root's keeper, for a site image) needs of it.
 * @fd: the file, read with pread()
 * @offset: where the image starts in it
 * @file_size: the file's size
 * @out: set to the superblock's fields
 *
 * Checked: the magic, version 4.0, the block size, bytes_used within the
 * file after @offset, the inode table within bytes_used.  Nothing else
 * (the tables are not read): the caller only copies bytes_used bytes.
 *
 * Return: 0; -EMEDIUMTYPE if it is not SquashFS (too short, no magic);
 * -ENOTSUP for another version; -EFSCORRUPTED; -EIO for a short read;
 * -errno of pread().  Nothing is logged.
 * Context: any thread.
 */
int img_read_super(int fd, uint64_t offset, uint64_t file_size,
		   struct img_super *out);

/**
 * img_close() - Release an image.
 * @img: image, may be NULL
 *
 * Context: no other thread may use @img any more.
 */
void img_close(struct img *img);

/**
 * img_get_super() - The decoded superblock.
 * @img: image
 *
 * Return: pointer valid until img_close().  Context: any thread.
 */
const struct img_super *img_get_super(const struct img *img);

/**
 * img_compressor() - Name of the image's compressor ("zstd").
 * @img: image
 *
 * Return: static string.  Context: any thread; cannot fail.
 */
const char *img_compressor(const struct img *img);

/**
 * img_path() - The path the image was opened with.
 * @img: image
 *
 * Return: string valid until img_close().  Context: any thread.
 */
const char *img_path(const struct img *img);

/**
 * img_type_mode() - The st_mode file type bits of an inode type.
 * @type: enum img_type (as in img_inode.type or img_dirent.type)
 *
 * Return: S_IFDIR, S_IFREG, S_IFLNK, S_IFBLK, S_IFCHR, S_IFIFO or S_IFSOCK;
 * 0 for a value outside enum img_type.
 * Context: any thread.
 */
uint32_t img_type_mode(unsigned int type);

/**
 * img_inode_get() - Decode and validate the inode at @ref.
 * @img: image
 * @ref: inode reference (from the superblock or a directory entry)
 * @out: filled in
 *
 * Return: 0; -EFSCORRUPTED; -EIO if the image could not be read; -ENOMEM.
 * Context: any thread.
 */
int img_inode_get(struct img *img, uint64_t ref, struct img_inode *out);

/**
 * img_inode_get_as() - img_inode_get() on behalf of @rc.
 * @img: image
 * @rc: on whose behalf (what the read may do), or NULL
 * @ref: inode reference
 * @out: filled in
 *
 * Return: as img_inode_get(); -EAGAIN if @rc is warming and the inode's
 * metadata is neither cached nor staged.
 * Context: any thread.
 */
int img_inode_get_as(struct img *img, const struct img_read_ctx *rc,
		     uint64_t ref, struct img_inode *out);

/**
 * img_dir_open() - Start iterating over a directory.
 * @img: image
 * @dir: a directory inode
 * @cookie: 0 for the start, or an img_dirent.next from an earlier pass
 * @it: iterator to set up
 *
 * Return: 0; -ENOTDIR; -EFSCORRUPTED; -EIO.
 * Context: any thread; @it belongs to the caller's thread.
 */
int img_dir_open(struct img *img, const struct img_inode *dir, uint64_t cookie,
		 struct img_dir_iter *it);

/**
 * img_dir_next() - Read the next entry.
 * @it: iterator from img_dir_open()
 * @out: filled in when one is returned
 *
 * Return: 1 with an entry, 0 at the end, or a negative errno
 * (-EFSCORRUPTED for a bad header, name or entry; the rest of the listing
 * is then unreadable).
 * Context: the iterator's thread.
 */
int img_dir_next(struct img_dir_iter *it, struct img_dirent *out);

/**
 * img_dir_lookup() - Find an entry by name.
 * @img: image
 * @dir: a directory inode
 * @name: the name, not necessarily NUL-terminated
 * @len: its length
 * @out: filled in when found
 *
 * Uses the directory index, so a directory of 100,000 entries costs one
 * metadata block of scanning, not the whole listing.
 *
 * Return: 0; -ENOENT; -ENAMETOOLONG; -ENOTDIR; -EFSCORRUPTED; -EIO.
 * Context: any thread.
 */
int img_dir_lookup(struct img *img, const struct img_inode *dir,
		   const char *name, size_t len, struct img_dirent *out);

/**
 * img_name_is_valid() - Whether a directory entry may have this name.
 * @name: the name, not NUL-terminated
 * @len: its length
 *
 * A name is 1 to IMG_NAME_MAX bytes without '/' or NUL, and is not '.'
 * or '..': the rule for names read from an image, and for names that
 * come from users to be looked up in one.
 *
 * Context: any thread; cannot fail.
 */
bool img_name_is_valid(const char *name, size_t len);

#define IMG_LINKS_MAX 8 /* symlinks img_resolve() follows for one path */

struct img_paths; /* directories found, for resolving many paths */

/**
 * img_paths_new() - Set up resolving paths of an image.
 * @img: image
 * @out: set to the resolver; it remembers the directories it found
 *
 * Return: 0; -ENOMEM.  Ownership: img_paths_free().  Context: any thread;
 * a resolver is one thread's at a time.
 */
int img_paths_new(struct img *img, struct img_paths **out);

/**
 * img_paths_free() - Free a resolver.
 * @ps: may be NULL
 */
void img_paths_free(struct img_paths *ps);

/**
 * img_resolve() - Find the inode at a path of the image.
 * @ps: resolver (img_paths_new())
 * @path: names separated by one '/' each, relative to the root, not
 *        necessarily NUL-terminated: from a user, so no name may be
 *        empty, '.' or '..' (refused, never resolved)
 * @len: its length
 * @out: the inode found
 *
 * A symlink as the last name is followed, up to IMG_LINKS_MAX times,
 * within the image only: a target that is absolute or climbs out of the
 * root is refused.  Symlinks before the last name are not followed.
 *
 * Return: 0; -EINVAL for a malformed path; -ENAMETOOLONG for a name of
 * over IMG_NAME_MAX bytes, a path or a symlink's resolved path of
 * PATH_MAX bytes or more; -ENOENT; -ENOTDIR if a name before the last is
 * not a directory; -EXDEV for a symlink leaving the image; -EISDIR for
 * one to the root; -ELOOP past IMG_LINKS_MAX symlinks; -EFSCORRUPTED;
 * -EIO; -ENOMEM.
 * Context: any thread.
 */
int img_resolve(struct img_paths *ps, const char *path, size_t len,
		struct img_inode *out);

/**
 * img_readlink() - Read a symlink's target.
 * @img: image
 * @ino: a symlink inode
 * @buf: where to write the target, NUL-terminated
 * @cap: capacity of @buf; at least ino->size + 1 for the whole target
 *
 * Return: 0; -EINVAL if not a symlink; -ERANGE if @cap is too small;
 * -EFSCORRUPTED; -EIO.
 * Context: any thread.
 */
int img_readlink(struct img *img, const struct img_inode *ino, char *buf,
		 size_t cap);

/**
 * img_file_spans() - Map a byte range of a regular file to cached bytes.
 * @img: image
 * @rc: on whose behalf and into which buffer, or NULL (a reader of the
 *      mount, this thread's buffer)
 * @ino: a regular file inode
 * @off: file offset
 * @len: bytes wanted; the range is clipped at end of file
 * @spans: array to fill, one span per block touched
 * @max: its capacity
 * @n: set to the number of spans filled
 *
 * Sparse blocks map to a shared zero buffer; bytes stored uncompressed
 * point into the staged image or, when not staged, into @rc->reply_buf
 * (or a buffer of the calling thread's own), laid out in the order of
 * their spans, each at or before its offset in the bytes mapped, and
 * holding only the bytes asked for.  Stops early, with
 * fewer bytes than asked, when @max spans are used.
 *
 * Return: 0 (the spans' lengths add up to the bytes mapped, possibly 0 at
 * or past end of file); -EINVAL if not a regular file; -EFSCORRUPTED;
 * -EIO; -ENOMEM; -EAGAIN for warming and bytes not in RAM.  On error no
 * span is left pinned.
 * Ownership: the caller releases the spans with img_spans_put(); they
 * stay valid until then and until the next img_file_spans() into the same
 * buffer.
 * Context: any thread.
 */
int img_file_spans(struct img *img, const struct img_read_ctx *rc,
		   const struct img_inode *ino, uint64_t off, size_t len,
		   struct img_span *spans, unsigned int max, unsigned int *n);

/**
 * img_file_map() - img_file_spans(), leaving raw bytes in the file.
 * @img: image
 * @rc: on whose behalf, or NULL (a reader of the mount)
 * @ino: a regular file inode
 * @off: file offset
 * @len: bytes wanted
 * @spans: array to fill
 * @max: its capacity
 * @n: set to the number of spans filled
 *
 * Bytes stored uncompressed that are not staged come back as ranges of the
 * image file (span.data NULL, span.fd and span.fd_off set) instead of
 * being read, so that a caller can splice them to the kernel without a
 * copy.  Everything else is as img_file_spans().
 *
 * Return: as img_file_spans().
 * Ownership: the caller releases the spans with img_spans_put().
 * Context: any thread.
 */
int img_file_map(struct img *img, const struct img_read_ctx *rc,
		 const struct img_inode *ino, uint64_t off, size_t len,
		 struct img_span *spans, unsigned int max, unsigned int *n);

/* Bytes of the buffer that img_file_spans() reads raw bytes into. */
#define IMG_REPLY_BYTES (1u << 20) /* a FUSE read is at most 1 MiB */

/**
 * img_spans_put() - Release spans from img_file_spans().
 * @img: image
 * @spans: the spans
 * @n: how many
 *
 * Context: any thread; cannot fail.
 */
void img_spans_put(struct img *img, struct img_span *spans, unsigned int n);

/**
 * img_file_read() - Copy a byte range of a regular file.
 * @img: image
 * @rc: on whose behalf, or NULL (a reader of the mount)
 * @ino: a regular file inode
 * @off: file offset
 * @buf: destination
 * @len: bytes wanted
 * @got: set to the bytes copied (short only at end of file)
 *
 * Return: 0; errors as img_file_spans().
 * Context: any thread.
 */
int img_file_read(struct img *img, const struct img_read_ctx *rc,
		  const struct img_inode *ino, uint64_t off, void *buf,
		  size_t len, size_t *got);

/**
 * img_file_prefetch() - Decompress blocks of a file into the data cache.
 * @img: image
 * @rc: on whose behalf (IMG_READ_READAHEAD for a readahead worker), or
 *      NULL
 * @ino: a regular file inode
 * @first: first block index
 * @count: number of blocks (clipped at the end; the tail's fragment
 *         counts as one block)
 *
 * Blocks already cached or being filled are skipped without waiting.
 *
 * Return: 0; or the first error met.
 * Context: any thread (prefetch workers).
 */
int img_file_prefetch(struct img *img, const struct img_read_ctx *rc,
		      const struct img_inode *ino, uint32_t first,
		      uint32_t count);

/**
 * img_xattr_list() - List an inode's xattr names ("user.a\0trusted.b\0").
 * @img: image
 * @ino: inode
 * @buf: destination, or NULL with @cap 0 to ask for the size
 * @cap: its capacity
 * @len: set to the bytes the whole list needs
 *
 * Return: 0; -ERANGE if @cap is non-zero and too small; -EFSCORRUPTED;
 * -EIO.
 * Context: any thread.
 */
int img_xattr_list(struct img *img, const struct img_inode *ino, char *buf,
		   size_t cap, size_t *len);

/**
 * img_xattr_get() - Read one xattr value.
 * @img: image
 * @ino: inode
 * @name: full name with its prefix ("user.comment")
 * @buf: destination, or NULL with @cap 0 to ask for the size
 * @cap: its capacity
 * @len: set to the value's length
 *
 * Return: 0; -ENODATA if absent; -ERANGE if @cap is non-zero and too small;
 * -EFSCORRUPTED; -EIO.
 * Context: any thread.
 */
int img_xattr_get(struct img *img, const struct img_inode *ino,
		  const char *name, void *buf, size_t cap, size_t *len);

/**
 * img_has_xattrs() - Tell whether the image stores any xattrs.
 * @img: image
 *
 * Return: true if it has an xattr table.  Context: any thread.
 */
bool img_has_xattrs(const struct img *img);

/**
 * img_ino_to_ref() - Find an inode reference by inode number.
 * @img: image
 * @ino: inode number
 * @ref: set to its reference
 *
 * Return: 0; -ENOTSUP if the image has no export table; -ENOENT if @ino is
 * out of range; -EFSCORRUPTED; -EIO.
 * Context: any thread.
 */
int img_ino_to_ref(struct img *img, uint32_t ino, uint64_t *ref);

/**
 * img_stage() - The image's staged copy (stage.h).
 * @img: image
 *
 * Created by img_open() with the plan of img_opts.stage and .ram; the
 * caller starts its threads (stage_start()), resumes it, and asks it
 * whether staging has ended.
 *
 * Return: the stage, valid until img_close().  Context: any thread.
 */
struct stage *img_stage(struct img *img);

/**
 * img_seal() - The seal the image's reads are checked against.
 * @img: image
 * @path: set to where it was read from, or NULL
 *
 * Return: the seal (lib/seal/seal.h), valid until img_close(), or NULL
 * if reads are not checked.  Context: any thread; cannot fail.
 */
struct seal *img_seal(struct img *img, const char **path);

/**
 * img_staged() - Whether the staged copy holds a range, or plans to.
 * @img: image
 * @off: offset in the image
 * @len: bytes
 *
 * Context: any thread; the answer is for now.
 */
bool img_staged(struct img *img, uint64_t off, uint64_t len);

/*
 * A window: bytes of the image that another module (the epoch order,
 * lib/order) reads ahead of readers into RAM and holds until they took
 * them.  The image asks it before reading the file, and tells it which
 * bytes readers found decoded in its data cache instead.  Each call may
 * come from any thread.
 */
struct img_window {
	/* Copy [@off, @off + @len) into @dst if the window holds it (it may
	 * read it there and then).  Return: 0; -ENODATA if not. */
	int (*get)(void *arg, uint64_t off, size_t len, void *dst);
	/* Does the window hold [@off, @off + @len)?  (A hint.) */
	bool (*in_ram)(void *arg, uint64_t off, size_t len);
	/* Readers took @amount bytes' worth of [@off, @off + @len), a block
	 * they found decoded: as good as read from the window. */
	void (*used)(void *arg, uint64_t off, size_t len, uint64_t amount);
	/* Free the window; called by img_close() before anything else. */
	void (*release)(void *arg);
	void *arg;
};

/**
 * img_set_window() - Give the image a window to read through.
 * @img: image
 * @w: the window's calls, copied; @w->get NULL for none.  The image owns
 *     @w->arg from now on: img_close() calls @w->release.
 *
 * Return: 0; -EBUSY if a window is set already.
 * Context: before any read of the image but img_open()'s.
 */
int img_set_window(struct img *img, const struct img_window *w);

/**
 * img_window_read() - A window's read of the image file.
 * @img: image
 * @off: offset in the image
 * @dst: @len bytes
 * @len: bytes, all or fail
 *
 * Counted as IMG_READ_ORDER; the page cache is told to drop the bytes
 * (the window holds them).
 *
 * Return: 0; -EFSCORRUPTED past the filesystem's end; -EIO.
 * Context: any thread.
 */
int img_window_read(struct img *img, uint64_t off, void *dst, size_t len);

/* One run of stored bytes a read of a file needs (img_file_extents()):
 * @tail: the file's tail (its fragment), not a data block.  Return: 0 or
 * a negative errno, which stops the walk. */
typedef int (*img_extent_fn)(void *arg, uint64_t off, uint32_t len, bool tail);

/**
 * img_file_extents() - The stored bytes a read of a whole file needs.
 * @img: image
 * @f: a regular file
 * @fn: called for each, in the file's order: every data block's stored
 *      bytes (sparse blocks have none), then the tail's (its own bytes of
 *      a fragment stored uncompressed, else the whole fragment block)
 * @arg: for @fn
 *
 * Return: 0; -EINVAL if not a regular file; -EFSCORRUPTED; -EIO;
 * -ENOMEM; what @fn returned.
 * Context: any thread.
 */
int img_file_extents(struct img *img, const struct img_inode *f,
		     img_extent_fn fn, void *arg);

/**
 * img_get_stats() - Snapshot the image's counters and cache stats.
 * @img: image
 * @out: filled in
 *
 * Context: any thread.
 */
void img_get_stats(struct img *img, struct img_stats *out);

/**
 * img_check_changed() - Notice whether the image file changed under us.
 * @img: image
 *
 * Compares the file's size, mtime and ctime with those seen at open (a
 * ctime change that comes with a change of the link count is a rename
 * over the image's path, not a change of its bytes).  Once a change is
 * seen, reads that would go to the file fail with -EIO (bytes already
 * staged keep being served) and the change is logged once.
 *
 * Return: true if the file changed.  Context: one thread at a time (the
 * stager's watch calls it about once a second).
 */
bool img_check_changed(struct img *img);

/* What img_check() found. */
struct img_check_report {
	uint64_t inodes; /* inodes decoded */
	uint64_t dirs; /* directories listed */
	uint64_t files; /* regular files read in full */
	uint64_t file_bytes; /* bytes read from them */
	uint64_t symlinks; /* symlinks read */
	uint64_t xattrs; /* xattr values read */
	uint64_t errors; /* problems found */
};

/**
 * img_check() - Walk and read everything in the image.
 * @img: image
 * @rep: counters, filled in
 * @max_errors: stop after this many problems (0 = no limit)
 *
 * Lists every directory from the root, rejecting loops and entries whose
 * type disagrees with their inode; decodes every inode; reads every file,
 * symlink and xattr; and compares link counts with the entries found.
 * Each problem is logged.  This is `mountctl check` and the fuzz target.
 *
 * Return: 0 if the image is sound; -EFSCORRUPTED if problems were found;
 * -EIO; -ENOMEM.
 * Context: any thread.
 */
int img_check(struct img *img, struct img_check_report *rep,
	      uint64_t max_errors);

#endif /* SQC_IMAGE_IMAGE_H */

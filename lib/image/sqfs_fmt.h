/* SPDX-License-Identifier: MIT */
/*
 * This file describes the SquashFS 4.0 on-disk format, as written by
 * mksquashfs and read by the kernel's fs/squashfs.  It is included only by
 * the files of lib/image: raw disk structures never leave the image module.
 *
 * Every integer is little-endian and unaligned; fields are struct le16/32/64
 * and can only be read with le16_dec() and friends.
 *
 * Layout of an image written by mksquashfs:
 *
 *   superblock (96 bytes)
 *   compressor options (one metadata block, if SQFS_FLAG_COMP_OPTS)
 *   data blocks and fragment blocks
 *   inode table            (metadata blocks)
 *   directory table        (metadata blocks)
 *   fragment table         (metadata blocks, then an index of u64 positions)
 *   export table           (metadata blocks, then an index)
 *   id table               (metadata blocks, then an index)
 *   xattr key/value blocks, xattr id blocks, xattr id table header + index
 *
 * A metadata block is a 16-bit header (bit 15: stored uncompressed; bits
 * 0-14: stored length) followed by at most 8 KiB of stored bytes that decode
 * to at most 8 KiB.  A "reference" to metadata is the block's offset from
 * the start of its table shifted left 16, or'ed with an offset into the
 * block's decoded bytes.
 */
#ifndef SQC_IMAGE_SQFS_FMT_H
#define SQC_IMAGE_SQFS_FMT_H

#include <stdint.h>

#include "util/endian.h"

#define SQFS_MAGIC 0x73717368u /* "hsqs" */
#define SQFS_MAGIC_SWAPPED 0x68737173u /* big-endian images (v3 and older) */
#define SQFS_VERSION_MAJOR 4
#define SQFS_VERSION_MINOR 0

#define SQFS_META_SIZE 8192u /* decoded bytes per metadata block */
#define SQFS_META_HDR 2u /* bytes of the metadata block header */
#define SQFS_META_UNCOMPRESSED 0x8000u /* header bit: stored as is */
#define SQFS_META_LEN_MASK 0x7fffu /* header bits: stored length */

#define SQFS_BLOCK_UNCOMPRESSED (1u << 24) /* block size word: stored as is */
#define SQFS_BLOCK_LEN_MASK ((1u << 24) - 1) /* block size word: length */
#define SQFS_BLOCK_MIN 4096u /* smallest data block size */
#define SQFS_BLOCK_MAX (1u << 20) /* largest data block size */

#define SQFS_INVALID_BLK UINT64_MAX /* "no such table" */
#define SQFS_INVALID_FRAG 0xffffffffu /* file has no fragment */
#define SQFS_INVALID_XATTR 0xffffffffu /* inode has no xattrs */

#define SQFS_NAME_LEN 256 /* longest directory entry name */
#define SQFS_DIR_COUNT 256 /* most entries under one directory header */

/* Superblock flags. */
#define SQFS_FLAG_UNCOMPRESSED_INODES 0x0001
#define SQFS_FLAG_UNCOMPRESSED_DATA 0x0002
#define SQFS_FLAG_CHECK 0x0004
#define SQFS_FLAG_UNCOMPRESSED_FRAGMENTS 0x0008
#define SQFS_FLAG_NO_FRAGMENTS 0x0010
#define SQFS_FLAG_ALWAYS_FRAGMENTS 0x0020
#define SQFS_FLAG_DUPLICATES 0x0040
#define SQFS_FLAG_EXPORTABLE 0x0080
#define SQFS_FLAG_UNCOMPRESSED_XATTRS 0x0100
#define SQFS_FLAG_NO_XATTRS 0x0200
#define SQFS_FLAG_COMP_OPTS 0x0400
#define SQFS_FLAG_UNCOMPRESSED_IDS 0x0800

/* Inode types; extended types are the basic ones plus 7. */
#define SQFS_DIR_TYPE 1
#define SQFS_REG_TYPE 2
#define SQFS_SYMLINK_TYPE 3
#define SQFS_BLKDEV_TYPE 4
#define SQFS_CHRDEV_TYPE 5
#define SQFS_FIFO_TYPE 6
#define SQFS_SOCKET_TYPE 7
#define SQFS_LDIR_TYPE 8
#define SQFS_LREG_TYPE 9
#define SQFS_LSYMLINK_TYPE 10
#define SQFS_LBLKDEV_TYPE 11
#define SQFS_LCHRDEV_TYPE 12
#define SQFS_LFIFO_TYPE 13
#define SQFS_LSOCKET_TYPE 14
#define SQFS_TYPE_EXT_DELTA 7

/* Entries per metadata block of each table. */
#define SQFS_IDS_PER_BLOCK (SQFS_META_SIZE / 4)
#define SQFS_FRAGS_PER_BLOCK (SQFS_META_SIZE / 16)
#define SQFS_EXPORTS_PER_BLOCK (SQFS_META_SIZE / 8)
#define SQFS_XATTR_IDS_PER_BLOCK (SQFS_META_SIZE / 16)

/* Xattr key types. */
#define SQFS_XATTR_USER 0
#define SQFS_XATTR_TRUSTED 1
#define SQFS_XATTR_SECURITY 2
#define SQFS_XATTR_PREFIX_MASK 0x00ff
#define SQFS_XATTR_VALUE_OOL 0x0100 /* value is a u64 reference */

struct sqfs_disk_super {
	struct le32 magic; /* SQFS_MAGIC */
	struct le32 inode_count; /* number of inodes */
	struct le32 mkfs_time; /* seconds since the epoch */
	struct le32 block_size; /* data block size, bytes */
	struct le32 frag_count; /* fragment table entries */
	struct le16 compression; /* compressor id */
	struct le16 block_log; /* log2(block_size) */
	struct le16 flags; /* SQFS_FLAG_* */
	struct le16 id_count; /* id table entries */
	struct le16 version_major; /* 4 */
	struct le16 version_minor; /* 0 */
	struct le64 root_ref; /* root directory's inode reference */
	struct le64 bytes_used; /* filesystem bytes, before padding */
	struct le64 id_table; /* byte offset of the id index */
	struct le64 xattr_table; /* of the xattr id table header */
	struct le64 inode_table; /* of the inode table */
	struct le64 dir_table; /* of the directory table */
	struct le64 frag_table; /* of the fragment index */
	struct le64 export_table; /* of the export index */
};
_Static_assert(sizeof(struct sqfs_disk_super) == 96, "superblock size");

struct sqfs_disk_inode_hdr {
	struct le16 type; /* SQFS_*_TYPE */
	struct le16 mode; /* permission bits (type bits ignored) */
	struct le16 uid; /* index into the id table */
	struct le16 gid; /* index into the id table */
	struct le32 mtime; /* seconds since the epoch */
	struct le32 ino; /* inode number */
};
_Static_assert(sizeof(struct sqfs_disk_inode_hdr) == 16, "inode header");

struct sqfs_disk_dir {
	struct sqfs_disk_inode_hdr h;
	struct le32 start_block; /* listing's block, from dir table start */
	struct le32 nlink; /* link count */
	struct le16 size; /* listing bytes + 3 */
	struct le16 offset; /* listing's offset in its block */
	struct le32 parent; /* parent's inode number */
};
_Static_assert(sizeof(struct sqfs_disk_dir) == 32, "dir inode");

struct sqfs_disk_ldir {
	struct sqfs_disk_inode_hdr h;
	struct le32 nlink; /* link count */
	struct le32 size; /* listing bytes + 3 */
	struct le32 start_block; /* listing's block, from dir table start */
	struct le32 parent; /* parent's inode number */
	struct le16 idx_count; /* directory index entries that follow */
	struct le16 offset; /* listing's offset in its block */
	struct le32 xattr; /* xattr id */
};
_Static_assert(sizeof(struct sqfs_disk_ldir) == 40, "ldir inode");

/* Directory index entry; the name (size + 1 bytes) follows. */
struct sqfs_disk_dir_index {
	struct le32 index; /* listing offset of the header it points to */
	struct le32 start; /* that header's block, from dir table start */
	struct le32 size; /* name length - 1 */
};
_Static_assert(sizeof(struct sqfs_disk_dir_index) == 12, "dir index");

struct sqfs_disk_reg {
	struct sqfs_disk_inode_hdr h;
	struct le32 blocks_start; /* byte offset of the first data block */
	struct le32 frag; /* fragment index or SQFS_INVALID_FRAG */
	struct le32 frag_off; /* tail's offset in the fragment block */
	struct le32 size; /* file size, bytes */
};
_Static_assert(sizeof(struct sqfs_disk_reg) == 32, "reg inode");

struct sqfs_disk_lreg {
	struct sqfs_disk_inode_hdr h;
	struct le64 blocks_start; /* byte offset of the first data block */
	struct le64 size; /* file size, bytes */
	struct le64 sparse; /* bytes saved by sparse blocks */
	struct le32 nlink; /* link count */
	struct le32 frag; /* fragment index or SQFS_INVALID_FRAG */
	struct le32 frag_off; /* tail's offset in the fragment block */
	struct le32 xattr; /* xattr id */
};
_Static_assert(sizeof(struct sqfs_disk_lreg) == 56, "lreg inode");

/* Symlink inode; the target (size bytes) follows, then for the extended
 * type a le32 xattr id. */
struct sqfs_disk_symlink {
	struct sqfs_disk_inode_hdr h;
	struct le32 nlink; /* link count */
	struct le32 size; /* target length, bytes */
};
_Static_assert(sizeof(struct sqfs_disk_symlink) == 24, "symlink inode");

struct sqfs_disk_dev {
	struct sqfs_disk_inode_hdr h;
	struct le32 nlink; /* link count */
	struct le32 rdev; /* device number, Linux "new" encoding */
};
_Static_assert(sizeof(struct sqfs_disk_dev) == 24, "dev inode");

struct sqfs_disk_ldev {
	struct sqfs_disk_inode_hdr h;
	struct le32 nlink; /* link count */
	struct le32 rdev; /* device number */
	struct le32 xattr; /* xattr id */
};
_Static_assert(sizeof(struct sqfs_disk_ldev) == 28, "ldev inode");

struct sqfs_disk_ipc {
	struct sqfs_disk_inode_hdr h;
	struct le32 nlink; /* link count */
};
_Static_assert(sizeof(struct sqfs_disk_ipc) == 20, "ipc inode");

struct sqfs_disk_lipc {
	struct sqfs_disk_inode_hdr h;
	struct le32 nlink; /* link count */
	struct le32 xattr; /* xattr id */
};
_Static_assert(sizeof(struct sqfs_disk_lipc) == 24, "lipc inode");

/* A directory listing is a run of headers, each followed by count + 1
 * entries, each followed by its name (size + 1 bytes). */
struct sqfs_disk_dir_header {
	struct le32 count; /* entries that follow - 1 */
	struct le32 start; /* their inodes' block, from inode table start */
	struct le32 ino; /* base inode number */
};
_Static_assert(sizeof(struct sqfs_disk_dir_header) == 12, "dir header");

struct sqfs_disk_dir_entry {
	struct le16 offset; /* inode's offset in its block */
	struct le16 ino_delta; /* signed: inode number - base */
	struct le16 type; /* basic inode type */
	struct le16 size; /* name length - 1 */
};
_Static_assert(sizeof(struct sqfs_disk_dir_entry) == 8, "dir entry");

struct sqfs_disk_frag {
	struct le64 start; /* byte offset of the fragment block */
	struct le32 size; /* block size word */
	struct le32 unused; /* zero */
};
_Static_assert(sizeof(struct sqfs_disk_frag) == 16, "fragment entry");

struct sqfs_disk_xattr_table {
	struct le64 kv_start; /* byte offset of the key/value blocks */
	struct le32 count; /* xattr ids */
	struct le32 unused; /* zero */
};
_Static_assert(sizeof(struct sqfs_disk_xattr_table) == 16, "xattr table");

struct sqfs_disk_xattr_id {
	struct le64 ref; /* key/value reference: block << 16 | offset */
	struct le32 count; /* key/value pairs */
	struct le32 size; /* bytes listxattr needs for the names */
};
_Static_assert(sizeof(struct sqfs_disk_xattr_id) == 16, "xattr id");

/* An xattr key; the name (size bytes, without the prefix) follows. */
struct sqfs_disk_xattr_key {
	struct le16 type; /* SQFS_XATTR_* | SQFS_XATTR_VALUE_OOL */
	struct le16 size; /* name length */
};
_Static_assert(sizeof(struct sqfs_disk_xattr_key) == 4, "xattr key");

/* An xattr value; size bytes follow. */
struct sqfs_disk_xattr_val {
	struct le32 size; /* value length */
};
_Static_assert(sizeof(struct sqfs_disk_xattr_val) == 4, "xattr value");

#endif /* SQC_IMAGE_SQFS_FMT_H */

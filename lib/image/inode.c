// SPDX-License-Identifier: MIT
/*
 * This file implements decoding inodes: every basic and extended type is
 * read from the inode table, each field range-checked (ids against the id
 * table, fragments against the fragment table, listing positions against
 * the directory table, sizes against what the format allows) before the
 * decoded struct img_inode is handed out.  Variable parts (block lists,
 * directory indexes, symlink targets) are not read here; their positions
 * are recorded for the code that needs them.
 */
#define LOG_MOD "image"

#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "image/image_i.h"
#include "util/ckd.h"
#include "util/log.h"

static const uint32_t type_mode[] = {
	[IMG_DIR] = S_IFDIR,	 [IMG_REG] = S_IFREG,
	[IMG_SYMLINK] = S_IFLNK, [IMG_BLKDEV] = S_IFBLK,
	[IMG_CHRDEV] = S_IFCHR,	 [IMG_FIFO] = S_IFIFO,
	[IMG_SOCKET] = S_IFSOCK,
};

uint32_t img_type_mode(unsigned int type)
{
	if (type >= ARRAY_SIZE(type_mode))
		return 0;
	return type_mode[type];
}

static int check_xattr(struct img *img, struct img_inode *ino, uint32_t x)
{
	if (x != SQFS_INVALID_XATTR && x >= img->xattr_ids.count)
		return IMG_CORRUPT(
			img, "inode %u has xattr id %u, but the table has %llu",
			ino->ino, x, (unsigned long long)img->xattr_ids.count);
	ino->xattr = x;
	return 0;
}

static int decode_dir(struct img *img, struct img_inode *ino, uint32_t start,
		      uint32_t off, uint32_t size, uint32_t parent)
{
	uint64_t block;

	if (size < 3)
		return IMG_CORRUPT(img, "directory inode %u has size %u",
				   ino->ino, size);
	if (ckd_add(&block, img->sb.dir_table, (uint64_t)start) ||
	    block >= img->dir_end || off >= SQFS_META_SIZE)
		return IMG_CORRUPT(
			img,
			"directory inode %u points outside the directory table (%u:%u)",
			ino->ino, start, off);
	if (parent == 0 || parent > img->sb.inode_count + 1)
		return IMG_CORRUPT(img, "directory inode %u has parent %u",
				   ino->ino, parent);
	ino->size = size;
	ino->dir.block = block;
	ino->dir.off = off;
	ino->dir.listing = size - 3;
	ino->dir.parent = parent;
	return 0;
}

static int decode_file(struct img *img, struct img_inode *ino, uint64_t start,
		       uint64_t size, uint32_t frag, uint32_t frag_off)
{
	const uint32_t bs = img->sb.block_size;
	uint64_t nblocks, tail;

	if (frag == SQFS_INVALID_FRAG) {
		nblocks = DIV_ROUND_UP(size, (uint64_t)bs);
		tail = 0;
	} else {
		nblocks = size >> img->sb.block_log;
		tail = size & (bs - 1);
		if (frag >= img->sb.frag_count)
			return IMG_CORRUPT(
				img,
				"file inode %u has fragment %u, but the table has %u",
				ino->ino, frag, img->sb.frag_count);
		if (frag_off >= bs || tail > bs - frag_off)
			return IMG_CORRUPT(
				img,
				"file inode %u has a tail of %llu bytes at %u in its fragment",
				ino->ino, (unsigned long long)tail, frag_off);
	}
	if (nblocks > UINT32_MAX)
		return IMG_CORRUPT(img,
				   "file inode %u is too large (%llu bytes)",
				   ino->ino, (unsigned long long)size);
	/* Its block list (4 bytes a block) must fit in what is left of the
	 * inode table: stored blocks of at least 3 bytes, each decoding to at
	 * most 8 KiB.  Without this a small image can claim 2^32 blocks and
	 * make every read size a block map for them. */
	if (nblocks * 4 + ino->file.list_off >
	    (img->sb.dir_table - ino->file.list_block + 2) / 3 * SQFS_META_SIZE)
		return IMG_CORRUPT(
			img,
			"file inode %u has %llu blocks, more than its inode table can list",
			ino->ino, (unsigned long long)nblocks);
	if (nblocks &&
	    (start < img->data_start || start >= img->sb.inode_table))
		return IMG_CORRUPT(
			img,
			"file inode %u has data at %llu, outside the data area",
			ino->ino, (unsigned long long)start);
	ino->size = size;
	ino->file.blocks_start = start;
	ino->file.nblocks = (uint32_t)nblocks;
	ino->file.frag = frag;
	ino->file.frag_off = frag_off;
	return 0;
}

/*
 * Read and check the header of the inode at @ref into @out; leave
 * @block and @off just after it, and its on-disk type in @type.
 */
static int decode_header(struct img *img, const struct img_read_ctx *rc,
			 const struct img_region *rg, uint64_t ref,
			 uint64_t *block, uint32_t *off, struct img_inode *out,
			 uint32_t *type)
{
	struct sqfs_disk_inode_hdr h;
	uint32_t t, uid, gid;
	int err;

	memset(out, 0, sizeof(*out));
	out->ref = ref;
	out->xattr = IMG_NO_XATTR;
	if (ckd_add(block, img->sb.inode_table, ref >> 16) ||
	    *block >= img->sb.dir_table || (ref & 0xffff) >= SQFS_META_SIZE)
		return IMG_CORRUPT(
			img,
			"inode reference %llx points outside the inode table",
			(unsigned long long)ref);
	*off = (uint32_t)(ref & 0xffff);
	err = img__meta_read(img, rc, rg, block, off, &h, sizeof(h));
	if (err)
		return err;
	t = le16_dec(h.type);
	uid = le16_dec(h.uid);
	gid = le16_dec(h.gid);
	out->ino = le32_dec(h.ino);
	out->mtime = le32_dec(h.mtime);
	if (t < SQFS_DIR_TYPE || t > SQFS_LSOCKET_TYPE)
		return IMG_CORRUPT(img, "inode at %llx has unknown type %u",
				   (unsigned long long)ref, t);
	if (out->ino == 0 || out->ino > img->sb.inode_count)
		return IMG_CORRUPT(img,
				   "inode at %llx has number %u (image has %u)",
				   (unsigned long long)ref, out->ino,
				   img->sb.inode_count);
	if (uid >= img->sb.id_count || gid >= img->sb.id_count)
		return IMG_CORRUPT(
			img, "inode %u has id indexes %u/%u (table has %u)",
			out->ino, uid, gid, img->sb.id_count);
	out->uid = img->ids[uid];
	out->gid = img->ids[gid];
	out->extended = t > SQFS_SOCKET_TYPE;
	out->type = (uint8_t)(out->extended ? t - SQFS_TYPE_EXT_DELTA : t);
	out->mode = img_type_mode(out->type) | (le16_dec(h.mode) & 07777);
	*type = t;
	return 0;
}

/* An extended device or ipc inode is the basic one and an xattr id:
 * decode_body() reads the basic one through the extended struct. */
_Static_assert(offsetof(struct sqfs_disk_ldev, rdev) ==
			       offsetof(struct sqfs_disk_dev, rdev) &&
		       offsetof(struct sqfs_disk_ldev, xattr) ==
			       sizeof(struct sqfs_disk_dev),
	       "ldev extends dev");
_Static_assert(offsetof(struct sqfs_disk_lipc, xattr) ==
		       sizeof(struct sqfs_disk_ipc),
	       "lipc extends ipc");

/* Where an inode's body is read from: just after its header. */
struct body {
	struct img *img;
	const struct img_read_ctx *rc; /* on whose behalf */
	const struct img_region *rg;
	uint64_t block;
	uint32_t off;
};

/*
 * Read the on-disk struct @d of @size bytes, whose first bytes are the
 * header decode_header() already read: only what follows the header is
 * read, into its place in @d.
 */
static int read_body(struct body *b, void *d, size_t size)
{
	const size_t hdr = sizeof(struct sqfs_disk_inode_hdr);

	return img__meta_read(b->img, b->rc, b->rg, &b->block, &b->off,
			      (uint8_t *)d + hdr, size - hdr);
}

/*
 * Read the extended inode struct @d of @size bytes (read_body()), and
 * decode what every extended layout with an xattr id before its own
 * fields has: @nlink and @xattr, members of @d.
 */
static int read_ext_body(struct body *b, struct img_inode *out, void *d,
			 size_t size, const struct le32 *nlink,
			 const struct le32 *xattr)
{
	int err;

	err = read_body(b, d, size);
	if (err)
		return err;
	out->nlink = le32_dec(*nlink);
	return check_xattr(b->img, out, le32_dec(*xattr));
}

static int decode_dir_body(struct body *b, struct img_inode *out)
{
	/* Zeroed: read_ext_body() is given pointers into it before it is
	 * read, which gcc -O0 takes for a use of uninitialized memory. */
	struct sqfs_disk_ldir ld = { 0 };
	struct sqfs_disk_dir d;
	int err;

	if (out->extended) {
		err = read_ext_body(b, out, &ld, sizeof(ld), &ld.nlink,
				    &ld.xattr);
		if (err)
			return err;
		out->dir.idx_count = le16_dec(ld.idx_count);
		out->dir.idx_block = b->block;
		out->dir.idx_off = b->off;
		return decode_dir(b->img, out, le32_dec(ld.start_block),
				  le16_dec(ld.offset), le32_dec(ld.size),
				  le32_dec(ld.parent));
	}
	err = read_body(b, &d, sizeof(d));
	if (err)
		return err;
	out->nlink = le32_dec(d.nlink);
	return decode_dir(b->img, out, le32_dec(d.start_block),
			  le16_dec(d.offset), le16_dec(d.size),
			  le32_dec(d.parent));
}

static int decode_reg_body(struct body *b, struct img_inode *out)
{
	struct sqfs_disk_lreg ld = { 0 }; /* as in decode_dir_body() */
	struct sqfs_disk_reg d;
	uint64_t size;
	int err;

	if (!out->extended) {
		err = read_body(b, &d, sizeof(d));
		if (err)
			return err;
		out->nlink = 1;
		out->file.list_block = b->block;
		out->file.list_off = b->off;
		return decode_file(b->img, out, le32_dec(d.blocks_start),
				   le32_dec(d.size), le32_dec(d.frag),
				   le32_dec(d.frag_off));
	}
	err = read_ext_body(b, out, &ld, sizeof(ld), &ld.nlink, &ld.xattr);
	if (err)
		return err;
	size = le64_dec(ld.size);
	out->file.sparse = le64_dec(ld.sparse);
	if (size > INT64_MAX)
		return IMG_CORRUPT(b->img, "file inode %u has size %llu",
				   out->ino, (unsigned long long)size);
	out->file.list_block = b->block;
	out->file.list_off = b->off;
	return decode_file(b->img, out, le64_dec(ld.blocks_start), size,
			   le32_dec(ld.frag), le32_dec(ld.frag_off));
}

static int decode_symlink_body(struct body *b, struct img_inode *out)
{
	struct sqfs_disk_symlink d;
	struct le32 xa; /* extended symlinks: after the target */
	int err;

	err = read_body(b, &d, sizeof(d));
	if (err)
		return err;
	out->nlink = le32_dec(d.nlink);
	out->size = le32_dec(d.size);
	if (out->size == 0 || out->size > IMG_SYMLINK_MAX)
		return IMG_CORRUPT(
			b->img, "symlink inode %u has a target of %llu bytes",
			out->ino, (unsigned long long)out->size);
	out->symlink.block = b->block;
	out->symlink.off = b->off;
	if (!out->extended)
		return 0;
	err = img__meta_read(b->img, b->rc, b->rg, &b->block, &b->off, NULL,
			     (size_t)out->size);
	if (!err)
		err = img__meta_read(b->img, b->rc, b->rg, &b->block, &b->off,
				     &xa, sizeof(xa));
	return err ? err : check_xattr(b->img, out, le32_dec(xa));
}

/* Devices (@dev), fifos and sockets: the extended layout is the basic
 * one and an xattr id (see the static assertions above). */
static int decode_special_body(struct body *b, struct img_inode *out, bool dev)
{
	union {
		struct sqfs_disk_ldev dev;
		struct sqfs_disk_lipc ipc;
	} u;
	size_t size = dev ? (out->extended ? sizeof(u.dev) :
					     sizeof(struct sqfs_disk_dev)) :
			    (out->extended ? sizeof(u.ipc) :
					     sizeof(struct sqfs_disk_ipc));
	int err;

	err = read_body(b, &u, size);
	if (err)
		return err;
	out->nlink = le32_dec(dev ? u.dev.nlink : u.ipc.nlink);
	if (dev)
		out->rdev = le32_dec(u.dev.rdev);
	if (!out->extended)
		return 0;
	return check_xattr(b->img, out,
			   le32_dec(dev ? u.dev.xattr : u.ipc.xattr));
}

/*
 * Decode the rest of an inode of on-disk type @t, whose header
 * decode_header() read; block/off point just after the header.
 */
static int decode_body(struct img *img, const struct img_read_ctx *rc,
		       const struct img_region *rg, uint32_t t, uint64_t block,
		       uint32_t off, struct img_inode *out)
{
	struct body b = {
		.img = img, .rc = rc, .rg = rg, .block = block, .off = off
	};

	switch (t) {
	case SQFS_DIR_TYPE:
	case SQFS_LDIR_TYPE:
		return decode_dir_body(&b, out);
	case SQFS_REG_TYPE:
	case SQFS_LREG_TYPE:
		return decode_reg_body(&b, out);
	case SQFS_SYMLINK_TYPE:
	case SQFS_LSYMLINK_TYPE:
		return decode_symlink_body(&b, out);
	case SQFS_BLKDEV_TYPE:
	case SQFS_CHRDEV_TYPE:
	case SQFS_LBLKDEV_TYPE:
	case SQFS_LCHRDEV_TYPE:
		return decode_special_body(&b, out, true);
	default: /* fifos and sockets, basic or extended */
		return decode_special_body(&b, out, false);
	}
}

int img_inode_get_as(struct img *img, const struct img_read_ctx *rc,
		     uint64_t ref, struct img_inode *out)
{
	const struct img_region rg = img__inode_region(img);
	uint64_t block;
	uint32_t off = 0, t = 0;
	int err;

	err = decode_header(img, rc, &rg, ref, &block, &off, out, &t);
	if (err)
		return err;
	return decode_body(img, rc, &rg, t, block, off, out);
}

int img_inode_get(struct img *img, uint64_t ref, struct img_inode *out)
{
	return img_inode_get_as(img, NULL, ref, out);
}

int img_readlink(struct img *img, const struct img_inode *ino, char *buf,
		 size_t cap)
{
	const struct img_region rg = img__inode_region(img);
	uint64_t block;
	uint32_t off;
	int err;

	if (ino->type != IMG_SYMLINK)
		return -EINVAL;
	if (cap < ino->size + 1)
		return -ERANGE;
	block = ino->symlink.block;
	off = ino->symlink.off;
	err = img__meta_read(img, NULL, &rg, &block, &off, buf,
			     (size_t)ino->size);
	if (err)
		return err;
	buf[ino->size] = '\0';
	if (memchr(buf, '\0', (size_t)ino->size))
		return IMG_CORRUPT(img,
				   "symlink inode %u has a NUL in its target",
				   ino->ino);
	return 0;
}

int img_ino_to_ref(struct img *img, uint32_t ino, uint64_t *ref)
{
	uint8_t raw[8];
	int err;

	if (!img->exports.count)
		return -ENOTSUP;
	if (ino == 0 || ino > img->sb.inode_count)
		return -ENOENT;
	err = img__table_get(img, NULL, &img->exports, ino - 1, raw);
	if (err)
		return err;
	*ref = le64_get(raw);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements extended attributes.
 *
 * An inode's xattr id indexes the xattr id table, whose entry points at a
 * run of key/value pairs in the key/value blocks.  A key is a type (the
 * namespace: user, trusted or security, plus a flag for values stored out
 * of line) and a name without its prefix; a value is a length and bytes,
 * or, out of line, an 8-byte reference to a length and bytes stored
 * elsewhere in the key/value blocks (mksquashfs shares large values).
 */
#define LOG_MOD "image"

#include <string.h>

#include "image/image_i.h"
#include "util/ckd.h"
#include "util/log.h"

#define XATTR_NAME_MAX 255 /* longest name without prefix */
#define XATTR_VALUE_MAX 65536 /* longest value (Linux XATTR_SIZE_MAX) */

static const char *const prefixes[] = {
	[SQFS_XATTR_USER] = "user.",
	[SQFS_XATTR_TRUSTED] = "trusted.",
	[SQFS_XATTR_SECURITY] = "security.",
};

struct xattr_walk {
	uint64_t block; /* position in the key/value blocks */
	uint32_t off;
	uint32_t left; /* pairs left */
	uint32_t ino; /* for messages */
};

struct xattr_key {
	const char *prefix; /* "user." etc. */
	size_t prefix_len;
	char name[XATTR_NAME_MAX + 1]; /* without prefix, NUL-terminated */
	size_t name_len;
	bool ool; /* value stored out of line */
};

static int kv_ref_pos(struct img *img, uint64_t ref, uint64_t *block,
		      uint32_t *off)
{
	if (ckd_add(block, img->xattr_kv.start, ref >> 16) ||
	    *block >= img->xattr_kv.end || (ref & 0xffff) >= SQFS_META_SIZE)
		return IMG_CORRUPT(img, "xattr reference %llx is out of range",
				   (unsigned long long)ref);
	*off = (uint32_t)(ref & 0xffff);
	return 0;
}

static int walk_start(struct img *img, const struct img_inode *ino,
		      struct xattr_walk *w)
{
	struct sqfs_disk_xattr_id d;
	int err;

	w->left = 0;
	w->ino = ino->ino;
	if (ino->xattr == IMG_NO_XATTR)
		return 0;
	err = img__table_get(img, NULL, &img->xattr_ids, ino->xattr, &d);
	if (err)
		return err;
	err = kv_ref_pos(img, le64_dec(d.ref), &w->block, &w->off);
	if (err)
		return err;
	w->left = le32_dec(d.count);
	if (w->left > XATTR_VALUE_MAX)
		return IMG_CORRUPT(img, "inode %u has %u xattrs", ino->ino,
				   w->left);
	return 0;
}

static int read_key(struct img *img, struct xattr_walk *w, struct xattr_key *k)
{
	struct sqfs_disk_xattr_key d;
	uint16_t type;
	int err;

	err = img__meta_read(img, NULL, &img->xattr_kv, &w->block, &w->off, &d,
			     sizeof(d));
	if (err)
		return err;
	type = le16_dec(d.type);
	k->name_len = le16_dec(d.size);
	if ((type & ~(SQFS_XATTR_PREFIX_MASK | SQFS_XATTR_VALUE_OOL)) ||
	    (type & SQFS_XATTR_PREFIX_MASK) >= ARRAY_SIZE(prefixes))
		return IMG_CORRUPT(img, "inode %u has xattr type %#x", w->ino,
				   type);
	if (k->name_len == 0 || k->name_len > XATTR_NAME_MAX)
		return IMG_CORRUPT(img,
				   "inode %u has an xattr name of %zu bytes",
				   w->ino, k->name_len);
	err = img__meta_read(img, NULL, &img->xattr_kv, &w->block, &w->off,
			     k->name, k->name_len);
	if (err)
		return err;
	k->name[k->name_len] = '\0';
	if (memchr(k->name, '\0', k->name_len))
		return IMG_CORRUPT(img, "inode %u has an xattr name with a NUL",
				   w->ino);
	k->prefix = prefixes[type & SQFS_XATTR_PREFIX_MASK];
	k->prefix_len = strlen(k->prefix);
	k->ool = type & SQFS_XATTR_VALUE_OOL;
	return 0;
}

/* Read (or skip, with @dst NULL) the value after a key.  *@len is set to
 * the value's length; at most @cap bytes are copied. */
static int read_value(struct img *img, struct xattr_walk *w,
		      const struct xattr_key *k, void *dst, size_t cap,
		      size_t *len)
{
	struct sqfs_disk_xattr_val v;
	uint8_t raw[8];
	uint64_t block;
	uint32_t off, size;
	int err;

	err = img__meta_read(img, NULL, &img->xattr_kv, &w->block, &w->off, &v,
			     sizeof(v));
	if (err)
		return err;
	size = le32_dec(v.size);
	if (!k->ool) {
		if (size > XATTR_VALUE_MAX)
			return IMG_CORRUPT(
				img, "inode %u has an xattr value of %u bytes",
				w->ino, size);
		*len = size;
		if (dst && size <= cap)
			return img__meta_read(img, NULL, &img->xattr_kv,
					      &w->block, &w->off, dst, size);
		return img__meta_read(img, NULL, &img->xattr_kv, &w->block,
				      &w->off, NULL, size);
	}
	if (size != sizeof(raw))
		return IMG_CORRUPT(
			img,
			"inode %u has an out-of-line xattr reference of %u bytes",
			w->ino, size);
	err = img__meta_read(img, NULL, &img->xattr_kv, &w->block, &w->off, raw,
			     sizeof(raw));
	if (err)
		return err;
	err = kv_ref_pos(img, le64_get(raw), &block, &off);
	if (err)
		return err;
	err = img__meta_read(img, NULL, &img->xattr_kv, &block, &off, &v,
			     sizeof(v));
	if (err)
		return err;
	size = le32_dec(v.size);
	if (size > XATTR_VALUE_MAX)
		return IMG_CORRUPT(img,
				   "inode %u has an xattr value of %u bytes",
				   w->ino, size);
	*len = size;
	if (dst && size <= cap)
		return img__meta_read(img, NULL, &img->xattr_kv, &block, &off,
				      dst, size);
	return 0;
}

int img_xattr_list(struct img *img, const struct img_inode *ino, char *buf,
		   size_t cap, size_t *len)
{
	struct xattr_walk w;
	struct xattr_key k;
	size_t need = 0, n, vlen;
	int err;

	err = walk_start(img, ino, &w);
	if (err)
		return err;
	for (; w.left; w.left--) {
		err = read_key(img, &w, &k);
		if (!err)
			err = read_value(img, &w, &k, NULL, 0, &vlen);
		if (err)
			return err;
		n = k.prefix_len + k.name_len + 1;
		if (buf && cap && need + n <= cap) {
			memcpy(buf + need, k.prefix, k.prefix_len);
			memcpy(buf + need + k.prefix_len, k.name,
			       k.name_len + 1);
		}
		need += n;
	}
	*len = need;
	if (cap && need > cap)
		return -ERANGE;
	return 0;
}

int img__xattr_check(struct img *img, const struct img_inode *ino, void *buf,
		     size_t cap, uint64_t *values)
{
	struct xattr_walk w;
	struct xattr_key k;
	size_t vlen;
	int err;

	*values = 0;
	err = walk_start(img, ino, &w);
	if (err)
		return err;
	for (; w.left; w.left--) {
		err = read_key(img, &w, &k);
		if (!err)
			err = read_value(img, &w, &k, buf, cap, &vlen);
		if (err)
			return err;
		(*values)++;
	}
	return 0;
}

int img_xattr_get(struct img *img, const struct img_inode *ino,
		  const char *name, void *buf, size_t cap, size_t *len)
{
	struct xattr_walk w;
	struct xattr_key k;
	size_t vlen;
	int err;

	err = walk_start(img, ino, &w);
	if (err)
		return err;
	for (; w.left; w.left--) {
		err = read_key(img, &w, &k);
		if (err)
			return err;
		if (strncmp(name, k.prefix, k.prefix_len) ||
		    strcmp(name + k.prefix_len, k.name)) {
			err = read_value(img, &w, &k, NULL, 0, &vlen);
			if (err)
				return err;
			continue;
		}
		err = read_value(img, &w, &k, cap ? buf : NULL, cap, &vlen);
		if (err)
			return err;
		*len = vlen;
		if (cap && vlen > cap)
			return -ERANGE;
		return 0;
	}
	return -ENODATA;
}

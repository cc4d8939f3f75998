// SPDX-License-Identifier: MIT
/*
 * This file implements directories: iterating over a listing, resuming from
 * a cookie, and looking a name up through the directory index.
 *
 * A listing is a run of headers (base inode number, inode block, count)
 * each followed by up to 256 entries.  A cookie is the listing offset of
 * the next entry to return (0 = the start; entries start at 12 or later).
 * Resuming jumps to the last index point at or before the cookie and walks
 * forward at most one metadata block, as the kernel's readdir does: the
 * index records, for every metadata block the listing enters, the listing
 * offset of the first header in it and that block's position.
 *
 * Names are validated as they are read: 1..256 bytes, no '/', no NUL, not
 * "." or "..".  Entries are sorted by name (unsigned bytes, like strcmp),
 * which lets a lookup stop as soon as it has passed the name.
 */
#define LOG_MOD "image"

#include <stddef.h>
#include <string.h>

#include "image/image_i.h"
#include "util/ckd.h"
#include "util/log.h"

struct dir_index {
	uint32_t index; /* listing offset of a header */
	uint32_t start; /* its metadata block, from the directory table */
	uint32_t name_len; /* length of name */
	char name[SQFS_NAME_LEN + 1]; /* first name under that header */
};

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, MIN(alen, blen));

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

bool img_name_is_valid(const char *name, size_t len)
{
	if (len == 0 || len > SQFS_NAME_LEN)
		return false;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return false;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return false;
	return true;
}

/* A walk over a directory's index, entry by entry in order. */
struct index_walk {
	struct img_meta_buf mb; /* .held set by index_start(); data needs
				   no zeroing */
	uint64_t block; /* where the next entry is */
	uint32_t off;
	uint32_t left; /* entries not read yet */
	uint32_t read; /* entries read */
};

static void index_start(struct index_walk *w, const struct img_inode *dir)
{
	w->mb.held = UINT64_MAX;
	w->block = dir->dir.idx_block;
	w->off = dir->dir.idx_off;
	w->left = dir->dir.idx_count;
	w->read = 0;
}

/* Read the next entry of @dir's index.  Return: 1 if read into @out, 0
 * past the last one, -errno. */
static int index_next(struct img *img, const struct img_inode *dir,
		      struct index_walk *w, struct dir_index *out)
{
	const struct img_region rg = img__inode_region(img);
	struct sqfs_disk_dir_index d;
	int err;

	if (!w->left)
		return 0;
	w->left--;
	w->read++;
	err = img__meta_buf_read(img, NULL, &rg, &w->mb, &w->block, &w->off, &d,
				 sizeof(d));
	if (err)
		return err;
	out->index = le32_dec(d.index);
	out->start = le32_dec(d.start);
	out->name_len = le32_dec(d.size) + 1;
	if (out->name_len == 0 || out->name_len > SQFS_NAME_LEN)
		return IMG_CORRUPT(
			img, "directory inode %u has an index name of %u bytes",
			dir->ino, out->name_len);
	err = img__meta_buf_read(img, NULL, &rg, &w->mb, &w->block, &w->off,
				 out->name, out->name_len);
	if (err)
		return err;
	out->name[out->name_len] = '\0';
	if (out->index >= dir->dir.listing ||
	    (uint64_t)img->sb.dir_table + out->start >= img->dir_end)
		return IMG_CORRUPT(
			img,
			"directory inode %u has an index entry outside its listing",
			dir->ino);
	return 1;
}

static void iter_seek(struct img_dir_iter *it, const struct img_inode *dir,
		      const struct dir_index *x)
{
	it->block = it->img->sb.dir_table + x->start;
	it->off = (uint32_t)((dir->dir.off + (uint64_t)x->index) %
			     SQFS_META_SIZE);
	it->pos = x->index;
	it->hdr_left = 0;
}

int img_dir_open(struct img *img, const struct img_inode *dir, uint64_t cookie,
		 struct img_dir_iter *it)
{
	struct index_walk w;
	struct dir_index x, prev;
	int err;

	if (dir->type != IMG_DIR)
		return -ENOTDIR;
	memset(it, 0, offsetof(struct img_dir_iter, mb));
	it->mb.held = UINT64_MAX;
	it->img = img;
	it->block = dir->dir.block;
	it->off = dir->dir.off;
	it->listing = dir->dir.listing;
	if (cookie >= dir->dir.listing) {
		it->pos = dir->dir.listing; /* at the end */
		return 0;
	}
	it->skip_to = (uint32_t)cookie;
	if (!cookie || !dir->dir.idx_count)
		return 0;
	index_start(&w, dir);
	prev.index = 0;
	while ((err = index_next(img, dir, &w, &x)) == 1) {
		if (w.read > 1 && x.index <= prev.index)
			return IMG_CORRUPT(
				img,
				"directory inode %u has an index out of order",
				dir->ino);
		if (x.index > cookie)
			break;
		iter_seek(it, dir, &x);
		prev = x;
	}
	return err < 0 ? err : 0;
}

/* Read and check the header of the next run of entries. */
static int read_dir_header(struct img_dir_iter *it, const struct img_region *rg)
{
	struct img *img = it->img;
	struct sqfs_disk_dir_header h;
	int err;

	if (it->listing - it->pos < sizeof(h))
		return IMG_CORRUPT(img,
				   "directory listing ends inside a header");
	err = img__meta_buf_read(img, NULL, rg, &it->mb, &it->block, &it->off,
				 &h, sizeof(h));
	if (err)
		return err;
	it->pos += sizeof(h);
	it->hdr_left = le32_dec(h.count) + 1;
	it->hdr_start = le32_dec(h.start);
	it->hdr_ino = le32_dec(h.ino);
	if (it->hdr_left == 0 || it->hdr_left > SQFS_DIR_COUNT)
		return IMG_CORRUPT(img, "directory header has %u entries",
				   it->hdr_left);
	if ((uint64_t)img->sb.inode_table + it->hdr_start >= img->sb.dir_table)
		return IMG_CORRUPT(
			img, "directory header points outside the inode table");
	return 0;
}

/* Check entry @e, whose name is in @out already, and decode the rest of
 * it into @out. */
static int decode_dir_entry(struct img_dir_iter *it,
			    const struct sqfs_disk_dir_entry *e,
			    struct img_dirent *out)
{
	struct img *img = it->img;
	uint32_t ino, type;
	int32_t delta;

	if (!img_name_is_valid(out->name, out->name_len))
		return IMG_CORRUPT(
			img,
			"directory entry has an invalid name ('/', NUL, '.' or '..')");
	type = le16_dec(e->type);
	if (type > SQFS_SOCKET_TYPE)
		type -= SQFS_TYPE_EXT_DELTA;
	if (type < SQFS_DIR_TYPE || type > SQFS_SOCKET_TYPE)
		return IMG_CORRUPT(img, "directory entry '%s' has type %u",
				   out->name, le16_dec(e->type));
	delta = (int16_t)le16_dec(e->ino_delta);
	ino = it->hdr_ino + (uint32_t)delta;
	if (ino == 0 || ino > img->sb.inode_count)
		return IMG_CORRUPT(img,
				   "directory entry '%s' has inode number %u",
				   out->name, ino);
	if (le16_dec(e->offset) >= SQFS_META_SIZE)
		return IMG_CORRUPT(img,
				   "directory entry '%s' has inode offset %u",
				   out->name, le16_dec(e->offset));
	out->ref = (uint64_t)it->hdr_start << 16 | le16_dec(e->offset);
	out->ino = ino;
	out->type = (uint8_t)type;
	out->next = it->pos;
	return 0;
}

int img_dir_next(struct img_dir_iter *it, struct img_dirent *out)
{
	struct img *img = it->img;
	const struct img_region rg = img__dir_region(img);
	struct sqfs_disk_dir_entry e;
	uint32_t entry_pos;
	int err;

	for (;;) {
		if (it->pos >= it->listing)
			return 0;
		if (!it->hdr_left) {
			err = read_dir_header(it, &rg);
			if (err)
				return err;
		}
		entry_pos = it->pos;
		if (it->listing - it->pos < sizeof(e))
			return IMG_CORRUPT(
				img, "directory listing ends inside an entry");
		err = img__meta_buf_read(img, NULL, &rg, &it->mb, &it->block,
					 &it->off, &e, sizeof(e));
		if (err)
			return err;
		it->pos += sizeof(e);
		out->name_len = (uint16_t)(le16_dec(e.size) + 1);
		if (out->name_len > SQFS_NAME_LEN ||
		    it->listing - it->pos < out->name_len)
			return IMG_CORRUPT(
				img,
				"directory entry name of %u bytes does not fit",
				out->name_len);
		err = img__meta_buf_read(img, NULL, &rg, &it->mb, &it->block,
					 &it->off, out->name, out->name_len);
		if (err)
			return err;
		it->pos += out->name_len;
		it->hdr_left--;
		out->name[out->name_len] = '\0';
		if (entry_pos < it->skip_to)
			continue;
		err = decode_dir_entry(it, &e, out);
		return err ? err : 1;
	}
}

int img__dir_check_index(struct img *img, const struct img_inode *dir)
{
	struct img_dir_iter it, at;
	struct index_walk w;
	struct img_dirent de;
	struct dir_index x;
	uint32_t prev = 0;
	int err;

	if (dir->type != IMG_DIR || !dir->dir.idx_count)
		return 0;
	err = img_dir_open(img, dir, 0, &it);
	if (err)
		return err;
	index_start(&w, dir);
	while ((err = index_next(img, dir, &w, &x)) == 1) {
		if (w.read > 1 && x.index <= prev)
			return IMG_CORRUPT(
				img,
				"directory inode %u has an index out of order",
				dir->ino);
		prev = x.index;
		/* Walk the listing to the header this entry names; it must
		 * be where iter_seek() would jump, and start with the name. */
		while (it.pos < x.index) {
			err = img_dir_next(&it, &de);
			if (err <= 0)
				return err ? err :
					     IMG_CORRUPT(
						     img,
						     "directory inode %u has an index entry past its listing",
						     dir->ino);
		}
		at.img = img;
		iter_seek(&at, dir, &x);
		if (it.pos != x.index || it.hdr_left || it.block != at.block ||
		    it.off != at.off)
			return IMG_CORRUPT(
				img,
				"directory inode %u has an index entry that is not at a header",
				dir->ino);
		err = img_dir_next(&it, &de);
		if (err <= 0 || de.name_len != x.name_len ||
		    memcmp(de.name, x.name, x.name_len))
			return err < 0 ?
				       err :
				       IMG_CORRUPT(
					       img,
					       "directory inode %u has an index name that is not its header's first name",
					       dir->ino);
	}
	return err;
}

int img_dir_lookup(struct img *img, const struct img_inode *dir,
		   const char *name, size_t len, struct img_dirent *out)
{
	struct img_dir_iter it;
	struct index_walk w;
	struct dir_index x;
	int err, c;

	if (dir->type != IMG_DIR)
		return -ENOTDIR;
	if (len > SQFS_NAME_LEN)
		return -ENAMETOOLONG;
	err = img_dir_open(img, dir, 0, &it);
	if (err)
		return err;
	/* Jump to the last index point whose first name is <= @name. */
	index_start(&w, dir);
	while ((err = index_next(img, dir, &w, &x)) == 1) {
		if (name_cmp(x.name, x.name_len, name, len) > 0)
			break;
		if (x.index < it.pos)
			return IMG_CORRUPT(
				img,
				"directory inode %u has an index out of order",
				dir->ino);
		iter_seek(&it, dir, &x);
	}
	if (err < 0)
		return err;
	while ((err = img_dir_next(&it, out)) == 1) {
		c = name_cmp(out->name, out->name_len, name, len);
		if (c == 0)
			return 0;
		if (c > 0)
			break;
	}
	return err < 0 ? err : -ENOENT;
}

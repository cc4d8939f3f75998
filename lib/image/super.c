// SPDX-License-Identifier: MIT
/*
 * This file implements opening an image: the superblock, the compressor
 * options, and the placement of every table, checked the way the kernel's
 * squashfs_fill_super() does before it trusts any of them.  Tables are
 * checked from the end of the image back: each must end where the one after
 * it begins.  It also implements the image's stats.
 */
#define LOG_MOD "image"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "image/image_i.h"
#include "util/ckd.h"
#include "util/log.h"
#include "util/memlimit.h"

#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

void img_opts_default(struct img_opts *o)
{
	struct memlimit ml;

	memlimit_get(&ml);
	o->meta_cache = 0; /* sized from the image: img_meta_budget() */
	o->meta_max = ml.usable / 16;
	o->data_cache = 256ull << 20;
	o->ram = memlimit_budget(&ml);
	o->stage = STAGE_AUTO;
	o->stage_cached = false; /* O_DIRECT where the file takes it */
	o->offset = 0;
	o->backing = NULL; /* anonymous memory */
	o->backing_arg = NULL;
	o->seal = NULL; /* nothing checked */
	o->seal_optional = false;
	o->seal_root = NULL;
}

static int open_file(struct img *img)
{
	struct statfs sfs;
	struct stat st;
	uint64_t size;

	img->fd = open(img->path, O_RDONLY | O_CLOEXEC);
	if (img->fd < 0) {
		int err = -errno;

		log_err("cannot open image '%s': %s", img->path, err_str(err));
		return err;
	}
	if (fstat(img->fd, &st)) {
		int err = -errno;

		log_err("cannot stat image '%s': %s", img->path, err_str(err));
		return err;
	}
	if (S_ISDIR(st.st_mode)) {
		log_err("image '%s' is a directory, not a SquashFS image file",
			img->path);
		return -EISDIR;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(img->fd, BLKGETSIZE64, &size)) {
			int err = -errno;

			log_err("cannot size block device '%s': %s", img->path,
				err_str(err));
			return err;
		}
	} else if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else {
		log_err("image '%s' is not a regular file or block device",
			img->path);
		return -EINVAL;
	}
	if (img->offset > size) {
		log_err("image '%s': offset %llu is beyond its end (%llu bytes)",
			img->path, (unsigned long long)img->offset,
			(unsigned long long)size);
		return -EINVAL;
	}
	img->file_size = size - img->offset;
	img->mtime = st.st_mtim;
	img->ctime = st.st_ctim;
	img->nlink = st.st_nlink;
	if (!fstatfs(img->fd, &sfs) &&
	    (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC))
		img->in_ram = true;
	return 0;
}

/* The fields of an on-disk superblock, decoded (not checked). */
static void super_fields(const struct sqfs_disk_super *d, struct img_super *sb)
{
	sb->inode_count = le32_dec(d->inode_count);
	sb->mkfs_time = le32_dec(d->mkfs_time);
	sb->block_size = le32_dec(d->block_size);
	sb->frag_count = le32_dec(d->frag_count);
	sb->compression = le16_dec(d->compression);
	sb->block_log = le16_dec(d->block_log);
	sb->flags = le16_dec(d->flags);
	sb->id_count = le16_dec(d->id_count);
	sb->root_ref = le64_dec(d->root_ref);
	sb->bytes_used = le64_dec(d->bytes_used);
	sb->id_table = le64_dec(d->id_table);
	sb->xattr_table = le64_dec(d->xattr_table);
	sb->inode_table = le64_dec(d->inode_table);
	sb->dir_table = le64_dec(d->dir_table);
	sb->frag_table = le64_dec(d->frag_table);
	sb->export_table = le64_dec(d->export_table);
}

int img_read_super(int fd, uint64_t offset, uint64_t file_size,
		   struct img_super *out)
{
	struct sqfs_disk_super d;
	uint64_t left;
	ssize_t n;

	if (offset > file_size || file_size - offset < sizeof(d))
		return -EMEDIUMTYPE;
	left = file_size - offset;
	do
		n = pread(fd, &d, sizeof(d), (off_t)offset);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(d))
		return -EIO;
	if (le32_dec(d.magic) != SQFS_MAGIC)
		return -EMEDIUMTYPE;
	if (le16_dec(d.version_major) != SQFS_VERSION_MAJOR ||
	    le16_dec(d.version_minor) != SQFS_VERSION_MINOR)
		return -ENOTSUP;
	super_fields(&d, out);
	if (out->block_size < SQFS_BLOCK_MIN ||
	    out->block_size > SQFS_BLOCK_MAX || out->block_log > 20 ||
	    out->block_size != 1u << out->block_log ||
	    out->bytes_used < sizeof(d) || out->bytes_used > left ||
	    out->inode_table >= out->bytes_used)
		return -EFSCORRUPTED;
	return 0;
}

static int decode_super(struct img *img)
{
	struct sqfs_disk_super d;
	struct img_super *sb = &img->sb;
	uint32_t magic;
	uint16_t vmaj, vmin;
	int err;

	if (img->file_size < sizeof(d)) {
		log_err("'%s' is not a SquashFS image: only %llu bytes long",
			img->path, (unsigned long long)img->file_size);
		return -EMEDIUMTYPE;
	}
	/* bytes_used is not known yet: read the superblock directly. */
	sb->bytes_used = sizeof(d);
	err = img__read(img, NULL, 0, &d, sizeof(d));
	if (err)
		return err;
	magic = le32_dec(d.magic);
	if (magic == SQFS_MAGIC_SWAPPED) {
		log_err("'%s' is a big-endian SquashFS image (version 3 or older); only SquashFS 4.0 is supported",
			img->path);
		return -ENOTSUP;
	}
	if (magic != SQFS_MAGIC) {
		log_err("'%s' is not a SquashFS image (no 'hsqs' magic at its start)",
			img->path);
		return -EMEDIUMTYPE;
	}
	vmaj = le16_dec(d.version_major);
	vmin = le16_dec(d.version_minor);
	if (vmaj != SQFS_VERSION_MAJOR || vmin != SQFS_VERSION_MINOR) {
		log_err("'%s' is SquashFS version %u.%u; only 4.0 is supported",
			img->path, vmaj, vmin);
		return -ENOTSUP;
	}
	super_fields(&d, sb);

	img->codec = dec_lookup(sb->compression);
	if (!dec_is_supported(img->codec)) {
		log_err("'%s' uses compressor %s, which this build cannot read",
			img->path, dec_name(img->codec));
		return -ENOTSUP;
	}
	if (sb->block_size < SQFS_BLOCK_MIN ||
	    sb->block_size > SQFS_BLOCK_MAX || sb->block_log > 20 ||
	    sb->block_size != 1u << sb->block_log)
		return IMG_CORRUPT(img, "bad block size %u (log %u)",
				   sb->block_size, sb->block_log);
	if (sb->bytes_used < sizeof(d))
		return IMG_CORRUPT(img, "bytes_used %llu is too small",
				   (unsigned long long)sb->bytes_used);
	if (sb->bytes_used > img->file_size) {
		log_err("image '%s' is truncated: the file has %llu bytes but its superblock says %llu",
			img->path, (unsigned long long)img->file_size,
			(unsigned long long)sb->bytes_used);
		return -EFSCORRUPTED;
	}
	if (sb->inode_count == 0)
		return IMG_CORRUPT(img, "inode count is 0");
	if (sb->id_count == 0)
		return IMG_CORRUPT(img, "id count is 0");
	return 0;
}

static int read_comp_opts(struct img *img)
{
	const uint64_t pos = sizeof(struct sqfs_disk_super);
	uint8_t buf[SQFS_META_SIZE];
	uint8_t raw[256];
	uint8_t hdr[SQFS_META_HDR];
	size_t stored, n;
	uint16_t h;
	int err;

	img->data_start = pos;
	if (!(img->sb.flags & SQFS_FLAG_COMP_OPTS))
		return 0; /* the codec's defaults */
	err = img__read(img, NULL, pos, hdr, sizeof(hdr));
	if (err)
		return err;
	h = le16_get(hdr);
	stored = h & SQFS_META_LEN_MASK;
	if (stored == 0 || stored > sizeof(raw))
		return IMG_CORRUPT(
			img, "compressor options block has length %zu", stored);
	img->data_start = pos + SQFS_META_HDR + stored;
	err = img__read(img, NULL, pos + SQFS_META_HDR, raw, stored);
	if (err)
		return err;
	if (h & SQFS_META_UNCOMPRESSED) {
		memcpy(buf, raw, stored);
		n = stored;
	} else {
		err = dec_decompress(img->codec, raw, stored, buf, sizeof(buf),
				     &n);
		if (err)
			return err == -ENOMEM ?
				       err :
				       IMG_CORRUPT(
					       img,
					       "compressor options block does not decompress");
	}
	err = dec_check_options(img->codec, buf, n);
	if (err == -ENOTSUP)
		log_err("'%s' uses %s options that this build cannot read",
			img->path, dec_name(img->codec));
	else if (err)
		err = IMG_CORRUPT(img, "bad %s compressor options",
				  dec_name(img->codec));
	return err;
}

/*
 * The xattr id table and where the xattr key/value blocks lie, if the
 * image has xattrs.  @next: the start of the tables after them; lowered to
 * where these begin.
 */
static int load_xattr_tables(struct img *img, uint64_t *next)
{
	struct img_super *sb = &img->sb;
	struct sqfs_disk_xattr_table xt;
	uint64_t end;
	int err;

	if (sb->xattr_table == SQFS_INVALID_BLK)
		return 0;
	if (ckd_add(&end, sb->xattr_table, sizeof(xt)) || end > *next)
		return IMG_CORRUPT(img, "xattr table at %llu is misplaced",
				   (unsigned long long)sb->xattr_table);
	err = img__read(img, NULL, sb->xattr_table, &xt, sizeof(xt));
	if (err)
		return err;
	img->xattr_ids.count = le32_dec(xt.count);
	img->xattr_ids.entry_size = sizeof(struct sqfs_disk_xattr_id);
	img->xattr_kv.start = le64_dec(xt.kv_start);
	err = img__table_load(img, &img->xattr_ids, end, *next, "xattr id");
	if (err)
		return err;
	img->xattr_kv.end = img->xattr_ids.blocks[0];
	if (img->xattr_kv.start < sb->dir_table ||
	    img->xattr_kv.start >= img->xattr_kv.end)
		return IMG_CORRUPT(
			img, "xattr key/value blocks at %llu are misplaced",
			(unsigned long long)img->xattr_kv.start);
	*next = img->xattr_kv.start;
	return 0;
}

/*
 * The id table, decoded whole into img->ids (it is small and every inode
 * needs it).  @next: as for load_xattr_tables().
 */
static int load_ids(struct img *img, uint64_t *next)
{
	struct img_super *sb = &img->sb;
	struct img_table ids = { .count = sb->id_count, .entry_size = 4 };
	struct img_region rg;
	uint64_t block;
	uint32_t off = 0;
	uint8_t *raw;
	int err;

	err = img__table_load(img, &ids, sb->id_table, *next, "id");
	if (err)
		return err;
	*next = ids.blocks[0];
	raw = malloc((size_t)sb->id_count * 4);
	img->ids = calloc(sb->id_count, sizeof(*img->ids));
	if (!raw || !img->ids) {
		free(raw);
		img__table_release(&ids);
		return -ENOMEM;
	}
	/* The blocks are contiguous: read the ids as one run. */
	rg.start = ids.blocks[0];
	rg.end = sb->id_table;
	block = ids.blocks[0];
	err = img__meta_read(img, NULL, &rg, &block, &off, raw,
			     (size_t)sb->id_count * 4);
	for (uint32_t i = 0; !err && i < sb->id_count; i++)
		img->ids[i] = le32_get(raw + 4 * i);
	free(raw);
	img__table_release(&ids);
	return err;
}

/* The tables, from the end of the image back; see the file comment. */
static int load_tables(struct img *img)
{
	struct img_super *sb = &img->sb;
	uint64_t next = sb->bytes_used;
	uint64_t bound;
	int err;

	if (sb->inode_table < img->data_start ||
	    sb->dir_table <= sb->inode_table || sb->dir_table >= next)
		return IMG_CORRUPT(
			img,
			"inode table at %llu and directory table at %llu are misplaced",
			(unsigned long long)sb->inode_table,
			(unsigned long long)sb->dir_table);

	/* A decoded inode is at least 20 bytes and each stored block of at
	 * least 3 bytes decodes to at most 8 KiB. */
	bound = (sb->dir_table - sb->inode_table + 2) / 3 * SQFS_META_SIZE /
		sizeof(struct sqfs_disk_ipc);
	if (sb->inode_count > bound)
		return IMG_CORRUPT(
			img,
			"inode count %u cannot fit in an inode table of %llu bytes",
			sb->inode_count,
			(unsigned long long)(sb->dir_table - sb->inode_table));

	err = load_xattr_tables(img, &next);
	if (!err)
		err = load_ids(img, &next);
	if (err)
		return err;

	if (sb->export_table != SQFS_INVALID_BLK) {
		img->exports.count = sb->inode_count;
		img->exports.entry_size = 8;
		err = img__table_load(img, &img->exports, sb->export_table,
				      next, "export");
		if (err)
			return err;
		next = img->exports.blocks[0];
	}

	if (sb->frag_count) {
		img->frags.count = sb->frag_count;
		img->frags.entry_size = sizeof(struct sqfs_disk_frag);
		err = img__table_load(img, &img->frags, sb->frag_table, next,
				      "fragment");
		if (err)
			return err;
		next = img->frags.blocks[0];
	}

	if (sb->dir_table >= next)
		return IMG_CORRUPT(
			img,
			"directory table at %llu overlaps the tables after it at %llu",
			(unsigned long long)sb->dir_table,
			(unsigned long long)next);
	img->dir_end = next;
	return 0;
}

uint64_t img_meta_budget(const struct img_super *sb, uint64_t max)
{
	const uint64_t after[] = { sb->frag_table, sb->export_table,
				   sb->id_table, sb->xattr_table };
	uint64_t end = sb->bytes_used;
	uint64_t stored = 0;
	uint64_t want;
	size_t i;

	/* The tables are checked only once this cache exists to read them:
	 * here an offset out of place gives a smaller or larger budget within
	 * the bounds, never more. */
	for (i = 0; i < sizeof(after) / sizeof(after[0]); i++)
		if (after[i] > sb->dir_table && after[i] < end)
			end = after[i];
	if (sb->inode_table < sb->dir_table && sb->dir_table < end)
		stored = end - sb->inode_table;
	max = MAX(max, IMG_META_MIN);
	/* and a third more: the block maps' quarter of the whole */
	if (ckd_mul(&want, stored, IMG_META_RATIO) ||
	    ckd_add(&want, want, want / 3))
		return max;
	return MIN(MAX(want, IMG_META_MIN), max);
}

static int make_caches(struct img *img, const struct img_opts *o)
{
	uint64_t total = o->meta_cache ? o->meta_cache :
					 img_meta_budget(&img->sb, o->meta_max);
	uint64_t meta = total - total / 4;
	uint64_t bmap = total / 4;

	img->meta = cache_new("meta", (size_t)meta, 8 + SQFS_META_SIZE);
	img->data =
		cache_new("data", (size_t)o->data_cache, img->sb.block_size);
	img->bmap = cache_new("bmap", (size_t)bmap, 64 << 10);
	if (!img->meta || !img->data || !img->bmap)
		return -ENOMEM;
	return 0;
}

int img_open(const char *path, const struct img_opts *opts, struct img **out)
{
	struct img_opts defaults;
	struct img_inode root;
	struct img *img;
	int err;

	if (!opts) {
		img_opts_default(&defaults);
		opts = &defaults;
	}
	img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	img->fd = -1;
	img->dio_fd = -1;
	img->offset = opts->offset;
	img->path = strdup(path);
	if (!img->path) {
		err = -ENOMEM;
		goto out_close;
	}
	err = open_file(img);
	if (err)
		goto out_close;
	/* Before the first read: the superblock is checked too. */
	err = img__seal_open(img, opts);
	if (err)
		goto out_close;
	err = decode_super(img);
	if (!err)
		err = img__seal_match(img);
	if (err)
		goto out_close;
	/* Before the tables are read: their chunks are staged as they are
	 * read, so that no byte but the superblock's is read twice. */
	err = img__stage_open(img, opts);
	if (err)
		goto out_close;
	/* The metadata cache is needed to read the options and tables. */
	err = make_caches(img, opts);
	if (err)
		goto out_close;
	err = read_comp_opts(img);
	if (err)
		goto out_close;
	err = load_tables(img);
	if (err)
		goto out_close;
	err = img_inode_get(img, img->sb.root_ref, &root);
	if (err)
		goto out_close;
	if (root.type != IMG_DIR) {
		err = IMG_CORRUPT(img, "root inode is not a directory");
		goto out_close;
	}
	*out = img;
	return 0;

out_close:
	img_close(img);
	return err;
}

void img_close(struct img *img)
{
	if (!img)
		return;
	/* Its threads read the image: gone before anything else. */
	if (img->window.release)
		img->window.release(img->window.arg);
	stage_free(img->stage);
	cache_free(img->meta);
	cache_free(img->data);
	cache_free(img->bmap);
	img__table_release(&img->frags);
	img__table_release(&img->exports);
	img__table_release(&img->xattr_ids);
	free(img->ids);
	img__seal_close(img);
	if (img->dio_fd >= 0)
		close(img->dio_fd);
	if (img->fd >= 0)
		close(img->fd);
	free(img->path);
	free(img);
}

const struct img_super *img_get_super(const struct img *img)
{
	return &img->sb;
}

const char *img_compressor(const struct img *img)
{
	return dec_name(img->codec);
}

const char *img_path(const struct img *img)
{
	return img->path;
}

bool img_has_xattrs(const struct img *img)
{
	return img->xattr_ids.count > 0;
}

void img_get_stats(struct img *img, struct img_stats *out)
{
	memset(out, 0, sizeof(*out));
	cache_get_stats(img->meta, &out->meta);
	cache_get_stats(img->data, &out->data);
	cache_get_stats(img->bmap, &out->bmap);
	out->image_bytes = img->sb.bytes_used;
	out->in_ram = img->in_ram;
	out->src_reads = atomic_load(&img->src_reads);
	out->src_bytes = atomic_load(&img->src_bytes);
	for (int i = 0; i < IMG_READ__COUNT; i++)
		out->src_by[i] = atomic_load(&img->src_by[i]);
	out->src_errors = atomic_load(&img->src_errors);
	out->src_direct = atomic_load(&img->src_direct);
	out->direct = img->dio_fd >= 0 && !atomic_load(&img->dio_refused);
	out->direct_refused = atomic_load(&img->dio_refused);
	out->direct_err = img->dio_err;
	out->decompressions = atomic_load(&img->decompressions);
	out->decompressed_bytes = atomic_load(&img->decompressed_bytes);
	out->corrupt = atomic_load(&img->corrupt);
	out->seal_bad_reads = atomic_load(&img->seal_bad_reads);
	out->seal_bad_staged = atomic_load(&img->seal_bad_staged);
}

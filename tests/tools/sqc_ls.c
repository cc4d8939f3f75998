// SPDX-License-Identifier: MIT
/*
 * This file implements sqc_ls, a test tool that lists everything in a
 * SquashFS image through libsquashcache alone (no FUSE), one line per
 * entry, in the same format as tests/images/fsls.py prints for a mounted
 * tree, so that the library can be compared with the kernel's squashfs:
 *
 *   path type mode uid gid size mtime nlink rdev content xattrs
 *
 * content is the CRC-32 of a file's bytes or the symlink target; names are
 * escaped as \xHH outside printable ASCII.  Directories are sorted by name.
 *
 *   sqc_ls IMAGE [--no-xattrs] [--check]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <zlib.h>

#include "image/image.h"
#include "util/err.h"

static bool no_xattrs;

static void put_escaped(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c > 32 && c < 127 && c != '\\')
			putchar(c);
		else
			printf("\\x%02x", c);
	}
}

static int print_xattrs(struct img *img, const struct img_inode *ino)
{
	char *list, *names[512];
	unsigned char *val;
	size_t len, vlen, n = 0;
	int err;

	if (no_xattrs)
		return 0;
	err = img_xattr_list(img, ino, NULL, 0, &len);
	if (err)
		return err;
	list = malloc(len + 1);
	val = malloc(65536);
	if (!list || !val)
		return -ENOMEM;
	err = img_xattr_list(img, ino, list, len + 1, &len);
	for (size_t p = 0; !err && p < len && n < 512;
	     p += strlen(list + p) + 1)
		names[n++] = list + p;
	/* simple insertion sort by name */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0;
		     j--) {
			char *t = names[j];

			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	putchar(' ');
	if (!n)
		putchar('-');
	for (size_t i = 0; !err && i < n; i++) {
		err = img_xattr_get(img, ino, names[i], val, 65536, &vlen);
		if (err)
			break;
		printf("%s%s=", i ? ";" : "", names[i]);
		for (size_t k = 0; k < vlen; k++)
			printf("%02x", val[k]);
	}
	free(list);
	free(val);
	return err;
}

static int print_entry(struct img *img, const char *path,
		       const struct img_inode *ino)
{
	static const char *const tname[] = { "?",   "dir", "reg",  "lnk",
					     "blk", "chr", "fifo", "sock" };
	char target[IMG_SYMLINK_MAX + 1];
	uint32_t crc = 0;
	int err = 0;

	put_escaped(path, strlen(path));
	printf(" %s %04o %u %u %llu %u %u %u:%u", tname[ino->type],
	       ino->mode & 07777, ino->uid, ino->gid,
	       ino->type == IMG_DIR ? 0ull : (unsigned long long)ino->size,
	       ino->mtime, ino->type == IMG_DIR ? 0 : ino->nlink,
	       (ino->type == IMG_BLKDEV || ino->type == IMG_CHRDEV) ?
		       major(ino->rdev) :
		       0,
	       (ino->type == IMG_BLKDEV || ino->type == IMG_CHRDEV) ?
		       minor(ino->rdev) :
		       0);
	if (ino->type == IMG_REG) {
		struct img_span sp[32];
		uint64_t off = 0;
		unsigned int n;

		crc = (uint32_t)crc32(0, NULL, 0);
		while (off < ino->size) {
			err = img_file_spans(img, NULL, ino, off, 1 << 20, sp,
					     32, &n);
			if (err || !n)
				break;
			for (unsigned int i = 0; i < n; i++) {
				crc = (uint32_t)crc32(crc, sp[i].data,
						      (uInt)sp[i].len);
				off += sp[i].len;
			}
			img_spans_put(img, sp, n);
		}
		if (!err && off != ino->size)
			err = -EIO;
		printf(" %08x", crc);
	} else if (ino->type == IMG_SYMLINK) {
		err = img_readlink(img, ino, target, sizeof(target));
		putchar(' ');
		if (!err)
			put_escaped(target, strlen(target));
	} else {
		printf(" -");
	}
	if (!err)
		err = print_xattrs(img, ino);
	putchar('\n');
	return err;
}

struct name {
	char name[IMG_NAME_MAX + 1];
	uint64_t ref;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct name *)a)->name,
		      ((const struct name *)b)->name);
}

static int walk(struct img *img, const char *path, const struct img_inode *dir,
		unsigned int depth)
{
	struct img_dir_iter it;
	struct img_dirent de;
	struct name *v = NULL;
	size_t n = 0, cap = 0;
	int err;

	/* A damaged image can hold a directory loop. */
	if (depth > 256)
		return -ELOOP;
	err = img_dir_open(img, dir, 0, &it);
	while (!err && (err = img_dir_next(&it, &de)) == 1) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
		}
		memcpy(v[n].name, de.name, de.name_len + 1);
		v[n].ref = de.ref;
		n++;
		err = 0;
	}
	if (err < 0)
		goto out;
	err = 0;
	qsort(v, n, sizeof(*v), cmp_name);
	for (size_t i = 0; i < n && !err; i++) {
		struct img_inode ino;
		char *sub;

		if (asprintf(&sub, "%s/%s", path, v[i].name) < 0) {
			err = -ENOMEM;
			break;
		}
		err = img_inode_get(img, v[i].ref, &ino);
		if (!err)
			err = print_entry(img, sub, &ino);
		if (!err && ino.type == IMG_DIR)
			err = walk(img, sub, &ino, depth + 1);
		if (err)
			fprintf(stderr, "sqc_ls: %s: %s\n", sub, err_str(err));
		free(sub);
	}
out:
	free(v);
	return err;
}

int main(int argc, char **argv)
{
	struct img_check_report rep;
	struct img_inode root;
	struct img *img;
	bool check = false;
	int err;

	if (argc < 2) {
		fprintf(stderr,
			"usage: sqc_ls IMAGE [--no-xattrs] [--check]\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--no-xattrs"))
			no_xattrs = true;
		else if (!strcmp(argv[i], "--check"))
			check = true;
	}
	err = img_open(argv[1], NULL, &img);
	if (err) {
		fprintf(stderr, "sqc_ls: %s: %s\n", argv[1], err_str(err));
		return 1;
	}
	if (check) {
		err = img_check(img, &rep, 0);
		fprintf(stderr,
			"check: %llu inodes, %llu dirs, %llu files (%llu bytes), %llu symlinks, %llu xattrs, %llu errors\n",
			(unsigned long long)rep.inodes,
			(unsigned long long)rep.dirs,
			(unsigned long long)rep.files,
			(unsigned long long)rep.file_bytes,
			(unsigned long long)rep.symlinks,
			(unsigned long long)rep.xattrs,
			(unsigned long long)rep.errors);
		img_close(img);
		return err ? 1 : 0;
	}
	err = img_inode_get(img, img_get_super(img)->root_ref, &root);
	if (!err)
		err = print_entry(img, ".", &root);
	if (!err)
		err = walk(img, ".", &root, 0);
	img_close(img);
	return err ? 1 : 0;
}

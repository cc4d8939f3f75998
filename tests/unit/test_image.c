// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/image against real images:
 * main() builds a source tree and packs it with mksquashfs under several
 * compressors and options, and every test compares what the reader returns
 * with the source tree itself (lstat, file bytes, xattrs, link targets).
 *
 * The "matrix" cases pack tests/images/mktree.py's standard tree (every
 * kind of entry) with every compressor at every block size and with each
 * mksquashfs option that changes the layout, and compare the whole image,
 * read through lib/image alone, with the source: names, type and mode,
 * owner, mtime, size, nlink, device numbers, symlink targets, xattrs,
 * every byte, and which names share an inode.  One FUSE mount per
 * compressor, compared with the kernel's squashfs too, is
 * tests/integration/020's.  SQC_QUICK=1 (the sanitizer run) keeps one
 * block size per compressor and the options that change the layout.
 *
 * Cases tagged "threads" run threads (TSan runs those only).
 */
/* TSAN: yes */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "image/image.h"
#include "seal/seal.h"
#include "util/log.h"
#include "util/compiler.h"
#include "util/err.h"

#include "fixture.h"

static char workdir[PATH_MAX / 4]; /* short: paths are built from it */
static char srcdir[PATH_MAX / 4 + 8];

struct variant {
	const char *name;
	const char *args;
};

/* Every compressor, and the options that change the layout. */
static const struct variant variants[] = {
	{ "zstd-4k", "-comp zstd -b 4K" },
	{ "gzip", "-comp gzip" },
	{ "lz4-raw", "-comp lz4 -noI -noD -noF -noX" },
	{ "xz-nofrag", "-comp xz -no-fragments" },
	{ "lzo-always", "-comp lzo -always-use-fragments -b 64K" },
	{ "lz4hc-1m", "-comp lz4 -Xhc -b 1M" },
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

static void image_path(unsigned int v, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s.sqfs", workdir, variants[v].name);
}

static void write_random(const char *path, size_t size, unsigned int seed)
{
	FILE *f = fopen(path, "w");

	if (!f)
		exit(1);
	srand(seed);
	for (size_t i = 0; i < size; i++)
		fputc(seed & 1 ? rand() & 0xff : (int)('a' + i % 23), f);
	fclose(f);
}

static void build_fixture(void)
{
	char p[PATH_MAX + 64];
	const char *tmp = getenv("TMPDIR");

	snprintf(workdir, sizeof(workdir), "%s/sqc-test-image.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(workdir))
		exit(1);
	snprintf(srcdir, sizeof(srcdir), "%s/src", workdir);
	sh("mkdir -p '%s/d1/d2/d3' '%s/big' '%s/empty'", srcdir, srcdir,
	   srcdir);
	snprintf(p, sizeof(p), "%s/rand1m", srcdir);
	write_random(p, 1 << 20, 7);
	snprintf(p, sizeof(p), "%s/text300k", srcdir);
	write_random(p, 300000, 8);
	snprintf(p, sizeof(p), "%s/d1/small", srcdir);
	write_random(p, 1000, 9);
	snprintf(p, sizeof(p), "%s/d1/d2/edge4096", srcdir);
	write_random(p, 4096, 11);
	sh("cd '%s' && : > zero && truncate -s 3M sparse && "
	   "printf tail >> sparse && ln d1/small d1/d2/hard && "
	   "ln d1/small hard2 && ln -s d1/small rel && "
	   "ln -s /etc/nonexistent/target abs && mknod chr c 300 70000 && "
	   "mknod blk b 8 1 && mkfifo fifo && chmod 4751 rand1m && "
	   /* Extended device and fifo inodes: the ones with an xattr. */
	   "mknod xchr c 4 5 && setfattr -n trusted.d -v dev xchr && "
	   "mkfifo xfifo && setfattr -n trusted.f -v fifo xfifo && "
	   "ln xfifo xfifo2 && "
	   "chown 1000:100000 text300k && touch -d @1234567 d1/small && "
	   "setfattr -n user.small -v hello d1/small && "
	   "setfattr -n trusted.t -v 0x00ff00 rand1m && "
	   "v=$(head -c 3000 /dev/zero | tr '\\\\0' q) && "
	   "setfattr -n user.big -v \"$v\" text300k && "
	   "setfattr -n user.big -v \"$v\" rand1m && "
	   "setfattr -n security.s -v sec d1",
	   srcdir);
	/* A directory large enough to need an index. */
	sh("cd '%s/big' && i=0; while [ $i -lt 3000 ]; do "
	   ": > entry-$i-with-a-longer-name; i=$((i+1)); done",
	   srcdir);
	for (unsigned int v = 0; v < NVARIANTS; v++) {
		image_path(v, p, sizeof(p));
		sh("mksquashfs '%s' '%s' %s -noappend -no-progress -quiet "
		   ">/dev/null",
		   srcdir, p, variants[v].args);
	}
}

static struct img *open_variant(unsigned int v, enum stage_mode stage,
				uint64_t ram)
{
	struct img_opts o;
	struct img *img;
	char p[PATH_MAX];
	int err;

	img_opts_default(&o);
	o.stage = stage;
	o.ram = ram;
	image_path(v, p, sizeof(p));
	err = img_open(p, &o, &img);
	ck_assert_msg(err == 0, "img_open(%s): %s", p, err_str(err));
	return img;
}

static void root_inode(struct img *img, struct img_inode *root)
{
	ck_assert_int_eq(img_inode_get(img, img_get_super(img)->root_ref, root),
			 0);
	ck_assert_int_eq(root->type, IMG_DIR);
}

/* Resolve a path inside the image by lookups from the root. */
static int resolve(struct img *img, const char *path, struct img_inode *out)
{
	char buf[PATH_MAX], *save, *part;
	struct img_dirent de;
	int err;

	root_inode(img, out);
	snprintf(buf, sizeof(buf), "%s", path);
	for (part = strtok_r(buf, "/", &save); part;
	     part = strtok_r(NULL, "/", &save)) {
		err = img_dir_lookup(img, out, part, strlen(part), &de);
		if (err)
			return err;
		err = img_inode_get(img, de.ref, out);
		if (err)
			return err;
	}
	return 0;
}

static void compare_file(struct img *img, const struct img_inode *ino,
			 const char *src, unsigned int seed)
{
	size_t size = (size_t)ino->size, got;
	uint8_t *want = malloc(size + 1), *have = malloc(size + 1);
	FILE *f = fopen(src, "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(want, 1, size, f), size);
	fclose(f);
	/* Whole, then random pieces (crossing blocks and the tail). */
	ck_assert_int_eq(img_file_read(img, NULL, ino, 0, have, size + 1, &got),
			 0);
	ck_assert_uint_eq(got, size);
	ck_assert(memcmp(want, have, size) == 0);
	srand(seed);
	for (int i = 0; i < 200 && size; i++) {
		size_t off = (size_t)rand() % size;
		size_t len = (size_t)rand() % (size - off + 1);

		ck_assert_int_eq(
			img_file_read(img, NULL, ino, off, have, len, &got), 0);
		ck_assert_uint_eq(got, len);
		ck_assert_msg(memcmp(want + off, have, len) == 0,
			      "%s: bytes differ at %zu+%zu", src, off, len);
	}
	/* Past the end: nothing. */
	ck_assert_int_eq(
		img_file_read(img, NULL, ino, size + 10, have, 5, &got), 0);
	ck_assert_uint_eq(got, 0);
	free(want);
	free(have);
}

static void compare_xattrs(struct img *img, const struct img_inode *ino,
			   const char *src, bool expect)
{
	char names[4096], value[8192], want[8192];
	size_t len, vlen;
	ssize_t slen, n;

	ck_assert_int_eq(img_xattr_list(img, ino, NULL, 0, &len), 0);
	slen = llistxattr(src, NULL, 0);
	if (!expect) {
		ck_assert_uint_eq(len, 0);
		return;
	}
	ck_assert_int_ge(slen, 0);
	ck_assert_uint_eq(len, (size_t)slen);
	ck_assert_int_eq(img_xattr_list(img, ino, names, sizeof(names), &len),
			 0);
	for (size_t p = 0; p < len; p += strlen(names + p) + 1) {
		n = lgetxattr(src, names + p, want, sizeof(want));
		ck_assert_int_ge(n, 0);
		ck_assert_int_eq(img_xattr_get(img, ino, names + p, value,
					       sizeof(value), &vlen),
				 0);
		ck_assert_uint_eq(vlen, (size_t)n);
		ck_assert(memcmp(value, want, vlen) == 0);
		/* Size query and too small a buffer. */
		ck_assert_int_eq(
			img_xattr_get(img, ino, names + p, NULL, 0, &vlen), 0);
		ck_assert_uint_eq(vlen, (size_t)n);
		if (n > 1)
			ck_assert_int_eq(img_xattr_get(img, ino, names + p,
						       value, 1, &vlen),
					 -ERANGE);
	}
	ck_assert_int_eq(img_xattr_get(img, ino, "user.absent", value,
				       sizeof(value), &vlen),
			 -ENODATA);
	if (len > 1)
		ck_assert_int_eq(img_xattr_list(img, ino, names, 1, &len),
				 -ERANGE);
}

/* Compare one inode with its source path. */
static void compare_entry(struct img *img, const struct img_inode *ino,
			  const char *src, bool xattrs)
{
	char target[PATH_MAX], got[IMG_SYMLINK_MAX + 1];
	struct stat st;
	ssize_t n;

	ck_assert_int_eq(lstat(src, &st), 0);
	ck_assert_uint_eq(ino->mode, st.st_mode);
	ck_assert_uint_eq(ino->uid, st.st_uid);
	ck_assert_uint_eq(ino->gid, st.st_gid);
	ck_assert_uint_eq(ino->mtime, (uint32_t)st.st_mtime);
	if (!S_ISDIR(st.st_mode)) {
		ck_assert_uint_eq(ino->nlink, st.st_nlink);
		ck_assert_uint_eq(ino->size,
				  S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) ?
					  (uint64_t)st.st_size :
					  0);
	}
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		ck_assert_uint_eq(major(ino->rdev), major(st.st_rdev));
		ck_assert_uint_eq(minor(ino->rdev), minor(st.st_rdev));
	}
	if (S_ISLNK(st.st_mode)) {
		n = readlink(src, target, sizeof(target) - 1);
		ck_assert_int_gt(n, 0);
		target[n] = '\0';
		ck_assert_int_eq(img_readlink(img, ino, got, sizeof(got)), 0);
		ck_assert_str_eq(got, target);
		ck_assert_int_eq(img_readlink(img, ino, got, (size_t)n),
				 -ERANGE);
	}
	if (S_ISREG(st.st_mode))
		compare_file(img, ino, src, (unsigned int)st.st_ino);
	if (!S_ISLNK(st.st_mode))
		compare_xattrs(img, ino, src, xattrs);
}

/* Walk the whole image, comparing with the source; returns entries. */
static unsigned int walk(struct img *img, const struct img_inode *dir,
			 const char *src, bool xattrs)
{
	struct img_dir_iter it;
	struct img_dirent de;
	struct img_inode ino;
	unsigned int n = 0;
	char sub[PATH_MAX];
	int err;

	ck_assert_int_eq(img_dir_open(img, dir, 0, &it), 0);
	while ((err = img_dir_next(&it, &de)) == 1) {
		snprintf(sub, sizeof(sub), "%s/%s", src, de.name);
		ck_assert_int_eq(img_inode_get(img, de.ref, &ino), 0);
		ck_assert_uint_eq(ino.ino, de.ino);
		ck_assert_uint_eq(ino.type, de.type);
		ck_assert_uint_eq(img_type_mode(de.type), ino.mode & S_IFMT);
		compare_entry(img, &ino, sub, xattrs);
		n++;
		if (ino.type == IMG_DIR)
			n += walk(img, &ino, sub, xattrs);
	}
	ck_assert_int_eq(err, 0);
	return n;
}

static unsigned int count_tree(const char *path)
{
	char sub[PATH_MAX];
	struct dirent *d;
	unsigned int n = 0;
	DIR *dp = opendir(path);

	while (dp && (d = readdir(dp))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		n++;
		if (d->d_type == DT_DIR) {
			snprintf(sub, sizeof(sub), "%s/%s", path, d->d_name);
			n += count_tree(sub);
		}
	}
	if (dp)
		closedir(dp);
	return n;
}

START_TEST(test_type_mode)
{
	ck_assert_uint_eq(img_type_mode(IMG_DIR), S_IFDIR);
	ck_assert_uint_eq(img_type_mode(IMG_REG), S_IFREG);
	ck_assert_uint_eq(img_type_mode(IMG_SYMLINK), S_IFLNK);
	ck_assert_uint_eq(img_type_mode(IMG_BLKDEV), S_IFBLK);
	ck_assert_uint_eq(img_type_mode(IMG_CHRDEV), S_IFCHR);
	ck_assert_uint_eq(img_type_mode(IMG_FIFO), S_IFIFO);
	ck_assert_uint_eq(img_type_mode(IMG_SOCKET), S_IFSOCK);
	ck_assert_uint_eq(img_type_mode(0), 0);
	ck_assert_uint_eq(img_type_mode(8), 0);
	ck_assert_uint_eq(img_type_mode(~0u), 0);
}
END_TEST

START_TEST(test_whole_tree)
{
	struct img_inode root;
	struct img *img = open_variant((unsigned int)_i, STAGE_NONE, 0);

	root_inode(img, &root);
	compare_entry(img, &root, srcdir, true);
	ck_assert_uint_eq(walk(img, &root, srcdir, true), count_tree(srcdir));
	img_close(img);
}
END_TEST

START_TEST(test_check_sound)
{
	struct img *img = open_variant((unsigned int)_i, STAGE_NONE, 0);
	struct img_check_report rep;

	ck_assert_int_eq(img_check(img, &rep, 0), 0);
	ck_assert_uint_eq(rep.errors, 0);
	ck_assert_uint_eq(rep.inodes, img_get_super(img)->inode_count);
	ck_assert_uint_ge(rep.files, 3000);
	ck_assert_uint_eq(rep.symlinks, 2);
	img_close(img);
}
END_TEST

START_TEST(test_lookup)
{
	struct img *img = open_variant((unsigned int)_i, STAGE_NONE, 0);
	struct img_inode ino, big;
	struct img_dirent de;
	char name[64];

	ck_assert_int_eq(resolve(img, "d1/d2/hard", &ino), 0);
	ck_assert_uint_eq(ino.nlink, 3);
	ck_assert_int_eq(resolve(img, "d1/small", &big), 0);
	ck_assert_uint_eq(ino.ref, big.ref); /* hard links share an inode */
	ck_assert_int_eq(resolve(img, "d1/nope", &ino), -ENOENT);
	ck_assert_int_eq(resolve(img, "rand1m/x", &ino), -ENOTDIR);
	ck_assert_int_eq(resolve(img, "big", &big), 0);
	for (int i = 0; i < 3000; i += 7) {
		snprintf(name, sizeof(name), "entry-%d-with-a-longer-name", i);
		ck_assert_int_eq(
			img_dir_lookup(img, &big, name, strlen(name), &de), 0);
		ck_assert_str_eq(de.name, name);
	}
	/* Absent names sorting before, between and after the entries. */
	ck_assert_int_eq(img_dir_lookup(img, &big, "a", 1, &de), -ENOENT);
	ck_assert_int_eq(img_dir_lookup(img, &big, "entry-5", 7, &de), -ENOENT);
	ck_assert_int_eq(img_dir_lookup(img, &big, "zzz", 3, &de), -ENOENT);
	memset(name, 'x', sizeof(name));
	ck_assert_int_eq(img_dir_lookup(img, &big, name, 300, &de),
			 -ENAMETOOLONG);
	img_close(img);
}
END_TEST

static uint64_t meta_gets(struct img *img)
{
	struct img_stats st;

	img_get_stats(img, &st);
	return st.meta.hits + st.meta.misses + st.meta.waits;
}

/* The directory index keeps a lookup from scanning the whole listing. */
START_TEST(test_lookup_uses_index)
{
	struct img *img = open_variant((unsigned int)_i, STAGE_NONE, 0);
	struct img_dir_iter it;
	struct img_inode big;
	struct img_dirent de;
	uint64_t before, scan, look;
	const char *last = "entry-999-with-a-longer-name";

	ck_assert_int_eq(resolve(img, "big", &big), 0);
	ck_assert_uint_gt(big.dir.idx_count, 1);
	before = meta_gets(img);
	ck_assert_int_eq(img_dir_open(img, &big, 0, &it), 0);
	while (img_dir_next(&it, &de) == 1)
		;
	scan = meta_gets(img) - before;
	before = meta_gets(img);
	ck_assert_int_eq(img_dir_lookup(img, &big, last, strlen(last), &de), 0);
	look = meta_gets(img) - before;
	ck_assert_msg(look * 4 < scan,
		      "lookup read %llu metadata pieces, a full scan %llu",
		      (unsigned long long)look, (unsigned long long)scan);
	img_close(img);
}
END_TEST

START_TEST(test_readdir_resume)
{
	struct img *img = open_variant((unsigned int)_i, STAGE_NONE, 0);
	static struct img_dirent all[3001];
	struct img_dir_iter it;
	struct img_inode big;
	struct img_dirent de;
	unsigned int n = 0, k, j;

	ck_assert_int_eq(resolve(img, "big", &big), 0);
	ck_assert_int_eq(img_dir_open(img, &big, 0, &it), 0);
	while (n < 3001 && img_dir_next(&it, &all[n]) == 1)
		n++;
	ck_assert_uint_eq(n, 3000);
	for (k = 0; k < n; k += 97) {
		ck_assert_int_eq(img_dir_open(img, &big, all[k].next, &it), 0);
		for (j = k + 1; j < n && j < k + 300; j++) {
			ck_assert_int_eq(img_dir_next(&it, &de), 1);
			ck_assert_str_eq(de.name, all[j].name);
			ck_assert_uint_eq(de.next, all[j].next);
		}
	}
	/* The cookie after the last entry is the end. */
	ck_assert_int_eq(img_dir_open(img, &big, all[n - 1].next, &it), 0);
	ck_assert_int_eq(img_dir_next(&it, &de), 0);
	img_close(img);
}
END_TEST

START_TEST(test_sparse_spans)
{
	struct img *img = open_variant((unsigned int)_i, STAGE_NONE, 0);
	struct img_span sp[8];
	struct img_inode ino;
	unsigned int n;

	ck_assert_int_eq(resolve(img, "sparse", &ino), 0);
	ck_assert_uint_eq(ino.size, 3 * 1024 * 1024 + 4);
	ck_assert_int_eq(img_file_spans(img, NULL, &ino, 1000, 5000, sp, 8, &n),
			 0);
	ck_assert_uint_ge(n, 1);
	for (unsigned int i = 0; i < n; i++) {
		for (size_t b = 0; b < sp[i].len; b++)
			ck_assert_uint_eq(((const uint8_t *)sp[i].data)[b], 0);
	}
	img_spans_put(img, sp, n);
	/* max spans bounds the result; the bytes still add up. */
	ck_assert_int_eq(img_file_spans(img, NULL, &ino, 0, 3 << 20, sp, 1, &n),
			 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_le(sp[0].len, img_get_super(img)->block_size);
	img_spans_put(img, sp, n);
	img_close(img);
}
END_TEST

START_TEST(test_open_errors)
{
	char p[PATH_MAX + 32];
	struct img *img = NULL;
	FILE *f;

	snprintf(p, sizeof(p), "%s/absent", workdir);
	ck_assert_int_eq(img_open(p, NULL, &img), -ENOENT);
	ck_assert_int_eq(img_open(workdir, NULL, &img), -EISDIR);
	snprintf(p, sizeof(p), "%s/src/text300k", workdir);
	ck_assert_int_eq(img_open(p, NULL, &img), -EMEDIUMTYPE);
	snprintf(p, sizeof(p), "%s/empty-file", workdir);
	f = fopen(p, "w");
	fclose(f);
	ck_assert_int_eq(img_open(p, NULL, &img), -EMEDIUMTYPE);
	/* Truncated: bytes_used beyond the end of the file. */
	sh("head -c 20000 '%s/gzip.sqfs' > '%s/trunc.sqfs'", workdir, workdir);
	snprintf(p, sizeof(p), "%s/trunc.sqfs", workdir);
	ck_assert_int_eq(img_open(p, NULL, &img), -EFSCORRUPTED);
	/* Version 3 superblock. */
	sh("cp '%s/gzip.sqfs' '%s/v3.sqfs' && printf '\\003' | dd of='%s/v3.sqfs' "
	   "bs=1 seek=28 conv=notrunc status=none",
	   workdir, workdir, workdir);
	snprintf(p, sizeof(p), "%s/v3.sqfs", workdir);
	ck_assert_int_eq(img_open(p, NULL, &img), -ENOTSUP);
	/* Unknown compressor id. */
	sh("cp '%s/gzip.sqfs' '%s/c9.sqfs' && printf '\\011' | dd of='%s/c9.sqfs' "
	   "bs=1 seek=20 conv=notrunc status=none",
	   workdir, workdir, workdir);
	snprintf(p, sizeof(p), "%s/c9.sqfs", workdir);
	ck_assert_int_eq(img_open(p, NULL, &img), -ENOTSUP);
	ck_assert_ptr_null(img);
}
END_TEST

/* img_read_super(): the superblock alone, as img_open() reads it, and the
 * same refusals for what is not a sound one. */
static int read_super_of(const char *name, uint64_t offset,
			 struct img_super *sb)
{
	char p[PATH_MAX + 32];
	struct stat st;
	int fd, err;

	snprintf(p, sizeof(p), "%s/%s", workdir, name);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	err = img_read_super(fd, offset, (uint64_t)st.st_size, sb);
	close(fd);
	return err;
}

START_TEST(test_read_super)
{
	struct img *img = open_variant(0, STAGE_NONE, 0);
	struct img_super want_sb = *img_get_super(img);
	const struct img_super *want = &want_sb;
	char name[64];
	struct img_super sb;

	snprintf(name, sizeof(name), "%s.sqfs", variants[0].name);
	ck_assert_int_eq(read_super_of(name, 0, &sb), 0);
	ck_assert_uint_eq(sb.bytes_used, want->bytes_used);
	ck_assert_uint_eq(sb.inode_table, want->inode_table);
	ck_assert_uint_eq(sb.block_size, want->block_size);
	img_close(img);
	/* At an offset: 4 KiB of something before it. */
	sh("(head -c 4096 /dev/zero; cat '%s/%s') > '%s/at4k.sqfs'", workdir,
	   name, workdir);
	ck_assert_int_eq(read_super_of("at4k.sqfs", 4096, &sb), 0);
	ck_assert_uint_eq(sb.bytes_used, want->bytes_used);
	ck_assert_int_eq(read_super_of("at4k.sqfs", 0, &sb), -EMEDIUMTYPE);
	ck_assert_int_eq(read_super_of("at4k.sqfs", 1ull << 40, &sb),
			 -EMEDIUMTYPE);
	ck_assert_int_eq(read_super_of("src/text300k", 0, &sb), -EMEDIUMTYPE);
	sh("head -c 20000 '%s/%s' > '%s/trunc2.sqfs'", workdir, name, workdir);
	ck_assert_int_eq(read_super_of("trunc2.sqfs", 0, &sb), -EFSCORRUPTED);
	sh("cp '%s/%s' '%s/v3b.sqfs' && printf '\\003' | dd of='%s/v3b.sqfs' "
	   "bs=1 seek=28 conv=notrunc status=none",
	   workdir, name, workdir, workdir);
	ck_assert_int_eq(read_super_of("v3b.sqfs", 0, &sb), -ENOTSUP);
}
END_TEST

START_TEST(test_stage_full)
{
	struct img *img =
		open_variant((unsigned int)_i, STAGE_FULL, 1ull << 30);
	struct img_stats st;
	struct stage_stats ss;
	struct img_inode root;
	int n = 0;

	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_int_eq(ss.state, STAGE_IDLE);
	ck_assert_uint_eq(ss.planned, st.image_bytes);
	while (stage_next(img_stage(img)) == 1)
		n++;
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_int_eq(ss.state, STAGE_DONE);
	ck_assert_uint_eq(ss.staged, st.image_bytes);
	/* Each byte read once, by the stager or by the reads of the open
	 * (a small image is staged whole by them: n is 0 then); only the
	 * superblock, read before staging is set up, twice. */
	ck_assert_uint_le(st.src_bytes, st.image_bytes + 4096);
	ck_assert_uint_eq(st.src_by[IMG_READ_STAGER] +
				  st.src_by[IMG_READ_DEMAND],
			  st.src_bytes);
	if (n == 0)
		ck_assert_uint_eq(st.src_by[IMG_READ_STAGER], 0);
	else
		ck_assert_uint_gt(st.src_by[IMG_READ_STAGER], 0);
	/* From RAM now: the file is not read again. */
	root_inode(img, &root);
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	{
		uint64_t reads = st.src_reads;

		ck_assert_uint_eq(walk(img, &root, srcdir, true),
				  count_tree(srcdir));
		img_get_stats(img, &st);
		stage_get_stats(img_stage(img), &ss);
		ck_assert_uint_eq(st.src_reads, reads);
	}
	img_close(img);
}
END_TEST

/*
 * Staging reads with O_DIRECT where the file system takes it: every
 * chunk read but the image's last, unaligned page (src_direct), the tree
 * read back equal.  _i: 0 as is; 1 -o stage_cached; 2 the image 1000
 * bytes into its file (nothing aligned: all through the page cache); 3
 * 8 KiB into it (aligned again).
 */
START_TEST(test_stage_direct)
{
	static const uint64_t offsets[] = { 0, 0, 1000, 8192 };
	uint64_t off = offsets[_i];
	char p[PATH_MAX], file[PATH_MAX + 32];
	struct img_inode root;
	struct img_opts o;
	struct img_stats st;
	struct statfs sfs;
	struct img *img;
	bool takes;

	image_path(0, p, sizeof(p));
	snprintf(file, sizeof(file), "%s/direct-%d.sqfs", workdir, _i);
	sh("head -c %llu /dev/urandom >'%s' && cat '%s' >>'%s'",
	   (unsigned long long)off, file, p, file);
	img_opts_default(&o);
	o.stage = STAGE_FULL;
	o.ram = 1ull << 30;
	o.offset = off;
	o.stage_cached = _i == 1;
	ck_assert_int_eq(img_open(file, &o, &img), 0);
	while (stage_next(img_stage(img)) == 1)
		;
	root_inode(img, &root);
	ck_assert_uint_eq(walk(img, &root, srcdir, true), count_tree(srcdir));
	img_get_stats(img, &st);
	ck_assert_uint_le(st.src_bytes, st.image_bytes + 4096);
	/* File systems known to take O_DIRECT: there it must be used. */
	ck_assert_int_eq(statfs(file, &sfs), 0);
	takes = sfs.f_type == 0xEF53 /* ext2-4 */ ||
		sfs.f_type == 0x58465342 /* xfs */ ||
		sfs.f_type == 0x9123683E /* btrfs */;
	if (st.in_ram || _i == 1) {
		ck_assert(!st.direct);
		ck_assert_uint_eq(st.src_direct, 0);
	} else if (_i == 2) {
		ck_assert_uint_eq(st.src_direct, 0);
	} else {
		if (takes)
			ck_assert(st.direct);
		ck_assert_uint_eq(st.src_direct,
				  st.direct ? st.image_bytes & ~4095ull : 0);
	}
	img_close(img);
	unlink(file);
}
END_TEST

START_TEST(test_stage_budget)
{
	const uint64_t budget = 3u << 20;
	struct img *img = open_variant((unsigned int)_i, STAGE_FULL, budget);
	struct img_stats st;
	struct stage_stats ss;
	struct img_inode root;

	while (stage_next(img_stage(img)) == 1)
		;
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_uint_le(ss.planned, budget);
	ck_assert_uint_le(ss.staged, budget);
	ck_assert_uint_eq(ss.staged, ss.planned);
	root_inode(img, &root);
	ck_assert_uint_eq(walk(img, &root, srcdir, true), count_tree(srcdir));
	img_close(img);

	/* Metadata only: whole chunks from the inode table to the end. */
	img = open_variant((unsigned int)_i, STAGE_META, 1ull << 30);
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_uint_ge(ss.planned,
			  st.image_bytes - img_get_super(img)->inode_table);
	ck_assert_uint_le(ss.planned, st.image_bytes);
	while (stage_next(img_stage(img)) == 1)
		;
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_uint_eq(ss.staged, ss.planned);
	img_close(img);

	img = open_variant((unsigned int)_i, STAGE_NONE, 1ull << 30);
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_int_eq(ss.state, STAGE_OFF);
	ck_assert_int_eq(stage_next(img_stage(img)), 0);
	img_close(img);
}
END_TEST

/* stage_resume(): stage=none, then meta, then a small budget grown
 * to the whole image; what was staged stays, readers see the same tree. */
START_TEST(test_stage_resume)
{
	struct img *img =
		open_variant((unsigned int)_i, STAGE_NONE, 1ull << 30);
	struct img_stats st;
	struct stage_stats ss;
	struct img_inode root;
	uint64_t meta;

	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_int_eq(ss.state, STAGE_OFF);
	ck_assert_int_eq(stage_next(img_stage(img)), 0);
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_int_eq(ss.state, STAGE_OFF);
	ck_assert_int_eq(stage_resume(img_stage(img), STAGE_NONE, 1), -EINVAL);

	/* Metadata only. */
	ck_assert_int_eq(stage_resume(img_stage(img), STAGE_META, 1ull << 30),
			 0);
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_int_eq(ss.state, STAGE_IDLE);
	while (stage_next(img_stage(img)) == 1)
		;
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_int_eq(ss.state, STAGE_DONE);
	ck_assert_uint_gt(ss.staged, 0);
	ck_assert_uint_eq(ss.staged, ss.planned);
	ck_assert_uint_ge(ss.staged,
			  st.image_bytes - img_get_super(img)->inode_table);
	meta = ss.staged;

	/* A smaller budget does not shrink it; full mode brings the rest. */
	ck_assert_int_eq(stage_resume(img_stage(img), STAGE_FULL, 1), 0);
	root_inode(img, &root);
	while (stage_next(img_stage(img)) == 1)
		/* Readers run between chunks. */
		ck_assert_uint_eq(walk(img, &root, srcdir, true),
				  count_tree(srcdir));
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_int_eq(ss.state, STAGE_DONE);
	ck_assert_uint_eq(ss.staged, st.image_bytes);
	ck_assert_uint_ge(ss.staged, meta);
	ck_assert_uint_ge(ss.budget, 1ull << 30);

	/* Nothing left: a resume ends at once, staged bytes unchanged. */
	ck_assert_int_eq(stage_resume(img_stage(img), STAGE_META, 0), 0);
	ck_assert_int_eq(stage_next(img_stage(img)), 0);
	img_get_stats(img, &st);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_int_eq(ss.state, STAGE_DONE);
	ck_assert_uint_eq(ss.staged, st.image_bytes);
	ck_assert_uint_eq(walk(img, &root, srcdir, true), count_tree(srcdir));
	img_close(img);
}
END_TEST

/* The image changes under a mount: staged bytes keep being served, the
 * rest fails with EIO instead of returning bytes of another image. */
START_TEST(test_changed)
{
	char p[PATH_MAX + 32], cmd[2 * PATH_MAX + 64];
	struct img_inode ino;
	struct img *img;
	uint8_t buf[4096];
	size_t got;

	snprintf(p, sizeof(p), "%s/changing.sqfs", workdir);
	snprintf(cmd, sizeof(cmd), "cp '%s/gzip.sqfs' '%s'", workdir, p);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(img_open(p, NULL, &img), 0);
	ck_assert_int_eq(resolve(img, "rand1m", &ino), 0);
	ck_assert(!img_check_changed(img));
	snprintf(cmd, sizeof(cmd), "touch -d '2001-01-01' '%s'", p);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert(img_check_changed(img));
	ck_assert_int_eq(img_file_read(img, NULL, &ino, 600000, buf,
				       sizeof(buf), &got),
			 -EIO);
	img_close(img);
}
END_TEST

/* A write in place with the mtime set back (to the nanosecond) is a
 * change: only the ctime tells; a rename over the image's path is not
 * (the bytes our descriptor reads stay the same), and a write after it
 * is again. */
START_TEST(test_changed_ctime)
{
	char p[PATH_MAX + 32], q[PATH_MAX + 32], cmd[4 * PATH_MAX + 256];
	struct timespec times[2];
	struct img *img;
	struct stat st;
	int fd;

	snprintf(p, sizeof(p), "%s/ctime.sqfs", workdir);
	snprintf(q, sizeof(q), "%s/ctime-new.sqfs", workdir);
	snprintf(cmd, sizeof(cmd), "cp '%s/gzip.sqfs' '%s' && cp '%s' '%s'",
		 workdir, p, p, q);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(img_open(p, NULL, &img), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	/* Renamed over: not a change, and the ctime after it is the one. */
	ck_assert_int_eq(rename(q, p), 0);
	ck_assert(!img_check_changed(img));
	ck_assert(!img_check_changed(img));
	img_close(img);

	ck_assert_int_eq(img_open(p, NULL, &img), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	fd = open(p, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "x", 1, st.st_size - 1), 1);
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	ck_assert_int_eq(futimens(fd, times), 0);
	close(fd);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert(img_check_changed(img));
	img_close(img);
}
END_TEST

START_TEST(test_ino_to_ref)
{
	struct img *img = open_variant((unsigned int)_i, STAGE_NONE, 0);
	struct img_inode ino, back;
	uint64_t ref;

	ck_assert_int_eq(resolve(img, "d1/d2/edge4096", &ino), 0);
	ck_assert_int_eq(img_ino_to_ref(img, ino.ino, &ref), 0);
	ck_assert_uint_eq(ref, ino.ref);
	ck_assert_int_eq(img_inode_get(img, ref, &back), 0);
	ck_assert_uint_eq(back.ino, ino.ino);
	ck_assert_int_eq(img_ino_to_ref(img, 0, &ref), -ENOENT);
	ck_assert_int_eq(
		img_ino_to_ref(img, img_get_super(img)->inode_count + 1, &ref),
		-ENOENT);
	img_close(img);
}
END_TEST

struct reader_arg {
	struct img *img;
	unsigned int seed;
	int failures;
};

static void *reader(void *p)
{
	static const char *const files[] = { "rand1m", "text300k", "d1/small",
					     "d1/d2/edge4096", "sparse" };
	struct reader_arg *a = p;
	uint8_t *want = malloc(1 << 20), *have = malloc(1 << 20);
	char src[PATH_MAX + 32];
	struct img_inode ino;
	unsigned int seed = a->seed;
	size_t got, n;
	FILE *f;

	for (int i = 0; i < 300; i++) {
		const char *name = files[rand_r(&seed) % 5];
		size_t off, len;

		snprintf(src, sizeof(src), "%s/%s", srcdir, name);
		if (resolve(a->img, name, &ino)) {
			a->failures++;
			continue;
		}
		if (ino.size == 0)
			continue;
		off = (size_t)rand_r(&seed) % (size_t)ino.size;
		len = MIN((size_t)rand_r(&seed) % (256 << 10),
			  (size_t)ino.size - off);
		f = fopen(src, "r");
		fseek(f, (long)off, SEEK_SET);
		n = fread(want, 1, len, f);
		fclose(f);
		if (img_file_read(a->img, NULL, &ino, off, have, len, &got) ||
		    got != n || memcmp(want, have, n))
			a->failures++;
	}
	free(want);
	free(have);
	return NULL;
}

/* Readers in parallel on a small cache (evictions, shared fills). */
START_TEST(test_concurrent_readers)
{
	struct img_opts o;
	struct img *img;
	char p[PATH_MAX];
	pthread_t t[6];
	struct reader_arg a[6];

	img_opts_default(&o);
	o.data_cache = 1 << 20;
	o.meta_cache = 256 << 10;
	o.stage = STAGE_NONE;
	image_path((unsigned int)_i, p, sizeof(p));
	ck_assert_int_eq(img_open(p, &o, &img), 0);
	for (int i = 0; i < 6; i++) {
		a[i] = (struct reader_arg){ img, (unsigned int)i * 7919u, 0 };
		pthread_create(&t[i], NULL, reader, &a[i]);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(a[i].failures, 0);
	}
	{
		struct img_stats st;

		img_get_stats(img, &st);
		ck_assert_uint_le(st.data.peak_bytes, st.data.budget);
		ck_assert_uint_le(st.meta.peak_bytes, st.meta.budget);
	}
	img_close(img);
}
END_TEST

/* The metadata budget when none is given: from the stored inode and
 * directory tables, within IMG_META_MIN and the most allowed. */
START_TEST(test_meta_budget)
{
	const uint64_t none = ~0ull, mib = 1ull << 20;
	struct img_super sb = {
		.bytes_used = 8000 * mib,
		.inode_table = 4000 * mib,
		.dir_table = 4015 * mib,
		.frag_table = 4027 * mib,
		.export_table = none,
		.id_table = 4028 * mib,
		.xattr_table = none,
	};
	struct img_opts o;
	struct img *img;
	struct img_stats st;
	char p[PATH_MAX];

	/* 27 MiB stored: six times for the blocks, a third more for maps. */
	ck_assert_uint_eq(img_meta_budget(&sb, 4096 * mib), 216 * mib);
	ck_assert_uint_eq(img_meta_budget(&sb, 100 * mib), 100 * mib);
	ck_assert_uint_eq(img_meta_budget(&sb, 0), IMG_META_MIN);
	/* The first table after the directories ends them, whichever. */
	sb.export_table = 4020 * mib;
	ck_assert_uint_eq(img_meta_budget(&sb, 4096 * mib), 160 * mib);
	sb.xattr_table = 4016 * mib;
	ck_assert_uint_eq(img_meta_budget(&sb, 4096 * mib), 128 * mib);
	/* Small tables get the floor. */
	sb.dir_table = sb.inode_table + mib;
	sb.xattr_table = sb.inode_table + 2 * mib;
	ck_assert_uint_eq(img_meta_budget(&sb, 4096 * mib), IMG_META_MIN);
	/* Tables out of place (checked later by img_open()): the floor, and
	 * no overflow on the largest offsets. */
	sb.dir_table = sb.inode_table;
	ck_assert_uint_eq(img_meta_budget(&sb, 4096 * mib), IMG_META_MIN);
	sb = (struct img_super){ .inode_table = 0,
				 .dir_table = 1,
				 .bytes_used = none,
				 .frag_table = none,
				 .export_table = none,
				 .id_table = none,
				 .xattr_table = none };
	ck_assert_uint_eq(img_meta_budget(&sb, none), none);
	ck_assert_uint_eq(img_meta_budget(&sb, 300 * mib), 300 * mib);

	/* img_open() takes it when meta_cache is 0, and the stats show it. */
	img_opts_default(&o);
	ck_assert_uint_eq(o.meta_cache, 0);
	o.stage = STAGE_NONE;
	image_path(0, p, sizeof(p));
	ck_assert_int_eq(img_open(p, &o, &img), 0);
	img_get_stats(img, &st);
	ck_assert_uint_eq(st.meta.budget + st.bmap.budget,
			  img_meta_budget(img_get_super(img), o.meta_max));
	ck_assert_uint_ge(st.meta.budget + st.bmap.budget, IMG_META_MIN);
	img_close(img);
	o.meta_cache = 3 * mib;
	ck_assert_int_eq(img_open(p, &o, &img), 0);
	img_get_stats(img, &st);
	ck_assert_uint_eq(st.meta.budget + st.bmap.budget, 3 * mib);
	img_close(img);
}
END_TEST

/* The inode at @path (@len bytes of it), through img_resolve(). */
static int resolve_n(struct img_paths *ps, const char *path, size_t len,
		     struct img_inode *out)
{
	memset(out, 0, sizeof(*out));
	return img_resolve(ps, path, len, out);
}

static int resolve_s(struct img_paths *ps, const char *path,
		     struct img_inode *out)
{
	return resolve_n(ps, path, strlen(path), out);
}

/* img_resolve(): paths from users, names vetted, the last name's
 * symlinks followed within the image only. */
START_TEST(test_resolve)
{
	char dir[PATH_MAX / 2], img_path[PATH_MAX], *p;
	struct img_inode file, f;
	struct img_paths *ps;
	struct img_opts o;
	struct img *img;

	snprintf(dir, sizeof(dir), "%s/paths", workdir);
	snprintf(img_path, sizeof(img_path), "%s/paths.sqfs", workdir);
	sh("rm -rf '%s' && mkdir -p '%s/a/b' && cd '%s/a' && "
	   "printf x > b/file && printf y > b/other && ln -s b/file link && "
	   "ln -s ../a/./b/file up && ln -s ../../x out && "
	   "ln -s /etc/passwd abs && ln -s loop loop && ln -s b dirlink && "
	   "ln -s .. root && ln -s dirlink/file via && "
	   /* c1 -> c2 -> ... -> c8 -> b/file: 8 links; d1 .. d9: 9 */
	   "for i in 1 2 3 4 5 6 7; do ln -s c$((i + 1)) c$i; "
	   "ln -s d$((i + 1)) d$i; done && ln -s b/file c8 && "
	   "ln -s d9 d8 && ln -s b/file d9 && "
	   /* a target that makes a path of over PATH_MAX bytes */
	   "n=$(printf '%%0250d' 0) && mkdir $n && t=$(printf '%%0199d' 0) && "
	   "ln -s $(for i in $(seq 19); do printf '%%s/' $t; done)$t $n/long && "
	   "mksquashfs '%s' '%s' -comp gzip -noappend -no-progress -quiet "
	   ">/dev/null",
	   dir, dir, dir, dir, img_path);
	img_opts_default(&o);
	ck_assert_int_eq(img_open(img_path, &o, &img), 0);
	ck_assert_int_eq(img_paths_new(img, &ps), 0);

	ck_assert_int_eq(resolve_s(ps, "a/b/file", &file), 0);
	ck_assert_int_eq(file.type, IMG_REG);
	ck_assert_uint_eq(file.size, 1);
	/* Twice (the directory remembered), a neighbour, a length short of
	 * the NUL. */
	ck_assert_int_eq(resolve_s(ps, "a/b/file", &f), 0);
	ck_assert_uint_eq(f.ino, file.ino);
	ck_assert_int_eq(resolve_s(ps, "a/b/other", &f), 0);
	ck_assert_uint_ne(f.ino, file.ino);
	ck_assert_int_eq(resolve_n(ps, "a/b/filexyz", 8, &f), 0);
	ck_assert_uint_eq(f.ino, file.ino);
	ck_assert_int_eq(resolve_s(ps, "a/b", &f), 0);
	ck_assert_int_eq(f.type, IMG_DIR);

	/* Symlinks as the last name, within the image. */
	ck_assert_int_eq(resolve_s(ps, "a/link", &f), 0);
	ck_assert_uint_eq(f.ino, file.ino);
	ck_assert_int_eq(resolve_s(ps, "a/up", &f), 0); /* '..', '.' */
	ck_assert_uint_eq(f.ino, file.ino);
	ck_assert_int_eq(resolve_s(ps, "a/c1", &f), 0); /* 8 links */
	ck_assert_uint_eq(f.ino, file.ino);
	ck_assert_int_eq(resolve_s(ps, "a/dirlink", &f), 0);
	ck_assert_int_eq(f.type, IMG_DIR);
	ck_assert_int_eq(resolve_s(ps, "a/d1", &f), -ELOOP); /* 9 links */
	ck_assert_int_eq(resolve_s(ps, "a/loop", &f), -ELOOP);
	ck_assert_int_eq(resolve_s(ps, "a/out", &f), -EXDEV);
	ck_assert_int_eq(resolve_s(ps, "a/abs", &f), -EXDEV);
	ck_assert_int_eq(resolve_s(ps, "a/root", &f), -EISDIR);
	/* Not followed before the last name, nor in a target. */
	ck_assert_int_eq(resolve_s(ps, "a/dirlink/file", &f), -ENOTDIR);
	ck_assert_int_eq(resolve_s(ps, "a/via", &f), -ENOTDIR);

	/* Missing names, and files as directories. */
	ck_assert_int_eq(resolve_s(ps, "a/nope", &f), -ENOENT);
	ck_assert_int_eq(resolve_s(ps, "nope/file", &f), -ENOENT);
	ck_assert_int_eq(resolve_s(ps, "a/b/file/x", &f), -ENOTDIR);

	/* Malformed: '..', '.', empty names, absolute, trailing '/'. */
	ck_assert_int_eq(resolve_s(ps, "a/../a/b/file", &f), -EINVAL);
	ck_assert_int_eq(resolve_s(ps, "..", &f), -EINVAL);
	ck_assert_int_eq(resolve_s(ps, "./a/link", &f), -EINVAL);
	ck_assert_int_eq(resolve_s(ps, "a//link", &f), -EINVAL);
	ck_assert_int_eq(resolve_s(ps, "/a/link", &f), -EINVAL);
	ck_assert_int_eq(resolve_s(ps, "a/link/", &f), -EINVAL);
	ck_assert_int_eq(resolve_s(ps, "", &f), -EINVAL);
	ck_assert_int_eq(resolve_n(ps, "a/b\0file", 8, &f), -EINVAL);

	/* Too long: a name, the path, a symlink's resolved path. */
	p = malloc(PATH_MAX + 1);
	memset(p, 'n', IMG_NAME_MAX + 1);
	ck_assert_int_eq(resolve_n(ps, p, IMG_NAME_MAX + 1, &f), -ENAMETOOLONG);
	for (size_t i = 0; i < PATH_MAX; i++)
		p[i] = i % 2 ? '/' : 'a';
	ck_assert_int_eq(resolve_n(ps, p, PATH_MAX, &f), -ENAMETOOLONG);
	snprintf(p, PATH_MAX, "a/%0250d/long", 0);
	ck_assert_int_eq(resolve_s(ps, p, &f), -ENAMETOOLONG);
	free(p);

	img_paths_free(ps);
	img_close(img);
}
END_TEST

/* -- checked bytes: reads against the image's seal (lib/seal) -- */

/* The image at @img sealed into @img.sqcseal (or @out).  *@root: its root
 * hash, if not NULL. */
static void seal_image(const char *img, const char *out, uint8_t *root)
{
	char p[PATH_MAX + 16];
	uint8_t r[SEAL_HASH_SIZE];
	struct stat sb;
	int fd, sfd;

	snprintf(p, sizeof(p), "%s%s", img, SEAL_SUFFIX);
	fd = open(img, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	sfd = open(out ? out : p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(sfd, 0);
	/* mksquashfs pads to 4 KiB: the filesystem is the bytes_used the
	 * image says, read from its superblock (le64 at 40). */
	{
		uint8_t sbuf[96];
		uint64_t used = 0;

		ck_assert_int_eq(pread(fd, sbuf, sizeof(sbuf), 0), 96);
		for (int k = 7; k >= 0; k--)
			used = used << 8 | sbuf[40 + k];
		ck_assert_uint_le(used, (uint64_t)sb.st_size);
		ck_assert_int_eq(seal_write(fd, 0, used, sfd, root ? root : r),
				 0);
	}
	close(sfd);
	close(fd);
}

static int open_sealed(const char *path, const char *seal, const uint8_t *root,
		       bool optional, enum stage_mode stage, struct img **img)
{
	struct img_opts o;

	img_opts_default(&o);
	o.stage = stage;
	o.ram = 1ull << 30;
	o.seal = seal;
	o.seal_root = root;
	o.seal_optional = optional;
	return img_open(path, &o, img);
}

/* A sealed image of each variant reads back as its tree, staged or not;
 * staging checks each chunk once, and reads of staged bytes hash
 * nothing again. */
START_TEST(test_seal_tree)
{
	char p[PATH_MAX], sp[PATH_MAX + 16];
	struct seal_stats a, b;
	struct stage_stats ss;
	struct img_inode root;
	struct img_stats st;
	struct img *img;

	image_path((unsigned int)_i, p, sizeof(p));
	snprintf(sp, sizeof(sp), "%s%s", p, SEAL_SUFFIX);
	seal_image(p, NULL, NULL);
	for (int staged = 0; staged < 2; staged++) {
		ck_assert_int_eq(open_sealed(p, sp, NULL, false,
					     staged ? STAGE_FULL : STAGE_NONE,
					     &img),
				 0);
		ck_assert_ptr_nonnull(img_seal(img, NULL));
		if (staged)
			while (stage_next(img_stage(img)) == 1)
				;
		seal_get_stats(img_seal(img, NULL), &a);
		root_inode(img, &root);
		ck_assert_uint_eq(walk(img, &root, srcdir, true),
				  count_tree(srcdir));
		seal_get_stats(img_seal(img, NULL), &b);
		img_get_stats(img, &st);
		stage_get_stats(img_stage(img), &ss);
		ck_assert_uint_eq(b.blocks_bad, 0);
		ck_assert_uint_eq(st.seal_bad_reads, 0);
		ck_assert_uint_eq(ss.refused, 0);
		if (staged) {
			ck_assert_uint_eq(ss.staged, st.image_bytes);
			/* Every block of the image checked once, while it
			 * was staged (and the superblock, read before). */
			ck_assert_uint_eq(a.bytes_hashed,
					  st.image_bytes +
						  MIN(st.image_bytes, 4096));
			ck_assert_uint_eq(b.bytes_hashed, a.bytes_hashed);
		} else {
			ck_assert_uint_gt(b.bytes_hashed, a.bytes_hashed);
		}
		img_close(img);
	}
}
END_TEST

/* Reads of the file at every alignment: equal to the file, and with a
 * byte flipped in the image, exactly those touching its block fail. */
START_TEST(test_seal_reads)
{
	char p[PATH_MAX], bad[PATH_MAX + 16], sp[PATH_MAX + 32];
	static const uint64_t offs[] = { 0,    1,    95,    4095, 4096,
					 4097, 8191, 12288, 20000 };
	static const size_t lens[] = { 1,    2,	   100,	  4095, 4096,
				       4097, 8192, 12289, 70000 };
	uint8_t *want, *got = malloc(100000);
	uint64_t used, flip = 12345; /* block 3 */
	struct img_stats st;
	struct img *img;
	struct stat sb;
	int fd;

	image_path(2, p, sizeof(p)); /* lz4-raw: data stored as is */
	snprintf(bad, sizeof(bad), "%s/flipped.sqfs", workdir);
	snprintf(sp, sizeof(sp), "%s%s", bad, SEAL_SUFFIX);
	sh("cp '%s' '%s'", p, bad);
	seal_image(bad, NULL, NULL);
	fd = open(bad, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	want = malloc((size_t)sb.st_size);
	ck_assert_int_eq(pread(fd, want, (size_t)sb.st_size, 0),
			 (ssize_t)sb.st_size);
	close(fd);
	for (int pass = 0; pass < 2; pass++) {
		ck_assert_int_eq(
			open_sealed(bad, sp, NULL, false, STAGE_NONE, &img), 0);
		used = img_get_super(img)->bytes_used;
		for (size_t i = 0; i < ARRAY_SIZE(offs); i++)
			for (size_t j = 0; j < ARRAY_SIZE(lens); j++) {
				uint64_t off = offs[i], len = lens[j];
				bool hit = pass && off / 4096 <= flip / 4096 &&
					   (off + len - 1) / 4096 >=
						   flip / 4096;
				int err;

				if (off + len > used)
					continue;
				err = img_window_read(img, off, got,
						      (size_t)len);
				ck_assert_msg(err == (hit ? -EFSCORRUPTED : 0),
					      "read %llu+%llu: %d",
					      (unsigned long long)off,
					      (unsigned long long)len, err);
				if (!hit)
					ck_assert_msg(!memcmp(got, want + off,
							      len),
						      "read %llu+%llu: bytes",
						      (unsigned long long)off,
						      (unsigned long long)len);
			}
		/* The last bytes, the last block short. */
		ck_assert_int_eq(img_window_read(img, used - 7, got, 7), 0);
		ck_assert(!memcmp(got, want + used - 7, 7));
		ck_assert_int_eq(img_window_read(img, used - 5000, got, 5000),
				 0);
		ck_assert(!memcmp(got, want + used - 5000, 5000));
		img_get_stats(img, &st);
		ck_assert_uint_eq(st.seal_bad_reads > 0, pass == 1);
		img_close(img);
		/* The second pass: a byte of block 3 flipped. */
		want[flip] ^= 0x20;
		fd = open(bad, O_WRONLY);
		ck_assert_int_eq(pwrite(fd, want + flip, 1, (off_t)flip), 1);
		close(fd);
		want[flip] ^= 0x20;
	}
	free(want);
	free(got);
}
END_TEST

/* A byte flipped in a file's data stored as is: without a seal the file
 * reads back wrong; with it, the file fails with -EFSCORRUPTED where the
 * block is (staged or not), and the other files read back right. */
START_TEST(test_seal_corrupt_file)
{
	char p[PATH_MAX], bad[PATH_MAX + 16], sp[PATH_MAX + 32];
	char src[PATH_MAX + 16];
	uint8_t *img_bytes, *want, *got;
	struct img_inode ino, other;
	struct stat sb;
	size_t n, at;
	uint8_t *hit;
	struct img *img;
	int fd;

	image_path(2, p, sizeof(p)); /* lz4-raw */
	snprintf(bad, sizeof(bad), "%s/corrupt-file.sqfs", workdir);
	snprintf(sp, sizeof(sp), "%s%s", bad, SEAL_SUFFIX);
	sh("cp '%s' '%s'", p, bad);
	seal_image(bad, NULL, NULL);
	snprintf(src, sizeof(src), "%s/rand1m", srcdir);
	want = malloc(1 << 20);
	got = malloc(1 << 20);
	fd = open(src, O_RDONLY);
	ck_assert_int_eq(read(fd, want, 1 << 20), 1 << 20);
	close(fd);
	/* Where rand1m's bytes 300000.. are in the image: flip one. */
	fd = open(bad, O_RDWR);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	img_bytes = malloc((size_t)sb.st_size);
	ck_assert_int_eq(pread(fd, img_bytes, (size_t)sb.st_size, 0),
			 (ssize_t)sb.st_size);
	hit = memmem(img_bytes, (size_t)sb.st_size, want + 300000, 64);
	ck_assert_ptr_nonnull(hit);
	at = (size_t)(hit - img_bytes);
	img_bytes[at] ^= 1;
	ck_assert_int_eq(pwrite(fd, img_bytes + at, 1, (off_t)at), 1);
	close(fd);
	free(img_bytes);
	/* Without the seal: wrong bytes, no error. */
	ck_assert_int_eq(open_sealed(bad, NULL, NULL, false, STAGE_NONE, &img),
			 0);
	ck_assert_int_eq(resolve(img, "rand1m", &ino), 0);
	ck_assert_int_eq(img_file_read(img, NULL, &ino, 0, got, 1 << 20, &n),
			 0);
	ck_assert_uint_eq(n, 1 << 20);
	ck_assert(memcmp(got, want, 1 << 20) != 0);
	img_close(img);
	for (int staged = 0; staged < 2; staged++) {
		ck_assert_int_eq(open_sealed(bad, sp, NULL, false,
					     staged ? STAGE_FULL : STAGE_NONE,
					     &img),
				 0);
		if (staged)
			while (stage_next(img_stage(img)) == 1)
				;
		ck_assert_int_eq(resolve(img, "rand1m", &ino), 0);
		ck_assert_int_eq(img_file_read(img, NULL, &ino, 0, got, 1 << 20,
					       &n),
				 -EFSCORRUPTED);
		/* Up to its block, and after it, the file reads. */
		ck_assert_int_eq(
			img_file_read(img, NULL, &ino, 0, got, 290000, &n), 0);
		ck_assert(!memcmp(got, want, 290000));
		ck_assert_int_eq(img_file_read(img, NULL, &ino, 310000, got,
					       100000, &n),
				 0);
		ck_assert(!memcmp(got, want + 310000, 100000));
		ck_assert_int_eq(resolve(img, "text300k", &other), 0);
		snprintf(src, sizeof(src), "%s/text300k", srcdir);
		compare_file(img, &other, src, 5);
		if (staged) {
			struct stage_stats ss;

			stage_get_stats(img_stage(img), &ss);
			ck_assert_uint_eq(ss.refused, 128u << 10);
		}
		img_close(img);
	}
	free(want);
	free(got);
}
END_TEST

struct kept {
	int fd; /* the copy, made on first use */
	char key[8];
};

static void kept_backing(void *arg, int fd, uint64_t offset, uint64_t size,
			 struct stage_backing *out)
{
	struct kept *k = arg;

	(void)fd;
	(void)offset;
	if (k->fd < 0)
		ck_assert_int_eq(
			stage_backing_new(size, k->key, 4, "test", &k->fd), 0);
	*out = (struct stage_backing){ k->fd, k->key, 4, false, -1, NULL };
}

/* A kept copy staged without a seal, then changed (its owner may write
 * it): a sealed mount that adopts it checks what it reads of it, and
 * reads a wrong block from the file instead. */
START_TEST(test_seal_kept)
{
	char p[PATH_MAX], sp[PATH_MAX + 16], src[PATH_MAX + 16];
	struct kept k = { -1, "kept" };
	struct img_inode ino;
	struct stage_stats ss;
	struct img_stats st;
	struct img_opts o;
	struct img *img;
	uint8_t *want, *got, x;
	size_t n;

	image_path(2, p, sizeof(p)); /* lz4-raw */
	snprintf(sp, sizeof(sp), "%s/kept.sqcseal", workdir);
	seal_image(p, sp, NULL);
	img_opts_default(&o);
	o.stage = STAGE_FULL;
	o.ram = 1ull << 30;
	o.backing = kept_backing;
	o.backing_arg = &k;
	ck_assert_int_eq(img_open(p, &o, &img), 0);
	while (stage_next(img_stage(img)) == 1)
		;
	img_close(img);
	/* Flip a byte of rand1m's in the copy: its data starts after the
	 * superblock; 100000 bytes in is inside it. */
	ck_assert_int_eq(pread(k.fd, &x, 1, 100000), 1);
	x ^= 0x40;
	ck_assert_int_eq(pwrite(k.fd, &x, 1, 100000), 1);
	o.seal = sp;
	ck_assert_int_eq(img_open(p, &o, &img), 0);
	stage_get_stats(img_stage(img), &ss);
	ck_assert_uint_eq(ss.adopted, img_get_super(img)->bytes_used);
	want = malloc(1 << 20);
	got = malloc(1 << 20);
	snprintf(src, sizeof(src), "%s/rand1m", srcdir);
	{
		int fd = open(src, O_RDONLY);

		ck_assert_int_eq(read(fd, want, 1 << 20), 1 << 20);
		close(fd);
	}
	ck_assert_int_eq(resolve(img, "rand1m", &ino), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(
			img_file_read(img, NULL, &ino, 0, got, 1 << 20, &n), 0);
		ck_assert(!memcmp(got, want, 1 << 20));
	}
	img_get_stats(img, &st);
	ck_assert_uint_ge(st.seal_bad_staged, 2); /* once a read, or more */
	ck_assert_uint_eq(st.seal_bad_reads, 0);
	img_close(img);
	close(k.fd);
	free(want);
	free(got);
}
END_TEST

/* A seal that is not this image's, has another root, is damaged or
 * missing: refused at open, each with its error. */
START_TEST(test_seal_open)
{
	char p[PATH_MAX], q[PATH_MAX], sp[PATH_MAX + 16], sq[PATH_MAX + 32];
	uint8_t root[SEAL_HASH_SIZE];
	struct img *img = NULL;

	log_set_level(LOG_CRIT);
	image_path(0, p, sizeof(p));
	image_path(1, q, sizeof(q));
	snprintf(sp, sizeof(sp), "%s/open.sqcseal", workdir);
	snprintf(sq, sizeof(sq), "%s/other.sqcseal", workdir);
	seal_image(p, sp, root);
	seal_image(q, sq, NULL);
	ck_assert_int_eq(open_sealed(p, sp, root, false, STAGE_NONE, &img), 0);
	img_close(img);
	ck_assert_int_eq(open_sealed(p, sq, NULL, false, STAGE_NONE, &img),
			 -ESTALE);
	root[0] ^= 1;
	ck_assert_int_eq(open_sealed(p, sp, root, false, STAGE_NONE, &img),
			 -EKEYREJECTED);
	sh("cp '%s' '%s.bad' && printf x | dd of='%s.bad' bs=1 seek=5000 "
	   "conv=notrunc 2>/dev/null",
	   sp, sp, sp);
	snprintf(sq, sizeof(sq), "%s.bad", sp);
	ck_assert_int_eq(open_sealed(p, sq, NULL, false, STAGE_NONE, &img),
			 -EBADMSG);
	/* Larger than a seal of the image file can be: refused unread (a
	 * sparse 1 TiB file). */
	snprintf(sq, sizeof(sq), "%s/huge.sqcseal", workdir);
	sh("truncate -s 1T '%s'", sq);
	ck_assert_int_eq(open_sealed(p, sq, NULL, false, STAGE_NONE, &img),
			 -ESTALE);
	unlink(sq);
	snprintf(sq, sizeof(sq), "%s/absent.sqcseal", workdir);
	ck_assert_int_eq(open_sealed(p, sq, NULL, false, STAGE_NONE, &img),
			 -ENOENT);
	ck_assert_int_eq(open_sealed(p, sq, NULL, true, STAGE_NONE, &img), 0);
	ck_assert_ptr_null(img_seal(img, NULL));
	img_close(img);
	log_set_level(LOG_INFO);
}
END_TEST

/*
 * The image matrix: mktree.py's tree through every compressor, block
 * size and layout option (see the top of this file).
 */
static char mtree[PATH_MAX / 4 + 16]; /* the standard tree, or "" */
static char mhuge[PATH_MAX / 4 + 16]; /* the tree of one huge sparse file */

enum {
	M_QUICK = 1 << 0, /* in the SQC_QUICK=1 run too */
	M_OPTIONAL = 1 << 1, /* mksquashfs may lack it: a note, no failure */
	M_NO_XATTRS = 1 << 2, /* -no-xattrs: none stored */
	M_NO_HARDLINKS = 1 << 3, /* -no-hardlinks: an inode per name */
	M_ALL_ROOT = 1 << 4, /* -all-root: uid and gid 0 */
	M_FORCE_IDS = 1 << 5, /* -force-uid 12345 -force-gid 4000000001 */
	M_ALL_TIME = 1 << 6, /* -all-time 1234567 */
	M_HUGE = 1 << 7, /* the huge sparse file's tree, not the standard */
};

struct mvariant {
	const char *args; /* mksquashfs options */
	unsigned int flags;
};

static const struct mvariant mvariants[] = {
	/* Every compressor x block size (020's matrix before). */
	{ "-comp gzip -b 4K", M_QUICK },
	{ "-comp gzip -b 64K", 0 },
	{ "-comp gzip -b 128K", 0 },
	{ "-comp gzip -b 1M", 0 },
	{ "-comp lz4 -b 4K", 0 },
	{ "-comp lz4 -b 64K", M_QUICK },
	{ "-comp lz4 -b 128K", 0 },
	{ "-comp lz4 -b 1M", 0 },
	{ "-comp lz4 -Xhc -b 4K", 0 },
	{ "-comp lz4 -Xhc -b 64K", 0 },
	{ "-comp lz4 -Xhc -b 128K", 0 },
	{ "-comp lz4 -Xhc -b 1M", M_QUICK },
	{ "-comp lzo -b 4K", M_QUICK },
	{ "-comp lzo -b 64K", 0 },
	{ "-comp lzo -b 128K", 0 },
	{ "-comp lzo -b 1M", 0 },
	{ "-comp xz -b 4K", 0 },
	{ "-comp xz -b 64K", 0 },
	{ "-comp xz -b 128K", 0 },
	{ "-comp xz -b 1M", M_QUICK },
	{ "-comp zstd -b 4K", 0 },
	{ "-comp zstd -b 64K", 0 },
	{ "-comp zstd -b 128K", M_QUICK },
	{ "-comp zstd -b 1M", 0 },
	{ "-comp lzma -b 4K", M_OPTIONAL },
	{ "-comp lzma -b 64K", M_OPTIONAL },
	{ "-comp lzma -b 128K", M_QUICK | M_OPTIONAL },
	{ "-comp lzma -b 1M", M_OPTIONAL },
	/* Options that change the layout (030's before). */
	{ "-comp gzip -no-fragments", M_QUICK },
	{ "-comp zstd -always-use-fragments", M_QUICK },
	{ "-comp lz4 -tailends", M_QUICK | M_OPTIONAL },
	{ "-comp gzip -tailends -b 4K", M_QUICK | M_OPTIONAL },
	{ "-comp gzip -noI -noD -noF -noX", M_QUICK },
	{ "-comp xz -noI", 0 },
	{ "-comp lzo -noD", 0 },
	{ "-comp zstd -noF", 0 },
	{ "-comp gzip -noX", 0 },
	{ "-comp lz4 -noId", 0 },
	{ "-comp gzip -no-xattrs", M_QUICK | M_NO_XATTRS },
	{ "-comp zstd -no-sparse", 0 },
	{ "-comp lz4 -no-duplicates", 0 },
	{ "-comp gzip -no-hardlinks", M_NO_HARDLINKS },
	{ "-comp gzip -all-root", M_ALL_ROOT },
	{ "-comp zstd -force-uid 12345 -force-gid 4000000001", M_FORCE_IDS },
	{ "-comp lz4 -all-time 1234567", M_ALL_TIME },
	{ "-comp xz -no-exports", 0 },
	/* The kernel cannot mount it (its loop device cuts the unpadded
	 * tail); lib/image reads the file itself. */
	{ "-comp gzip -nopad", 0 },
	{ "-comp gzip -b 4K -always-use-fragments", 0 },
	/* A compressor-options block; x86 BCJ on files/x86ish. */
	{ "-comp xz -Xbcj x86,arm -Xdict-size 50%", M_QUICK },
	{ "-comp gzip -Xcompression-level 1 -Xwindow-size 8 "
	  "-Xstrategy default,filtered",
	  0 },
	{ "-comp lzo -Xalgorithm lzo1x_1", 0 },
	{ "-comp zstd -Xcompression-level 1", 0 },
	/* A sparse file over 4 GiB with data on both sides of the 4 GiB
	 * mark, 4K blocks: over a million entries in its block list
	 * (040's second case before). */
	{ "-comp lz4 -b 4K", M_HUGE },
};
#define NMVARIANTS (sizeof(mvariants) / sizeof(mvariants[0]))

/* The variants this run packs (SQC_QUICK=1: those marked M_QUICK). */
static unsigned int mrun[NMVARIANTS];
static unsigned int nmrun;

static bool is_quick(void)
{
	const char *q = getenv("SQC_QUICK");

	return q && !strcmp(q, "1");
}

/* One name of the source and the image inode it became. */
struct mlink {
	uint64_t src_ino; /* the source's st_ino */
	uint32_t img_ino; /* the image's inode number */
	bool symlink; /* a hard-linked symlink may be split */
};

struct mwalk {
	const struct mvariant *v;
	struct img *img;
	uint8_t *want, *have; /* MCHUNK each */
	struct mlink *links;
	size_t nlinks, caplinks;
	unsigned long entries;
	unsigned long long bytes;
};

#define MCHUNK (1u << 20)

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The xattrs of @path without system.* (mksquashfs drops POSIX ACLs). */
static size_t src_xattrs(const char *path, char *names, size_t cap)
{
	char all[8192];
	ssize_t n = llistxattr(path, all, sizeof(all));
	size_t out = 0;

	ck_assert_msg(n >= 0, "llistxattr %s: %s", path, strerror(errno));
	for (ssize_t p = 0; p < n; p += (ssize_t)strlen(all + p) + 1) {
		size_t l = strlen(all + p) + 1;

		if (!strncmp(all + p, "system.", 7))
			continue;
		ck_assert_uint_le(out + l, cap);
		memcpy(names + out, all + p, l);
		out += l;
	}
	return out;
}

static void mcompare_xattrs(struct mwalk *w, const struct img_inode *ino,
			    const char *path)
{
	char want[8192], have[8192], wv[65536], hv[65536];
	size_t wn = 0, hn, vl;
	ssize_t sl;

	if (!(w->v->flags & M_NO_XATTRS))
		wn = src_xattrs(path, want, sizeof(want));
	ck_assert_int_eq(img_xattr_list(w->img, ino, have, sizeof(have), &hn),
			 0);
	/* Same set of names (the image lists them in its own order). */
	for (size_t p = 0; p < wn; p += strlen(want + p) + 1) {
		bool found = false;

		for (size_t q = 0; q < hn && !found; q += strlen(have + q) + 1)
			found = !strcmp(want + p, have + q);
		ck_assert_msg(found, "%s: xattr %s missing from the image",
			      path, want + p);
		sl = lgetxattr(path, want + p, wv, sizeof(wv));
		ck_assert_int_ge(sl, 0);
		ck_assert_int_eq(img_xattr_get(w->img, ino, want + p, hv,
					       sizeof(hv), &vl),
				 0);
		ck_assert_msg(vl == (size_t)sl && !memcmp(wv, hv, vl),
			      "%s: xattr %s differs", path, want + p);
	}
	ck_assert_msg(hn == wn,
		      "%s: the image lists %zu bytes of xattr "
		      "names, the source %zu",
		      path, hn, wn);
}

static void mcompare_file(struct mwalk *w, const struct img_inode *ino,
			  const char *path)
{
	int fd = open(path, O_RDONLY);
	uint64_t off = 0;
	size_t got;

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	while (off < ino->size) {
		size_t len = (size_t)MIN((uint64_t)MCHUNK, ino->size - off);
		ssize_t n = pread(fd, w->want, len, (off_t)off);

		ck_assert_int_eq(n, (ssize_t)len);
		ck_assert_int_eq(img_file_read(w->img, NULL, ino, off, w->have,
					       len, &got),
				 0);
		ck_assert_uint_eq(got, len);
		if (memcmp(w->want, w->have, len)) {
			size_t i = 0;

			while (w->want[i] == w->have[i])
				i++;
			ck_abort_msg("%s: first difference at byte %llu", path,
				     (unsigned long long)(off + i));
		}
		off += len;
		w->bytes += len;
	}
	/* At the end: nothing more. */
	ck_assert_int_eq(
		img_file_read(w->img, NULL, ino, off, w->have, 1, &got), 0);
	ck_assert_uint_eq(got, 0);
	close(fd);
}

/* Compare the image inode @ino with the source entry @path. */
static void mcompare_entry(struct mwalk *w, const struct img_inode *ino,
			   const char *path)
{
	unsigned int fl = w->v->flags;
	uint32_t uid, gid, mtime;
	struct stat st;

	ck_assert_msg(lstat(path, &st) == 0, "lstat %s: %s", path,
		      strerror(errno));
	w->entries++;
	ck_assert_msg(ino->mode == st.st_mode, "%s: mode %o, source %o", path,
		      ino->mode, st.st_mode);
	uid = fl & M_ALL_ROOT ? 0 : fl & M_FORCE_IDS ? 12345 : st.st_uid;
	gid = fl & M_ALL_ROOT ? 0 : fl & M_FORCE_IDS ? 4000000001u : st.st_gid;
	ck_assert_msg(ino->uid == uid && ino->gid == gid,
		      "%s: owner %u:%u, want %u:%u", path, ino->uid, ino->gid,
		      uid, gid);
	mtime = fl & M_ALL_TIME ? 1234567 : (uint32_t)st.st_mtime;
	ck_assert_msg(ino->mtime == mtime, "%s: mtime %u, want %u", path,
		      ino->mtime, mtime);
	if (S_ISDIR(st.st_mode)) {
		/* SquashFS, ext4 and tmpfs all count 2 + subdirectories. */
		ck_assert_msg(ino->nlink == st.st_nlink,
			      "%s: directory nlink %u, source %lu", path,
			      ino->nlink, (unsigned long)st.st_nlink);
	} else {
		ck_assert_msg(
			ino->size ==
				(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) ?
					 (uint64_t)st.st_size :
					 0),
			"%s: size %llu, source %lld", path,
			(unsigned long long)ino->size, (long long)st.st_size);
		if (fl & M_NO_HARDLINKS)
			ck_assert_msg(ino->nlink == 1,
				      "%s: nlink %u with "
				      "-no-hardlinks",
				      path, ino->nlink);
		else if (S_ISLNK(st.st_mode) && st.st_nlink > 1)
			/* mksquashfs 4.5.1 gives some names of a hard-linked
			 * symlink an inode of their own. */
			ck_assert_uint_le(ino->nlink, st.st_nlink);
		else
			ck_assert_msg(ino->nlink == st.st_nlink,
				      "%s: nlink %u, source %lu", path,
				      ino->nlink, (unsigned long)st.st_nlink);
		if (w->nlinks == w->caplinks) {
			w->caplinks = w->caplinks ? 2 * w->caplinks : 4096;
			w->links = realloc(w->links,
					   w->caplinks * sizeof(*w->links));
			ck_assert_ptr_nonnull(w->links);
		}
		w->links[w->nlinks++] =
			(struct mlink){ st.st_ino, ino->ino,
					S_ISLNK(st.st_mode) != 0 };
	}
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
		ck_assert_msg(major(ino->rdev) == major(st.st_rdev) &&
				      minor(ino->rdev) == minor(st.st_rdev),
			      "%s: device %u:%u, source %u:%u", path,
			      major(ino->rdev), minor(ino->rdev),
			      major(st.st_rdev), minor(st.st_rdev));
	if (S_ISLNK(st.st_mode)) {
		char want[IMG_SYMLINK_MAX + 2], have[IMG_SYMLINK_MAX + 1];
		ssize_t n = readlink(path, want, sizeof(want) - 1);

		ck_assert_int_gt(n, 0);
		want[n] = '\0';
		ck_assert_int_eq(img_readlink(w->img, ino, have, sizeof(have)),
				 0);
		ck_assert_msg(!strcmp(want, have), "%s: symlink target differs",
			      path);
	}
	mcompare_xattrs(w, ino, path);
	if (S_ISREG(st.st_mode))
		mcompare_file(w, ino, path);
}

/* Compare directory @dir of the image with @path, recursively. */
static void mwalk_dir(struct mwalk *w, const struct img_inode *dir,
		      const char *path)
{
	size_t nsrc = 0, capsrc = 64, nimg = 0;
	char **src = malloc(capsrc * sizeof(*src)), sub[PATH_MAX];
	struct img_dirent *de = NULL;
	struct img_dir_iter it;
	struct img_inode ino;
	struct dirent *d;
	DIR *dp = opendir(path);
	int err;

	ck_assert_msg(dp != NULL, "opendir %s: %s", path, strerror(errno));
	while ((d = readdir(dp))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (nsrc == capsrc) {
			capsrc *= 2;
			src = realloc(src, capsrc * sizeof(*src));
		}
		src[nsrc++] = strdup(d->d_name);
	}
	closedir(dp);
	qsort(src, nsrc, sizeof(*src), cmp_name);
	de = malloc((nsrc + 1) * sizeof(*de));
	ck_assert_int_eq(img_dir_open(w->img, dir, 0, &it), 0);
	while (nimg <= nsrc && (err = img_dir_next(&it, &de[nimg])) == 1)
		nimg++;
	ck_assert_msg(nimg == nsrc,
		      "%s: %zu entries in the image, %zu in "
		      "the source",
		      path, nimg, nsrc);
	for (size_t i = 0; i < nsrc; i++) {
		ck_assert_msg(!strcmp(de[i].name, src[i]),
			      "%s: entry %zu is '%s' in the image, '%s' in the "
			      "source",
			      path, i, de[i].name, src[i]);
		ck_assert_msg(snprintf(sub, sizeof(sub), "%s/%s", path,
				       src[i]) < (int)sizeof(sub),
			      "path too long");
		ck_assert_int_eq(img_inode_get(w->img, de[i].ref, &ino), 0);
		ck_assert_uint_eq(ino.ino, de[i].ino);
		ck_assert_uint_eq(ino.type, de[i].type);
		mcompare_entry(w, &ino, sub);
		if (ino.type == IMG_DIR)
			mwalk_dir(w, &ino, sub);
		free(src[i]);
	}
	free(src);
	free(de);
}

static int cmp_src(const void *a, const void *b)
{
	const struct mlink *x = a, *y = b;

	return x->src_ino < y->src_ino ? -1 : x->src_ino > y->src_ino;
}

static int cmp_img(const void *a, const void *b)
{
	const struct mlink *x = a, *y = b;

	return x->img_ino < y->img_ino ? -1 : x->img_ino > y->img_ino;
}

/* Names share an inode in the image exactly where they do in the source
 * (with -no-hardlinks: never; a hard-linked symlink may be split). */
static void mcheck_links(struct mwalk *w)
{
	struct mlink *l = w->links;
	size_t n = w->nlinks, i, j;

	qsort(l, n, sizeof(*l), cmp_img);
	for (i = 0; i + 1 < n; i++)
		if (l[i].img_ino == l[i + 1].img_ino) {
			ck_assert_msg(!(w->v->flags & M_NO_HARDLINKS),
				      "-no-hardlinks: inode %u shared",
				      l[i].img_ino);
			ck_assert_msg(l[i].src_ino == l[i + 1].src_ino,
				      "image inode %u shared by names of two "
				      "source inodes",
				      l[i].img_ino);
		}
	if (w->v->flags & M_NO_HARDLINKS)
		return;
	qsort(l, n, sizeof(*l), cmp_src);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && l[j].src_ino == l[i].src_ino; j++)
			if (!l[i].symlink)
				ck_assert_msg(l[j].img_ino == l[i].img_ino,
					      "a hard-link group was split "
					      "(image inodes %u and %u)",
					      l[i].img_ino, l[j].img_ino);
	}
}

START_TEST(test_matrix)
{
	const struct mvariant *v = &mvariants[mrun[_i]];
	const char *tree = v->flags & M_HUGE ? mhuge : mtree;
	char img_path[PATH_MAX], cmd[PATH_MAX * 4];
	struct mwalk w = { .v = v };
	struct img_inode root;
	struct img_opts o;
	int rc;

	snprintf(img_path, sizeof(img_path), "%s/matrix-%u.sqfs", workdir,
		 mrun[_i]);
	/* mksquashfs clamps every timestamp to SOURCE_DATE_EPOCH if set; the
	 * "Unrecognised xattr prefix system.*" lines are the source's ACLs. */
	snprintf(cmd, sizeof(cmd),
		 "env -u SOURCE_DATE_EPOCH mksquashfs '%s' '%s' %s -noappend "
		 "-no-progress -quiet >'%s.log' 2>&1",
		 tree, img_path, v->args, img_path);
	rc = system(cmd);
	if (rc && (v->flags & M_OPTIONAL)) {
		printf("matrix '%s': this mksquashfs cannot, skipped\n",
		       v->args);
		return;
	}
	ck_assert_msg(rc == 0, "mksquashfs %s failed (%s.log)", v->args,
		      img_path);
	img_opts_default(&o);
	o.stage = STAGE_NONE;
	ck_assert_int_eq(img_open(img_path, &o, &w.img), 0);
	w.want = malloc(MCHUNK);
	w.have = malloc(MCHUNK);
	root_inode(w.img, &root);
	mcompare_entry(&w, &root, tree);
	mwalk_dir(&w, &root, tree);
	mcheck_links(&w);
	printf("matrix '%s': %lu entries, %llu bytes equal to the source\n",
	       v->args, w.entries, w.bytes);
	/* Every name of the source was seen (the walk compares listings). */
	ck_assert_uint_eq(w.entries, 1 + count_tree(tree));
	img_close(w.img);
	free(w.want);
	free(w.have);
	free(w.links);
	unlink(img_path);
}
END_TEST

/* The trees of the matrix, from tests/images/mktree.py (run from the top
 * of the tree, as make check does; $PYTHON or /usr/bin/python3). */
static void build_matrix_trees(void)
{
	const char *py = getenv("PYTHON"), *tags = getenv("CK_INCLUDE_TAGS");
	const char *only = getenv("CK_RUN_CASE");
	char cmd[PATH_MAX + 256];
	int rc;

	/* Not for a run that leaves the (untagged) matrix out. */
	if ((tags && *tags) || (only && *only && strcmp(only, "matrix")))
		return;
	if (!py || !*py)
		py = "/usr/bin/python3";
	snprintf(mtree, sizeof(mtree), "%s/mtree", workdir);
	snprintf(cmd, sizeof(cmd), "'%s' tests/images/mktree.py -q '%s'", py,
		 mtree);
	rc = system(cmd);
	if (rc) {
		printf("mktree.py: exit %d: no matrix cases%s\n",
		       WIFEXITED(rc) ? WEXITSTATUS(rc) : -1,
		       WIFEXITED(rc) && WEXITSTATUS(rc) == 77 ?
			       " (the file system lacks a feature)" :
			       "");
		if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 77)
			exit(1);
		mtree[0] = '\0';
	}
	if (is_quick())
		return;
	snprintf(mhuge, sizeof(mhuge), "%s/mhuge", workdir);
	snprintf(cmd, sizeof(cmd),
		 "'%s' tests/images/mktree.py -q --profile none --huge-sparse "
		 "'%s'",
		 py, mhuge);
	if (system(cmd))
		mhuge[0] = '\0';
}

static Suite *image_suite(void)
{
	Suite *s = suite_create("image");
	TCase *tc;

	tc = tcase_create("tree");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_whole_tree, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_check_sound, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_lookup, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_lookup_uses_index, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_readdir_resume, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_sparse_spans, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_ino_to_ref, 0, NVARIANTS);
	suite_add_tcase(s, tc);

	tc = tcase_create("open");
	tcase_add_test(tc, test_type_mode);
	tcase_add_test(tc, test_open_errors);
	tcase_add_test(tc, test_read_super);
	tcase_add_test(tc, test_changed);
	tcase_add_test(tc, test_changed_ctime);
	tcase_add_test(tc, test_resolve);
	tcase_add_test(tc, test_meta_budget);
	suite_add_tcase(s, tc);

	tc = tcase_create("stage");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_stage_full, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_stage_budget, 0, 2);
	tcase_add_loop_test(tc, test_stage_resume, 0, NVARIANTS);
	tcase_add_loop_test(tc, test_stage_direct, 0, 4);
	suite_add_tcase(s, tc);

	tc = tcase_create("seal");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_seal_tree, 0, NVARIANTS);
	tcase_add_test(tc, test_seal_reads);
	tcase_add_test(tc, test_seal_corrupt_file);
	tcase_add_test(tc, test_seal_kept);
	tcase_add_test(tc, test_seal_open);
	suite_add_tcase(s, tc);

	for (unsigned int v = 0; v < NMVARIANTS; v++) {
		const char *tree = mvariants[v].flags & M_HUGE ? mhuge : mtree;

		if (*tree && (!is_quick() || (mvariants[v].flags & M_QUICK)))
			mrun[nmrun++] = v;
	}
	tc = tcase_create("matrix");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_matrix, 0, (int)nmrun);
	suite_add_tcase(s, tc);

	tc = tcase_create("threads");
	tcase_set_tags(tc, "threads");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_concurrent_readers, 0, NVARIANTS);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (getuid() != 0) {
		printf("needs root (the fixture makes devices and trusted xattrs)\n");
		return 77;
	}
	if (system("command -v mksquashfs >/dev/null && command -v setfattr >/dev/null")) {
		printf("mksquashfs or setfattr missing: install squashfs-tools and attr\n");
		return 77;
	}
	build_fixture();
	build_matrix_trees();
	sr = srunner_create(image_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (!getenv("SQC_KEEP"))
		sh("rm -rf '%s'", workdir);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/index: main() builds source
 * trees and packs them with mksquashfs; the tests walk the images and
 * compare the order with a recursive listing of the source tree (names
 * sorted bytewise, as mksquashfs stores them), look directories up in the
 * table and build their paths, force hash collisions with a tiny table,
 * walk an image of 300,000 entries, and walk images whose directory table
 * was damaged (the walk fails with -EFSCORRUPTED or ends, never crashes
 * or loops).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "index/index.h"
#include "util/err.h"

#include "fixture.h"

static char workdir[PATH_MAX / 4]; /* short: paths are built from it */

#define BIG_DIRS 300 /* directories of the big image */
#define BIG_FILES 1000 /* empty files in each */

static void wpath(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", workdir, name);
}

/* The small tree: names that sort differently bytewise and by locale,
 * directories between files, a symlink to a directory, an empty one,
 * the same name in many directories, and depth. */
static void build_small(void)
{
	sh("cd '%s' && mkdir -p src && cd src && "
	   "mkdir -p A a 'a b' a-b a.b b Z _x dir10 dir2 empty "
	   "deep/1/2/3/4/5/6/7 a/same a/x/same b/same b/y/z && "
	   ": > a/file && : > 0file && : > deep/1/f && : > zz && "
	   "ln -s a link-to-a && ln -s ../b a/up && "
	   "i=0; while [ $i -lt 40 ]; do mkdir -p many/d$i/same; "
	   ": > many/f$i; i=$((i+1)); done",
	   workdir);
	sh("cd '%s' && mksquashfs src small.sqfs -comp gzip -noappend "
	   "-no-progress -quiet >/dev/null && "
	   "mksquashfs src raw.sqfs -noI -noD -noF -noX -noappend "
	   "-no-progress -quiet >/dev/null",
	   workdir);
}

/* The big tree: BIG_DIRS directories of BIG_FILES empty files. */
static void build_big(void)
{
	char p[PATH_MAX];

	wpath(p, sizeof(p), "big");
	if (mkdir(p, 0755))
		exit(1);
	for (int d = 0; d < BIG_DIRS; d++) {
		snprintf(p, sizeof(p), "%s/big/d%03d", workdir, d);
		if (mkdir(p, 0755))
			exit(1);
		for (int f = 0; f < BIG_FILES; f++) {
			int fd;

			snprintf(p, sizeof(p), "%s/big/d%03d/f%04d", workdir, d,
				 f);
			fd = open(p, O_CREAT | O_WRONLY, 0644);
			if (fd < 0)
				exit(1);
			close(fd);
		}
	}
	sh("cd '%s' && mksquashfs big big.sqfs -noappend -no-progress "
	   "-quiet >/dev/null",
	   workdir);
}

static struct img *open_image(const char *name)
{
	struct img *img;
	char p[PATH_MAX];
	int err;

	wpath(p, sizeof(p), name);
	err = img_open(p, NULL, &img);
	ck_assert_msg(err == 0, "img_open(%s): %s", p, err_str(err));
	return img;
}

/* A list of paths. */
struct paths {
	char **v;
	size_t len, cap;
};

static void paths_add(struct paths *ps, const char *p)
{
	if (ps->len == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 64;
		ps->v = realloc(ps->v, ps->cap * sizeof(*ps->v));
		ck_assert_ptr_nonnull(ps->v);
	}
	ps->v[ps->len] = strdup(p);
	ck_assert_ptr_nonnull(ps->v[ps->len]);
	ps->len++;
}

static void paths_free(struct paths *ps)
{
	for (size_t i = 0; i < ps->len; i++)
		free(ps->v[i]);
	free(ps->v);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append to @out the directories under @dir (on disk) in preorder,
 * children in bytewise order, named @shown/...; symlinks not followed. */
static void list_source(const char *dir, const char *shown, struct paths *out)
{
	struct paths names = { 0 };
	struct dirent *de;
	DIR *dp = opendir(dir);

	ck_assert_ptr_nonnull(dp);
	while ((de = readdir(dp)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			paths_add(&names, de->d_name);
	closedir(dp);
	if (names.len)
		qsort(names.v, names.len, sizeof(*names.v), cmp_name);
	for (size_t i = 0; i < names.len; i++) {
		char p[PATH_MAX], s[PATH_MAX];
		struct stat st;

		snprintf(p, sizeof(p), "%s/%s", dir, names.v[i]);
		snprintf(s, sizeof(s), "%s/%s", shown, names.v[i]);
		ck_assert_int_eq(lstat(p, &st), 0);
		if (!S_ISDIR(st.st_mode))
			continue;
		paths_add(out, s);
		list_source(p, s, out);
	}
	paths_free(&names);
}

/* Walk all of @img from the root, named ".": directories in order, and
 * the first error of idx_walk_descend() (0 if none).  The walk goes on
 * past an error, as the daemon does. */
static int walk_all(struct img *img, uint64_t entries, struct paths *out,
		    struct idx_walk **wout)
{
	const struct idx_walk_dir *d;
	struct img_inode root;
	struct idx_walk *w;
	int first = 0, err;

	ck_assert_int_eq(idx_walk_new(img, entries, &w), 0);
	err = img_inode_get(img, img_get_super(img)->root_ref, &root);
	if (!err)
		err = idx_walk_add(w, root.ref, root.ino, ".", 0);
	if (err) {
		idx_walk_free(w);
		return err;
	}
	while (idx_walk_next(w, &d) == 1) {
		if (d->depth) /* the root itself is not in the listing */
			paths_add(out, d->path);
		err = idx_walk_descend(w, d, NULL);
		if (err && !first)
			first = err;
	}
	if (wout)
		*wout = w;
	else
		idx_walk_free(w);
	return first;
}

static void assert_same_paths(const struct paths *got, const struct paths *want)
{
	for (size_t i = 0; i < got->len && i < want->len; i++)
		ck_assert_msg(!strcmp(got->v[i], want->v[i]),
			      "directory %zu: walk gave '%s', listing '%s'", i,
			      got->v[i], want->v[i]);
	ck_assert_uint_eq(got->len, want->len);
}

START_TEST(test_walk_order)
{
	const char *name = _i ? "raw.sqfs" : "small.sqfs";
	struct paths got = { 0 }, want = { 0 };
	struct img *img = open_image(name);
	char src[PATH_MAX];

	wpath(src, sizeof(src), "src");
	list_source(src, ".", &want);
	ck_assert_uint_gt(want.len, 60);
	ck_assert_int_eq(walk_all(img, UINT64_MAX, &got, NULL), 0);
	assert_same_paths(&got, &want);
	paths_free(&got);
	paths_free(&want);
	img_close(img);
}
END_TEST

/* Going on after an entry: only what follows it, in order. */
START_TEST(test_walk_after)
{
	struct paths got = { 0 }, want = { 0 }, all = { 0 };
	struct img *img = open_image("small.sqfs");
	const struct idx_walk_dir *d;
	struct img_inode root;
	struct idx_walk *w;
	struct idx_walk_dir top;
	char src[PATH_MAX];
	size_t i;

	wpath(src, sizeof(src), "src");
	list_source(src, ".", &all);
	/* Everything listed after the subtree of ./b. */
	for (i = 0; i < all.len && strcmp(all.v[i], "./b"); i++)
		;
	for (i++; i < all.len; i++)
		if (strncmp(all.v[i], "./b/", 4))
			paths_add(&want, all.v[i]);
	ck_assert_int_eq(
		img_inode_get(img, img_get_super(img)->root_ref, &root), 0);
	ck_assert_int_eq(idx_walk_new(img, UINT64_MAX, &w), 0);
	top = (struct idx_walk_dir){ root.ref, root.ino, 0, "." };
	ck_assert_int_eq(idx_walk_descend(w, &top, "b"), 0);
	while (idx_walk_next(w, &d) == 1) {
		paths_add(&got, d->path);
		ck_assert_int_eq(idx_walk_descend(w, d, NULL), 0);
	}
	assert_same_paths(&got, &want);
	/* The root is not in the set (descend was called on it only):
	 * adding it works once, then it is a cycle. */
	ck_assert_int_eq(idx_walk_add(w, root.ref, root.ino, ".", 0), 0);
	ck_assert_int_eq(idx_walk_add(w, root.ref, root.ino, ".", 0), -EEXIST);
	ck_assert_int_eq(idx_walk_add(w, root.ref, 0, ".", 0), -EFSCORRUPTED);
	ck_assert_int_eq(idx_walk_add(w, root.ref, 1u << 30, ".", 0),
			 -EFSCORRUPTED);
	idx_walk_free(w);
	paths_free(&got);
	paths_free(&want);
	paths_free(&all);
	img_close(img);
}
END_TEST

/* An entry budget ends the walk early. */
START_TEST(test_walk_budget)
{
	struct paths got = { 0 };
	struct img *img = open_image("small.sqfs");
	struct idx_walk *w;

	ck_assert_int_eq(walk_all(img, 20, &got, &w), 0);
	ck_assert(idx_walk_is_spent(w));
	ck_assert_uint_gt(got.len, 0);
	ck_assert_uint_lt(got.len, 20);
	ck_assert_uint_gt(idx_walk_bytes(w), 0);
	idx_walk_free(w);
	paths_free(&got);
	img_close(img);
}
END_TEST

/* The table, filled from a walk: every path comes back from the names. */
START_TEST(test_dirs_paths)
{
	struct img *img = open_image("small.sqfs");
	const struct idx_walk_dir *d;
	struct idx_dirs t;
	struct img_inode root;
	struct idx_walk *w;
	struct paths paths = { 0 };
	uint32_t *inos = NULL;
	size_t n = 0;

	idx_dirs_init(&t, _i ? 2 : 1024, 1 << 20);
	ck_assert_int_eq(
		img_inode_get(img, img_get_super(img)->root_ref, &root), 0);
	ck_assert_int_eq(
		idx_dirs_add(&t, root.ino, NULL, root.ino, root.ref, NULL), 0);
	ck_assert_int_eq(idx_walk_new(img, UINT64_MAX, &w), 0);
	ck_assert_int_eq(idx_walk_add(w, root.ref, root.ino, "/mnt", 0), 0);
	while (idx_walk_next(w, &d) == 1) {
		ck_assert_int_eq(idx_walk_descend(w, d, NULL), 0);
		if (!d->depth)
			continue;
		/* The parent is the directory with the path up to the
		 * last '/', found earlier in the walk. */
		const char *slash = strrchr(d->path, '/');
		size_t plen = (size_t)(slash - d->path);
		uint32_t parent = root.ino;

		for (size_t i = 0; i < n; i++)
			if (strlen(paths.v[i]) == plen &&
			    !strncmp(paths.v[i], d->path, plen))
				parent = inos[i];
		struct idx_dir *e;

		ck_assert_int_eq(idx_dirs_add(&t, parent, slash + 1, d->ino,
					      d->ref, &e),
				 0);
		ck_assert_uint_eq(e->ino, d->ino);
		inos = realloc(inos, (n + 1) * sizeof(*inos));
		inos[n++] = d->ino;
		paths_add(&paths, d->path);
	}
	idx_walk_free(w);
	ck_assert_uint_eq(t.len, n + 1);
	for (size_t i = 0; i < n; i++) {
		struct idx_dir *e;
		char *p;

		ck_assert_int_eq(idx_dirs_find(&t, inos[i], &e), 0);
		ck_assert_uint_eq(e->ino, inos[i]);
		ck_assert_int_eq(
			idx_dirs_path(&t, root.ino, inos[i], "/mnt", &p), 0);
		ck_assert_str_eq(p, paths.v[i]);
		free(p);
	}
	/* Adding again keeps the entry; unknown numbers are not found. */
	ck_assert_int_eq(idx_dirs_add(&t, 1, "other", inos[0], 7, NULL), 0);
	ck_assert_uint_eq(t.len, n + 1);
	struct idx_dir *e;
	char *p;

	ck_assert_int_eq(idx_dirs_find(&t, inos[0], &e), 0);
	ck_assert_uint_ne(e->ref, 7);
	ck_assert_int_eq(idx_dirs_find(&t, 0, &e), -ENOENT);
	ck_assert_int_eq(idx_dirs_find(&t, 1u << 30, &e), -ENOENT);
	ck_assert_int_eq(idx_dirs_path(&t, root.ino, 1u << 30, "/mnt", &p),
			 -ENOENT);
	ck_assert_int_eq(idx_dirs_add(&t, 1, "x", 0, 7, NULL), -EINVAL);
	ck_assert_uint_le(idx_dirs_bytes(&t), t.budget);
	idx_dirs_release(&t);
	free(inos);
	paths_free(&paths);
	img_close(img);
}
END_TEST

/*
 * Collisions: a table that starts at 2 slots and numbers that differ only
 * in high bits, or are multiples of the table sizes, all found again;
 * the same name under many parents gives distinct paths.
 */
START_TEST(test_dirs_collisions)
{
	const uint32_t n = 20000;
	struct idx_dirs t;
	struct idx_dir *e;
	char name[32], want[64], *p;

	idx_dirs_init(&t, 2, 64 << 20);
	ck_assert_int_eq(idx_dirs_add(&t, 1, NULL, 1, 1, NULL), 0);
	for (uint32_t i = 1; i <= n; i++) {
		uint32_t ino = i << 12; /* multiples of every table size */

		snprintf(name, sizeof(name), "same");
		if (i % 2)
			snprintf(name, sizeof(name), "n%u", i);
		ck_assert_int_eq(idx_dirs_add(&t, 1, name, ino, i, NULL), 0);
		ck_assert_int_eq(
			idx_dirs_add(&t, ino, "same", ino + 1, i, NULL), 0);
	}
	ck_assert_uint_eq(t.len, 2 * n + 1);
	for (uint32_t i = 1; i <= n; i++) {
		uint32_t ino = i << 12;

		ck_assert_int_eq(idx_dirs_find(&t, ino, &e), 0);
		ck_assert_uint_eq(e->ref, i);
		ck_assert_int_eq(idx_dirs_find(&t, ino + 2, &e), -ENOENT);
		ck_assert_int_eq(idx_dirs_path(&t, 1, ino + 1, "", &p), 0);
		if (i % 2)
			snprintf(want, sizeof(want), "/n%u/same", i);
		else
			snprintf(want, sizeof(want), "/same/same");
		ck_assert_str_eq(p, want);
		free(p);
	}
	idx_dirs_release(&t);
}
END_TEST

/* The byte budget: adds fail with -ENOSPC, never pass it. */
START_TEST(test_dirs_budget)
{
	struct idx_dirs t;
	uint32_t added = 0;
	int err = 0;

	idx_dirs_init(&t, 2, 64 * 1024);
	for (uint32_t ino = 1; ino < 100000 && !err; ino++) {
		err = idx_dirs_add(&t, 1, "a-name-of-some-length", ino, ino,
				   NULL);
		added += !err;
	}
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_uint_gt(added, 100);
	ck_assert_uint_eq(t.len, added);
	ck_assert_uint_le(idx_dirs_bytes(&t), 64 * 1024);
	/* A loop of parents is cut by the depth bound, not followed. */
	idx_dirs_release(&t);
	idx_dirs_init(&t, 2, 1 << 20);
	ck_assert_int_eq(idx_dirs_add(&t, 3, "a", 2, 2, NULL), 0);
	ck_assert_int_eq(idx_dirs_add(&t, 2, "b", 3, 3, NULL), 0);
	char *p;

	ck_assert_int_eq(idx_dirs_path(&t, 1, 2, "", &p), -ELOOP);
	idx_dirs_release(&t);
}
END_TEST

/* 300,000 entries: the walk reads every one, returns every directory. */
START_TEST(test_big)
{
	struct img *img = open_image("big.sqfs");
	struct paths got = { 0 };
	struct idx_walk *w;
	char want[32];

	ck_assert_int_eq(walk_all(img, UINT64_MAX, &got, &w), 0);
	ck_assert(!idx_walk_is_spent(w));
	idx_walk_free(w);
	ck_assert_uint_eq(got.len, BIG_DIRS);
	for (size_t i = 0; i < got.len; i++) {
		snprintf(want, sizeof(want), "./d%03zu", i);
		ck_assert_str_eq(got.v[i], want);
	}
	paths_free(&got);
	/* The entries read: a budget of all of them but one is spent. */
	got = (struct paths){ 0 };
	ck_assert_int_eq(walk_all(img,
				  (uint64_t)BIG_DIRS * BIG_FILES + BIG_DIRS - 1,
				  &got, &w),
			 0);
	ck_assert(idx_walk_is_spent(w));
	idx_walk_free(w);
	paths_free(&got);
	img_close(img);
}
END_TEST

/* Copy @name to "bad.sqfs" with @len bytes at @off of its directory table
 * set to @byte (or xored with it if @flip). */
static void damage(const char *name, uint64_t off, size_t len, int byte,
		   bool flip)
{
	char from[PATH_MAX], to[PATH_MAX];
	unsigned char buf[64];
	struct img *img = open_image(name);
	uint64_t at = img_get_super(img)->dir_table + off;
	int fd;

	img_close(img);
	wpath(from, sizeof(from), name);
	wpath(to, sizeof(to), "bad.sqfs");
	sh("cp '%s' '%s'", from, to);
	fd = open(to, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_le(len, sizeof(buf));
	ck_assert_int_eq(pread(fd, buf, len, (off_t)at), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		buf[i] = flip ? buf[i] ^ byte : byte;
	ck_assert_int_eq(pwrite(fd, buf, len, (off_t)at), (ssize_t)len);
	close(fd);
}

/* A compressed directory block overwritten: the walk says corrupt. */
START_TEST(test_corrupt_block)
{
	struct paths got = { 0 };
	struct img *img;
	int err;

	damage("small.sqfs", 8, 48, 0x5a, false);
	img = open_image("bad.sqfs");
	err = walk_all(img, UINT64_MAX, &got, NULL);
	ck_assert_msg(err == -EFSCORRUPTED, "walk: %s", err_str(err));
	paths_free(&got);
	img_close(img);
}
END_TEST

/* Bytes flipped one at a time over an uncompressed directory table: each
 * walk ends, with success or a corruption error, and never returns more
 * directories than the image has inodes. */
START_TEST(test_corrupt_flips)
{
	struct img *img = open_image("raw.sqfs");
	uint64_t len =
		img_get_super(img)->bytes_used - img_get_super(img)->dir_table;
	unsigned int corrupt = 0, flips = 0;

	img_close(img);
	len = len < 1200 ? len : 1200;
	for (uint64_t off = 2; off < len; off += 5) {
		struct paths got = { 0 };
		int err;

		damage("raw.sqfs", off, 1, off % 2 ? 0xff : 0x10, true);
		img = open_image("bad.sqfs");
		err = walk_all(img, UINT64_MAX, &got, NULL);
		ck_assert_msg(!err || err == -EFSCORRUPTED || err == -EIO,
			      "flip at %llu: %s", (unsigned long long)off,
			      err_str(err));
		ck_assert_uint_le(got.len, img_get_super(img)->inode_count);
		corrupt += err == -EFSCORRUPTED;
		flips++;
		paths_free(&got);
		img_close(img);
	}
	ck_assert_uint_gt(corrupt, flips / 10);
}
END_TEST

/* The inode of @path (a '/'-separated path under the root) in @img. */
static void inode_at(struct img *img, const char *path, struct img_inode *out)
{
	char buf[PATH_MAX], *name, *save = NULL;
	struct img_dirent de;

	ck_assert_int_eq(img_inode_get(img, img_get_super(img)->root_ref, out),
			 0);
	snprintf(buf, sizeof(buf), "%s", path);
	for (name = strtok_r(buf, "/", &save); name;
	     name = strtok_r(NULL, "/", &save)) {
		ck_assert_int_eq(
			img_dir_lookup(img, out, name, strlen(name), &de), 0);
		ck_assert_int_eq(img_inode_get(img, de.ref, out), 0);
	}
}

static uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void put16(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
	put16(p, v);
	put16(p + 2, v >> 16);
}

/*
 * A loop: in the uncompressed image, the entry "3" of deep/1/2 is made to
 * point at deep/1.  The walk reports corruption there instead of going
 * round, and returns every directory once.
 */
START_TEST(test_corrupt_cycle)
{
	struct img *img = open_image("raw.sqfs");
	struct img_inode one, two;
	unsigned char b[24];
	struct paths got = { 0 };
	char from[PATH_MAX], to[PATH_MAX];
	off_t at;
	int fd, err;

	inode_at(img, "deep/1", &one);
	inode_at(img, "deep/1/2", &two);
	img_close(img);
	wpath(from, sizeof(from), "raw.sqfs");
	wpath(to, sizeof(to), "bad.sqfs");
	sh("cp '%s' '%s'", from, to);
	fd = open(to, O_RDWR);
	ck_assert_int_ge(fd, 0);
	/* The listing's metadata block is stored uncompressed. */
	ck_assert_int_eq(pread(fd, b, 2, (off_t)two.dir.block), 2);
	ck_assert(get16(b) & 0x8000);
	ck_assert_uint_le(two.dir.off + two.dir.listing, get16(b) & 0x7fff);
	/* One header {count - 1, inode block, inode number}, one entry
	 * {offset, inode number delta, type, name length - 1, "3"}. */
	at = (off_t)(two.dir.block + 2 + two.dir.off);
	ck_assert_int_eq(pread(fd, b, 21, at), 21);
	ck_assert_int_eq(b[0], 0);
	ck_assert_int_eq(b[18], 0);
	ck_assert_int_eq(b[20], '3');
	put32(b + 4, (uint32_t)(one.ref >> 16));
	put32(b + 8, one.ino);
	put16(b + 12, (uint32_t)(one.ref & 0xffff));
	put16(b + 14, 0);
	ck_assert_int_eq(pwrite(fd, b, 21, at), 21);
	close(fd);
	img = open_image("bad.sqfs");
	err = walk_all(img, UINT64_MAX, &got, NULL);
	ck_assert_msg(err == -EFSCORRUPTED, "walk: %s", err_str(err));
	for (size_t i = 0; i < got.len; i++)
		ck_assert_msg(strcmp(got.v[i], "./deep/1/2/3"),
			      "the walk went into the loop");
	paths_free(&got);
	img_close(img);
}
END_TEST

static Suite *index_suite(void)
{
	Suite *s = suite_create("index");
	TCase *tc;

	tc = tcase_create("walk");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_walk_order, 0, 2);
	tcase_add_test(tc, test_walk_after);
	tcase_add_test(tc, test_walk_budget);
	suite_add_tcase(s, tc);

	tc = tcase_create("dirs");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_dirs_paths, 0, 2);
	tcase_add_test(tc, test_dirs_collisions);
	tcase_add_test(tc, test_dirs_budget);
	suite_add_tcase(s, tc);

	tc = tcase_create("big");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_big);
	suite_add_tcase(s, tc);

	tc = tcase_create("corrupt");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_corrupt_block);
	tcase_add_test(tc, test_corrupt_flips);
	tcase_add_test(tc, test_corrupt_cycle);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	SRunner *sr;
	int failed;

	if (system("command -v mksquashfs >/dev/null")) {
		printf("mksquashfs missing: install squashfs-tools\n");
		return 77;
	}
	snprintf(workdir, sizeof(workdir), "%s/sqc-test-index.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(workdir))
		return 1;
	build_small();
	build_big();
	sr = srunner_create(index_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (!getenv("SQC_KEEP"))
		sh("rm -rf '%s'", workdir);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/*
 * This file implements the image walk shared by the libFuzzer target
 * tests/fuzz/fuzz_image.c and the replay driver tests/tools/fuzz_replay.c,
 * so that an input that crashed one crashes the other in the same place.
 * It is included by exactly one .c file per program; every function is
 * static.
 *
 * One input is one image.  It is written to a memfd and opened through
 * /proc/self/fd/N with small budgets.  Then:
 *
 *   1. img_check(), the full walk (`mountctl check`);
 *   2. the access pattern of a mount, bounded: every directory from the
 *      root is listed, then listed again resuming from the cookies it
 *      handed out; each name found is looked up (so the directory index is
 *      used), and so are absent names; each inode is decoded and, by type,
 *      read at odd offsets with few spans (img_file_spans, img_file_read,
 *      img_file_prefetch), its link read with small and exact buffers, and
 *      its xattrs listed and read with size probes;
 *   3. img_ino_to_ref() for a few inode numbers, img_get_stats();
 *   4. the listing-ahead walk of lib/index (the order statahead=all
 *      takes), bounded by WALK_MAX_ENTRIES entries, with each directory
 *      put in a lib/index table and its path built back from it.
 *
 * Options come from the input's size modulo 3 (bytes past bytes_used are
 * padding, so the fuzzer can flip this without changing the image):
 * 0 = no staging, 1 = everything staged before the walk, 2 = staging of
 * the metadata only, done in the middle of the walk.
 *
 * Oracle.  Only a crash, a sanitizer report, a leak or a timeout is a
 * failure, with one exception: when img_check() passes, the mount walk
 * must meet no corruption either, a lookup of a listed name must find
 * that entry, and resuming from a cookie must return the entry after it.
 * An image that check calls sound but a mount cannot serve is a hole in
 * the check; walk_fail() aborts so that the fuzzer keeps the input.
 *
 * Work is bounded by WALK_* limits below (the reader's own work on one
 * call is bounded by the image's real table sizes; the walk must not
 * multiply it without end).
 */
#ifndef SQC_TESTS_FUZZ_WALK_H
#define SQC_TESTS_FUZZ_WALK_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "image/image.h"
#include "index/index.h"
#include "util/err.h"
#include "util/log.h"

#define WALK_MAX_DIRS 64 /* directories listed by the mount walk */
#define WALK_MAX_ENTRIES 1024 /* entries handled by the mount walk */
#define WALK_MAX_COOKIES 32 /* cookies resumed from per directory */
#define WALK_MAX_XATTRS 32 /* xattr values read per inode */
#define WALK_READ_SPANS 260 /* spans of a large read: 1 MiB of 4 KiB blocks */

struct walk_state {
	struct img *img;
	bool sound; /* img_check() passed: the oracle applies */
	unsigned int dirs; /* directories listed */
	unsigned int entries; /* entries handled */
	uint64_t queue[WALK_MAX_DIRS]; /* directory refs to list */
	unsigned int qhead, qlen;
	const char *name; /* input name for messages, or NULL */
};

static void walk_fail(const struct walk_state *w, const char *what, int err)
{
	fprintf(stderr, "walk: %s%s%simage passed img_check() but %s (%s)\n",
		w->name ? "'" : "", w->name ? w->name : "",
		w->name ? "': " : "", what, err_str(err));
	abort();
}

/* An error from the mount walk: fine on a damaged image, a failure when
 * img_check() passed.  -ENOMEM is never expected with these budgets. */
static void walk_err(const struct walk_state *w, const char *what, int err)
{
	if (err == -ENOMEM)
		walk_fail(w, what, err);
	if (w->sound && err == -EFSCORRUPTED)
		walk_fail(w, what, err);
}

static void walk_file(struct walk_state *w, const struct img_inode *ino)
{
	const struct img_super *sb = img_get_super(w->img);
	struct img_span spans[3];
	uint8_t buf[600];
	unsigned int n, i;
	size_t got, total;
	int err;
	/* Offsets: start, odd places inside the first blocks, around block
	 * boundaries, the middle, the last bytes, and past the end. */
	const uint64_t offs[] = {
		0,
		1,
		sb->block_size - 1,
		sb->block_size,
		(uint64_t)sb->block_size * 2 + 7,
		ino->size / 2 + 1,
		ino->size > 3 ? ino->size - 3 : 0,
		ino->size,
		ino->size + 4096,
		UINT64_MAX - 1,
	};
	const size_t lens[] = { 1, 3, 4097, 600 };

	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		size_t len = lens[i % 4];
		unsigned int max = 1 + i % 3;
		uint64_t end;

		err = img_file_spans(w->img, NULL, ino, offs[i], len, spans,
				     max, &n);
		if (err) {
			walk_err(w, "file spans", err);
			continue;
		}
		total = 0;
		for (unsigned int k = 0; k < n; k++) {
			/* Touch both ends of each span (ASan checks them). */
			const volatile uint8_t *p = spans[k].data;

			if (spans[k].len)
				(void)p[0], (void)p[spans[k].len - 1];
			total += spans[k].len;
		}
		img_spans_put(w->img, spans, n);
		end = offs[i] < ino->size ? ino->size - offs[i] : 0;
		if (total > len || total > end)
			walk_fail(w, "img_file_spans mapped more than asked",
				  -ERANGE);
		if (w->sound && end && !total)
			walk_fail(w, "img_file_spans mapped nothing", -EIO);
	}
	/* A read as large as the kernel's, with room for every block: it
	 * must map all of the range (a short read is EOF to the kernel). */
	{
		struct img_span many[WALK_READ_SPANS];
		uint64_t want = ino->size < (1u << 20) ? ino->size : 1u << 20;

		err = img_file_spans(w->img, NULL, ino, 0, 1u << 20, many,
				     WALK_READ_SPANS, &n);
		if (err) {
			walk_err(w, "file spans", err);
		} else {
			total = 0;
			for (unsigned int k = 0; k < n; k++)
				total += many[k].len;
			img_spans_put(w->img, many, n);
			if (total > want ||
			    (w->sound && sb->block_size == 4096 &&
			     total != want))
				walk_fail(
					w,
					"a 1 MiB read with 260 spans was short",
					-EIO);
		}
	}
	err = img_file_read(w->img, NULL, ino,
			    ino->size > 300 ? ino->size - 300 : 0, buf,
			    sizeof(buf), &got);
	if (err)
		walk_err(w, "file read", err);
	else if (w->sound && got != (ino->size > 300 ? 300 : ino->size))
		walk_fail(w, "img_file_read came back short", -EIO);
	err = img_file_prefetch(w->img, NULL, ino, 0, 2);
	if (err)
		walk_err(w, "file prefetch", err);
	err = img_file_prefetch(w->img, NULL, ino, UINT32_MAX - 1, 4);
	if (err)
		walk_err(w, "file prefetch", err);
}

static void walk_symlink(struct walk_state *w, const struct img_inode *ino)
{
	char target[IMG_SYMLINK_MAX + 1];
	int err;

	err = img_readlink(w->img, ino, target, (size_t)ino->size + 1);
	if (err) {
		walk_err(w, "readlink", err);
	} else if (strlen(target) != ino->size) {
		walk_fail(w, "readlink returned a short target", -EIO);
	}
	err = img_readlink(w->img, ino, target, (size_t)ino->size);
	if (err != -ERANGE)
		walk_fail(w, "readlink into a short buffer did not say ERANGE",
			  err);
}

static void walk_xattrs(struct walk_state *w, const struct img_inode *ino)
{
	char list[4096], value[512];
	size_t len, vlen, p;
	unsigned int k = 0;
	int err;

	err = img_xattr_list(w->img, ino, NULL, 0, &len);
	if (err) {
		walk_err(w, "xattr list size", err);
		return;
	}
	if (len && len <= sizeof(list)) {
		err = img_xattr_list(w->img, ino, list, len - 1, &len);
		if (err != -ERANGE && len > 1)
			walk_fail(w, "short xattr list did not say ERANGE",
				  err);
	}
	err = img_xattr_list(w->img, ino, list, sizeof(list), &len);
	if (err) {
		if (err != -ERANGE)
			walk_err(w, "xattr list", err);
		return;
	}
	if (len > sizeof(list) || (len && list[len - 1] != '\0'))
		walk_fail(w, "xattr list is not NUL-terminated", -EINVAL);
	for (p = 0; p < len && k < WALK_MAX_XATTRS; p += strlen(list + p) + 1) {
		k++;
		err = img_xattr_get(w->img, ino, list + p, NULL, 0, &vlen);
		if (err) {
			walk_err(w, "xattr size", err);
			if (w->sound)
				walk_fail(w, "listed xattr cannot be read",
					  err);
			continue;
		}
		err = img_xattr_get(w->img, ino, list + p, value, sizeof(value),
				    &vlen);
		if (err && err != -ERANGE)
			walk_err(w, "xattr value", err);
		if (vlen) {
			err = img_xattr_get(w->img, ino, list + p, value, 1,
					    &vlen);
			if (!err && vlen > 1)
				walk_fail(w, "xattr into 1 byte was not ERANGE",
					  err);
		}
	}
	err = img_xattr_get(w->img, ino, "user.no such name", value,
			    sizeof(value), &vlen);
	if (err && err != -ENODATA)
		walk_err(w, "absent xattr", err);
	err = img_xattr_get(w->img, ino, "bogus", NULL, 0, &vlen);
	if (err && err != -ENODATA)
		walk_err(w, "absent xattr", err);
}

static void walk_inode(struct walk_state *w, const struct img_inode *ino)
{
	switch (ino->type) {
	case IMG_REG:
		walk_file(w, ino);
		break;
	case IMG_SYMLINK:
		walk_symlink(w, ino);
		break;
	default:
		break;
	}
	walk_xattrs(w, ino);
}

/* Look up names that should not be there, and two that are too long. */
static void walk_absent(struct walk_state *w, const struct img_inode *dir,
			const struct img_dirent *last)
{
	static const char *const names[] = { "",    ".",	"..",
					     "a/b", "\xff\xff", "zzzzzzzzzz" };
	char name[IMG_NAME_MAX + 2];
	struct img_dirent de;
	int err;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		err = img_dir_lookup(w->img, dir, names[i], strlen(names[i]),
				     &de);
		/* The first four are invalid names, which no listing may
		 * hold: finding one is a bug whatever the image. */
		if (!err && i < 4)
			walk_fail(w, "a lookup found an invalid name", -EINVAL);
		if (err && err != -ENOENT)
			walk_err(w, "absent name lookup", err);
	}
	memset(name, 'q', sizeof(name));
	err = img_dir_lookup(w->img, dir, name, IMG_NAME_MAX + 1, &de);
	if (err != -ENAMETOOLONG)
		walk_fail(w, "a 257-byte name was not ENAMETOOLONG", err);
	err = img_dir_lookup(w->img, dir, name, IMG_NAME_MAX, &de);
	if (err && err != -ENOENT)
		walk_err(w, "long name lookup", err);
	if (last && last->name_len < IMG_NAME_MAX) {
		/* Just after the last name, and a prefix of it. */
		memcpy(name, last->name, last->name_len);
		name[last->name_len] = '\x01';
		err = img_dir_lookup(w->img, dir, name, last->name_len + 1,
				     &de);
		if (err && err != -ENOENT)
			walk_err(w, "absent name lookup", err);
		err = img_dir_lookup(w->img, dir, name, last->name_len - 1u,
				     &de);
		if (err && err != -ENOENT)
			walk_err(w, "prefix lookup", err);
	}
}

static void walk_dir(struct walk_state *w, uint64_t ref)
{
	struct img_dirent de, de2, found, last;
	uint64_t cookies[WALK_MAX_COOKIES];
	struct img_inode dir, child;
	struct img_dir_iter it;
	unsigned int ncookies = 0, nents = 0;
	bool have_last = false;
	int err;

	err = img_inode_get(w->img, ref, &dir);
	if (err) {
		walk_err(w, "directory inode", err);
		return;
	}
	if (dir.type != IMG_DIR)
		return;
	w->dirs++;
	err = img_dir_open(w->img, &dir, 0, &it);
	if (err) {
		walk_err(w, "opendir", err);
		return;
	}
	while (w->entries < WALK_MAX_ENTRIES &&
	       (err = img_dir_next(&it, &de)) == 1) {
		w->entries++;
		nents++;
		if (de.name_len == 0 || de.name_len > IMG_NAME_MAX ||
		    strlen(de.name) != de.name_len)
			walk_fail(w, "img_dir_next returned a bad name",
				  -EINVAL);
		if (ncookies < WALK_MAX_COOKIES && nents % 3 == 1)
			cookies[ncookies++] = de.next;
		last = de;
		have_last = true;

		/* Lookups of the first names and then of every 16th: each
		 * scans up to a metadata block of listing. */
		if (nents <= 16 || nents % 16 == 0) {
			err = img_dir_lookup(w->img, &dir, de.name, de.name_len,
					     &found);
			if (err)
				walk_err(w, "lookup of a listed name", err);
			if (w->sound && (err || found.ref != de.ref))
				walk_fail(w, "lookup of a listed name failed",
					  err ? err : -ENOENT);
		}

		/* NFS handles: the export table must agree with the tree. */
		if (w->sound && nents <= 16) {
			uint64_t xref;

			err = img_ino_to_ref(w->img, de.ino, &xref);
			if (err != -ENOTSUP && (err || xref != de.ref))
				walk_fail(
					w,
					"the export table disagrees with a listing",
					err ? err : -EINVAL);
		}

		err = img_inode_get(w->img, de.ref, &child);
		if (err) {
			walk_err(w, "inode", err);
			continue;
		}
		if (child.type == IMG_DIR) {
			if (w->qlen < WALK_MAX_DIRS)
				w->queue[w->qlen++] = child.ref;
			walk_xattrs(w, &child);
			continue;
		}
		walk_inode(w, &child);
	}
	if (err < 0)
		walk_err(w, "readdir", err);

	/* Resume from cookies, as a readdir that was interrupted would. */
	for (unsigned int i = 0; i < ncookies; i++) {
		err = img_dir_open(w->img, &dir, cookies[i], &it);
		if (err) {
			walk_err(w, "opendir at a cookie", err);
			continue;
		}
		err = img_dir_next(&it, &de2);
		if (err < 0)
			walk_err(w, "readdir at a cookie", err);
		if (w->sound && err == 1 && de2.next <= cookies[i])
			walk_fail(w, "a cookie resumed backwards", -EINVAL);
	}
	/* Cookies past the end and in the middle of an entry. */
	err = img_dir_open(w->img, &dir, UINT64_MAX, &it);
	if (!err && img_dir_next(&it, &de2) != 0)
		walk_fail(w, "a cookie past the end returned an entry",
			  -EINVAL);
	err = img_dir_open(w->img, &dir, 5, &it);
	if (!err) {
		for (int i = 0; i < 4 && (err = img_dir_next(&it, &de2)) == 1;
		     i++)
			;
		if (err < 0)
			walk_err(w, "readdir at an odd cookie", err);
	} else {
		walk_err(w, "opendir at an odd cookie", err);
	}
	walk_absent(w, &dir, have_last ? &last : NULL);
}

/* Step 4: walk as listing ahead does; only a crash is a failure here. */
static void walk_index(struct walk_state *w, const struct img_inode *root)
{
	const struct idx_walk_dir *d;
	struct idx_walk *iw;
	struct idx_dirs t;
	char *path;

	if (idx_walk_new(w->img, WALK_MAX_ENTRIES, &iw))
		return;
	idx_dirs_init(&t, 4, 1u << 20);
	if (idx_walk_add(iw, root->ref, root->ino, "", 0) ||
	    idx_dirs_add(&t, root->ino, NULL, root->ino, root->ref, NULL))
		goto out;
	while (idx_walk_next(iw, &d) == 1) {
		const char *slash = strrchr(d->path, '/');

		/* Every directory under the root, named by its last name:
		 * enough to exercise the table and the path builder. */
		if (slash &&
		    !idx_dirs_add(&t, root->ino, slash + 1, d->ino, d->ref,
				  NULL) &&
		    !idx_dirs_path(&t, root->ino, d->ino, "", &path))
			free(path);
		(void)idx_walk_descend(iw, d, NULL);
	}
out:
	idx_dirs_release(&t);
	idx_walk_free(iw);
}

static void walk_mount(struct walk_state *w)
{
	const struct img_super *sb = img_get_super(w->img);
	struct img_inode root;
	struct img_stats st;
	uint64_t ref;
	int err;

	err = img_inode_get(w->img, sb->root_ref, &root);
	if (err) {
		walk_err(w, "root inode", err);
		return;
	}
	walk_xattrs(w, &root);
	w->queue[w->qlen++] = root.ref;
	while (w->qhead < w->qlen && w->entries < WALK_MAX_ENTRIES)
		walk_dir(w, w->queue[w->qhead++]);

	/* NFS-style inode number lookups (export table). */
	for (uint32_t i = 0; i <= 8 && i <= sb->inode_count + 1; i++) {
		uint32_t ino = i == 8 ? sb->inode_count + 1 : i;
		struct img_inode x;

		err = img_ino_to_ref(w->img, ino, &ref);
		if (err)
			continue;
		err = img_inode_get(w->img, ref, &x);
		(void)err; /* export entries are not covered by img_check() */
	}
	img_get_stats(w->img, &st);
	(void)img_check_changed(w->img);
	walk_index(w, &root);
}

/*
 * walk_image_fd() - Open the image behind @fd and walk it.
 * @fd: an open file holding the image
 * @mode: 0 = no staging, 1 = staged first, 2 = metadata staged mid-walk
 * @name: input name for messages, or NULL
 *
 * Return: img_open()'s error, or 0 if the image was opened and walked.
 */
static int walk_image_fd(int fd, unsigned int mode, const char *name)
{
	struct img_opts o = {
		.meta_cache = 1u << 20,
		.data_cache = 4u << 20,
		.ram = 0,
		.stage = STAGE_NONE,
	};
	struct walk_state w = { .name = name };
	struct img_check_report rep;
	char path[64];
	int err;

	if (mode == 1) {
		o.ram = 64u << 20;
		o.stage = STAGE_FULL;
	} else if (mode == 2) {
		o.ram = 64u << 20;
		o.stage = STAGE_META;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = img_open(path, &o, &w.img);
	if (err)
		return err;
	if (mode == 1)
		while (stage_next(img_stage(w.img)) == 1)
			;
	err = img_check(w.img, &rep, 0);
	w.sound = err == 0;
	if (err == -ENOMEM)
		walk_fail(&w, "img_check ran out of memory", err);
	if (err == 0 && rep.errors)
		walk_fail(&w, "img_check counted errors but returned 0",
			  -EINVAL);
	if (mode == 2)
		while (stage_next(img_stage(w.img)) == 1)
			;
	walk_mount(&w);
	img_close(w.img);
	return 0;
}

/*
 * walk_image_buf() - Walk the image held in @data.
 * @data: image bytes
 * @size: their count
 * @name: input name for messages, or NULL
 *
 * Return: as walk_image_fd(), or -errno if the memfd could not be made.
 */
static __attribute__((unused)) int walk_image_buf(const uint8_t *data,
						  size_t size, const char *name)
{
	size_t done = 0;
	ssize_t n;
	int fd, err;

	fd = memfd_create("fuzz-image", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (done < size) {
		n = write(fd, data + done, size - done);
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			close(fd);
			return err;
		}
		done += (size_t)n;
	}
	err = walk_image_fd(fd, (unsigned int)(size % 3), name);
	close(fd);
	return err;
}

#endif /* SQC_TESTS_FUZZ_WALK_H */

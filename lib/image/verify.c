// SPDX-License-Identifier: MIT
/*
 * This file implements img_check(), the deepest of the three validation
 * depths: a walk of everything an image holds, the way a mount would read
 * it.  It is `mountctl check` and the image fuzz target.
 *
 * Directories are listed breadth first from the root with a queue, never
 * by recursion, so a deep or hostile tree cannot exhaust the stack.  Each
 * directory may be reached once only (a second path to it is a loop or a
 * hard-linked directory).  Every other inode is read once, however many
 * names it has, and its link count is compared with the names found.
 */
#define LOG_MOD "check"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image_i.h"
#include "util/log.h"

struct walk {
	struct img *img;
	struct img_check_report *rep;
	uint64_t max_errors;
	uint8_t *seen; /* bit per inode number: decoded already */
	uint32_t *names; /* names found per inode number */
	uint32_t *subdirs; /* subdirectories found per directory */
	uint32_t *nlink; /* link count each inode states */
	uint64_t *refs; /* inode reference each number was first met at */
	uint8_t *xseen; /* bit per xattr id: checked already */
	uint64_t *queue; /* directory inode refs to list */
	size_t qhead, qlen, qcap;
	int hard_err; /* -EIO or -ENOMEM: stop */
};

static bool too_many(const struct walk *w)
{
	return w->hard_err ||
	       (w->max_errors && w->rep->errors >= w->max_errors);
}

static void problem(struct walk *w, int err, const char *what, const char *path)
{
	if (err == -EIO || err == -ENOMEM) {
		w->hard_err = err;
		log_err("cannot check '%s': %s at '%s'", img_path(w->img), what,
			path);
		return;
	}
	w->rep->errors++;
	log_err("'%s': %s: %s: %s", img_path(w->img), path, what,
		err ? err_str(err) : "inconsistent");
}

static bool test_and_set(uint8_t *bits, uint32_t i)
{
	bool was = bits[i / 8] & (1u << (i % 8));

	bits[i / 8] |= (uint8_t)(1u << (i % 8));
	return was;
}

static int enqueue(struct walk *w, uint64_t ref)
{
	if (w->qlen == w->qcap) {
		size_t cap = w->qcap ? w->qcap * 2 : 256;
		uint64_t *q = realloc(w->queue, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		w->queue = q;
		w->qcap = cap;
	}
	w->queue[w->qlen++] = ref;
	return 0;
}

static void check_xattrs(struct walk *w, const struct img_inode *ino,
			 const char *path)
{
	char list[65536];
	char *value;
	uint64_t values;
	size_t len;
	int err;

	if (ino->xattr == IMG_NO_XATTR)
		return;
	/* Inodes with the same xattrs share an id: check each id once, and
	 * in one pass (a get per listed name would be quadratic). */
	if (ino->xattr < w->img->xattr_ids.count &&
	    test_and_set(w->xseen, ino->xattr))
		return;
	err = img_xattr_list(w->img, ino, list, sizeof(list), &len);
	if (err) {
		problem(w, err, "xattr list", path);
		return;
	}
	value = malloc(65536);
	if (!value) {
		w->hard_err = -ENOMEM;
		return;
	}
	err = img__xattr_check(w->img, ino, value, 65536, &values);
	if (err)
		problem(w, err, "xattr value", path);
	else
		w->rep->xattrs += values;
	free(value);
}

static void check_file(struct walk *w, const struct img_inode *ino,
		       const char *path)
{
	struct img_span spans[64];
	uint64_t off = 0;
	unsigned int n;
	int err;

	while (off < ino->size && !too_many(w)) {
		err = img_file_spans(w->img, NULL, ino, off, 1u << 22, spans,
				     ARRAY_SIZE(spans), &n);
		if (err) {
			problem(w, err, "file data", path);
			return;
		}
		if (n == 0) {
			problem(w, 0, "file data ends early", path);
			return;
		}
		for (unsigned int i = 0; i < n; i++)
			off += spans[i].len;
		img_spans_put(w->img, spans, n);
	}
	w->rep->files++;
	w->rep->file_bytes += off;
}

static void check_inode(struct walk *w, const struct img_inode *ino,
			const char *path)
{
	char target[IMG_SYMLINK_MAX + 1];
	int err;

	w->rep->inodes++;
	w->nlink[ino->ino] = ino->nlink;
	switch (ino->type) {
	case IMG_REG:
		check_file(w, ino, path);
		break;
	case IMG_SYMLINK:
		err = img_readlink(w->img, ino, target, sizeof(target));
		if (err)
			problem(w, err, "symlink target", path);
		else
			w->rep->symlinks++;
		break;
	default:
		break;
	}
	check_xattrs(w, ino, path);
}

static void list_dir(struct walk *w, uint64_t ref)
{
	struct img_inode dir, child;
	struct img_dir_iter it;
	struct img_dirent de;
	char prev[IMG_NAME_MAX + 1] = "";
	size_t prev_len = 0;
	char path[64];
	int err;

	snprintf(path, sizeof(path), "directory at %llx",
		 (unsigned long long)ref);
	err = img_inode_get(w->img, ref, &dir);
	if (err) {
		problem(w, err, "inode", path);
		return;
	}
	snprintf(path, sizeof(path), "directory inode %u", dir.ino);
	w->rep->dirs++;
	err = img__dir_check_index(w->img, &dir);
	if (err)
		problem(w, err, "directory index", path);
	err = img_dir_open(w->img, &dir, 0, &it);
	while (!err && !too_many(w) && (err = img_dir_next(&it, &de)) == 1) {
		int c = memcmp(prev, de.name, MIN(prev_len, de.name_len));

		if (prev_len && (c > 0 || (c == 0 && prev_len >= de.name_len)))
			problem(w, 0, "entries out of order", de.name);
		memcpy(prev, de.name, de.name_len + 1);
		prev_len = de.name_len;

		err = img_inode_get(w->img, de.ref, &child);
		if (err) {
			problem(w, err, "inode", de.name);
			err = 0;
			continue;
		}
		if (child.ino != de.ino || child.type != de.type) {
			problem(w, 0, "entry disagrees with its inode",
				de.name);
			continue;
		}
		w->names[child.ino]++;
		if (w->refs[child.ino] && w->refs[child.ino] != child.ref + 1)
			problem(w, 0, "two inodes share an inode number",
				de.name);
		w->refs[child.ino] = child.ref + 1;
		if (child.type == IMG_DIR) {
			w->subdirs[dir.ino]++;
			if (child.dir.parent != dir.ino)
				problem(w, 0, "wrong parent", de.name);
			if (test_and_set(w->seen, child.ino)) {
				problem(w, 0, "directory reached twice (loop)",
					de.name);
				continue;
			}
			w->rep->inodes++;
			w->nlink[child.ino] = child.nlink;
			check_xattrs(w, &child, de.name);
			if (enqueue(w, child.ref))
				w->hard_err = -ENOMEM;
			continue;
		}
		if (!test_and_set(w->seen, child.ino))
			check_inode(w, &child, de.name);
	}
	if (err < 0)
		problem(w, err, "listing", path);
}

/*
 * After the walk, inode @i: does its link count match the names found,
 * and does the export table (NFS handles) agree with the tree?
 */
static void check_counts(struct walk *w, uint32_t i)
{
	struct img *img = w->img;
	uint32_t want = w->names[i];
	char what[64];
	uint64_t ref;
	int err;

	snprintf(what, sizeof(what), "inode %u", i);
	if (w->subdirs[i] || w->nlink[i] == 2 + w->subdirs[i])
		want = 2 + w->subdirs[i];
	if (w->nlink[i] != want)
		problem(w, 0, "link count does not match the names found",
			what);
	if (!img->exports.count)
		return;
	err = img_ino_to_ref(img, i, &ref);
	if (!err && ref != w->refs[i] - 1)
		err = IMG_CORRUPT(
			img, "export table maps inode %u to %llx, not %llx", i,
			(unsigned long long)ref,
			(unsigned long long)(w->refs[i] - 1));
	if (err)
		problem(w, err, "export table", what);
}

int img_check(struct img *img, struct img_check_report *rep,
	      uint64_t max_errors)
{
	uint32_t n = img->sb.inode_count + 2;
	struct img_inode root;
	struct walk w = { .img = img, .rep = rep, .max_errors = max_errors };
	int err;

	memset(rep, 0, sizeof(*rep));
	w.seen = calloc(n / 8 + 1, 1);
	w.names = calloc(n, sizeof(*w.names));
	w.subdirs = calloc(n, sizeof(*w.subdirs));
	w.nlink = calloc(n, sizeof(*w.nlink));
	w.refs = calloc(n, sizeof(*w.refs));
	w.xseen = calloc(img->xattr_ids.count / 8 + 1, 1);
	if (!w.seen || !w.names || !w.subdirs || !w.nlink || !w.refs ||
	    !w.xseen) {
		err = -ENOMEM;
		goto out_free;
	}
	err = img_inode_get(img, img->sb.root_ref, &root);
	if (err) {
		problem(&w, err, "root inode", "/");
		goto out_done;
	}
	test_and_set(w.seen, root.ino);
	w.refs[root.ino] = root.ref + 1;
	w.names[root.ino]++;
	w.nlink[root.ino] = root.nlink;
	rep->inodes++;
	check_xattrs(&w, &root, "/");
	err = enqueue(&w, root.ref);
	if (err)
		goto out_free;
	while (w.qhead < w.qlen && !too_many(&w))
		list_dir(&w, w.queue[w.qhead++]);

	/* Link counts: a file's names; a directory's 2 + subdirectories. */
	for (uint32_t i = 1; i <= img->sb.inode_count && !too_many(&w); i++)
		if (w.seen[i / 8] & (1u << (i % 8)))
			check_counts(&w, i);
out_done:
	err = w.hard_err ? w.hard_err : rep->errors ? -EFSCORRUPTED : 0;
out_free:
	free(w.seen);
	free(w.names);
	free(w.subdirs);
	free(w.nlink);
	free(w.refs);
	free(w.xseen);
	free(w.queue);
	return err;
}

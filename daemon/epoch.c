// SPDX-License-Identifier: MIT
/*
 * This file implements the "order" control request (epoch.h): it checks
 * each path of the body, finds its file in the image, adds the file's
 * ranges to a new epoch order (img_file_order()), and only once every
 * path is found replaces the image's order with it.
 *
 * Paths come from the mount's user, not the image, and are treated like
 * names from an image: empty names, '.' and '..' are refused, never
 * resolved.  A symlink as the last name is followed (ImageFolder takes
 * one for a sample), within the image only: a target that is absolute
 * or climbs out of the root is refused.  Files of a class directory come in a random order, so the
 * directories found are remembered (struct dir_memo) and each costs one
 * lookup per component once.
 */
#define LOG_MOD "epoch"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "epoch.h"
#include "util/err.h"
#include "util/hash.h"
#include "util/log.h"

#define MEMO_SLOTS 4096 /* directories remembered (a power of two) */
#define SHOWN_MAX 48 /* bytes of a path a refusal shows */
#define LINKS_MAX 8 /* symlinks followed for one path */

/* One remembered directory: its path and inode. */
struct memo_slot {
	char *path; /* malloc'd, or NULL */
	size_t len;
	struct img_inode ino;
};

struct dir_memo {
	struct memo_slot slot[MEMO_SLOTS];
};

static void memo_release(struct dir_memo *m)
{
	for (size_t i = 0; i < MEMO_SLOTS; i++)
		free(m->slot[i].path);
}

/* Is [@p, @p + @len) a relative path of names, none empty, '.' or '..'? */
static bool is_clean_path(const char *p, size_t len)
{
	size_t i = 0, n;

	if (!len || len >= PATH_MAX)
		return false;
	while (i < len) {
		n = strcspn(p + i, "/");
		if (n > len - i)
			n = len - i;
		if (!img_name_is_valid(p + i, n))
			return false;
		i += n;
		if (i < len && ++i == len)
			return false; /* a trailing '/' */
	}
	return true;
}

/* Find the directory at [@p, @p + @len) below the root ("" is the
 * root).  Return: 0; -ENOENT; -ENOTDIR; -errno. */
static int find_dir(struct sqcd *d, struct dir_memo *m, const char *p,
		    size_t len, struct img_inode *out)
{
	struct memo_slot *s = &m->slot[fnv1a64(p, len) & (MEMO_SLOTS - 1)];
	struct img_dirent de;
	size_t i = 0, n;
	char *copy;
	int err;

	if (s->path && s->len == len && !memcmp(s->path, p, len)) {
		*out = s->ino;
		return 0;
	}
	err = img_inode_get(d->img, d->root_ref, out);
	while (!err && i < len) {
		n = strcspn(p + i, "/");
		if (n > len - i)
			n = len - i;
		err = img_dir_lookup(d->img, out, p + i, n, &de);
		if (!err)
			err = img_inode_get(d->img, de.ref, out);
		if (!err && out->type != IMG_DIR)
			err = -ENOTDIR;
		i += n + 1;
	}
	if (err)
		return err;
	copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, p, len);
		free(s->path);
		s->path = copy;
		s->len = len;
		s->ino = *out;
	}
	return 0;
}

/*
 * The path a symlink at [@path, @path + @dlen) / NAME points to, made
 * relative to the root in @out (PATH_MAX bytes): its target after the
 * link's directory, '.' and '..' taken away name by name.
 * Return: 0; -EXDEV if it leaves the image (absolute, or '..' past the
 * root); -ENAMETOOLONG.
 */
static int link_path(const char *path, size_t dlen, const char *target,
		     char *out)
{
	size_t n = 0, k;
	const char *p = target;

	if (*target == '/')
		return -EXDEV;
	if (dlen >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(out, path, dlen);
	n = dlen;
	while (*p) {
		k = strcspn(p, "/");
		if (k == 2 && p[0] == '.' && p[1] == '.') {
			if (!n)
				return -EXDEV;
			while (n && out[n - 1] != '/')
				n--;
			n = n ? n - 1 : 0;
		} else if (k && !(k == 1 && p[0] == '.')) {
			if (n + 1 + k >= PATH_MAX)
				return -ENAMETOOLONG;
			if (n)
				out[n++] = '/';
			memcpy(out + n, p, k);
			n += k;
		}
		p += k + (p[k] == '/');
	}
	out[n] = '\0';
	return n ? 0 : -EISDIR; /* the root */
}

/* Find the file at [@path, @path + @len), following up to @links
 * symlinks in its last name.  Return: 0; -errno. */
static int find_file(struct sqcd *d, struct dir_memo *m, const char *path,
		     size_t len, unsigned int links, struct img_inode *f)
{
	const char *slash = memrchr(path, '/', len);
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	const char *base = slash ? slash + 1 : path;
	char target[PATH_MAX], *next;
	struct img_inode dir;
	struct img_dirent de;
	int err;

	err = find_dir(d, m, path, dlen, &dir);
	if (!err)
		err = img_dir_lookup(d->img, &dir, base,
				     len - (size_t)(base - path), &de);
	if (!err)
		err = img_inode_get(d->img, de.ref, f);
	if (err || f->type != IMG_SYMLINK)
		return err;
	if (!links)
		return -ELOOP;
	err = img_readlink(d->img, f, target, sizeof(target));
	if (err)
		return err == -ERANGE ? -ENAMETOOLONG : err;
	next = malloc(PATH_MAX);
	if (!next)
		return -ENOMEM;
	err = link_path(path, dlen, target, next);
	if (!err)
		err = find_file(d, m, next, strlen(next), links - 1, f);
	free(next);
	return err;
}

/* Find the regular file at @path and add it to @plan. */
static int add_file(struct sqcd *d, struct dir_memo *m, const char *path,
		    size_t len, struct img_order_plan *plan)
{
	struct img_inode f;
	int err;

	err = find_file(d, m, path, len, LINKS_MAX, &f);
	if (!err && f.type != IMG_REG)
		err = f.type == IMG_DIR ? -EISDIR : -EINVAL;
	if (!err)
		err = img_file_order(d->img, &f, plan);
	return err;
}

/* Refuse the order at entry @i (1-based), path @p of @len bytes. */
static void refuse_at(struct ctl_reply *rep, uint64_t i, const char *p,
		      size_t len, const char *why)
{
	char shown[SHOWN_MAX + 4];
	size_t n = len > SHOWN_MAX ? SHOWN_MAX : len;

	memcpy(shown, p, n);
	strcpy(shown + n, len > n ? "..." : "");
	for (size_t k = 0; k < n; k++)
		if ((unsigned char)shown[k] < 0x20)
			shown[k] = '?';
	ctl_reply_refuse(rep, "order entry %llu '%s': %s",
			 (unsigned long long)i, shown, why);
}

static const char *why_not(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such file in the image";
	case -ENOTDIR:
		return "a component is not a directory";
	case -EISDIR:
		return "a directory, not a file";
	case -EINVAL:
		return "not a regular file";
	case -ENAMETOOLONG:
		return "a name is too long";
	case -EXDEV:
		return "a symlink that leaves the image";
	case -ELOOP:
		return "too many symlinks";
	default:
		return err_str(err);
	}
}

/* Add every path of @body to @plan.  Return: true if all were added. */
static bool build(struct sqcd *d, const char *body, uint64_t len,
		  struct img_order_plan *plan, struct ctl_reply *rep)
{
	struct dir_memo *m = calloc(1, sizeof(*m));
	const char *p = body, *end = body + len;
	uint64_t i = 0;
	size_t n;
	int err = 0;

	if (!m) {
		ctl_reply_refuse(rep, "%s", err_str(-ENOMEM));
		return false;
	}
	for (; p < end && !err; p += n + 1) {
		n = strlen(p); /* the body ends in a NUL past @end */
		i++;
		if (p + n == end) {
			refuse_at(rep, i, p, n, "does not end in a NUL");
			err = -EINVAL;
		} else if (!is_clean_path(p, n)) {
			refuse_at(
				rep, i, p, n,
				"not a path relative to the mount's root, or it has empty, '.' or '..' names");
			err = -EINVAL;
		} else {
			err = add_file(d, m, p, n, plan);
			if (err)
				refuse_at(rep, i, p, n, why_not(err));
		}
	}
	memo_release(m);
	free(m);
	return !err;
}

void epoch_order_cmd(struct sqcd *d, const char *body, uint64_t len,
		     struct ctl_reply *rep)
{
	struct img_order_plan plan = { 0 };
	struct order_stats os;
	uint64_t files, bytes, staged;
	int err;

	order_get_stats(img_order(d->img), &os);
	if (!os.window) {
		ctl_reply_refuse(
			rep, "epoch order off (mounted with order_window=0)");
		return;
	}
	if (!build(d, body, len, &plan, rep)) {
		img_order_plan_release(&plan);
		return;
	}
	files = plan.items;
	staged = plan.staged;
	err = img_order_set(d->img, &plan);
	if (err) {
		ctl_reply_refuse(rep, "%s", err_str(err));
		return;
	}
	/* Ranges that files share are read once: count them once. */
	order_get_stats(img_order(d->img), &os);
	bytes = os.planned;
	log_info(
		"epoch order: %llu files, %llu bytes to read ahead (%llu staged)",
		(unsigned long long)files, (unsigned long long)bytes,
		(unsigned long long)staged);
	rep->order.files = files;
	rep->order.bytes = bytes;
	rep->order.staged = staged;
	rep->order.window = os.window;
}

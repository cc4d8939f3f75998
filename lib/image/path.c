// SPDX-License-Identifier: MIT
/*
 * This file implements resolving a path of the image to its inode
 * (img_resolve()), for paths that come from users, not the image: empty
 * names, '.' and '..' are refused, never resolved.  A symlink as the last
 * name is followed (ImageFolder takes one for a sample), within the image
 * only: a target that is absolute or climbs out of the root is refused.
 * Callers resolve many paths of the same directories (the files of a
 * class directory, in a random order), so the directories found are
 * remembered (struct img_paths) and each costs one lookup per component
 * once.
 */
#define LOG_MOD "image"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "image/image_i.h"
#include "util/hash.h"

#define MEMO_SLOTS 4096 /* directories remembered (a power of two) */

/* One remembered directory: its path and inode. */
struct memo_slot {
	char *path; /* malloc'd, or NULL */
	size_t len;
	struct img_inode ino;
};

struct img_paths {
	struct img *img;
	struct memo_slot slot[MEMO_SLOTS];
};

int img_paths_new(struct img *img, struct img_paths **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->img = img;
	return 0;
}

void img_paths_free(struct img_paths *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < MEMO_SLOTS; i++)
		free(ps->slot[i].path);
	free(ps);
}

/* Bytes of the name at @p, @rest bytes before the path's end. */
static size_t name_len(const char *p, size_t rest)
{
	const char *slash = memchr(p, '/', rest);

	return slash ? (size_t)(slash - p) : rest;
}

/* Is [@p, @p + @len) a relative path of names, none empty, '.' or '..'?
 * Return: 0; -EINVAL; -ENAMETOOLONG for a name or the path too long. */
static int check_path(const char *p, size_t len)
{
	size_t i = 0, n;

	if (!len)
		return -EINVAL;
	if (len >= PATH_MAX)
		return -ENAMETOOLONG;
	while (i < len) {
		n = name_len(p + i, len - i);
		if (n > IMG_NAME_MAX)
			return -ENAMETOOLONG;
		if (!img_name_is_valid(p + i, n))
			return -EINVAL;
		i += n;
		if (i < len && ++i == len)
			return -EINVAL; /* a trailing '/' */
	}
	return 0;
}

/* Find the directory at [@p, @p + @len) below the root ("" is the
 * root).  Return: 0; -ENOENT; -ENOTDIR; -errno. */
static int find_dir(struct img_paths *ps, const char *p, size_t len,
		    struct img_inode *out)
{
	struct memo_slot *s = &ps->slot[fnv1a64(p, len) & (MEMO_SLOTS - 1)];
	struct img *img = ps->img;
	struct img_dirent de;
	size_t i = 0, n;
	char *copy;
	int err;

	if (s->path && s->len == len && !memcmp(s->path, p, len)) {
		*out = s->ino;
		return 0;
	}
	err = img_inode_get(img, img->sb.root_ref, out);
	while (!err && i < len) {
		n = name_len(p + i, len - i);
		err = img_dir_lookup(img, out, p + i, n, &de);
		if (!err)
			err = img_inode_get(img, de.ref, out);
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
 * root); -EISDIR for the root; -ENAMETOOLONG.
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

/* Find the inode at [@path, @path + @len), a clean path, following up to
 * @links symlinks in its last name.  Return: 0; -errno. */
static int find(struct img_paths *ps, const char *path, size_t len,
		unsigned int links, struct img_inode *f)
{
	const char *slash = memrchr(path, '/', len);
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	const char *base = slash ? slash + 1 : path;
	char target[PATH_MAX], *next;
	struct img_inode dir;
	struct img_dirent de;
	int err;

	err = find_dir(ps, path, dlen, &dir);
	if (!err)
		err = img_dir_lookup(ps->img, &dir, base,
				     len - (size_t)(base - path), &de);
	if (!err)
		err = img_inode_get(ps->img, de.ref, f);
	if (err || f->type != IMG_SYMLINK)
		return err;
	if (!links)
		return -ELOOP;
	err = img_readlink(ps->img, f, target, sizeof(target));
	if (err)
		return err == -ERANGE ? -ENAMETOOLONG : err;
	next = malloc(PATH_MAX);
	if (!next)
		return -ENOMEM;
	err = link_path(path, dlen, target, next);
	if (!err)
		err = find(ps, next, strlen(next), links - 1, f);
	free(next);
	return err;
}

int img_resolve(struct img_paths *ps, const char *path, size_t len,
		struct img_inode *out)
{
	int err = check_path(path, len);

	return err ? err : find(ps, path, len, IMG_LINKS_MAX, out);
}

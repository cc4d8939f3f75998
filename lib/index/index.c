// SPDX-License-Identifier: MIT
/*
 * This file implements lib/index (see index.h): a table of directories by
 * inode number, and a depth-first walk of an image's directories in
 * listing order.
 *
 * Both hash inode numbers into open-addressing tables with linear probing
 * and no deletion (an image never changes, so a directory never leaves).
 * The walk keeps a stack of the directories it has still to return, the
 * next on top, and the set of those it has gone through: every inode
 * number in the set is one of the image's (1 .. inode_count) and is added
 * once, so a walk returns at most inode_count directories and ends, and a
 * directory listed twice (a loop in a damaged image) is reported as
 * corruption instead of being walked again.
 */
#define LOG_MOD "index"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "util/err.h"
#include "util/log.h"

#define DIRS_MIN_CAP 1024 /* slots of a first table, by default */
#define SET_MIN_CAP 256 /* slots of a walk's first set */

static size_t hash_ino(uint32_t ino, size_t cap)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

/*
 * Report corruption found by a walk: logged once per place in this file
 * for the process (walks are short-lived; the image is the same), and
 * turned into -EFSCORRUPTED.
 */
#define IDX_CORRUPT(img, ...) \
	idx_corrupt((img), __func__, __LINE__, __VA_ARGS__)

static _Atomic uint64_t corrupt_logged; /* bit (line % 64) logged */

static int idx_corrupt(struct img *img, const char *func, int line,
		       const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int idx_corrupt(struct img *img, const char *func, int line,
		       const char *fmt, ...)
{
	uint64_t bit = 1ull << ((unsigned int)line % 64);
	char msg[256];
	va_list ap;

	if (atomic_fetch_or(&corrupt_logged, bit) & bit)
		return -EFSCORRUPTED;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_err("corrupt image '%s': %s [%s:%d]", img_path(img), msg, func,
		line);
	return -EFSCORRUPTED;
}

/* -------------------------------------------------------------------- */
/* The directory table. */

void idx_dirs_init(struct idx_dirs *t, uint32_t min_cap, uint64_t budget)
{
	uint32_t cap = 2;

	while (cap < min_cap && cap < (1u << 30))
		cap *= 2;
	*t = (struct idx_dirs){ .min_cap = cap, .budget = budget };
}

void idx_dirs_release(struct idx_dirs *t)
{
	for (uint32_t i = 0; i < t->cap; i++)
		free(t->slot[i].name);
	free(t->slot);
	t->slot = NULL;
	t->cap = t->len = 0;
	t->name_bytes = 0;
}

uint64_t idx_dirs_bytes(const struct idx_dirs *t)
{
	return (uint64_t)t->cap * sizeof(*t->slot) + t->name_bytes;
}

int idx_dirs_find(const struct idx_dirs *t, uint32_t ino, struct idx_dir **out)
{
	size_t i;

	if (!t->cap || !ino)
		return -ENOENT;
	for (i = hash_ino(ino, t->cap); t->slot[i].ino;
	     i = (i + 1) & (t->cap - 1)) {
		if (t->slot[i].ino == ino) {
			*out = &t->slot[i];
			return 0;
		}
	}
	return -ENOENT;
}

/* Double the slots (or make the first table).  Return: 0; -ENOSPC past
 * the budget; -ENOMEM. */
static int dirs_grow(struct idx_dirs *t)
{
	uint64_t ncap = t->cap ? 2ull * t->cap : t->min_cap;
	struct idx_dir *n;
	size_t i;

	if (ncap > (1ull << 31) ||
	    ncap * sizeof(*n) + t->name_bytes > t->budget)
		return -ENOSPC;
	n = calloc((size_t)ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (uint32_t j = 0; j < t->cap; j++) {
		if (!t->slot[j].ino)
			continue;
		for (i = hash_ino(t->slot[j].ino, ncap); n[i].ino;
		     i = (i + 1) & (ncap - 1))
			;
		n[i] = t->slot[j];
	}
	free(t->slot);
	t->slot = n;
	t->cap = (uint32_t)ncap;
	return 0;
}

int idx_dirs_add(struct idx_dirs *t, uint32_t parent, const char *name,
		 uint32_t ino, uint64_t ref, struct idx_dir **out)
{
	size_t nlen = name ? strlen(name) + 1 : 0;
	struct idx_dir *e;
	size_t i;
	int err;

	if (!ino)
		return -EINVAL;
	if (!idx_dirs_find(t, ino, &e))
		goto out;
	/* At most half full, so that probes stay short. */
	if (2ull * (t->len + 1) > t->cap) {
		err = dirs_grow(t);
		if (err)
			return err;
	}
	if (idx_dirs_bytes(t) + nlen > t->budget)
		return -ENOSPC;
	for (i = hash_ino(ino, t->cap); t->slot[i].ino;
	     i = (i + 1) & (t->cap - 1))
		;
	e = &t->slot[i];
	e->name = NULL;
	if (name) {
		e->name = malloc(nlen);
		if (!e->name)
			return -ENOMEM;
		memcpy(e->name, name, nlen);
	}
	e->ino = ino;
	e->ref = ref;
	e->parent = parent;
	e->count = 0;
	e->state = 0;
	t->len++;
	t->name_bytes += nlen;
out:
	if (out)
		*out = e;
	return 0;
}

int idx_dirs_path(const struct idx_dirs *t, uint32_t top, uint32_t ino,
		  const char *prefix, char **out)
{
	const char *names[IDX_DEPTH_MAX];
	size_t len = strlen(prefix), n = 0;
	struct idx_dir *e;
	char *path, *p;

	while (ino != top) {
		if (idx_dirs_find(t, ino, &e) || !e->name)
			return -ENOENT;
		if (n == IDX_DEPTH_MAX)
			return -ELOOP;
		names[n++] = e->name;
		len += 1 + strlen(e->name);
		if (len >= PATH_MAX)
			return -ENAMETOOLONG;
		ino = e->parent;
	}
	path = malloc(len + 1);
	if (!path)
		return -ENOMEM;
	p = stpcpy(path, prefix);
	while (n) {
		*p++ = '/';
		p = stpcpy(p, names[--n]);
	}
	*out = path;
	return 0;
}

/* -------------------------------------------------------------------- */
/* The walk. */

/* Inode numbers gone through: open addressing (0 is never one). */
struct ino_set {
	uint32_t *slot; /* the table, or NULL */
	size_t cap; /* slots, a power of two, or 0 */
	size_t len; /* slots in use */
};

struct idx_walk {
	struct img *img; /* the image walked */
	uint32_t inode_count; /* its inode numbers are 1 .. this */
	uint64_t entries_left; /* entries it may still read */
	struct ino_set seen; /* directories gone through */
	struct idx_walk_dir *stack; /* to return, the next on top */
	size_t len; /* directories on @stack */
	size_t cap; /* room on @stack */
	uint64_t path_bytes; /* bytes of the paths on @stack */
	struct idx_walk_dir cur; /* the last one returned (owns its path) */
};

/* Add @ino to @s.  Return: 1 if added; 0 if it was there; -ENOMEM. */
static int set_add(struct ino_set *s, uint32_t ino)
{
	size_t i;

	if (2 * (s->len + 1) > s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : SET_MIN_CAP;
		uint32_t *n = calloc(ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (size_t j = 0; j < s->cap; j++) {
			if (!s->slot[j])
				continue;
			for (i = hash_ino(s->slot[j], ncap); n[i];
			     i = (i + 1) & (ncap - 1))
				;
			n[i] = s->slot[j];
		}
		free(s->slot);
		s->slot = n;
		s->cap = ncap;
	}
	for (i = hash_ino(ino, s->cap); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == ino)
			return 0;
	s->slot[i] = ino;
	s->len++;
	return 1;
}

int idx_walk_new(struct img *img, uint64_t entries, struct idx_walk **out)
{
	struct idx_walk *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->img = img;
	w->inode_count = img_get_super(img)->inode_count;
	w->entries_left = entries;
	*out = w;
	return 0;
}

void idx_walk_free(struct idx_walk *w)
{
	if (!w)
		return;
	while (w->len)
		free(w->stack[--w->len].path);
	free(w->stack);
	free(w->cur.path);
	free(w->seen.slot);
	free(w);
}

/* Push @d, whose path the stack takes over.  Return: 0; -ENOMEM. */
static int stack_push(struct idx_walk *w, struct idx_walk_dir d)
{
	if (w->len == w->cap) {
		size_t ncap = w->cap ? 2 * w->cap : 64;
		struct idx_walk_dir *n = realloc(w->stack, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->stack = n;
		w->cap = ncap;
	}
	w->stack[w->len++] = d;
	w->path_bytes += strlen(d.path) + 1;
	return 0;
}

int idx_walk_add(struct idx_walk *w, uint64_t ref, uint32_t ino,
		 const char *path, unsigned int depth)
{
	char *p;
	int err;

	if (!ino || ino > w->inode_count)
		return IDX_CORRUPT(w->img, "directory inode number %u", ino);
	err = set_add(&w->seen, ino);
	if (err <= 0)
		return err ? err : -EEXIST;
	p = strdup(path);
	if (!p)
		return -ENOMEM;
	err = stack_push(w, (struct idx_walk_dir){ ref, ino, depth, p });
	if (err)
		free(p);
	return err;
}

int idx_walk_next(struct idx_walk *w, const struct idx_walk_dir **out)
{
	free(w->cur.path);
	w->cur.path = NULL;
	if (!w->len)
		return 0;
	w->cur = w->stack[--w->len];
	w->path_bytes -= strlen(w->cur.path) + 1;
	*out = &w->cur;
	return 1;
}

bool idx_walk_is_spent(const struct idx_walk *w)
{
	return !w->entries_left;
}

uint64_t idx_walk_bytes(const struct idx_walk *w)
{
	return w->cap * sizeof(*w->stack) + w->path_bytes +
	       w->seen.cap * sizeof(*w->seen.slot);
}

/* Push subdirectory @de of @dir.  Return: 0 (also when it is left out:
 * too deep or too long); -EFSCORRUPTED if gone through already; -ENOMEM. */
static int push_subdir(struct idx_walk *w, const struct idx_walk_dir *dir,
		       const struct img_dirent *de)
{
	size_t dlen = strlen(dir->path), nlen = de->name_len;
	char *p;
	int err;

	err = set_add(&w->seen, de->ino);
	if (err < 0)
		return err;
	if (!err)
		return IDX_CORRUPT(
			w->img,
			"directory inode %u is listed twice (in '%s' as '%s')",
			de->ino, dir->path, de->name);
	if (dlen + 1 + nlen >= PATH_MAX || dir->depth + 1 >= IDX_DEPTH_MAX)
		return 0;
	p = malloc(dlen + 1 + nlen + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p, dir->path, dlen);
	p[dlen] = '/';
	memcpy(p + dlen + 1, de->name, nlen + 1);
	err = stack_push(w, (struct idx_walk_dir){ de->ref, de->ino,
						   dir->depth + 1, p });
	if (err)
		free(p);
	return err;
}

/* Reverse the top @n directories of the stack: the first listed comes
 * out first. */
static void stack_reverse_top(struct idx_walk *w, size_t n)
{
	struct idx_walk_dir *lo = w->stack + w->len - n, *hi = lo + n - 1;

	for (; n && lo < hi; lo++, hi--) {
		struct idx_walk_dir tmp = *lo;

		*lo = *hi;
		*hi = tmp;
	}
}

int idx_walk_descend(struct idx_walk *w, const struct idx_walk_dir *dir,
		     const char *after)
{
	size_t base = w->len;
	struct img_inode ino;
	struct img_dir_iter it;
	struct img_dirent de;
	bool past = !after;
	int err;

	err = img_inode_get(w->img, dir->ref, &ino);
	if (err)
		return err;
	if (ino.type != IMG_DIR || ino.ino != dir->ino)
		return IDX_CORRUPT(
			w->img, "entry of directory %u is inode %u of type %u",
			dir->ino, ino.ino, ino.type);
	err = img_dir_open(w->img, &ino, 0, &it);
	while (!err && w->entries_left && (err = img_dir_next(&it, &de)) == 1) {
		err = 0;
		w->entries_left--;
		if (!past) {
			past = !strcmp(de.name, after);
			continue;
		}
		if (de.type == IMG_DIR)
			err = push_subdir(w, dir, &de);
	}
	stack_reverse_top(w, w->len - base);
	return err;
}

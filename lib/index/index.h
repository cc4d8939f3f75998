/* SPDX-License-Identifier: MIT */
/*
 * This file declares lib/index: what the daemon needs to go through an
 * image's directories in the order a reader does, without FUSE.
 *
 *   struct idx_dirs	a table of directories by inode number: where each
 *			is in the image, its parent and its name, so that the
 *			path of any directory the table holds can be built.
 *			It grows with the directories added, up to a byte
 *			budget.
 *   struct idx_walk	a depth-first walk of directories in listing order
 *			(the order of `find`, os.walk and ImageFolder), read
 *			from the image's directory table.  It goes through
 *			each directory once, so it ends after at most the
 *			image's inode count of them even on a damaged image:
 *			a directory reached twice (a cycle) is corruption.
 *
 * Neither takes a lock: the caller serializes the calls on one object.
 */
#ifndef SQC_INDEX_INDEX_H
#define SQC_INDEX_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/image.h"

#define IDX_DEPTH_MAX 256 /* directory levels below a walk's top, at most */

/* One directory of a struct idx_dirs. */
struct idx_dir {
	uint64_t ref; /* its inode reference */
	uint32_t ino; /* its inode number; 0 marks a free slot */
	uint32_t parent; /* its parent's inode number */
	char *name; /* its name in the parent; NULL for the top */
	uint32_t count; /* the caller's: lib/index never reads it */
	uint8_t state; /* the caller's: lib/index never reads it */
};

/* Directories by inode number: open addressing, linear probing. */
struct idx_dirs {
	struct idx_dir *slot; /* the table; NULL until the first add */
	uint32_t cap; /* slots, a power of two, or 0 */
	uint32_t len; /* slots in use */
	uint32_t min_cap; /* slots of the first table */
	uint64_t name_bytes; /* bytes of the names held */
	uint64_t budget; /* bytes the table and names may take */
};

/**
 * idx_dirs_init() - Set up an empty directory table.
 * @t: the caller's storage
 * @min_cap: slots of the first table (rounded up to a power of two, at
 *	least 2); small values make lookups collide, for tests
 * @budget: bytes the slots and names may take, at most
 *
 * Context: any thread; cannot fail (nothing is allocated yet).
 */
void idx_dirs_init(struct idx_dirs *t, uint32_t min_cap, uint64_t budget);

/**
 * idx_dirs_release() - Free what the table holds.
 * @t: a table from idx_dirs_init()
 *
 * Context: nobody else uses @t; cannot fail.  @t may be set up again.
 */
void idx_dirs_release(struct idx_dirs *t);

/**
 * idx_dirs_add() - Remember directory @ino.
 * @t: the table
 * @parent: its parent's inode number (its own for the top)
 * @name: its name in @parent, NUL-terminated, or NULL for the top
 * @ino: its inode number, not 0
 * @ref: its inode reference
 * @out: set to its entry (valid until the next add or release), or NULL
 *
 * A directory already held keeps its entry: the image never changes, so
 * neither does where it is.
 *
 * Return: 0; -EINVAL if @ino is 0; -ENOSPC if the budget would be passed;
 * -ENOMEM.
 * Context: the caller serializes calls on @t.
 */
int idx_dirs_add(struct idx_dirs *t, uint32_t parent, const char *name,
		 uint32_t ino, uint64_t ref, struct idx_dir **out);

/**
 * idx_dirs_find() - Look directory @ino up.
 * @t: the table
 * @ino: its inode number
 * @out: set to its entry (valid until the next add or release)
 *
 * Return: 0; -ENOENT if the table does not hold it.
 * Context: the caller serializes calls on @t.
 */
int idx_dirs_find(const struct idx_dirs *t, uint32_t ino, struct idx_dir **out);

/**
 * idx_dirs_path() - Build the path of directory @ino from the names held.
 * @t: the table
 * @top: the inode number the path starts from (the root)
 * @ino: the directory
 * @prefix: what the path starts with (the mountpoint), NUL-terminated
 * @out: set to a new string, "@prefix/name/.../name"
 *
 * Return: 0; -ENOENT if a directory on the way up is not held (or has no
 * name); -ELOOP past IDX_DEPTH_MAX levels; -ENAMETOOLONG at PATH_MAX;
 * -ENOMEM.
 * Ownership: the caller frees *@out.
 * Context: the caller serializes calls on @t.
 */
int idx_dirs_path(const struct idx_dirs *t, uint32_t top, uint32_t ino,
		  const char *prefix, char **out);

/**
 * idx_dirs_bytes() - Bytes the table takes now (slots and names).
 * @t: the table
 *
 * Return: the byte count, at most @t->budget.  Context: as for @t.
 */
uint64_t idx_dirs_bytes(const struct idx_dirs *t);

/* One directory a walk returns. */
struct idx_walk_dir {
	uint64_t ref; /* its inode reference */
	uint32_t ino; /* its inode number */
	unsigned int depth; /* levels below the walk's top */
	char *path; /* the top's path, then '/' and a name per level */
};

struct idx_walk;

/**
 * idx_walk_new() - Start a walk of @img's directories.
 * @img: the image; it outlives the walk
 * @entries: directory entries the walk may read, at most (UINT64_MAX:
 *	     no limit)
 * @out: set to the walk, empty: idx_walk_add() gives it a start
 *
 * Return: 0; -ENOMEM.
 * Ownership: the caller frees with idx_walk_free().
 * Context: any thread; one thread uses a walk at a time.
 */
int idx_walk_new(struct img *img, uint64_t entries, struct idx_walk **out);

/**
 * idx_walk_free() - Free a walk.
 * @w: the walk, or NULL
 *
 * Context: the walk's thread; cannot fail.
 */
void idx_walk_free(struct idx_walk *w);

/**
 * idx_walk_add() - Have the walk go through a directory next.
 * @w: the walk
 * @ref: its inode reference
 * @ino: its inode number
 * @path: its path, copied
 * @depth: its level below the walk's top
 *
 * The directory is returned by the next idx_walk_next(), before anything
 * the walk held, and counts as gone through.
 *
 * Return: 0; -EEXIST if the walk went through it already; -EFSCORRUPTED
 * if @ino is outside the image's inode numbers; -ENOMEM.
 * Context: the walk's thread.
 */
int idx_walk_add(struct idx_walk *w, uint64_t ref, uint32_t ino,
		 const char *path, unsigned int depth);

/**
 * idx_walk_next() - The next directory, in depth-first listing order.
 * @w: the walk
 * @out: set to it; valid until the next call of idx_walk_next() or
 *	 idx_walk_free()
 *
 * Only directories added, or found by idx_walk_descend(), are returned:
 * call idx_walk_descend() on a directory to go into it.
 *
 * Return: 1 with a directory; 0 when the walk has none left.
 * Context: the walk's thread; cannot fail.
 */
int idx_walk_next(struct idx_walk *w, const struct idx_walk_dir **out);

/**
 * idx_walk_descend() - Read a directory's listing and go into it next.
 * @w: the walk
 * @dir: the directory (from idx_walk_next(), or built by the caller)
 * @after: the name of an entry of @dir, or NULL: only the subdirectories
 *	   listed after it are taken
 *
 * Its subdirectories come out of idx_walk_next() next, in listing order
 * and each with its own subtree first.  Every entry read counts against
 * the walk's entries.  Subdirectories more than IDX_DEPTH_MAX levels down
 * or with a path of PATH_MAX bytes or more are left out.
 *
 * Return: 0; -EFSCORRUPTED if the listing is damaged or names a directory
 * the walk went through already (a cycle; logged once per place), the
 * subdirectories before the damage are kept; -EIO; -ENOMEM.
 * Context: the walk's thread.
 */
int idx_walk_descend(struct idx_walk *w, const struct idx_walk_dir *dir,
		     const char *after);

/**
 * idx_walk_is_spent() - Whether the walk has read all its entries.
 * @w: the walk
 *
 * Return: true once it may read no more.  Context: the walk's thread.
 */
bool idx_walk_is_spent(const struct idx_walk *w);

/**
 * idx_walk_bytes() - Bytes the walk holds now (pending paths and the set
 * of directories gone through, which grows with the image).
 * @w: the walk
 *
 * Return: the byte count.  Context: the walk's thread.
 */
uint64_t idx_walk_bytes(const struct idx_walk *w);

#endif /* SQC_INDEX_INDEX_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file reads the mount table, /proc/self/mountinfo, one entry at a
 * time.  Each line is
 *   id parent major:minor root MOUNTPOINT opts [optional...] - FSTYPE SOURCE
 *   SUPEROPTS
 * and the kernel writes space, tab, newline and backslash in the text
 * fields as octal escapes ("\040" for a space); they come back decoded.
 *
 * The table, not stat(), tells whether a path is mounted: stat() on a
 * FUSE mount whose daemon hangs would hang too, and on a stale one it
 * fails with ENOTCONN.  mountinfo_find() and mountinfo_list() copy
 * mounts out of it for mountctl and the Slurm node side.
 */
#ifndef SQC_UTIL_MOUNTINFO_H
#define SQC_UTIL_MOUNTINFO_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* One mount.  The strings point into the line being parsed. */
struct mountinfo_entry {
	const char *mountpoint; /* where it is mounted, decoded */
	const char *fstype; /* e.g. "fuse.squashcache", decoded */
	const char *source; /* e.g. the image path, decoded */
	const char *super_opts; /* e.g. "ro,user_id=1000", "" if absent */
	unsigned int major; /* st_dev of the mounted filesystem */
	unsigned int minor; /* (a FUSE connection's number is the minor) */
};

/**
 * mountinfo_parse_line() - Split one mountinfo line into its fields.
 * @line: one line, with or without its '\n'; modified in place
 * @e: filled in, pointing into @line
 *
 * Return: 0; -EINVAL for a line of another shape.
 * Context: any thread.
 */
int mountinfo_parse_line(char *line, struct mountinfo_entry *e);

/**
 * mountinfo_scan() - Call @fn for each well-formed entry of a mount table.
 * @f: the table, read from its current position to the end
 * @fn: called with each entry (valid only during the call); a non-zero
 *	return stops the scan
 * @arg: passed to @fn
 *
 * Lines of another shape are skipped.
 *
 * Return: 0 when the table was read to the end; the non-zero value @fn
 * returned (so a positive value can say "found"); -ENOMEM.
 * Context: any thread.
 */
int mountinfo_scan(FILE *f,
		   int (*fn)(const struct mountinfo_entry *e, void *arg),
		   void *arg);

/**
 * mountinfo_foreach() - mountinfo_scan() over /proc/self/mountinfo.
 * @fn: as for mountinfo_scan()
 * @arg: passed to @fn
 *
 * Return: as mountinfo_scan(); -errno if the table cannot be opened.
 * Context: any thread.
 */
int mountinfo_foreach(int (*fn)(const struct mountinfo_entry *e, void *arg),
		      void *arg);

/* One mount, copied out of the table. */
struct mountinfo_mount {
	char path[PATH_MAX]; /* mount point, decoded */
	char source[PATH_MAX]; /* source, decoded: a squashcache mount's image */
	char fstype[64]; /* e.g. "fuse.squashcache" */
	uid_t uid; /* user_id= of its super options (a FUSE mount's
		    * owner), or (uid_t)-1 if absent */
};

/**
 * mountinfo_find_in() - The top-most mount at a path, in a mount table.
 * @f: the table, read from its current position to the end
 * @path: the mount path, canonical (as the table writes it)
 * @out: filled with the last entry at @path (the top of a stack of
 *	 mounts there), when there is one
 *
 * An entry with a field longer than struct mountinfo_mount holds is
 * skipped.
 *
 * Return: 0; -ENOENT if nothing is mounted at @path; -ENOMEM.
 * Context: any thread.
 */
int mountinfo_find_in(FILE *f, const char *path, struct mountinfo_mount *out);

/**
 * mountinfo_find() - mountinfo_find_in() of /proc/self/mountinfo.
 * @path: as for mountinfo_find_in()
 * @out: as for mountinfo_find_in()
 *
 * Return: as mountinfo_find_in(); -errno if the table cannot be opened.
 * Context: any thread.
 */
int mountinfo_find(const char *path, struct mountinfo_mount *out);

/**
 * mountinfo_list_in() - The mounts of one file system type in a mount
 * table.
 * @f: the table, read from its current position to the end
 * @fstype: the type, e.g. "fuse.squashcache"
 * @out: set to an array, in table (mount) order; NULL when empty
 * @n: set to its length
 *
 * Entries with a field too long for struct mountinfo_mount are skipped.
 *
 * Return: 0 or -ENOMEM.  Ownership: the caller frees *@out.
 * Context: any thread.
 */
int mountinfo_list_in(FILE *f, const char *fstype, struct mountinfo_mount **out,
		      size_t *n);

/**
 * mountinfo_list() - mountinfo_list_in() of /proc/self/mountinfo.
 * @fstype: as for mountinfo_list_in()
 * @out: as for mountinfo_list_in()
 * @n: as for mountinfo_list_in()
 *
 * Return: as mountinfo_list_in(); -errno if the table cannot be opened.
 * Ownership: the caller frees *@out.  Context: any thread.
 */
int mountinfo_list(const char *fstype, struct mountinfo_mount **out, size_t *n);

#endif /* SQC_UTIL_MOUNTINFO_H */

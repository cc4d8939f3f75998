/* SPDX-License-Identifier: MIT */
/*
 * This file reads the mount table, /proc/self/mountinfo, one entry at a
 * time.  Each line is
 *   id parent major:minor root MOUNTPOINT opts [optional...] - FSTYPE SOURCE
 *   SUPEROPTS
 * and the kernel writes space, tab, newline and backslash in the text
 * fields as octal escapes ("\040" for a space); they come back decoded.
 */
#ifndef SQC_UTIL_MOUNTINFO_H
#define SQC_UTIL_MOUNTINFO_H

#include <stdio.h>

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

#endif /* SQC_UTIL_MOUNTINFO_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file declares the keeper's site copies, root's side (keep_site.c):
 * which images are the site's (site= prefixes, on the path the image
 * really is, not on a user's own file system), and the jobs that make a
 * site copy: root opens the image itself, checks that it is the file the
 * user's daemon opened, reads it from storage once into a memfd that no
 * user can write, checking each chunk against the image's seal, and
 * hands that memfd to every user's mount of it for reading only.  The
 * keeper's logic (lib/keep, keeper_get_site()) decides when; what root
 * trusts here and where it could wait is in slurm/README.md.
 */
#ifndef SQC_SLURM_KEEP_SITE_H
#define SQC_SLURM_KEEP_SITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "seal/seal.h"

/* Site copies root makes at once, all users together, and of those begun
 * for one user's GET (a job stuck on hung storage still counts). */
#define KEEP_SITE_JOBS 4
#define KEEP_SITE_USER_JOBS 2
#define KEEP_SITE_PREFIXES_MAX 4096 /* bytes of site= */

/* What a site image needs to have a site copy (--site-seal). */
enum keep_site_seal {
	KEEP_SITE_SEAL_AUTO, /* IMAGE.sqcseal checks it if there is one */
	KEEP_SITE_SEAL_REQUIRE, /* a seal, or no site copy */
	KEEP_SITE_SEAL_ROOT, /* a seal whose root --site-roots names */
};

struct keep_site_opts {
	const char *prefixes; /* site=: absolute paths, ':' separated */
	enum keep_site_seal seal;
	/* A file of "HEX PATH" lines (the root hash of the image at PATH,
	 * as `mountctl seal` prints it), root's and written by root only,
	 * read at each site copy's start; or NULL.  A root it names must
	 * be the seal's, whatever @seal says. */
	const char *roots;
};

struct keep_site;

/* What a job reports (keep_site_next()). */
enum keep_site_what {
	KEEP_SITE_READY, /* fd, range, root: the copy, being staged */
	KEEP_SITE_FAILED, /* err: no copy (before READY) */
	KEEP_SITE_ENDED, /* err: staging ended (0: every chunk read) */
};

struct keep_site_event {
	int what; /* enum keep_site_what */
	uint64_t id; /* as keep_site_start() was given */
	int fd; /* READY: the copy, open for reading only; the taker's */
	uint64_t range; /* READY: bytes of its range */
	bool has_root; /* READY: its chunks are checked against a seal */
	uint8_t root[SEAL_HASH_SIZE]; /* its root hash */
	int err; /* FAILED, ENDED */
};

/**
 * keep_site_new() - Site copies for the prefixes of @o.
 * @o: copied (its strings too)
 * @wake: an eventfd written (1) whenever a job has something to report
 * @out: set
 *
 * Return: 0; -EINVAL for a prefix that is not an absolute path, or
 * prefixes too long; -ENOMEM.  Context: the keeper's thread.
 */
int keep_site_new(const struct keep_site_opts *o, int wake,
		  struct keep_site **out);

/**
 * keep_site_free() - Stop every job, wait @wait_ms for them, free.
 * @s: may be NULL
 * @wait_ms: how long to wait for jobs in a call that does not return
 *           (hung storage); those are left to end with the process
 *
 * Return: the jobs left: then @s is left to them, and the wake eventfd
 * must stay open.  Context: the keeper's thread, at its end.
 */
unsigned int keep_site_free(struct keep_site *s, int wait_ms);

/**
 * keep_site_of() - Whether a descriptor a user sent is of a site image.
 * @s: site copies, or NULL (none: false)
 * @fd: the user's descriptor, a regular file opened for reading
 * @sb: its fstat()
 * @path: set to its real path (/proc/self/fd/N: the kernel's d_path,
 *        which asks no file system)
 * @cap: @path's capacity
 *
 * A site image is linked (a deleted file's d_path is not a name root
 * could open), its real path is under a prefix (whole components), and
 * its file system is not a user's own FUSE mount (by the device of
 * @sb in our mount table: its user_id).
 *
 * Return: true if it is.  Context: a thread whose wait costs only that
 * user's request (the server's job threads): nothing here reads the file
 * or asks its file system, but a caller must not count on that.
 */
bool keep_site_of(const struct keep_site *s, int fd, const struct stat *sb,
		  char *path, size_t cap);

/**
 * keep_site_start() - Begin making site copy @id, on a thread of its own.
 * @s: site copies
 * @id: the keeper's name for it
 * @uid: whose GET asked for it (at most KEEP_SITE_USER_JOBS of theirs)
 * @path: the image's real path, under a prefix
 * @image: fstat() of the user's descriptor of it: the file root opens at
 *         @path must have the same device, inode, size, mtime and ctime
 * @offset: where the image starts in the file
 *
 * Return: 0 (it reports READY then ENDED, or FAILED); -EBUSY over the
 * caps; -ENOMEM; -errno of pthread_create().
 * Context: the keeper's thread.
 */
int keep_site_start(struct keep_site *s, uint64_t id, uid_t uid,
		    const char *path, const struct stat *image,
		    uint64_t offset);

/**
 * keep_site_stop() - Stop making site copy @id (dropped): its job stops
 * staging, marks the copy ended and goes; whatever it reports of @id
 * later is for nobody (a READY's descriptor is to be closed).
 * Context: the keeper's thread.
 */
void keep_site_stop(struct keep_site *s, uint64_t id);

/**
 * keep_site_next() - The next report of a job.
 * @s: site copies
 * @ev: set
 *
 * Return: false when there is none.  Context: the keeper's thread.
 */
bool keep_site_next(struct keep_site *s, struct keep_site_event *ev);

/**
 * keep_site_busy() - Jobs not ended (some may be in a call that does not
 * return).  Context: the keeper's thread.
 */
unsigned int keep_site_busy(struct keep_site *s);

#endif /* SQC_SLURM_KEEP_SITE_H */

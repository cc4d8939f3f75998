/* SPDX-License-Identifier: MIT */
/*
 * This file declares the keeper's reaper (keep_reap.c): the process that
 * closes the connections' sockets the keeper lets go of (those it refuses
 * and those it closes).  A socket may hold messages a user queued, with
 * descriptors in them; the last close of the socket releases those, and
 * a release can wait (a TCP socket that lingers in its close waits as
 * long as its SO_LINGER says).  So the keeper's loop never closes such a
 * socket itself: it hands it to the reaper.
 */
#ifndef SQC_SLURM_KEEP_REAP_H
#define SQC_SLURM_KEEP_REAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A closer not ready this long after its fork is killed (its batch
 * waits); one that has not ended this long after it is said. */
#define KEEP_REAP_MS 1000
/* Closers of one user's at once: more of their sockets wait in the
 * reaper (a closer that does not end waits on a file system of that
 * user's, and holds up that user's only). */
#define KEEP_REAP_USER_CLOSERS 4
/* Sockets waiting for the reaper: with this many the keeper takes no
 * more connections (the reaper takes every batch at once: only a reaper
 * that is gone or out of descriptors leaves them). */
#define KEEP_REAP_PENDING 256

struct keep_reap;

/**
 * keep_reap_new() - Start the reaper: a child process that holds nothing
 * of the keeper's but its end of a socket pair.
 * @rp: set to it
 *
 * Return: 0 or -errno (said).  Context: at the keeper's start, before it
 * holds a descriptor of a user's (the child is forked with the keeper's
 * descriptors and closes them: none may be a user's, whose close could
 * wait).
 */
int keep_reap_new(struct keep_reap **rp);

/**
 * keep_reap_take() - Hand a socket over to be closed.
 * @r: the reaper
 * @fd: the socket; the reaper's from now on
 * @uid: its peer's (SO_PEERCRED): the closer of it runs as this user
 */
void keep_reap_take(struct keep_reap *r, int fd, uid_t uid);

/* Whether KEEP_REAP_PENDING sockets wait: take no more connections. */
bool keep_reap_full(const struct keep_reap *r);

/* How many closers have ended, as far as the reaper's answers have been
 * read (keep_reap_run()). */
unsigned long keep_reap_ended(const struct keep_reap *r);

/* The descriptor to poll for POLLIN (the reaper's answers), or -1. */
int keep_reap_fd(const struct keep_reap *r);

/**
 * keep_reap_run() - Read the reaper's answers; send it what waits.
 * @r: the reaper
 *
 * Context: the keeper's loop; it never waits.
 */
void keep_reap_run(struct keep_reap *r);

/**
 * keep_reap_free() - At the keeper's end: what waits goes to the reaper
 * if it takes it now; the reaper ends once it closed what it has.
 * @r: the reaper, or NULL
 */
void keep_reap_free(struct keep_reap *r);

#endif /* SQC_SLURM_KEEP_REAP_H */

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

/* A batch's closer that has not ended within this long is killed (its
 * exit releases the batch and waits on no user; this is a bound all the
 * same, and a closer holds nothing else). */
#define KEEP_REAP_MS 1000
/* Closers killed and not ended (a release that waits on a file system,
 * not on a user): with this many, the reaper takes no batch until one
 * ends. */
#define KEEP_REAPERS 4
/* Sockets waiting for the reaper: with this many the keeper takes no
 * more connections. */
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
 */
void keep_reap_take(struct keep_reap *r, int fd);

/* Whether KEEP_REAP_PENDING sockets wait: take no more connections. */
bool keep_reap_full(const struct keep_reap *r);

/* How many batches' closers had to be killed (they did not end within
 * KEEP_REAP_MS), as far as the reaper's answers have been read. */
unsigned long keep_reap_killed(const struct keep_reap *r);

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

/* SPDX-License-Identifier: MIT */
/*
 * This file declares the keeper's reaper (keep_reap.c): the child process
 * that closes the connections the keeper refuses.  A refused connection's
 * socket may hold messages a user queued before it was accepted, with
 * descriptors in them; the last close of the socket releases those, and
 * a release can wait (a TCP socket that lingers in its close waits as
 * long as its SO_LINGER says).  So the keeper's loop never closes such a
 * socket itself: it hands it to the reaper, which a SIGKILL ends when it
 * does not get through a batch within KEEP_REAP_MS.
 */
#ifndef SQC_SLURM_KEEP_REAP_H
#define SQC_SLURM_KEEP_REAP_H

#include <stdbool.h>
#include <stdint.h>

/* A batch the reaper does not close within this long: it is killed and
 * another is started. */
#define KEEP_REAP_MS 5000
/* Reapers at once, those killed and not yet ended among them. */
#define KEEP_REAPERS 4
/* Sockets waiting for a reaper, in the keeper's descriptor table. */
#define KEEP_REAP_PENDING 256

struct keep_reap;

/**
 * keep_reap_new() - A reaper, started at the first keep_reap_run().
 * @rp: set to it
 *
 * Return: 0 or -ENOMEM.
 */
int keep_reap_new(struct keep_reap **rp);

/**
 * keep_reap_take() - Hand a socket over to be closed.
 * @r: the reaper
 * @fd: the socket; the reaper's from now on, whatever the answer
 *
 * Return: true; false if KEEP_REAP_PENDING wait already (then @fd is
 * left open in the keeper: the caller asks keep_reap_full() first).
 */
bool keep_reap_take(struct keep_reap *r, int fd);

/* Whether KEEP_REAP_PENDING sockets wait: take no more connections. */
bool keep_reap_full(const struct keep_reap *r);

/* The descriptor to poll for POLLIN (the reaper's answers), or -1. */
int keep_reap_fd(const struct keep_reap *r);

/**
 * keep_reap_run() - Read the reaper's answers, send it what waits, kill
 * a reaper that took longer than KEEP_REAP_MS over a batch, start
 * another, wait for those killed.
 * @r: the reaper
 * @now: CLOCK_MONOTONIC, ms
 *
 * Context: the keeper's loop; it never waits.
 */
void keep_reap_run(struct keep_reap *r, int64_t now);

/**
 * keep_reap_free() - At the keeper's end: what waits goes to the reaper
 * if it takes it, which then ends; those killed are not waited for.
 * @r: the reaper, or NULL
 */
void keep_reap_free(struct keep_reap *r);

#endif /* SQC_SLURM_KEEP_REAP_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file declares the keeper's server (keep_srv.c): the root process
 * that holds users' staged copies between mounts, on one Unix socket, for
 * every user of the node.  Its logic is lib/keep's; what it trusts and
 * where it could wait is in slurm/README.md.
 */
#ifndef SQC_SLURM_KEEP_SRV_H
#define SQC_SLURM_KEEP_SRV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A user's descriptor is looked at (fstat(), close()) on a thread of its
 * own, at most this many at once per user, and given this long. */
#define KEEP_SRV_USER_JOBS 4
#define KEEP_SRV_JOBS 64 /* of all users but root together */
#define KEEP_SRV_JOB_MS 5000
/* Connections of one user but root at once. */
#define KEEP_SRV_USER_CONNS 64
/* Descriptors the keeper asks for (RLIMIT_NOFILE), as its service does. */
#define KEEP_SRV_NOFILE 65536

struct keep_srv_opts {
	const char *socket; /* its path; the directory is checked */
	uint64_t budget; /* bytes kept copies not in use may hold */
	uint64_t floor; /* MemAvailable below this: drop copies not in use */
	/* The daemon (squashcached) whose processes count as using a copy,
	 * by device and inode; has_daemon false: any process that holds
	 * the copy does (a keeper that cannot tell). */
	bool has_daemon;
	dev_t daemon_dev;
	ino_t daemon_ino;
	/* Site copies (keep_site.h): the site's image prefixes (':'
	 * separated), or NULL for none; what their seals must be; the
	 * bytes those not in use may hold. */
	const char *site;
	int site_seal; /* enum keep_site_seal */
	const char *site_roots; /* or NULL */
	uint64_t site_budget;
};

/**
 * keep_serve() - Serve until SIGTERM or SIGINT.
 * @o: the socket, budget, floor and daemon
 *
 * Return: 0 once stopped; 1 if it could not start (said on stderr).
 * Context: the process's main thread, as root.
 */
int keep_serve(const struct keep_srv_opts *o);

/**
 * keep_srv_nofile() - Raise RLIMIT_NOFILE to KEEP_SRV_NOFILE (hard and
 * soft; root may), or the soft limit to the hard one.
 *
 * Return: the soft limit now.  Context: before exec'ing a keeper, or at
 * its start.
 */
unsigned long keep_srv_nofile(void);

#endif /* SQC_SLURM_KEEP_SRV_H */

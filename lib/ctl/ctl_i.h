/* SPDX-License-Identifier: MIT */
/*
 * This file declares what the files of lib/ctl share with each other and
 * nobody else: one request over the socket with its own time limits, which
 * the mount lookup (lookup.c) builds on the transport (sock.c).
 *
 * The files depend on each other one way only: lookup.c uses addr.c (the
 * names), sock.c (the transport) and proto.c (the ping message); proto.c
 * and sock.c use lib/json; addr.c uses neither.
 */
#ifndef SQC_CTL_CTL_I_H
#define SQC_CTL_CTL_I_H

#include <stddef.h>
#include <sys/types.h>

#include "util/clock.h"

/* A request's body: bytes sent after its line (ctl_request_mount_body()). */
struct ctl_body {
	const void *p; /* the bytes */
	size_t len; /* how many */
};

/* Milliseconds on the monotonic clock, for deadlines. */
static inline long long ctl__now_ms(void)
{
	return mono_ns() / 1000000;
}

/*
 * ctl_request() of @cmd and @body at @addr, with a time limit of its own
 * for room in a full listen queue: wait for it until @room_by (ms,
 * monotonic; not at all if that has passed), and for the rest until
 * @deadline.
 * Return: as ctl_request(), but -EAGAIN if the queue stayed full.
 */
int ctl__request_at(const char *addr, const char *cmd,
		    const struct ctl_body *body, uid_t want_uid, char **reply,
		    long long room_by, long long deadline);

#endif /* SQC_CTL_CTL_I_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file declares the handler of the "order" control request ("order
 * BYTES", ctl.h): the files a training epoch will read, in the order it
 * will read them, which the daemon's epoch order (lib/order, d->order)
 * then reads ahead.  See order_req.c.
 */
#ifndef SQC_DAEMON_ORDER_REQ_H
#define SQC_DAEMON_ORDER_REQ_H

#include <stdint.h>

struct sqcd;
struct ctl_reply;

/**
 * order_req() - Set the epoch order from an order request's body.
 * @d: daemon
 * @body: @len bytes of paths relative to the mount's root, each ending in
 *        a NUL, then one more NUL
 * @len: bytes of the paths
 * @rep: the reply, ok with its counts or refused with the reason
 *
 * Every path is checked and found before anything changes: a malformed
 * one, or one that names no regular file of the image, is refused with
 * its position and name, and the order before stays.
 *
 * Context: the control server's order thread (ctl_srv.c).
 */
void order_req(struct sqcd *d, const char *body, uint64_t len,
	       struct ctl_reply *rep);

#endif /* SQC_DAEMON_ORDER_REQ_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file declares the control request that sets the epoch order
 * ("order BYTES", ctl.h): the files a training epoch will read, in the
 * order it will read them, which the image then reads ahead (lib/order,
 * through img_order_set()).  See epoch.c.
 */
#ifndef SQC_DAEMON_EPOCH_H
#define SQC_DAEMON_EPOCH_H

#include <stdint.h>

struct sqcd;
struct ctl_reply;

/**
 * epoch_order_cmd() - Set the epoch order from an order's body.
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
 * Context: the control thread.
 */
void epoch_order_cmd(struct sqcd *d, const char *body, uint64_t len,
		     struct ctl_reply *rep);

#endif /* SQC_DAEMON_EPOCH_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file declares the handler of the "order" control request ("order
 * BYTES [PID START]", ctl.h): the files a training epoch will read, in
 * the order it will read them, which the daemon's epoch order (lib/order,
 * d->order) then reads ahead; and the table of the processes whose orders
 * it holds, watched so that a process's order goes when it ends.  See
 * order_req.c.
 */
#ifndef SQC_DAEMON_ORDER_REQ_H
#define SQC_DAEMON_ORDER_REQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sqcd;
struct ctl_reply;
struct json_buf;
struct pollfd;
struct order_clients; /* the processes that gave orders */

/* Whose order a request is. */
struct order_who {
	pid_t pid; /* the process; 0: the mount's own order */
	uint64_t start; /* its start time (proc_start_time()) */
};

/**
 * order_clients_new() - An empty table of clients.
 * @out: set to the table
 *
 * Return: 0; -ENOMEM.  Ownership: order_clients_free().
 * Context: any thread.
 */
int order_clients_new(struct order_clients **out);

/**
 * order_clients_free() - Close the clients' pidfds and free the table.
 * @oc: the table; NULL is fine
 *
 * Their orders stay with d->order, which the image frees.
 * Context: the thread that used the table, or any once it stopped.
 */
void order_clients_free(struct order_clients *oc);

/**
 * order_req() - Set or clear a client's epoch order from a request's body.
 * @d: daemon
 * @oc: the table of clients
 * @who: whose order: a process, checked to be running (by a pidfd, and its
 *       start time), or the mount's own
 * @body: @len bytes of paths relative to the mount's root, each ending in
 *        a NUL, then one more NUL
 * @len: bytes of the paths; 0 clears the client's order
 * @rep: the reply, ok with its counts or refused with the reason
 *
 * Every path is checked and found before anything changes: a malformed
 * one, or one that names no regular file of the image, is refused with
 * its position and name, and the client's order before stays.  Other
 * clients' orders are not touched.
 *
 * Context: the control server's order thread (ctl_srv.c), the only user
 * of @oc.
 */
void order_req(struct sqcd *d, struct order_clients *oc,
	       const struct order_who *who, const char *body, uint64_t len,
	       struct ctl_reply *rep);

/**
 * order_clients_fds() - What to poll for a client's end.
 * @oc: the table
 * @p: set to a pollfd (POLLIN) per client with a pidfd
 * @cap: room in @p
 *
 * Return: how many were set.  Context: as order_req().
 */
size_t order_clients_fds(struct order_clients *oc, struct pollfd *p,
			 size_t cap);

/**
 * order_clients_timeout() - How long the order thread may sleep, in ms.
 * @oc: the table
 *
 * Return: -1 (until an event) when every client has a pidfd; 1000 when one
 * has none (pidfd_open() missing), whose end is then found by its start
 * time once a second.  Context: as order_req().
 */
int order_clients_timeout(struct order_clients *oc);

/**
 * order_clients_reap() - Forget the orders of the clients that ended.
 * @d: daemon
 * @oc: the table
 *
 * Return: how many were forgotten.  Context: as order_req().
 */
unsigned int order_clients_reap(struct sqcd *d, struct order_clients *oc);

/**
 * order_stats_json() - The epoch order's part of the stats, "order":{...}.
 * @d: daemon
 * @b: buffer to append to
 *
 * The order's counters, its budgets, and each client's progress (the
 * first ORDER_CLIENTS_SHOWN of them), named by its pid (0 for the mount's
 * own order).  Context: any thread.
 */
void order_stats_json(struct sqcd *d, struct json_buf *b);

#define ORDER_CLIENTS_SHOWN 128 /* clients the stats list, at most */

#endif /* SQC_DAEMON_ORDER_REQ_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file declares the control socket (ctl.h's protocol, daemon side):
 * a thread that answers mountctl's ping, stats, stage, umount, hold and
 * release, and one that carries out orders, one at a time, so that the
 * others never wait behind one.  The module owns the listening socket and
 * both threads.
 */
#ifndef SQC_DAEMON_CTL_SRV_H
#define SQC_DAEMON_CTL_SRV_H

struct sqcd;
struct sqcd_feature;
struct ctl_srv;
struct json_buf;

/**
 * ctl_srv_listen() - Bind the control socket, not yet served.
 * @d: the daemon; d->o.ctl_addr is the address (-o ctl=), or empty
 *        for the default one, and is set to the address bound
 * @out: set to the module, listening
 *
 * Called before the daemon detaches, so that a second daemon for the same
 * mountpoint is told at once.  The default address of a mount point is
 * tried for a few seconds while a daemon of ours on its way out holds it;
 * if another user's socket or one that does not answer holds it, the
 * module listens at a fallback address instead (ctl.h), with a warning.
 *
 * Return: 0; -EADDRINUSE if another daemon holds the address; -ENOMEM;
 * -errno.  An error is said on stderr.
 * Context: main thread.
 */
int ctl_srv_listen(struct sqcd *d, struct ctl_srv **out);

/**
 * ctl_srv_start() - Serve the control socket from its threads.
 * @d: the daemon, mounted
 * @out: a module from ctl_srv_listen(), or NULL to listen now; set to the
 *       serving module, or NULL on error (the module is then stopped and
 *       freed)
 *
 * Return: 0; -EADDRINUSE if another daemon answers on the address; -errno.
 * Context: main thread, before the session loop; the last feature to
 * start (it reads what the others set up).
 */
int ctl_srv_start(struct sqcd *d, void **out);

/**
 * ctl_srv_stop() - Stop serving, close and unlink the socket.
 * @f: the module, listening or serving; NULL is fine
 *
 * An order whose body is still coming is refused, and so are those that
 * wait; one being carried out is finished first.
 *
 * Context: main thread; cannot fail.
 */
void ctl_srv_stop(void *f);

/**
 * ctl_srv_free() - Free the module, stopped.
 * @f: the module; NULL is fine
 *
 * Context: main thread, after ctl_srv_stop(); cannot fail.
 */
void ctl_srv_free(void *f);

/* The feature as the core knows it (daemon.h): ctl_srv_start(), ctl_srv_stop(),
 * ctl_srv_free(). */
extern const struct sqcd_feature ctl_srv_feature;

#endif /* SQC_DAEMON_CTL_SRV_H */

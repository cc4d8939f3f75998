/* SPDX-License-Identifier: MIT */
/*
 * This file declares the holders feature: the processes that share a
 * mount made by `mountctl acquire`, and the daemon's decision to unmount
 * once the last of them released it or died.
 *
 * Who keeps the list: the daemon, because it lives exactly as long as the
 * mount.  Holders join and leave over the control socket ("hold PID
 * START", "release PID"); the daemon watches each with a pidfd, so a
 * holder killed with SIGKILL is noticed without any epilog, and checks
 * the process start time so that a reused pid is never taken for it.
 *
 * Race freedom: `mountctl acquire`/`release` and the daemon's decision to
 * go all take flock() on the mount point's parent directory.  Under that
 * lock an acquirer finds either a daemon that accepts holders or no mount
 * at all: the daemon decides with the lock held, refuses holders from
 * then on, and keeps the lock until it has unmounted and exits.
 */
#ifndef SQC_DAEMON_HOLDERS_H
#define SQC_DAEMON_HOLDERS_H

#include <stdint.h>
#include <sys/types.h>

#include "ctl/ctl.h"

struct sqcd;
struct sqcd_feature;
struct holders;

#define HOLDERS_MAX 4096 /* holders of one mount, at most */

/**
 * holders_start() - Start the holders feature.
 * @d: daemon, mounted, with its options parsed
 * @out: set to the feature, or NULL without -o hold=
 *
 * With -o hold=PID:START the mount is holder-managed: PID is its first
 * holder, and the daemon unmounts itself (SIGTERM to itself) once no
 * holder is left for -o grace= seconds.
 *
 * Return: 0; -ESRCH if the first holder is already gone; -ENOMEM; -errno.
 * Context: main thread, before the control socket serves.
 */
int holders_start(struct sqcd *d, void **out);

/**
 * holders_stop() - Stop the thread that watches the holders.
 * @f: the feature, or NULL
 *
 * Context: main thread, once the mount is gone; cannot fail.
 */
void holders_stop(void *f);

/**
 * holders_free() - Free the feature, stopped or never started.
 * @f: the feature, or NULL
 *
 * Releases the parent directory lock, so call it once the mount is gone.
 *
 * Context: main thread, after holders_stop(); cannot fail.
 */
void holders_free(void *f);

/**
 * holders_add() - Process @pid, started at @start, holds the mount.
 * @h: the feature, or NULL (the mount is not holder-managed)
 * @pid: the process
 * @start: its start time (proc_start_time())
 *
 * Adding a holder twice is one holder.
 *
 * Return: the number of holders; -ESRCH if @pid is not that process
 * (gone, or its pid reused); -ESHUTDOWN once the daemon decided to go;
 * -ENOSPC past HOLDERS_MAX; -EOPNOTSUPP if @h is NULL.
 * Context: the control thread.
 */
int holders_add(struct holders *h, pid_t pid, uint64_t start);

/**
 * holders_remove() - Process @pid no longer holds the mount.
 * @h: the feature, or NULL
 * @pid: the process
 *
 * Return: the number of holders left; -ENOENT if @pid was no holder;
 * -EOPNOTSUPP if @h is NULL.
 * Context: the control thread.
 */
int holders_remove(struct holders *h, pid_t pid);

/**
 * holders_stats_json() - Append "holders":[pids],"holder_managed":bool,
 * @h: the feature, or NULL
 * @b: buffer
 *
 * Context: any thread.
 */
void holders_stats_json(struct holders *h, struct json_buf *b);

/* The feature as the core knows it (daemon.h): holders_start(), holders_stop(),
 * holders_free(). */
extern const struct sqcd_feature holders_feature;

#endif /* SQC_DAEMON_HOLDERS_H */

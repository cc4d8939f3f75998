/* SPDX-License-Identifier: MIT */
/*
 * This file declares the lister process: a helper that listing ahead
 * (statahead.c) sends its requests of the daemon's own mount through.
 *
 * Why a process and not a thread: a request the daemon makes of its own
 * mount waits in the kernel, unkillable, until the daemon answers it.  If
 * the daemon is killed (SIGKILL, the OOM killer) while such a request is
 * with one of its workers, nobody answers it; a thread of the daemon that
 * waits for it keeps the daemon's file table, so the FUSE device is never
 * closed, the kernel never aborts the connection, and the daemon stays an
 * unkillable zombie on a mount that hangs every reader.  The helper has a
 * file table of its own that holds nothing of the daemon's: once every
 * thread of the daemon is gone, the device closes, the connection is
 * aborted, the helper's request fails, and the helper exits on the
 * end of its socket.
 *
 * The helper is squashcached itself, started again (/proc/self/exe) with
 * one internal argument and its socket on descriptor 3, so that it holds
 * neither the daemon's memory nor its descriptors.  It does one thing at a
 * time: stat a path, or list a directory to its end.
 */
#ifndef SQC_DAEMON_LISTER_H
#define SQC_DAEMON_LISTER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct lister;

/* The argument that makes squashcached the helper (see lister_main()). */
#define LISTER_ARG "--internal-lister"

/**
 * lister_spawn() - Start the helper process.
 * @out: set to its handle
 *
 * The helper inherits the calling thread's scheduling priority.
 * Return: 0; -ENOMEM; -errno from socketpair() or posix_spawn() (-ENOENT
 * without /proc).
 * Ownership: free with lister_free().
 */
int lister_spawn(struct lister **out);

/* The helper's process id: its requests carry it. */
pid_t lister_pid(const struct lister *l);

/**
 * lister_stat() - Have the helper stat() @path.
 * @l: the helper
 * @path: absolute path
 *
 * Return: 0; -errno of stat(); -ECANCELED after lister_cancel() or if
 * the helper is gone.
 * Context: one thread at a time.
 */
int lister_stat(struct lister *l, const char *path);

/**
 * lister_list() - Have the helper list directory @path to its end.
 * @l: the helper
 * @path: absolute path
 * @names: list only; otherwise stat the last entry of each batch too
 *	   (see list_dir() in lister.c: the kernel's readdirplus)
 * @entries: set to the entries listed, "." and ".." left out
 *
 * Return: 0; -errno of open() or getdents64(); -ECANCELED as for
 * lister_stat().
 * Context: one thread at a time.
 */
int lister_list(struct lister *l, const char *path, bool names,
		uint64_t *entries);

/**
 * lister_cancel() - Make a call waiting on the helper return -ECANCELED,
 * and every later one.
 * @l: the helper, or NULL
 *
 * Context: any thread, while the handle lives.
 */
void lister_cancel(struct lister *l);

/**
 * lister_free() - Stop the helper and release the handle.
 * @l: the helper, or NULL
 *
 * Kills the helper and reaps it if it exits within a second.  One held in
 * the kernel by a request the daemon no longer answers exits when the
 * daemon's mount goes; whoever then is its parent reaps it.
 */
void lister_free(struct lister *l);

/**
 * lister_main() - The helper's main(): serve requests on descriptor 3
 * until its other end closes.
 *
 * Return: the exit status.
 */
int lister_main(void);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * This file declares what mountctl's files share: the table of verbs
 * (one cmd_<verb>.c each, which parses its arguments and calls the
 * services), exit codes, the services the verbs share (mount.c:
 * mc_mount_image(); unmount.c: mc_unmount(); stage.c: mc_wait_staged()),
 * the MOUNTPOINT arguments and daemon requests of mounts.c, and the
 * formatting helpers of report.c.
 *
 * mountctl finds a mount's daemon from the mount path alone: the path is
 * made canonical with ctl_canonical_mountpoint(), looked up in
 * /proc/self/mountinfo (mountinfo_find(): fstype CTL_FSTYPE, source = the
 * image, owner in the user_id= option) and the daemon is asked with
 * ctl_call_mount():
 * at ctl_default_address(), or, if another user took that name first, at
 * the fallback address the daemon chose, which only a daemon running as
 * the mount's owner and naming the mount point in its ping can pass for.
 * A mount made with "-o ctl=PATH" cannot be found this way.
 *
 * mountctl is single-threaded: every function here runs on the main
 * thread, and the ones that print write to stderr.
 */
#ifndef SQC_MOUNTCTL_MOUNTCTL_H
#define SQC_MOUNTCTL_MOUNTCTL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct stat;

#include "ctl/ctl.h"
#include "util/compiler.h"
#include "util/mountinfo.h"
#include "util/version.h"

/* Exit codes shared by every verb (a verb documents what 1 means). */
#define MC_EXIT_OK 0 /* done */
#define MC_EXIT_FAIL 1 /* the operation failed or the answer is "no" */
#define MC_EXIT_USAGE 2 /* bad arguments, or cannot even start */
#define MC_EXIT_OTHER_IMAGE 3 /* another image is mounted there */
#define MC_EXIT_IMAGE 4 /* the image is missing, unreadable or invalid */

#define MC_UMOUNT_TIMEOUT_S 10.0 /* umount: mount gone and daemon exited */
#define MC_POLL_MS 50 /* how often waits look again */

/* One verb: mountctl NAME ARGS. */
struct mc_cmd {
	const char *name; /* "mount" */
	const char *args; /* "[-o OPTS] IMAGE MOUNTPOINT" */
	const char *summary; /* one line for mountctl --help */
	const char *help; /* the rest of mountctl NAME --help */
	int (*run)(int argc, char **argv); /* argv[0] is "mountctl NAME" */
};

extern const struct mc_cmd mc_cmd_mount;
extern const struct mc_cmd mc_cmd_umount;
extern const struct mc_cmd mc_cmd_status;
extern const struct mc_cmd mc_cmd_wait;
extern const struct mc_cmd mc_cmd_stage;
extern const struct mc_cmd mc_cmd_order;
extern const struct mc_cmd mc_cmd_check;
extern const struct mc_cmd mc_cmd_acquire;
extern const struct mc_cmd mc_cmd_release;
extern const struct mc_cmd mc_cmd_job;
extern const struct mc_cmd mc_cmd_keeper;
extern const struct mc_cmd mc_cmd_forget;
extern const struct mc_cmd mc_cmd_seal;

/**
 * mc_default_mountpoint() - Where IMAGE is mounted when no MOUNTPOINT is
 * given: $SQUASHCACHE_BASE/<the image's mount name, ds_image_name(): its
 * file name less .sqfs, .squashfs, .sqsh, .img or .sif, the name every
 * Slurm hook gives it too>, the base defaulting to
 * /dev/shm/$USER/squashcache.
 * @image: the image path
 * @buf: destination
 * @cap: its capacity
 *
 * Creates the base directory (0700) if missing and refuses one that
 * belongs to another user.
 *
 * Return: 0 or -errno (the message is printed).
 */
int mc_default_mountpoint(const char *image, char *buf, size_t cap);

/**
 * mc_mount_image() - Mount @image with squashcached (mountctl mount).
 * @image: the image
 * @mountpoint: where, or NULL for mc_default_mountpoint()
 * @opts: squashcached -o options, or NULL
 * @timeout: seconds to wait for the mount to answer (0: the daemon's own)
 * @sif: @image is an Apptainer SIF file
 * @real: set to the resolved mount point, PATH_MAX bytes
 *
 * Return: an exit code (messages printed): MC_EXIT_OK, MC_EXIT_IMAGE,
 * or squashcached's status.
 */
int mc_mount_image(const char *image, const char *mountpoint, const char *opts,
		   double timeout, bool sif, char *real);

/**
 * mc_daemon_stat() - stat() the squashcached mc_mount_image() runs (the
 * one of SQUASHCACHED, else the one next to mountctl, else the first in
 * PATH), to tell it from another program.
 * @st: filled in
 *
 * Return: 0, or -errno (-ENOENT: none is found).
 */
int mc_daemon_stat(struct stat *st);

/**
 * mc_append_opts() - Add -o options to a comma-separated list.
 * @opts: the list, or NULL for none yet; reallocated
 * @more: the options to append
 *
 * Return: 0; -ENOMEM (said on stderr), @opts unchanged.
 * Ownership: the caller frees *@opts.
 */
int mc_append_opts(char **opts, const char *more);

/**
 * mc_usage() - Print a verb's usage line and help text.
 * @c: the verb
 * @f: stdout for --help, stderr after a usage error
 *
 * Return: nothing; cannot fail.
 */
void mc_usage(const struct mc_cmd *c, FILE *f);

/**
 * mc_bad_usage() - Report a usage error and print the verb's usage.
 * @c: the verb
 * @fmt: what was wrong, printf format, no newline
 *
 * Return: MC_EXIT_USAGE.  Context: prints to stderr.
 */
int mc_bad_usage(const struct mc_cmd *c, const char *fmt, ...) __printf(2, 3);

/**
 * mc_err() - Print "mountctl: <message>" on stderr.
 * @fmt: printf format, no newline
 *
 * Return: nothing; cannot fail.
 */
void mc_err(const char *fmt, ...) __printf(1, 2);

/**
 * mc_parse_seconds() - Parse a duration option ("10", "2.5").
 * @s: the text
 * @out: seconds, >= 0
 *
 * Return: 0; -EINVAL if @s is not a non-negative number.
 */
int mc_parse_seconds(const char *s, double *out);

/**
 * mc_resolve() - Canonical path of a MOUNTPOINT argument and its mount.
 * @arg: the path as the user gave it
 * @path: destination for the canonical path, PATH_MAX bytes
 * @m: filled with the mount at it, when there is one
 *
 * Return: 0 if a squashcache mount is there; -ENOENT if nothing is
 * mounted there; -EMEDIUMTYPE if something else is (@m says what);
 * -errno if the path cannot be resolved.
 */
int mc_resolve(const char *arg, char *path, struct mountinfo_mount *m);

/**
 * mc_resolve_arg() - mc_resolve() for a MOUNTPOINT argument that must be a
 * squashcache mount, saying on stderr what is wrong when it is not.
 * @arg: the path as the user gave it
 * @path: as for mc_resolve()
 * @m: as for mc_resolve()
 *
 * Return: 0, or mc_resolve()'s error once printed.
 */
int mc_resolve_arg(const char *arg, char *path, struct mountinfo_mount *m);

/**
 * mc_request() - ctl_call_mount() of a request without a body, given
 * CTL_TIMEOUT_MS.
 * @m: the mount
 * @req: the request
 * @rep: as for ctl_call_mount()
 * @json: as for ctl_call_mount()
 *
 * Return: as ctl_call_mount().
 * Ownership: the caller frees *@json, set only on success.
 */
int mc_request(const struct mountinfo_mount *m, const struct ctl_req *req,
	       struct ctl_reply *rep, char **json);

/**
 * mc_explain() - Say why a daemon could not be asked.
 * @m: the mount
 * @err: what mc_request() returned
 * @hint: add what to do about it
 * @buf: destination
 * @cap: its capacity
 *
 * Return: @buf ("no daemon answers for '/x' (stale mount?)").
 */
const char *mc_explain(const struct mountinfo_mount *m, int err, bool hint,
		       char *buf, size_t cap);

/**
 * mc_is_running() - Is process @pid still running (not a zombie)?
 * @pid: process id
 *
 * Return: true while it runs.
 */
bool mc_is_running(pid_t pid);

/**
 * mc_unmount() - Unmount a squashcache mount and wait for its daemon.
 * @m: the mount, from the mount table
 * @lazy: detach even if busy when the daemon must be bypassed
 * @timeout: seconds to wait for the mount and the daemon to be gone
 *
 * Asks the daemon to unmount (control command "umount"); if it does not
 * answer, unmounts with umount2() (root) or fusermount3 -u.  A stale
 * mount is always detached lazily.  Messages go to stderr.
 *
 * Return: 0; -errno.
 */
int mc_unmount(const struct mountinfo_mount *m, bool lazy, double timeout);

/**
 * mc_stage_line() - Describe staging from a stats reply, in one line.
 * @stats: the daemon's stats
 * @buf: destination
 * @cap: its capacity
 *
 * "[#######.....]  63% 1.2/1.9 GiB 850 MB/s", "staging off", ...
 *
 * Return: @buf.
 */
const char *mc_stage_line(const struct ctl_stats *stats, char *buf, size_t cap);

/**
 * mc_is_staged() - Is there nothing more to stage?
 * @stats: the daemon's stats
 *
 * Return: true if stage.state is "done" or "off" (or, without a state, the
 * image is in RAM).
 */
bool mc_is_staged(const struct ctl_stats *stats);

/**
 * mc_wait_staged() - Poll a mount's daemon until staging is done.
 * @m: the mount
 * @timeout: give up after this many seconds; 0 for no limit
 *
 * Shows progress on stderr: a bar redrawn in place when stderr is a
 * terminal, a plain line every few seconds otherwise, and a last line
 * saying how staging ended.
 *
 * Return: MC_EXIT_OK; MC_EXIT_FAIL on timeout; MC_EXIT_USAGE if the
 * daemon does not answer (said on stderr).
 */
int mc_wait_staged(struct mountinfo_mount *m, double timeout);

/**
 * mc_fmt_duration() - Print seconds for people ("3m 12s").
 * @s: seconds
 * @buf: destination
 * @cap: its capacity
 *
 * Return: @buf.
 */
const char *mc_fmt_duration(double s, char *buf, size_t cap);

/**
 * mc_sif_is() - Does @path start with the SIF magic ("SIF_MAGIC" at byte 32)?
 * @path: a file
 *
 * Return: true for a SIF file; false otherwise or if it cannot be read.
 */
bool mc_sif_is(const char *path);

/**
 * mc_sif_offset() - Where the SquashFS partition of a SIF file starts.
 * @path: a SIF file
 * @out: set to the partition's offset in bytes
 * @why: filled with the reason on failure
 * @whylen: size of @why
 *
 * Takes the primary system SquashFS partition, else the first SquashFS
 * partition; every descriptor's range is checked against the file size.
 *
 * Return: 0; -EINVAL for a file that is not SIF or is damaged; -ENOENT if
 * it has no SquashFS partition; -errno from open(2).
 * Context: any thread.
 */
int mc_sif_offset(const char *path, uint64_t *out, char *why, size_t whylen);

/* keep.c: the keeper's copies (lib/keep's client). */
/**
 * mc_kept_print() - Append the kept copies the caller may see to @b.
 * @path: the keeper's socket, or NULL for the default
 * @json: as a JSON array of {uid, image, bytes, range_bytes,
 *        complete_bytes, last_use, in_use, connections, partial,
 *        inconsistent}, else for people
 * @b: buffer
 *
 * Return: 0, or -errno with nothing appended (-ENOENT: no keeper runs;
 * -ETIMEDOUT: it did not answer within KEEP_BUDGET_MS).
 */
int mc_kept_print(const char *path, bool json, struct json_buf *b);

#endif /* SQC_MOUNTCTL_MOUNTCTL_H */

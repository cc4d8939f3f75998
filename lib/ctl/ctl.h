/* SPDX-License-Identifier: MIT */
/*
 * This file declares the wire protocol between squashcached and the
 * programs that watch or steer it (mountctl, the Slurm hooks, the
 * benchmark): one definition, used by both sides.
 *
 * Transport: a Unix stream socket.  By default it lives in the abstract
 * namespace under a name derived from the canonical mount path,
 * "@squashcache-<hash>" (ctl_default_address()), so nothing is written to
 * the filesystem and a mount can be found from its path alone; "-o
 * ctl=PATH" puts it at a filesystem path instead.  The server answers only
 * its own uid and root (SO_PEERCRED); a client checks that the server runs
 * as the uid the mount belongs to.
 *
 * Abstract names have no permissions: any local user may bind the default
 * name first.  A daemon that finds it held by another uid, or by a socket
 * that does not answer, listens at "@squashcache-<hash>-<16 random hex
 * digits>" instead (ctl_fallback_address()).  A client that finds no
 * daemon of the mount's owner at the default name looks through
 * /proc/net/unix for such names and takes the one whose server runs as the
 * owner and whose ping names the mount point (ctl_request_mount()).  So a
 * squatter can neither stop a mount nor pose as its daemon.
 *
 * Exchange: the client sends one command line ("stats\n"), the server
 * answers with one JSON object on one line and closes.  Each request and
 * each reply is a struct below, turned into its line by ctl_req_encode()
 * and ctl_reply_encode() and back by ctl_req_decode() and
 * ctl_reply_decode(); neither side writes or parses a line by hand.
 * Requests (numbers are decimal, without sign or leading zeros, and one
 * space separates words):
 *
 *   ping     {"ok":true,"pid":N,"mountpoint":"/canonical/path"}
 *   stats    {"ok":true, ...}: see daemon/ctl_srv.c for the fields; the
 *            daemon builds it, ctl_reply_decode() reads what clients use
 *            (struct ctl_stats)
 *   stage [full|meta] [BYTES]
 *            {"ok":true,"mode":"full","budget":N}: start or extend
 *            staging (a mount made with stage=none|meta or a smaller
 *            ram=); mode defaults to full, BYTES (the RAM budget, which
 *            only grows; 0 or absent: the mount's ram=)
 *   umount   {"ok":true}, then the daemon unmounts and exits
 *   hold PID START     {"ok":true,"holders":N}: process PID, started at
 *            START (proc_start_time() of it,
 *            util/proc.h), holds the mount; refused
 *            ("closing") once the daemon decided to go
 *   release PID        {"ok":true,"holders":N}; "not a holder" if it was not
 *   order BYTES [PID START]
 *            followed by BYTES bytes (at most CTL_ORDER_MAX): the files
 *            this epoch will read, in order, each a path relative to the
 *            mount's root ending in a NUL.  {"ok":true,"files":N,
 *            "bytes":B,"staged":S,"window":W}: B bytes of the image will
 *            be read ahead in that order within a window of W bytes, S
 *            are staged already.  The order is process PID's, started at
 *            START (proc_start_time()): it replaces that process's order
 *            only, beside the orders of other processes (the ranks of a
 *            job that share the mount), and is forgotten when the
 *            process ends; refused ("no such process") if it is not
 *            running.  Without PID it is the mount's own order, replaced
 *            by the next such order.  "order 0 [PID START]" forgets the
 *            order.  A path that is malformed or names no regular file of
 *            the image is refused, naming it, and the order before stays.
 *
 * A refusal is {"ok":false,"error":"..."}: "unknown command", "usage:
 * ..." (ctl_req_usage()), "permission denied", or the command's own.
 *
 * Files: addr.c the names (canonical paths, addresses, the socket
 * table), sock.c the transport, proto.c the messages, lookup.c finding a
 * mount's daemon with the three, call.c one request to the daemon of a
 * mount of the mount table (util/mountinfo.h), its reply decoded; the
 * JSON they write and read is lib/json.
 */
#ifndef SQC_CTL_CTL_H
#define SQC_CTL_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "json/json.h" /* replies are written into a struct json_buf */
#include "util/compiler.h"
#include "util/mountinfo.h" /* a mount, as ctl_call_mount() takes it */

#define CTL_VERSION 1 /* bumped when a field changes meaning */
/*
 * The stable contract of `mountctl status --json` (see mountctl(1)): every
 * object has schema, mountpoint, image, pid, healthy, problem (when not
 * healthy), image_bytes, staged_bytes and holders at top level, whatever
 * the daemon's state; the daemon's detailed objects sit beside them.
 * CTL_SCHEMA is bumped only when one of those changes meaning.
 */
#define CTL_SCHEMA 1
#define CTL_PATH_MAX 108 /* sun_path */
#define CTL_REPLY_MAX (64 * 1024) /* largest reply accepted */
#define CTL_FSTYPE "fuse.squashcache" /* type in /proc/self/mounts */
#define CTL_TIMEOUT_MS 3000 /* one request of mountctl or the Slurm hooks */

/**
 * ctl_canonical_mountpoint() - Canonical form of a mount path.
 * @path: the path as the user gave it
 * @buf: destination
 * @cap: its capacity (PATH_MAX is enough)
 *
 * Resolves the parent directory with realpath() and appends the last
 * component, so it works on a mounted path that the caller cannot stat
 * (another user's FUSE mount) and on a stale one.
 *
 * Return: 0; -errno from realpath(); -ENAMETOOLONG.
 * Context: any thread.
 */
int ctl_canonical_mountpoint(const char *path, char *buf, size_t cap);

/**
 * ctl_default_address() - The control socket address for a mount path.
 * @canonical: the canonical mount path
 * @buf: destination, at least CTL_PATH_MAX bytes
 * @cap: its capacity
 *
 * The address is "@squashcache-<hash>" where '@' stands for the abstract
 * namespace's leading NUL.
 *
 * Return: 0; -ENAMETOOLONG.  Context: any thread; cannot fail otherwise.
 */
int ctl_default_address(const char *canonical, char *buf, size_t cap);

/**
 * ctl_listen() - Create the server socket.
 * @addr: "@name" (abstract) or a filesystem path
 * @fd: set to the listening socket
 *
 * A filesystem path is unlinked first if it is a stale socket; the socket
 * is made 0600.
 *
 * Return: 0; -EADDRINUSE if another server holds the address; -errno.
 * Ownership: the caller closes @fd (and unlinks a filesystem path).
 */
int ctl_listen(const char *addr, int *fd);

/**
 * ctl_peer() - Credentials of the process at the other end of @fd.
 * @fd: a connected Unix socket
 * @uid: set to its uid
 * @pid: set to its pid
 *
 * Return: 0 or -errno.  Context: any thread.
 */
int ctl_peer(int fd, uid_t *uid, pid_t *pid);

/**
 * ctl_request() - Send one command and read the reply.
 * @addr: server address
 * @cmd: the command, without newline
 * @want_uid: uid the server must run as, or (uid_t)-1 for any
 * @reply: set to the reply, NUL-terminated, without trailing newline
 * @timeout_ms: give up after this long
 *
 * Return: 0; -ECONNREFUSED or -ENOENT if no daemon listens; -EPERM if the
 * server runs as another uid; -ETIMEDOUT (also when the server's listen
 * queue stays full); -EPROTO for a malformed reply.
 * Ownership: the caller frees *@reply.
 * Context: any thread.
 */
int ctl_request(const char *addr, const char *cmd, uid_t want_uid, char **reply,
		int timeout_ms);

/**
 * ctl_request_mount() - ctl_request() to the daemon of a mount, at its
 * default address or, when that is taken, at its fallback.
 * @canonical: the canonical mount path
 * @cmd: the command, without newline
 * @want_uid: uid the daemon must run as (the mount's owner), or
 *            (uid_t)-1 for any
 * @reply: set to the reply, NUL-terminated, without trailing newline
 * @timeout_ms: give up after this long, the lookup included
 *
 * Asks at ctl_default_address() first.  If nobody listens there, or a
 * process of another uid does, or its listen queue is full, looks for the
 * daemon with ctl_find_fallback() in /proc/net/unix and asks there.
 *
 * Return: as ctl_request(), but -ECONNREFUSED or -ENOENT when no daemon
 * of @want_uid answers at either address (a stale mount), even if another
 * user's process holds the default one; -EPERM only if /proc/net/unix
 * cannot be read.
 * Ownership: the caller frees *@reply.
 * Context: any thread.
 */
int ctl_request_mount(const char *canonical, const char *cmd, uid_t want_uid,
		      char **reply, int timeout_ms);

/**
 * ctl_request_mount_body() - ctl_request_mount() of a request with a body.
 * @canonical: the canonical mount path
 * @cmd: the command, without newline ("order 123")
 * @body: the bytes sent after the line, once the server's uid is checked
 * @len: how many (the number the command names)
 * @want_uid: as ctl_request_mount()
 * @reply: as ctl_request_mount()
 * @timeout_ms: as ctl_request_mount(), sending the body included
 *
 * Return: as ctl_request_mount().
 * Ownership: the caller frees *@reply.  Context: any thread.
 */
int ctl_request_mount_body(const char *canonical, const char *cmd,
			   const void *body, size_t len, uid_t want_uid,
			   char **reply, int timeout_ms);

/**
 * ctl_fallback_address() - A fresh fallback address for a mount path.
 * @canonical: the canonical mount path
 * @buf: destination, at least CTL_PATH_MAX bytes
 * @cap: its capacity
 *
 * For a daemon whose default address is taken by another user: the
 * default address, '-' and 16 lowercase hex digits from getrandom(), so
 * that nobody can bind it ahead.
 *
 * Return: 0; -ENAMETOOLONG; -errno from getrandom().
 * Context: any thread; may block early at boot until the kernel's random
 * pool is ready.
 */
int ctl_fallback_address(const char *canonical, char *buf, size_t cap);

/**
 * ctl_probe() - Who listens at an address.
 * @addr: "@name" or a filesystem path
 * @uid: set to the uid of the process listening there
 *
 * Connects and hangs up at once, never waiting: it sends nothing, so it
 * works on a server that answers nobody.
 *
 * Return: 0; -ECONNREFUSED or -ENOENT if nobody listens (the name may be
 * bound by a socket that does not listen); -EAGAIN if the listen queue is
 * full, so the listener cannot be told; -errno.
 * Context: any thread.
 */
int ctl_probe(const char *addr, uid_t *uid);

/**
 * ctl_fallback_names() - The fallback addresses of a mount in a socket
 * table.
 * @table: /proc/net/unix, or text in its format; read from where it is
 * @canonical: the canonical mount path
 * @fn: called with each address ("@squashcache-<hash>-<16 hex>") of a
 *      listening stream socket, in table order; a non-zero return stops
 *      the walk
 * @arg: passed to @fn
 *
 * Only names ctl_fallback_address() could have made are passed on, but
 * nothing proves who made them: anyone can bind such a name.
 *
 * Return: 0 once the table is read; what @fn returned if not 0; -EIO if
 * reading fails; -ENAMETOOLONG.
 * Context: any thread.
 */
int ctl_fallback_names(FILE *table, const char *canonical,
		       int (*fn)(const char *addr, void *arg), void *arg);

/**
 * ctl_find_fallback() - Find the daemon of a mount among its fallback
 * addresses.
 * @table: /proc/net/unix, or text in its format; must be seekable
 * @canonical: the canonical mount path
 * @want_uid: uid the daemon must run as, or (uid_t)-1 for any
 * @buf: set to the address found
 * @cap: its capacity
 * @timeout_ms: give up after this long
 *
 * Pings each address of ctl_fallback_names() and takes the first whose
 * server runs as @want_uid (or root) and answers with @canonical as its
 * "mountpoint".  Full listen queues are waited on only if nothing else
 * answered.  A server of the right uid that refuses to answer us ("answers
 * only its owner and root") is taken if no other is found: it would refuse
 * the command too.
 *
 * Return: 0; -ENOENT if none is the mount's daemon; -ETIMEDOUT if one
 * that could be did not answer in time; -ENOMEM; -EIO.
 * Context: any thread.
 */
int ctl_find_fallback(FILE *table, const char *canonical, uid_t want_uid,
		      char *buf, size_t cap, int timeout_ms);

/* The requests of the protocol (see the top of this file). */
enum ctl_cmd {
	CTL_CMD_PING, /* "ping" */
	CTL_CMD_STATS, /* "stats" */
	CTL_CMD_STAGE, /* "stage [full|meta] [BYTES]" */
	CTL_CMD_UMOUNT, /* "umount" */
	CTL_CMD_HOLD, /* "hold PID START" */
	CTL_CMD_RELEASE, /* "release PID" */
	CTL_CMD_ORDER, /* "order BYTES [PID START]", then the body */
	CTL_CMD_COUNT /* number of commands, not one */
};

enum ctl_stage_mode {
	CTL_STAGE_FULL, /* the whole image, metadata first */
	CTL_STAGE_META, /* the metadata tables only */
};

#define CTL_REQ_MAX 64 /* longest request line, with its newline */
#define CTL_PID_MAX 0x3fffffff /* largest pid a request may name */
#define CTL_ERROR_MAX 128 /* longest refusal text, with its NUL */
#define CTL_HOLDERS_MAX 64 /* holder pids a stats reply keeps */
#define CTL_ORDER_MAX (512ull << 20) /* longest body of an order */

/* "stage [full|meta] [BYTES]". */
struct ctl_req_stage {
	enum ctl_stage_mode mode; /* what to stage */
	uint64_t budget; /* RAM budget in bytes; 0: the mount's ram= */
};

/* "hold PID START". */
struct ctl_req_hold {
	pid_t pid; /* the holder, 1..CTL_PID_MAX */
	uint64_t start; /* its start time, proc_start_time() */
};

/* "release PID". */
struct ctl_req_release {
	pid_t pid; /* the holder, 1..CTL_PID_MAX */
};

/* "order BYTES [PID START]". */
struct ctl_req_order {
	uint64_t bytes; /* of the body that follows, 0..CTL_ORDER_MAX */
	pid_t pid; /* whose order, 1..CTL_PID_MAX; 0: the mount's own */
	uint64_t start; /* its start time, proc_start_time() of it */
};

/* One request; ping, stats and umount have no arguments. */
struct ctl_req {
	enum ctl_cmd cmd; /* which one; selects the member below */
	union {
		struct ctl_req_stage stage; /* CTL_CMD_STAGE */
		struct ctl_req_hold hold; /* CTL_CMD_HOLD */
		struct ctl_req_release release; /* CTL_CMD_RELEASE */
		struct ctl_req_order order; /* CTL_CMD_ORDER */
	};
};

/**
 * ctl_req_encode() - The line of a request.
 * @req: the request
 * @buf: destination, without newline, NUL-terminated
 * @cap: its capacity (CTL_REQ_MAX is enough)
 *
 * Return: 0; -EINVAL if a field is out of range (ctl_req_decode() would
 * refuse the line); -ENOSPC if @cap is too small.
 * Context: any thread.
 */
int ctl_req_encode(const struct ctl_req *req, char *buf, size_t cap);

/**
 * ctl_req_decode() - The request in a line.
 * @line: the line, without newline
 * @req: set to the request; untouched on error
 *
 * Strict: one space between words, numbers in decimal without sign or
 * leading zeros and within range (pids 1..CTL_PID_MAX, 64-bit counts).
 *
 * Return: 0; -EPROTO if the first word is no command (or the line is
 * empty); -EINVAL if the arguments are malformed, out of range, missing
 * or too many.
 * Context: any thread.
 */
int ctl_req_decode(const char *line, struct ctl_req *req);

/**
 * ctl_req_usage() - What a command's line should look like.
 * @line: a request line, as received
 *
 * Return: "usage: hold PID START" for a line whose first word is a
 * command; NULL otherwise.  Cannot fail.
 */
const char *ctl_req_usage(const char *line);

/* The reply to ping. */
struct ctl_reply_ping {
	pid_t pid; /* the daemon */
	char mountpoint[PATH_MAX]; /* its canonical mount path */
};

/* The reply to hold and release. */
struct ctl_reply_holders {
	unsigned int holders; /* holders left */
};

/* The reply to stage. */
struct ctl_reply_stage {
	enum ctl_stage_mode mode; /* what is staged */
	uint64_t budget; /* the RAM budget now, in bytes */
};

/* The reply to order. */
struct ctl_reply_order {
	uint64_t files; /* files in the order */
	uint64_t bytes; /* image bytes to read ahead for them */
	uint64_t staged; /* image bytes they need that are staged */
	uint64_t window; /* bytes read ahead at most at once */
};

/* One of the two caches in a stats reply. */
struct ctl_stats_cache {
	uint64_t budget; /* bytes it may hold */
	uint64_t bytes; /* bytes it holds */
	uint64_t hits; /* lookups found */
	uint64_t misses; /* lookups that filled */
};

/*
 * The fields of a stats reply that clients read.  A field the reply does
 * not have, or has with another type, reads as 0, false or "" (an older
 * or newer daemon); the rest of the object is for `status --json` only.
 */
struct ctl_stats {
	uint64_t pid; /* the daemon */
	double uptime_s; /* seconds since it mounted */
	char mountpoint[PATH_MAX]; /* canonical mount path */
	char image[PATH_MAX]; /* the image file */
	char compressor[32]; /* "zstd" */
	uint64_t block_size; /* bytes */
	uint64_t inodes; /* in the image */
	unsigned int holders; /* number of holders */
	pid_t holder_pids[CTL_HOLDERS_MAX]; /* the first of them */
	bool holder_managed; /* unmounts after the last holder */
	char stage_state[16]; /* "idle", "running", "done", "off" */
	uint64_t stage_planned; /* bytes to stage */
	uint64_t stage_staged; /* bytes staged */
	double stage_percent; /* of planned */
	double stage_mb_per_s; /* since the plan began */
	double stage_seconds; /* since the plan began */
	bool stage_on_tmpfs; /* the image file is in RAM already */
	uint64_t image_bytes; /* image_io.bytes: the image's size */
	uint64_t image_corrupt; /* corruption events */
	uint64_t image_read_errors; /* failed image reads */
	struct ctl_stats_cache data; /* cache.data */
	struct ctl_stats_cache meta; /* cache.meta */
	uint64_t fuse_bytes_served; /* bytes read through the mount */
	uint64_t fuse_read; /* read requests */
	uint64_t fuse_eio; /* requests answered EIO */
	uint64_t fuse_uring_threads; /* io_uring queue threads */
	uint64_t fuse_uring_requests; /* requests through them */
	uint64_t warm_files; /* files pushed into the page cache */
	uint64_t warm_bytes; /* their bytes */
	uint64_t warm_open_files; /* pushed as they were opened */
	uint64_t warm_open_bytes; /* their bytes */
	char statahead_all_state[16]; /* statahead=all's state */
	uint64_t statahead_all_entries; /* entries primed */
	uint64_t statahead_all_dirs; /* directories primed */
	uint64_t statahead_entries; /* entries listed ahead */
	uint64_t statahead_dirs; /* directories listed ahead */
	uint64_t rss_bytes; /* process.rss_bytes */
};

/* One reply: a refusal, or the answer to the request it follows. */
struct ctl_reply {
	enum ctl_cmd cmd; /* the request answered; selects the member */
	bool ok; /* false: refused, see @error */
	char error[CTL_ERROR_MAX]; /* why it was refused, "" when ok */
	union {
		struct ctl_reply_ping ping; /* CTL_CMD_PING */
		struct ctl_reply_holders holders; /* HOLD and RELEASE */
		struct ctl_reply_stage stage; /* CTL_CMD_STAGE */
		struct ctl_reply_order order; /* CTL_CMD_ORDER */
		struct ctl_stats stats; /* CTL_CMD_STATS, decode only */
	};
};

/**
 * ctl_reply_refuse() - Make @rep a refusal, saying why.
 * @rep: the reply
 * @fmt: printf format of the reason, cut at CTL_ERROR_MAX - 1 bytes
 *
 * Context: any thread; cannot fail.
 */
void ctl_reply_refuse(struct ctl_reply *rep, const char *fmt, ...)
	__printf(2, 3);

/**
 * ctl_reply_encode() - Append the JSON line of a reply, without newline.
 * @rep: the reply; a refusal for any command, else ping, stage, umount,
 *       hold or release (stats is built by the daemon)
 * @b: buffer to append to
 *
 * Return: 0; -EINVAL for an ok stats reply or an unknown command;
 * -ENOMEM if @b ran out of memory.
 * Context: any thread.
 */
int ctl_reply_encode(const struct ctl_reply *rep, struct json_buf *b);

/**
 * ctl_reply_decode() - Read a reply to a request of kind @cmd.
 * @cmd: the request it answers
 * @json: the reply, one JSON object
 * @rep: filled in (all of it zeroed first); zeroed again on error
 *
 * "ok" must be true or false.  A refusal fills @rep->error ("" if it has
 * none).  An answer must have every field of its struct but for stats,
 * whose fields are each optional (struct ctl_stats); numbers must fit
 * their fields.
 *
 * Return: 0, for a refusal too (@rep->ok says which); -EPROTO for a
 * reply that is malformed or misses a field; -EINVAL for an unknown @cmd.
 * Context: any thread.
 */
int ctl_reply_decode(enum ctl_cmd cmd, const char *json, struct ctl_reply *rep);

/**
 * ctl_is_sqc_mount() - Is @m a squashcache mount (type CTL_FSTYPE)?
 * @m: a mount of the mount table
 *
 * Return: true if so.  Context: any thread; cannot fail.
 */
bool ctl_is_sqc_mount(const struct mountinfo_mount *m);

/**
 * ctl_call_mount() - One request to the daemon of a mount, at its default
 * or fallback address (ctl_request_mount_body()), the reply decoded.
 * @m: the mount, from the mount table: its path (canonical) and owner
 *     (the uid its daemon must run as)
 * @req: the request
 * @body: the bytes sent after its line (an order's), or NULL
 * @len: how many
 * @rep: set to the reply; after -EBADMSG or -EACCES, the refusal, whose
 *       @rep->error says why
 * @json: set to the reply's text (for `status --json`), or NULL
 * @timeout_ms: give up after this long (CTL_TIMEOUT_MS for one request
 *              with no reason to wait longer)
 *
 * A refusal {"ok":false,"error":"permission denied"} gives -EACCES, any
 * other refusal -EBADMSG.
 *
 * Return: 0; -ECONNREFUSED or -ENOENT if no daemon of the mount's owner
 * answers at its default or fallback address (ctl_is_stale()); -ETIMEDOUT;
 * -EACCES; -EBADMSG; -EPERM if another user holds the default address and
 * the fallback cannot be looked for; -EPROTO for a reply that does not
 * decode; -EINVAL if @req does not encode; -errno.
 * Ownership: the caller frees *@json, set only on success.
 * Context: any thread.
 */
int ctl_call_mount(const struct mountinfo_mount *m, const struct ctl_req *req,
		   const void *body, size_t len, struct ctl_reply *rep,
		   char **json, int timeout_ms);

/**
 * ctl_ping_mount() - ctl_call_mount() of a ping.
 * @m: the mount
 * @timeout_ms: as for ctl_call_mount()
 * @pid: set to the daemon's pid, or NULL
 *
 * Return: as ctl_call_mount(); -ENOMEM.  Context: any thread.
 */
int ctl_ping_mount(const struct mountinfo_mount *m, int timeout_ms, pid_t *pid);

/**
 * ctl_is_stale() - Does @err of ctl_call_mount() mean the daemon is gone?
 * @err: the error
 *
 * Return: true for "no daemon of the mount's owner listens at either
 * control address", whoever else may hold the default one (a stale
 * mount: its readers get ENOTCONN).  Context: any thread; cannot fail.
 */
bool ctl_is_stale(int err);

#endif /* SQC_CTL_CTL_H */

/* SPDX-License-Identifier: MIT */
/*
 * This file declares keeping a staged copy between mounts: the wire
 * format between a daemon (or mountctl) and the keeper, the identity of
 * an image, and the keeper's logic (which copies it holds, for whom, and
 * which it drops).  The keeper is a small root server (mountctl keeper)
 * that holds the memfds of staged copies (lib/stage, struct
 * stage_backing) once their mount ends, so that the user's next mount of
 * the same image starts staged.  See docs/design.md, "Keeping a staged
 * copy".
 *
 * The transport is a SOCK_SEQPACKET Unix socket: one struct keep_msg a
 * message, a descriptor beside it where the request or answer says.  The
 * user of a request is its peer's uid (SO_PEERCRED), never a field.
 */
#ifndef SQC_KEEP_KEEP_H
#define SQC_KEEP_KEEP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define KEEP_SOCKET "/run/squashcache/keeper.sock" /* the default */
#define KEEP_MAGIC 0x4b505153u /* "SQPK" */
#define KEEP_NAME_MAX 256 /* bytes of an image name, with its NUL */
/* Seconds a GET answered NONE holds back the same user's GETs of the
 * same image for its PUT (a daemon PUTs within milliseconds): less than a
 * daemon waits for an answer (5, daemon/keep.c), with the keeper's
 * once-a-second check and whole seconds counted. */
#define KEEP_RESERVE_S 3

enum keep_op {
	/* requests */
	KEEP_GET = 1, /* fd: the image; a: the range's offset in it, b: its
			 size; name: for display.  Answer COPY (kept, or in
			 use by the user's other mounts of it: shared) or
			 NONE; while another GET of the user's answered
			 NONE has not PUT, the answer waits for that PUT
			 (COPY) or its close (NONE), KEEP_RESERVE_S at
			 most */
	KEEP_PUT, /* fd: a new copy (stage_backing_new()) after NONE.
		     Answer DONE */
	KEEP_LIST, /* answer: ENTRY per copy, then DONE (a: copies) */
	KEEP_FORGET, /* name: the image, "" for all.  DONE, a: copies */
	KEEP_EVICT, /* a: bytes to free (root).  DONE, a: bytes freed */
	/* answers */
	KEEP_COPY, /* fd: the copy; a: its complete bytes */
	KEEP_NONE, /* no copy: make one and PUT it */
	KEEP_ENTRY, /* one copy: uid, a: bytes, b: complete bytes, c: last
		       use (seconds since the epoch), in_use, partial (fewer
		       bytes complete than its range), name */
	KEEP_DONE, /* status: 0 or -errno */
};

struct keep_msg {
	uint32_t magic; /* KEEP_MAGIC */
	uint32_t op; /* enum keep_op */
	int32_t status; /* answers: 0 or -errno */
	uint32_t in_use; /* ENTRY: the copy is used by a mount */
	uint64_t a, b, c; /* as enum keep_op says */
	uint32_t uid; /* ENTRY: the owner */
	uint32_t partial; /* ENTRY: as enum keep_op says; else 0 */
	char name[KEEP_NAME_MAX]; /* NUL-terminated */
};

/* What a copy is of: the image file as fstat() tells it, and the range. */
struct keep_key {
	uint64_t dev, ino, size; /* the file */
	int64_t mtime_sec, mtime_nsec; /* a user can set these */
	int64_t ctime_sec, ctime_nsec; /* and cannot set these */
	uint64_t offset; /* where the range starts in it */
};

/**
 * keep_key_of() - The identity of an image.
 * @sb: fstat() of a descriptor of it
 * @offset: where the staged range starts in the file
 * @out: filled in (every byte: it is compared as bytes)
 *
 * Context: any thread; cannot fail.
 */
void keep_key_of(const struct stat *sb, uint64_t offset, struct keep_key *out);

/**
 * keep_send() - Send one message, and a descriptor with it.
 * @sock: a SOCK_SEQPACKET socket
 * @m: the message (magic is set here)
 * @fd: the descriptor to pass, or -1
 *
 * Return: 0 or -errno.  Context: any thread.
 */
int keep_send(int sock, struct keep_msg *m, int fd);

/**
 * keep_recv() - Receive one message, and the descriptor with it.
 * @sock: a SOCK_SEQPACKET socket
 * @m: filled in; its name is NUL-terminated
 * @fd: set to the descriptor passed (close-on-exec), or -1
 *
 * Return: 0; -ECONNRESET when the peer closed; -EBADMSG for a message of
 * the wrong size or magic (a descriptor that came with it is closed);
 * -errno.  Context: any thread.
 */
int keep_recv(int sock, struct keep_msg *m, int *fd);

/**
 * keep_connect() - Connect to the keeper.
 * @path: its socket
 * @out: set to the connection
 *
 * Only a socket that root owns is used: a keeper run by anyone else would
 * be given the user's images.
 *
 * Return: 0; -ENOENT if no keeper listens; -EPERM if the socket is not
 * root's; -errno.  Context: any thread.
 */
int keep_connect(const char *path, int *out);

/* The keeper's logic (keeper.c), without its sockets' setup and loop. */
struct keeper;

/**
 * keeper_new() - A keeper with no copies.
 * @budget: bytes of kept copies (not in use) of all users together
 * @out: set to the keeper
 *
 * Return: 0; -ENOMEM.  Context: one thread uses a keeper.
 */
int keeper_new(uint64_t budget, struct keeper **out);

/* Drop every copy; @k may be NULL. */
void keeper_free(struct keeper *k);

/**
 * keeper_request() - Answer one request.
 * @k: keeper
 * @conn: the connection it came on (answers go there; a copy given or put
 *        is in use until keeper_closed(@conn))
 * @uid: its user, from the kernel (SO_PEERCRED)
 * @m: the request
 * @fd: the descriptor that came with it, or -1; the keeper owns it
 *
 * Return: 0, or -errno if the answer could not be sent (close @conn).
 * Context: the keeper's thread.
 */
int keeper_request(struct keeper *k, int conn, uid_t uid,
		   const struct keep_msg *m, int fd);

/**
 * keeper_closed() - A connection closed: its copy is kept, or dropped if
 * the budget cannot hold it.
 * @k: keeper
 * @conn: the connection, which the caller closes
 *
 * Context: the keeper's thread.
 */
void keeper_closed(struct keeper *k, int conn);

/**
 * keeper_expire() - Drop the reservations of GETs answered NONE longer
 * than KEEP_RESERVE_S ago without a PUT: the GETs waiting for them are
 * answered NONE.
 * @k: keeper
 *
 * Context: the keeper's thread, once a second (and at each request).
 */
void keeper_expire(struct keeper *k);

/**
 * keeper_evict() - Drop kept copies, least recently used first.
 * @k: keeper
 * @bytes: until this many bytes are freed, or none is left
 *
 * Return: the bytes freed.  Context: the keeper's thread.
 */
uint64_t keeper_evict(struct keeper *k, uint64_t bytes);

/**
 * keeper_kept() - Bytes of kept copies (not in use), and how many copies
 * there are in all.
 * @k: keeper
 * @copies: set to the number of copies, in use or not, or NULL
 *
 * Return: the bytes.  Context: the keeper's thread.
 */
uint64_t keeper_kept(const struct keeper *k, unsigned int *copies);

#endif /* SQC_KEEP_KEEP_H */

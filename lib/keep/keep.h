/* SPDX-License-Identifier: MIT */
/*
 * This file declares keeping a staged copy between mounts: the wire
 * format between a daemon (or mountctl) and the keeper, its clients, the
 * identity of an image, and the keeper's logic (which copies it holds,
 * for whom, and which it drops).  The keeper is a small root server
 * (mountctl keeper, slurm/keep_srv.c) that holds the memfds of staged
 * copies (lib/stage, struct stage_backing) once their mount ends, so
 * that the user's next mount of the same image starts staged.  See
 * docs/design.md, "Keeping a staged copy", and slurm/README.md for what
 * the root side trusts.
 *
 * With site images (keeper_get_site()), the keeper also holds one copy
 * of each for every user who can open it, made by root (slurm/
 * keep_site.c) and handed out read-only.
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
/* Root's own socket, the public one's path with this after it: mode 0600
 * (only root connects), always listened on, so that no user's flood of
 * connections keeps root out. */
#define KEEP_ROOT_SUFFIX ".root"
#define KEEP_MAGIC 0x4b505153u /* "SQPK" */
#define KEEP_NAME_MAX 256 /* bytes of an image name, with its NUL */
/* Seconds a GET answered NONE holds back the same user's GETs of the
 * same image for its PUT (a daemon PUTs within milliseconds): less than a
 * daemon waits for an answer (KEEP_BUDGET_MS), with the keeper's
 * once-a-second check and whole seconds counted. */
#define KEEP_RESERVE_S 3
/* What a client waits for the keeper, connect included: it answers at
 * once or is stuck, and a stuck keeper must cost a job nothing but its
 * keeping. */
#define KEEP_BUDGET_MS 5000
/* Copies of one user (but root's), kept and in use together: a node runs
 * a few mounts per user. */
#define KEEP_USER_COPIES 64
/* How long a GET of a site image waits for root to open it and start its
 * copy before it is answered as for a user's own image: within the
 * daemon's KEEP_BUDGET_MS, with the look at its descriptor before. */
#define KEEP_SITE_READY_MS 3000
/* A site copy that could not be made is not tried again for the same
 * image identity for this long (its GETs go as for a user's own). */
#define KEEP_SITE_RETRY_S 60

enum keep_op {
	/* requests */
	KEEP_GET = 1, /* fd: the image (a regular file, opened for
			 reading); a: the range's offset in it, b: its
			 size; name: for display.  Answer COPY (kept, or in
			 use by the user's other mounts of it: shared) or
			 NONE; while another GET of the user's answered
			 NONE has not PUT, the answer waits for that PUT
			 (COPY) or its close (NONE), KEEP_RESERVE_S at
			 most */
	KEEP_PUT, /* fd: a new copy (stage_backing_new()) after NONE.
		     Answer DONE */
	KEEP_LIST, /* answer: ENTRY per copy, then DONE (a: copies) */
	KEEP_FORGET, /* name: the image, "" for all; a: KEEP_F_SITE for
			the site copies only (root); flags KEEP_F_OF_UID:
			of user uid only (root).  DONE, a: copies */
	KEEP_EVICT, /* a: bytes to free (root).  DONE, a: bytes freed */
	/* answers */
	KEEP_COPY, /* fd: the copy; a: its complete bytes */
	KEEP_NONE, /* no copy: make one and PUT it */
	KEEP_ENTRY, /* one copy: uid, a: bytes it holds in memory, b:
		       complete bytes, c: last use (seconds since the
		       epoch), d: bytes of its range, in_use: connections
		       using it, flags (KEEP_F_*), name */
	KEEP_DONE, /* status: 0 or -errno */
	KEEP_PING, /* request (b: the sender's descriptor of the copy its
		      connection uses, plus 1; 0: none): answered DONE,
		      status 0, a: bytes the copies not in use hold */
	KEEP_USER, /* answer of LIST, after the ENTRY of a site copy: one
		      of its users (root sees all; a user only
		      themselves): uid, in_use: their connections using
		      it, flags: KEEP_F_USED if a live daemon of theirs
		      holds it */
};

/* KEEP_ENTRY's flags. */
#define KEEP_F_PARTIAL 1u /* fewer bytes complete than its range */
#define KEEP_F_INCONSISTENT 2u /* its trailer does not check */
#define KEEP_F_USED \
	4u /* a live daemon of its user serves a mount
			  from it (slurm/keep_srv.c checks) */
/* ENTRY, COPY: a site copy: root made it of a site image's own bytes,
 * for every user who can open the image; no user writes it.  COPY's name
 * is then the root hash its chunks were checked against, in hex, or ""
 * (no seal), and b its range's bytes. */
#define KEEP_F_SITE 8u
#define KEEP_F_STAGING 16u /* ENTRY: root is still staging it */
#define KEEP_F_OF_UID 32u /* FORGET: copies of uid only (root) */

struct keep_msg {
	uint32_t magic; /* KEEP_MAGIC */
	uint32_t op; /* enum keep_op */
	int32_t status; /* answers: 0 or -errno */
	uint32_t in_use; /* ENTRY: connections using the copy */
	uint64_t a, b, c, d; /* as enum keep_op says */
	uint32_t uid; /* ENTRY: the owner; FORGET with KEEP_F_OF_UID: whose */
	uint32_t flags; /* ENTRY, FORGET: KEEP_F_*; else 0 */
	char name[KEEP_NAME_MAX]; /* NUL-terminated */
};

/* What a copy is of: the image file as fstat() tells it, the range, and
 * the pid namespace of the mounts sharing it (their claims on its chunks
 * name pids: lib/stage/backing.c). */
struct keep_key {
	uint64_t dev, ino, size; /* the file */
	int64_t mtime_sec, mtime_nsec; /* a user can set these */
	int64_t ctime_sec, ctime_nsec; /* and cannot set these */
	uint64_t offset; /* where the range starts in it */
	uint64_t pidns; /* inode of the mounting process's pid namespace */
};

/**
 * keep_key_of() - The identity of an image.
 * @sb: fstat() of a descriptor of it
 * @offset: where the staged range starts in the file
 * @pidns: the inode of the pid namespace of the process that mounts it
 *         (keep_pidns())
 * @out: filled in (every byte: it is compared as bytes)
 *
 * Context: any thread; cannot fail.
 */
void keep_key_of(const struct stat *sb, uint64_t offset, uint64_t pidns,
		 struct keep_key *out);

/**
 * keep_pidns() - The inode of a process's pid namespace.
 * @pid: the process, 0 for the caller
 *
 * Return: the inode; 0 if it cannot be told (no /proc).
 * Context: any thread; reads /proc only.
 */
uint64_t keep_pidns(pid_t pid);

/**
 * keep_pidns_of() - As keep_pidns(), of the process a pidfd is of, asked
 * of the pidfd (PIDFD_GET_PID_NAMESPACE, Linux 6.11); where the kernel
 * has no such ioctl, of the pidfd's fdinfo (one NSpid: our namespace;
 * more: 0).  Nothing of the process itself is read: a /proc link of a
 * process waits on its exec lock, which a user's execve() can hold for
 * ever (while it flushes a user's FUSE file it closes), and a read of its
 * status can be the last to let go of its memory.
 * @pidfd: the process's pidfd, or -1 (then 0)
 *
 * Context: any thread; cannot fail (0: unknown).
 */
uint64_t keep_pidns_of(int pidfd);

/**
 * keep_send() - Send one message, and a descriptor with it.
 * @sock: a SOCK_SEQPACKET socket
 * @m: the message (magic is set here)
 * @fd: the descriptor to pass, or -1
 *
 * Return: 0 or -errno (-EAGAIN on a non-blocking socket that is full).
 * Context: any thread.
 */
int keep_send(int sock, struct keep_msg *m, int fd);

/**
 * keep_recv() - Receive one message, and the descriptor with it.
 * @sock: a SOCK_SEQPACKET socket
 * @m: filled in; its name is NUL-terminated
 * @fd: set to the descriptor passed (close-on-exec), or -1
 *
 * At most one descriptor is taken: the kernel drops any others of the
 * message without installing them (so without a close() that a user's
 * file system could make wait).  Nothing is closed here: *@fd is set
 * even for a message refused, and the caller disposes of it.
 *
 * Return: 0; -ECONNRESET when the peer closed; -EBADMSG for a message of
 * the wrong size or magic; -errno.  Context: any thread.
 */
int keep_recv(int sock, struct keep_msg *m, int *fd);

struct ucred;

/**
 * keep_recv_from() - keep_recv(), and who sent the message.
 * @sock: a SOCK_SEQPACKET socket with SO_PASSCRED set
 * @m: as keep_recv()
 * @fd: as keep_recv()
 * @cr: set to the sending process's credentials, as the kernel tells them
 *      (pid 0 if it did not)
 *
 * The sender of a message may be another process than the one that
 * connected (SO_PEERCRED): a daemon connects, then detaches into a child.
 *
 * Return: as keep_recv().  Context: any thread.
 */
int keep_recv_from(int sock, struct keep_msg *m, int *fd, struct ucred *cr);

/* Descriptors one message can carry (the kernel's SCM_MAX_FD). */
#define KEEP_MSG_FDS 253

/**
 * keep_recv_fds() - keep_recv_from(), with every descriptor the message
 * carries installed in @fds (the first is the one a request names).
 * @sock: as keep_recv_from()
 * @m: as keep_recv()
 * @fds: room for KEEP_MSG_FDS descriptors
 * @n: set to how many were received (each the caller's to close)
 * @cr: as keep_recv_from()
 *
 * A descriptor the kernel drops (no room for it) is released in the
 * receiving thread, and the release of a user's file can wait (a TCP
 * socket lingering on a full window, for as long as its SO_LINGER says):
 * a server that must not wait receives them all, and closes them where
 * waiting costs only that user.
 *
 * Return: as keep_recv().  Context: any thread.
 */
int keep_recv_fds(int sock, struct keep_msg *m, int *fds, unsigned int *n,
		  struct ucred *cr);

/**
 * keep_connect() - Connect to the keeper, within a time budget.
 * @path: its socket
 * @budget_ms: how long connect() may wait (a full backlog); the socket's
 *             send and receive timeouts are set to it too
 * @out: set to the connection
 *
 * Only a socket that root owns is used: a keeper run by anyone else would
 * be given the user's images.  Root connects to root's own socket
 * (@path with KEEP_ROOT_SUFFIX) where there is one.
 *
 * Return: 0; -ENOENT if no keeper listens; -EPERM if the socket is not
 * root's; -ETIMEDOUT; -errno.  Context: any thread.
 */
int keep_connect(const char *path, int budget_ms, int *out);

/**
 * keep_forget_of() - Root's FORGET of one user's copies of one image
 * (KEEP_F_OF_UID), within a budget: not the same name's copies of other
 * users, which root's FORGET by name alone drops too.
 * @path: the keeper's socket (NULL: KEEP_SOCKET)
 * @uid: whose
 * @name: the image, as LIST named it
 * @budget_ms: for all of it, connect included
 *
 * Return: its status; -ETIMEDOUT if the keeper did not answer in time;
 * -errno.  Context: any thread, as root.
 */
int keep_forget_of(const char *path, uid_t uid, const char *name,
		   int budget_ms);

/**
 * keep_ask() - One request to the keeper answered DONE, within a budget.
 * @path: the keeper's socket (NULL: KEEP_SOCKET)
 * @op: KEEP_FORGET, KEEP_EVICT or KEEP_PING
 * @name: for FORGET, or NULL
 * @a: for EVICT
 * @budget_ms: for all of it, connect included
 * @out: the answer's a, or NULL
 *
 * Return: its status; -ETIMEDOUT if the keeper did not answer in time;
 * -errno.  Context: any thread.
 */
int keep_ask(const char *path, int op, const char *name, uint64_t a,
	     int budget_ms, uint64_t *out);

/**
 * keep_list() - The copies the keeper holds that the caller may see
 * (root: all; site copies: everyone), within a budget.
 * @path: the keeper's socket (NULL: KEEP_SOCKET)
 * @budget_ms: for all of it
 * @fn: called for each ENTRY, and each USER after a site copy's ENTRY
 * @arg: passed to @fn
 *
 * Return: 0 once DONE came; -ETIMEDOUT; -errno.  Context: any thread.
 */
int keep_list(const char *path, int budget_ms,
	      void (*fn)(void *arg, const struct keep_msg *e), void *arg);

/**
 * keep_name_print() - An image name made fit to print on one line: C0
 * and C1 control characters (U+0000-U+001F, U+007F-U+009F) and bytes
 * that are not UTF-8 become '?'.
 * @dst: KEEP_NAME_MAX bytes
 * @src: a NUL-terminated name, at most KEEP_NAME_MAX bytes with its NUL
 *
 * Context: any thread; cannot fail.
 */
void keep_name_print(char *dst, const char *src);

/**
 * keep_dir_open() - Open the directory of a keeper socket, checked: a
 * directory of root's that nobody else may write to, opened without
 * following a symlink, made (root's, 0755) if @create and missing.
 * @sock: the socket's path (absolute)
 * @create: make the directory if missing
 * @name: set to the socket's name in it (points into @sock)
 *
 * The keeper binds and the Prolog locks through this descriptor, so that
 * what was checked is what is used.
 *
 * Return: the descriptor, or -errno (-EPERM: not root's alone; -EINVAL:
 * not an absolute path with a directory).  Context: any thread.
 */
int keep_dir_open(const char *sock, bool create, const char **name);

/* The keeper's logic (keeper.c), without its sockets, threads and checks
 * of the peers (slurm/keep_srv.c). */
struct keeper;

struct keeper_opts {
	uint64_t budget; /* bytes kept copies may hold, all users together */
	unsigned int user_copies; /* of one user but root; 0: the default */
	unsigned int max_copies; /* of all users together; 0: no cap */
	/* Site copies (keeper_get_site()): bytes those not in use may hold,
	 * a budget of their own. */
	uint64_t site_budget;
	/*
	 * Start making the site copy @id of the image at @path (its real
	 * path, from the descriptor the user sent: @image is that
	 * descriptor's fstat()) from @offset, for @uid's GET: the server's
	 * job (root opens the image itself, checks it is the same file,
	 * stages it).  It reports back with keeper_site_ready(), then
	 * keeper_site_ended(), or keeper_site_failed().  Return: 0;
	 * -errno (-EBUSY: too many under way): the GET is then answered as
	 * for the user's own image.  NULL: no site copies.
	 */
	int (*site_start)(void *arg, uint64_t id, uid_t uid, const char *path,
			  const struct stat *image, uint64_t offset);
	/* Stop making site copy @id (dropped, or given up on): its job
	 * ends; what it reports of @id from now on is not needed (a
	 * descriptor it hands keeper_site_ready() is then closed). */
	void (*site_stop)(void *arg, uint64_t id);
	void *site_arg; /* passed to both */
	/* The monotonic clock in milliseconds (tests give their own);
	 * NULL: CLOCK_MONOTONIC. */
	int64_t (*now_ms)(void *arg);
	void *clock_arg;
};

/**
 * keeper_new() - A keeper with no copies.
 * @o: its budget and limits
 * @out: set to the keeper
 *
 * Return: 0; -ENOMEM.  Context: one thread uses a keeper.
 */
int keeper_new(const struct keeper_opts *o, struct keeper **out);

/* Drop every copy; @k may be NULL. */
void keeper_free(struct keeper *k);

/**
 * keeper_open() - A connection came.
 * @k: keeper
 * @conn: its id (the server's socket descriptor)
 * @uid: its user, from the kernel (SO_PEERCRED)
 * @pidns: its peer's pid namespace (keep_pidns())
 *
 * Return: 0; -ENOMEM.  Context: the keeper's thread.
 */
int keeper_open(struct keeper *k, int conn, uid_t uid, uint64_t pidns);

/**
 * keeper_request() - Answer one request of @conn: the answers are queued
 * on it (keeper_answer_next()), and on other connections where it
 * answers their waiting GETs.
 * @k: keeper
 * @conn: the connection it came on (a copy given or put is in use by it
 *        until keeper_closed(@conn))
 * @m: the request
 * @image: GET: fstat() of the image descriptor that came with it, taken
 *         where no user can make the keeper wait; else NULL
 * @fd: PUT: the copy, a descriptor proven to be shmem (F_GET_SEALS), the
 *      keeper's from now on; else -1
 *
 * Return: 0; -ENOMEM if nothing could be answered (close @conn).
 * Context: the keeper's thread.
 */
int keeper_request(struct keeper *k, int conn, const struct keep_msg *m,
		   const struct stat *image, int fd);

/**
 * keeper_get_site() - A GET of a site image: the server found that the
 * image descriptor that came with it is, by its real path, under the
 * site's prefixes, not on a user's own file system, and linked.
 * @k: keeper
 * @conn: the connection it came on
 * @m: the request (a: the range's offset in the file)
 * @image: fstat() of the image descriptor, taken where no user can make
 *         the keeper wait: the proof that the user can open it now, and
 *         its identity
 * @path: its real path (the descriptor's, from /proc: d_path)
 *
 * The answer is the one site copy of that identity, for every user:
 * COPY (KEEP_F_SITE) at once if root made it or is staging it; else
 * root starts making it (keeper_opts.site_start) and the answer waits
 * until it is ready, KEEP_SITE_READY_MS at most.  When no site copy can
 * be had (none can be started, it failed, it would not fit the site
 * budget), the GET is answered as keeper_request() answers one of the
 * user's own image: a copy of theirs, which only they ever get.
 *
 * Return: 0; -ENOMEM if nothing could be answered (close @conn).
 * Context: the keeper's thread.
 */
int keeper_get_site(struct keeper *k, int conn, const struct keep_msg *m,
		    const struct stat *image, const char *path);

/**
 * keeper_site_ready() - Site copy @id is made and being staged: the GETs
 * waiting for it are answered with it.
 * @k: keeper
 * @id: as keeper_opts.site_start() was given
 * @fd: a descriptor of it, open for reading only (root's memfd, which
 *      no user can write): the keeper's from now on if 0 is returned
 * @range: bytes of its range
 * @root: the root hash its chunks are checked against (SEAL_HASH_SIZE
 *        bytes, hex in COPY), or NULL: no seal
 *
 * Return: 0; -ENOENT if @id is not awaited (given up on, dropped) and
 * -EFBIG if it cannot fit the site budget: the caller closes @fd, and
 * stops making it.  Context: the keeper's thread.
 */
int keeper_site_ready(struct keeper *k, uint64_t id, int fd, uint64_t range,
		      const uint8_t *root);

/**
 * keeper_site_failed() - Site copy @id could not be made (before it was
 * ready): the GETs waiting for it are answered as for users' own images,
 * and none of that identity is tried again for KEEP_SITE_RETRY_S.
 * Context: the keeper's thread.
 */
void keeper_site_failed(struct keeper *k, uint64_t id, int err);

/**
 * keeper_site_ended() - Root's staging of site copy @id ended: @err 0
 * when every chunk was read (those that failed their seal check stay
 * incomplete); else it stopped (a read failed, the image changed): the
 * copy is given to no new GET, and dropped once no mount uses it.
 * Context: the keeper's thread.
 */
void keeper_site_ended(struct keeper *k, uint64_t id, int err);

/**
 * keeper_answer_next() - The next answer queued for @conn.
 * @k: keeper
 * @conn: the connection
 * @m: set to the answer
 * @fd: set to the descriptor to pass with it, or -1 (the keeper's, open
 *      until keeper_answer_sent())
 *
 * Return: false if none is queued.  Context: the keeper's thread.
 */
bool keeper_answer_next(struct keeper *k, int conn, struct keep_msg *m,
			int *fd);

/* The answer keeper_answer_next() gave was sent: drop it. */
void keeper_answer_sent(struct keeper *k, int conn);

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
 * keeper_copy_fd() - The copy @conn uses, for the server's check that
 * its peer holds it.
 * Return: the keeper's descriptor of it, or -1.  Context: the keeper's
 * thread.
 */
int keeper_copy_fd(struct keeper *k, int conn);

/**
 * keeper_set_used() - Whether @conn's peer is a live daemon that holds
 * the copy it uses (the server checks it).  A copy no such connection
 * uses counts against the budget and may be dropped, as a kept one.
 * Context: the keeper's thread.
 */
void keeper_set_used(struct keeper *k, int conn, bool used);

/**
 * keeper_tick() - Once a second: drop the reservations of GETs answered
 * NONE longer than KEEP_RESERVE_S ago without a PUT (their waiters are
 * answered NONE), measure what each copy holds, and keep the copies not
 * in use within the budget.
 * Context: the keeper's thread.
 */
void keeper_tick(struct keeper *k);

/**
 * keeper_evict() - Drop copies not in use until @bytes are freed, or none
 * is left: each time the least recently used copy of the user whose
 * copies not in use hold the most bytes.
 * @k: keeper
 * @bytes: until this many bytes are freed
 *
 * Return: the bytes freed.  Context: the keeper's thread.
 */
uint64_t keeper_evict(struct keeper *k, uint64_t bytes);

/**
 * keeper_kept() - Bytes held by copies not in use, and how many copies
 * there are in all.
 * @k: keeper
 * @copies: set to the number of copies, in use or not, or NULL
 *
 * Return: the bytes.  Context: the keeper's thread.
 */
uint64_t keeper_kept(const struct keeper *k, unsigned int *copies);

#endif /* SQC_KEEP_KEEP_H */

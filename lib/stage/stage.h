/* SPDX-License-Identifier: MIT */
/*
 * This file declares staging: a copy in RAM of a byte range (the
 * compressed image), brought in by stager threads in large sequential
 * reads, metadata first, so that once it is done no read touches the
 * storage the range sits on.
 *
 * One module owns all of it: the plan and its budget, the state of each
 * 128 KiB chunk, the stager threads and their pacing, resuming with a
 * larger plan, and the questions readers ask ("is this range staged, or
 * can I have it staged", "has staging ended").  It knows nothing of
 * SquashFS: its owner (lib/image) says where the metadata starts and
 * gives it a function that reads bytes of the range (struct stage_src).
 * See docs/design.md, "Staging", for the design and its figures.
 */
#ifndef SQC_STAGE_STAGE_H
#define SQC_STAGE_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stage; /* opaque, shared by all threads */

enum stage_mode {
	STAGE_AUTO, /* full, unless the image already sits in RAM (tmpfs) */
	STAGE_FULL, /* metadata first, then data, up to the RAM budget */
	STAGE_META, /* only the metadata tables */
	STAGE_NONE, /* read everything on demand */
};

enum stage_state {
	STAGE_IDLE, /* not started */
	STAGE_RUNNING, /* streaming */
	STAGE_DONE, /* everything planned is in RAM */
	STAGE_OFF, /* staging disabled or impossible */
};

/* How the stage reads the range it copies; the owner's. */
struct stage_src {
	/*
	 * Read @len bytes at @off of the range into @dst, all or fail.
	 * @reader: NULL for a stager thread's read, else the value the
	 * caller of stage_get() passed (whose read it is, for counting).
	 * Return: 0 or a negative errno.  Context: any thread.
	 */
	int (*read)(void *arg, uint64_t off, void *dst, size_t len,
		    const void *reader);
	/* Called by one stager thread about once a second (the owner
	 * watches its file for changes); may be NULL. */
	void (*watch)(void *arg);
	void *arg; /* passed to each */
	const char *name; /* what is staged, for the log ("'%s'") */
	/*
	 * Check a chunk's @len bytes at @off of the range, in the staged
	 * copy at @bytes, before it counts as staged: once read (before a
	 * backing copy marks it complete), and once another process's
	 * stage of the same backing completed it.  Return: 0, or a
	 * negative errno: the chunk is then not staged (FAILED: readers
	 * go to the source, and a backing copy does not mark it
	 * complete), and staging goes on.  May be NULL.  Chunks a backing
	 * copy held complete at stage_new() are not checked here (the
	 * owner checks what it reads of them).  Context: any thread.
	 */
	int (*check)(void *arg, uint64_t off, const void *bytes, size_t len);
};

/*
 * A copy to stage into instead of an anonymous mapping (stage_opts.backing):
 * a descriptor of stage_backing_size() bytes made by stage_backing_new(),
 * the range's bytes at their offsets, then a trailer saying what the copy
 * is of (@key, the owner's identity of the range) and, per chunk, whether
 * its bytes are complete or which process is reading them.  Another
 * process may hold the descriptor after the stage is gone and give it to
 * a later stage of the same range: that one starts with the complete
 * chunks staged and reads only the others.  Stages in several processes
 * may stage one copy at once: each chunk is read by one of them, the
 * others wait for it; one whose reader died is read again.
 */
#define STAGE_KEY_MAX 80 /* bytes of a backing's key, at most */

struct stage_backing {
	int fd; /* the copy, mapped shared; the caller keeps it */
	const void *key; /* what the copy must be of */
	size_t key_len; /* its bytes, 1..STAGE_KEY_MAX */
	/*
	 * A follower: another process (root's keeper, for a site image)
	 * is the copy's one writer, and @fd may be open for reading only.
	 * The stage maps it PROT_READ and never writes to it, nor claims a
	 * chunk: a chunk is staged once its writer marked it complete (at
	 * start, or as it lands: the stager thread and each reader look at
	 * its word), and until then a reader reads the source itself.
	 * Staging ends once the writer ended (stage_backing_end()), every
	 * chunk is complete, or @writer is gone.
	 */
	bool follow;
	int writer; /* with @follow: a pidfd of the writer, or -1; the
		       stage keeps a dup of it */
	/* With @follow: what the writer checked every chunk against
	 * before it marked it complete (a seal's root hash), or NULL.
	 * Not looked at here: for the owner, whose own check of the same
	 * root need not run again on them. */
	const uint8_t *checked_root;
};

/* Whether a stage uses its backing (struct stage_stats.backing). */
enum stage_backing_use {
	STAGE_BACKING_NONE, /* none given: an anonymous mapping */
	STAGE_BACKING_USED, /* staged into the backing */
	STAGE_BACKING_REFUSED, /* its trailer did not match: anonymous */
};

struct stage_opts {
	uint64_t size; /* bytes of the range */
	uint64_t meta_start; /* the metadata: from here to the end, staged
				first; clamped to @size */
	enum stage_mode mode; /* FULL, META or NONE (the owner resolves
				 AUTO) */
	uint64_t budget; /* bytes of RAM allowed */
	const struct stage_backing *backing; /* or NULL: anonymous memory */
	/* With a backing copy shared with other processes: how long a
	 * reader waits for a chunk another live process is reading before
	 * it reads the bytes it needs itself (ms; 0: STAGE_CLAIM_STALE_MS). */
	unsigned int claim_stale_ms;
};

#define STAGE_CLAIM_STALE_MS 5000

/* stage_get() flags. */
#define STAGE_GET_STAGED_ONLY \
	1u /* neither read a chunk nor wait for
				    one under way (warming) */

struct stage_stats {
	enum stage_state state; /* where staging stands */
	uint64_t budget; /* RAM allowed for staging */
	uint64_t planned; /* bytes the stager will bring in */
	uint64_t staged; /* bytes in RAM now */
	uint64_t base; /* of those, staged before the current plan */
	uint64_t by_readers; /* staged chunks that readers read in */
	unsigned int threads; /* stager threads running */
	unsigned int inflight; /* stager reads under way now */
	unsigned int inflight_max; /* the most at once */
	unsigned int target; /* how many it keeps under way now */
	double read_ms_min; /* its fastest 1 MiB read, ms */
	double read_ms; /* their mean time in the last round, ms */
	double seconds; /* staging time so far (or total when done) */
	int error; /* errno that stopped the stager, or 0 */
	enum stage_backing_use backing; /* whether a backing copy is used */
	uint64_t adopted; /* bytes complete in it at stage_new() */
	uint64_t peers; /* of staged, bytes another process's stage of the
			   shared backing staged meanwhile */
	uint64_t refused; /* bytes of chunks read whose check failed */
};

/**
 * stage_new() - Set up the staged copy of a range and its plan.
 * @src: how to read the range; copied, @src->arg must outlive the stage
 * @o: size, metadata start, mode and budget
 * @out: set to the stage
 *
 * Reserves address space for the whole range (pages cost memory only once
 * staged) and plans it, metadata first, within the budget.  Nothing is
 * read until a reader or a stager thread asks.  If the address space
 * cannot be reserved, staging is off (logged once) and every read goes to
 * the source.
 *
 * Return: 0; -ENOMEM.
 * Ownership: the caller frees it with stage_free().
 * Context: any thread.
 */
int stage_new(const struct stage_src *src, const struct stage_opts *o,
	      struct stage **out);

/**
 * stage_free() - Stop the stager threads and free the staged copy.
 * @st: stage, may be NULL
 *
 * Context: no other thread may use @st any more.
 */
void stage_free(struct stage *st);

/**
 * stage_start() - Start the stager threads.
 * @st: stage
 * @threads: how many; 0 for the default (16).  At most as many read at
 *           once as the source serves without queueing them.
 *
 * Only the first thread starts here; it starts the others once the plan
 * has something to read.  It also calls the source's watch() about once a
 * second, and goes on doing so once the plan is done or when staging is
 * off.
 *
 * Return: 0; -EALREADY if started; -errno from pthread_create() (no
 * thread runs).
 * Context: any thread; stage_stop() before stage_free() is optional.
 */
int stage_start(struct stage *st, unsigned int threads);

/**
 * stage_stop() - Stop and join the stager threads.
 * @st: stage, may be NULL
 *
 * Waiters in stage_wait() return.  Context: not from a stager thread.
 */
void stage_stop(struct stage *st);

/**
 * stage_next() - Bring the next run of the plan into RAM.
 * @st: stage
 *
 * What each stager thread calls in a loop; tests and tools without
 * threads call it themselves.  Each call reads one run of chunks (1 MiB
 * aligned) in one read, skipping those a reader brought in already; once
 * the metadata is in, the run after a streaming reader's last fill comes
 * first.  When as many stager reads are under way as the source serves
 * without queueing them (paced by how long they take), a call waits up to
 * 20 ms for one to end instead.  A failed read stops the plan, logged
 * once: reads of what is not staged then go to the source.
 *
 * Return: 1 if a run was read (or the call waited for a free slot), 0
 * when the plan is complete and no chunk read is under way.
 * Context: any number of threads; readers may run meanwhile.
 */
int stage_next(struct stage *st);

/**
 * stage_get() - Point at a staged range, staging it first if planned.
 * @st: stage
 * @off: offset in the range
 * @len: bytes, not 0
 * @flags: 0, or STAGE_GET_STAGED_ONLY
 * @reader: not NULL; passed on to the source's read() for a chunk read
 *          here
 * @out: set to the bytes on success
 *
 * A chunk that is planned and not read yet is read here, with the planned
 * chunks after it up to the end of the range, in one read; a chunk being
 * read by another thread, or by another process's stage of the same
 * backing copy, is waited for.  Each byte is read from the source once.
 * A follower (stage_backing.follow) reads nothing: a chunk its writer
 * has not completed is -ENODATA.
 *
 * Return: 0; -ENODATA if a byte of the range is not in RAM and will not be
 * for this call (not planned, its read failed, or STAGE_GET_STAGED_ONLY);
 * -ERANGE if the range leaves the stage.
 * Ownership: *@out stays valid until stage_free().
 * Context: any thread.
 */
int stage_get(struct stage *st, uint64_t off, size_t len, unsigned int flags,
	      const void *reader, const void **out);

/**
 * stage_holds() - Whether a range is staged, or planned to be.
 * @st: stage
 * @off: offset in the range
 * @len: bytes
 *
 * True if every chunk of [@off, @off + @len) is staged, being read, or
 * in the plan: a read of it will not need the source but for the plan's
 * own reads.  False for a range past the end.
 *
 * Context: any thread; the answer may be stale by the time it is used.
 */
bool stage_holds(struct stage *st, uint64_t off, uint64_t len);

/**
 * stage_resume() - Start or extend staging.
 * @st: stage
 * @mode: STAGE_FULL or STAGE_META (a plan already FULL stays FULL)
 * @budget: bytes of RAM allowed; the budget only grows (the larger of this
 *          and the current one is used)
 *
 * Records the request and wakes the stager threads; the next stage_next()
 * plans every chunk not yet in RAM, metadata first, and the staging time
 * in the stats counts from now.  The state reads STAGE_IDLE until then.
 *
 * Return: 0 (a follower's writer stages the whole range: nothing to do);
 * -EINVAL for another mode; -ENOMEM if no staging area could be reserved
 * at stage_new().
 * Context: any thread but a stager; one caller at a time.
 */
int stage_resume(struct stage *st, enum stage_mode mode, uint64_t budget);

/**
 * stage_state() - Where the plan stands.
 * @st: stage
 *
 * Return: the state.  Context: any thread; cannot fail.
 */
enum stage_state stage_state(const struct stage *st);

/**
 * stage_wait() - Wait until staging has ended.
 * @st: stage
 * @timeout_ms: give up after this long; 0 only asks; negative waits for
 *              ever
 *
 * Staging has ended when the stager threads finished the plan (until the
 * next stage_resume()), or when no stager thread runs.
 *
 * Return: 0 when it has ended; -ETIMEDOUT.
 * Context: any thread but a stager.
 */
int stage_wait(struct stage *st, int timeout_ms);

/**
 * stage_is_done() - Whether staging has ended, as stage_wait() says.
 * @st: stage
 *
 * What is not staged by then stays out of RAM.
 * Return: true if ended.  Context: any thread; cannot fail.
 */
bool stage_is_done(struct stage *st);

/**
 * stage_get_stats() - Snapshot the counters.
 * @st: stage
 * @out: filled in
 *
 * Context: any thread; cannot fail.
 */
void stage_get_stats(struct stage *st, struct stage_stats *out);

/**
 * stage_backing_fd() - The stage's own descriptor of its backing copy,
 * which it keeps open while it maps the copy (others look for it).
 * Return: the descriptor, or -1 without a backing copy.
 * Context: any thread; cannot fail.
 */
int stage_backing_fd(const struct stage *st);

/**
 * stage_backing_size() - Bytes of a backing copy of a range.
 * @size: bytes of the range
 *
 * The range rounded up to a page, the trailer, rounded up to a page.
 * Return: the size.  Context: any thread.
 */
uint64_t stage_backing_size(uint64_t size);

/**
 * stage_backing_new() - Make an empty backing copy of a range.
 * @size: bytes of the range
 * @key: what the copy is of; @key_len bytes, 1..STAGE_KEY_MAX
 * @key_len: its length
 * @name: for /proc/PID/fd (memfd_create()'s name)
 * @out: set to the descriptor
 *
 * A memfd (close-on-exec) of stage_backing_size() bytes, its trailer
 * written with no chunk complete, sealed against growing and shrinking.
 *
 * Return: 0; -EINVAL for a bad key; -errno of memfd_create(), ftruncate().
 * Ownership: the caller closes *@out.  Context: any thread.
 */
int stage_backing_new(uint64_t size, const void *key, size_t key_len,
		      const char *name, int *out);

/**
 * stage_backing_new_writer() - stage_backing_new() for a copy that one
 * stage will write and stages in other processes follow (struct
 * stage_backing.follow).
 * @size: bytes of the range
 * @key: what the copy is of; @key_len bytes, 1..STAGE_KEY_MAX
 * @key_len: its length
 * @name: for /proc/PID/fd
 * @out: set to the descriptor, open for reading and writing
 *
 * Sealed against growing and shrinking only: its writer maps it
 * (stage_new()), then seals it against writes from anyone else
 * (F_SEAL_FUTURE_WRITE: no write() and no new writable mapping, its own
 * mapping stays writable), and once done, unmapped, seals it whole
 * (F_SEAL_WRITE, F_SEAL_SEAL).
 *
 * Return: as stage_backing_new().  Context: any thread.
 */
int stage_backing_new_writer(uint64_t size, const void *key, size_t key_len,
			     const char *name, int *out);

/**
 * stage_backing_end() - Say in the copy that its writer is done: no
 * chunk becomes complete any more, and followers stop waiting for one.
 * @st: the writer's stage, staging into its backing (not a follower)
 *
 * Call it once staging ended (stage_wait()) or was stopped.
 * Return: 0; -EINVAL if @st does not write a backing copy.
 * Context: any thread.
 */
int stage_backing_end(struct stage *st);

/**
 * stage_backing_check() - Read the trailer of a backing copy.
 * @fd: the copy
 * @size: bytes of the range it must hold, or 0 for any (set on return)
 * @key: what it must be of, or NULL for any
 * @key_len: bytes of @key
 * @complete: set to the bytes of its complete chunks, or NULL
 *
 * The work is bounded by the bytes the copy holds, not by its size: only
 * the pages of its chunk words that hold data are read (SEEK_DATA), the
 * others are empty chunks.  A copy is a user's memfd, of any size.
 *
 * Return: 0; -EBADMSG if its magic, version or chunk size is wrong, its
 * size does not fit the trailer, or (with @complete) a chunk's word is
 * neither empty, complete nor a claim of a pid; -ESTALE if it is of
 * another range (size or key); -errno of fstat()/pread()/lseek().
 * Context: any thread; a copy being staged into may gain complete chunks
 * meanwhile.
 */
int stage_backing_check(int fd, uint64_t *size, const void *key, size_t key_len,
			uint64_t *complete);

#endif /* SQC_STAGE_STAGE_H */

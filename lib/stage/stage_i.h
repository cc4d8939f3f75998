/* SPDX-License-Identifier: MIT */
/*
 * This file declares what the files of lib/stage share with each other and
 * nobody else: struct stage, the chunk, plan and pacing helpers, and the
 * stager threads' interface.
 *
 * Design.  The staged copy is one mapping as long as the range (anonymous,
 * or a backing copy's memfd mapped shared: backing.c), laid out at the
 * same offsets, so any staged range is contiguous and can
 * be handed to a decompressor without a copy.  Pages of chunks that are not
 * planned are never touched and cost no memory; the plan holds at most the
 * RAM budget.
 *
 * Each byte is read from the source once.  A chunk of the plan is brought
 * in by whoever needs it first: the stager threads walking the plan
 * (plan.c), or a reader that reads inside it (chunk.c), which then reads
 * the whole chunk into the staged copy rather than only its range.  A
 * compare-and-swap from PLANNED to INFLIGHT decides who reads it; everyone
 * else waits on the condition variable for that read instead of reading
 * the bytes a second time.  With a backing copy, other processes' stages
 * may stage the same copy: a thread that won a chunk in its own process
 * then claims it in the copy's trailer too (backing.c), and takes it as
 * it is if another process completed it, or waits while one reads it.
 * Chunks are small (128 KiB) so that a reader
 * waits for little more than its own range; the stager reads runs of them,
 * 1 MiB aligned, as many at once as the storage serves without queueing
 * them (pace.c), so a reader's read queues behind few.  The threads that
 * call stage_next() live in stager.c, which owns their struct and lock
 * and calls no function of the other files: it reaches the stage only
 * through the callbacks stage.c gives it (struct stager_ops).
 */
#ifndef SQC_STAGE_STAGE_I_H
#define SQC_STAGE_STAGE_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "stage/stage.h"
#include "util/compiler.h"

/*
 * Staging keeps track of the range in chunks of this many bytes.  A reader
 * that needs a planned chunk reads it (and the planned chunks after it, up
 * to the end of its range) itself; a stager thread reads runs of up to
 * STAGE_RUN chunks, one read each.  Small chunks keep a reader's wait
 * short, large runs keep the stager's requests few (see docs/design.md,
 * "Staging", for the figures behind both).
 */
#define STAGE_CHUNK_SHIFT 17
#define STAGE_CHUNK_SIZE (1u << STAGE_CHUNK_SHIFT)
#define STAGE_RUN (1u << (20 - STAGE_CHUNK_SHIFT)) /* 1 MiB */
/*
 * Stager reads under way: where stage__pace() starts, its ceiling, and how
 * many reads it lets queue at the storage.  On bench/slowfs
 * (docs/performance.md) 1..2 kept one link full but left striped servers
 * idle; 2..4 filled both within 10% of the 8-stream bandwidth, and 3..6
 * gained no more.
 */
#define STAGE_TARGET_START 2u
#define STAGE_TARGET_MAX 16u
#define STAGE_QUEUE_LOW 2.0
#define STAGE_QUEUE_HIGH 4.0
/* A stager over the target waits for a slot at most this long, then looks
 * again (for a stop or a new plan, which do not signal it). */
#define STAGE_WAIT_MS 20
/*
 * Stager threads, each with at most one read under way; how many of them
 * read at once is the pacing's to say, so there are as many as it may
 * ever want.
 */
#define STAGE_THREADS_MAX 16u

/* Where a chunk of the staged copy stands (struct stage.chunk). */
enum stage_chunk_state {
	STAGE_CHUNK_EMPTY, /* not in the plan: reads go to the source */
	STAGE_CHUNK_STAGED, /* its bytes are in mem */
	STAGE_CHUNK_PLANNED, /* in the plan, not read yet */
	STAGE_CHUNK_INFLIGHT, /* being read by the stager or a reader */
	STAGE_CHUNK_FAILED, /* its read failed: reads go to the source */
};

struct stage {
	struct stage_src src; /* how to read the range */
	uint64_t size; /* bytes of the range */
	uint64_t meta_start; /* where the metadata starts, <= size */
	uint8_t *mem; /* mapping of size (anonymous or the backing), or NULL */
	size_t map_len; /* bytes mapped at mem */
	/* With a backing copy: its trailer's word per chunk, shared with the
	 * other processes' stages of the copy (backing.c); else NULL. */
	_Atomic uint32_t *trail;
	int backing_fd; /* the copy, kept open while mapped (backing.c), or -1 */
	/* A follower of another process's copy (stage_backing.follow): it
	 * takes the chunks the writer completes, reads and writes none. */
	bool follower;
	int writer; /* with follower: the writer's pidfd, or -1 */
	uint32_t follow_pos; /* the first chunk the follower may not have
				taken; under lock */
	unsigned int claim_stale_ms; /* a reader waits this long for a chunk
					another process reads */
	int backing; /* enum stage_backing_use */
	uint64_t adopted; /* bytes complete in the backing at start */
	/* The thread that maps the adopted chunks in (backing.c), and the
	 * flag that ends it early. */
	pthread_t mapper;
	bool mapper_running;
	atomic_bool mapper_stop;
	uint32_t nchunks; /* chunks covering size */
	/* Per chunk, enum stage_chunk_state.  Only the thread that moved a
	 * chunk from PLANNED to INFLIGHT writes its bytes; it stores STAGED
	 * (release) after them, readers load it with acquire. */
	_Atomic uint8_t *chunk;
	pthread_mutex_t lock; /* the plan, the counts below, waits */
	pthread_cond_t cond; /* a chunk left INFLIGHT; a reader's read ended */
	pthread_cond_t slot; /* a stager read ended: stagers wait here */
	uint32_t *plan; /* chunk indexes in staging order */
	uint32_t plan_len; /* entries in plan */
	uint32_t plan_meta; /* the first entries, the metadata chunks */
	uint32_t plan_pos; /* next plan entry */
	unsigned int inflight; /* stager reads under way */
	unsigned int inflight_max; /* the most at once */
	unsigned int target; /* stager reads to keep under way (pace) */
	int64_t rtt_min; /* fastest full-run stager read so far, ns */
	int64_t rtt_sum; /* this round's full-run reads: time, ns */
	unsigned int rtt_n; /* and count */
	int64_t rtt_last; /* the last round's mean, ns */
	unsigned int filling; /* chunk reads under way, stager's or readers' */
	int mode; /* enum stage_mode of the plan; under lock */
	_Atomic uint32_t follow; /* where a streaming reader goes next */
	_Atomic uint32_t fill_end; /* chunk after the last reader fill */
	_Atomic uint64_t budget; /* bytes allowed */
	_Atomic uint64_t planned; /* bytes the plan brings in */
	_Atomic uint64_t staged; /* bytes brought in so far */
	_Atomic uint64_t base; /* staged when the current plan was made */
	_Atomic uint64_t by_readers; /* of staged, chunks readers brought in */
	_Atomic uint64_t peers; /* of staged, chunks other processes did */
	_Atomic uint64_t refused; /* chunks read whose check failed */
	_Atomic int state; /* enum stage_state */
	_Atomic int error; /* errno that stopped the stager, or 0 */
	/* A request of stage_resume(), applied by the next stage_next(). */
	_Atomic bool want; /* a request is pending */
	_Atomic int want_mode; /* its enum stage_mode */
	_Atomic uint64_t want_budget; /* its budget */

	struct stager *stager; /* the threads that stage the plan */
};

/* Bytes in chunks [c, c + n), the last one maybe short. */
static inline uint64_t stage__chunks_len(const struct stage *st, uint32_t c,
					 uint32_t n)
{
	uint64_t start = (uint64_t)c << STAGE_CHUNK_SHIFT;

	return MIN((uint64_t)n << STAGE_CHUNK_SHIFT, st->size - start);
}

/* backing.c */

/*
 * Map @o->backing for st->size bytes: set st->mem, st->map_len, st->trail
 * and st->backing, and mark the chunks it holds complete STAGED.  Return:
 * 0 with st->mem NULL if there is no backing, or it is refused or cannot
 * be mapped (logged): the caller maps anonymous memory then.
 * Context: stage_new(), after st->chunk is allocated.
 */
int stage__backing_map(struct stage *st, const struct stage_opts *o);

/* Start the thread that maps an adopted copy's chunks in (with the
 * stager threads: a thread started before the daemon detaches would not
 * be in the detached process), and end it before the mapping goes. */
void stage__backing_start(struct stage *st);
void stage__backing_unmap(struct stage *st);

/* What stage__backing_claim() found. */
enum {
	STAGE_CLAIM_MINE, /* claimed: the caller reads the chunk */
	STAGE_CLAIM_DONE, /* complete in the copy: nothing to read */
	STAGE_CLAIM_BUSY, /* another process reads it (see enum stage_wait) */
};

/* How stage__backing_claim() waits for a chunk another process reads. */
enum stage_wait {
	STAGE_WAIT_NO, /* not at all: BUSY */
	STAGE_WAIT_STALE, /* st->claim_stale_ms at most, then BUSY (a
			     reader, which then reads its bytes itself) */
	STAGE_WAIT_DONE, /* until it is done or its owner gone (a stager) */
};

/*
 * Claim chunk @c in the backing copy for this process, which holds it
 * INFLIGHT: from empty, or from an owner gone (never from a live one that
 * holds the copy).  A chunk another process reads is waited for as @wait
 * says (DONE once it completes, MINE if its read failed or its owner is
 * gone).  Context: st->trail is set.
 */
int stage__backing_claim(struct stage *st, uint32_t c, enum stage_wait wait);

/* Chunks [c, c + n), claimed MINE, are read: complete (@ok, their bytes
 * in place) or empty again; wake whoever waits for them. */
void stage__backing_done(struct stage *st, uint32_t c, uint32_t n, bool ok);

/*
 * A follower (st->follower) takes chunk @c if its writer completed it: it
 * checks it (the owner's check) and marks it STAGED, or FAILED if the
 * check refused it.  A chunk another thread is taking is waited for.
 * Return: the chunk's state now (EMPTY: not complete yet).
 */
uint8_t stage__follow_take(struct stage *st, uint32_t c);

/*
 * The follower's stage_next(): take the chunks completed since the last
 * step, or wait a little for the next one.  Return: 1, or 0 once the
 * writer is done (it ended, or is gone) or every chunk is staged.
 */
int stage__follow_step(struct stage *st);

/* chunk.c */

/*
 * Claim chunk @c and up to @max - 1 planned chunks right after it, moving
 * each from PLANNED to INFLIGHT.  Returns how many were claimed: 0 when @c
 * itself is not planned (*s then holds its state).
 */
uint32_t stage__run_claim(struct stage *st, uint32_t c, uint32_t max,
			  uint8_t *s);

/* Whether chunk @c's bytes, in place, pass the owner's check; counted
 * in st->refused if not. */
bool stage__chunk_checked(struct stage *st, uint32_t c);

/*
 * Read chunks [c, c + n), which the caller moved to INFLIGHT and counted
 * in st->filling, into the staged copy with one read.
 * @reader: NULL for a stager thread (it counted itself in inflight).
 */
int stage__chunk_read(struct stage *st, uint32_t c, uint32_t n,
		      const void *reader);

/* plan.c */

/* Plan every chunk not in RAM yet, metadata first, within the budget.
 * Context: under st->lock, or before any reader runs. */
void stage__plan_build(struct stage *st, enum stage_mode mode);

/* pace.c */

/* Account a stager read of a whole run that took @rtt ns, and move the
 * target.  Context: under st->lock. */
void stage__pace(struct stage *st, int64_t rtt);

/* stager.c: the stager threads, which know the stage only by these. */
struct stager_ops {
	/* One step of the plan, stage_next(): 0 once it is done. */
	int (*step)(void *arg);
	/* Called by the first thread about once a second, for its life. */
	void (*watch)(void *arg);
	/* The plan is done, after @seconds of staging: called once a plan,
	 * by the thread that found it done, with no lock held. */
	void (*ended)(void *arg, double seconds);
	void *arg; /* passed to each */
};

struct stager;

/* Return: 0; -ENOMEM.  No thread runs until stage__stager_start(). */
int stage__stager_new(const struct stager_ops *ops, struct stager **out);
/* Stop and join the threads, then free @sg (may be NULL). */
void stage__stager_free(struct stager *sg);
/* stage_start(), stage_stop(), stage_wait() and stage_is_done() of the
 * stage whose threads these are (stage.h says what they do). */
int stage__stager_start(struct stager *sg, unsigned int threads);
void stage__stager_stop(struct stager *sg);
int stage__stager_wait(struct stager *sg, int timeout_ms);
bool stage__stager_is_done(struct stager *sg);
/* stage_resume() has recorded a request: wake the threads to plan again,
 * and count the staging time from now. */
void stage__stager_resume(struct stager *sg);
/* How many threads run, and the seconds staging took (or has taken so
 * far).  Context: any thread. */
void stage__stager_stats(struct stager *sg, unsigned int *threads,
			 double *seconds);

#endif /* SQC_STAGE_STAGE_I_H */

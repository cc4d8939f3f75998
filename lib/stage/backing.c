// SPDX-License-Identifier: MIT
/*
 * This file implements the backing copy of a stage: a memfd laid out as
 * the range, page-rounded, then the trailer: one 32-bit word per chunk,
 * and in the last bytes of the file its header (struct trailer), found
 * from the file's size alone.  A stage maps it shared, so what it stages
 * outlives it in whoever else holds the descriptor (the keeper,
 * docs/design.md "Keeping a staged copy"), and a later stage of the same
 * range (same size and key) starts with the complete chunks staged.
 *
 * Several stages, in several processes, may stage one copy at once (the
 * keeper shares it between a user's mounts of an image).  The word of a
 * chunk says where it stands for all of them: WORD_EMPTY, WORD_DONE
 * (its bytes are complete), or WORD_CLAIM | pid: being read by that
 * process.  A stage claims a chunk with a compare-and-swap from EMPTY
 * before it reads it, and stores DONE (release) only after its bytes, so
 * that a process killed mid-read leaves that chunk incomplete; a stage
 * that finds a chunk claimed by another waits for it (a futex on the
 * word), and takes the claim over once its owner is gone: exited, or its
 * pid is another process's that does not hold the copy.  A live owner
 * that holds the copy keeps its claim however long its read takes, as it
 * may still write the chunk's bytes; a reader that waited for it
 * STAGE_CLAIM_STALE_MS (or the stage's claim_stale_ms) reads its own bytes from the source instead.  So one process at
 * a time writes a chunk, and a chunk is done only with the bytes of its
 * writer's whole, successful read.  Every stage keeps a descriptor of
 * the copy while it maps it (the others look for it: proc_holds_file()).
 *
 * A copy may instead have one writer, in another process, that other
 * stages follow (stage_backing.follow: root's copy of a site image,
 * which users' mounts may not write): a follower maps it read-only,
 * claims nothing, takes a chunk once its word says done (at start, as
 * its stager thread sees them land, or when a reader needs it), and
 * stops waiting once the writer said it ended (the header's ended word,
 * stage_backing_end()) or is gone (its pidfd).
 * Nothing here knows what the range or the key is.
 */
#define LOG_MOD "stage"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "stage/stage_i.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/proc.h"

#define TRAILER_MAGIC "SQCSTAGE"
#define TRAILER_VERSION \
	3u /* 1 had a byte per chunk and no claims, 2 a
			      * key of 64 bytes at most */
#define PAGE 4096u

/* A chunk's word in the trailer. */
#define WORD_EMPTY 0u /* not staged: whoever claims it reads it */
#define WORD_DONE 1u /* its bytes are complete */
#define WORD_CLAIM 0x80000000u /* | pid: that process reads it */
#define CLAIM_POLL_MS 10 /* a waiter wakes this often */
#define CLAIM_LOOK_MS 200 /* and looks whether the owner is gone this often */
/* A follower's stager looks for newly complete chunks at most this far
 * past the first one not complete, and sleeps at most this long between
 * two looks (a DONE of that chunk wakes it). */
#define FOLLOW_WINDOW 4096u /* chunks: 512 MiB */
#define FOLLOW_POLL_MS 20
/* The mapper maps an adopted copy in this many bytes at a time, so that
 * stopping waits for one step at most. */
#define MAP_STEP (1u << 20)

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

/* The trailer's header, the last bytes of the copy. */
struct trailer {
	char magic[8]; /* TRAILER_MAGIC, no NUL */
	uint32_t version; /* TRAILER_VERSION */
	uint32_t chunk_size; /* STAGE_CHUNK_SIZE */
	uint64_t size; /* bytes of the range */
	uint32_t key_len; /* bytes of key */
	/* 0; 1 once the one writer of a copy that stages follow is done
	 * (stage_backing_end()): no chunk becomes complete any more.  A
	 * copy that several stages write (a user's) keeps 0. */
	uint32_t ended;
	uint8_t key[STAGE_KEY_MAX]; /* what the copy is of */
};

_Static_assert(sizeof(struct trailer) == 112, "trailer layout");

static uint64_t round_page(uint64_t n)
{
	return (n + PAGE - 1) / PAGE * PAGE;
}

static uint64_t nchunks_of(uint64_t size)
{
	return DIV_ROUND_UP(size, (uint64_t)STAGE_CHUNK_SIZE);
}

uint64_t stage_backing_size(uint64_t size)
{
	return round_page(round_page(size) +
			  nchunks_of(size) * sizeof(uint32_t) +
			  sizeof(struct trailer));
}

/* Where the header of a copy of @fsize bytes is. */
static uint64_t trailer_at(uint64_t fsize)
{
	return fsize - sizeof(struct trailer);
}

/* Make the copy, its trailer written, sealed with @seals.  Return: 0 or
 * -errno. */
static int backing_create(uint64_t size, const void *key, size_t key_len,
			  const char *name, int seals, int *out)
{
	struct trailer t = { .version = TRAILER_VERSION,
			     .chunk_size = STAGE_CHUNK_SIZE,
			     .size = size,
			     .key_len = (uint32_t)key_len };
	int fd, err;

	if (!key_len || key_len > STAGE_KEY_MAX || !size)
		return -EINVAL;
	memcpy(t.magic, TRAILER_MAGIC, sizeof(t.magic));
	memcpy(t.key, key, key_len);
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)stage_backing_size(size)) ||
	    pwrite(fd, &t, sizeof(t),
		   (off_t)trailer_at(stage_backing_size(size))) !=
		    (ssize_t)sizeof(t) ||
	    fcntl(fd, F_ADD_SEALS, seals))
		goto out_close;
	*out = fd;
	return 0;

out_close:
	err = -errno;
	close(fd);
	return err ? err : -EIO;
}

int stage_backing_new(uint64_t size, const void *key, size_t key_len,
		      const char *name, int *out)
{
	return backing_create(size, key, key_len, name,
			      F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL, out);
}

int stage_backing_new_writer(uint64_t size, const void *key, size_t key_len,
			     const char *name, int *out)
{
	return backing_create(size, key, key_len, name,
			      F_SEAL_GROW | F_SEAL_SHRINK, out);
}

/* Check the header @t of a copy of @fsize bytes.  Return: as
 * stage_backing_check(). */
static int trailer_valid(const struct trailer *t, uint64_t fsize, uint64_t size,
			 const void *key, size_t key_len)
{
	if (memcmp(t->magic, TRAILER_MAGIC, sizeof(t->magic)) ||
	    t->version != TRAILER_VERSION ||
	    t->chunk_size != STAGE_CHUNK_SIZE || !t->size || t->size > fsize ||
	    stage_backing_size(t->size) != fsize || !t->key_len ||
	    t->key_len > STAGE_KEY_MAX)
		return -EBADMSG;
	if (size && t->size != size)
		return -ESTALE;
	if (key && (t->key_len != key_len || memcmp(t->key, key, key_len)))
		return -ESTALE;
	return 0;
}

/* Whether @w is a chunk's word: empty, done, or a claim of a pid
 * (1..PID_MAX_LIMIT, 2^22). */
static bool word_valid(uint32_t w)
{
	uint32_t pid = w & ~WORD_CLAIM;

	return w <= WORD_DONE || (w & WORD_CLAIM && pid && pid <= 1u << 22);
}

/* Bytes of the complete chunks of a range of @size whose words are the
 * @n words from chunk @first on, @s; UINT64_MAX if a word is not one. */
static uint64_t complete_bytes(const uint32_t *s, uint64_t first, size_t n,
			       uint64_t size)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t c = first + i;

		if (!word_valid(s[i]))
			return UINT64_MAX;
		if (s[i] == WORD_DONE)
			sum += MIN((uint64_t)STAGE_CHUNK_SIZE,
				   size - (c << STAGE_CHUNK_SHIFT));
	}
	return sum;
}

/* Bytes of the complete chunks of the copy @fd of a range of @size: only
 * the words in pages that hold data are read (a hole is empty chunks).
 * Return: 0 or -errno (-EBADMSG: a word is none). */
static int scan_words(int fd, uint64_t size, uint64_t *complete)
{
	enum { STEP = 16384 }; /* words a read */
	uint64_t start = round_page(size), end = start + nchunks_of(size) * 4;
	uint64_t at = start, sum = 0;
	uint32_t *s = malloc(STEP * sizeof(*s));
	int err = 0;

	if (!s)
		return -ENOMEM;
	while (at < end) {
		off_t data = lseek(fd, (off_t)at, SEEK_DATA), hole;

		if (data < 0) {
			err = errno == ENXIO ? 0 : -errno;
			break;
		}
		if ((uint64_t)data >= end)
			break;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0) {
			err = -errno;
			break;
		}
		/* Whole words: data starts on a page, the region on a
		 * page, so on a word. */
		for (at = (uint64_t)data; at < MIN((uint64_t)hole, end);) {
			size_t n = (size_t)MIN((uint64_t)STEP,
					       (MIN((uint64_t)hole, end) - at) /
						       4);
			uint64_t got;

			if (!n) {
				at = MIN((uint64_t)hole, end);
				break;
			}
			if (pread(fd, s, n * 4, (off_t)at) !=
			    (ssize_t)(n * 4)) {
				err = -EBADMSG;
				goto out_free;
			}
			got = complete_bytes(s, (at - start) / 4, n, size);
			if (got == UINT64_MAX) {
				err = -EBADMSG;
				goto out_free;
			}
			sum += got;
			at += n * 4;
		}
	}
out_free:
	free(s);
	if (!err)
		*complete = sum;
	return err;
}

int stage_backing_check(int fd, uint64_t *size, const void *key, size_t key_len,
			uint64_t *complete)
{
	struct trailer t;
	struct stat sb;
	ssize_t n;
	int err;

	if (fstat(fd, &sb))
		return -errno;
	if ((uint64_t)sb.st_size < PAGE + sizeof(t))
		return -EBADMSG;
	n = pread(fd, &t, sizeof(t), (off_t)trailer_at((uint64_t)sb.st_size));
	if (n != (ssize_t)sizeof(t))
		return n < 0 ? -errno : -EBADMSG;
	err = trailer_valid(&t, (uint64_t)sb.st_size, *size, key, key_len);
	if (err)
		return err;
	*size = t.size;
	if (!complete)
		return 0;
	return scan_words(fd, t.size, complete);
}

/* Mark the chunks the backing holds complete as staged. */
static void adopt_chunks(struct stage *st)
{
	for (uint32_t c = 0; c < st->nchunks; c++) {
		if (atomic_load_explicit(&st->trail[c], memory_order_acquire) !=
		    WORD_DONE)
			continue;
		atomic_store(&st->chunk[c], STAGE_CHUNK_STAGED);
		st->adopted += stage__chunks_len(st, c, 1);
	}
	atomic_store(&st->staged, st->adopted);
}

/*
 * The mapper: a fresh shared mapping of a copy has no page table entries,
 * and readers then fault each 4 KiB page of it in, one at a time (about
 * 500,000 faults, 0.7 s of the daemon's CPU, in a first epoch over a
 * 2 GB image: epochs after adopting a copy were 15-30% slower than after
 * staging it, docs/performance.md).  This thread maps the adopted chunks
 * in with MADV_POPULATE_READ, MAP_STEP at a time (the mapping's lock is
 * held for one step only): about 0.4 s of one core for 2 GB, right after
 * the mount, while a job is still starting.  The bytes are in RAM already,
 * so nothing waits for it, and a reader that gets somewhere first faults
 * in what it needs as before.  A kernel without MADV_POPULATE_READ (before
 * 5.14) ends it at once.
 */
static void *mapper_main(void *arg)
{
	struct stage *st = arg;
	uint32_t c = 0, end;

	while (c < st->nchunks && !atomic_load(&st->mapper_stop)) {
		if (atomic_load(&st->chunk[c]) != STAGE_CHUNK_STAGED) {
			c++;
			continue;
		}
		/* A run of staged chunks, at most MAP_STEP bytes. */
		for (end = c + 1;
		     end < st->nchunks &&
		     (uint64_t)(end - c) * STAGE_CHUNK_SIZE < MAP_STEP &&
		     atomic_load(&st->chunk[end]) == STAGE_CHUNK_STAGED;
		     end++)
			;
		if (madvise(st->mem + ((uint64_t)c << STAGE_CHUNK_SHIFT),
			    (size_t)round_page(
				    stage__chunks_len(st, c, end - c)),
			    MADV_POPULATE_READ) &&
		    errno == EINVAL)
			break;
		c = end;
	}
	return NULL;
}

void stage__backing_start(struct stage *st)
{
	if (st->adopted && !st->mapper_running)
		st->mapper_running =
			!pthread_create(&st->mapper, NULL, mapper_main, st);
}

void stage__backing_unmap(struct stage *st)
{
	if (!st->mapper_running)
		return;
	atomic_store(&st->mapper_stop, true);
	pthread_join(st->mapper, NULL);
	st->mapper_running = false;
}

/* The header of the copy the stage maps. */
static struct trailer *header_of(const struct stage *st)
{
	return (struct trailer *)(st->mem + trailer_at(st->map_len));
}

int stage__backing_map(struct stage *st, const struct stage_opts *o)
{
	const struct stage_backing *b = o->backing;
	uint64_t size = st->size, complete;
	int prot = PROT_READ | PROT_WRITE;
	size_t len;
	void *m;
	int err;

	if (!b || b->fd < 0)
		return 0;
	err = stage_backing_check(b->fd, &size, b->key, b->key_len, &complete);
	if (err) {
		log_warn(
			"the kept copy of '%s' does not match it (%s); staging afresh",
			st->src.name, err_str(err));
		st->backing = STAGE_BACKING_REFUSED;
		return 0;
	}
	len = (size_t)stage_backing_size(size);
	/* A follower never writes: its mapping cannot. */
	if (b->follow)
		prot = PROT_READ;
	st->backing_fd = fcntl(b->fd, F_DUPFD_CLOEXEC, 3);
	m = st->backing_fd < 0 ? MAP_FAILED :
				 mmap(NULL, len, prot, MAP_SHARED, b->fd, 0);
	if (m == MAP_FAILED) {
		log_warn(
			"cannot map the kept copy of '%s' (%s); staging afresh",
			st->src.name, err_str(errno));
		if (st->backing_fd >= 0)
			close(st->backing_fd);
		st->backing_fd = -1;
		st->backing = STAGE_BACKING_REFUSED;
		return 0;
	}
	st->mem = m;
	st->map_len = len;
	st->trail = (_Atomic uint32_t *)(st->mem + round_page(size));
	st->backing = STAGE_BACKING_USED;
	if (b->follow) {
		st->follower = true;
		st->writer = b->writer < 0 ?
				     -1 :
				     fcntl(b->writer, F_DUPFD_CLOEXEC, 3);
	}
	adopt_chunks(st);
	return 0;
}

int stage_backing_end(struct stage *st)
{
	if (!st->trail || st->follower)
		return -EINVAL;
	/* After every chunk's word: a follower that sees it sees them. */
	atomic_store_explicit((_Atomic uint32_t *)&header_of(st)->ended, 1u,
			      memory_order_release);
	/* Followers wait on the first word not complete: wake them all. */
	for (uint32_t c = 0; c < st->nchunks; c++)
		if (atomic_load_explicit(&st->trail[c], memory_order_relaxed) !=
		    WORD_DONE)
			syscall(SYS_futex, (uint32_t *)&st->trail[c],
				FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
	return 0;
}

/* Whether the process @pid holds the copy this stage maps (a descriptor
 * of the same memfd: every stage keeps one, st->backing_fd).  A pid of
 * another user, or one whose descriptors cannot be looked at, holds
 * nothing of ours. */
static bool holds_copy(const struct stage *st, pid_t pid)
{
	return proc_holds_file(pid, st->backing_fd) != 0;
}

/* Whether the claim @seen may be taken over: its owner exited (a zombie
 * too: its pidfd polls readable) or is gone, or its pid is another
 * process's now (it does not hold the copy).  A live owner that holds the
 * copy may still be writing the chunk's bytes, so its claim stands
 * however long it takes: two writers of one chunk could leave it done
 * with the bytes of a read that failed. */
static bool owner_gone(const struct stage *st, uint32_t seen)
{
	pid_t pid = (pid_t)(seen & ~WORD_CLAIM);
	struct pollfd p = { .events = POLLIN };
	bool gone;

	p.fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p.fd < 0)
		return errno == ESRCH || (kill(pid, 0) && errno == ESRCH);
	gone = poll(&p, 1, 0) > 0 || !holds_copy(st, pid);
	/* Still alive after the look at its descriptors: they were its. */
	if (!gone)
		gone = poll(&p, 1, 0) > 0;
	close(p.fd);
	return gone;
}

/* Sleep until the word @w changes from @seen, a wake, or @ms. */
static void word_wait_ms(_Atomic uint32_t *w, uint32_t seen, long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	/* Not FUTEX_PRIVATE: the word is in a mapping other processes
	 * share. */
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, seen, &ts, NULL, 0);
}

static void word_wait(_Atomic uint32_t *w, uint32_t seen)
{
	word_wait_ms(w, seen, CLAIM_POLL_MS);
}

int stage__backing_claim(struct stage *st, uint32_t c, enum stage_wait wait)
{
	_Atomic uint32_t *w = &st->trail[c];
	uint32_t me = WORD_CLAIM | (uint32_t)getpid(), seen, looked = 0;
	int64_t since = 0, next_look = 0;

	for (;;) {
		int64_t now;

		seen = atomic_load_explicit(w, memory_order_acquire);
		if (seen == WORD_DONE)
			return STAGE_CLAIM_DONE;
		/* A claim of this pid is of a process gone before it (a
		 * stage of this process claims a chunk only once). */
		if (seen == WORD_EMPTY || seen == me) {
			if (atomic_compare_exchange_strong(w, &seen, me))
				return STAGE_CLAIM_MINE;
			continue;
		}
		/* Another's claim: look who holds it when it is new to
		 * this caller, then every CLAIM_LOOK_MS (a pidfd poll and
		 * a walk of its descriptors). */
		now = mono_ns();
		if (seen != looked || now >= next_look) {
			if (seen != looked)
				since = now;
			looked = seen;
			next_look = now + (int64_t)CLAIM_LOOK_MS * 1000000;
			if (owner_gone(st, seen)) {
				if (atomic_compare_exchange_strong(w, &seen,
								   me))
					return STAGE_CLAIM_MINE;
				continue;
			}
		}
		if (wait == STAGE_WAIT_NO ||
		    (wait == STAGE_WAIT_STALE &&
		     now - since >= (int64_t)st->claim_stale_ms * 1000000))
			return STAGE_CLAIM_BUSY;
		word_wait(w, seen);
	}
}

void stage__backing_done(struct stage *st, uint32_t c, uint32_t n, bool ok)
{
	uint32_t me = WORD_CLAIM | (uint32_t)getpid();

	for (uint32_t i = c; i < c + n; i++) {
		uint32_t seen = me;

		/* After the chunk's bytes: a stage that loads DONE finds
		 * them in place.  A claim taken over is the taker's now. */
		atomic_compare_exchange_strong_explicit(
			&st->trail[i], &seen, ok ? WORD_DONE : WORD_EMPTY,
			memory_order_release, memory_order_relaxed);
		syscall(SYS_futex, (uint32_t *)&st->trail[i], FUTEX_WAKE,
			INT32_MAX, NULL, NULL, 0);
	}
}

uint8_t stage__follow_take(struct stage *st, uint32_t c)
{
	uint8_t s = atomic_load_explicit(&st->chunk[c], memory_order_acquire);
	uint64_t len;
	bool ok;

	if (s == STAGE_CHUNK_EMPTY) {
		/* Its bytes are in place once the writer's DONE is seen
		 * (its release store after them). */
		if (atomic_load_explicit(&st->trail[c], memory_order_acquire) !=
		    WORD_DONE)
			return STAGE_CHUNK_EMPTY;
		if (atomic_compare_exchange_strong(&st->chunk[c], &s,
						   STAGE_CHUNK_INFLIGHT)) {
			len = stage__chunks_len(st, c, 1);
			ok = stage__chunk_checked(st, c);
			if (ok) {
				atomic_fetch_add(&st->staged, len);
				atomic_fetch_add(&st->peers, len);
			}
			s = ok ? STAGE_CHUNK_STAGED : STAGE_CHUNK_FAILED;
			pthread_mutex_lock(&st->lock);
			atomic_store_explicit(&st->chunk[c], s,
					      memory_order_release);
			pthread_cond_broadcast(&st->cond);
			pthread_mutex_unlock(&st->lock);
			return s;
		}
	}
	if (s == STAGE_CHUNK_INFLIGHT) {
		/* Another thread checks it: a hash of 128 KiB at most. */
		pthread_mutex_lock(&st->lock);
		while ((s = atomic_load_explicit(&st->chunk[c],
						 memory_order_acquire)) ==
		       STAGE_CHUNK_INFLIGHT)
			pthread_cond_wait(&st->cond, &st->lock);
		pthread_mutex_unlock(&st->lock);
	}
	return s;
}

/* Whether the writer of a followed copy is done: it said so, or it is
 * gone (its pidfd polls readable; a writer never told is not looked
 * at). */
static bool writer_done(struct stage *st)
{
	struct pollfd p = { .fd = st->writer, .events = POLLIN };

	if (atomic_load_explicit((_Atomic uint32_t *)&header_of(st)->ended,
				 memory_order_acquire))
		return true;
	return st->writer >= 0 && poll(&p, 1, 0) > 0;
}

/* Map the chunks [c, end) the follower just took in, so that readers do
 * not fault each page of them in (see mapper_main()). */
static void populate(struct stage *st, uint32_t c, uint32_t end)
{
	if (end > c)
		madvise(st->mem + ((uint64_t)c << STAGE_CHUNK_SHIFT),
			(size_t)round_page(stage__chunks_len(st, c, end - c)),
			MADV_POPULATE_READ);
}

/* Take the chunks of [c, end) that the writer completed, mapping in each
 * run taken.  Return: the first chunk of them left EMPTY, or @end. */
static uint32_t sweep(struct stage *st, uint32_t c, uint32_t end)
{
	uint32_t first = end, run_at = c, run = 0;
	uint8_t s, was;

	for (; c < end; c++) {
		was = atomic_load_explicit(&st->chunk[c], memory_order_relaxed);
		s = stage__follow_take(st, c);
		if (s == STAGE_CHUNK_EMPTY && first == end)
			first = c;
		if (s != STAGE_CHUNK_STAGED || was == STAGE_CHUNK_STAGED)
			continue;
		/* Taken by this sweep: one more of the run, or a new run. */
		if (run && run_at + run == c) {
			run++;
			continue;
		}
		populate(st, run_at, run_at + run);
		run_at = c;
		run = 1;
	}
	populate(st, run_at, run_at + run);
	return first;
}

int stage__follow_step(struct stage *st)
{
	uint32_t meta = (uint32_t)(st->meta_start >> STAGE_CHUNK_SHIFT);
	uint32_t pos, first, end;
	bool ended;

	/* Looked at before the sweep: if the writer was done before it, the
	 * sweep sees every chunk it completed. */
	ended = writer_done(st);
	atomic_store(&st->state, STAGE_RUNNING);
	pthread_mutex_lock(&st->lock);
	pos = st->follow_pos;
	pthread_mutex_unlock(&st->lock);
	/* The writer stages the metadata first, then the data in order: a
	 * window from the first chunk not complete, and the metadata, are
	 * where chunks land (readers take any other as they need it), so
	 * that a step costs the same for any size.  The last step looks at
	 * every chunk. */
	end = ended ? st->nchunks : MIN(st->nchunks, pos + FOLLOW_WINDOW);
	first = sweep(st, pos, end);
	if (meta > end)
		sweep(st, meta, st->nchunks);
	if (first == end && end < st->nchunks)
		first = end; /* nothing left in the window: on from there */
	pthread_mutex_lock(&st->lock);
	st->follow_pos = first;
	pthread_mutex_unlock(&st->lock);
	if (ended || first >= st->nchunks) {
		if (ended && first < st->nchunks)
			log_info(
				"the copy of '%s' is complete up to what its writer staged; the rest is read from the image",
				st->src.name);
		atomic_store(&st->state, STAGE_DONE);
		return 0;
	}
	/* Woken by the DONE of the first chunk not complete, or soon. */
	word_wait_ms(&st->trail[first], atomic_load(&st->trail[first]),
		     FOLLOW_POLL_MS);
	return 1;
}

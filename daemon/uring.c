// SPDX-License-Identifier: MIT
/*
 * This file serves FUSE requests over io_uring (Linux 6.14 and later, with
 * the fuse module's enable_uring parameter on).
 *
 * Why: through /dev/fuse a request wakes whichever worker sleeps in read(),
 * often on the other core, and the reply wakes the requester back across.
 * On a virtual machine each such wakeup is an interrupt to an idle vCPU and
 * costs tens of microseconds, more than the work of a warm request.  Over
 * io_uring the kernel queues a request on the queue of the core the
 * requester runs on; the threads of that queue are pinned to that core, so
 * a request and its reply are two context switches on one core.
 *
 * How, with a libfuse (3.14) that knows nothing of it: fuse_session_custom_io()
 * shows us every request libfuse reads and every reply it writes.  When the
 * kernel offers io_uring in INIT, the INIT reply gets FUSE_OVER_IO_URING
 * added, and once that reply is written each ring thread registers one
 * entry (a header buffer and a payload buffer) for its queue.  A request
 * that lands in an entry is rebuilt as /dev/fuse would have delivered it
 * and given to fuse_session_process_buf(); the reply libfuse then writes is
 * caught here, copied into the entry, and committed together with the fetch
 * of the next request.  FORGET, INTERRUPT and notifications keep going
 * through /dev/fuse and the libfuse loop.
 *
 * One entry per thread: the kernel gives a request only to an entry whose
 * thread waits for one, so a thread that blocks (a push into the page cache
 * waits for pages that a READ holds) holds back no other request.  At most
 * all but one thread of a queue push at a time (uring_gate()).
 *
 * Until every queue has an entry the kernel holds new requests back, so a
 * ring that cannot be set up must be known before INIT is answered: the
 * threads create their rings first, and the INIT reply asks for io_uring
 * only if all of them did.
 *
 * Fenced (below): only with libfuse 3.14.x, checked at build and run time;
 * the kernel's structs checked against its uapi layout; every wait ends
 * on stop or a deadline; replies to ring requests are never spliced
 * (FUSE_CAP_SPLICE_WRITE is not asked for once io_uring is offered, and a
 * splice all the same is read back into the entry).  Built without
 * liburing (SQC_HAVE_URING=0), the functions below report it unavailable.
 */
#define LOG_MOD "uring"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "daemon.h"
#include "uring.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

/*
 * The fence.  This file relies on how libfuse 3.14 behaves inside: each
 * reply is one writev() through the custom-io hook, INIT arrives through
 * the hook's read() and its reply may be edited before it is written.
 * Newer releases answer INIT differently (3.18 brings its own io_uring),
 * so io_uring is used only with the libfuse series it was tested with,
 * checked where the daemon is built (fuse_common.h) and where it runs
 * (fuse_pkgversion()); any other libfuse gets one log line and /dev/fuse.
 */
#define URING_LIBFUSE_MAJOR 3
#define URING_LIBFUSE_MINOR 14
#define URING_BUILT_TESTED                            \
	(FUSE_MAJOR_VERSION == URING_LIBFUSE_MAJOR && \
	 FUSE_MINOR_VERSION == URING_LIBFUSE_MINOR)
/* TEST ONLY: pretend to run with this libfuse version ("3.18.0"), to prove
 * the fallback (tests/integration/089-uring-fence.sh).  Not for users. */
#define URING_TEST_VERSION_ENV "SQC_TEST_LIBFUSE_VERSION"

#if SQC_HAVE_URING
#include <liburing.h>

/*
 * The kernel's side (include/uapi/linux/fuse.h, protocol 7.42).  Taken
 * from <linux/fuse.h> when it has them; Debian 12's (7.38) does not, so
 * they are declared here with their size and every offset checked
 * against the kernel's.
 */
#define URING_INIT_FLAG2 (1u << (41 - 32)) /* FUSE_OVER_IO_URING in flags2 */
#define URING_INIT_EXT (1u << 30) /* FUSE_INIT_EXT: flags2 is valid */
_Static_assert(URING_INIT_EXT == FUSE_INIT_EXT, "FUSE_INIT_EXT");

#if FUSE_KERNEL_MINOR_VERSION >= 42
#define URING_CMD_REGISTER FUSE_IO_URING_CMD_REGISTER
#define URING_CMD_COMMIT_AND_FETCH FUSE_IO_URING_CMD_COMMIT_AND_FETCH
#define URING_OP_IN_MAX FUSE_URING_OP_IN_OUT_SZ
#define uring_ent_in_out fuse_uring_ent_in_out
#define uring_req_header fuse_uring_req_header
#define uring_cmd_req fuse_uring_cmd_req
_Static_assert(FUSE_OVER_IO_URING == (1ull << 41), "FUSE_OVER_IO_URING");
#else
#define URING_CMD_REGISTER 1 /* FUSE_IO_URING_CMD_REGISTER */
#define URING_CMD_COMMIT_AND_FETCH 2 /* FUSE_IO_URING_CMD_COMMIT_AND_FETCH */
#define URING_OP_IN_MAX 128 /* FUSE_URING_OP_IN_OUT_SZ */

struct uring_ent_in_out { /* struct fuse_uring_ent_in_out */
	uint64_t flags;
	uint64_t commit_id; /* the request's unique, to commit it */
	uint32_t payload_sz; /* bytes in the payload buffer */
	uint32_t padding;
	uint64_t reserved;
};

struct uring_req_header { /* struct fuse_uring_req_header */
	char in_out[128]; /* FUSE_URING_IN_OUT_HEADER_SZ: in, then out header */
	char op_in[URING_OP_IN_MAX]; /* the first argument (e.g. read_in) */
	struct uring_ent_in_out ring_ent_in_out;
};

struct uring_cmd_req { /* struct fuse_uring_cmd_req */
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};
#endif

#define URING_ASSERT_AT(type, field, off)                     \
	_Static_assert(offsetof(struct type, field) == (off), \
		       #type "." #field " at the kernel's offset")
_Static_assert(sizeof(struct uring_ent_in_out) == 32, "ent_in_out size");
URING_ASSERT_AT(uring_ent_in_out, flags, 0);
URING_ASSERT_AT(uring_ent_in_out, commit_id, 8);
URING_ASSERT_AT(uring_ent_in_out, payload_sz, 16);
URING_ASSERT_AT(uring_ent_in_out, padding, 20);
URING_ASSERT_AT(uring_ent_in_out, reserved, 24);
_Static_assert(sizeof(struct uring_req_header) == 288, "req_header size");
URING_ASSERT_AT(uring_req_header, in_out, 0);
URING_ASSERT_AT(uring_req_header, op_in, 128);
URING_ASSERT_AT(uring_req_header, ring_ent_in_out, 256);
_Static_assert(sizeof(struct uring_cmd_req) == 24, "cmd_req size");
URING_ASSERT_AT(uring_cmd_req, flags, 0);
URING_ASSERT_AT(uring_cmd_req, commit_id, 8);
URING_ASSERT_AT(uring_cmd_req, qid, 16);
URING_ASSERT_AT(uring_cmd_req, padding, 18);
_Static_assert(URING_CMD_REGISTER == 1 && URING_CMD_COMMIT_AND_FETCH == 2,
	       "FUSE_IO_URING_CMD_* values");
_Static_assert(URING_OP_IN_MAX == 128, "FUSE_URING_OP_IN_OUT_SZ");
/* The in and out headers fit the in_out area. */
_Static_assert(sizeof(struct fuse_in_header) <= 128 &&
		       sizeof(struct fuse_out_header) <= 128,
	       "FUSE_URING_IN_OUT_HEADER_SZ");

/* What the kernel sends and expects, at the offsets libfuse uses too. */
struct init_in_head {
	uint32_t major, minor, max_readahead, flags, flags2;
};

struct init_out_head {
	uint32_t major, minor, max_readahead, flags;
	uint16_t max_background, congestion_threshold;
	uint32_t max_write, time_gran;
	uint16_t max_pages, map_alignment;
	uint32_t flags2;
};

#define STOP_TAG 0 /* user_data of the stop poll; entries are pointers */
#define URING_PAYLOAD (1u << 20) /* max_write: sqcd_init() sets 1 MiB */
_Static_assert(URING_PAYLOAD >= IMG_REPLY_BYTES,
	       "a READ's raw bytes fit the payload");

enum uring_state {
	URING_OFF, /* not tried, or INIT did not offer it */
	URING_OFFERED, /* the kernel offered it; INIT not answered yet */
	URING_ON, /* INIT asked for it; threads register */
};

struct ring_thread {
	struct uring *u;
	unsigned int qid; /* queue, and the core it serves */
	pthread_t thread;
	bool started;
	struct io_uring ring;
	bool ring_ok; /* ring set up */
	struct uring_req_header *hdr; /* registered header buffer */
	char *payload; /* registered payload buffer, URING_PAYLOAD bytes */
	char *req; /* the request rebuilt as /dev/fuse delivers it */
	struct iovec iov[2];
	_Atomic uint64_t unique; /* request being served, 0 when none */
	pthread_mutex_t lock;
	pthread_cond_t replied_cond;
	bool replied; /* the reply is in the entry */
};

struct uring {
	struct sqcd *d;
	int fd; /* the session's /dev/fuse */
	int stop_fd; /* eventfd: written once to stop every ring */
	unsigned int nqueues; /* possible cores: the kernel's queue count */
	unsigned int per_queue; /* threads (entries) per queue */
	unsigned int nthreads;
	_Atomic int state; /* enum uring_state */
	_Atomic uint64_t init_unique; /* the INIT request */
	atomic_uint *pushing; /* per queue: threads pushing */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int setup_done; /* threads that tried to set up */
	unsigned int setup_ok; /* of which succeeded */
	bool decided; /* patch_init() chose, or INIT did not offer it */
	bool go; /* INIT answered: register */
	bool gave_up; /* a thread stopped waiting for INIT: not used */
	atomic_bool stopping; /* no more pushes: uring_stop() began */
	atomic_bool stop; /* threads end */
	_Atomic uint64_t requests; /* requests served over io_uring */
	struct ring_thread t[];
};

static _Thread_local struct ring_thread *self;

/* Every wait below has a way out: u->stop (set with a broadcast by
 * uring_stop()) and, where a libfuse that never calls the hook could
 * leave it waiting, a deadline. */
#define URING_SETUP_WAIT_S 10 /* INIT reply waits for the rings' setup */
#define URING_INIT_WAIT_S 60 /* ring threads wait for INIT's answer */
#define URING_TICK_S 1 /* recheck of u->stop while a reply is due */
#define URING_PUSH_WAIT_MS 10000 /* stop waits for pushes in progress */

/* Return: 0 signalled (or spurious), ETIMEDOUT past @ts. */
static int cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m,
			   const struct timespec *ts)
{
	return pthread_cond_timedwait(c, m, ts);
}

static unsigned int possible_cpus(void)
{
	char line[64];
	unsigned int a, b, n = 0;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	char *p;

	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return 0;
	}
	fclose(f);
	/* "0-3" or "0,2-5": the highest number, plus one. */
	for (p = strtok(line, ",\n"); p; p = strtok(NULL, ",\n")) {
		if (sscanf(p, "%u-%u", &a, &b) == 2)
			n = b + 1 > n ? b + 1 : n;
		else if (sscanf(p, "%u", &a) == 1)
			n = a + 1 > n ? a + 1 : n;
	}
	return n;
}

static bool is_kernel_enabled(void)
{
	char c = 0;
	int fd = open("/sys/module/fuse/parameters/enable_uring",
		      O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == 'Y' || c == '1';
}

static size_t iov_total(const struct iovec *iov, int count)
{
	size_t n = 0;

	for (int i = 0; i < count; i++)
		n += iov[i].iov_len;
	return n;
}

/* Answer the request in @t's entry with a bare header (no payload). */
static void answer_bare(struct ring_thread *t, uint64_t unique, int error)
{
	struct fuse_out_header out = { .len = sizeof(out),
				       .error = error,
				       .unique = unique };

	memcpy(t->hdr->in_out, &out, sizeof(out));
	t->hdr->ring_ent_in_out.payload_sz = 0;
}

/* Copy a reply into @t's entry; the thread commits it. */
static ssize_t ring_reply(struct ring_thread *t, const struct iovec *iov,
			  int count)
{
	size_t total = iov_total(iov, count);
	struct fuse_out_header out;
	size_t at = 0;

	memcpy(&out, iov[0].iov_base, sizeof(out));
	if (iov[0].iov_len != sizeof(out) ||
	    total - sizeof(out) > URING_PAYLOAD) {
		/* Not a reply libfuse makes; fail the request, not the ring. */
		out.len = sizeof(out);
		out.error = -EIO;
		count = 1;
	}
	memcpy(t->hdr->in_out, &out, sizeof(out));
	/* Raw bytes of a READ were read into the payload itself (see
	 * uring_reply_buf()), each at or before its place in the reply and
	 * in reply order: moved last first, none is overwritten before it
	 * moves, and one already in place is not copied at all. */
	at = count > 1 ? total - sizeof(out) : 0;
	t->hdr->ring_ent_in_out.payload_sz = (uint32_t)at;
	for (int i = count - 1; i >= 1; i--) {
		at -= iov[i].iov_len;
		if (iov[i].iov_base != t->payload + at)
			memmove(t->payload + at, iov[i].iov_base,
				iov[i].iov_len);
	}
	pthread_mutex_lock(&t->lock);
	t->replied = true;
	pthread_cond_signal(&t->replied_cond);
	pthread_mutex_unlock(&t->lock);
	return (ssize_t)total;
}

static struct ring_thread *holder_of(struct uring *u, uint64_t unique)
{
	if (self && self->u == u &&
	    atomic_load_explicit(&self->unique, memory_order_relaxed) == unique)
		return self;
	/* A reply from another thread than the request's (libfuse allows). */
	for (unsigned int i = 0; i < u->nthreads; i++)
		if (atomic_load(&u->t[i].unique) == unique)
			return &u->t[i];
	return NULL;
}

/* Ask for io_uring in the INIT reply, if every ring is ready. */
static void patch_init(struct uring *u, struct iovec *iov, int count)
{
	struct init_out_head o;
	struct timespec ts;
	unsigned int ok;
	bool on;

	if (count < 2 || iov[1].iov_len < sizeof(o))
		return;
	memcpy(&o, iov[1].iov_base, sizeof(o));
	mono_deadline_in_ms(&ts, URING_SETUP_WAIT_S * 1000L);
	pthread_mutex_lock(&u->lock);
	while (u->setup_done < u->nthreads && !atomic_load(&u->stop) &&
	       cond_wait_until(&u->cond, &u->lock, &ts) != ETIMEDOUT)
		;
	ok = u->gave_up || atomic_load(&u->stop) ? 0 : u->setup_ok;
	on = ok == u->nthreads && o.max_write <= URING_PAYLOAD &&
	     (size_t)o.max_pages * (size_t)getpagesize() <= URING_PAYLOAD;
	/* Decided and the state set at once, under the lock: a ring thread
	 * that sees decided knows whether to wait for go or to end, and from
	 * here none gives up waiting for INIT's answer. */
	atomic_store(&u->state, on ? URING_ON : URING_OFF);
	u->decided = true;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	if (!on) {
		log_info("not using io_uring: %u of %u rings set up, "
			 "max_write %u, max_pages %u",
			 ok, u->nthreads, o.max_write, o.max_pages);
		return;
	}
	o.flags |= URING_INIT_EXT;
	o.flags2 |= URING_INIT_FLAG2;
	memcpy(iov[1].iov_base, &o, sizeof(o));
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct sqcd *d = userdata;
	struct uring *u = sqcd_feature(d, &uring_feature);
	struct fuse_out_header out;
	struct ring_thread *t;
	bool init = false;
	ssize_t r;

	if (count < 1 || iov[0].iov_len < sizeof(out))
		return writev(fd, iov, count);
	memcpy(&out, iov[0].iov_base, sizeof(out));
	if (out.unique && (t = holder_of(u, out.unique)))
		return ring_reply(t, iov, count);
	if (out.unique && out.unique == atomic_load(&u->init_unique) &&
	    atomic_load(&u->state) == URING_OFFERED && !out.error) {
		patch_init(u, iov, count);
		init = atomic_load(&u->state) == URING_ON;
	}
	r = writev(fd, iov, count);
	if (init) {
		/* The kernel took the reply: registering may begin. */
		pthread_mutex_lock(&u->lock);
		u->go = r >= 0;
		if (!u->go)
			atomic_store(&u->state, URING_OFF);
		pthread_cond_broadcast(&u->cond);
		pthread_mutex_unlock(&u->lock);
	}
	return r;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	struct sqcd *d = userdata;
	struct uring *u = sqcd_feature(d, &uring_feature);
	ssize_t r = read(fd, buf, len);
	struct fuse_in_header in;
	struct init_in_head init;

	if (r < (ssize_t)(sizeof(in) + sizeof(init)))
		return r;
	memcpy(&in, buf, sizeof(in));
	if (in.opcode != FUSE_INIT)
		return r;
	memcpy(&init, (char *)buf + sizeof(in), sizeof(init));
	if ((init.flags & URING_INIT_EXT) && (init.flags2 & URING_INIT_FLAG2)) {
		atomic_store(&u->init_unique, in.unique);
		/* Before the INIT event (uring_on_event()). */
		atomic_store(&u->state, URING_OFFERED);
	} else {
		log_info("the kernel does not offer io_uring for this mount");
		pthread_mutex_lock(&u->lock);
		u->decided = true; /* the ring threads end */
		pthread_cond_broadcast(&u->cond);
		pthread_mutex_unlock(&u->lock);
	}
	return r;
}

/*
 * Replies are not spliced on the io_uring path: the INIT event takes
 * FUSE_CAP_SPLICE_WRITE back once io_uring is offered (uring_on_event()).
 * Should libfuse splice a reply to a request this thread holds all the
 * same, the message (header and data, all in the pipe) is read out and put
 * into the entry, so the request is answered and serve() does not wait for
 * a reply that went elsewhere.
 */
static ssize_t io_splice_send(int fdin, off_t *offin, int fdout, off_t *offout,
			      size_t len, unsigned int flags, void *userdata)
{
	struct sqcd *d = userdata;
	struct ring_thread *t = self;
	size_t got = 0;

	if (!t || t->u != sqcd_feature(d, &uring_feature) ||
	    !atomic_load(&t->unique) || offin ||
	    len < sizeof(struct fuse_out_header) ||
	    len > URING_PAYLOAD + sizeof(struct fuse_out_header))
		return splice(fdin, offin, fdout, offout, len, flags);
	while (got < len) {
		ssize_t r = read(fdin, t->req + got, len - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (!r)
				errno = EIO;
			return -1;
		}
		got += (size_t)r;
	}
	return ring_reply(
		t,
		(struct iovec[]){ { t->req, sizeof(struct fuse_out_header) },
				  { t->req + sizeof(struct fuse_out_header),
				    len - sizeof(struct fuse_out_header) } },
		len > sizeof(struct fuse_out_header) ? 2 : 1);
}

/* Queue a command for the entry of @t; submitted with the next wait. */
static int prep_cmd(struct ring_thread *t, uint32_t op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
	struct uring_cmd_req *cmd;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe)); /* SQE128: two slots */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = t->u->fd;
	sqe->cmd_op = op;
	if (op == URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)t->iov;
		sqe->len = 2;
	}
	cmd = (struct uring_cmd_req *)(void *)sqe->cmd;
	cmd->commit_id = commit_id;
	cmd->qid = (uint16_t)t->qid;
	io_uring_sqe_set_data(sqe, t);
	return 0;
}

static int prep_stop_poll(struct ring_thread *t)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));
	io_uring_prep_poll_add(sqe, t->u->stop_fd, POLLIN);
	io_uring_sqe_set_data64(sqe, STOP_TAG);
	return 0;
}

/* Hand the request in @t's entry to libfuse, and wait for its reply. */
static void serve(struct ring_thread *t)
{
	struct sqcd *d = t->u->d;
	struct fuse_in_header in;
	uint32_t plen = t->hdr->ring_ent_in_out.payload_sz;
	size_t oplen;

	memcpy(&in, t->hdr->in_out, sizeof(in));
	/* The first argument went to op_in, the others to the payload. */
	if (in.len < sizeof(in) + plen || plen > URING_PAYLOAD ||
	    in.len - sizeof(in) - plen > URING_OP_IN_MAX) {
		log_err("request %u of %u bytes with %u in the payload: "
			"failed with EIO",
			in.opcode, in.len, plen);
		answer_bare(t, in.unique, -EIO);
		return;
	}
	oplen = in.len - sizeof(in) - plen;
	memcpy(t->req, &in, sizeof(in));
	memcpy(t->req + sizeof(in), t->hdr->op_in, oplen);
	memcpy(t->req + sizeof(in) + oplen, t->payload, plen);
	t->replied = false;
	atomic_store(&t->unique, in.unique);
	fuse_session_process_buf(d->se, &(struct fuse_buf){ .mem = t->req,
							    .size = in.len });
	if (in.opcode == FUSE_FORGET || in.opcode == FUSE_BATCH_FORGET) {
		/* libfuse answers no FORGET, but one the kernel sends as a
		 * request (fuse_force_forget(), after a readdirplus entry it
		 * could not use) ends only when its entry is committed. */
		answer_bare(t, in.unique, 0);
		t->replied = true;
	}
	/* libfuse replies to every request but FORGET before or soon after
	 * process_buf returns (a push may take long: no deadline), through
	 * io_writev(), or io_splice_send() (handled there).  The way out is
	 * u->stop, rechecked every tick should a broadcast be missed. */
	pthread_mutex_lock(&t->lock);
	while (!t->replied && !atomic_load(&t->u->stop)) {
		struct timespec ts;

		mono_deadline_in_ms(&ts, URING_TICK_S * 1000L);
		cond_wait_until(&t->replied_cond, &t->lock, &ts);
	}
	pthread_mutex_unlock(&t->lock);
	atomic_store(&t->unique, 0);
	atomic_fetch_add_explicit(&t->u->requests, 1, memory_order_relaxed);
}

static void setup_done(struct ring_thread *t, bool ok)
{
	struct uring *u = t->u;

	pthread_mutex_lock(&u->lock);
	u->setup_done++;
	u->setup_ok += ok;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

static int ring_setup(struct ring_thread *t)
{
	size_t hsz = sizeof(*t->hdr);
	cpu_set_t set;
	int err;

	/* Serve the core this queue is for (it may be offline: then not). */
	CPU_ZERO(&set);
	CPU_SET(t->qid, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	t->hdr = aligned_alloc(4096, (hsz + 4095) & ~(size_t)4095);
	t->payload = mmap(NULL, URING_PAYLOAD, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t->req = mmap(NULL, URING_PAYLOAD + 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->payload == MAP_FAILED)
		t->payload = NULL;
	if (t->req == MAP_FAILED)
		t->req = NULL;
	if (!t->hdr || !t->payload || !t->req)
		return -ENOMEM;
	memset(t->hdr, 0, hsz);
	t->iov[0] = (struct iovec){ t->hdr, hsz };
	t->iov[1] = (struct iovec){ t->payload, URING_PAYLOAD };
	/* Task work (a request arriving) runs when this thread waits, not
	 * as an interrupt of whatever it does. */
	err = io_uring_queue_init(4, &t->ring,
				  IORING_SETUP_SQE128 |
					  IORING_SETUP_SINGLE_ISSUER |
					  IORING_SETUP_DEFER_TASKRUN);
	if (err == -EINVAL) /* before Linux 6.1 */
		err = io_uring_queue_init(4, &t->ring, IORING_SETUP_SQE128);
	if (err)
		return err;
	t->ring_ok = true;
	return prep_stop_poll(t);
}

/*
 * Wait for INIT's answer: go, or decided without io_uring (the state is
 * then URING_OFF), or stop.  A libfuse that never shows INIT through the
 * hook leaves this thread waiting no longer than URING_INIT_WAIT_S; then
 * nobody registers and INIT, should it come, asks for no io_uring
 * (patch_init() reads gave_up).  Return: whether to serve.
 */
static bool wait_for_go(struct uring *u)
{
	struct timespec ts;
	bool go;

	mono_deadline_in_ms(&ts, URING_INIT_WAIT_S * 1000L);
	pthread_mutex_lock(&u->lock);
	while (!u->go && !atomic_load(&u->stop) &&
	       !(u->decided && atomic_load(&u->state) != URING_ON)) {
		if (cond_wait_until(&u->cond, &u->lock, &ts) != ETIMEDOUT)
			continue;
		if (u->decided) {
			/* The INIT reply is being written: go follows. */
			mono_deadline_in_ms(&ts, URING_TICK_S * 1000L);
			continue;
		}
		if (!u->gave_up)
			log_info("no INIT seen in %d s: not using io_uring",
				 URING_INIT_WAIT_S);
		u->gave_up = true;
		break;
	}
	go = u->go;
	pthread_mutex_unlock(&u->lock);
	return go && !atomic_load(&u->stop);
}

/*
 * Register the queue's entry, then serve requests until stopped or the
 * connection ends.  Return: 0 on a stop, else why it ended (-errno).
 */
static int serve_queue(struct ring_thread *t)
{
	bool registering = true;
	int err;

	err = prep_cmd(t, URING_CMD_REGISTER, 0);
	while (!err) {
		struct io_uring_cqe *cqe;
		void *tag;
		int res;

		/* One system call: the commit (or registration) queued last,
		 * and the wait for the next request.  Its way out is the poll
		 * of stop_fd armed in ring_setup(): uring_stop() writes
		 * it, and the kernel ends the entries of a dead connection. */
		err = io_uring_submit_and_wait(&t->ring, 1);
		if (err == -EINTR) {
			err = 0;
			continue;
		}
		if (err < 0)
			break;
		err = io_uring_peek_cqe(&t->ring, &cqe);
		if (err == -EAGAIN) {
			err = 0;
			continue;
		}
		if (err)
			break;
		tag = io_uring_cqe_get_data(cqe);
		res = cqe->res;
		io_uring_cqe_seen(&t->ring, cqe);
		if (tag == (void *)STOP_TAG)
			break;
		if (res == -EAGAIN && registering) {
			/* INIT not processed yet: try again shortly. */
			usleep(1000);
			err = prep_cmd(t, URING_CMD_REGISTER, 0);
			continue;
		}
		if (res < 0) {
			err = res;
			break;
		}
		registering = false;
		serve(t);
		err = prep_cmd(t, URING_CMD_COMMIT_AND_FETCH,
			       t->hdr->ring_ent_in_out.commit_id);
	}
	return err;
}

static void *ring_main(void *arg)
{
	struct ring_thread *t = arg;
	struct uring *u = t->u;
	int err;

	self = t;
	err = ring_setup(t);
	if (err)
		log_err("queue %u: cannot set up io_uring: %s", t->qid,
			err_str(err));
	setup_done(t, !err);
	if (err || !wait_for_go(u))
		goto out_exit;
	err = serve_queue(t);
	/* The kernel ends the entries of a connection that goes away. */
	if (err && err != -ENOTCONN && err != -ECONNABORTED &&
	    err != -ECANCELED && !atomic_load(&u->stop))
		log_err("queue %u: io_uring stopped: %s", t->qid, err_str(err));
out_exit:
	/* At once: an armed entry holds the FUSE device open, and a push of
	 * another thread may wait for the connection to end. */
	if (t->ring_ok) {
		io_uring_queue_exit(&t->ring);
		t->ring_ok = false;
	}
	return NULL;
}

int uring_start(struct sqcd *d, void **out)
{
	static const struct fuse_custom_io io = {
		.writev = io_writev,
		.read = io_read,
		.splice_send = io_splice_send,
	};
	unsigned int nq = possible_cpus(), per;
	struct uring *u;
	char why[96];
	int err;

	*out = NULL;
	if (d->o.no_uring || !uring_available(why, sizeof(why), true) ||
	    !is_kernel_enabled() || !nq || nq > 4096)
		return 0;
	/* Every queue keeps a thread free of pushes (uring_gate()). */
	per = (d->o.threads + nq - 1) / nq;
	per = per < 2 ? 2 : per;
	u = calloc(1, sizeof(*u) + (size_t)nq * per * sizeof(u->t[0]));
	if (!u)
		return -ENOMEM;
	u->pushing = calloc(nq, sizeof(*u->pushing));
	u->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (!u->pushing || u->stop_fd < 0) {
		err = u->pushing ? -errno : -ENOMEM;
		goto out_free;
	}
	u->d = d;
	u->fd = fuse_session_fd(d->se);
	u->nqueues = nq;
	u->per_queue = per;
	u->nthreads = nq * per;
	pthread_mutex_init(&u->lock, NULL);
	cond_init_mono(&u->cond);
	for (unsigned int i = 0; i < u->nthreads; i++) {
		struct ring_thread *t = &u->t[i];

		t->u = u;
		t->qid = i / per;
		pthread_mutex_init(&t->lock, NULL);
		cond_init_mono(&t->replied_cond);
	}
	/* Same fd: libfuse closes it when the session is destroyed. */
	err = fuse_session_custom_io(d->se, &io, u->fd);
	if (err)
		goto out_free;
	*out = u;
	for (unsigned int i = 0; i < u->nthreads; i++) {
		struct ring_thread *t = &u->t[i];

		err = -pthread_create(&t->thread, NULL, ring_main, t);
		if (err) {
			/* INIT then finds fewer rings than threads. */
			pthread_mutex_lock(&u->lock);
			u->setup_done += u->nthreads - i;
			pthread_mutex_unlock(&u->lock);
			break;
		}
		t->started = true;
	}
	return 0;

out_free:
	if (u->stop_fd >= 0)
		close(u->stop_fd);
	free(u->pushing);
	free(u);
	return err;
}

void uring_stop(void *f)
{
	struct uring *u = f;
	uint64_t one = 1;

	if (!u)
		return;
	/* A push may wait for a READ that only a ring thread can answer:
	 * let those in progress end while every thread still serves. */
	atomic_store(&u->stopping, true);
	for (unsigned int q = 0, ms = 0; q < u->nqueues; q++)
		while (atomic_load(&u->pushing[q])) {
			/* Bounded: the mount is gone, its READs fail. */
			if (ms >= URING_PUSH_WAIT_MS) {
				log_warn("io_uring: queue %u still pushing "
					 "after %u ms; stopping anyway",
					 q, ms);
				break;
			}
			ms++;
			usleep(1000);
		}
	pthread_mutex_lock(&u->lock);
	atomic_store(&u->stop, true);
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	for (unsigned int i = 0; i < u->nthreads; i++) {
		pthread_mutex_lock(&u->t[i].lock);
		pthread_cond_broadcast(&u->t[i].replied_cond);
		pthread_mutex_unlock(&u->t[i].lock);
	}
	if (write(u->stop_fd, &one, sizeof(one)) != sizeof(one))
		log_err("cannot stop the io_uring threads: %s",
			err_str(-errno));
	for (unsigned int i = 0; i < u->nthreads; i++) {
		if (u->t[i].started)
			pthread_join(u->t[i].thread, NULL);
		u->t[i].started = false;
	}
}

void uring_free(void *f)
{
	struct uring *u = f;

	if (!u)
		return;
	for (unsigned int i = 0; i < u->nthreads; i++) {
		struct ring_thread *t = &u->t[i];

		free(t->hdr);
		if (t->payload)
			munmap(t->payload, URING_PAYLOAD);
		if (t->req)
			munmap(t->req, URING_PAYLOAD + 4096);
		pthread_mutex_destroy(&t->lock);
		pthread_cond_destroy(&t->replied_cond);
	}
	close(u->stop_fd);
	free(u->pushing);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u);
}

bool uring_is_on(const struct uring *u)
{
	return u && atomic_load(&u->state) == URING_ON;
}

unsigned int uring_threads(const struct uring *u)
{
	return uring_is_on(u) ? u->nthreads : 0;
}

static uint64_t requests(const struct uring *u)
{
	return u ? atomic_load(&u->requests) : 0;
}

void *uring_reply_buf(void)
{
	/* READ replies are read straight into the payload. */
	return self ? self->payload : NULL;
}

void uring_gate(atomic_uint **busy, unsigned int *max)
{
	if (!self)
		return;
	*busy = &self->u->pushing[self->qid];
	*max = atomic_load(&self->u->stopping) ? 0 : self->u->per_queue - 1;
}

void uring_on_event(void *f, const struct sqcd_event *ev)
{
	struct uring *u = f;

	/* A ring entry takes a copy of each reply, so a pipe would be one
	 * copy more: none is spliced. */
	if (ev->type == SQCD_EV_INIT && atomic_load(&u->state) == URING_OFFERED)
		ev->conn->want &= ~(unsigned int)FUSE_CAP_SPLICE_WRITE;
}

#else /* !SQC_HAVE_URING: built without liburing */

int uring_start(struct sqcd *d, void **out)
{
	(void)d;
	*out = NULL;
	return 0;
}

void uring_stop(void *f)
{
	(void)f;
}

void uring_free(void *f)
{
	(void)f;
}

bool uring_is_on(const struct uring *u)
{
	(void)u;
	return false;
}

unsigned int uring_threads(const struct uring *u)
{
	(void)u;
	return 0;
}

static uint64_t requests(const struct uring *u)
{
	(void)u;
	return 0;
}

void *uring_reply_buf(void)
{
	return NULL;
}

void uring_gate(atomic_uint **busy, unsigned int *max)
{
	(void)busy;
	(void)max;
}

void uring_on_event(void *f, const struct sqcd_event *ev)
{
	(void)f;
	(void)ev;
}

#endif /* SQC_HAVE_URING */

/* The libfuse this process runs with: fuse_pkgversion(), or the test's. */
static const char *libfuse_version(void)
{
	const char *v = getenv(URING_TEST_VERSION_ENV);

	return v && *v ? v : fuse_pkgversion();
}

bool uring_available(char *why, size_t len, bool log)
{
	static atomic_bool logged;
	const char *v = libfuse_version();
	unsigned int major = 0, minor = 0;

	if (!SQC_HAVE_URING) {
		snprintf(why, len, "built without liburing");
		return false;
	}
	if (!URING_BUILT_TESTED) {
		snprintf(why, len, "built with libfuse %d.%d, not tested",
			 FUSE_MAJOR_VERSION, FUSE_MINOR_VERSION);
		if (log && !atomic_exchange(&logged, true))
			log_info("io_uring: libfuse %d.%d not tested, using "
				 "/dev/fuse",
				 FUSE_MAJOR_VERSION, FUSE_MINOR_VERSION);
		return false;
	}
	if (sscanf(v, "%u.%u", &major, &minor) != 2 ||
	    major != URING_LIBFUSE_MAJOR || minor != URING_LIBFUSE_MINOR) {
		snprintf(why, len, "libfuse %s not tested", v);
		if (log && !atomic_exchange(&logged, true))
			log_info("io_uring: libfuse %s not tested, using "
				 "/dev/fuse",
				 v);
		return false;
	}
	snprintf(why, len, "%s", "");
	return true;
}

void uring_stats_json(struct uring *u, struct json_buf *b)
{
	char why[96];
	bool ok = uring_available(why, sizeof(why), false);

	json_buf_printf(b,
			"\"uring_threads\":%u,\"uring_requests\":%llu,"
			"\"uring_available\":%s,\"uring_unavailable\":\"%s\"",
			uring_threads(u), (unsigned long long)requests(u),
			ok ? "true" : "false", why);
}

const struct sqcd_feature uring_feature = {
	.name = "io_uring",
	.start = uring_start,
	.stop = uring_stop,
	.free = uring_free,
	.events = SQCD_EV_BIT(SQCD_EV_INIT),
	.on_event = uring_on_event,
};

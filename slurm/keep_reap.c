// SPDX-License-Identifier: MIT
/*
 * This file implements the keeper's reaper (keep_reap.h).
 *
 * The reaper is a child process forked at the keeper's start, before the
 * keeper holds anything of a user's, so that it holds nothing but its end
 * of a socket pair (SOCK_SEQPACKET): a process forked later would hold a
 * copy of every descriptor the keeper has, users' included, and its end
 * would close them (a user's FUSE file's FLUSH waits for ever, SIGKILL or
 * not).  One batch is out at a time, all of one user's (the uid
 * the keeper read with SO_PEERCRED): the keeper sends a message whose
 * descriptors are the sockets to close, closes its own copies of them
 * (not the last references: the message holds them, so nothing is
 * released there), then sends "go"; the reaper takes them into that
 * user's queue and answers "done" at once: it never waits on a user.
 *
 * The reaper closes nothing itself either.  For each user with sockets
 * queued it forks a closer, KEEP_REAP_USER_CLOSERS of a user's at once:
 * the closer closes every descriptor but its batch (none of those is the
 * last: the reaper still has each) and says it is ready; the reaper then
 * closes its own copies (the closer's are now the last: it is still
 * root, so no user can kill it first and leave the last close to the
 * reaper) and says "go"; the closer drops to that user
 * (job__drop_to_user(), so the user pays for what follows and root does
 * not) and exits holding the batch.
 * An exit releases every socket without the wait a user can cause in a
 * close() (a TCP socket's linger: the kernel never lingers for a process
 * that is exiting, inet_release(); test_keep_reap).  A release can still
 * wait for ever at an exit, where no signal reaches it: a FUSE file
 * with a flock() whose server never answers the unlock, a userfaultfd
 * whose owner's memory lock a user holds.  Such a closer is the user's
 * own process, stuck on the user's own file system: it holds a place
 * among that user's closers only, and their sockets wait in the reaper
 * (said) while the others' are closed (122).
 */
#define LOG_MOD "keeper"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job_i.h"
#include "keep_reap.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

#define BATCH 253 /* SCM_MAX_FD: descriptors in one message */
#define CLOSERS_MAX 256 /* closers at once, of all users */
#define FD_SLACK 16 /* descriptors the reaper keeps free for itself */

enum { REAP_BATCH = 'b', REAP_GO = 'g', REAP_DONE = 'd', REAP_ENDED = 'e' };

/* What goes with a batch: whose sockets they are. */
struct reap_hdr {
	char op;
	uid_t uid;
};

/* A socket waiting to go to the reaper, in the keeper. */
struct pend {
	int fd;
	uid_t uid;
};

struct keep_reap {
	pid_t pid; /* the reaper, or 0 */
	int sock; /* the keeper's end, or -1 once the reaper is gone */
	bool out; /* a batch is out, its "done" not come */
	struct pend *pending; /* sockets to send it */
	unsigned int npending, cap;
	bool said_full;
	unsigned long ended; /* closers that ended, as the reaper said */
};

/*
 * The reaper's side.
 */

/* A user's sockets waiting for a closer, in the reaper. */
struct who {
	uid_t uid;
	int *fds;
	unsigned int n, cap;
	unsigned int live; /* closers of theirs not ended */
	bool said; /* that their sockets wait */
};

/* A closer not ended. */
struct closer {
	pid_t pid;
	int pidfd; /* or -1: looked at with waitpid() */
	struct who *w;
	int64_t since; /* mono_ns() */
	bool said; /* that it has not ended */
};

struct reaper {
	struct who **who;
	unsigned int nwho;
	struct closer c[CLOSERS_MAX];
	unsigned int nc;
	unsigned long held; /* descriptors queued */
	rlim_t fd_max; /* RLIMIT_NOFILE */
	bool last; /* the keeper is gone: no cap of a user's */
};

static struct who *who_of(struct reaper *rp, uid_t uid)
{
	struct who **p, *w;

	for (unsigned int i = 0; i < rp->nwho; i++)
		if (rp->who[i]->uid == uid)
			return rp->who[i];
	p = realloc(rp->who, (rp->nwho + 1) * sizeof(*p));
	if (!p)
		return NULL;
	rp->who = p;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->uid = uid;
	rp->who[rp->nwho++] = w;
	return w;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* In a closer: close every descriptor but @keep (@n of them, sorted) and
 * the standard three. */
static void close_all_but(const int *keep, size_t n)
{
	unsigned int from = 3;

	for (size_t i = 0; i < n; i++) {
		if ((unsigned int)keep[i] > from)
			close_range(from, (unsigned int)keep[i] - 1, 0);
		if ((unsigned int)keep[i] >= from)
			from = (unsigned int)keep[i] + 1;
	}
	close_range(from, ~0U, 0);
}

/* A closer of @n of @w's sockets (the first ones of its queue).
 * Return: true if it took them. */
static bool start_closer(struct reaper *rp, struct who *w, unsigned int n)
{
	int keep[BATCH + 1], sp[2];
	struct pollfd pf = { .events = POLLIN };
	char b = 0;
	pid_t c;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp))
		return false;
	c = fork();
	if (c == 0) {
		/* That uid, no group of anyone's: a peer's gid may be
		 * a setgid program's, root's included. */
		struct job_ids ids = { .uid = w->uid, .gid = 65534 };

		memcpy(keep, w->fds, n * sizeof(int));
		keep[n] = sp[1];
		qsort(keep, n + 1, sizeof(int), cmp_int);
		/* None of these is the last: the reaper has each. */
		close_all_but(keep, n + 1);
		prctl(PR_SET_NAME, "keeper-closer");
		/* Still root until "go": no user can signal it, so the
		 * reaper's close of its copies is never the last. */
		if (send(sp[1], "r", 1, MSG_NOSIGNAL) != 1 ||
		    read(sp[1], &b, 1) != 1)
			_exit(1);
		/* Ours are the last now: the exit releases them, never
		 * lingering (the head comment), as that user. */
		_exit(job__drop_to_user(&ids) ? 1 : 0);
	}
	close(sp[1]);
	if (c < 0) {
		close(sp[0]);
		return false;
	}
	/* Ready: it holds nothing but the batch (its drop is quick; a
	 * closer that is not ready in 1 s is killed, and the batch waits). */
	pf.fd = sp[0];
	if (poll(&pf, 1, KEEP_REAP_MS) != 1 || read(sp[0], &b, 1) != 1 ||
	    b != 'r') {
		kill(c, SIGKILL);
		close(sp[0]);
		(void)waitpid(c, NULL, 0);
		return false;
	}
	for (unsigned int i = 0; i < n; i++)
		close(w->fds[i]);
	w->n -= n;
	memmove(w->fds, w->fds + n, w->n * sizeof(int));
	rp->held -= n;
	(void)!write(sp[0], "g", 1);
	close(sp[0]);
	rp->c[rp->nc] = (struct closer){
		.pid = c, .pidfd = pidfd_open(c, 0), .w = w, .since = mono_ns()
	};
	rp->nc++;
	w->live++;
	return true;
}

/* Start closers for what waits, as far as the caps let. */
static void dispatch(struct reaper *rp)
{
	for (unsigned int i = 0; i < rp->nwho; i++) {
		struct who *w = rp->who[i];

		while (w->n && (w->live < KEEP_REAP_USER_CLOSERS || rp->last) &&
		       rp->nc < CLOSERS_MAX &&
		       start_closer(rp, w, w->n < BATCH ? w->n : BATCH))
			;
		if (w->n && w->live >= KEEP_REAP_USER_CLOSERS && !w->said) {
			log_warn(
				"closers of uid %u do not end (a release that waits on a file system of theirs?): %u of their sockets wait",
				(unsigned int)w->uid, w->n);
			w->said = true;
		} else if (!w->n) {
			w->said = false;
		}
	}
}

/* Closer @i ended: forget it, and tell the keeper. */
static void closer_ended(struct reaper *rp, unsigned int i)
{
	char e = REAP_ENDED;

	if (rp->c[i].pidfd >= 0)
		close(rp->c[i].pidfd);
	rp->c[i].w->live--;
	rp->c[i] = rp->c[--rp->nc];
	if (!rp->last) /* else 3 is closed, or another descriptor */
		(void)send(3, &e, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Take one batch from the keeper into its user's queue.  Return: false
 * once the keeper's end is gone. */
static bool take_batch(struct reaper *rp)
{
	union {
		char b[CMSG_SPACE(BATCH * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct reap_hdr h = { 0 };
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.b,
			     .msg_controllen = sizeof(u.b) };
	int fds[BATCH];
	size_t n = 0;
	struct who *w;
	ssize_t got;
	char c = 0;

	do
		got = recvmsg(3, &mh, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got <= 0 || h.op != REAP_BATCH)
		return false;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
	     cm = CMSG_NXTHDR(&mh, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (k > BATCH - n)
			k = BATCH - n;
		memcpy(fds + n, CMSG_DATA(cm), k * sizeof(int));
		n += k;
	}
	/* "go": the keeper's copies are closed. */
	do
		got = recv(3, &c, 1, 0);
	while (got < 0 && errno == EINTR);
	if (got != 1 || c != REAP_GO)
		return false;
	w = who_of(rp, h.uid);
	if (w && w->n + n > w->cap) {
		unsigned int cap = w->cap ? 2 * w->cap : 256;
		int *p;

		while (cap < w->n + n)
			cap *= 2;
		p = realloc(w->fds, cap * sizeof(*p));
		if (p) {
			w->fds = p;
			w->cap = cap;
		} else {
			w = NULL;
		}
	}
	if (!w) {
		/* Out of memory: left open, not closed here. */
		log_err("out of memory: %zu sockets are left open", n);
	} else {
		memcpy(w->fds + w->n, fds, n * sizeof(int));
		w->n += (unsigned int)n;
		rp->held += n;
	}
	c = REAP_DONE;
	return send(3, &c, 1, MSG_NOSIGNAL) == 1;
}

/* The reaper: batches, until the keeper's end closes.  It is forked while
 * the keeper has no thread, and holds nothing of it. */
static void __attribute__((noreturn)) reaper_main(int s, pid_t keeper)
{
	static struct reaper rp;
	struct sigaction dfl = { .sa_handler = SIG_DFL },
			 ign = { .sa_handler = SIG_IGN };
	struct pollfd pf[1 + CLOSERS_MAX];
	struct rlimit rl;
	sigset_t none;

	/* Not killed with the keeper, nor by a stop's SIGTERM to the whole
	 * service: it ends once it has handed out what it holds (the
	 * keeper's end closes when the keeper ends, whatever the cause).
	 * Its exit would release what it still holds, as root. */
	if (getppid() != keeper)
		_exit(0);
	sigaction(SIGTERM, &ign, NULL);
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGHUP, &ign, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	sigaction(SIGCHLD, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Nothing of the keeper's: its socket as 3, every other closed
	 * (none is a user's yet). */
	if (s != 3 && dup2(s, 3) != 3)
		_exit(1);
	close_range(4, ~0U, 0);
	prctl(PR_SET_NAME, "keeper-reaper");
	/* Sockets of users whose closers do not end wait here. */
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	rp.fd_max = getrlimit(RLIMIT_NOFILE, &rl) ? 1024 : rl.rlim_cur;
	for (;;) {
		int64_t now = mono_ns();
		int timeout = -1;
		unsigned int i, n = 1;

		/* A batch only while there is room for it (a message's
		 * descriptors that find none are released here). */
		pf[0] = (struct pollfd){
			.fd = rp.last ? -1 : 3,
			.events = 8 + rp.held + rp.nc + BATCH + FD_SLACK <
						  rp.fd_max ?
					  POLLIN :
					  0
		};
		for (i = 0; i < rp.nc; i++) {
			struct closer *c = &rp.c[i];
			int64_t left = c->since +
				       (int64_t)KEEP_REAP_MS * 1000000 - now;

			pf[n++] = (struct pollfd){ .fd = c->pidfd,
						   .events = POLLIN };
			if (c->pidfd < 0)
				timeout = 100; /* waitpid() it then */
			else if (!c->said &&
				 (timeout < 0 || left / 1000000 < timeout))
				timeout = left > 0 ? (int)(left / 1000000) + 1 :
						     0;
		}
		/* What waits is tried again at least this often (a closer
		 * that could not start, a cap lifted). */
		if (rp.held && (timeout < 0 || timeout > 100))
			timeout = 100;
		if (poll(pf, n, timeout) < 0 && errno != EINTR)
			_exit(1);
		if (!rp.last &&
		    (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !take_batch(&rp)) {
			/* The keeper is gone: what waits goes to closers
			 * all the same (a user's cap lifted), as room
			 * among them comes, so that none is released at
			 * this process's exit. */
			rp.last = true;
			close(3);
		}
		if (rp.last && !rp.held)
			_exit(0);
		now = mono_ns();
		for (i = rp.nc; i-- > 0;) {
			struct closer *c = &rp.c[i];

			if ((c->pidfd < 0 || (pf[1 + i].revents & POLLIN)) &&
			    waitpid(c->pid, NULL, WNOHANG) == c->pid) {
				closer_ended(&rp, i);
				continue;
			}
			if (!c->said &&
			    now - c->since >= (int64_t)KEEP_REAP_MS * 1000000) {
				/* A closer its user stopped ends at this; one
				 * that waits in its exit's release does not. */
				if (c->pidfd >= 0)
					pidfd_send_signal(c->pidfd, SIGKILL,
							  NULL, 0);
				log_warn(
					"the closer (pid %d) of sockets of uid %u has not ended in %d ms (a release that waits on a file system of theirs?)",
					(int)c->pid, (unsigned int)c->w->uid,
					KEEP_REAP_MS);
				c->said = true;
			}
		}
		dispatch(&rp);
	}
}

int keep_reap_new(struct keep_reap **rp)
{
	struct keep_reap *r = calloc(1, sizeof(*r));
	pid_t keeper = getpid();
	int sp[2], err;

	if (!r)
		return -ENOMEM;
	r->sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp)) {
		err = -errno;
		goto out_free;
	}
	r->pid = fork();
	if (r->pid == 0)
		reaper_main(sp[1], keeper);
	close(sp[1]);
	if (r->pid < 0) {
		err = -errno;
		close(sp[0]);
		goto out_free;
	}
	r->sock = sp[0];
	*rp = r;
	return 0;

out_free:
	log_err("cannot start the reaper of connections: %s", err_str(err));
	free(r);
	return err;
}

/*
 * The keeper's side.
 */

/* Send one batch, the first waiting socket's user's; our copies closed
 * after it, then "go". */
static void send_batch(struct keep_reap *r)
{
	union {
		char b[CMSG_SPACE(BATCH * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct reap_hdr h = { REAP_BATCH, r->pending[0].uid };
	struct iovec iov = { &h, sizeof(h) };
	int fds[BATCH];
	unsigned int n = 0, i, j;
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.b };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	char c = REAP_GO;

	for (i = 0; i < r->npending && n < BATCH; i++)
		if (r->pending[i].uid == h.uid)
			fds[n++] = r->pending[i].fd;
	memset(u.b, 0, sizeof(u.b));
	mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	if (sendmsg(r->sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* Its queue is empty (one batch at a time): the reaper is
		 * gone, or the kernel lacks memory; tried again later. */
		if (errno != EAGAIN && errno != ENOBUFS && errno != ENOMEM)
			log_warn("cannot hand sockets to the reaper: %s",
				 err_str(-errno));
		return;
	}
	for (i = 0; i < n; i++)
		close(fds[i]); /* the message holds each */
	/* Those sent out of the queue, the others in their order. */
	for (i = j = 0; i < r->npending; i++)
		if (r->pending[i].uid != h.uid || i - j >= n)
			r->pending[j++] = r->pending[i];
	r->npending = j;
	r->out = true;
	if (send(r->sock, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1)
		log_err("cannot tell the reaper to go on: %s", err_str(-errno));
}

void keep_reap_take(struct keep_reap *r, int fd, uid_t uid)
{
	if (r->npending == r->cap) {
		unsigned int cap = r->cap ? 2 * r->cap : 64;
		struct pend *p = realloc(r->pending, cap * sizeof(*p));

		if (!p) {
			/* Left open rather than closed on the loop. */
			log_err("out of memory: a connection is left open");
			return;
		}
		r->pending = p;
		r->cap = cap;
	}
	r->pending[r->npending++] = (struct pend){ fd, uid };
}

bool keep_reap_full(const struct keep_reap *r)
{
	return r->npending >= KEEP_REAP_PENDING;
}

unsigned long keep_reap_ended(const struct keep_reap *r)
{
	return r->ended;
}

int keep_reap_fd(const struct keep_reap *r)
{
	return r->sock;
}

void keep_reap_run(struct keep_reap *r)
{
	char c;

	while (r->sock >= 0) {
		ssize_t got = recv(r->sock, &c, 1, MSG_DONTWAIT);

		if (got == 1 && c == REAP_DONE) {
			r->out = false;
			continue;
		}
		if (got == 1 && c == REAP_ENDED) {
			r->ended++;
			continue;
		}
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		/* Our end's queue holds its answers only: safe to close. */
		log_err("the reaper (pid %d) ended: the sockets of connections let go of are no longer closed",
			(int)r->pid);
		close(r->sock);
		r->sock = -1;
		(void)waitpid(r->pid, NULL, WNOHANG);
	}
	if (r->sock >= 0 && !r->out && r->npending)
		send_batch(r);
	if (keep_reap_full(r) != r->said_full) {
		r->said_full = !r->said_full;
		if (r->said_full)
			log_warn(
				"%u sockets wait for the reaper: no connection is taken until it catches up",
				r->npending);
		else
			log_info("connections are taken again");
	}
}

void keep_reap_free(struct keep_reap *r)
{
	if (!r)
		return;
	/* What waits goes to the reaper if it takes it now; it ends at our
	 * end's close once it has taken that.  Else it is left to our exit. */
	if (r->sock >= 0 && !r->out && r->npending)
		send_batch(r);
	if (r->sock >= 0)
		close(r->sock);
	(void)waitpid(r->pid, NULL, WNOHANG);
	free(r->pending);
	free(r);
}

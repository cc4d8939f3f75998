// SPDX-License-Identifier: MIT
/*
 * This file implements the keeper's reaper (keep_reap.h).
 *
 * The reaper is a child process forked at the keeper's start, before the
 * keeper holds anything of a user's, so that it holds nothing but its end
 * of a socket pair (SOCK_SEQPACKET): a process forked later would hold a
 * copy of every descriptor the keeper has, users' included, and its end
 * would close them (a user's FUSE file's FLUSH waits for ever, SIGKILL or
 * not).  One batch is out at a time: the keeper sends a message whose
 * descriptors are the sockets to close, closes its own copies of them
 * (not the last references: the message holds them, so nothing is
 * released there), then sends "go"; the reaper answers "done".
 *
 * The reaper closes nothing itself either: for each batch it forks a
 * closer, which holds the reaper's socket and the batch only, closes its
 * own copies (after the closer has them: "go" through a pipe, so that the
 * closer's are the last), and lets the closer end.  The closer does not
 * close the batch: it exits holding it, and an exit releases every socket
 * without the waits a user can cause in a close() (a TCP socket's linger:
 * the kernel never lingers for a process that is exiting, inet_release();
 * measured here, test_keep_reap).  A closer still there after
 * KEEP_REAP_MS is SIGKILLed all the same; one that does not end even then
 * (a release that waits on a hung file system) is counted; with
 * KEEP_REAPERS of them the reaper takes no batch until one ends, the
 * keeper's sockets wait (KEEP_REAP_PENDING, then it takes no connection)
 * and it says so.
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keep_reap.h"
#include "util/err.h"
#include "util/log.h"

#define BATCH 253 /* SCM_MAX_FD: descriptors in one message */

/* "done" says whether the batch's closer had to be killed */
enum { REAP_BATCH = 'b', REAP_GO = 'g', REAP_DONE = 'd', REAP_KILLED = 'k' };

struct keep_reap {
	pid_t pid; /* the reaper, or 0 */
	int sock; /* the keeper's end, or -1 once the reaper is gone */
	bool out; /* a batch is out, its "done" not come */
	int *pending; /* sockets to send it */
	unsigned int npending, cap;
	bool said_full;
	unsigned long killed; /* batches whose closer was killed */
};

/* In the reaper: one batch @fds of @n, by a closer of its own.  @stuck:
 * closers killed and not ended, @nstuck of them.  Return: whether the
 * closer had to be killed. */
static bool close_batch(const int *fds, size_t n, pid_t *stuck,
			unsigned int *nstuck)
{
	struct pollfd pf = { .events = POLLIN };
	bool killed = false;
	int go[2], status;
	pid_t c;

	/* Those killed before that ended since. */
	for (unsigned int i = 0; i < *nstuck;)
		if (waitpid(stuck[i], &status, WNOHANG) != 0)
			stuck[i] = stuck[--*nstuck];
		else
			i++;
	/* Too many that do not end: wait for one (the keeper's sockets
	 * wait meanwhile, and it says so). */
	while (*nstuck >= KEEP_REAPERS) {
		c = waitpid(-1, &status, 0);
		for (unsigned int i = 0; c > 0 && i < *nstuck; i++)
			if (stuck[i] == c) {
				stuck[i] = stuck[--*nstuck];
				break;
			}
	}
	if (pipe2(go, O_CLOEXEC))
		go[0] = go[1] = -1;
	c = go[0] >= 0 ? fork() : -1;
	if (c == 0) {
		char b;

		close(go[1]);
		/* Ours are the last: the exit releases them, never
		 * lingering (the head comment). */
		_exit(read(go[0], &b, 1) != 1);
	}
	/* Ours are not the last: the closer has each (if there is none,
	 * no process but this one is left to close them). */
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	if (go[0] >= 0)
		close(go[0]);
	if (go[1] >= 0) {
		/* Had it failed, the closer ends at EOF, closing them all. */
		ssize_t w = write(go[1], "g", 1);

		(void)w;
		close(go[1]);
	}
	if (c < 0)
		return false;
	/* Killing a closer is never harmful (its end releases the rest
	 * without waiting): without a pidfd to wait on, at once. */
	pf.fd = pidfd_open(c, 0);
	if (pf.fd < 0 || poll(&pf, 1, KEEP_REAP_MS) == 0) {
		log_warn(
			"sockets let go of were not closed within %d ms: their closer (pid %d) is killed",
			pf.fd < 0 ? 0 : KEEP_REAP_MS, (int)c);
		kill(c, SIGKILL);
		if (pf.fd < 0 || poll(&pf, 1, 100) == 0) {
			if (pf.fd >= 0)
				close(pf.fd);
			stuck[(*nstuck)++] = c;
			return true;
		}
		killed = true;
	}
	close(pf.fd);
	while (waitpid(c, &status, 0) < 0 && errno == EINTR)
		;
	return killed;
}

/* The reaper: batches, until the keeper's end closes.  It is forked while
 * the keeper has no thread, and holds nothing of it. */
static void __attribute__((noreturn)) reaper_main(int s, pid_t keeper)
{
	union {
		char b[CMSG_SPACE(BATCH * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	pid_t stuck[KEEP_REAPERS];
	unsigned int nstuck = 0;
	sigset_t none;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != keeper)
		_exit(0);
	sigaction(SIGTERM, &dfl, NULL);
	sigaction(SIGINT, &dfl, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Nothing of the keeper's: its socket as 3, every other closed
	 * (none is a user's yet). */
	if (s != 3 && dup2(s, 3) != 3)
		_exit(1);
	close_range(4, ~0U, 0);
	prctl(PR_SET_NAME, "keeper-reaper");
	for (;;) {
		char c = 0;
		struct iovec iov = { &c, 1 };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = u.b,
				     .msg_controllen = sizeof(u.b) };
		int fds[BATCH];
		size_t n = 0;
		ssize_t got;

		do
			got = recvmsg(3, &mh, MSG_CMSG_CLOEXEC);
		while (got < 0 && errno == EINTR);
		if (got <= 0 || c != REAP_BATCH)
			_exit(got < 0);
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
		     cm = CMSG_NXTHDR(&mh, cm)) {
			size_t k;

			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
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
			_exit(got < 0);
		c = close_batch(fds, n, stuck, &nstuck) ? REAP_KILLED :
							  REAP_DONE;
		if (send(3, &c, 1, MSG_NOSIGNAL) != 1)
			_exit(1);
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

/* Send one batch; our copies closed after it, then "go". */
static void send_batch(struct keep_reap *r)
{
	union {
		char b[CMSG_SPACE(BATCH * sizeof(int))];
		struct cmsghdr align;
	} u;
	unsigned int n = r->npending < BATCH ? r->npending : BATCH;
	char c = REAP_BATCH;
	struct iovec iov = { &c, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.b,
			     .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	memset(u.b, 0, sizeof(u.b));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(cm), r->pending, n * sizeof(int));
	if (sendmsg(r->sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* Its queue is empty (one batch at a time): the reaper is
		 * gone, or the kernel lacks memory; tried again later. */
		if (errno != EAGAIN && errno != ENOBUFS && errno != ENOMEM)
			log_warn("cannot hand sockets to the reaper: %s",
				 err_str(-errno));
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		close(r->pending[i]); /* the message holds each */
	r->npending -= n;
	memmove(r->pending, r->pending + n, r->npending * sizeof(int));
	r->out = true;
	c = REAP_GO;
	if (send(r->sock, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1)
		log_err("cannot tell the reaper to go on: %s", err_str(-errno));
}

void keep_reap_take(struct keep_reap *r, int fd)
{
	if (r->npending == r->cap) {
		unsigned int cap = r->cap ? 2 * r->cap : 64;
		int *p = realloc(r->pending, cap * sizeof(*p));

		if (!p) {
			/* Left open rather than closed on the loop. */
			log_err("out of memory: a connection is left open");
			return;
		}
		r->pending = p;
		r->cap = cap;
	}
	r->pending[r->npending++] = fd;
}

bool keep_reap_full(const struct keep_reap *r)
{
	return r->npending >= KEEP_REAP_PENDING;
}

unsigned long keep_reap_killed(const struct keep_reap *r)
{
	return r->killed;
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

		if (got == 1 && (c == REAP_DONE || c == REAP_KILLED)) {
			r->out = false;
			r->killed += c == REAP_KILLED;
			continue;
		}
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		/* Our end's queue holds its "done"s only: safe to close. */
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
				"%u sockets wait for the reaper (closers that do not end?): no connection is taken until it catches up",
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
	 * end's close once it closed that.  Else it is left to our exit. */
	if (r->sock >= 0 && !r->out && r->npending)
		send_batch(r);
	if (r->sock >= 0)
		close(r->sock);
	(void)waitpid(r->pid, NULL, WNOHANG);
	free(r->pending);
	free(r);
}

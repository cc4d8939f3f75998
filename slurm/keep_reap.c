// SPDX-License-Identifier: MIT
/*
 * This file implements the keeper's reaper (keep_reap.h).
 *
 * The reaper is a child process of the keeper's that keeps nothing of it
 * but its end of a socket pair (SOCK_SEQPACKET).  One batch is out at a
 * time: the keeper sends a message whose descriptors are the sockets to
 * close, closes its own copies of them (not the last references: the
 * message holds them, so nothing is released there), then sends "go".
 * The reaper closes them only after "go" (had it closed them first, the
 * keeper's close could have been the last) and answers "done".
 *
 * A reaper whose "done" does not come within KEEP_REAP_MS is SIGKILLed:
 * a wait a user can cause in a release (a TCP socket's linger) ends with
 * it, and what it still holds is released as it ends, without waiting
 * (measured on this project's machines: a process killed in such a close,
 * or holding such a socket queued, ends at once).  Then another is forked.
 * A killed reaper that does not end (a release that waits on a hung file
 * system, not on a user) is counted until it does: KEEP_REAPERS in all.
 * Without a reaper, sockets wait in the keeper, KEEP_REAP_PENDING at most,
 * and the keeper takes no more connections until one is back.
 */
#define LOG_MOD "keeper"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keep_reap.h"
#include "util/err.h"
#include "util/log.h"

#define BATCH 253 /* SCM_MAX_FD: descriptors in one message */
#define RETRY_MS 1000 /* a fork or a send that failed: tried again then */

enum { REAP_BATCH = 'b', REAP_GO = 'g', REAP_DONE = 'd' };

struct keep_reap {
	pid_t pid; /* the reaper, or 0 */
	int sock; /* the keeper's end, or -1 */
	bool out; /* a batch is out, its "done" not come */
	int64_t out_since; /* ms */
	int64_t retry_at; /* ms: no fork or send before */
	pid_t killed[KEEP_REAPERS]; /* killed, not ended */
	unsigned int nkilled;
	int pending[KEEP_REAP_PENDING];
	unsigned int npending;
	bool said_full;
};

/* The reaper: close what comes, batch by batch, until the keeper's end
 * closes.  Only async-signal-safe calls: the keeper has threads. */
static void __attribute__((noreturn)) reaper_main(int s, pid_t keeper)
{
	union {
		char b[CMSG_SPACE(BATCH * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != keeper)
		_exit(0);
	sigaction(SIGTERM, &dfl, NULL);
	sigaction(SIGINT, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Nothing of the keeper's: its socket as 3, every other closed. */
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
		do
			got = recv(3, &c, 1, 0);
		while (got < 0 && errno == EINTR);
		if (got != 1 || c != REAP_GO)
			_exit(got < 0);
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
		c = REAP_DONE;
		if (send(3, &c, 1, MSG_NOSIGNAL) != 1)
			_exit(1);
	}
}

int keep_reap_new(struct keep_reap **rp)
{
	struct keep_reap *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->sock = -1;
	*rp = r;
	return 0;
}

static void start(struct keep_reap *r, int64_t now)
{
	pid_t keeper = getpid();
	int sp[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp)) {
		log_warn("cannot start a reaper of refused connections: %s",
			 err_str(-errno));
		r->retry_at = now + RETRY_MS;
		return;
	}
	r->pid = fork();
	if (r->pid == 0)
		reaper_main(sp[1], keeper);
	close(sp[1]); /* the reaper's end: nothing queued on it yet */
	if (r->pid < 0) {
		log_warn("cannot start a reaper of refused connections: %s",
			 err_str(-errno));
		close(sp[0]);
		r->pid = 0;
		r->retry_at = now + RETRY_MS;
		return;
	}
	r->sock = sp[0];
	r->out = false;
}

/* Kill the reaper (or wait for one that ended).  Closing our end is
 * safe: only its "done"s are queued on it. */
static void kill_reaper(struct keep_reap *r)
{
	kill(r->pid, SIGKILL);
	close(r->sock);
	r->killed[r->nkilled++] = r->pid;
	r->pid = 0;
	r->sock = -1;
	r->out = false;
}

static void wait_killed(struct keep_reap *r)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < r->nkilled; i++) {
		pid_t got = waitpid(r->killed[i], NULL, WNOHANG);

		if (got == 0 || (got < 0 && errno == EINTR))
			r->killed[n++] = r->killed[i];
	}
	r->nkilled = n;
}

/* Send one batch; our copies closed after it, then "go". */
static void send_batch(struct keep_reap *r, int64_t now)
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
		if (errno != EAGAIN)
			log_warn(
				"cannot hand refused connections to the reaper: %s",
				err_str(-errno));
		r->retry_at = now + RETRY_MS;
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		close(r->pending[i]); /* the message holds each */
	r->npending -= n;
	memmove(r->pending, r->pending + n, r->npending * sizeof(int));
	r->out = true;
	r->out_since = now;
	c = REAP_GO;
	if (send(r->sock, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1)
		kill_reaper(r); /* it ends holding the batch: released then */
}

bool keep_reap_take(struct keep_reap *r, int fd)
{
	if (r->npending >= KEEP_REAP_PENDING) {
		/* The caller asks keep_reap_full() first: never here.  Left
		 * open rather than closed on the keeper's loop. */
		log_err("a refused connection is left open: %u wait for the reaper",
			r->npending);
		return false;
	}
	r->pending[r->npending++] = fd;
	return true;
}

bool keep_reap_full(const struct keep_reap *r)
{
	return r->npending >= KEEP_REAP_PENDING;
}

int keep_reap_fd(const struct keep_reap *r)
{
	return r->sock;
}

void keep_reap_run(struct keep_reap *r, int64_t now)
{
	char c;

	while (r->sock >= 0) {
		ssize_t got = recv(r->sock, &c, 1, MSG_DONTWAIT);

		if (got == 1 && c == REAP_DONE) {
			r->out = false;
			continue;
		}
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		log_warn("the reaper of refused connections (pid %d) ended",
			 (int)r->pid);
		kill_reaper(r);
	}
	if (r->sock >= 0 && r->out && now - r->out_since > KEEP_REAP_MS) {
		log_warn(
			"refused connections were not closed within %d ms: their reaper (pid %d) is killed",
			KEEP_REAP_MS, (int)r->pid);
		kill_reaper(r);
	}
	wait_killed(r);
	if (now >= r->retry_at && r->npending) {
		if (r->sock < 0 && r->nkilled < KEEP_REAPERS)
			start(r, now);
		if (r->sock >= 0 && !r->out)
			send_batch(r, now);
	}
	if (keep_reap_full(r) != r->said_full) {
		r->said_full = !r->said_full;
		if (r->said_full)
			log_warn(
				"%d refused connections wait to be closed (%u reapers killed and not ended): no more connections are taken until one is",
				KEEP_REAP_PENDING, r->nkilled);
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
		send_batch(r, r->retry_at);
	if (r->sock >= 0)
		close(r->sock);
	wait_killed(r);
	free(r);
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the keeper's clients that root and users run
 * (keep.h): one request answered DONE (forget, evict, ping) and listing
 * the copies, each within a time budget, connect included.  A keeper
 * that does not answer in time costs its caller that budget and nothing
 * else: the Prolog starts the job without keeping, check-node reports it.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "keep/keep.h"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Receive one message by @end (mono_ms()).  Return: as keep_recv(),
 * -ETIMEDOUT when the time is up. */
static int recv_by(int s, int64_t end, struct keep_msg *m)
{
	int64_t left = end - mono_ms();
	struct timeval tv;
	int fd, err;

	if (left <= 0)
		return -ETIMEDOUT;
	tv.tv_sec = left / 1000;
	tv.tv_usec = (left % 1000) * 1000;
	if (setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -errno;
	err = keep_recv(s, m, &fd);
	if (fd >= 0)
		close(fd); /* the keeper's, root's: none is expected here */
	return err == -EAGAIN || err == -EWOULDBLOCK ? -ETIMEDOUT : err;
}

/* Connect and send @m, by @end.  Return: the connection, or -errno. */
static int open_ask(const char *path, int64_t end, struct keep_msg *m)
{
	int64_t left = end - mono_ms();
	int s, err;

	if (left <= 0)
		return -ETIMEDOUT;
	err = keep_connect(path ? path : KEEP_SOCKET, (int)left, &s);
	if (err)
		return err;
	/* The send (a keeper that reads nothing: its queue full) within
	 * what the connect left of the budget, not the whole of it again. */
	left = end - mono_ms();
	if (left <= 0) {
		close(s);
		return -ETIMEDOUT;
	}
	if (setsockopt(s, SOL_SOCKET, SO_SNDTIMEO,
		       &(struct timeval){ left / 1000, (left % 1000) * 1000 },
		       sizeof(struct timeval))) {
		err = -errno;
		close(s);
		return err;
	}
	err = keep_send(s, m, -1);
	if (err) {
		close(s);
		return err == -EAGAIN ? -ETIMEDOUT : err;
	}
	return s;
}

/* Send @m (its name set from @name, if any) and read its DONE within
 * @budget_ms.  Return: its status, its a in *@out; -errno. */
static int ask_done(const char *path, struct keep_msg *m, const char *name,
		    int budget_ms, uint64_t *out)
{
	int64_t end = mono_ms() + budget_ms;
	int s, err;

	if (name)
		snprintf(m->name, sizeof(m->name), "%s", name);
	s = open_ask(path, end, m);
	if (s < 0)
		return s;
	err = recv_by(s, end, m);
	close(s);
	if (err)
		return err;
	if (m->op != KEEP_DONE)
		return -EPROTO;
	if (out)
		*out = m->a;
	return m->status;
}

int keep_ask(const char *path, int op, const char *name, uint64_t a,
	     int budget_ms, uint64_t *out)
{
	struct keep_msg m = { .op = (uint32_t)op, .a = a };

	return ask_done(path, &m, name, budget_ms, out);
}

int keep_forget_of(const char *path, uid_t uid, const char *name, int budget_ms)
{
	struct keep_msg m = { .op = KEEP_FORGET,
			      .uid = (uint32_t)uid,
			      .flags = KEEP_F_OF_UID };

	return ask_done(path, &m, name, budget_ms, NULL);
}

int keep_list(const char *path, int budget_ms,
	      void (*fn)(void *arg, const struct keep_msg *e), void *arg)
{
	struct keep_msg m = { .op = KEEP_LIST };
	int64_t end = mono_ms() + budget_ms;
	int s, err;

	s = open_ask(path, end, &m);
	if (s < 0)
		return s;
	for (;;) {
		err = recv_by(s, end, &m);
		if (err)
			break;
		if (m.op != KEEP_ENTRY && m.op != KEEP_USER) {
			err = m.op == KEEP_DONE ? m.status : -EPROTO;
			break;
		}
		fn(arg, &m);
	}
	close(s);
	return err;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the daemon's side of the control protocol (ctl.h):
 * a thread that accepts connections on the control socket, checks who is
 * asking, and answers ping, stats (built by the core, stats.c), stage,
 * umount, hold, release and order (the epoch order, order_req.c).  Each request is read with ctl_req_decode()
 * and answered with ctl_reply_encode(), but for the stats object.
 */
#define LOG_MOD "ctl"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl_srv.h"
#include "daemon.h"
#include "holders.h"
#include "order_req.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

/* "hold PID START" and "release PID" (holders.h). */
static void holder_cmd(struct sqcd *d, const struct ctl_req *req,
		       struct ctl_reply *rep)
{
	int n;

	n = req->cmd == CTL_CMD_HOLD ?
		    holders_add(d->holders, req->hold.pid, req->hold.start) :
		    holders_remove(d->holders, req->release.pid);
	if (n >= 0) {
		rep->holders.holders = (unsigned int)n;
		return;
	}
	ctl_reply_refuse(rep, "%s",
			 n == -EOPNOTSUPP ? "not holder-managed" :
			 n == -ESHUTDOWN  ? "closing" :
			 n == -ENOENT	  ? "not a holder" :
			 n == -ESRCH	  ? "no such process" :
					    err_str(n));
}

/*
 * "stage [full|meta] [BYTES]": start or extend staging (ctl.h).  The mode
 * defaults to full, the budget to the larger of the current one and the
 * mount's ram=, or when both are 0 to the default ram= of a daemon started
 * now: memlimit_budget(), from the memory limit the daemon is under now.
 */
static void stage_cmd(struct sqcd *d, const struct ctl_req_stage *req,
		      struct ctl_reply *rep)
{
	enum stage_mode mode = req->mode == CTL_STAGE_META ? STAGE_META :
							     STAGE_FULL;
	uint64_t budget = req->budget;
	char lim[32];
	struct stage_stats st;
	int err;

	stage_get_stats(img_stage(d->img), &st);
	if (!budget)
		budget = MAX(st.budget, d->o.img.ram);
	if (!budget) {
		struct memlimit ml;

		memlimit_get(&ml);
		budget = memlimit_budget(&ml);
		log_info("staging budget not given: half of %s (%s)",
			 ml.usable ? size_format(ml.usable, lim, sizeof(lim)) :
				     "unknown",
			 ml.source);
	}
	/* No stager, no staging: say so rather than leave it "idle". */
	err = st.threads ? stage_resume(img_stage(d->img), mode, budget) :
			   -EOPNOTSUPP;
	if (err) {
		ctl_reply_refuse(rep, "%s", err_str(err));
		return;
	}
	log_info("staging %s resumed with a budget of %llu bytes",
		 mode == STAGE_META ? "(metadata)" : "(full)",
		 (unsigned long long)MAX(budget, st.budget));
	rep->stage.mode = req->mode;
	rep->stage.budget = MAX(budget, st.budget);
}

/* The answer to a client of another uid. */
static void refuse_peer(struct json_buf *b)
{
	struct ctl_reply *rep = calloc(1, sizeof(*rep));

	if (!rep) {
		b->oom = true;
		return;
	}
	rep->cmd = CTL_CMD_PING;
	ctl_reply_refuse(rep, "permission denied");
	ctl_reply_encode(rep, b);
	json_buf_printf(b, "\n");
	free(rep);
}

/* A client that sends nothing for this long is dropped. */
#define STALL_MS 2000

/* Read one short line from @c into @line; bytes after its newline (the
 * start of a body) are left at @line + *@extra_at, *@extra of them.
 * Return: true if a line came. */
static bool read_line(int c, char *line, size_t cap, size_t *extra_at,
		      size_t *extra)
{
	size_t n = 0, end;
	ssize_t r;
	char *nl = NULL;

	while (n < cap - 1 && !nl) {
		struct pollfd p = { .fd = c, .events = POLLIN };

		if (poll(&p, 1, STALL_MS) <= 0)
			return false;
		r = recv(c, line + n, cap - 1 - n, 0);
		if (r <= 0)
			return false;
		n += (size_t)r;
		nl = memchr(line, '\n', n);
	}
	line[n] = '\0';
	end = nl ? (size_t)(nl - line) : n;
	*extra_at = nl ? end + 1 : n;
	*extra = n - *extra_at;
	line[end] = '\0';
	line[strcspn(line, "\r")] = '\0';
	return true;
}

/* Read the rest of a body of @len bytes, the first @have of which are in
 * @buf already.  Return: true if all came, without a stall. */
static bool read_body(int c, char *buf, size_t have, size_t len)
{
	ssize_t r;

	while (have < len) {
		struct pollfd p = { .fd = c, .events = POLLIN };

		if (poll(&p, 1, STALL_MS) <= 0)
			return false;
		r = recv(c, buf + have, len - have, 0);
		if (r <= 0)
			return false;
		have += (size_t)r;
	}
	return true;
}

/* Carry out @req into @rep, but stats (built into the reply directly);
 * @body is an order's. */
static void dispatch(struct sqcd *d, const struct ctl_req *req,
		     const char *body, struct ctl_reply *rep)
{
	switch (req->cmd) {
	case CTL_CMD_PING:
		/* The mount point proves a fallback address ours (ctl.h). */
		rep->ping.pid = getpid();
		snprintf(rep->ping.mountpoint, sizeof(rep->ping.mountpoint),
			 "%s", d->o.canonical);
		break;
	case CTL_CMD_HOLD:
	case CTL_CMD_RELEASE:
		holder_cmd(d, req, rep);
		break;
	case CTL_CMD_STAGE:
		stage_cmd(d, &req->stage, rep);
		break;
	case CTL_CMD_ORDER:
		order_req(d, body, req->order.bytes, rep);
		break;
	default: /* stats, umount: nothing to do here */
		break;
	}
}

/* The body of an order: @len bytes, @extra of which came with the line.
 * Return: the body (one byte more, a NUL), or NULL. */
static char *read_order_body(int c, const char *first, size_t extra,
			     uint64_t len)
{
	char *body;

	if (extra > len)
		return NULL; /* more than announced */
	body = malloc((size_t)len + 1);
	if (!body)
		return NULL;
	memcpy(body, first, extra);
	if (!read_body(c, body, extra, (size_t)len)) {
		free(body);
		return NULL;
	}
	body[len] = '\0';
	return body;
}

/* Answer the request in @line into @b; an order's body is read from @c,
 * its first @extra bytes at @line + @extra_at.  Return: true for umount. */
static bool answer(struct sqcd *d, int c, const char *line, size_t extra_at,
		   size_t extra, struct json_buf *b)
{
	struct ctl_reply *rep;
	struct ctl_req req;
	const char *usage;
	char *body = NULL;
	bool umount;
	int err;

	rep = calloc(1, sizeof(*rep));
	if (!rep) {
		b->oom = true;
		return false;
	}
	err = ctl_req_decode(line, &req);
	if (err) {
		/* A refusal reads the same whatever the command. */
		usage = ctl_req_usage(line);
		rep->cmd = CTL_CMD_PING;
		ctl_reply_refuse(rep, "%s", usage ? usage : "unknown command");
	} else if (req.cmd == CTL_CMD_ORDER &&
		   !(body = read_order_body(c, line + extra_at, extra,
					    req.order.bytes))) {
		rep->cmd = req.cmd;
		ctl_reply_refuse(rep, "the order's body did not come whole");
	} else {
		rep->cmd = req.cmd;
		rep->ok = true;
		dispatch(d, &req, body, rep);
	}
	free(body);
	if (rep->ok && rep->cmd == CTL_CMD_STATS)
		sqcd_stats_json(d, b);
	else
		ctl_reply_encode(rep, b);
	json_buf_printf(b, "\n");
	umount = rep->ok && rep->cmd == CTL_CMD_UMOUNT;
	free(rep);
	return umount;
}

/*
 * After refusing a client without reading its request: take what it sent
 * (a line, the start of a body) until it closes, so that closing does not
 * reset the connection and lose the refusal.  64 KiB and 200 ms in all at
 * most: the client is another user's, and the control thread serves one
 * connection at a time.
 */
static void drain(int c)
{
	int64_t end = mono_ns() + 200 * 1000000ll, left;
	char buf[4096];
	size_t got = 0;
	ssize_t r;

	shutdown(c, SHUT_WR);
	while (got < 65536) {
		struct pollfd p = { .fd = c, .events = POLLIN };

		left = (end - mono_ns()) / 1000000;
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return;
		r = recv(c, buf, sizeof(buf), 0);
		if (r <= 0)
			return;
		got += (size_t)r;
	}
}

static void serve(struct sqcd *d, int c)
{
	struct json_buf b = { 0 };
	char line[CTL_REQ_MAX];
	size_t extra_at, extra;
	uid_t uid;
	pid_t pid;
	bool umount = false;

	if (ctl_peer(c, &uid, &pid) || (uid != getuid() && uid != 0)) {
		refuse_peer(&b);
		if (!b.oom && b.len)
			send(c, b.p, b.len, MSG_NOSIGNAL);
		drain(c);
		goto out_close;
	}
	if (!read_line(c, line, sizeof(line), &extra_at, &extra))
		goto out_close;
	umount = answer(d, c, line, extra_at, extra, &b);
	if (!b.oom && b.len)
		send(c, b.p, b.len, MSG_NOSIGNAL);
out_close:
	close(c);
	json_buf_release(&b);
	if (umount) {
		log_info("unmount requested by pid %d", (int)pid);
		/* The session's signal handler unmounts cleanly. */
		kill(getpid(), SIGTERM);
	}
}

struct ctl_srv {
	struct sqcd *d; /* the daemon */
	int fd; /* the listening socket */
	pthread_t thread; /* serves it */
	bool running; /* @thread was started */
};

static void *ctl_main(void *arg)
{
	struct ctl_srv *f = arg;
	int c;

	for (;;) {
		c = accept4(f->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* the socket was shut down */
		}
		serve(f->d, c);
	}
	return NULL;
}

int ctl_srv_listen(struct sqcd *d, struct ctl_srv **out)
{
	struct ctl_srv *f;
	int err;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->d = d;
	err = ctl_listen(d->o.ctl_addr, &f->fd);
	if (err) {
		free(f);
		return err;
	}
	*out = f;
	return 0;
}

int ctl_srv_start(struct sqcd *d, struct ctl_srv **out)
{
	struct ctl_srv *f = *out;
	int err;

	if (!f) {
		err = ctl_srv_listen(d, &f);
		if (err)
			return err;
	}
	err = -pthread_create(&f->thread, NULL, ctl_main, f);
	if (err) {
		ctl_srv_stop(f);
		ctl_srv_free(f);
		*out = NULL;
		return err;
	}
	f->running = true;
	*out = f;
	return 0;
}

void ctl_srv_stop(struct ctl_srv *f)
{
	if (!f)
		return;
	shutdown(f->fd, SHUT_RDWR);
	if (f->running)
		pthread_join(f->thread, NULL);
	close(f->fd);
	if (f->d->o.ctl_addr[0] != '@')
		unlink(f->d->o.ctl_addr);
}

void ctl_srv_free(struct ctl_srv *f)
{
	free(f);
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the daemon's side of the control protocol (ctl.h):
 * a thread that accepts connections on the control socket, checks who is
 * asking, and answers ping, stats (built by the core, stats.c), stage,
 * umount, hold and release; and a thread of its own for order (the epoch
 * orders, order_req.c), so that no request waits behind one, which also
 * drops the order of a process that ended (order_main()).
 * Each request is read with ctl_req_decode() and answered with
 * ctl_reply_encode(), but for the stats object.
 */
#define LOG_MOD "ctl"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl_srv.h"
#include "daemon.h"
#include "order/order.h"
#include "order_req.h"
#include "holders.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

/* "hold PID START" and "release PID" (holders.h). */
static void holder_cmd(struct sqcd *d, const struct ctl_req *req,
		       struct ctl_reply *rep)
{
	struct holders *h = sqcd_feature(d, &holders_feature);
	int n;

	n = req->cmd == CTL_CMD_HOLD ?
		    holders_add(h, req->hold.pid, req->hold.start) :
		    holders_remove(h, req->release.pid);
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

/* Carry out @req into @rep, but stats (built into the reply directly)
 * and order (the order thread's: order_main()). */
static void dispatch(struct sqcd *d, const struct ctl_req *req,
		     struct ctl_reply *rep)
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
	default: /* stats, umount: nothing to do here */
		break;
	}
}

/* Send @rep on @c: its line, or for stats answered the stats object. */
static void send_reply(struct sqcd *d, int c, const struct ctl_reply *rep)
{
	struct json_buf b = { 0 };

	if (rep->ok && rep->cmd == CTL_CMD_STATS)
		sqcd_stats_json(d, &b);
	else
		ctl_reply_encode(rep, &b);
	json_buf_printf(&b, "\n");
	if (!b.oom && b.len)
		send(c, b.p, b.len, MSG_NOSIGNAL);
	json_buf_release(&b);
}

/*
 * After refusing a client without reading its request or an order's body:
 * take what it sent (a line, the start of a body) until it closes, so that
 * closing does not reset the connection and lose the refusal.  64 KiB and
 * 200 ms in all at most: the client may be another user's, and the control
 * thread serves one connection at a time.
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

/*
 * The order thread.  An order of many paths takes a while to read and to
 * find in the image, and the control thread must go on answering ping,
 * stats, hold, release and umount meanwhile (mountctl takes a daemon that
 * does not answer for busy or hung).  So the control thread hands each
 * order, once its line is read, to this one thread, which reads its body,
 * carries it out (order_req.c) and answers.  Orders are carried out one at
 * a time, in the order they came.  Every rank of a job sends its order
 * at the start of each epoch, all at once: ORDERS_QUEUED_MAX may wait (a
 * connection each), enough for a node's ranks many times over, and more
 * are refused, so that the connections held open stay bounded.
 *
 * Between orders the thread sleeps in poll() on an eventfd (an order
 * queued, or stopping) and the pidfds of the processes whose orders it
 * holds: a process that ends has its order dropped (order_clients_reap()).
 *
 * What an order touches beside the control thread: the image's lookups and
 * its epoch order (order_plan_set()), which FUSE workers and stats use
 * concurrently anyway.  The control thread's own requests (holders,
 * staging) never run here.
 */
#define ORDERS_QUEUED_MAX 256

/* An order the control thread has read the line of. */
struct order_job {
	int c; /* its connection: the order thread's to close */
	uint64_t bytes; /* of its body */
	struct order_who who; /* whose order */
	size_t extra; /* bytes of it that came with the line */
	char first[CTL_REQ_MAX]; /* those bytes */
};

struct ctl_srv {
	struct sqcd *d; /* the daemon */
	int fd; /* the listening socket */
	pthread_t thread; /* serves it */
	bool running; /* @thread was started */
	pthread_t order_thread; /* carries out orders (order_main()) */
	bool order_running; /* @order_thread was started */
	int wake; /* eventfd: an order queued, or stopping */
	struct order_clients *clients; /* the order thread's (order_req.h) */
	pthread_mutex_t lock; /* protects the fields below */
	struct order_job *queue; /* waiting orders, a ring of
				    ORDERS_QUEUED_MAX */
	unsigned int head; /* the oldest of @queue */
	unsigned int queued; /* orders in @queue */
	int reading; /* the connection whose order is carried out, or -1 */
	bool stopping; /* ctl_srv_stop() was called: orders are refused */
};

/* Wake the order thread.  Context: any thread. */
static void wake_orders(struct ctl_srv *srv)
{
	uint64_t one = 1;

	if (write(srv->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("cannot wake the order thread: %s", err_str(-errno));
}

/* Queue the order @req of connection @c, the first @extra bytes of its
 * body at @first.  Return: 0 (the order thread answers @c and closes it);
 * -EBUSY if ORDERS_QUEUED_MAX wait already. */
static int order_queue(struct ctl_srv *srv, int c, const struct ctl_req *req,
		       const char *first, size_t extra)
{
	struct order_job *job;
	int err = -EBUSY;

	pthread_mutex_lock(&srv->lock);
	if (srv->queued < ORDERS_QUEUED_MAX) {
		job = &srv->queue[(srv->head + srv->queued) % ORDERS_QUEUED_MAX];
		job->c = c;
		job->bytes = req->order.bytes;
		job->who.pid = req->order.pid;
		job->who.start = req->order.start;
		job->extra = MIN(extra, sizeof(job->first));
		memcpy(job->first, first, job->extra);
		srv->queued++;
		err = 0;
	}
	pthread_mutex_unlock(&srv->lock);
	if (!err)
		wake_orders(srv);
	return err;
}

/* Read the body of @job, carry it out, answer, and close its connection.
 * @stopping: refuse it instead. */
static void order_answer(struct ctl_srv *srv, struct order_job *job,
			 bool stopping)
{
	struct ctl_reply *rep = calloc(1, sizeof(*rep));
	char *body = NULL;

	if (rep) {
		rep->cmd = CTL_CMD_ORDER;
		if (stopping) /* its body is left unread: drain() */
			ctl_reply_refuse(rep, "closing");
		else if (!(body = read_order_body(job->c, job->first,
						  job->extra, job->bytes)))
			ctl_reply_refuse(rep,
					 "the order's body did not come whole");
		else {
			rep->ok = true;
			order_req(srv->d, srv->clients, &job->who, body,
				  job->bytes, rep);
		}
		free(body);
		send_reply(srv->d, job->c, rep);
		free(rep);
	}
	if (stopping)
		drain(job->c);
	/* Not @reading any more before its number can be reused. */
	pthread_mutex_lock(&srv->lock);
	srv->reading = -1;
	pthread_mutex_unlock(&srv->lock);
	close(job->c);
}

/* Sleep until an order is queued, stopping, or a client ended; drop the
 * orders of those that ended. */
static void order_sleep(struct ctl_srv *srv)
{
	struct pollfd p[1 + ORDER_CLIENTS_MAX];
	size_t n;
	uint64_t v;

	p[0] = (struct pollfd){ .fd = srv->wake, .events = POLLIN };
	n = 1 + order_clients_fds(srv->clients, p + 1, ORDER_CLIENTS_MAX);
	if (poll(p, n, order_clients_timeout(srv->clients)) > 0 &&
	    (p[0].revents & POLLIN) && read(srv->wake, &v, sizeof(v)) < 0 &&
	    errno != EAGAIN)
		log_warn("cannot read the order thread's eventfd: %s",
			 err_str(-errno));
	order_clients_reap(srv->d, srv->clients);
}

/* Carry out the queued orders, one at a time, until stopped.  Orders
 * still queued then are refused. */
static void *order_main(void *arg)
{
	struct ctl_srv *srv = arg;
	struct order_job job;
	bool stopping;

	for (;;) {
		pthread_mutex_lock(&srv->lock);
		while (!srv->queued && !srv->stopping) {
			pthread_mutex_unlock(&srv->lock);
			order_sleep(srv);
			pthread_mutex_lock(&srv->lock);
		}
		if (!srv->queued) {
			pthread_mutex_unlock(&srv->lock);
			return NULL;
		}
		job = srv->queue[srv->head];
		srv->head = (srv->head + 1) % ORDERS_QUEUED_MAX;
		srv->queued--;
		srv->reading = job.c;
		stopping = srv->stopping;
		pthread_mutex_unlock(&srv->lock);
		order_answer(srv, &job, stopping);
	}
}

/* What serve() should do once a request is answered. */
enum answered {
	ANSWERED, /* close the connection */
	ANSWERED_UMOUNT, /* close it, and unmount */
	HANDED_OVER, /* nothing: the order thread has it */
};

/* Answer the request in @line on @c; an order's body, its first @extra
 * bytes at @line + @extra_at, is left to the order thread. */
static enum answered answer(struct ctl_srv *srv, int c, const char *line,
			    size_t extra_at, size_t extra)
{
	struct ctl_reply *rep;
	struct ctl_req req;
	const char *usage;
	enum answered ret = ANSWERED;
	int err;

	err = ctl_req_decode(line, &req);
	if (!err && req.cmd == CTL_CMD_ORDER &&
	    !order_queue(srv, c, &req, line + extra_at, extra))
		return HANDED_OVER;
	rep = calloc(1, sizeof(*rep));
	if (!rep)
		return ANSWERED;
	if (err) {
		/* A refusal reads the same whatever the command. */
		usage = ctl_req_usage(line);
		rep->cmd = CTL_CMD_PING;
		ctl_reply_refuse(rep, "%s", usage ? usage : "unknown command");
	} else if (req.cmd == CTL_CMD_ORDER) {
		rep->cmd = req.cmd;
		ctl_reply_refuse(rep, "busy: %d orders wait already",
				 ORDERS_QUEUED_MAX);
		send_reply(srv->d, c, rep);
		free(rep);
		drain(c); /* its body: see drain() */
		return ANSWERED;
	} else {
		rep->cmd = req.cmd;
		rep->ok = true;
		dispatch(srv->d, &req, rep);
	}
	send_reply(srv->d, c, rep);
	if (rep->ok && rep->cmd == CTL_CMD_UMOUNT)
		ret = ANSWERED_UMOUNT;
	free(rep);
	return ret;
}

static void serve(struct ctl_srv *srv, int c)
{
	struct json_buf b = { 0 };
	char line[CTL_REQ_MAX];
	size_t extra_at, extra;
	enum answered done = ANSWERED;
	uid_t uid;
	pid_t pid;

	if (ctl_peer(c, &uid, &pid) || (uid != getuid() && uid != 0)) {
		refuse_peer(&b);
		if (!b.oom && b.len)
			send(c, b.p, b.len, MSG_NOSIGNAL);
		json_buf_release(&b);
		drain(c);
		goto out_close;
	}
	if (!read_line(c, line, sizeof(line), &extra_at, &extra))
		goto out_close;
	done = answer(srv, c, line, extra_at, extra);
	if (done == HANDED_OVER)
		return;
out_close:
	close(c);
	if (done == ANSWERED_UMOUNT) {
		log_info("unmount requested by pid %d", (int)pid);
		/* The session's signal handler unmounts cleanly. */
		kill(getpid(), SIGTERM);
	}
}

static void *ctl_main(void *arg)
{
	struct ctl_srv *srv = arg;
	int c;

	for (;;) {
		c = accept4(srv->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* the socket was shut down */
		}
		serve(srv, c);
	}
	return NULL;
}

/* Bind the control socket at d->o.ctl_addr, not yet served.  Return: 0;
 * -EADDRINUSE; -ENOMEM; -errno. */
static int bind_addr(struct sqcd *d, struct ctl_srv **out)
{
	struct ctl_srv *srv;
	int err;

	*out = NULL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->d = d;
	srv->reading = -1;
	srv->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	srv->queue = calloc(ORDERS_QUEUED_MAX, sizeof(*srv->queue));
	err = srv->wake < 0 ? -errno : !srv->queue ? -ENOMEM : 0;
	if (!err)
		err = order_clients_new(&srv->clients);
	if (!err)
		err = ctl_listen(d->o.ctl_addr, &srv->fd);
	if (err) {
		if (srv->wake >= 0)
			close(srv->wake);
		order_clients_free(srv->clients);
		free(srv->queue);
		free(srv);
		return err;
	}
	pthread_mutex_init(&srv->lock, NULL);
	*out = srv;
	return 0;
}

/*
 * The default control address is taken and the holder is not a daemon of
 * ours on its way out: listen at a fallback address that nobody can
 * guess, where clients look next (ctl.h).  Return: 0 or -errno.
 */
static int listen_fallback(struct sqcd *d, int probe, uid_t holder,
			   struct ctl_srv **out)
{
	char taken[CTL_PATH_MAX], who[64];
	int err;

	memcpy(taken, d->o.ctl_addr, sizeof(taken));
	err = ctl_fallback_address(d->o.canonical, d->o.ctl_addr,
				   sizeof(d->o.ctl_addr));
	if (err)
		return err;
	if (probe)
		snprintf(who, sizeof(who), "a socket that does not answer (%s)",
			 err_str(probe));
	else
		snprintf(who, sizeof(who), "uid %u", (unsigned int)holder);
	log_warn("control address '%s' is taken by %s: listening on '%s'",
		 taken, who, d->o.ctl_addr);
	return bind_addr(d, out);
}

int ctl_srv_listen(struct sqcd *d, struct ctl_srv **out)
{
	bool fixed = d->o.ctl_addr[0]; /* -o ctl=: there or nowhere */
	bool refused = false;
	uid_t holder = 0;
	int err, probe;

	if (!fixed)
		ctl_default_address(d->o.canonical, d->o.ctl_addr,
				    sizeof(d->o.ctl_addr));
	err = bind_addr(d, out);
	for (int i = 0; err == -EADDRINUSE && i < 50; i++) {
		if (!fixed) {
			/* Anyone may bind an abstract name: who did? */
			probe = ctl_probe(d->o.ctl_addr, &holder);
			if (probe == -ECONNREFUSED && !refused) {
				/* Maybe just released: once more, at once. */
				refused = true;
				err = bind_addr(d, out);
				continue;
			}
			if (probe || holder != getuid()) {
				err = listen_fallback(d, probe, holder, out);
				break;
			}
		}
		/* The mountpoint is not mounted, so a daemon of ours still
		 * holding the address is on its way out: the kernel takes a
		 * second or two to release a FUSE connection after an
		 * unmount. */
		usleep(100 * 1000);
		err = bind_addr(d, out);
	}
	if (err)
		fprintf(stderr,
			"squashcached: cannot listen on control socket %s: %s%s\n",
			d->o.ctl_addr, err_str(err),
			err == -EADDRINUSE ?
				" (another squashcached still serves this mountpoint; stop it first)" :
				"");
	return err;
}

int ctl_srv_start(struct sqcd *d, void **out)
{
	struct ctl_srv *srv = *out;
	int err;

	if (!srv) {
		err = bind_addr(d, &srv);
		if (err)
			return err;
	}
	/* The order thread first: the control thread hands orders to it. */
	err = -pthread_create(&srv->order_thread, NULL, order_main, srv);
	if (!err) {
		srv->order_running = true;
		err = -pthread_create(&srv->thread, NULL, ctl_main, srv);
	}
	if (err) {
		ctl_srv_stop(srv);
		ctl_srv_free(srv);
		*out = NULL;
		return err;
	}
	srv->running = true;
	*out = srv;
	return 0;
}

void ctl_srv_stop(void *f)
{
	struct ctl_srv *srv = f;

	if (!srv)
		return;
	shutdown(srv->fd, SHUT_RDWR);
	if (srv->running)
		pthread_join(srv->thread, NULL);
	/* No order comes any more: refuse those queued, and end the read of
	 * the body of the one carried out. */
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	if (srv->reading >= 0)
		shutdown(srv->reading, SHUT_RD);
	pthread_mutex_unlock(&srv->lock);
	wake_orders(srv);
	if (srv->order_running)
		pthread_join(srv->order_thread, NULL);
	srv->running = false;
	srv->order_running = false;
	close(srv->fd);
	if (srv->d->o.ctl_addr[0] != '@')
		unlink(srv->d->o.ctl_addr);
}

void ctl_srv_free(void *f)
{
	struct ctl_srv *srv = f;

	if (!srv)
		return;
	pthread_mutex_destroy(&srv->lock);
	close(srv->wake);
	order_clients_free(srv->clients);
	free(srv->queue);
	free(srv);
}

const struct sqcd_feature ctl_srv_feature = {
	.name = "control socket",
	.start = ctl_srv_start,
	.stop = ctl_srv_stop,
	.free = ctl_srv_free,
};

// SPDX-License-Identifier: MIT
/*
 * This file implements the "order" control request (order_req.h): each
 * path of the body is resolved in the image (img_resolve(), which refuses
 * malformed paths and symlinks out of the image), its file's ranges are
 * added to a new epoch order (order_plan_add()), and only once every path
 * is found the client's order is replaced with it (order_plan_set()).
 *
 * A client is a process (a rank of a training job, its DataLoader's
 * workers reading for it), keyed in lib/order by its pid; or the mount's
 * own order, key 0, for orders that name no process.  The table here
 * holds each process's pid, start time and pidfd: the pidfd pins the
 * process that has the pid now, and its start time, read after, proves
 * that it is the one the request meant.  The order thread polls the
 * pidfds (order_clients_fds()); a client that ended has its order
 * forgotten (order_clients_reap()).  Without pidfd_open(), a client's
 * start time is checked once a second instead.
 */
#define LOG_MOD "order"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon.h"
#include "json/json.h"
#include "order/order.h"
#include "order_req.h"
#include "util/err.h"
#include "util/log.h"
#include "util/proc.h"

#define SHOWN_MAX 48 /* bytes of a path a refusal shows */

/* Refuse the order at entry @i (1-based), path @p of @len bytes. */
static void refuse_at(struct ctl_reply *rep, uint64_t i, const char *p,
		      size_t len, const char *why)
{
	char shown[SHOWN_MAX + 4];
	size_t n = len > SHOWN_MAX ? SHOWN_MAX : len;

	memcpy(shown, p, n);
	strcpy(shown + n, len > n ? "..." : "");
	for (size_t k = 0; k < n; k++)
		if ((unsigned char)shown[k] < 0x20)
			shown[k] = '?';
	ctl_reply_refuse(rep, "order entry %llu '%s': %s",
			 (unsigned long long)i, shown, why);
}

/* Why the file at a path cannot be ordered; -EINVAL from img_resolve()
 * is a malformed path, from the type check not a regular file. */
static const char *why_not(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such file in the image";
	case -ENOTDIR:
		return "a component is not a directory";
	case -EISDIR:
		return "a directory, not a file";
	case -EINVAL:
		return "not a regular file";
	case -ENAMETOOLONG:
		return "a name is too long";
	case -EXDEV:
		return "a symlink that leaves the image";
	case -ELOOP:
		return "too many symlinks";
	default:
		return err_str(err);
	}
}

/* Add the file at path @p (@n bytes, entry @i) to @plan, or refuse. */
static int add_path(struct sqcd *d, struct img_paths *ps, const char *p,
		    size_t n, uint64_t i, struct order_plan *plan,
		    struct ctl_reply *rep)
{
	struct img_inode f;
	int err;

	err = img_resolve(ps, p, n, &f);
	if (err == -EINVAL) {
		refuse_at(
			rep, i, p, n,
			"not a path relative to the mount's root, or it has empty, '.' or '..' names");
		return err;
	}
	if (!err && f.type != IMG_REG)
		err = f.type == IMG_DIR ? -EISDIR : -EINVAL;
	if (!err)
		err = order_plan_add(plan, d->img, &f);
	if (err)
		refuse_at(rep, i, p, n, why_not(err));
	return err;
}

/* Add every path of @body to @plan.  Return: true if all were added. */
static bool build(struct sqcd *d, const char *body, uint64_t len,
		  struct order_plan *plan, struct ctl_reply *rep)
{
	const char *p = body, *end = body + len;
	struct img_paths *ps;
	uint64_t i = 0;
	size_t n;
	int err;

	err = img_paths_new(d->img, &ps);
	if (err) {
		ctl_reply_refuse(rep, "%s", err_str(err));
		return false;
	}
	for (; p < end && !err; p += n + 1) {
		n = strlen(p); /* the body ends in a NUL past @end */
		i++;
		if (p + n == end) {
			refuse_at(rep, i, p, n, "does not end in a NUL");
			err = -EINVAL;
		} else {
			err = add_path(d, ps, p, n, i, plan, rep);
		}
	}
	img_paths_free(ps);
	return !err;
}

/* A process that gave an order. */
struct order_client {
	pid_t pid; /* the process */
	uint64_t start; /* its start time, clock ticks since boot */
	int pidfd; /* readable once it exits; -1 without pidfd_open() */
};

struct order_clients {
	struct order_client v[ORDER_CLIENTS_MAX]; /* unordered */
	unsigned int n; /* how many */
};

int order_clients_new(struct order_clients **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static void client_drop(struct order_clients *oc, unsigned int i)
{
	if (oc->v[i].pidfd >= 0)
		close(oc->v[i].pidfd);
	oc->v[i] = oc->v[--oc->n];
}

void order_clients_free(struct order_clients *oc)
{
	if (!oc)
		return;
	while (oc->n)
		client_drop(oc, 0);
	free(oc);
}

/* Is the client still the process it was when added? */
static bool is_alive(const struct order_client *x)
{
	return proc_is_alive(x->pidfd, x->pid, x->start);
}

/* The entry of @who in @oc, added if new (*@added).  Return: 0; -ESRCH if
 * it is not running (or another process has its pid); -EUSERS if the
 * table is full. */
static int client_get(struct order_clients *oc, const struct order_who *who,
		      bool *added)
{
	struct order_client x = { .pid = who->pid, .start = who->start };
	uint64_t now;

	*added = false;
	for (unsigned int i = 0; i < oc->n; i++)
		if (oc->v[i].pid == who->pid && oc->v[i].start == who->start &&
		    is_alive(&oc->v[i]))
			return 0;
	x.pidfd = proc_pidfd(who->pid);
	if (x.pidfd < 0 && errno == ESRCH)
		return -ESRCH;
	if (proc_start_time(who->pid, &now) || now != who->start) {
		if (x.pidfd >= 0)
			close(x.pidfd);
		return -ESRCH;
	}
	if (oc->n == ORDER_CLIENTS_MAX) {
		if (x.pidfd >= 0)
			close(x.pidfd);
		return -EUSERS;
	}
	oc->v[oc->n++] = x;
	*added = true;
	return 0;
}

/* Stop watching process @pid. */
static void client_forget(struct order_clients *oc, pid_t pid)
{
	for (unsigned int i = 0; pid && i < oc->n; i++) {
		if (oc->v[i].pid == pid) {
			client_drop(oc, i);
			return;
		}
	}
}

/* The order of a process that ended, or of another with its pid, goes. */
static void forget(struct sqcd *d, pid_t pid)
{
	struct order_plan none = { 0 };

	order_plan_set(d->order, (uint64_t)pid, &none);
}

unsigned int order_clients_reap(struct sqcd *d, struct order_clients *oc)
{
	unsigned int gone = 0;

	for (unsigned int i = 0; i < oc->n;) {
		if (is_alive(&oc->v[i])) {
			i++;
			continue;
		}
		log_info("epoch order of pid %d dropped: the process ended",
			 (int)oc->v[i].pid);
		forget(d, oc->v[i].pid);
		client_drop(oc, i);
		gone++;
	}
	return gone;
}

size_t order_clients_fds(struct order_clients *oc, struct pollfd *p, size_t cap)
{
	size_t n = 0;

	for (unsigned int i = 0; i < oc->n && n < cap; i++)
		if (oc->v[i].pidfd >= 0)
			p[n++] = (struct pollfd){ .fd = oc->v[i].pidfd,
						  .events = POLLIN };
	return n;
}

int order_clients_timeout(struct order_clients *oc)
{
	for (unsigned int i = 0; i < oc->n; i++)
		if (oc->v[i].pidfd < 0)
			return 1000;
	return -1;
}

/* Why lib/order refused a plan. */
static const char *why_refused(int err)
{
	switch (err) {
	case -ENOSPC:
		return "the epoch orders' plans would pass their budget "
		       "(order_plans=): clear orders, or mount with a larger "
		       "one";
	case -EUSERS:
		return "too many processes have orders on this mount";
	default:
		return err_str(err);
	}
}

void order_req(struct sqcd *d, struct order_clients *oc,
	       const struct order_who *who, const char *body, uint64_t len,
	       struct ctl_reply *rep)
{
	struct order_client_stats cs = { 0 };
	struct order_plan plan = { 0 };
	struct order_stats os = { 0 };
	uint64_t files, staged;
	bool added = false;
	int err;

	if (d->order)
		order_get_stats(d->order, &os);
	if (!os.window) {
		ctl_reply_refuse(
			rep, "epoch order off (mounted with order_window=0)");
		return;
	}
	order_clients_reap(d, oc); /* a pid of one that ended is free */
	if (who->pid) {
		err = len ? client_get(oc, who, &added) : 0;
		if (err) {
			ctl_reply_refuse(
				rep, "%s",
				err == -ESRCH ?
					"no such process (PID START names none running)" :
					why_refused(err));
			return;
		}
	}
	if (!build(d, body, len, &plan, rep)) {
		order_plan_release(&plan);
		if (added)
			client_forget(oc, who->pid);
		return;
	}
	files = plan.items;
	staged = plan.staged;
	err = order_plan_set(d->order, (uint64_t)who->pid, &plan);
	if (err) {
		ctl_reply_refuse(rep, "%s", why_refused(err));
		if (added)
			client_forget(oc, who->pid);
		return;
	}
	if (!len) {
		/* Cleared: the process is not watched any more. */
		client_forget(oc, who->pid);
		return;
	}
	/* This client's ranges; those that files share are read once. */
	order_get_stats(d->order, &os);
	order_get_client(d->order, (uint64_t)who->pid, &cs);
	log_info("epoch order of %s%.0d: %llu files, %llu bytes to read ahead "
		 "(%llu staged); %llu orders held",
		 who->pid ? "pid " : "the mount", (int)who->pid,
		 (unsigned long long)files, (unsigned long long)cs.planned,
		 (unsigned long long)staged, (unsigned long long)os.clients);
	rep->order.files = files;
	rep->order.bytes = cs.planned;
	rep->order.staged = staged;
	rep->order.window = os.window;
}

void order_stats_json(struct sqcd *d, struct json_buf *b)
{
	struct order_client_stats *cs = NULL;
	struct order_stats os = { 0 };
	size_t n = 0;

	if (d->order) {
		order_get_stats(d->order, &os);
		cs = calloc(ORDER_CLIENTS_SHOWN, sizeof(*cs));
		if (cs)
			n = order_get_clients(d->order, cs,
					      ORDER_CLIENTS_SHOWN);
	}
	json_buf_printf(
		b,
		"\"order\":{\"window\":%llu,\"held\":%llu,\"held_max\":%llu,"
		"\"orders\":%llu,\"clients\":%llu,\"files\":%llu,"
		"\"ranges\":%llu,\"planned\":%llu,\"plans\":%llu,"
		"\"plans_max\":%llu,\"plans_budget\":%llu,\"refused\":%llu,"
		"\"read\":%llu,\"served\":%llu,"
		"\"hits\":%llu,\"skipped\":%llu,\"waits\":%llu,"
		"\"by_readers\":%llu,"
		"\"dropped_unread\":%llu,\"errors\":%llu,\"threads\":%u,"
		"\"by_client\":[",
		(unsigned long long)os.window, (unsigned long long)os.held,
		(unsigned long long)os.held_max, (unsigned long long)os.orders,
		(unsigned long long)os.clients, (unsigned long long)os.items,
		(unsigned long long)os.ranges, (unsigned long long)os.planned,
		(unsigned long long)os.plans, (unsigned long long)os.plans_max,
		(unsigned long long)os.plans_budget,
		(unsigned long long)os.refused, (unsigned long long)os.read,
		(unsigned long long)os.served, (unsigned long long)os.hits,
		(unsigned long long)os.skipped, (unsigned long long)os.waits,
		(unsigned long long)os.by_readers,
		(unsigned long long)os.dropped_unread,
		(unsigned long long)os.errors, os.threads);
	for (size_t i = 0; cs && i < MIN(n, (size_t)ORDER_CLIENTS_SHOWN); i++)
		json_buf_printf(
			b,
			"%s{\"pid\":%llu,\"orders\":%llu,\"files\":%llu,"
			"\"at\":%llu,\"ranges\":%llu,\"planned\":%llu,"
			"\"taken\":%llu,\"ahead\":%llu,\"plans\":%llu}",
			i ? "," : "", (unsigned long long)cs[i].client,
			(unsigned long long)cs[i].orders,
			(unsigned long long)cs[i].items,
			(unsigned long long)cs[i].at,
			(unsigned long long)cs[i].ranges,
			(unsigned long long)cs[i].planned,
			(unsigned long long)cs[i].taken,
			(unsigned long long)cs[i].ahead,
			(unsigned long long)cs[i].plans);
	json_buf_printf(b, "]},");
	free(cs);
}

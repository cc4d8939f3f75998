// SPDX-License-Identifier: MIT
/*
 * This file implements finding the daemon of a mount (ctl.h): asking at
 * its default address and, when that is taken, pinging the fallback
 * addresses in /proc/net/unix for the one whose server runs as the mount's
 * owner and names the mount.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/ctl_i.h"

static const struct ctl_body no_body = { NULL, 0 };

struct find_arg {
	const char *canonical; /* the mount path a daemon must name */
	uid_t want_uid; /* the uid it must run as */
	long long deadline; /* ms, monotonic */
	bool wait; /* wait for room in a full listen queue */
	bool busy; /* a listen queue was full */
	bool slow; /* a daemon of the right uid did not answer in time */
	bool refused; /* @buf holds one that would not answer us */
	char *buf; /* the address found */
	size_t cap; /* its capacity */
	char ping[CTL_REQ_MAX]; /* the ping request's line */
	struct ctl_reply rep; /* scratch: a ping's reply */
};

static int find_one(const char *addr, void *arg)
{
	struct find_arg *a = arg;
	char *reply;
	int err;

	if (strlen(addr) >= a->cap)
		return 0;
	err = ctl__request_at(addr, a->ping, &no_body, a->want_uid, &reply,
			      a->wait ? a->deadline : 0, a->deadline);
	if (err == -EAGAIN)
		a->busy = true;
	if (err == -ETIMEDOUT)
		a->slow = true;
	/* -EPERM: another user's; -ECONNREFUSED: gone; -EPROTO: not ours. */
	if (err)
		return 0;
	err = ctl_reply_decode(CTL_CMD_PING, reply, &a->rep);
	free(reply);
	if (err)
		return 0; /* not ours */
	if (!a->rep.ok) {
		/* A daemon of the right uid that answers only its owner and
		 * root: it cannot show us its mount point, and it will refuse
		 * the real command just as well.  Keep it in case there is
		 * no better one. */
		if (!a->refused)
			strcpy(a->buf, addr);
		a->refused = true;
		return 0;
	}
	if (strcmp(a->rep.ping.mountpoint, a->canonical))
		return 0;
	strcpy(a->buf, addr);
	return 1;
}

int ctl_find_fallback(FILE *table, const char *canonical, uid_t want_uid,
		      char *buf, size_t cap, int timeout_ms)
{
	struct find_arg *a;
	int err;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->canonical = canonical;
	a->want_uid = want_uid;
	a->deadline = ctl__now_ms() + timeout_ms;
	a->buf = buf;
	a->cap = cap;
	err = ctl_req_encode(&(struct ctl_req){ .cmd = CTL_CMD_PING }, a->ping,
			     sizeof(a->ping));
	if (err) {
		free(a);
		return err;
	}
	/* First without waiting on full listen queues, which may be a
	 * squatter's; then, if nothing answered, waiting on them. */
	err = ctl_fallback_names(table, canonical, find_one, a);
	if (!err && a->busy) {
		a->wait = true;
		rewind(table);
		err = ctl_fallback_names(table, canonical, find_one, a);
	}
	if (err > 0 || (!err && a->refused))
		err = 0;
	else if (!err)
		err = a->slow || a->busy ? -ETIMEDOUT : -ENOENT;
	free(a);
	return err;
}

/* Does @err from the default address mean "the daemon is not there"? */
static bool is_elsewhere(int err)
{
	return err == -ECONNREFUSED || err == -ENOENT || err == -EPERM ||
	       err == -EAGAIN;
}

/* ctl_request_mount() with a body. */
static int request_mount(const char *canonical, const char *cmd,
			 const struct ctl_body *body, uid_t want_uid,
			 char **reply, int timeout_ms)
{
	long long deadline = ctl__now_ms() + timeout_ms;
	char addr[CTL_PATH_MAX];
	FILE *table;
	int err, found;

	*reply = NULL;
	err = ctl_default_address(canonical, addr, sizeof(addr));
	if (err)
		return err;
	/* Not waiting for room in the queue: a full one may be a
	 * squatter's, and then the daemon is elsewhere. */
	err = ctl__request_at(addr, cmd, body, want_uid, reply, 0, deadline);
	if (!is_elsewhere(err))
		return err;
	table = fopen("/proc/net/unix", "re");
	if (table) {
		found = ctl_find_fallback(table, canonical, want_uid, addr,
					  sizeof(addr),
					  (int)(deadline - ctl__now_ms()));
		fclose(table);
	} else {
		found = -errno;
		if (found == -ENOENT)
			found = -EIO; /* not "nowhere": we could not look */
	}
	if (!found) {
		err = ctl__request_at(addr, cmd, body, want_uid, reply,
				      deadline, deadline);
	} else if (err == -EAGAIN) {
		/* Not elsewhere: the default's queue may be ours, and busy. */
		err = ctl_default_address(canonical, addr, sizeof(addr));
		if (!err)
			err = ctl__request_at(addr, cmd, body, want_uid, reply,
					      deadline, deadline);
	} else if (found == -ETIMEDOUT) {
		err = found;
	} else if (found == -ENOENT && err == -EPERM) {
		/* Another user holds the default address and no daemon of
		 * the mount's answers anywhere: as stale as nobody. */
		err = -ECONNREFUSED;
	}
	return err == -EAGAIN ? -ETIMEDOUT : err;
}

int ctl_request_mount(const char *canonical, const char *cmd, uid_t want_uid,
		      char **reply, int timeout_ms)
{
	return request_mount(canonical, cmd, &no_body, want_uid, reply,
			     timeout_ms);
}

int ctl_request_mount_body(const char *canonical, const char *cmd,
			   const void *body, size_t len, uid_t want_uid,
			   char **reply, int timeout_ms)
{
	const struct ctl_body b = { body, len };

	return request_mount(canonical, cmd, &b, want_uid, reply, timeout_ms);
}

// SPDX-License-Identifier: MIT
/*
 * This file implements how mountctl finds mounts and their daemons: the
 * mount table (/proc/self/mountinfo), the control requests through
 * lib/ctl, what their errors mean to a user, and whether a process
 * still runs, which the waiting verbs ask.
 *
 * The mount table, not stat(), tells whether a path is mounted: stat() on
 * a FUSE mount whose daemon hangs would hang too, and on a stale one it
 * fails with ENOTCONN.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "mountctl.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/mountinfo.h"

/* The user_id= value in a comma-separated option list. */
static uid_t opt_uid(const char *opts, size_t len)
{
	const char *p = opts, *end = opts + len;

	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);

		if (n > 8 && !memcmp(p, "user_id=", 8)) {
			char num[24];

			if (n - 8 >= sizeof(num))
				break;
			memcpy(num, p + 8, n - 8);
			num[n - 8] = '\0';
			return (uid_t)strtoul(num, NULL, 10);
		}
		p += n + 1;
	}
	return (uid_t)-1;
}

/* Copy @src into @dst of @cap bytes; -ENAMETOOLONG if it does not fit. */
static int copy_field(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

struct scan_arg {
	int (*fn)(const struct mc_mount *m, void *arg);
	void *arg;
	struct mc_mount *m;
};

static int scan_one(const struct mountinfo_entry *e, void *arg)
{
	struct scan_arg *a = arg;
	struct mc_mount *m = a->m;

	/* A field too long for struct mc_mount is not one of ours: skip. */
	if (copy_field(m->path, sizeof(m->path), e->mountpoint) ||
	    copy_field(m->fstype, sizeof(m->fstype), e->fstype) ||
	    copy_field(m->source, sizeof(m->source), e->source))
		return 0;
	m->uid = opt_uid(e->super_opts, strlen(e->super_opts));
	m->is_sqc = !strcmp(m->fstype, CTL_FSTYPE);
	return a->fn(m, a->arg);
}

/* Call @fn for each mount; stops early when it returns non-zero. */
static int scan(int (*fn)(const struct mc_mount *m, void *arg), void *arg)
{
	struct scan_arg a = { .fn = fn, .arg = arg };
	int err;

	a.m = malloc(sizeof(*a.m));
	if (!a.m)
		return -ENOMEM;
	err = mountinfo_foreach(scan_one, &a);
	free(a.m);
	return err > 0 ? 0 : err;
}

struct find_arg {
	const char *path;
	struct mc_mount *out;
	bool found;
};

static int find_one(const struct mc_mount *m, void *arg)
{
	struct find_arg *a = arg;

	/* Keep going: the last match is the top of a stack of mounts. */
	if (!strcmp(m->path, a->path)) {
		*a->out = *m;
		a->found = true;
	}
	return 0;
}

int mc_mount_find(const char *path, struct mc_mount *out)
{
	struct find_arg a = { .path = path, .out = out };
	int err;

	err = scan(find_one, &a);
	if (err)
		return err;
	return a.found ? 0 : -ENOENT;
}

struct list_arg {
	struct mc_mount *v;
	size_t n;
	size_t cap;
};

static int list_one(const struct mc_mount *m, void *arg)
{
	struct list_arg *a = arg;

	if (!m->is_sqc)
		return 0;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 4;
		struct mc_mount *v = reallocarray(a->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = *m;
	return 0;
}

int mc_mount_list(struct mc_mount **out, size_t *n)
{
	struct list_arg a = { 0 };
	int err;

	err = scan(list_one, &a);
	if (err) {
		free(a.v);
		return err;
	}
	*out = a.v;
	*n = a.n;
	return 0;
}

int mc_resolve(const char *arg, char *path, struct mc_mount *m)
{
	int err;

	err = ctl_canonical_mountpoint(arg, path, PATH_MAX);
	if (err)
		return err;
	err = mc_mount_find(path, m);
	if (err)
		return err;
	return m->is_sqc ? 0 : -EMEDIUMTYPE;
}

int mc_resolve_arg(const char *arg, char *path, struct mc_mount *m)
{
	int err = mc_resolve(arg, path, m);

	if (err == -ENOENT || err == -EMEDIUMTYPE)
		mc_err("'%s' is not a squashcache mount (see mountctl status)",
		       arg);
	else if (err)
		mc_err("cannot resolve mountpoint '%s': %s", arg, err_str(err));
	return err;
}

int mc_request(const struct mc_mount *m, const struct ctl_req *req,
	       struct ctl_reply *rep, char **json)
{
	return mc_request_body(m, req, NULL, 0, rep, json, MC_CTL_TIMEOUT_MS);
}

int mc_request_body(const struct mc_mount *m, const struct ctl_req *req,
		    const void *body, size_t len, struct ctl_reply *rep,
		    char **json, int timeout_ms)
{
	char line[CTL_REQ_MAX], *reply = NULL;
	int err;

	memset(rep, 0, sizeof(*rep));
	if (json)
		*json = NULL;
	err = ctl_req_encode(req, line, sizeof(line));
	if (err)
		return err;
	/* At the default address, or where the daemon fell back to. */
	err = ctl_request_mount_body(m->path, line, body, len, m->uid, &reply,
				     timeout_ms);
	if (err)
		return err;
	err = ctl_reply_decode(req->cmd, reply, rep);
	if (!err && !rep->ok)
		err = strcmp(rep->error, "permission denied") ? -EBADMSG :
								-EACCES;
	if (!err && json)
		*json = reply;
	else
		free(reply);
	return err;
}

int mc_ping(const struct mc_mount *m, pid_t *pid)
{
	const struct ctl_req req = { .cmd = CTL_CMD_PING };
	struct ctl_reply *rep = malloc(sizeof(*rep));
	int err;

	if (!rep)
		return -ENOMEM;
	err = mc_request(m, &req, rep, NULL);
	if (!err && pid)
		*pid = rep->ping.pid;
	free(rep);
	return err;
}

bool mc_is_stale(int err)
{
	return err == -ECONNREFUSED || err == -ENOENT;
}

const char *mc_explain(const struct mc_mount *m, int err, bool hint, char *buf,
		       size_t cap)
{
	if (mc_is_stale(err))
		snprintf(buf, cap,
			 "no daemon answers for '%s' (stale mount?)%s%s",
			 m->path, hint ? ": run mountctl umount " : "",
			 hint ? m->path : "");
	else if (err == -ETIMEDOUT)
		snprintf(
			buf, cap,
			"the daemon for '%s' does not answer within %d s (busy or hung?)%s%s",
			m->path, MC_CTL_TIMEOUT_MS / 1000,
			hint ? ": try again, or run mountctl umount " : "",
			hint ? m->path : "");
	else if (err == -EACCES)
		snprintf(
			buf, cap,
			"the daemon for '%s' answers only its owner (uid %u) and root",
			m->path, (unsigned int)m->uid);
	else if (err == -EPERM)
		snprintf(
			buf, cap,
			"the control socket of '%s' is held by a process of another user than the mount's owner (uid %u)",
			m->path, (unsigned int)m->uid);
	else if (err == -EPROTO || err == -EBADMSG)
		snprintf(
			buf, cap,
			"the daemon for '%s' %s (is it another squashcache version?)",
			m->path,
			err == -EPROTO ? "sent a reply mountctl cannot read" :
					 "refused the request");
	else
		snprintf(buf, cap, "cannot reach the daemon for '%s': %s",
			 m->path, err_str(err));
	return buf;
}

bool mc_is_running(pid_t pid)
{
	char path[64], buf[512], *paren;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT && errno != ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "pid (comm) S ...": a zombie has exited, it waits to be reaped. */
	paren = strrchr(buf, ')');
	if (!paren || paren[1] != ' ')
		return true;
	return paren[2] != 'Z' && paren[2] != 'X';
}

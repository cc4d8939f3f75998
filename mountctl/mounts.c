// SPDX-License-Identifier: MIT
/*
 * This file implements how mountctl finds the mount a MOUNTPOINT argument
 * names (the mount table of util/mountinfo.h) and asks its daemon (one
 * request of lib/ctl), what their errors mean to a user, and whether a
 * process still runs, which the waiting verbs ask.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "mountctl.h"
#include "util/err.h"
#include "util/mountinfo.h"

int mc_resolve(const char *arg, char *path, struct mountinfo_mount *m)
{
	int err;

	err = ctl_canonical_mountpoint(arg, path, PATH_MAX);
	if (err)
		return err;
	err = mountinfo_find(path, m);
	if (err)
		return err;
	return ctl_is_sqc_mount(m) ? 0 : -EMEDIUMTYPE;
}

int mc_resolve_arg(const char *arg, char *path, struct mountinfo_mount *m)
{
	int err = mc_resolve(arg, path, m);

	if (err == -ENOENT || err == -EMEDIUMTYPE)
		mc_err("'%s' is not a squashcache mount (see mountctl status)",
		       arg);
	else if (err)
		mc_err("cannot resolve mountpoint '%s': %s", arg, err_str(err));
	return err;
}

int mc_request(const struct mountinfo_mount *m, const struct ctl_req *req,
	       struct ctl_reply *rep, char **json)
{
	return ctl_call_mount(m, req, NULL, 0, rep, json, CTL_TIMEOUT_MS);
}

const char *mc_explain(const struct mountinfo_mount *m, int err, bool hint,
		       char *buf, size_t cap)
{
	if (ctl_is_stale(err))
		snprintf(buf, cap,
			 "no daemon answers for '%s' (stale mount?)%s%s",
			 m->path, hint ? ": run mountctl umount " : "",
			 hint ? m->path : "");
	else if (err == -ETIMEDOUT)
		snprintf(
			buf, cap,
			"the daemon for '%s' does not answer within %d s (busy or hung?)%s%s",
			m->path, CTL_TIMEOUT_MS / 1000,
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

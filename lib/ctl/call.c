// SPDX-License-Identifier: MIT
/*
 * This file implements one request to the daemon of a mount as the mount
 * table shows it (ctl.h): its line encoded, asked at the mount's default
 * or fallback address as its owner's, the reply decoded and a refusal
 * told apart; and what an error of it means.  mountctl and the Slurm
 * node side both ask daemons this way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

bool ctl_is_sqc_mount(const struct mountinfo_mount *m)
{
	return !strcmp(m->fstype, CTL_FSTYPE);
}

int ctl_call_mount(const struct mountinfo_mount *m, const struct ctl_req *req,
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

int ctl_ping_mount(const struct mountinfo_mount *m, int timeout_ms, pid_t *pid)
{
	const struct ctl_req req = { .cmd = CTL_CMD_PING };
	struct ctl_reply *rep = malloc(sizeof(*rep));
	int err;

	if (!rep)
		return -ENOMEM;
	err = ctl_call_mount(m, &req, NULL, 0, rep, NULL, timeout_ms);
	if (!err && pid)
		*pid = rep->ping.pid;
	free(rep);
	return err;
}

bool ctl_is_stale(int err)
{
	return err == -ECONNREFUSED || err == -ENOENT;
}

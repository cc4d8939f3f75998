// SPDX-License-Identifier: MIT
/*
 * This file implements mountctl's side of the keeper (lib/keep): one
 * request that is answered DONE (forget, evict), and listing the copies
 * the keeper holds for the caller.
 */
#include <errno.h>
#include <unistd.h>

#include "keep/keep.h"
#include "mountctl.h"

int mc_keep_ask(const char *path, int op, const char *name, uint64_t a,
		uint64_t *out)
{
	struct keep_msg m = { .op = (uint32_t)op, .a = a };
	int s, fd, err;

	if (name)
		snprintf(m.name, sizeof(m.name), "%s", name);
	err = keep_connect(path ? path : KEEP_SOCKET, &s);
	if (err)
		return err;
	err = keep_send(s, &m, -1);
	if (!err)
		err = keep_recv(s, &m, &fd);
	close(s);
	if (err)
		return err;
	if (fd >= 0)
		close(fd);
	if (m.op != KEEP_DONE)
		return -EPROTO;
	*out = m.a;
	return m.status;
}

int mc_keep_list(const char *path,
		 void (*fn)(void *arg, const struct keep_msg *e), void *arg)
{
	struct keep_msg m = { .op = KEEP_LIST };
	int s, fd, err;

	err = keep_connect(path ? path : KEEP_SOCKET, &s);
	if (err)
		return err;
	err = keep_send(s, &m, -1);
	while (!err) {
		err = keep_recv(s, &m, &fd);
		if (err)
			break;
		if (fd >= 0)
			close(fd);
		if (m.op != KEEP_ENTRY) {
			err = m.op == KEEP_DONE ? m.status : -EPROTO;
			break;
		}
		fn(arg, &m);
	}
	close(s);
	return err;
}

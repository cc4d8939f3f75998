// SPDX-License-Identifier: MIT
/*
 * This file implements mountctl's side of the keeper (lib/keep): one
 * request that is answered DONE (forget, evict), and listing the copies
 * the keeper holds for the caller (mountctl status).
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "json/json.h"
#include "keep/keep.h"
#include "mountctl.h"
#include "util/size.h"

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

struct kept_out {
	struct json_buf *b;
	bool json;
	unsigned int n;
};

static void kept_one(void *arg, const struct keep_msg *e)
{
	struct kept_out *o = arg;
	char bytes[32], done[32], when[32];
	time_t t = (time_t)e->c;
	struct tm tm;

	if (o->json) {
		json_buf_printf(o->b,
				"%s\n{\"uid\":%u,\"image\":", o->n ? "," : "",
				e->uid);
		json_buf_str(o->b, e->name);
		json_buf_printf(o->b,
				",\"bytes\":%llu,\"complete_bytes\":%llu,"
				"\"last_use\":%llu,\"in_use\":%s}",
				(unsigned long long)e->a,
				(unsigned long long)e->b,
				(unsigned long long)e->c,
				e->in_use ? "true" : "false");
	} else {
		strftime(when, sizeof(when), "%F %T", localtime_r(&t, &tm));
		json_buf_printf(
			o->b,
			"%-11s %s\n%-11s uid %u, %s (%s complete), %s %s\n",
			"kept", e->name, "", e->uid,
			size_format(e->a, bytes, sizeof(bytes)),
			size_format(e->b, done, sizeof(done)),
			e->in_use ? "in use since" : "last used", when);
	}
	o->n++;
}

int mc_kept_print(const char *path, bool json, struct json_buf *b)
{
	struct kept_out o = { b, json, 0 };
	size_t len = b->len;
	int err;

	if (json)
		json_buf_printf(b, "[");
	err = mc_keep_list(path, kept_one, &o);
	if (err) {
		b->len = len; /* print nothing of it */
		return err;
	}
	if (json)
		json_buf_printf(b, "%s]\n", o.n ? "\n" : "");
	else if (!o.n)
		json_buf_printf(b, "%-11s none\n", "kept");
	return 0;
}

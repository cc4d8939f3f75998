// SPDX-License-Identifier: MIT
/*
 * This file implements printing the copies the keeper holds for the
 * caller (mountctl status --kept), through lib/keep's client.
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "json/json.h"
#include "keep/keep.h"
#include "mountctl.h"
#include "util/size.h"

struct kept_out {
	struct json_buf *b;
	bool json;
	unsigned int n;
};

static void kept_one(void *arg, const struct keep_msg *e)
{
	struct kept_out *o = arg;
	char bytes[32], done[32], range[32], when[32], name[KEEP_NAME_MAX];
	bool used = e->flags & KEEP_F_USED;
	time_t t = (time_t)e->c;
	struct tm tm;

	/* The name is the user's (their daemon gave it). */
	keep_name_print(name, e->name);
	if (o->json) {
		json_buf_printf(o->b,
				"%s\n{\"uid\":%u,\"image\":", o->n ? "," : "",
				e->uid);
		json_buf_str(o->b, name);
		json_buf_printf(
			o->b,
			",\"bytes\":%llu,\"range_bytes\":%llu,"
			"\"complete_bytes\":%llu,\"last_use\":%llu,"
			"\"in_use\":%s,\"connections\":%u,\"partial\":%s,"
			"\"inconsistent\":%s}",
			(unsigned long long)e->a, (unsigned long long)e->d,
			(unsigned long long)e->b, (unsigned long long)e->c,
			used ? "true" : "false", e->in_use,
			e->flags & KEEP_F_PARTIAL ? "true" : "false",
			e->flags & KEEP_F_INCONSISTENT ? "true" : "false");
	} else {
		strftime(when, sizeof(when), "%F %T", localtime_r(&t, &tm));
		json_buf_printf(
			o->b,
			"%-11s %s\n%-11s uid %u, %s in memory, %s of %s complete%s, %s %s\n",
			"kept", name, "", e->uid,
			size_format(e->a, bytes, sizeof(bytes)),
			size_format(e->b, done, sizeof(done)),
			size_format(e->d, range, sizeof(range)),
			e->flags & KEEP_F_INCONSISTENT ? " (inconsistent)" : "",
			used ? "in use since" : "last used", when);
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
	err = keep_list(path, KEEP_BUDGET_MS, kept_one, &o);
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

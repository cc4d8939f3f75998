// SPDX-License-Identifier: MIT
/*
 * This file implements printing the copies the keeper holds for the
 * caller (mountctl status --kept), through lib/keep's client.
 */
#include <errno.h>
#include <pwd.h>
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
	bool users_open; /* JSON: a site copy's "users" list is open */
	unsigned int nusers; /* and holds this many */
};

/* Close the JSON object of the last entry, if a site copy's. */
static void close_users(struct kept_out *o)
{
	if (o->users_open)
		json_buf_printf(o->b, "]}");
	o->users_open = false;
}

/* One user of the site copy listed last. */
static void kept_user(struct kept_out *o, const struct keep_msg *e)
{
	struct passwd *pw = getpwuid(e->uid);
	bool used = e->flags & KEEP_F_USED;

	if (o->json) {
		if (!o->users_open)
			return;
		json_buf_printf(o->b, "%s{\"uid\":%u,\"user\":",
				o->nusers++ ? "," : "", e->uid);
		if (pw)
			json_buf_str(o->b, pw->pw_name);
		else
			json_buf_printf(o->b, "null");
		json_buf_printf(o->b, ",\"connections\":%u,\"in_use\":%s}",
				e->in_use, used ? "true" : "false");
		return;
	}
	json_buf_printf(o->b, "%-11s used by %s (uid %u): %u mount%s%s\n", "",
			pw ? pw->pw_name : "?", e->uid, e->in_use,
			e->in_use == 1 ? "" : "s", used ? ", in use" : "");
}

static void kept_one(void *arg, const struct keep_msg *e)
{
	struct kept_out *o = arg;
	char bytes[32], done[32], range[32], when[32], name[KEEP_NAME_MAX];
	bool used = e->flags & KEEP_F_USED, site = e->flags & KEEP_F_SITE;
	time_t t = (time_t)e->c;
	struct tm tm;

	if (e->op == KEEP_USER) {
		kept_user(o, e);
		return;
	}
	close_users(o);
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
			"\"inconsistent\":%s,\"site\":%s",
			(unsigned long long)e->a, (unsigned long long)e->d,
			(unsigned long long)e->b, (unsigned long long)e->c,
			used ? "true" : "false", e->in_use,
			e->flags & KEEP_F_PARTIAL ? "true" : "false",
			e->flags & KEEP_F_INCONSISTENT ? "true" : "false",
			site ? "true" : "false");
		if (site) {
			json_buf_printf(o->b, ",\"staging\":%s,\"users\":[",
					e->flags & KEEP_F_STAGING ? "true" :
								    "false");
			o->users_open = true;
			o->nusers = 0;
		} else {
			json_buf_printf(o->b, "}");
		}
	} else if (site) {
		strftime(when, sizeof(when), "%F %T", localtime_r(&t, &tm));
		json_buf_printf(
			o->b,
			"%-11s %s\n%-11s the site's, for all its readers: %s in memory, %s of %s complete%s, %s, %s %s\n",
			"kept", name, "",
			size_format(e->a, bytes, sizeof(bytes)),
			size_format(e->b, done, sizeof(done)),
			size_format(e->d, range, sizeof(range)),
			e->flags & KEEP_F_INCONSISTENT ? " (inconsistent)" : "",
			e->flags & KEEP_F_STAGING ? "staging" : "staged",
			used ? "in use since" : "last used", when);
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
	struct kept_out o = { .b = b, .json = json };
	size_t len = b->len;
	int err;

	if (json)
		json_buf_printf(b, "[");
	err = keep_list(path, KEEP_BUDGET_MS, kept_one, &o);
	close_users(&o);
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

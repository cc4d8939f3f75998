// SPDX-License-Identifier: MIT
/*
 * This file implements the messages of the control protocol (ctl.h): the
 * request lines and the JSON replies, encoded from and decoded into their
 * structs, so that the daemon and its clients share one definition.
 *
 * Requests are decoded strictly (a line that encodes differently is
 * refused but for defaults: "stage" is "stage full", a budget of 0 is no
 * budget).  Replies are read with the JSON scanner of lib/json; the fields
 * of stats are each optional, as clients of any version must read
 * daemons of any version.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"
#include "json/json.h"
#include "util/compiler.h"

#define WORDS_MAX 5 /* a command and its arguments, plus one too many */

/* One command: its name, how many arguments it takes, its usage. */
struct cmd_desc {
	const char *name; /* first word of the line */
	unsigned int min_args; /* arguments it needs */
	unsigned int max_args; /* arguments it takes */
	const char *usage; /* ctl_req_usage() */
};

static const struct cmd_desc cmds[CTL_CMD_COUNT] = {
	[CTL_CMD_PING] = { "ping", 0, 0, "usage: ping" },
	[CTL_CMD_STATS] = { "stats", 0, 0, "usage: stats" },
	[CTL_CMD_STAGE] = { "stage", 0, 2, "usage: stage [full|meta] [BYTES]" },
	[CTL_CMD_UMOUNT] = { "umount", 0, 0, "usage: umount" },
	[CTL_CMD_HOLD] = { "hold", 2, 2, "usage: hold PID START" },
	[CTL_CMD_RELEASE] = { "release", 1, 1, "usage: release PID" },
	[CTL_CMD_ORDER] = { "order", 1, 3,
			    "usage: order BYTES [PID START] (then the body)" },
};

static const char *const mode_names[] = {
	[CTL_STAGE_FULL] = "full",
	[CTL_STAGE_META] = "meta",
};

/* A word of a line: where it starts and how long it is. */
struct word {
	const char *p; /* first byte */
	size_t len; /* bytes, > 0 */
};

/* Split @line at single spaces.  Return: the number of words, or -1 if
 * a word is empty (leading, trailing or double space) or there are more
 * than WORDS_MAX. */
static int split(const char *line, struct word *w)
{
	const char *p = line;
	int n = 0;

	for (;;) {
		size_t len = strcspn(p, " ");

		if (!len || n == WORDS_MAX)
			return -1;
		w[n].p = p;
		w[n++].len = len;
		p += len;
		if (!*p)
			return n;
		p++;
	}
}

static bool word_is(const struct word *w, const char *s)
{
	return w->len == strlen(s) && !memcmp(w->p, s, w->len);
}

/* A decimal number without sign or leading zeros, at most @max. */
static int parse_num(const struct word *w, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (w->len > 1 && w->p[0] == '0')
		return -EINVAL;
	for (size_t i = 0; i < w->len; i++) {
		unsigned int d = (unsigned char)w->p[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_pid(const struct word *w, pid_t *out)
{
	uint64_t v;
	int err = parse_num(w, CTL_PID_MAX, &v);

	if (!err && !v)
		err = -EINVAL;
	if (!err)
		*out = (pid_t)v;
	return err;
}

/* "stage [full|meta] [BYTES]": @w are the arguments. */
static int parse_stage(const struct word *w, int n, struct ctl_req_stage *s)
{
	s->mode = CTL_STAGE_FULL;
	s->budget = 0;
	if (n && word_is(w, "meta")) {
		s->mode = CTL_STAGE_META;
		w++, n--;
	} else if (n && word_is(w, "full")) {
		w++, n--;
	}
	if (n > 1)
		return -EINVAL;
	return n ? parse_num(w, UINT64_MAX, &s->budget) : 0;
}

/* The command named by the first word of @line, or CTL_CMD_COUNT. */
static enum ctl_cmd lookup(const struct word *w)
{
	for (int c = 0; c < CTL_CMD_COUNT; c++)
		if (word_is(w, cmds[c].name))
			return (enum ctl_cmd)c;
	return CTL_CMD_COUNT;
}

int ctl_req_decode(const char *line, struct ctl_req *req)
{
	struct word w[WORDS_MAX] = { { line, strcspn(line, " ") } };
	struct ctl_req r = { 0 };
	int n, args, err = 0;

	r.cmd = w[0].len ? lookup(&w[0]) : CTL_CMD_COUNT;
	if (r.cmd == CTL_CMD_COUNT)
		return -EPROTO;
	n = split(line, w);
	args = n - 1;
	if (n < 1 || (unsigned int)args < cmds[r.cmd].min_args ||
	    (unsigned int)args > cmds[r.cmd].max_args)
		return -EINVAL;
	if (r.cmd == CTL_CMD_STAGE) {
		err = parse_stage(w + 1, args, &r.stage);
	} else if (r.cmd == CTL_CMD_HOLD) {
		err = parse_pid(&w[1], &r.hold.pid);
		if (!err)
			err = parse_num(&w[2], UINT64_MAX, &r.hold.start);
	} else if (r.cmd == CTL_CMD_RELEASE) {
		err = parse_pid(&w[1], &r.release.pid);
	} else if (r.cmd == CTL_CMD_ORDER) {
		err = parse_num(&w[1], CTL_ORDER_MAX, &r.order.bytes);
		if (!err && args == 2)
			err = -EINVAL; /* a PID without its START */
		if (!err && args == 3)
			err = parse_pid(&w[2], &r.order.pid);
		if (!err && args == 3)
			err = parse_num(&w[3], UINT64_MAX, &r.order.start);
	}
	if (err)
		return err;
	*req = r;
	return 0;
}

const char *ctl_req_usage(const char *line)
{
	struct word w = { line, strcspn(line, " ") };
	enum ctl_cmd c = w.len ? lookup(&w) : CTL_CMD_COUNT;

	return c == CTL_CMD_COUNT ? NULL : cmds[c].usage;
}

static bool is_pid(pid_t pid)
{
	return pid > 0 && pid <= CTL_PID_MAX;
}

int ctl_req_encode(const struct ctl_req *req, char *buf, size_t cap)
{
	const char *name;
	int n;

	if ((unsigned int)req->cmd >= CTL_CMD_COUNT)
		return -EINVAL;
	name = cmds[req->cmd].name;
	switch (req->cmd) {
	case CTL_CMD_STAGE:
		if ((unsigned int)req->stage.mode >= ARRAY_SIZE(mode_names))
			return -EINVAL;
		n = req->stage.budget ?
			    snprintf(buf, cap, "%s %s %llu", name,
				     mode_names[req->stage.mode],
				     (unsigned long long)req->stage.budget) :
			    snprintf(buf, cap, "%s %s", name,
				     mode_names[req->stage.mode]);
		break;
	case CTL_CMD_HOLD:
		if (!is_pid(req->hold.pid))
			return -EINVAL;
		n = snprintf(buf, cap, "%s %d %llu", name, (int)req->hold.pid,
			     (unsigned long long)req->hold.start);
		break;
	case CTL_CMD_RELEASE:
		if (!is_pid(req->release.pid))
			return -EINVAL;
		n = snprintf(buf, cap, "%s %d", name, (int)req->release.pid);
		break;
	case CTL_CMD_ORDER:
		if (req->order.bytes > CTL_ORDER_MAX ||
		    (req->order.pid && !is_pid(req->order.pid)))
			return -EINVAL;
		n = req->order.pid ?
			    snprintf(buf, cap, "%s %llu %d %llu", name,
				     (unsigned long long)req->order.bytes,
				     (int)req->order.pid,
				     (unsigned long long)req->order.start) :
			    snprintf(buf, cap, "%s %llu", name,
				     (unsigned long long)req->order.bytes);
		break;
	default:
		n = snprintf(buf, cap, "%s", name);
	}
	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}

/* The ok answer of @rep, after {"ok":true. */
static int encode_answer(const struct ctl_reply *rep, struct json_buf *b)
{
	switch (rep->cmd) {
	case CTL_CMD_PING:
		if (!is_pid(rep->ping.pid))
			return -EINVAL;
		json_buf_printf(
			b, ",\"pid\":%d,\"mountpoint\":", (int)rep->ping.pid);
		json_buf_str(b, rep->ping.mountpoint);
		return 0;
	case CTL_CMD_HOLD:
	case CTL_CMD_RELEASE:
		json_buf_printf(b, ",\"holders\":%u", rep->holders.holders);
		return 0;
	case CTL_CMD_STAGE:
		if ((unsigned int)rep->stage.mode >= ARRAY_SIZE(mode_names))
			return -EINVAL;
		json_buf_printf(b, ",\"mode\":\"%s\",\"budget\":%llu",
				mode_names[rep->stage.mode],
				(unsigned long long)rep->stage.budget);
		return 0;
	case CTL_CMD_ORDER:
		json_buf_printf(
			b,
			",\"files\":%llu,\"bytes\":%llu,\"staged\":%llu,"
			"\"window\":%llu",
			(unsigned long long)rep->order.files,
			(unsigned long long)rep->order.bytes,
			(unsigned long long)rep->order.staged,
			(unsigned long long)rep->order.window);
		return 0;
	case CTL_CMD_UMOUNT:
		return 0;
	default:
		return -EINVAL; /* stats: the daemon builds it */
	}
}

void ctl_reply_refuse(struct ctl_reply *rep, const char *fmt, ...)
{
	va_list ap;

	rep->ok = false;
	va_start(ap, fmt);
	vsnprintf(rep->error, sizeof(rep->error), fmt, ap);
	va_end(ap);
}

int ctl_reply_encode(const struct ctl_reply *rep, struct json_buf *b)
{
	size_t len = b->len;
	int err = 0;

	if ((unsigned int)rep->cmd >= CTL_CMD_COUNT)
		return -EINVAL;
	if (!rep->ok) {
		json_buf_printf(b, "{\"ok\":false,\"error\":");
		json_buf_str(b, rep->error);
	} else {
		json_buf_printf(b, "{\"ok\":true");
		err = encode_answer(rep, b);
	}
	json_buf_printf(b, "}");
	if (err && !b->oom) {
		b->len = len; /* nothing half-written */
		b->p[len] = '\0';
	}
	if (err)
		return err;
	return b->oom ? -ENOMEM : 0;
}

/* The literal true or false at @path. */
static int get_bool(const char *json, const char *path, bool *out)
{
	const char *v;
	size_t len;
	int err = json_get(json, path, &v, &len);

	if (err)
		return err;
	if (len == 4 && !memcmp(v, "true", 4))
		*out = true;
	else if (len == 5 && !memcmp(v, "false", 5))
		*out = false;
	else
		return -EPROTO;
	return 0;
}

/* A number at @path, at most @max. */
static int get_num(const char *json, const char *path, uint64_t max,
		   uint64_t *out)
{
	int err = json_u64(json, path, out);

	if (!err && *out > max)
		err = -EPROTO;
	return err;
}

static int decode_mode(const char *json, enum ctl_stage_mode *mode)
{
	char s[8];
	int err = json_str(json, "mode", s, sizeof(s));

	if (err)
		return err;
	for (size_t i = 0; i < ARRAY_SIZE(mode_names); i++) {
		if (!strcmp(s, mode_names[i])) {
			*mode = (enum ctl_stage_mode)i;
			return 0;
		}
	}
	return -EPROTO;
}

/* How a stats field is read. */
enum field_kind {
	F_U64, /* uint64_t */
	F_DOUBLE, /* double */
	F_BOOL, /* bool */
	F_STR, /* char[size] */
};

/* One field of struct ctl_stats and where it is in the reply. */
struct field {
	const char *path; /* dotted path in the reply */
	enum field_kind kind; /* its type */
	size_t off; /* offsetof() in struct ctl_stats */
	size_t size; /* sizeof() the member */
};

#define FIELD(p, k, m)                                        \
	{                                                     \
		p, k, offsetof(struct ctl_stats, m),          \
			sizeof(((struct ctl_stats *)NULL)->m) \
	}

static const struct field stats_fields[] = {
	FIELD("pid", F_U64, pid),
	FIELD("uptime_s", F_DOUBLE, uptime_s),
	FIELD("mountpoint", F_STR, mountpoint),
	FIELD("image", F_STR, image),
	FIELD("compressor", F_STR, compressor),
	FIELD("block_size", F_U64, block_size),
	FIELD("inodes", F_U64, inodes),
	FIELD("holder_managed", F_BOOL, holder_managed),
	FIELD("stage.state", F_STR, stage_state),
	FIELD("stage.planned", F_U64, stage_planned),
	FIELD("stage.staged", F_U64, stage_staged),
	FIELD("stage.percent", F_DOUBLE, stage_percent),
	FIELD("stage.mb_per_s", F_DOUBLE, stage_mb_per_s),
	FIELD("stage.seconds", F_DOUBLE, stage_seconds),
	FIELD("stage.on_tmpfs", F_BOOL, stage_on_tmpfs),
	FIELD("image_io.bytes", F_U64, image_bytes),
	FIELD("image_io.corrupt", F_U64, image_corrupt),
	FIELD("image_io.read_errors", F_U64, image_read_errors),
	FIELD("cache.data.budget", F_U64, data.budget),
	FIELD("cache.data.bytes", F_U64, data.bytes),
	FIELD("cache.data.hits", F_U64, data.hits),
	FIELD("cache.data.misses", F_U64, data.misses),
	FIELD("cache.meta.budget", F_U64, meta.budget),
	FIELD("cache.meta.bytes", F_U64, meta.bytes),
	FIELD("cache.meta.hits", F_U64, meta.hits),
	FIELD("cache.meta.misses", F_U64, meta.misses),
	FIELD("fuse.bytes_served", F_U64, fuse_bytes_served),
	FIELD("fuse.read", F_U64, fuse_read),
	FIELD("fuse.eio", F_U64, fuse_eio),
	FIELD("fuse.uring_threads", F_U64, fuse_uring_threads),
	FIELD("fuse.uring_requests", F_U64, fuse_uring_requests),
	FIELD("warm.files", F_U64, warm_files),
	FIELD("warm.bytes", F_U64, warm_bytes),
	FIELD("warm.open_files", F_U64, warm_open_files),
	FIELD("warm.open_bytes", F_U64, warm_open_bytes),
	FIELD("statahead.all_state", F_STR, statahead_all_state),
	FIELD("statahead.all_entries", F_U64, statahead_all_entries),
	FIELD("statahead.all_dirs", F_U64, statahead_all_dirs),
	FIELD("statahead.entries", F_U64, statahead_entries),
	FIELD("statahead.dirs", F_U64, statahead_dirs),
	FIELD("process.rss_bytes", F_U64, rss_bytes),
};

/* Read one field into @st; leave it zero if absent or of another type. */
static void decode_field(const char *json, const struct field *f,
			 struct ctl_stats *st)
{
	char *p = (char *)st + f->off;

	switch (f->kind) {
	case F_U64:
		if (json_u64(json, f->path, (uint64_t *)(void *)p))
			memset(p, 0, f->size);
		break;
	case F_DOUBLE:
		if (json_double(json, f->path, (double *)(void *)p))
			memset(p, 0, f->size);
		break;
	case F_BOOL:
		if (get_bool(json, f->path, (bool *)(void *)p))
			memset(p, 0, f->size);
		break;
	case F_STR:
		if (json_str(json, f->path, p, f->size))
			memset(p, 0, f->size);
		break;
	}
}

/* "holders":[PID,...]: count them, keep the first CTL_HOLDERS_MAX. */
static void decode_holders(const char *json, struct ctl_stats *st)
{
	const char *v, *end;
	struct word w;
	uint64_t pid;
	size_t len;

	if (json_get(json, "holders", &v, &len) || *v != '[')
		return;
	end = v + len - 1; /* the ']' */
	for (const char *p = v + 1; p < end; p++) {
		if (*p < '0' || *p > '9' || (p[-1] >= '0' && p[-1] <= '9'))
			continue;
		w.p = p;
		w.len = strspn(p, "0123456789");
		if (parse_num(&w, CTL_PID_MAX, &pid) || !pid)
			continue;
		if (st->holders < CTL_HOLDERS_MAX)
			st->holder_pids[st->holders] = (pid_t)pid;
		st->holders++;
	}
}

static void decode_stats(const char *json, struct ctl_stats *st)
{
	for (size_t i = 0; i < ARRAY_SIZE(stats_fields); i++)
		decode_field(json, &stats_fields[i], st);
	decode_holders(json, st);
}

/* The fields of an ok answer but stats. */
static int decode_answer(const char *json, struct ctl_reply *rep)
{
	uint64_t v = 0;
	int err;

	switch (rep->cmd) {
	case CTL_CMD_PING:
		err = get_num(json, "pid", CTL_PID_MAX, &v);
		if (!err && !v)
			err = -EPROTO;
		rep->ping.pid = (pid_t)v;
		if (!err)
			err = json_str(json, "mountpoint", rep->ping.mountpoint,
				       sizeof(rep->ping.mountpoint));
		return err;
	case CTL_CMD_HOLD:
	case CTL_CMD_RELEASE:
		err = get_num(json, "holders", UINT_MAX, &v);
		rep->holders.holders = (unsigned int)v;
		return err;
	case CTL_CMD_STAGE:
		err = decode_mode(json, &rep->stage.mode);
		if (!err)
			err = json_u64(json, "budget", &rep->stage.budget);
		return err;
	case CTL_CMD_ORDER:
		err = json_u64(json, "files", &rep->order.files);
		if (!err)
			err = json_u64(json, "bytes", &rep->order.bytes);
		if (!err)
			err = json_u64(json, "staged", &rep->order.staged);
		if (!err)
			err = json_u64(json, "window", &rep->order.window);
		return err;
	default:
		return 0;
	}
}

int ctl_reply_decode(enum ctl_cmd cmd, const char *json, struct ctl_reply *rep)
{
	int err;

	memset(rep, 0, sizeof(*rep));
	if ((unsigned int)cmd >= CTL_CMD_COUNT)
		return -EINVAL;
	rep->cmd = cmd;
	err = get_bool(json, "ok", &rep->ok);
	if (!err && !rep->ok) {
		err = json_str(json, "error", rep->error, sizeof(rep->error));
		if (err == -ENOENT)
			err = 0;
	} else if (!err && cmd == CTL_CMD_STATS) {
		decode_stats(json, &rep->stats);
	} else if (!err) {
		err = decode_answer(json, rep);
	}
	if (err) {
		memset(rep, 0, sizeof(*rep));
		return err == -EINVAL ? -EINVAL : -EPROTO;
	}
	return 0;
}

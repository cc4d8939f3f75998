// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl status`: ask the daemon of each
 * squashcache mount for its stats and print them for people (one block
 * per mount) or as a JSON array of the daemons' stats objects.
 *
 * Without arguments it covers every squashcache mount of the mount table
 * that the caller may ask: the caller's own, or everybody's for root.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "keep/keep.h"
#include "mountctl.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/size.h"

#define LABEL "%-11s " /* the column of labels in the human output */
#define WATCH_MS 1000 /* --watch refresh interval */

struct out {
	bool json; /* --json */
	bool kept; /* --kept: the keeper's copies, not the mounts */
	const char *socket; /* --socket: the keeper's, or NULL */
	bool first; /* nothing printed yet */
	struct json_buf b; /* the output being built */
};

static void cache_line(struct json_buf *b, const char *label,
		       const struct ctl_stats_cache *c)
{
	char used[32], budget[32];

	json_buf_printf(b, LABEL "%s of %s", label,
			size_format(c->bytes, used, sizeof(used)),
			size_format(c->budget, budget, sizeof(budget)));
	if (c->hits + c->misses)
		json_buf_printf(b, ", hit rate %.1f%% (%llu hits, %llu misses)",
				100.0 * (double)c->hits /
					(double)(c->hits + c->misses),
				(unsigned long long)c->hits,
				(unsigned long long)c->misses);
	else
		json_buf_printf(b, ", not used yet");
	json_buf_printf(b, "\n");
}

/* "holders     2: pids 123,456 (unmounts after the last)". */
static void holders_line(struct json_buf *b, const struct ctl_stats *st)
{
	unsigned int n = MIN(st->holders, CTL_HOLDERS_MAX);

	if (!st->holders && !st->holder_managed)
		return;
	json_buf_printf(b, LABEL "%u: pids ", "holders", st->holders);
	for (unsigned int i = 0; i < n; i++)
		json_buf_printf(b, "%s%d", i ? "," : "",
				(int)st->holder_pids[i]);
	json_buf_printf(b, "%s%s\n", st->holders > n ? ",..." : "",
			st->holder_managed ?
				" (unmounts after the last)" :
				" (mounted with mountctl mount: stays)");
}

/* What the daemon adds to the page cache and the dentry cache. */
static void ahead_lines(struct json_buf *b, const struct ctl_stats *st)
{
	char s2[64];

	/* Pushed into the page cache: read later without a request. */
	if (st->warm_files)
		json_buf_printf(b, LABEL "%llu files, %s into the page cache\n",
				"warmed", (unsigned long long)st->warm_files,
				size_format(st->warm_bytes, s2, sizeof(s2)));
	if (st->warm_open_files)
		json_buf_printf(
			b, LABEL "%llu files as they were opened, %s\n",
			"pushed", (unsigned long long)st->warm_open_files,
			size_format(st->warm_open_bytes, s2, sizeof(s2)));
	if (*st->statahead_all_state && strcmp(st->statahead_all_state, "off"))
		json_buf_printf(b,
				LABEL "%s, %llu entries in %llu directories\n",
				"primed", st->statahead_all_state,
				(unsigned long long)st->statahead_all_entries,
				(unsigned long long)st->statahead_all_dirs);
	if (st->statahead_entries)
		json_buf_printf(b,
				LABEL "%llu directories, %llu entries ahead\n",
				"listed",
				(unsigned long long)st->statahead_dirs,
				(unsigned long long)st->statahead_entries);
}

/* @s, or "?" when the daemon did not say. */
static const char *or_unknown(const char *s)
{
	return *s ? s : "?";
}

static void print_human(struct json_buf *b, const struct ctl_stats *st)
{
	char s2[64], line[256];

	json_buf_printf(b, LABEL "%s\n", "mountpoint",
			or_unknown(st->mountpoint));
	json_buf_printf(b, LABEL "%s\n", "image", or_unknown(st->image));
	json_buf_printf(b, LABEL "%s, %llu KiB blocks, %s, %llu inodes\n",
			"format", or_unknown(st->compressor),
			(unsigned long long)st->block_size / 1024,
			size_format(st->image_bytes, s2, sizeof(s2)),
			(unsigned long long)st->inodes);
	json_buf_printf(b, LABEL "%s\n", "staging",
			mc_stage_line(st, line, sizeof(line)));
	cache_line(b, "data cache", &st->data);
	cache_line(b, "meta cache", &st->meta);
	json_buf_printf(b, LABEL "%s in %llu reads, %llu EIO\n", "served",
			size_format(st->fuse_bytes_served, s2, sizeof(s2)),
			(unsigned long long)st->fuse_read,
			(unsigned long long)st->fuse_eio);
	/* Where requests come from: io_uring queues, or /dev/fuse. */
	if (st->fuse_uring_threads)
		json_buf_printf(b,
				LABEL "io_uring, %llu threads, %llu requests\n",
				"requests",
				(unsigned long long)st->fuse_uring_threads,
				(unsigned long long)st->fuse_uring_requests);
	ahead_lines(b, st);
	if (st->image_corrupt || st->image_read_errors)
		json_buf_printf(
			b,
			LABEL
			"%llu corruption events, %llu image read errors (see the daemon's log)\n",
			"problems", (unsigned long long)st->image_corrupt,
			(unsigned long long)st->image_read_errors);
	holders_line(b, st);
	json_buf_printf(b, LABEL "pid %llu, up %s, RSS %s\n", "daemon",
			(unsigned long long)st->pid,
			mc_fmt_duration(st->uptime_s, line, sizeof(line)),
			size_format(st->rss_bytes, s2, sizeof(s2)));
}

/* One mount's entry: its stats, or why there are none. */
static void add_entry(struct out *o, const char *path, const char *image,
		      const char *stats, const struct ctl_stats *st,
		      const char *error)
{
	const char *v;

	if (o->json) {
		json_buf_printf(&o->b, "%s", o->first ? "\n" : ",\n");
		if (stats && *st->mountpoint) {
			json_buf_printf(&o->b, "%s", stats);
		} else if (stats) {
			/* Every daemon sends it today; add it if one does not. */
			json_buf_printf(&o->b, "{\"mountpoint\":");
			json_buf_str(&o->b, path);
			v = stats + strspn(stats, " \t") + 1;
			json_buf_printf(
				&o->b, "%s%s",
				*(v + strspn(v, " \t")) == '}' ? "" : ",", v);
		} else {
			struct stat sb;

			/* The contract's keys, for a daemon that is gone or
			 * does not answer. */
			json_buf_printf(&o->b, "{\"schema\":%d,\"mountpoint\":",
					CTL_SCHEMA);
			json_buf_str(&o->b, path);
			json_buf_printf(&o->b, ",\"image\":");
			if (image)
				json_buf_str(&o->b, image);
			else
				json_buf_printf(&o->b, "null");
			json_buf_printf(
				&o->b,
				",\"pid\":null,\"healthy\":false,"
				"\"image_bytes\":%llu,\"staged_bytes\":0,"
				"\"holders\":[],\"ok\":false,\"problem\":",
				image && !stat(image, &sb) ?
					(unsigned long long)sb.st_size :
					0ULL);
			json_buf_str(&o->b, error);
			json_buf_printf(&o->b, ",\"error\":");
			json_buf_str(&o->b, error);
			json_buf_printf(&o->b, "}");
		}
	} else {
		if (!o->first)
			json_buf_printf(&o->b, "\n");
		if (st) {
			print_human(&o->b, st);
		} else {
			json_buf_printf(&o->b, LABEL "%s\n", "mountpoint",
					path);
			if (image)
				json_buf_printf(&o->b, LABEL "%s\n", "image",
						image);
			json_buf_printf(&o->b, LABEL "%s\n", "error", error);
		}
	}
	o->first = false;
}

/* Ask one mount's daemon.  Return: true if it answered. */
static bool status_one(struct out *o, const struct mountinfo_mount *m)
{
	const struct ctl_req req = { .cmd = CTL_CMD_STATS };
	char why[PATH_MAX + 256];
	struct ctl_reply *rep;
	char *json;
	int err;

	rep = malloc(sizeof(*rep));
	if (!rep) {
		o->b.oom = true;
		return false;
	}
	err = mc_request(m, &req, rep, &json);
	if (err)
		add_entry(o, m->path, m->source, NULL, NULL,
			  mc_explain(m, err, !o->json, why, sizeof(why)));
	else
		add_entry(o, m->path, m->source, json, &rep->stats, NULL);
	free(json);
	free(rep);
	return !err;
}

/* One snapshot of @paths (all mounts if @n is 0).  Return: exit code. */
static int snapshot(struct out *o, char **paths, int n)
{
	char path[PATH_MAX], why[PATH_MAX + 64];
	struct mountinfo_mount *all, m;
	size_t count;
	bool all_ok = true;
	int err;

	o->first = true;
	json_buf_release(&o->b);
	if (o->json)
		json_buf_printf(&o->b, "[");
	if (!n) {
		err = mountinfo_list(CTL_FSTYPE, &all, &count);
		if (err) {
			mc_err("cannot read the mount table: %s", err_str(err));
			return MC_EXIT_FAIL;
		}
		for (size_t i = 0; i < count; i++) {
			if (geteuid() != 0 && all[i].uid != geteuid())
				continue;
			all_ok &= status_one(o, &all[i]);
		}
		free(all);
		if (o->first && !o->json)
			json_buf_printf(&o->b, "no squashcache mounts\n");
		/* And what a keeper holds for the caller, if one runs. */
		if (!o->json) {
			size_t len = o->b.len;

			json_buf_printf(&o->b, "\n");
			if (mc_kept_print(o->socket, false, &o->b))
				o->b.len = len;
		}
	}
	for (int i = 0; i < n; i++) {
		err = mc_resolve(paths[i], path, &m);
		if (!err) {
			all_ok &= status_one(o, &m);
			continue;
		}
		all_ok = false;
		if (err == -ENOENT || err == -EMEDIUMTYPE)
			snprintf(
				why, sizeof(why),
				"'%s' is not a squashcache mount (see mountctl status)",
				paths[i]);
		else
			snprintf(why, sizeof(why),
				 "cannot resolve mountpoint '%s': %s", paths[i],
				 err_str(err));
		mc_err("%s", why);
		if (o->json)
			add_entry(o, paths[i], NULL, NULL, NULL, why);
	}
	if (o->json)
		json_buf_printf(&o->b, "%s]\n", o->first ? "" : "\n");
	if (o->b.oom) {
		mc_err("out of memory");
		return MC_EXIT_FAIL;
	}
	if (o->b.len)
		fwrite(o->b.p, 1, o->b.len, stdout);
	fflush(stdout);
	return all_ok ? MC_EXIT_OK : MC_EXIT_FAIL;
}

/* --kept: the keeper's copies the caller may see.  Return: exit code. */
static int kept(struct out *o)
{
	int err = mc_kept_print(o->socket, o->json, &o->b);

	if (err == -ENOENT)
		mc_err("no keeper runs (see mountctl keeper)");
	else if (err == -ETIMEDOUT)
		mc_err("the keeper did not answer within %d s: it is stuck or stopped; its admin can restart it (squashcache-keeper.service, or kill it: the next job's Prolog starts one)",
		       KEEP_BUDGET_MS / 1000);
	else if (err)
		mc_err("cannot ask the keeper: %s", err_str(err));
	if (!err && o->b.len)
		fwrite(o->b.p, 1, o->b.len, stdout);
	json_buf_release(&o->b);
	return err ? MC_EXIT_FAIL : MC_EXIT_OK;
}

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "watch", no_argument, NULL, 'w' },
		{ "kept", no_argument, NULL, 'k' },
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct out o = { 0 };
	bool watch = false;
	int c, ret;

	while ((c = getopt_long(argc, argv, "jwks:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			o.kept = true;
			break;
		case 's':
			o.socket = optarg;
			break;
		case 'j':
			o.json = true;
			break;
		case 'w':
			watch = true;
			break;
		case 'h':
			mc_usage(&mc_cmd_status, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_status, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (o.kept)
		return kept(&o);
	for (;;) {
		if (watch && isatty(STDOUT_FILENO))
			fputs("\033[H\033[J", stdout);
		ret = snapshot(&o, argv + optind, argc - optind);
		if (!watch)
			break;
		sleep_ms(WATCH_MS);
	}
	json_buf_release(&o.b);
	return ret;
}

const struct mc_cmd mc_cmd_status = {
	.name = "status",
	.args = "[--json] [--watch] [MOUNTPOINT...] | --kept [--json] [--socket PATH]",
	.summary = "show staging, cache and traffic of squashcache mounts",
	.help = "\n"
		"Asks the daemon of each MOUNTPOINT, or of every squashcache mount\n"
		"(yours, or everybody's for root), for its stats.  Without\n"
		"MOUNTPOINT, the staged copies a keeper holds for you follow.\n"
		"\n"
		"  -j, --json         print a JSON array, one object per mount, with\n"
		"                     schema, mountpoint, image, pid, healthy,\n"
		"                     problem, image_bytes, staged_bytes and holders\n"
		"                     at top level (see mountctl(1)); a stale mount\n"
		"                     has healthy false and a problem\n"
		"  -w, --watch        print again every second until interrupted\n"
		"  -k, --kept         list the staged copies the keeper holds for\n"
		"                     you (root: everybody's) instead of mounts;\n"
		"                     with --json a JSON array of {uid, image, bytes,\n"
		"                     complete_bytes, last_use, in_use} (preview)\n"
		"  -s, --socket PATH  the keeper's socket (default\n"
		"                     /run/squashcache/keeper.sock)\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 every daemon answered, 1 otherwise, 2 usage error.\n",
	.run = run,
};

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
#include "mountctl.h"
#include "util/err.h"
#include "util/size.h"

#define LABEL "%-11s " /* the column of labels in the human output */
#define WATCH_MS 1000 /* --watch refresh interval */

struct out {
	bool json; /* --json */
	bool first; /* nothing printed yet */
	struct ctl_buf b; /* the output being built */
};

static void cache_line(struct ctl_buf *b, const char *label, const char *st,
		       const char *cache)
{
	char path[32], used[32], budget[32];
	uint64_t bytes, hits, misses;

	snprintf(path, sizeof(path), "cache.%s.bytes", cache);
	bytes = mc_json_u64(st, path);
	snprintf(path, sizeof(path), "cache.%s.budget", cache);
	size_format(mc_json_u64(st, path), budget, sizeof(budget));
	snprintf(path, sizeof(path), "cache.%s.hits", cache);
	hits = mc_json_u64(st, path);
	snprintf(path, sizeof(path), "cache.%s.misses", cache);
	misses = mc_json_u64(st, path);
	ctl_buf_printf(b, LABEL "%s of %s", label,
		       size_format(bytes, used, sizeof(used)), budget);
	if (hits + misses)
		ctl_buf_printf(b, ", hit rate %.1f%% (%llu hits, %llu misses)",
			       100.0 * (double)hits / (double)(hits + misses),
			       (unsigned long long)hits,
			       (unsigned long long)misses);
	else
		ctl_buf_printf(b, ", not used yet");
	ctl_buf_printf(b, "\n");
}

/* "holders     2: pids 123 456 (unmounts after the last)". */
static void holders_line(struct ctl_buf *b, const char *st)
{
	const char *v, *end;
	size_t len;
	unsigned int n = 0;

	if (ctl_json_get(st, "holders", &v, &len) || len < 2)
		return;
	end = v + len;
	for (const char *p = v; p < end; p++)
		if (*p >= '0' && *p <= '9' &&
		    (p == v || p[-1] < '0' || p[-1] > '9'))
			n++;
	if (!n && !mc_json_is_true(st, "holder_managed"))
		return;
	ctl_buf_printf(b, LABEL "%u: pids %.*s%s\n", "holders", n,
		       (int)(len - 2), v + 1,
		       mc_json_is_true(st, "holder_managed") ?
			       " (unmounts after the last)" :
			       " (mounted with mountctl mount: stays)");
}

static void print_human(struct ctl_buf *b, const char *st)
{
	char s1[PATH_MAX], s2[64], comp[32], line[256];
	uint64_t corrupt, rerr;

	if (ctl_json_str(st, "mountpoint", s1, sizeof(s1)))
		snprintf(s1, sizeof(s1), "?");
	ctl_buf_printf(b, LABEL "%s\n", "mountpoint", s1);
	if (ctl_json_str(st, "image", s1, sizeof(s1)))
		snprintf(s1, sizeof(s1), "?");
	ctl_buf_printf(b, LABEL "%s\n", "image", s1);
	if (ctl_json_str(st, "compressor", comp, sizeof(comp)))
		snprintf(comp, sizeof(comp), "?");
	ctl_buf_printf(
		b, LABEL "%s, %llu KiB blocks, %s, %llu inodes\n", "format",
		comp, (unsigned long long)mc_json_u64(st, "block_size") / 1024,
		size_format(mc_json_u64(st, "image_io.bytes"), s2, sizeof(s2)),
		(unsigned long long)mc_json_u64(st, "inodes"));
	ctl_buf_printf(b, LABEL "%s\n", "staging",
		       mc_stage_line(st, line, sizeof(line)));
	cache_line(b, "data cache", st, "data");
	cache_line(b, "meta cache", st, "meta");
	ctl_buf_printf(b, LABEL "%s in %llu reads, %llu EIO\n", "served",
		       size_format(mc_json_u64(st, "fuse.bytes_served"), s2,
				   sizeof(s2)),
		       (unsigned long long)mc_json_u64(st, "fuse.read"),
		       (unsigned long long)mc_json_u64(st, "fuse.eio"));
	/* Where requests come from: io_uring queues, or /dev/fuse. */
	if (mc_json_u64(st, "fuse.uring_threads"))
		ctl_buf_printf(
			b, LABEL "io_uring, %llu threads, %llu requests\n",
			"requests",
			(unsigned long long)mc_json_u64(st,
							"fuse.uring_threads"),
			(unsigned long long)mc_json_u64(st,
							"fuse.uring_requests"));
	/* Pushed into the page cache: read later without a request. */
	if (mc_json_u64(st, "warm.files"))
		ctl_buf_printf(b, LABEL "%llu files, %s into the page cache\n",
			       "warmed",
			       (unsigned long long)mc_json_u64(st,
							       "warm.files"),
			       size_format(mc_json_u64(st, "warm.bytes"), s2,
					   sizeof(s2)));
	if (mc_json_u64(st, "warm.open_files"))
		ctl_buf_printf(
			b, LABEL "%llu files as they were opened, %s\n",
			"pushed",
			(unsigned long long)mc_json_u64(st, "warm.open_files"),
			size_format(mc_json_u64(st, "warm.open_bytes"), s2,
				    sizeof(s2)));
	if (!ctl_json_str(st, "statahead.all_state", s1, sizeof(s1)) &&
	    strcmp(s1, "off"))
		ctl_buf_printf(b,
			       LABEL "%s, %llu entries in %llu directories\n",
			       "primed", s1,
			       (unsigned long long)mc_json_u64(
				       st, "statahead.all_entries"),
			       (unsigned long long)mc_json_u64(
				       st, "statahead.all_dirs"));
	if (mc_json_u64(st, "statahead.entries"))
		ctl_buf_printf(
			b, LABEL "%llu directories, %llu entries ahead\n",
			"listed",
			(unsigned long long)mc_json_u64(st, "statahead.dirs"),
			(unsigned long long)mc_json_u64(st,
							"statahead.entries"));
	corrupt = mc_json_u64(st, "image_io.corrupt");
	rerr = mc_json_u64(st, "image_io.read_errors");
	if (corrupt || rerr)
		ctl_buf_printf(
			b,
			LABEL
			"%llu corruption events, %llu image read errors (see the daemon's log)\n",
			"problems", (unsigned long long)corrupt,
			(unsigned long long)rerr);
	holders_line(b, st);
	ctl_buf_printf(b, LABEL "pid %llu, up %s, RSS %s\n", "daemon",
		       (unsigned long long)mc_json_u64(st, "pid"),
		       mc_fmt_duration(mc_json_double(st, "uptime_s"), line,
				       sizeof(line)),
		       size_format(mc_json_u64(st, "process.rss_bytes"), s2,
				   sizeof(s2)));
}

/* One mount's entry: its stats, or why there are none. */
static void add_entry(struct out *o, const char *path, const char *image,
		      const char *stats, const char *error)
{
	const char *v;
	size_t len;

	if (o->json) {
		ctl_buf_printf(&o->b, "%s", o->first ? "\n" : ",\n");
		if (stats && !ctl_json_get(stats, "mountpoint", &v, &len)) {
			ctl_buf_printf(&o->b, "%s", stats);
		} else if (stats) {
			/* Every daemon sends it today; add it if one does not. */
			ctl_buf_printf(&o->b, "{\"mountpoint\":");
			ctl_buf_json_str(&o->b, path);
			v = stats + strspn(stats, " \t") + 1;
			ctl_buf_printf(
				&o->b, "%s%s",
				*(v + strspn(v, " \t")) == '}' ? "" : ",", v);
		} else {
			struct stat st;

			/* The contract's keys, for a daemon that is gone or
			 * does not answer. */
			ctl_buf_printf(&o->b, "{\"schema\":%d,\"mountpoint\":",
				       CTL_SCHEMA);
			ctl_buf_json_str(&o->b, path);
			ctl_buf_printf(&o->b, ",\"image\":");
			if (image)
				ctl_buf_json_str(&o->b, image);
			else
				ctl_buf_printf(&o->b, "null");
			ctl_buf_printf(
				&o->b,
				",\"pid\":null,\"healthy\":false,"
				"\"image_bytes\":%llu,\"staged_bytes\":0,"
				"\"holders\":[],\"ok\":false,\"problem\":",
				image && !stat(image, &st) ?
					(unsigned long long)st.st_size :
					0ULL);
			ctl_buf_json_str(&o->b, error);
			ctl_buf_printf(&o->b, ",\"error\":");
			ctl_buf_json_str(&o->b, error);
			ctl_buf_printf(&o->b, "}");
		}
	} else {
		if (!o->first)
			ctl_buf_printf(&o->b, "\n");
		if (stats) {
			print_human(&o->b, stats);
		} else {
			ctl_buf_printf(&o->b, LABEL "%s\n", "mountpoint", path);
			if (image)
				ctl_buf_printf(&o->b, LABEL "%s\n", "image",
					       image);
			ctl_buf_printf(&o->b, LABEL "%s\n", "error", error);
		}
	}
	o->first = false;
}

/* Ask one mount's daemon.  Return: true if it answered. */
static bool status_one(struct out *o, const struct mc_mount *m)
{
	char why[PATH_MAX + 256];
	char *reply;
	int err;

	err = mc_request(m, "stats", &reply);
	if (err) {
		add_entry(o, m->path, m->source, NULL,
			  mc_explain(m, err, !o->json, why, sizeof(why)));
		return false;
	}
	add_entry(o, m->path, m->source, reply, NULL);
	free(reply);
	return true;
}

/* One snapshot of @paths (all mounts if @n is 0).  Return: exit code. */
static int snapshot(struct out *o, char **paths, int n)
{
	char path[PATH_MAX], why[PATH_MAX + 64];
	struct mc_mount *all, m;
	size_t count;
	bool all_ok = true;
	int err;

	o->first = true;
	ctl_buf_release(&o->b);
	if (o->json)
		ctl_buf_printf(&o->b, "[");
	if (!n) {
		err = mc_mount_list(&all, &count);
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
			ctl_buf_printf(&o->b, "no squashcache mounts\n");
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
			add_entry(o, paths[i], NULL, NULL, why);
	}
	if (o->json)
		ctl_buf_printf(&o->b, "%s]\n", o->first ? "" : "\n");
	if (o->b.oom) {
		mc_err("out of memory");
		return MC_EXIT_FAIL;
	}
	if (o->b.len)
		fwrite(o->b.p, 1, o->b.len, stdout);
	fflush(stdout);
	return all_ok ? MC_EXIT_OK : MC_EXIT_FAIL;
}

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "watch", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct out o = { 0 };
	bool watch = false;
	int c, ret;

	while ((c = getopt_long(argc, argv, "jwh", longopts, NULL)) != -1) {
		switch (c) {
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
	for (;;) {
		if (watch && isatty(STDOUT_FILENO))
			fputs("\033[H\033[J", stdout);
		ret = snapshot(&o, argv + optind, argc - optind);
		if (!watch)
			break;
		mc_sleep_ms(WATCH_MS);
	}
	ctl_buf_release(&o.b);
	return ret;
}

const struct mc_cmd mc_cmd_status = {
	.name = "status",
	.args = "[--json] [--watch] [MOUNTPOINT...]",
	.summary = "show staging, cache and traffic of squashcache mounts",
	.help = "\n"
		"Asks the daemon of each MOUNTPOINT, or of every squashcache mount\n"
		"(yours, or everybody's for root), for its stats.\n"
		"\n"
		"  -j, --json         print a JSON array, one object per mount, with\n"
		"                     schema, mountpoint, image, pid, healthy,\n"
		"                     problem, image_bytes, staged_bytes and holders\n"
		"                     at top level (see mountctl(1)); a stale mount\n"
		"                     has healthy false and a problem\n"
		"  -w, --watch        print again every second until interrupted\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 every daemon answered, 1 otherwise, 2 usage error.\n",
	.run = run,
};

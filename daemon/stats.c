// SPDX-License-Identifier: MIT
/*
 * This file implements the daemon's stats: one JSON object that the core
 * builds from the image, the prefetcher, its own request counters and the
 * process, with each feature's part appended by the feature
 * (<feature>_stats_json()).  The control socket (ctl_srv.c) only serves it.
 *
 * The stats object:
 *   schema, healthy, version, pid, uid, image_bytes, staged_bytes, image,
 *   mountpoint, compressor, block_size, inodes,
 *   uptime_s, ready,
 *   holders (pids), holder_managed, holder_stats: {added, died, grace_s,
 *            closing} (holders.h; holder_stats only when managed)
 *   stage:  {state, budget, planned, staged, percent, seconds, mb_per_s,
 *            on_tmpfs (the image file itself is on tmpfs or ramfs),
 *            ram_limit, ram_limit_source (the memory the daemon may use
 *            at start, whence the default ram= is half of it: "physical
 *            RAM", "cgroup v1 memory:/PATH", "cgroup v2 /PATH" or
 *            "unknown" with ram_limit 0; memlimit.h)}
 *   cache:  {data, meta, bmap: {budget, bytes, peak, entries, hits, misses,
 *            waits, evictions, bypass, errors}}
 *   image_io: {bytes, reads, read_bytes, stager_bytes, demand_bytes,
 *            readahead_bytes, order_bytes, read_errors, decompressions,
 *            decompressed_bytes, corrupt}
 *   order:  {window, held, held_max, orders, clients, files, ranges,
 *            planned, plans, plans_max, plans_budget, refused, read,
 *            served, hits, skipped, waits, by_readers, dropped_unread,
 *            errors, threads, by_client: [{pid, orders, files, at,
 *            ranges, planned, taken, ahead, plans}]} (the epoch orders,
 *            lib/order; files, ranges and planned of the orders held now,
 *            the other counts since the mount; by_client: each process's
 *            order and how far its readers are, pid 0 the mount's own,
 *            the first ORDER_CLIENTS_SHOWN; order_req.c)
 *   fuse:   {lookup, getattr, readlink, open, read, opendir, readdir,
 *            readdirplus, statfs, getxattr, listxattr, write, ioctl,
 *            bytes_served, eio, readaheads, spliced, no_open,
 *            uring_threads, uring_requests, uring_available (false:
 *            built without liburing or an untested libfuse),
 *            uring_unavailable (why, "" when available)}
 *   warm:   {budget, files, bytes, dropped, open_files, open_bytes}
 *           (page-cache warming; open_*: pushed when opened)
 *   statahead: {window, walks, lookup_dirs, dirs, entries, all_state,
 *           all_dirs, all_entries, all_seconds, table_dirs, table_bytes,
 *           table_budget} (listing ahead; see statahead_stats_json())
 *   prefetch: {workers, queued, done, dropped, errors}
 *   idle:   {timeout, open, idle_s} (-o timeout=S; only timeout when 0)
 *   keep:   {socket, answer, keeper_complete, adopted, adopted_chunks,
 *            peers}
 *           (only with -o keep; keep.h)
 *   verify: {seal, root, data_bytes, tree_bytes, blocks_ok, blocks_bad,
 *            bytes_hashed, bad_reads, bad_staged, refused_bytes}
 *           (checked bytes, -o seal=; {seal: null} without; verify.h)
 *   process: {rss_bytes, cpu_user_s, cpu_sys_s, threads}
 */

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon.h"
#include "holders.h"
#include "idle.h"
#include "keep.h"
#include "order_req.h"
#include "statahead.h"
#include "uring.h"
#include "verify.h"
#include "warm.h"
#include "util/clock.h"
#include "util/err.h"

static const char *const stage_names[] = {
	[STAGE_IDLE] = "idle",
	[STAGE_RUNNING] = "running",
	[STAGE_DONE] = "done",
	[STAGE_OFF] = "off",
};

static void cache_json(struct json_buf *b, const char *name,
		       const struct cache_stats *c, bool last)
{
	json_buf_printf(
		b,
		"\"%s\":{\"budget\":%llu,\"bytes\":%llu,\"peak\":%llu,"
		"\"entries\":%llu,\"hits\":%llu,\"misses\":%llu,"
		"\"waits\":%llu,\"evictions\":%llu,\"bypass\":%llu,"
		"\"errors\":%llu}%s",
		name, (unsigned long long)c->budget,
		(unsigned long long)c->bytes, (unsigned long long)c->peak_bytes,
		(unsigned long long)c->entries, (unsigned long long)c->hits,
		(unsigned long long)c->misses, (unsigned long long)c->waits,
		(unsigned long long)c->evictions, (unsigned long long)c->bypass,
		(unsigned long long)c->fill_errors, last ? "" : ",");
}

static void process_stats(uint64_t *rss, double *user, double *sys,
			  unsigned int *threads)
{
	struct rusage ru;
	unsigned long pages = 0, resident = 0;
	char line[256];
	FILE *f;

	*rss = 0;
	*threads = 0;
	f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%lu %lu", &pages, &resident) == 2)
			*rss = (uint64_t)resident *
			       (uint64_t)sysconf(_SC_PAGESIZE);
		fclose(f);
	}
	f = fopen("/proc/self/status", "re");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Threads: %u", threads) == 1)
				break;
		fclose(f);
	}
	getrusage(RUSAGE_SELF, &ru);
	*user = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	*sys = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* The image and the process: the keys of mountctl's stable contract. */
static void image_json(struct sqcd *d, struct json_buf *b,
		       const struct img_stats *st)
{
	const struct img_super *sb = img_get_super(d->img);
	struct stage_stats ss;

	stage_get_stats(img_stage(d->img), &ss);
	/* The keys of mountctl's stable contract come first (ctl.h). */
	json_buf_printf(b,
			"{\"ok\":true,\"schema\":%d,\"healthy\":true,"
			"\"version\":%d,\"pid\":%d,\"uid\":%u,"
			"\"image_bytes\":%llu,\"staged_bytes\":%llu,",
			CTL_SCHEMA, CTL_VERSION, (int)getpid(),
			(unsigned int)getuid(),
			(unsigned long long)st->image_bytes,
			(unsigned long long)ss.staged);
	json_buf_printf(b, "\"image\":");
	json_buf_str(b, d->o.image_abs);
	json_buf_printf(b, ",\"mountpoint\":");
	json_buf_str(b, d->o.canonical);
	json_buf_printf(b,
			",\"compressor\":\"%s\",\"block_size\":%u,"
			"\"inodes\":%u,\"uptime_s\":%.3f,",
			img_compressor(d->img), sb->block_size, sb->inode_count,
			mono_since(&d->started));
}

/* "stage":{...}, from staging's stats, and the memory limit the default
 * budget came from. */
static void stage_json(struct json_buf *b, const struct img_stats *st,
		       const struct stage_stats *ss, const struct memlimit *ml)
{
	double secs = ss->seconds;
	double pct = ss->planned ?
			     100.0 * (double)ss->staged / (double)ss->planned :
			     (ss->state == STAGE_OFF ? 0 : 100);

	json_buf_printf(b,
			"\"stage\":{\"state\":\"%s\",\"budget\":%llu,"
			"\"planned\":%llu,\"staged\":%llu,\"percent\":%.1f,"
			"\"seconds\":%.3f,\"mb_per_s\":%.1f,\"on_tmpfs\":%s,"
			"\"streams\":%u,\"inflight\":%u,\"inflight_max\":%u,"
			"\"inflight_target\":%u,\"read_ms_min\":%.2f,"
			"\"read_ms\":%.2f,\"o_direct\":%s,"
			"\"by_readers\":%llu,\"error\":",
			stage_names[ss->state], (unsigned long long)ss->budget,
			(unsigned long long)ss->planned,
			(unsigned long long)ss->staged, pct, secs,
			/* Since the plan began (mountctl stage resumes). */
			secs > 0 && ss->staged >= ss->base ?
				(double)(ss->staged - ss->base) / 1e6 / secs :
				0.0,
			st->in_ram ? "true" : "false", ss->threads,
			ss->inflight, ss->inflight_max, ss->target,
			ss->read_ms_min, ss->read_ms,
			st->direct ? "true" : "false",
			(unsigned long long)ss->by_readers);
	if (ss->error)
		json_buf_str(b, err_str(-ss->error));
	else
		json_buf_printf(b, "null");
	json_buf_printf(b, ",\"ram_limit\":%llu,\"ram_limit_source\":",
			(unsigned long long)ml->usable);
	json_buf_str(b, ml->source);
	json_buf_printf(b, "},");
}

/* "cache":{...} and "image_io":{...}. */
static void image_io_json(struct json_buf *b, struct img_stats *st)
{
	json_buf_printf(b, "\"cache\":{");
	cache_json(b, "data", &st->data, false);
	cache_json(b, "meta", &st->meta, false);
	cache_json(b, "bmap", &st->bmap, true);
	json_buf_printf(b,
			"},\"image_io\":{\"bytes\":%llu,\"reads\":%llu,"
			"\"read_bytes\":%llu,\"stager_bytes\":%llu,"
			"\"demand_bytes\":%llu,\"readahead_bytes\":%llu,"
			"\"order_bytes\":%llu,\"direct_bytes\":%llu,"
			"\"read_errors\":%llu,"
			"\"decompressions\":%llu,\"decompressed_bytes\":%llu,"
			"\"corrupt\":%llu},",
			(unsigned long long)st->image_bytes,
			(unsigned long long)st->src_reads,
			(unsigned long long)st->src_bytes,
			(unsigned long long)st->src_by[IMG_READ_STAGER],
			(unsigned long long)st->src_by[IMG_READ_DEMAND],
			(unsigned long long)st->src_by[IMG_READ_READAHEAD],
			(unsigned long long)st->src_by[IMG_READ_ORDER],
			(unsigned long long)st->src_direct,
			(unsigned long long)st->src_errors,
			(unsigned long long)st->decompressions,
			(unsigned long long)st->decompressed_bytes,
			(unsigned long long)st->corrupt);
}

/* The name of each kind of request in the stats, in enum sqcd_op order. */
static const char *const op_names[SQCD_OP__COUNT] = {
	[SQCD_OP_LOOKUP] = "lookup",
	[SQCD_OP_GETATTR] = "getattr",
	[SQCD_OP_READLINK] = "readlink",
	[SQCD_OP_OPEN] = "open",
	[SQCD_OP_READ] = "read",
	[SQCD_OP_OPENDIR] = "opendir",
	[SQCD_OP_READDIR] = "readdir",
	[SQCD_OP_READDIRPLUS] = "readdirplus",
	[SQCD_OP_STATFS] = "statfs",
	[SQCD_OP_GETXATTR] = "getxattr",
	[SQCD_OP_LISTXATTR] = "listxattr",
	[SQCD_OP_WRITE] = "write",
	[SQCD_OP_IOCTL] = "ioctl",
};

/* The core's "fuse" members (requests per kind, bytes, flags). */
static void fuse_json(struct sqcd *d, struct json_buf *b)
{
	json_buf_printf(b, "\"fuse\":{");
	for (unsigned int op = 0; op < SQCD_OP__COUNT; op++)
		json_buf_printf(b, "\"%s\":%llu,", op_names[op],
				(unsigned long long)d->ops[op]);
	json_buf_printf(b,
			"\"bytes_served\":%llu,"
			"\"eio\":%llu,\"readaheads\":%llu,\"spliced\":%llu,"
			"\"no_open\":%s,",
			(unsigned long long)d->bytes_served,
			(unsigned long long)d->eio,
			(unsigned long long)d->readaheads,
			(unsigned long long)d->spliced,
			atomic_load(&d->no_open) ? "true" : "false");
}

void sqcd_stats_json(struct sqcd *d, struct json_buf *b)
{
	struct pf_stats pfs = { 0 };
	struct stage_stats ss;
	struct img_stats st;
	double user, sys;
	unsigned int threads;
	uint64_t rss;

	img_get_stats(d->img, &st);
	stage_get_stats(img_stage(d->img), &ss);
	if (d->pf)
		pf_get_stats(d->pf, &pfs);
	process_stats(&rss, &user, &sys, &threads);

	/* The core's part, with each feature's part in between: a feature
	 * appends its own keys (see its header). */
	image_json(d, b, &st);
	holders_stats_json(sqcd_feature(d, &holders_feature),
			   b); /* feature call site: holders */
	stage_json(b, &st, &ss, &d->o.mem);
	image_io_json(b, &st);
	order_stats_json(d, b); /* order_req.c */
	fuse_json(d, b);
	uring_stats_json(sqcd_feature(d, &uring_feature),
			 b); /* feature call site: io_uring */
	json_buf_printf(b, "},");
	warm_stats_json(sqcd_feature(d, &warm_feature),
			b); /* feature call site: warming */
	statahead_stats_json(sqcd_feature(d, &statahead_feature),
			     b); /* feature call site */
	keep_stats_json(sqcd_feature(d, &keep_feature),
			b); /* feature call site: keep (only when on) */
	verify_stats_json(sqcd_feature(d, &verify_feature),
			  b); /* feature call site: checked bytes */
	json_buf_printf(b,
			"\"prefetch\":{\"workers\":%u,\"queued\":%llu,"
			"\"done\":%llu,\"dropped\":%llu,\"errors\":%llu},",
			pfs.workers, (unsigned long long)pfs.queued,
			(unsigned long long)pfs.done,
			(unsigned long long)pfs.dropped,
			(unsigned long long)pfs.errors);
	idle_stats_json(sqcd_feature(d, &idle_feature),
			b); /* feature call site: idle timeout */
	json_buf_printf(b,
			"\"process\":{\"rss_bytes\":%llu,\"cpu_user_s\":%.3f,"
			"\"cpu_sys_s\":%.3f,\"threads\":%u}}",
			(unsigned long long)rss, user, sys, threads);
}

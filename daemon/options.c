// SPDX-License-Identifier: MIT
/*
 * This file implements squashcached's command line (options.h): -f, -d,
 * --help, --version and the -o options, each checked with a message that
 * says what is wrong and what is allowed, and the defaults that do not
 * depend on the image.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "detach.h"
#include "options.h"
#include "keep/keep.h"
#include "seal/seal.h"
#include "util/size.h"
#include "util/version.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: squashcached [-f] [-d] [-o OPTION[,OPTION...]] IMAGE MOUNTPOINT\n"
		"\n"
		"Mount a SquashFS image read-only and serve it from RAM.\n"
		"Without -f it detaches, and returns only once the mount answers.\n"
		"Unmount with: fusermount3 -u MOUNTPOINT (or mountctl umount).\n"
		"\n"
		"  -f                 stay in the foreground, log to stderr\n"
		"  -d                 debug log (implies -f)\n"
		"  -o OPTIONS         mount options, comma separated (below)\n"
		"  -h, --help         this text\n"
		"  -V, --version      print the version\n"
		"\n"
		"options (-o):\n"
		"  ram=SIZE           RAM for staging the compressed image (default: half\n"
		"                     of memory, or of the cgroup's memory limit if lower;\n"
		"                     SIZE like 8G, 512M or 25%%)\n"
		"  stage=MODE         auto (default: full, or none when the image is\n"
		"                     on tmpfs), full, meta (metadata only) or none\n"
		"  stage_cached       stage through the page cache (default: O_DIRECT\n"
		"                     reads where the image's file system takes them)\n"
		"  cache=SIZE         decompressed data cache (default 256M)\n"
		"  meta=SIZE          decoded metadata cache (default: room for the\n"
		"                     image's inode and directory tables decoded, at\n"
		"                     least 64M, at most 1/16 of memory)\n"
		"  warm=SIZE          push listed files into the kernel's page cache in\n"
		"                     the background, up to SIZE (default 25%%; 0 = off)\n"
		"  order_window=SIZE  RAM for reading ahead the epoch orders given with\n"
		"                     mountctl order (default 64M; 0 = refuse orders)\n"
		"  order_plans=SIZE   RAM for the plans of the epoch orders, all\n"
		"                     processes' together (default: 1/16 of memory, at\n"
		"                     least 64M, at most 1G)\n"
		"  statahead=N|all    listing ahead: list up to N entries ahead of a\n"
		"                     reader that walks the tree, and directories whose\n"
		"                     files are opened by path (default 65536; 0 = off);\n"
		"                     all: also list the whole tree once mounted, and\n"
		"                     return once it is listed (for readers that never\n"
		"                     list; was -o prime)\n"
		"  list_attrs         every listing carries every entry's attributes\n"
		"                     from the start (default: files get names only\n"
		"                     until a reader looks up a file it listed)\n"
		"  statahead_wait=S   with statahead=all, return after S seconds at most\n"
		"                     (default 10; 0 = at once; was prime_wait=)\n"
		"  hold=PID:START     set by mountctl acquire: the first holder; the\n"
		"                     mount goes after its last holder (see mountctl)\n"
		"  grace=S            with hold=, keep the mount S seconds after the\n"
		"                     last holder (default 0)\n"
		"  direct_io          do not keep file data in the page cache (for\n"
		"                     datasets near the size of RAM: no double caching)\n"
		"  allow_other        let other users read the mount (needs\n"
		"                     user_allow_other in /etc/fuse.conf unless root)\n"
		"  no_splice          copy raw bytes that are not staged through memory\n"
		"                     instead of splicing them from the image file\n"
		"  no_uring           take requests from /dev/fuse even when the kernel\n"
		"                     offers io_uring (fuse module's enable_uring=Y)\n"
		"  threads=N          FUSE worker threads (default: one per core,\n"
		"                     2 to 16, if the image is on tmpfs; else 16)\n"
		"  workers=N          readahead threads (default: one per core; staging\n"
		"                     has its own, at most 16)\n"
		"  readahead=N        blocks decoded ahead of sequential reads (default 4)\n"
		"  offset=N           the image starts N bytes into the file (SIF,\n"
		"                     AppImage; default 0)\n"
		"  timeout=S          unmount after S seconds with no open file and no\n"
		"                     request (default 0 = never)\n"
		"  seal=MODE          check every byte read against the image's seal\n"
		"                     (mountctl seal): auto (default: IMAGE.sqcseal\n"
		"                     if there is one), require (it must be there),\n"
		"                     off, or the seal's PATH; a block that does not\n"
		"                     match fails with EIO\n"
		"  seal_root=HEX      the seal must have this root hash (implies\n"
		"                     seal=require unless a PATH is given)\n"
		"  keep[=PATH]        stage into a copy the keeper (mountctl keeper)\n"
		"                     keeps after the mount, and start from the copy\n"
		"                     it kept of this image (preview; PATH: its socket,\n"
		"                     default /run/squashcache/keeper.sock)\n"
		"  ctl=PATH           control socket path (default: abstract, from the\n"
		"                     mountpoint; mountctl finds it)\n"
		"  log=FILE           once detached, append the log to FILE (default:\n"
		"                     syslog; with -f or -d the log goes to stderr)\n"
		"  debug              same as -d\n");
}

/* A size; a percentage is of the memory the daemon may use (o->mem). */
static int parse_size_opt(const struct sqcd_opts *o, const char *key,
			  const char *val, uint64_t *out)
{
	int err = size_parse(val, o->mem.usable, out);

	if (err)
		fprintf(stderr,
			"squashcached: bad size '%s' for -o %s (use e.g. 512M, 8G or 25%%)\n",
			val, key);
	return err;
}

static int parse_uint_opt(const char *key, const char *val, unsigned int max,
			  unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(val, &end, 10);
	if (errno || end == val || *end || v > max) {
		fprintf(stderr,
			"squashcached: bad value '%s' for -o %s (0 .. %u)\n",
			val, key, max);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

static int parse_stage_opt(const char *val, enum stage_mode *out)
{
	static const struct {
		const char *name;
		enum stage_mode mode;
	} modes[] = { { "auto", STAGE_AUTO },
		      { "full", STAGE_FULL },
		      { "meta", STAGE_META },
		      { "none", STAGE_NONE } };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(val, modes[i].name)) {
			*out = modes[i].mode;
			return 0;
		}
	fprintf(stderr,
		"squashcached: bad value '%s' for -o stage (auto, full, meta or none)\n",
		val);
	return -EINVAL;
}

/* -o hold=PID:START, as mountctl acquire passes it. */
static int parse_hold_opt(const char *val, struct sqcd_opts *o)
{
	unsigned long long start;
	int pid, end = 0;

	if (sscanf(val, "%d:%llu%n", &pid, &start, &end) != 2 || val[end] ||
	    pid <= 0) {
		fprintf(stderr,
			"squashcached: bad value '%s' for -o hold (PID:START, as mountctl acquire passes it)\n",
			val);
		return -EINVAL;
	}
	o->hold_pid = pid;
	o->hold_start = start;
	return 0;
}

static int parse_grace_opt(const char *val, double *out)
{
	char *end;

	*out = strtod(val, &end);
	if (end == val || *end || !(*out >= 0) || *out > 86400.0 * 365) {
		fprintf(stderr,
			"squashcached: bad value '%s' for -o grace (seconds)\n",
			val);
		return -EINVAL;
	}
	return 0;
}

/* An option without a value.  Return: 0, or -EINVAL (said why). */
static int parse_flag(struct sqcd_opts *o, const char *opt)
{
	const struct {
		const char *name;
		bool *field;
	} flags[] = { { "no_uring", &o->no_uring },
		      { "no_splice", &o->no_splice },
		      { "direct_io", &o->direct_io },
		      { "allow_other", &o->allow_other },
		      { "list_attrs", &o->list_attrs },
		      { "stage_cached", &o->img.stage_cached } };

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (!strcmp(opt, flags[i].name)) {
			*flags[i].field = true;
			return 0;
		}
	if (!strcmp(opt, "prime")) {
		/* The old name of statahead=all, kept for a release. */
		o->deprecated = "-o prime is deprecated: use -o statahead=all";
		o->statahead_all = true;
		return 0;
	}
	if (!strcmp(opt, "keep")) {
		o->keep = KEEP_SOCKET;
		return 0;
	}
	if (!strcmp(opt, "debug")) {
		o->debug = true;
		o->foreground = true;
		return 0;
	}
	/* Always on; accepted so that fstab-style option lists work. */
	if (!strcmp(opt, "ro") || !strcmp(opt, "default_permissions") ||
	    !strcmp(opt, "nodev") || !strcmp(opt, "nosuid"))
		return 0;
	if (!strcmp(opt, "rw")) {
		fprintf(stderr,
			"squashcached: -o rw: SquashFS images are read-only\n");
		return -EINVAL;
	}
	fprintf(stderr,
		"squashcached: unknown option '%s'; see squashcached --help\n",
		opt);
	return -EINVAL;
}

static int parse_one(struct sqcd_opts *o, char *opt)
{
	char *val = strchr(opt, '=');

	if (!val)
		return parse_flag(o, opt);
	*val++ = '\0';
	if (!strcmp(opt, "ram"))
		return parse_size_opt(o, opt, val, &o->img.ram);
	if (!strcmp(opt, "keep")) {
		if (val[0] != '/') {
			fprintf(stderr,
				"squashcached: -o keep=PATH takes the keeper's socket, an absolute path\n");
			return -EINVAL;
		}
		o->keep = val;
		return 0;
	}
	if (!strcmp(opt, "seal") && *val) {
		o->seal = val;
		return 0;
	}
	if (!strcmp(opt, "seal_root")) {
		if (seal_parse_hex(val, o->seal_root)) {
			fprintf(stderr,
				"squashcached: bad value '%s' for -o seal_root (64 hex digits: the root hash mountctl seal printed)\n",
				val);
			return -EINVAL;
		}
		o->seal_root_set = true;
		return 0;
	}
	if (!strcmp(opt, "cache"))
		return parse_size_opt(o, opt, val, &o->img.data_cache);
	if (!strcmp(opt, "meta"))
		return parse_size_opt(o, opt, val, &o->img.meta_cache);
	if (!strcmp(opt, "warm"))
		return parse_size_opt(o, opt, val, &o->warm);
	if (!strcmp(opt, "order_window"))
		return parse_size_opt(o, opt, val, &o->order_window);
	if (!strcmp(opt, "order_plans"))
		return parse_size_opt(o, opt, val, &o->order_plans);
	if (!strcmp(opt, "offset"))
		return parse_size_opt(o, opt, val, &o->img.offset);
	if (!strcmp(opt, "stage"))
		return parse_stage_opt(val, &o->img.stage);
	if (!strcmp(opt, "hold"))
		return parse_hold_opt(val, o);
	if (!strcmp(opt, "grace"))
		return parse_grace_opt(val, &o->grace);
	if (!strcmp(opt, "threads"))
		return parse_uint_opt(opt, val, 1024, &o->threads);
	if (!strcmp(opt, "workers"))
		return parse_uint_opt(opt, val, 64, &o->workers);
	if (!strcmp(opt, "timeout"))
		return parse_uint_opt(opt, val, 1u << 30, &o->timeout);
	if (!strcmp(opt, "readahead"))
		return parse_uint_opt(opt, val, 256, &o->readahead);
	if (!strcmp(opt, "ctl") && *val) {
		if (strlen(val) >= sizeof(o->ctl_addr)) {
			fprintf(stderr,
				"squashcached: -o ctl path is too long\n");
			return -EINVAL;
		}
		strcpy(o->ctl_addr, val);
		return 0;
	}
	if (!strcmp(opt, "log") && *val) {
		o->logfile = val;
		return 0;
	}
	if (!strcmp(opt, "statahead") && !strcmp(val, "all")) {
		o->statahead_all = true;
		return 0;
	}
	if (!strcmp(opt, "statahead"))
		return parse_uint_opt(opt, val, 1u << 30, &o->statahead);
	/* prime_wait is the old name of statahead_wait: kept for a release,
	 * with a line in the log. */
	if (!strcmp(opt, "prime_wait"))
		o->deprecated =
			"-o prime_wait= is deprecated: use -o statahead_wait=";
	if (!strcmp(opt, "statahead_wait") || !strcmp(opt, "prime_wait"))
		return parse_uint_opt(opt, val, DETACH_READY_TIMEOUT_S / 2,
				      &o->statahead_wait);
	fprintf(stderr,
		"squashcached: unknown option '%s=%s'; see squashcached --help\n",
		opt, val);
	return -EINVAL;
}

static int parse_opts(struct sqcd_opts *o, char *list)
{
	char *p = list, *start = list, *out = list;
	int err;

	/* Split at commas; "\," is a literal comma. */
	for (;; p++) {
		if (*p == '\\' && p[1]) {
			*out++ = *++p;
			continue;
		}
		if (*p == ',' || !*p) {
			bool end = !*p;

			*out = '\0';
			if (*start) {
				err = parse_one(o, start);
				if (err)
					return err;
			}
			if (end)
				return 0;
			start = out = p + 1;
			continue;
		}
		*out++ = *p;
	}
}

int sqcd_opts_parse(struct sqcd_opts *o, int argc, char **argv, int *status)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*status = 2;
	/* What the defaults come from: ram= is half of it (memlimit_budget(),
	 * which img_opts_default() takes), warm= a quarter. */
	memlimit_get(&o->mem);
	img_opts_default(&o->img);
	o->threads = 0; /* default_threads() once the image is open */
	o->warm = o->mem.usable / 4;
	o->readahead = 4;
	o->order_window = 64ull << 20;
	/* An order costs about 110 bytes a range: ImageNet's 1.28M files,
	 * ordered whole or in shards, about 150 MB. */
	o->order_plans = MIN(MAX(o->mem.usable / 16, 64ull << 20), 1ull << 30);
	o->statahead_wait = 10;
	o->statahead = 65536;
	o->seal = "auto"; /* IMAGE.sqcseal, if there is one */
	while ((c = getopt_long(argc, argv, "+fdo:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			o->foreground = true;
			break;
		case 'd':
			o->debug = true;
			o->foreground = true;
			break;
		case 'o':
			if (parse_opts(o, optarg))
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			*status = 0;
			return -ECANCELED;
		case 'V':
			printf("squashcached %s (libfuse %s)\n", SQC_VERSION,
			       fuse_pkgversion());
			*status = 0;
			return -ECANCELED;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr,
			"squashcached: expected IMAGE and MOUNTPOINT\n");
		usage(stderr);
		return -EINVAL;
	}
	o->image = argv[optind];
	o->mountpoint = argv[optind + 1];
	return 0;
}

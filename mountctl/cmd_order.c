// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl order`: tell the daemon of a mount the
 * files a training epoch will read, in the order it will read them, so
 * that it reads them ahead (the "order" request, lib/ctl/ctl.h).  The
 * paths come on standard input; each is made relative to the mount's
 * root here, and the daemon checks every one before it uses any.  With
 * --pid the order is that process's, beside other processes' orders, and
 * the daemon drops it when the process ends.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "mountctl.h"
#include "util/err.h"
#include "util/proc.h"
#include "util/size.h"

/* Finding a million files takes the daemon a few seconds. */
#define ORDER_TIMEOUT_MS (300 * 1000)

/* What came on standard input, and the body being built from it. */
struct paths {
	char *in; /* standard input, whole */
	size_t in_len;
	char *body; /* paths relative to the root, each ending in a NUL */
	size_t len;
	uint64_t count;
};

static int read_all(FILE *f, struct paths *p)
{
	size_t cap = 0, n;
	char *q;

	for (;;) {
		if (cap - p->in_len < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			if (cap > CTL_ORDER_MAX + 65536)
				return -E2BIG;
			q = realloc(p->in, cap + 1);
			if (!q)
				return -ENOMEM;
			p->in = q;
		}
		n = fread(p->in + p->in_len, 1, cap - p->in_len, f);
		p->in_len += n;
		if (n == 0)
			return ferror(f) ? -EIO : 0;
	}
}

/* Add @path (NUL-terminated) to the body, relative to @root.  Return: 0;
 * -EXDEV if it is absolute and not under @root. */
static int add(struct paths *p, const char *root, char *path)
{
	size_t rlen = strlen(root), n;

	if (path[0] == '/') {
		if (strncmp(path, root, rlen) || path[rlen] != '/')
			return -EXDEV;
		path += rlen + 1;
	}
	n = strlen(path);
	memmove(p->body + p->len, path, n + 1);
	p->len += n + 1;
	p->count++;
	return 0;
}

/* Split standard input at @sep into the body.  Return: exit code. */
static int build(struct paths *p, const struct mountinfo_mount *m, char sep)
{
	char *s = p->in, *end = p->in + p->in_len, *e;

	/* Each path only shrinks: the body fits where the input was. */
	p->body = p->in;
	p->in[p->in_len] = '\0';
	while (s < end) {
		e = memchr(s, sep, (size_t)(end - s));
		if (!e)
			e = end;
		*e = '\0';
		if (sep == '\n' && e > s && e[-1] == '\r')
			e[-1] = '\0';
		if (*s && add(p, m->path, s)) {
			fprintf(stderr,
				"mountctl: order: path %llu, '%s', is not under the mount point %s\n",
				(unsigned long long)p->count + 1, s, m->path);
			return MC_EXIT_USAGE;
		}
		s = e + 1;
	}
	if (p->len > CTL_ORDER_MAX) {
		mc_err("order: the paths take %zu bytes, more than %llu",
		       p->len, (unsigned long long)CTL_ORDER_MAX);
		return MC_EXIT_USAGE;
	}
	return MC_EXIT_OK;
}

/* Send the body to the daemon of @m, as the order of process @pid (0:
 * the mount's own), started at @start, and say what it answered. */
static int send_order(const struct mountinfo_mount *m, const struct paths *p,
		      pid_t pid, uint64_t start)
{
	const struct ctl_req req = { .cmd = CTL_CMD_ORDER,
				     .order = { p->len, pid, start } };
	char why[PATH_MAX + 256], b[32], w[32];
	struct ctl_reply *rep;
	int err, rc = MC_EXIT_OK;

	rep = malloc(sizeof(*rep));
	if (!rep) {
		mc_err("out of memory");
		return MC_EXIT_FAIL;
	}
	err = ctl_call_mount(m, &req, p->body, p->len, rep, NULL,
			     ORDER_TIMEOUT_MS);
	if (err == -EBADMSG && rep->error[0]) {
		mc_err("the daemon of '%s' refused the order: %s", m->path,
		       rep->error);
		rc = MC_EXIT_FAIL;
	} else if (err) {
		mc_err("%s", mc_explain(m, err, true, why, sizeof(why)));
		rc = MC_EXIT_USAGE;
	} else if (!p->len) {
		printf("order: none (forgotten)\n");
	} else {
		printf("order: %llu files, %s to read ahead within %s (%llu bytes staged)\n",
		       (unsigned long long)rep->order.files,
		       size_format(rep->order.bytes, b, sizeof(b)),
		       size_format(rep->order.window, w, sizeof(w)),
		       (unsigned long long)rep->order.staged);
	}
	free(rep);
	return rc;
}

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "null", no_argument, NULL, '0' },
		{ "clear", no_argument, NULL, 'c' },
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct paths p = { 0 };
	char path[PATH_MAX], *end;
	bool clear = false;
	struct mountinfo_mount m;
	uint64_t start = 0;
	char sep = '\n';
	long pid = 0;
	int c, err;

	while ((c = getopt_long(argc, argv, "0cp:h", longopts, NULL)) != -1) {
		switch (c) {
		case '0':
			sep = '\0';
			break;
		case 'c':
			clear = true;
			break;
		case 'p':
			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || pid <= 0 ||
			    pid > CTL_PID_MAX)
				return mc_bad_usage(
					&mc_cmd_order,
					"--pid: '%s' is not a process id",
					optarg);
			break;
		case 'h':
			mc_usage(&mc_cmd_order, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_order, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return mc_bad_usage(&mc_cmd_order,
				    "expected one MOUNTPOINT, got %d arguments",
				    argc - optind);
	if (pid && proc_start_time((pid_t)pid, &start)) {
		mc_err("order: --pid %ld: no such process", pid);
		return MC_EXIT_USAGE;
	}
	if (mc_resolve_arg(argv[optind], path, &m))
		return MC_EXIT_USAGE;
	if (!clear) {
		err = read_all(stdin, &p);
		if (err) {
			mc_err("order: cannot read the paths on standard input: %s",
			       err_str(err));
			free(p.in);
			return MC_EXIT_USAGE;
		}
		c = build(&p, &m, sep);
		if (!c && !p.count)
			c = mc_bad_usage(
				&mc_cmd_order,
				"no paths on standard input (--clear forgets the order)");
		if (c) {
			free(p.in);
			return c;
		}
	}
	c = send_order(&m, &p, (pid_t)pid, start);
	free(p.in);
	return c;
}

const struct mc_cmd mc_cmd_order = {
	.name = "order",
	.args = "[-0] [--clear] [--pid PID] MOUNTPOINT < PATHS",
	.summary = "tell a mount the order in which an epoch reads its files",
	.help = "\n"
		"Reads the files this epoch will read, in that order, from standard\n"
		"input: one path per line (NUL-terminated with -0), each relative to\n"
		"the mount's root or absolute under MOUNTPOINT.  The daemon then\n"
		"reads the parts of the image they need that are not staged ahead of\n"
		"the readers, in that order, within its order_window= of RAM, and\n"
		"drops each once read.  Reads in another order still work; they just\n"
		"gain less.  Every path must name a regular file of the image; if one\n"
		"does not, the order is refused, naming it, and the order before\n"
		"stays.\n"
		"\n"
		"With --pid, the order is that process's (a rank of a training job,\n"
		"which its DataLoader's workers read for): it replaces that process's\n"
		"order only, the daemon reads it ahead beside the orders of the other\n"
		"processes that share the mount, as far as each one's readers have\n"
		"got, and drops it when the process ends.  squashcache.torch.EpochOrder\n"
		"gives its own process's pid.  Without --pid, the order is the\n"
		"mount's own, and the next such order replaces it.\n"
		"\n"
		"  -0, --null         paths end in NUL, not newline\n"
		"  -c, --clear        forget the order (standard input is not read)\n"
		"  -p, --pid PID      the order of process PID (running)\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 the order is set, 1 the daemon refused it, 2 not a\n"
		"squashcache mount, its daemon does not answer, or usage error.\n",
	.run = run,
};

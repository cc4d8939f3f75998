// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl keeper`: the root server that holds
 * staged copies between mounts (docs/design.md, "Keeping a staged copy").
 * Its logic is lib/keep's (keeper_request(), keeper_closed(), ...); here
 * are its socket, the loop that serves connections, each request's user
 * from SO_PEERCRED, and dropping kept copies when memory runs low.
 * Everything is in memory: when it ends, every copy is gone.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "keep/keep.h"
#include "mountctl.h"
#include "util/err.h"
#include "util/memlimit.h"
#include "util/size.h"

#define KEEPER_CONNS 1024 /* connections at once, at most */
/* Of one user but root: a user cannot take every connection's place (a
 * node runs a few mounts per user; each holds one). */
#define KEEPER_CONNS_PER_USER 64
#define KEEPER_DIR_MODE 0755

struct server {
	struct keeper *k;
	struct pollfd pfd[KEEPER_CONNS + 1]; /* [0]: the listening socket */
	uid_t uid[KEEPER_CONNS + 1]; /* each connection's peer */
	nfds_t n; /* entries in pfd */
	uint64_t floor; /* MemAvailable below this: drop kept copies */
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

/* The socket's directory: made root's 0755 if missing; refused if anyone
 * but root may write to it.  Return: 0 or -errno (said). */
static int check_dir(const char *path)
{
	char dir[PATH_MAX];
	struct stat sb;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0; /* the root directory, or relative to it */
	*slash = '\0';
	if (mkdir(dir, KEEPER_DIR_MODE) && errno != EEXIST) {
		mc_err("keeper: cannot make '%s': %s", dir, err_str(-errno));
		return -errno;
	}
	if (lstat(dir, &sb) || !S_ISDIR(sb.st_mode) || sb.st_uid != 0 ||
	    (sb.st_mode & 0022)) {
		mc_err("keeper: '%s' must be a directory of root's that only root may write to",
		       dir);
		return -EPERM;
	}
	return 0;
}

/* Listen at @path, mode 0666.  Return: the socket, or -errno (said). */
static int listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s, probe, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	err = check_dir(path);
	if (err)
		return err;
	if (!keep_connect(path, &probe)) {
		close(probe);
		mc_err("keeper: one already listens at '%s'", path);
		return -EADDRINUSE;
	}
	unlink(path);
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(path, 0666) || listen(s, 64)) {
		err = -errno;
		mc_err("keeper: cannot listen at '%s': %s", path, err_str(err));
		if (s >= 0)
			close(s);
		return err;
	}
	return s;
}

/* Connections of @uid now. */
static unsigned int conns_of(const struct server *sv, uid_t uid)
{
	unsigned int n = 0;

	for (nfds_t i = 1; i < sv->n; i++)
		n += sv->uid[i] == uid;
	return n;
}

static void accept_one(struct server *sv)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	/* Non-blocking: a client that does not read its answers has its
	 * connection closed, and never stops the keeper. */
	int c = accept4(sv->pfd[0].fd, NULL, NULL,
			SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (c < 0)
		return;
	if (sv->n > KEEPER_CONNS ||
	    getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) ||
	    (cr.uid != 0 && conns_of(sv, cr.uid) >= KEEPER_CONNS_PER_USER)) {
		close(c);
		return;
	}
	sv->pfd[sv->n] = (struct pollfd){ .fd = c, .events = POLLIN };
	sv->uid[sv->n] = cr.uid;
	sv->n++;
}

/* Serve one message on connection @i.  Return: false once it closed. */
static bool serve_one(struct server *sv, nfds_t i)
{
	struct keep_msg m;
	int fd, err;

	err = keep_recv(sv->pfd[i].fd, &m, &fd);
	if (err == -EAGAIN || err == -EBADMSG)
		return true;
	if (!err)
		err = keeper_request(sv->k, sv->pfd[i].fd, sv->uid[i], &m, fd);
	if (!err)
		return true;
	keeper_closed(sv->k, sv->pfd[i].fd);
	close(sv->pfd[i].fd);
	sv->n--;
	sv->pfd[i] = sv->pfd[sv->n];
	sv->uid[i] = sv->uid[sv->n];
	return false;
}

static void serve(struct server *sv)
{
	struct timespec now, last = { 0, 0 };
	uint64_t avail;

	while (!stopping) {
		int n = poll(sv->pfd, sv->n, 1000);

		if (n < 0 && errno != EINTR)
			break;
		for (nfds_t i = sv->n; n > 0 && i-- > 1;)
			if (sv->pfd[i].revents)
				serve_one(sv, i);
		if (n > 0 && sv->pfd[0].revents & POLLIN)
			accept_one(sv);
		/* Once a second: memory is short, kept copies go first. */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec == last.tv_sec)
			continue;
		last = now;
		keeper_expire(sv->k);
		avail = memlimit_available();
		if (avail < sv->floor)
			keeper_evict(sv->k, sv->floor - avail);
	}
}

static int start(const char *path, uint64_t budget, uint64_t floor)
{
	struct server *sv;
	int s;

	if (geteuid() != 0) {
		mc_err("keeper: must run as root (it holds every user's copies)");
		return MC_EXIT_FAIL;
	}
	sv = calloc(1, sizeof(*sv));
	if (!sv || keeper_new(budget, &sv->k)) {
		mc_err("keeper: out of memory");
		free(sv);
		return MC_EXIT_FAIL;
	}
	s = listen_at(path);
	if (s < 0) {
		keeper_free(sv->k);
		free(sv);
		return MC_EXIT_FAIL;
	}
	sv->pfd[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	sv->n = 1;
	sv->floor = floor;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	fprintf(stderr, "mountctl keeper: listening at %s\n", path);
	serve(sv);
	for (nfds_t i = 1; i < sv->n; i++)
		close(sv->pfd[i].fd);
	close(s);
	unlink(path);
	keeper_free(sv->k);
	free(sv);
	return MC_EXIT_OK;
}

/* --evict: ask the running keeper to free @bytes. */
static int evict(const char *path, uint64_t bytes)
{
	uint64_t freed;
	char a[32];
	int err = mc_keep_ask(path, KEEP_EVICT, NULL, bytes, &freed);

	if (err) {
		mc_err("keeper: cannot evict: %s", err_str(err));
		return MC_EXIT_FAIL;
	}
	printf("freed %s\n", size_format(freed, a, sizeof(a)));
	return MC_EXIT_OK;
}

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "keep", required_argument, NULL, 'k' },
		{ "socket", required_argument, NULL, 's' },
		{ "min-available", required_argument, NULL, 'm' },
		{ "evict", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t total = size_ram_total(), budget = total / 4,
		 floor = total / 20;
	const char *path = KEEP_SOCKET;
	uint64_t bytes = 0;
	bool ev = false;
	int c;

	while ((c = getopt_long(argc, argv, "k:s:m:e:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'e':
			ev = true;
			if (size_parse(optarg, 0, &bytes))
				return mc_bad_usage(&mc_cmd_keeper,
						    "bad --evict '%s'", optarg);
			break;
		case 'k':
			if (size_parse(optarg, total, &budget))
				return mc_bad_usage(&mc_cmd_keeper,
						    "bad --keep '%s'", optarg);
			break;
		case 's':
			path = optarg;
			break;
		case 'm':
			if (size_parse(optarg, total, &floor))
				return mc_bad_usage(&mc_cmd_keeper,
						    "bad --min-available '%s'",
						    optarg);
			break;
		case 'h':
			mc_usage(&mc_cmd_keeper, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_keeper, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (optind != argc)
		return mc_bad_usage(&mc_cmd_keeper, "takes no arguments");
	if (ev)
		return evict(path, bytes);
	return start(path, budget, floor);
}

const struct mc_cmd mc_cmd_keeper = {
	.name = "keeper",
	.args = "[--keep SIZE] [--min-available SIZE] [--socket PATH] | --evict SIZE",
	.summary = "hold staged copies between a user's mounts (root; preview)",
	.help = "\n"
		"Runs in the foreground as root and holds the staged copy of an\n"
		"image once its mount (squashcached -o keep) ends, so that the\n"
		"same user's next mount of the same, unchanged image starts\n"
		"staged.  Kept copies of all users together stay within --keep,\n"
		"the least recently used dropped first; when MemAvailable falls\n"
		"below --min-available, kept copies are dropped too.  Copies are\n"
		"held in memory only: when the keeper ends, they are gone.  A\n"
		"user other than root has at most 64 connections at once.\n"
		"\n"
		"  -k, --keep SIZE           kept copies at most (default 25%)\n"
		"  -m, --min-available SIZE  drop kept copies below this much\n"
		"                            available memory (default 5%)\n"
		"  -s, --socket PATH         default " KEEP_SOCKET "\n"
		"  -e, --evict SIZE          ask the running keeper to drop kept\n"
		"                            copies until SIZE is freed (root)\n"
		"  -h, --help                this text\n"
		"\n"
		"Exit status: 0 stopped by SIGTERM/SIGINT, 1 cannot start, 2 usage\n"
		"error.\n",
	.run = run,
};

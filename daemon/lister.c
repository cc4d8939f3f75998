// SPDX-License-Identifier: MIT
/*
 * This file implements the lister process (lister.h): the daemon's side,
 * which starts it and sends it one request at a time over a
 * SOCK_SEQPACKET socket pair, and the helper's side, lister_main().
 *
 * The daemon's side never waits on its own mount: it waits on the socket,
 * which lister_cancel() shuts down and a dead helper closes.  The helper
 * is started with posix_spawn() (vfork and exec: no copy of the daemon's
 * page tables, however much it has staged) and gets the socket as
 * descriptor 3 and nothing else beyond stdio.
 */
#define LOG_MOD "lister"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lister.h"

#define LISTER_FD 3 /* the helper's socket */
#define LIST_BUF 32768 /* getdents64 buffer, bytes (glibc's readdir's) */
#define REAP_TRIES 100 /* lister_free(): 10 ms each */

extern char **environ;

enum lister_op {
	LISTER_STAT = 1,
	LISTER_LIST = 2,
};

/* A request: the path follows the header, NUL-terminated. */
struct lister_req {
	uint8_t op; /* enum lister_op */
	uint8_t names; /* LISTER_LIST: names only */
	char path[PATH_MAX];
};

struct lister_reply {
	int32_t err; /* 0 or -errno */
	uint32_t pad;
	uint64_t entries; /* LISTER_LIST: entries listed */
};

struct lister {
	int sock; /* the daemon's end */
	pid_t pid; /* the helper */
};

int lister_spawn(struct lister **out)
{
	char *argv[] = { "squashcached", LISTER_ARG, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct lister *l;
	sigset_t none;
	int sv[2], err;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		err = -errno;
		free(l);
		return err;
	}
	sigemptyset(&none);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	/* The daemon's threads block the signals its loop takes. */
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
	/* dup2 clears close-on-exec, even onto the same number (glibc). */
	err = -posix_spawn_file_actions_adddup2(&fa, sv[1], LISTER_FD);
	if (!err)
		err = -posix_spawn_file_actions_addclosefrom_np(&fa,
								LISTER_FD + 1);
	if (!err)
		err = -posix_spawn(&l->pid, "/proc/self/exe", &fa, &attr, argv,
				   environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	if (err) {
		close(sv[0]);
		free(l);
		return err;
	}
	l->sock = sv[0];
	*out = l;
	return 0;
}

pid_t lister_pid(const struct lister *l)
{
	return l->pid;
}

/* Send one request and wait for its reply.  Return: the reply's error,
 * or -ECANCELED. */
static int call(struct lister *l, enum lister_op op, bool names,
		const char *path, uint64_t *entries)
{
	struct lister_reply rep;
	struct lister_req req;
	size_t len = strlen(path);
	ssize_t n;

	if (len >= sizeof(req.path))
		return -ENAMETOOLONG;
	req.op = (uint8_t)op;
	req.names = names;
	memcpy(req.path, path, len + 1);
	do
		n = send(l->sock, &req,
			 offsetof(struct lister_req, path) + len + 1,
			 MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -ECANCELED;
	do
		n = recv(l->sock, &rep, sizeof(rep), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(rep))
		return -ECANCELED;
	if (entries)
		*entries = rep.entries;
	return rep.err;
}

int lister_stat(struct lister *l, const char *path)
{
	return call(l, LISTER_STAT, false, path, NULL);
}

int lister_list(struct lister *l, const char *path, bool names,
		uint64_t *entries)
{
	*entries = 0;
	return call(l, LISTER_LIST, names, path, entries);
}

void lister_cancel(struct lister *l)
{
	if (l)
		shutdown(l->sock, SHUT_RDWR);
}

void lister_free(struct lister *l)
{
	pid_t r;

	if (!l)
		return;
	kill(l->pid, SIGKILL);
	close(l->sock);
	for (int i = 0; i < REAP_TRIES; i++) {
		r = waitpid(l->pid, NULL, WNOHANG);
		if (r == l->pid || (r < 0 && errno != EINTR))
			break;
		usleep(10000);
	}
	free(l);
}

/* The helper's side from here on: one process, one thread. */

/*
 * List @path to its end into @buf.  Unless @names, each batch ends with a
 * stat of its last entry: with FUSE_CAP_READDIRPLUS_AUTO the kernel lists
 * a directory's first batch with readdirplus and the next ones plain,
 * unless something was looked up or stat'ed in it since the last batch;
 * the stat of an entry a readdirplus just made (a dentry the kernel marks
 * for this) is that, and costs no request.  Return: 0 or -errno.
 */
static int list_dir(const char *path, bool names, char *buf, uint64_t *entries)
{
	const char *last;
	struct stat sb;
	long n;
	int fd;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((n = syscall(SYS_getdents64, fd, buf, LIST_BUF)) > 0) {
		last = NULL;
		for (long pos = 0; pos < n;) {
			const struct dirent64 *de = (const void *)(buf + pos);

			if (strcmp(de->d_name, ".") &&
			    strcmp(de->d_name, "..")) {
				(*entries)++;
				last = de->d_name;
			}
			pos += de->d_reclen;
		}
		if (last && !names)
			fstatat(fd, last, &sb, AT_SYMLINK_NOFOLLOW);
	}
	close(fd);
	return n < 0 ? -errno : 0;
}

int lister_main(void)
{
	static char buf[LIST_BUF];
	static union {
		struct lister_req req;
		char raw[sizeof(struct lister_req) + 1]; /* room for a NUL */
	} in;
	struct lister_reply rep;
	socklen_t len = sizeof(int);
	struct stat sb;
	int type;
	ssize_t n;

	if (getsockopt(LISTER_FD, SOL_SOCKET, SO_TYPE, &type, &len) ||
	    type != SOCK_SEQPACKET) {
		fprintf(stderr, "squashcached: %s is the daemon's own\n",
			LISTER_ARG);
		return 2;
	}
	prctl(PR_SET_NAME, "sqc-lister");
	for (;;) {
		n = recv(LISTER_FD, &in.req, sizeof(in.req), 0);
		if (n < 0 && errno == EINTR)
			continue;
		/* The daemon closed its end, or is gone.  _exit: nothing to
		 * flush, and a sanitizer's exit-time check could be cut short
		 * by the daemon's SIGKILL (lister_free()) and report that. */
		if (n <= 0)
			_exit(0);
		memset(&rep, 0, sizeof(rep));
		in.raw[n] = '\0';
		if ((size_t)n <= offsetof(struct lister_req, path))
			rep.err = -EINVAL;
		else if (in.req.op == LISTER_STAT)
			rep.err = stat(in.req.path, &sb) ? -errno : 0;
		else if (in.req.op == LISTER_LIST)
			rep.err = list_dir(in.req.path, in.req.names, buf,
					   &rep.entries);
		else
			rep.err = -EINVAL;
		if (send(LISTER_FD, &rep, sizeof(rep), MSG_NOSIGNAL) < 0)
			_exit(0);
	}
}

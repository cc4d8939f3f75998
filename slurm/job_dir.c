// SPDX-License-Identifier: MIT
/*
 * This file implements root's access to the job directories (see job.h
 * for the layout and rules): opening or making them through checked
 * directory descriptors, moving another owner's entries aside, and
 * detaching the mounts under a job directory through descriptors of the
 * mounts' roots.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "job_i.h"
#include "util/err.h"
#include "util/mountinfo.h"

#define DETACH_PASSES 8 /* mounts stacked under one job directory */
#define DETACH_MS 2000 /* the walk to one mount and its unmount, at most */

void job__dir_close(struct jobdir *j)
{
	if (j->dir >= 0)
		close(j->dir);
	if (j->top >= 0)
		close(j->top);
	if (j->base >= 0)
		close(j->base);
	j->dir = j->top = j->base = -1;
}

/* Is @st a directory of root's that nobody else may write to? */
static bool is_root_dir(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_uid == 0 &&
	       !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* Open @name in @dirfd as a directory, never following a symlink. */
int job__open_dir_at(int dirfd, const char *name, int flags)
{
	return openat(dirfd, name,
		      flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int job__open_here(int dirfd, const char *name, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
	};

	return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
}

bool job__exists_here(int dirfd, const char *name)
{
	int fd = job__open_here(dirfd, name, O_PATH);

	if (fd >= 0)
		close(fd); /* O_PATH: nothing to flush */
	return fd >= 0 || errno != ENOENT;
}

/* Move the entry @name of @dirfd out of the way: "NAME.bad-<random>". */
static int move_aside(int dirfd, const char *name, const char *why)
{
	char aside[256];
	unsigned long long r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (unsigned long long)getpid() << 20 ^
		    (unsigned long long)time(NULL);
	snprintf(aside, sizeof(aside), "%s.bad-%016llx", name, r);
	if (renameat2(dirfd, name, dirfd, aside, RENAME_NOREPLACE)) {
		job__err("cannot move '%s' (%s) aside: %s", name, why,
			 err_str(errno));
		return -errno;
	}
	job__err("moved '%s' aside to '%s': %s", name, aside, why);
	return 0;
}

/*
 * Open (making it if missing) the root-owned directory @name of @dirfd
 * with @mode.  An entry of that name that is not such a directory
 * (another user's, a symlink, a file) is moved aside first.
 * Return: the descriptor, or -errno (said).
 */
static int root_dir_at(int dirfd, const char *name, mode_t mode)
{
	struct stat st;

	for (int tries = 0; tries < 3; tries++) {
		bool made = !mkdirat(dirfd, name, mode);
		int fd;

		if (!made && errno != EEXIST) {
			job__err("cannot create '%s': %s", name,
				 err_str(errno));
			return -errno;
		}
		fd = job__open_dir_at(dirfd, name, O_RDONLY);
		if (fd >= 0 && !fstat(fd, &st) && is_root_dir(&st)) {
			if (made && fchmod(fd, mode)) {
				close(fd);
				return -errno;
			}
			return fd;
		}
		if (fd >= 0)
			close(fd);
		if (move_aside(
			    dirfd, name,
			    "not a directory of root's that only root writes"))
			return -EEXIST;
	}
	return -EEXIST;
}

/* The real path of an open directory. */
static int fd_path(int fd, char *buf, size_t cap)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, cap - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n >= cap - 1)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

int job__dir_open_at(int base, const char *name, bool create, struct jobdir *j)
{
	struct stat st;
	int err;

	j->top = j->dir = -1;
	j->base = base;
	if (snprintf(j->name, sizeof(j->name), "%s", name) >=
	    (int)sizeof(j->name))
		return -ENAMETOOLONG;
	if (create) {
		j->top = root_dir_at(j->base, JOB_TOP_NAME, 0755);
		if (j->top >= 0)
			j->dir = root_dir_at(j->top, j->name, 0711);
		err = j->dir < 0 ? (j->top < 0 ? j->top : j->dir) : 0;
	} else {
		j->top = job__open_dir_at(j->base, JOB_TOP_NAME, O_RDONLY);
		if (j->top >= 0)
			j->dir = job__open_dir_at(j->top, j->name, O_RDONLY);
		/* Not a directory, a symlink: not ours; else as it is. */
		err = j->dir >= 0			 ? 0 :
		      errno == ENOTDIR || errno == ELOOP ? -EPERM :
							   -errno;
		if (!err && (fstat(j->top, &st) || !is_root_dir(&st) ||
			     fstat(j->dir, &st) || !is_root_dir(&st)))
			err = -EPERM;
	}
	if (!err)
		err = fd_path(j->dir, j->path, sizeof(j->path));
	return err;
}

/* Open BASE/squashcache if it is a directory of root's only root
 * writes.  Return: the descriptor, or -errno. */
static int open_top(const struct ds_conf *c)
{
	int base = open(c->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC), top;
	struct stat st;

	if (base < 0)
		return -errno;
	top = job__open_dir_at(base, JOB_TOP_NAME, O_RDONLY);
	close(base);
	if (top < 0)
		return -errno;
	if (fstat(top, &st) || !is_root_dir(&st)) {
		close(top);
		return -EPERM;
	}
	return top;
}

/* Open JOB_LEFT in @top with @flags, if it is a file of root's. */
static int open_left(int top, int flags)
{
	int fd = openat(top, JOB_LEFT, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    st.st_nlink != 1) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

void job__note_left(const struct ds_conf *c, const char *line)
{
	int top = open_top(c), fd = -1;

	openlog("squashcache", LOG_PID, LOG_DAEMON);
	syslog(LOG_ERR, "%s", line);
	if (top >= 0)
		fd = open_left(top, O_WRONLY | O_APPEND | O_CREAT);
	if (fd < 0 || dprintf(fd, "%s\n", line) < 0)
		job__err("cannot note it for check-node in %s/%s/%s", c->base,
			 JOB_TOP_NAME, JOB_LEFT);
	if (fd >= 0)
		close(fd);
	if (top >= 0)
		close(top);
}

int job__check_left(const struct ds_conf *c, bool clear)
{
	char line[1024];
	int top = open_top(c), fd, n = 0;
	FILE *f;

	if (top < 0)
		return 0;
	fd = open_left(top, O_RDONLY);
	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		close(top);
		return fd == -ENOENT ? 0 : 1;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		printf("failed epilog: %s%s\n", line, clear ? ": cleared" : "");
		n++;
	}
	fclose(f);
	if (clear && unlinkat(top, JOB_LEFT, 0))
		n = n ? n : 1;
	else if (clear)
		n = 0;
	close(top);
	return n;
}

int job__dir_open(const struct ds_conf *c, const char *name, bool create,
		  struct jobdir *j)
{
	int base, err;

	j->base = j->top = j->dir = -1;
	base = open(c->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base < 0) {
		err = -errno;
		job__err("cannot open base=%s: %s", c->base, err_str(err));
		return err;
	}
	return job__dir_open_at(base, name, create, j);
}

/* Abort the FUSE connection of a mount (its daemon and readers stop
 * waiting).  Nothing to do where fusectl is not mounted. */
static void abort_fuse(const struct mountinfo_entry *e)
{
	char path[96];
	int fd;

	if (strncmp(e->fstype, "fuse", 4) || e->major != 0)
		return;
	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/abort",
		 e->minor);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "1", 1) != 1)
		job__err("cannot abort FUSE connection %u: %s", e->minor,
			 err_str(errno));
	close(fd);
}

/*
 * Open the mount point @rel (relative to the job directory), one
 * component at a time, never following a symlink.  Return: an O_PATH
 * descriptor of the mount's root, or -errno.
 */
static int open_mount_at(int dirfd, const char *rel)
{
	char comp[NAME_MAX + 1];
	int fd = dup(dirfd);

	while (fd >= 0 && *rel) {
		size_t n = strcspn(rel, "/");
		int next;

		if (n > NAME_MAX || (n == 2 && !strncmp(rel, "..", 2))) {
			close(fd);
			return -EINVAL;
		}
		memcpy(comp, rel, n);
		comp[n] = '\0';
		next = openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		rel += n;
		rel += *rel == '/';
	}
	return fd < 0 ? -errno : fd;
}

struct detach_arg {
	struct jobdir *j;
	const char *only; /* one mount name, or NULL for all */
	bool walk; /* this pass walks and unmounts; else it aborts */
	int found; /* mounts under the job directory this pass */
};

/* Open @rel under @dir and detach the mount whose root it is, in a child
 * within DETACH_MS: the walk crosses the mounts stacked on the way, and a
 * FUSE mount of a user's there that was not aborted (mounted since, and
 * with allow_other: else root is not let in) answers a lookup when it
 * likes.  Return: 0 or -errno (-ETIMEDOUT: the child was killed). */
static int detach_walk(int dir, const char *rel)
{
	struct pollfd pf = { .events = POLLIN };
	int status = 0, err;
	pid_t c = fork();

	if (c == 0) {
		char proc[64];
		int fd;

		job__child_stdio(-1);
		fd = open_mount_at(dir, rel);
		if (fd < 0)
			_exit(-fd);
		/* The descriptor is the mount's root: unmount what it
		 * stands for. */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		_exit(umount2(proc, MNT_DETACH) ? errno : 0);
	}
	if (c < 0)
		return -errno;
	pf.fd = pidfd_open(c, 0);
	if (pf.fd < 0 || poll(&pf, 1, DETACH_MS) != 1) {
		/* Not ended within its budget (or no way to wait for it
		 * with one): killed; a lookup's wait ends at SIGKILL. */
		kill(c, SIGKILL);
		if (pf.fd >= 0) {
			(void)poll(&pf, 1, DETACH_MS);
			close(pf.fd);
		}
		(void)waitpid(c, NULL, WNOHANG);
		return -ETIMEDOUT;
	}
	close(pf.fd);
	while (waitpid(c, &status, 0) < 0 && errno == EINTR)
		;
	err = WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
	return -err;
}

/* One mount under the job directory: abort it (the first pass of a
 * round), or detach it (the second). */
static int detach_one(const struct mountinfo_entry *e, void *arg)
{
	struct detach_arg *a = arg;
	size_t n = strlen(a->j->path), k;
	const char *rel = e->mountpoint + n + 1;
	int err;

	if (strncmp(e->mountpoint, a->j->path, n) || e->mountpoint[n] != '/')
		return 0;
	k = strcspn(rel, "/");
	if (a->only && (strlen(a->only) != k || strncmp(rel, a->only, k)))
		return 0;
	a->found++;
	if (!a->walk) {
		abort_fuse(e);
		return 0;
	}
	err = detach_walk(a->j->dir, rel);
	if (err == -ETIMEDOUT)
		job__err(
			"cannot reach mount %s: the walk to it did not end within %d ms (a FUSE mount stacked on the way that does not answer?)",
			e->mountpoint, DETACH_MS);
	else if (err)
		job__err("cannot unmount %s: %s", e->mountpoint, err_str(err));
	return 0;
}

/*
 * Detach every mount under the job directory (or under its mount point
 * @only), mounts hidden under others included.
 */
void job__detach_under(struct jobdir *j, const char *only)
{
	struct detach_arg a = { .j = j, .only = only };

	for (int pass = 0; pass < DETACH_PASSES; pass++) {
		/* Every FUSE connection under it aborted before any walk:
		 * the walk to a mount crosses those stacked on the way, and
		 * an aborted one answers at once. */
		a.walk = false;
		a.found = 0;
		if (mountinfo_foreach(detach_one, &a) < 0 || !a.found)
			return;
		a.walk = true;
		if (mountinfo_foreach(detach_one, &a) < 0)
			return;
	}
	job__err("mounts are still stacked under %s", j->path);
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the keeper's wire format (keep.h): one struct
 * keep_msg a SOCK_SEQPACKET message with at most one descriptor beside it
 * (SCM_RIGHTS), connecting to the keeper's socket, its directory, an
 * image's identity, and names fit to print.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "keep/keep.h"

/* The message is the wire format: its size is fixed (tests and other
 * clients build it by hand). */
_Static_assert(sizeof(struct keep_msg) == 312, "struct keep_msg layout");

void keep_key_of(const struct stat *sb, uint64_t offset, uint64_t pidns,
		 struct keep_key *out)
{
	memset(out, 0, sizeof(*out));
	out->dev = (uint64_t)sb->st_dev;
	out->ino = (uint64_t)sb->st_ino;
	out->size = (uint64_t)sb->st_size;
	out->mtime_sec = (int64_t)sb->st_mtim.tv_sec;
	out->mtime_nsec = (int64_t)sb->st_mtim.tv_nsec;
	out->ctime_sec = (int64_t)sb->st_ctim.tv_sec;
	out->ctime_nsec = (int64_t)sb->st_ctim.tv_nsec;
	out->offset = offset;
	out->pidns = pidns;
}

uint64_t keep_pidns(pid_t pid)
{
	char path[40];
	struct stat sb;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/pid");
	/* nsfs: nothing of a user's file systems is looked at. */
	return stat(path, &sb) ? 0 : (uint64_t)sb.st_ino;
}

/*
 * Without the ioctl (Linux before 6.11): not /proc/PID/ns/pid, whose
 * link waits on the process's exec lock, nor its status, whose read
 * takes a reference to its memory (should the process end meanwhile, the
 * reader's would be the last, and the reader would release its mappings,
 * which can wait on a user's file system), but the pidfd's own fdinfo
 * (Linux 5.7), which is ours and reads only the pid: one NSpid is a
 * process of our /proc's pid namespace, ours; one of a namespace below
 * it cannot be told so (0: its copies are not kept for it on such a
 * kernel).
 */
static uint64_t keep_pidns_fdinfo(int pidfd)
{
	char path[64], buf[1024], *p, *end;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, "\nNSpid:");
	if (!p)
		return 0;
	p += strlen("\nNSpid:");
	end = strchr(p, '\n');
	if (end)
		*end = '\0';
	/* "\t1234" alone: one level, ours; -1: the process is gone; 0: not
	 * in our /proc's namespace (a keeper in a namespace below). */
	p += strspn(p, " \t");
	if (*p == '-' || *p == '0' || !*p)
		return 0;
	p += strcspn(p, " \t");
	p += strspn(p, " \t");
	return *p ? 0 : keep_pidns(0);
}

#define PIDFS_MAGIC_IOC 0xFF
#define PIDFD_PID_NS _IO(PIDFS_MAGIC_IOC, 5) /* PIDFD_GET_PID_NAMESPACE */

uint64_t keep_pidns_of(int pidfd)
{
	struct stat sb;
	int ns;

	if (pidfd < 0)
		return 0;
	ns = ioctl(pidfd, PIDFD_PID_NS, 0);
	if (ns >= 0) {
		uint64_t ino = fstat(ns, &sb) ? 0 : (uint64_t)sb.st_ino;

		close(ns); /* nsfs */
		return ino;
	}
	if (errno != ENOTTY && errno != EINVAL)
		return 0; /* gone, or not ours to ask */
	return keep_pidns_fdinfo(pidfd);
}

int keep_send(int sock, struct keep_msg *m, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	m->magic = KEEP_MAGIC;
	m->name[KEEP_NAME_MAX - 1] = '\0';
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*m) ? 0 : -EMSGSIZE;
}

/*
 * Receive one message and at most @cap descriptors into @fds (*@n of
 * them); the sender's credentials into @cr if asked.  Return: as
 * keep_recv().
 */
static int recv_msg(int sock, struct keep_msg *m, int *fds, unsigned int cap,
		    unsigned int *n, struct ucred *cr)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred)) +
			 CMSG_SPACE(KEEP_MSG_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	/* One descriptor: CMSG_LEN, not CMSG_SPACE, whose padding would make
	 * room for a second one on a 64-bit machine. */
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = (cr ? CMSG_SPACE(sizeof(struct ucred)) : 0) +
				  (cap == 1 ? CMSG_LEN(sizeof(int)) :
					      CMSG_SPACE(cap * sizeof(int)))
	};
	struct cmsghdr *c;
	ssize_t got;

	*n = 0;
	if (cr)
		cr->pid = 0;
	do
		got = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < k && *n < cap; i++)
				memcpy(&fds[(*n)++],
				       CMSG_DATA(c) + i * sizeof(int),
				       sizeof(int));
		} else if (c->cmsg_type == SCM_CREDENTIALS && cr &&
			   c->cmsg_len >= CMSG_LEN(sizeof(*cr))) {
			memcpy(cr, CMSG_DATA(c), sizeof(*cr));
		}
	}
	if (got == 0)
		return -ECONNRESET;
	if (got != (ssize_t)sizeof(*m) || m->magic != KEEP_MAGIC ||
	    mh.msg_flags & MSG_TRUNC)
		return -EBADMSG;
	m->name[KEEP_NAME_MAX - 1] = '\0';
	return 0;
}

int keep_recv_from(int sock, struct keep_msg *m, int *fd, struct ucred *cr)
{
	/* Room for one descriptor: the kernel drops any others of the
	 * message (MSG_CTRUNC), releasing them in this thread, which can
	 * wait (a lingering TCP socket): for clients, whose peer is root's
	 * keeper; the keeper itself uses keep_recv_fds(). */
	unsigned int n;
	int err = recv_msg(sock, m, fd, 1, &n, cr);

	if (!n)
		*fd = -1;
	return err;
}

int keep_recv_fds(int sock, struct keep_msg *m, int *fds, unsigned int *n,
		  struct ucred *cr)
{
	return recv_msg(sock, m, fds, KEEP_MSG_FDS, n, cr);
}

int keep_recv(int sock, struct keep_msg *m, int *fd)
{
	return keep_recv_from(sock, m, fd, NULL);
}

/* keep_connect() to the socket @path itself. */
static int connect_at(const char *path, int budget_ms, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { budget_ms / 1000, (budget_ms % 1000) * 1000 };
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct stat sb;
	int s, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (lstat(path, &sb))
		return -errno;
	if (!S_ISSOCK(sb.st_mode) || sb.st_uid != 0)
		return -EPERM;
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	/* A Unix socket's connect() waits on a full backlog as long as its
	 * send timeout says. */
	if (setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		goto out_errno;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(s);
		if (err == -EAGAIN || err == -EINPROGRESS)
			return -ETIMEDOUT;
		return err == -ECONNREFUSED ? -ENOENT : err;
	}
	/* And the process listening is root's. */
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) || cr.uid != 0) {
		close(s);
		return -EPERM;
	}
	*out = s;
	return 0;

out_errno:
	err = -errno;
	close(s);
	return err;
}

int keep_connect(const char *path, int budget_ms, int *out)
{
	char root[PATH_MAX];
	int err;

	/* Root's own socket first; a keeper without one (older) or gone
	 * from it answers on the public one. */
	if (geteuid() == 0 &&
	    (size_t)snprintf(root, sizeof(root), "%s%s", path,
			     KEEP_ROOT_SUFFIX) < sizeof(root)) {
		err = connect_at(root, budget_ms, out);
		if (err != -ENOENT && err != -ENAMETOOLONG)
			return err;
	}
	return connect_at(path, budget_ms, out);
}

/* Decode the UTF-8 sequence at @s (@n bytes left): its code point, and
 * its length in *@len; -1 if it is not one. */
static long utf8_at(const unsigned char *s, size_t n, size_t *len)
{
	static const long min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t need = s[0] < 0x80	    ? 1 :
		      (s[0] & 0xe0) == 0xc0 ? 2 :
		      (s[0] & 0xf0) == 0xe0 ? 3 :
		      (s[0] & 0xf8) == 0xf0 ? 4 :
					      0;
	long cp;

	if (!need || need > n)
		return -1;
	cp = need == 1 ? s[0] : s[0] & (0x7f >> need);
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min[need] || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
		return -1;
	*len = need;
	return cp;
}

void keep_name_print(char *dst, const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t n = strnlen(src, KEEP_NAME_MAX - 1), i = 0, o = 0;

	while (i < n) {
		size_t len = 1;
		long cp = utf8_at(s + i, n - i, &len);

		if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
			dst[o++] = '?';
			i += cp < 0 ? 1 : len;
			continue;
		}
		memcpy(dst + o, s + i, len);
		o += len;
		i += len;
	}
	dst[o] = '\0';
}

int keep_dir_open(const char *sock, bool create, const char **name)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(sock, '/');
	struct stat sb;
	int d;

	if (sock[0] != '/' || !slash || slash == sock || !slash[1] ||
	    (size_t)(slash - sock) >= sizeof(dir))
		return -EINVAL;
	memcpy(dir, sock, (size_t)(slash - sock));
	dir[slash - sock] = '\0';
	if (create && mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	d = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		return -errno;
	if (fstat(d, &sb) || sb.st_uid != 0 || (sb.st_mode & 0022)) {
		close(d);
		return -EPERM;
	}
	*name = slash + 1;
	return d;
}

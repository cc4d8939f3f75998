// SPDX-License-Identifier: MIT
/*
 * This file implements the keeper's wire format (keep.h): one struct
 * keep_msg a SOCK_SEQPACKET message with at most one descriptor beside it
 * (SCM_RIGHTS), connecting to the keeper's socket, and an image's
 * identity.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "keep/keep.h"

/* The message is the wire format: its size is fixed (tests and other
 * clients build it by hand). */
_Static_assert(sizeof(struct keep_msg) == 304, "struct keep_msg layout");

void keep_key_of(const struct stat *sb, uint64_t offset, struct keep_key *out)
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

/* The descriptors that came with @mh: the first in *@fd, the others
 * closed.  Return: how many came. */
static int take_fds(struct msghdr *mh, int *fd)
{
	int got = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++, got++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(f));
			if (*fd < 0)
				*fd = f;
			else
				close(f);
		}
	}
	return got;
}

int keep_recv(int sock, struct keep_msg *m, int *fd)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	take_fds(&mh, fd);
	if (n == 0)
		goto out_bad_close;
	if (n != (ssize_t)sizeof(*m) || m->magic != KEEP_MAGIC ||
	    mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		goto out_bad;
	m->name[KEEP_NAME_MAX - 1] = '\0';
	return 0;

out_bad_close:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return -ECONNRESET;
out_bad:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return -EBADMSG;
}

int keep_connect(const char *path, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct stat sb;
	int s;

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
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = -errno;

		close(s);
		return err == -ECONNREFUSED ? -ENOENT : err;
	}
	/* And the process listening is root's. */
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) || cr.uid != 0) {
		close(s);
		return -EPERM;
	}
	*out = s;
	return 0;
}

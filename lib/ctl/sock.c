// SPDX-License-Identifier: MIT
/*
 * This file implements the transport of the control protocol (ctl.h): the
 * server's listening socket and its peer's credentials, and the client's
 * side of one exchange (connect, check the server's uid, send the line and
 * its body, read the reply until the server closes), each within a
 * deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "ctl/ctl_i.h"
#include "json/json.h"
#include "util/compiler.h"

static int make_addr(const char *addr, struct sockaddr_un *sa, socklen_t *len)
{
	size_t n = strlen(addr);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (n == 0 || n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path, addr, n);
	if (addr[0] == '@') {
		sa->sun_path[0] = '\0';
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		*len = (socklen_t)sizeof(*sa);
	}
	return 0;
}

/* The socket address of @addr ("@name" or a path), and a new socket.
 * Return: the socket, or -errno. */
static int addr_socket(const char *addr, struct sockaddr_un *sa, socklen_t *len)
{
	int s, err = make_addr(addr, sa, len);

	if (err)
		return err;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return s < 0 ? -errno : s;
}

int ctl_listen(const char *addr, int *fd)
{
	struct sockaddr_un sa;
	struct stat st;
	socklen_t len;
	int s, err;

	s = addr_socket(addr, &sa, &len);
	if (s < 0)
		return s;
	if (addr[0] != '@' && !lstat(addr, &st) && S_ISSOCK(st.st_mode)) {
		/* Stale if nobody answers on it. */
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, len) &&
		    errno == ECONNREFUSED)
			unlink(addr);
		if (probe >= 0)
			close(probe);
	}
	if (bind(s, (struct sockaddr *)&sa, len) || listen(s, 16)) {
		err = -errno;
		close(s);
		return err;
	}
	if (addr[0] != '@')
		chmod(addr, 0600);
	*fd = s;
	return 0;
}

int ctl_peer(int fd, uid_t *uid, pid_t *pid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		return -errno;
	*uid = cr.uid;
	*pid = cr.pid;
	return 0;
}

/* Wait for @events on @fd until @deadline (ms, monotonic). */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left;
	int n;

	for (;;) {
		left = deadline - ctl__now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)MIN(left, (long long)INT_MAX));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * Connect to @addr.  A server whose listen queue is full makes connect()
 * wait for room: wait until @room_by (ms, monotonic), or not at all if
 * that has passed, then give -EAGAIN.
 */
static int connect_addr(const char *addr, long long room_by, int *fd)
{
	struct sockaddr_un sa;
	struct timeval tv;
	long long left;
	socklen_t len;
	int s, err;

	s = addr_socket(addr, &sa, &len);
	if (s < 0)
		return s;
	for (;;) {
		/* connect() waits as long as SO_SNDTIMEO says; 0 is forever,
		 * so "not at all" is a non-blocking connect instead. */
		left = room_by - ctl__now_ms();
		tv.tv_sec = left > 0 ? (time_t)(left / 1000) : 0;
		tv.tv_usec = left > 0 ? (suseconds_t)(left % 1000) * 1000 : 0;
		if (setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
		    fcntl(s, F_SETFL, left > 0 ? 0 : O_NONBLOCK)) {
			err = -errno;
			goto out_close;
		}
		if (!connect(s, (struct sockaddr *)&sa, len))
			break;
		if (errno != EINTR) {
			err = -errno;
			goto out_close;
		}
	}
	if (fcntl(s, F_SETFL, 0)) {
		err = -errno;
		goto out_close;
	}
	*fd = s;
	return 0;
out_close:
	close(s);
	return err;
}

/* Send all of @len bytes at @p by @deadline. */
static int send_all(int s, const void *p, size_t len, long long deadline)
{
	ssize_t n;
	int err;

	while (len) {
		n = send(s, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			err = wait_fd(s, POLLOUT, deadline);
			if (err)
				return err;
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EPROTO;
		p = (const char *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

static const struct ctl_body no_body = { NULL, 0 };

int ctl__request_at(const char *addr, const char *cmd,
		    const struct ctl_body *body, uid_t want_uid, char **reply,
		    long long room_by, long long deadline)
{
	struct json_buf b = { 0 };
	char chunk[4096];
	uid_t uid = 0;
	pid_t pid;
	ssize_t n;
	int s = -1, err;

	*reply = NULL;
	err = connect_addr(addr, room_by, &s);
	if (err)
		return err;
	err = ctl_peer(s, &uid, &pid);
	if (err)
		goto out_close;
	if (want_uid != (uid_t)-1 && uid != want_uid && uid != 0) {
		err = -EPERM;
		goto out_close;
	}
	json_buf_printf(&b, "%s\n", cmd);
	if (b.oom) {
		err = -ENOMEM;
		goto out_close;
	}
	err = send_all(s, b.p, b.len, deadline);
	if (!err)
		err = send_all(s, body->p, body->len, deadline);
	if (err)
		goto out_close;
	b.len = 0;
	for (;;) {
		err = wait_fd(s, POLLIN, deadline);
		if (err)
			goto out_close;
		n = recv(s, chunk, sizeof(chunk), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out_close;
		}
		if (n == 0)
			break;
		json_buf_printf(&b, "%.*s", (int)n, chunk);
		if (b.oom || b.len > CTL_REPLY_MAX) {
			err = -EPROTO;
			goto out_close;
		}
	}
	while (b.len && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == '\r'))
		b.p[--b.len] = '\0';
	if (!b.len || b.p[0] != '{') {
		err = -EPROTO;
		goto out_close;
	}
	*reply = b.p;
	b.p = NULL;
out_close:
	close(s);
	json_buf_release(&b);
	return err;
}

int ctl_request(const char *addr, const char *cmd, uid_t want_uid, char **reply,
		int timeout_ms)
{
	long long deadline = ctl__now_ms() + timeout_ms;
	int err;

	err = ctl__request_at(addr, cmd, &no_body, want_uid, reply, deadline,
			      deadline);
	return err == -EAGAIN ? -ETIMEDOUT : err;
}

int ctl_probe(const char *addr, uid_t *uid)
{
	pid_t pid;
	int s, err;

	err = connect_addr(addr, 0, &s);
	if (err)
		return err;
	err = ctl_peer(s, uid, &pid);
	close(s);
	return err;
}

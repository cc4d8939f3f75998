// SPDX-License-Identifier: MIT
/*
 * This file implements both ends of the control protocol declared in
 * ctl.h: addresses, the socket calls, reply building and a small JSON
 * scanner for reading replies.
 */
#define LOG_MOD "ctl"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "util/clock.h"
#include "util/compiler.h"
#include "util/hash.h"

/* /proc/net/unix flags a listening socket with __SO_ACCEPTCON. */
#define CTL_SO_ACCEPTCON (1u << 16)

int ctl_canonical_mountpoint(const char *path, char *buf, size_t cap)
{
	char *copy, *slash, *base, *dir;
	char real[PATH_MAX];
	int n, err = 0;

	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	/* Drop trailing slashes, but keep "/" itself. */
	for (n = (int)strlen(copy); n > 1 && copy[n - 1] == '/'; n--)
		copy[n - 1] = '\0';
	slash = strrchr(copy, '/');
	if (!slash) {
		dir = ".";
		base = copy;
	} else if (slash == copy) {
		dir = "/";
		base = slash + 1;
	} else {
		*slash = '\0';
		dir = copy;
		base = slash + 1;
	}
	if (!realpath(dir, real)) {
		err = -errno;
		goto out;
	}
	if (!*base || !strcmp(base, "."))
		n = snprintf(buf, cap, "%s", real);
	else
		n = snprintf(buf, cap, "%s%s%s", real,
			     strcmp(real, "/") ? "/" : "", base);
	if (n < 0 || (size_t)n >= cap)
		err = -ENAMETOOLONG;
out:
	free(copy);
	return err;
}

int ctl_default_address(const char *canonical, char *buf, size_t cap)
{
	uint64_t h = fnv1a64(canonical, strlen(canonical));
	int n;

	n = snprintf(buf, cap, "@squashcache-%016llx", (unsigned long long)h);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

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

int ctl_proc_start(pid_t pid, uint64_t *start)
{
	char path[64], line[1024], *p;
	unsigned long long v;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	line[n] = '\0';
	/* The command name may hold spaces and parentheses: skip past the
	 * last ')', then field 3 (state) up to field 22 (starttime). */
	p = strrchr(line, ')');
	if (!p)
		return -EPROTO;
	p++;
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EPROTO;
		if (field == 22)
			break;
		while (*p && *p != ' ')
			p++;
	}
	if (sscanf(p, "%llu", &v) != 1)
		return -EPROTO;
	*start = v;
	return 0;
}

static long long now_ms(void)
{
	return mono_ns() / 1000000;
}

/* Wait for @events on @fd until @deadline (ms, monotonic). */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left;
	int n;

	for (;;) {
		left = deadline - now_ms();
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
		left = room_by - now_ms();
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

/* A request's body: bytes sent after its line (ctl_request_mount_body()). */
struct body {
	const void *p;
	size_t len;
};

static const struct body no_body = { NULL, 0 };

/* ctl_request() with a time limit of its own for room in the queue. */
static int request_at(const char *addr, const char *cmd,
		      const struct body *body, uid_t want_uid, char **reply,
		      long long room_by, long long deadline)
{
	struct ctl_buf b = { 0 };
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
	ctl_buf_printf(&b, "%s\n", cmd);
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
		ctl_buf_printf(&b, "%.*s", (int)n, chunk);
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
	ctl_buf_release(&b);
	return err;
}

int ctl_request(const char *addr, const char *cmd, uid_t want_uid, char **reply,
		int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	int err;

	err = request_at(addr, cmd, &no_body, want_uid, reply, deadline,
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

int ctl_fallback_address(const char *canonical, char *buf, size_t cap)
{
	char def[CTL_PATH_MAX];
	uint64_t r;
	ssize_t got;
	int n, err;

	err = ctl_default_address(canonical, def, sizeof(def));
	if (err)
		return err;
	do
		got = getrandom(&r, sizeof(r), 0);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	if (got != (ssize_t)sizeof(r))
		return -EIO;
	n = snprintf(buf, cap, "%s-%016llx", def, (unsigned long long)r);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Is @name @def, '-' and 16 lowercase hex digits, as ctl_fallback_address()
 * makes them? */
static bool is_fallback_name(const char *name, const char *def)
{
	size_t n = strlen(def);

	if (strncmp(name, def, n) || name[n] != '-')
		return false;
	name += n + 1;
	for (int i = 0; i < 16; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		      (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return !name[16];
}

int ctl_fallback_names(FILE *table, const char *canonical,
		       int (*fn)(const char *addr, void *arg), void *arg)
{
	char def[CTL_PATH_MAX], line[512];
	bool tail = false;
	unsigned int flags, type;
	size_t len;
	int pos, err;

	err = ctl_default_address(canonical, def, sizeof(def));
	if (err)
		return err;
	while (fgets(line, sizeof(line), table)) {
		/* A line longer than @line holds no name of ours (a name is
		 * at most 107 bytes): skip it, all its pieces. */
		bool skip = tail;

		len = strlen(line);
		if (len && line[len - 1] == '\n') {
			line[--len] = '\0';
			tail = false;
		} else {
			tail = !feof(table);
		}
		if (skip || tail)
			continue;
		/* "Num: RefCount Protocol Flags Type St Inode Path", in hex
		 * but for the inode; the header line does not parse. */
		pos = -1;
		if (sscanf(line, "%*x: %*x %*x %x %x %*x %*u %n", &flags, &type,
			   &pos) != 2 ||
		    pos < 0)
			continue;
		if (!(flags & CTL_SO_ACCEPTCON) || type != SOCK_STREAM)
			continue; /* not listening: a client or an accepted one */
		if (!is_fallback_name(line + pos, def))
			continue;
		err = fn(line + pos, arg);
		if (err)
			return err;
	}
	return ferror(table) ? -EIO : 0;
}

struct find_arg {
	const char *canonical; /* the mount path a daemon must name */
	uid_t want_uid; /* the uid it must run as */
	long long deadline; /* ms, monotonic */
	bool wait; /* wait for room in a full listen queue */
	bool busy; /* a listen queue was full */
	bool slow; /* a daemon of the right uid did not answer in time */
	bool refused; /* @buf holds one that would not answer us */
	char *buf; /* the address found */
	size_t cap; /* its capacity */
	char ping[CTL_REQ_MAX]; /* the ping request's line */
	struct ctl_reply rep; /* scratch: a ping's reply */
};

static int find_one(const char *addr, void *arg)
{
	struct find_arg *a = arg;
	char *reply;
	int err;

	if (strlen(addr) >= a->cap)
		return 0;
	err = request_at(addr, a->ping, &no_body, a->want_uid, &reply,
			 a->wait ? a->deadline : 0, a->deadline);
	if (err == -EAGAIN)
		a->busy = true;
	if (err == -ETIMEDOUT)
		a->slow = true;
	/* -EPERM: another user's; -ECONNREFUSED: gone; -EPROTO: not ours. */
	if (err)
		return 0;
	err = ctl_reply_decode(CTL_CMD_PING, reply, &a->rep);
	free(reply);
	if (err)
		return 0; /* not ours */
	if (!a->rep.ok) {
		/* A daemon of the right uid that answers only its owner and
		 * root: it cannot show us its mount point, and it will refuse
		 * the real command just as well.  Keep it in case there is
		 * no better one. */
		if (!a->refused)
			strcpy(a->buf, addr);
		a->refused = true;
		return 0;
	}
	if (strcmp(a->rep.ping.mountpoint, a->canonical))
		return 0;
	strcpy(a->buf, addr);
	return 1;
}

int ctl_find_fallback(FILE *table, const char *canonical, uid_t want_uid,
		      char *buf, size_t cap, int timeout_ms)
{
	struct find_arg *a;
	int err;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->canonical = canonical;
	a->want_uid = want_uid;
	a->deadline = now_ms() + timeout_ms;
	a->buf = buf;
	a->cap = cap;
	err = ctl_req_encode(&(struct ctl_req){ .cmd = CTL_CMD_PING }, a->ping,
			     sizeof(a->ping));
	if (err) {
		free(a);
		return err;
	}
	/* First without waiting on full listen queues, which may be a
	 * squatter's; then, if nothing answered, waiting on them. */
	err = ctl_fallback_names(table, canonical, find_one, a);
	if (!err && a->busy) {
		a->wait = true;
		rewind(table);
		err = ctl_fallback_names(table, canonical, find_one, a);
	}
	if (err > 0 || (!err && a->refused))
		err = 0;
	else if (!err)
		err = a->slow || a->busy ? -ETIMEDOUT : -ENOENT;
	free(a);
	return err;
}

/* Does @err from the default address mean "the daemon is not there"? */
static bool is_elsewhere(int err)
{
	return err == -ECONNREFUSED || err == -ENOENT || err == -EPERM ||
	       err == -EAGAIN;
}

/* ctl_request_mount() with a body. */
static int request_mount(const char *canonical, const char *cmd,
			 const struct body *body, uid_t want_uid, char **reply,
			 int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	char addr[CTL_PATH_MAX];
	FILE *table;
	int err, found;

	*reply = NULL;
	err = ctl_default_address(canonical, addr, sizeof(addr));
	if (err)
		return err;
	/* Not waiting for room in the queue: a full one may be a
	 * squatter's, and then the daemon is elsewhere. */
	err = request_at(addr, cmd, body, want_uid, reply, 0, deadline);
	if (!is_elsewhere(err))
		return err;
	table = fopen("/proc/net/unix", "re");
	if (table) {
		found = ctl_find_fallback(table, canonical, want_uid, addr,
					  sizeof(addr),
					  (int)(deadline - now_ms()));
		fclose(table);
	} else {
		found = -errno;
		if (found == -ENOENT)
			found = -EIO; /* not "nowhere": we could not look */
	}
	if (!found) {
		err = request_at(addr, cmd, body, want_uid, reply, deadline,
				 deadline);
	} else if (err == -EAGAIN) {
		/* Not elsewhere: the default's queue may be ours, and busy. */
		err = ctl_default_address(canonical, addr, sizeof(addr));
		if (!err)
			err = request_at(addr, cmd, body, want_uid, reply,
					 deadline, deadline);
	} else if (found == -ETIMEDOUT) {
		err = found;
	} else if (found == -ENOENT && err == -EPERM) {
		/* Another user holds the default address and no daemon of
		 * the mount's answers anywhere: as stale as nobody. */
		err = -ECONNREFUSED;
	}
	return err == -EAGAIN ? -ETIMEDOUT : err;
}

int ctl_request_mount(const char *canonical, const char *cmd, uid_t want_uid,
		      char **reply, int timeout_ms)
{
	return request_mount(canonical, cmd, &no_body, want_uid, reply,
			     timeout_ms);
}

int ctl_request_mount_body(const char *canonical, const char *cmd,
			   const void *body, size_t len, uid_t want_uid,
			   char **reply, int timeout_ms)
{
	const struct body b = { body, len };

	return request_mount(canonical, cmd, &b, want_uid, reply, timeout_ms);
}

void ctl_buf_printf(struct ctl_buf *b, const char *fmt, ...)
{
	va_list ap;
	size_t want;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	want = b->len + (size_t)n + 1;
	if (want > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < want)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/* Length of the well-formed UTF-8 sequence of 2..4 bytes at @p, or 0. */
static size_t utf8_len(const unsigned char *p)
{
	uint32_t c;
	size_t n;

	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2;
	else if (*p >= 0xe0 && *p <= 0xef)
		n = 3;
	else if (*p >= 0xf0 && *p <= 0xf4)
		n = 4;
	else
		return 0;
	c = *p & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (n == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return n;
}

void ctl_buf_json_str(struct ctl_buf *b, const char *s)
{
	size_t n;

	ctl_buf_printf(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			ctl_buf_printf(b, "\\%c", *p);
		} else if (*p >= 0x80 && (n = utf8_len(p))) {
			/* UTF-8 goes through as is: JSON text is UTF-8. */
			ctl_buf_printf(b, "%.*s", (int)n, (const char *)p);
			p += n - 1;
		} else if (*p < 0x20 || *p >= 0x7f) {
			ctl_buf_printf(b, "\\u%04x", *p);
		} else {
			ctl_buf_printf(b, "%c", *p);
		}
	}
	ctl_buf_printf(b, "\"");
}

void ctl_buf_release(struct ctl_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* JSON scanning.  Each skip_* returns the position after the value, or
 * NULL if the text is malformed. */
static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *skip_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if (*p == '\\') {
			p++;
			if (!*p)
				return NULL;
		}
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *skip_value(const char *p, int depth);

static const char *skip_container(const char *p, int depth, char close,
				  bool keys)
{
	p = skip_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (keys) {
			p = skip_string(p);
			if (!p)
				return NULL;
			p = skip_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = skip_value(skip_ws(p), depth + 1);
		if (!p)
			return NULL;
		p = skip_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
		p = skip_ws(p);
	}
}

static const char *skip_value(const char *p, int depth)
{
	if (depth > 32)
		return NULL;
	switch (*p) {
	case '{':
		return skip_container(p, depth, '}', true);
	case '[':
		return skip_container(p, depth, ']', false);
	case '"':
		return skip_string(p);
	case 't':
		return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f':
		return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n':
		return strncmp(p, "null", 4) ? NULL : p + 4;
	default:
		if (*p != '-' && (*p < '0' || *p > '9'))
			return NULL;
		p++;
		while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' ||
		       *p == 'E' || *p == '+' || *p == '-')
			p++;
		return p;
	}
}

int ctl_json_get(const char *json, const char *path, const char **out,
		 size_t *len)
{
	const char *p = skip_ws(json);
	const char *seg = path, *dot, *key, *end;
	size_t seglen;

	for (;;) {
		if (*p != '{')
			return -ENOENT;
		dot = strchr(seg, '.');
		seglen = dot ? (size_t)(dot - seg) : strlen(seg);
		p = skip_ws(p + 1);
		for (;;) {
			if (*p == '}')
				return -ENOENT;
			key = p;
			end = skip_string(p);
			if (!end)
				return -EPROTO;
			p = skip_ws(end);
			if (*p++ != ':')
				return -EPROTO;
			p = skip_ws(p);
			if ((size_t)(end - key - 2) == seglen &&
			    !memcmp(key + 1, seg, seglen))
				break;
			p = skip_value(p, 0);
			if (!p)
				return -EPROTO;
			p = skip_ws(p);
			if (*p == ',')
				p = skip_ws(p + 1);
			else if (*p != '}')
				return -EPROTO;
		}
		if (!dot) {
			end = skip_value(p, 0);
			if (!end)
				return -EPROTO;
			*out = p;
			*len = (size_t)(end - p);
			return 0;
		}
		seg = dot + 1;
	}
}

/* The number at @path: its text at *@v, *@len bytes, starting with a
 * digit (or with @sign, a '-').  Return: 0, -ENOENT or -EPROTO. */
static int json_number(const char *json, const char *path, bool sign,
		       const char **v, size_t *len)
{
	int err = ctl_json_get(json, path, v, len);

	if (err)
		return err;
	if ((**v < '0' || **v > '9') && !(sign && **v == '-'))
		return -EPROTO;
	return 0;
}

int ctl_json_u64(const char *json, const char *path, uint64_t *out)
{
	const char *v;
	char *end;
	size_t len;
	int err;

	err = json_number(json, path, false, &v, &len);
	if (err)
		return err;
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (errno || end != v + len)
		return -EPROTO;
	return 0;
}

int ctl_json_double(const char *json, const char *path, double *out)
{
	const char *v;
	char *end;
	size_t len;
	int err;

	err = json_number(json, path, true, &v, &len);
	if (err)
		return err;
	*out = strtod(v, &end);
	if (end != v + len)
		return -EPROTO;
	return 0;
}

int ctl_json_str(const char *json, const char *path, char *buf, size_t cap)
{
	const char *v, *end;
	size_t len, n = 0;
	int err;

	err = ctl_json_get(json, path, &v, &len);
	if (err)
		return err;
	if (*v != '"')
		return -EPROTO;
	end = v + len - 1;
	for (const char *p = v + 1; p < end; p++) {
		char c = *p;

		if (c == '\\') {
			p++;
			switch (*p) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'u': {
				unsigned int u;

				if (end - p < 5 ||
				    sscanf(p + 1, "%4x", &u) != 1)
					return -EPROTO;
				c = (char)(u & 0xff);
				p += 4;
				break;
			}
			default:
				c = *p;
			}
		}
		if (n + 1 >= cap)
			return -ERANGE;
		buf[n++] = c;
	}
	if (!cap)
		return -ERANGE;
	buf[n] = '\0';
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements keepc, a test tool: a client of the keeper's
 * protocol (lib/keep) that sends what a user, hostile or not, may send,
 * for the keeper's tests (tests/integration/122-keep-hostile.sh).
 *
 *   keepc [-t MS] SOCKET STEP...
 *
 * The steps run in order on one connection; many is a step of its own:
 *   get [-p] [-n NAME] IMAGE OFFSET [SIZE]
 *       GET the copy of SIZE bytes (default: to the end) at OFFSET of
 *       IMAGE, opened for reading (-p: an O_PATH descriptor); NAME for
 *       display (default IMAGE)
 *   put [-f] [-u] [SIZE]
 *       PUT a new copy (stage_backing_new()) of the last GET's range, or
 *       of SIZE bytes: -f writes bytes over its range (memory it holds,
 *       where a copy made empty is sparse); -u seals it without
 *       F_SEAL_SEAL.  This process keeps its descriptor, as a daemon does
 *   scribble
 *       write 0xff over the last 4096 bytes of the copy given or put (its
 *       trailer), as a user may do to their own copy once it is kept
 *   sendfd [-p] FILE OP
 *       request OP (get, put, list, ping, forget, evict, or a number),
 *       FILE's descriptor beside it (-p: O_PATH)
 *   list, ping
 *       LIST, PING
 *   hold [-d]
 *       print "holding", then keep the connection until killed; -d: close
 *       this process's descriptor of its copy first
 *   linger [-q] [-r N] [-f FILE] OP
 *       request OP with two descriptors beside it: a memfd, then a TCP
 *       socket of its own that lingers in its close (SO_LINGER 600 s, its
 *       send window full: its peer is never accepted), or with -f FILE
 *       opened for writing, and then its first page written through
 *       another descriptor, held (on hangfs -w, the last release of the
 *       one sent writes the page back and waits for ever); -q sends a message
 *       the keeper refuses first, so that this one is still queued when
 *       the keeper closes the connection; -r N opens N more connections
 *       (held) and sends it on one more after them, which a keeper that
 *       allows N connections of a user refuses at accept with the message
 *       queued.  Prints "lingering", holds
 *   exec FILE PROGRAM
 *       name this process's copy (as descriptor 100) in a PING, as a
 *       daemon does, open FILE (close-on-exec) and exec PROGRAM: with a
 *       FILE whose FLUSH never comes, a process that stays in execve()
 *   many [-z SIZE] N IMAGE
 *       N copies of SIZE bytes (default 8192) at offsets 0, SIZE, 2 SIZE,
 *       ... of IMAGE, named IMAGE#0, IMAGE#1, ...: for each, a connection
 *       of its own, GET, PUT (unless a copy is given), close.  Prints
 *       one line: how many were put, given and refused (and the last
 *       refusal), after a line for one that failed
 *   burst N FILE
 *       N connections, each sending a GET with FILE's descriptor (its
 *       whole size) at once, none waiting for an answer: a keeper stopped
 *       meanwhile finds them all readable in one round.  Prints "burst: N
 *       sent", then keeps the connections until killed
 *
 * Each answer is printed on a line of its own, as it comes: COPY
 * complete=N, NONE, DONE status=N (what) a=N, ENTRY uid=N bytes=N
 * complete=N range=N conns=N flags=N name=NAME (with the bytes of NAME
 * outside printable ASCII as \xNN, as the keeper sent them).  An answer
 * that does not come within -t ms (default 10000) prints "timeout", a
 * connection the keeper closed "closed".
 *
 * Exit status: 0 once every step ran; 1 if the keeper could not be
 * reached or an answer did not come; 2 for a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keep/keep.h"
#include "stage/stage.h"

static int budget_ms = 10000;
static const char *sock_path;

/* The connection and what its steps left for the next. */
struct conn {
	int sock;
	struct keep_key key; /* of the last GET */
	uint64_t size; /* of its range */
	bool asked; /* a GET was sent */
	int copy; /* the copy given or put, or -1 */
};

static void usage(void)
{
	fprintf(stderr,
		"usage: keepc [-t MS] SOCKET STEP...\n"
		"steps: get [-p] [-n NAME] IMAGE OFFSET [SIZE] | put [-f] [-u] [SIZE]\n"
		"       | sendfd [-p] FILE OP | list | ping | hold [-d]\n"
		"       | exec FILE PROGRAM | linger [-q] [-r N] [-f FILE] OP\n"
		"   or: keepc [-t MS] SOCKET many [-z SIZE] N IMAGE\n"
		"   or: keepc [-t MS] SOCKET burst N FILE\n");
	exit(2);
}

static uint64_t number(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		usage();
	return v;
}

static int connect_keeper(int *sock)
{
	int err = keep_connect(sock_path, budget_ms, sock);

	if (err)
		fprintf(stderr, "keepc: cannot connect to %s: %s\n", sock_path,
			strerror(-err));
	return err;
}

static void key_of(const struct stat *sb, uint64_t offset, struct keep_key *k)
{
	keep_key_of(sb, offset, keep_pidns(0), k);
}

static void print_name(const char *name)
{
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (*p < 0x20 || *p >= 0x7f || *p == '\\')
			printf("\\x%02x", *p);
		else
			putchar(*p);
	}
}

/* Receive and print one answer; a descriptor with it goes to @c->copy.
 * Return: 0 or -errno (printed). */
static int answer(struct conn *c, struct keep_msg *m)
{
	int fd, err = keep_recv(c->sock, m, &fd);

	if (err == -EAGAIN || err == -EWOULDBLOCK)
		printf("timeout\n");
	else if (err == -ECONNRESET)
		printf("closed\n");
	else if (err)
		printf("error %s\n", strerror(-err));
	fflush(stdout);
	if (err)
		return err;
	if (fd >= 0) {
		if (c->copy >= 0)
			close(c->copy);
		c->copy = fd;
	}
	switch (m->op) {
	case KEEP_COPY:
		printf("COPY complete=%llu\n", (unsigned long long)m->a);
		break;
	case KEEP_NONE:
		printf("NONE\n");
		break;
	case KEEP_DONE:
		printf("DONE status=%d (%s) a=%llu\n", m->status,
		       m->status ? strerror(-m->status) : "ok",
		       (unsigned long long)m->a);
		break;
	case KEEP_ENTRY:
		printf("ENTRY uid=%u bytes=%llu complete=%llu range=%llu conns=%u flags=%u name=",
		       m->uid, (unsigned long long)m->a,
		       (unsigned long long)m->b, (unsigned long long)m->d,
		       m->in_use, m->flags);
		print_name(m->name);
		printf("\n");
		break;
	default:
		printf("op %u\n", m->op);
	}
	fflush(stdout);
	return 0;
}

/* Send @m with @fd; print every answer up to one that is no ENTRY. */
static int ask(struct conn *c, struct keep_msg *m, int fd)
{
	int err = keep_send(c->sock, m, fd);

	if (err == -EPIPE || err == -ECONNRESET) {
		/* The keeper closed it before the request (a refusal at
		 * accept may come first). */
		printf("closed\n");
		fflush(stdout);
		return err;
	}
	if (err) {
		printf("error send: %s\n", strerror(-err));
		fflush(stdout);
		return err;
	}
	do
		err = answer(c, m);
	while (!err && m->op == KEEP_ENTRY);
	return err;
}

/* Open @path for reading, or O_PATH; exit if it cannot be. */
static int open_file(const char *path, bool opath)
{
	int fd = open(path, (opath ? O_PATH : O_RDONLY) | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "keepc: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

/* A copy of the range @size of @key, sealed as a daemon seals it, or
 * (@no_seal_seal) only against growing and shrinking; @fill writes bytes
 * over its range.  Return: the memfd; exits if it cannot be made. */
static int new_copy(const struct keep_key *key, uint64_t size, bool fill,
		    bool no_seal_seal)
{
	uint64_t all = stage_backing_size(size);
	char buf[65536];
	int fd, err, to;

	err = stage_backing_new(size, key, sizeof(*key), "keepc", &fd);
	if (err) {
		fprintf(stderr, "keepc: stage_backing_new: %s\n",
			strerror(-err));
		exit(1);
	}
	memset(buf, 0xa5, sizeof(buf));
	for (uint64_t off = 0; fill && off < size; off += sizeof(buf)) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);

		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
			perror("keepc: fill");
			exit(1);
		}
	}
	if (!no_seal_seal)
		return fd;
	/* The same bytes in a memfd that may still be sealed otherwise. */
	to = memfd_create("keepc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (to < 0 || ftruncate(to, (off_t)all)) {
		perror("keepc: memfd");
		exit(1);
	}
	for (uint64_t off = 0; off < all; off += sizeof(buf)) {
		size_t n = all - off < sizeof(buf) ? all - off : sizeof(buf);

		/* Holes read as zeros and are left holes. */
		if (pread(fd, buf, n, (off_t)off) != (ssize_t)n) {
			perror("keepc: copy");
			exit(1);
		}
		for (size_t i = 0; i < n; i++) {
			if (!buf[i])
				continue;
			if (pwrite(to, buf, n, (off_t)off) != (ssize_t)n) {
				perror("keepc: copy");
				exit(1);
			}
			break;
		}
	}
	close(fd);
	if (fcntl(to, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK)) {
		perror("keepc: seal");
		exit(1);
	}
	return to;
}

/* Flags of a step: the letters of @flags as -X arguments, one at a time.
 * Return: the flag, 0 at the first argument that is none. */
static int step_flag(char ***argv, const char *flags)
{
	const char *a = **argv;

	if (!a || a[0] != '-' || !a[1] || a[2] || !strchr(flags, a[1]))
		return 0;
	(*argv)++;
	return a[1];
}

static int op_of(const char *s)
{
	static const struct {
		const char *name;
		int op;
	} ops[] = { { "get", KEEP_GET },       { "put", KEEP_PUT },
		    { "list", KEEP_LIST },     { "ping", KEEP_PING },
		    { "forget", KEEP_FORGET }, { "evict", KEEP_EVICT } };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(s, ops[i].name))
			return ops[i].op;
	return (int)number(s);
}

static int step_get(struct conn *c, char ***argv)
{
	struct keep_msg m = { .op = KEEP_GET };
	const char *name = NULL, *image;
	bool opath = false;
	struct stat sb;
	int f, fd, err;

	while ((f = step_flag(argv, "pn"))) {
		if (f == 'p')
			opath = true;
		else if (!(name = *(*argv)++))
			usage();
	}
	if (!(*argv)[0] || !(*argv)[1])
		usage();
	image = *(*argv)++;
	m.a = number(*(*argv)++);
	fd = open_file(image, opath);
	if (fstat(fd, &sb)) {
		perror("keepc: fstat");
		exit(1);
	}
	m.b = (uint64_t)sb.st_size > m.a ? (uint64_t)sb.st_size - m.a : 0;
	if (**argv && (**argv)[0] >= '0' && (**argv)[0] <= '9')
		m.b = number(*(*argv)++);
	snprintf(m.name, sizeof(m.name), "%s", name ? name : image);
	key_of(&sb, m.a, &c->key);
	c->size = m.b;
	c->asked = true;
	err = ask(c, &m, fd);
	close(fd);
	return err;
}

/* scribble: 0xff over the copy's last 4096 bytes.  Return: 0 or -errno. */
static int step_scribble(struct conn *c)
{
	unsigned char junk[4096];
	struct stat sb;

	memset(junk, 0xff, sizeof(junk));
	if (c->copy < 0 || fstat(c->copy, &sb) ||
	    sb.st_size < (off_t)sizeof(junk) ||
	    pwrite(c->copy, junk, sizeof(junk),
		   sb.st_size - (off_t)sizeof(junk)) != (ssize_t)sizeof(junk)) {
		perror("keepc: scribble");
		return -EINVAL;
	}
	printf("scribbled\n");
	fflush(stdout);
	return 0;
}

static int step_put(struct conn *c, char ***argv)
{
	struct keep_msg m = { .op = KEEP_PUT };
	bool fill = false, no_seal_seal = false;
	uint64_t size = c->size;
	int f, fd;

	while ((f = step_flag(argv, "fu"))) {
		if (f == 'f')
			fill = true;
		else
			no_seal_seal = true;
	}
	if (**argv && (**argv)[0] >= '0' && (**argv)[0] <= '9')
		size = number(*(*argv)++);
	if (!c->asked) {
		fprintf(stderr, "keepc: put needs a get before it\n");
		exit(2);
	}
	fd = new_copy(&c->key, size, fill, no_seal_seal);
	if (c->copy >= 0)
		close(c->copy);
	c->copy = fd;
	return ask(c, &m, fd);
}

static int step_sendfd(struct conn *c, char ***argv)
{
	struct keep_msg m = { 0 };
	bool opath = step_flag(argv, "p");
	const char *file;
	int fd, err;

	if (!(*argv)[0] || !(*argv)[1])
		usage();
	file = *(*argv)++;
	m.op = (uint32_t)op_of(*(*argv)++);
	snprintf(m.name, sizeof(m.name), "%s", file);
	fd = open_file(file, opath);
	err = ask(c, &m, fd);
	close(fd);
	return err;
}

static void step_hold(struct conn *c, char ***argv)
{
	if (step_flag(argv, "d") && c->copy >= 0) {
		close(c->copy);
		c->copy = -1;
	}
	printf("holding\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* linger [-q] [-r N] [-f FILE] OP.  Return: -errno if it could not; else
 * it holds. */
static int step_linger(struct conn *c, char ***argv)
{
	struct keep_msg m = { .op = KEEP_PING };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct linger lg = { 1, 600 };
	socklen_t len = sizeof(sa);
	bool queued = false;
	const char *file = NULL;
	uint64_t more = 0;
	char buf[65536] = { 0 };
	int l, t, f, fds[2], s = c->sock;
	union {
		char b[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.b,
			     .msg_controllen = sizeof(u.b) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	while ((f = step_flag(argv, "qrf"))) {
		if (f == 'q') {
			queued = true;
			continue;
		}
		if (!**argv)
			usage();
		if (f == 'r')
			more = number(*(*argv)++);
		else
			file = *(*argv)++;
	}
	if (more) {
		int held;

		for (; more; more--)
			if (connect_keeper(&held))
				return -ECONNREFUSED;
		if (connect_keeper(&s))
			return -ECONNREFUSED;
	}
	if (!**argv)
		usage();
	m.op = (uint32_t)op_of(*(*argv)++);
	m.magic = KEEP_MAGIC;
	if (file) {
		t = open(file, O_RDWR | O_CLOEXEC);
		if (t < 0) {
			perror("keepc: linger: -f");
			return -errno;
		}
	} else {
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		l = socket(AF_INET, SOCK_STREAM, 0);
		t = socket(AF_INET, SOCK_STREAM, 0);
		if (l < 0 || t < 0 ||
		    bind(l, (struct sockaddr *)&sa, sizeof(sa)) ||
		    listen(l, 1) ||
		    getsockname(l, (struct sockaddr *)&sa, &len) ||
		    connect(t, (struct sockaddr *)&sa, sizeof(sa))) {
			perror("keepc: linger: tcp");
			return -errno;
		}
		while (send(t, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
		if (setsockopt(t, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg))) {
			perror("keepc: linger: SO_LINGER");
			return -errno;
		}
	}
	fds[0] = memfd_create("keepc", MFD_CLOEXEC);
	fds[1] = t;
	if (fds[0] < 0) {
		perror("keepc: linger: memfd");
		return -errno;
	}
	if (queued) {
		struct keep_msg junk = { 0 };

		if (send(s, &junk, sizeof(junk), 0) < 0) {
			perror("keepc: linger: send");
			return -errno;
		}
	}
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(2 * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	if (sendmsg(s, &mh, 0) < 0) {
		perror("keepc: linger: sendmsg");
		return -errno;
	}
	close(t); /* the keeper's copy is the last */
	/* The page written through a descriptor of its own, kept open (no
	 * FLUSH writes it back): the last release of the one sent writes
	 * the file's dirty pages back, and waits for them. */
	if (file && ((t = open(file, O_RDWR | O_CLOEXEC)) < 0 ||
		     pwrite(t, buf, 4096, 0) != 4096)) {
		perror("keepc: linger: -f write");
		return -errno;
	}
	printf("lingering\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* exec FILE PROGRAM: name the copy (as descriptor EXEC_FD, kept across
 * exec) in a PING, open FILE close-on-exec, exec PROGRAM.  Return: -errno
 * if it could not; else it does not return. */
#define EXEC_FD 100
static int step_exec(struct conn *c, char ***argv)
{
	struct keep_msg m = { .op = KEEP_PING, .b = EXEC_FD + 1 };
	char *prog, *pargv[2];
	int err;

	if (!(*argv)[0] || !(*argv)[1] || c->copy < 0)
		usage();
	if (dup2(c->copy, EXEC_FD) != EXEC_FD) {
		perror("keepc: dup2");
		return -errno;
	}
	err = ask(c, &m, -1);
	if (err)
		return err;
	(void)open_file(*(*argv)++, false); /* O_CLOEXEC: closed by exec */
	prog = *(*argv)++;
	pargv[0] = prog;
	pargv[1] = NULL;
	printf("exec %s\n", prog);
	fflush(stdout);
	execv(prog, pargv);
	perror("keepc: exec");
	return -errno;
}

/* many: Return: 0 once all were asked; -errno at the first that failed. */
static int step_many(char ***argv)
{
	uint64_t size = 8192, n, put = 0, given = 0, refused = 0;
	int last = 0, fd, err = 0;
	const char *image;
	struct stat sb;

	if (step_flag(argv, "z")) {
		if (!**argv)
			usage();
		size = number(*(*argv)++);
	}
	if (!(*argv)[0] || !(*argv)[1])
		usage();
	n = number(*(*argv)++);
	image = *(*argv)++;
	fd = open_file(image, false);
	if (fstat(fd, &sb)) {
		perror("keepc: fstat");
		exit(1);
	}
	for (uint64_t i = 0; i < n && !err; i++) {
		struct keep_msg m = { .op = KEEP_GET,
				      .a = i * size,
				      .b = size };
		struct conn c = { .copy = -1 };
		int got;

		snprintf(m.name, sizeof(m.name), "%s#%llu", image,
			 (unsigned long long)i);
		err = connect_keeper(&c.sock);
		if (err)
			break;
		key_of(&sb, m.a, &c.key);
		err = keep_send(c.sock, &m, fd);
		if (!err)
			err = keep_recv(c.sock, &m, &c.copy);
		if (!err && m.op == KEEP_NONE) {
			c.copy = new_copy(&c.key, size, false, false);
			m = (struct keep_msg){ .op = KEEP_PUT };
			err = keep_send(c.sock, &m, c.copy);
			if (!err)
				err = keep_recv(c.sock, &m, &got);
			if (got >= 0)
				close(got);
		}
		if (!err && m.op == KEEP_COPY) {
			given++;
		} else if (!err && m.op == KEEP_DONE && !m.status) {
			put++;
		} else if (!err) {
			refused++;
			last = m.op == KEEP_DONE ? m.status : -EPROTO;
		} else {
			printf("many: copy %llu: %s\n", (unsigned long long)i,
			       err == -EAGAIN ? "timeout" : strerror(-err));
		}
		if (c.copy >= 0)
			close(c.copy);
		close(c.sock);
	}
	close(fd);
	printf("many: %llu put, %llu given, %llu refused (last: %s)\n",
	       (unsigned long long)put, (unsigned long long)given,
	       (unsigned long long)refused, last ? strerror(-last) : "none");
	fflush(stdout);
	return err;
}

/* burst: Return: -errno if a connection or send failed; else it holds. */
static int step_burst(char ***argv)
{
	struct keep_msg m = { .op = KEEP_GET };
	uint64_t n, i;
	struct stat sb;
	int fd, sock, err = 0;

	if (!(*argv)[0] || !(*argv)[1])
		usage();
	n = number(*(*argv)++);
	fd = open_file(**argv, false);
	snprintf(m.name, sizeof(m.name), "%s", *(*argv)++);
	if (fstat(fd, &sb)) {
		perror("keepc: fstat");
		exit(1);
	}
	m.b = (uint64_t)sb.st_size;
	for (i = 0; i < n && !err; i++) {
		err = connect_keeper(&sock);
		if (!err)
			err = keep_send(sock, &m, fd);
	}
	if (err) {
		printf("burst: %llu sent, then %s\n", (unsigned long long)i - 1,
		       strerror(-err));
		return err;
	}
	printf("burst: %llu sent\n", (unsigned long long)n);
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	struct conn c = { .sock = -1, .copy = -1 };
	int err = 0;

	(void)argc;
	argv++;
	if (*argv && !strcmp(*argv, "-t")) {
		if (!argv[1])
			usage();
		budget_ms = (int)number(argv[1]);
		argv += 2;
	}
	if (!*argv || !argv[1])
		usage();
	sock_path = *argv++;
	if (!strcmp(*argv, "burst")) {
		argv++;
		return step_burst(&argv) ? 1 : 0;
	}
	if (!strcmp(*argv, "many")) {
		argv++;
		err = step_many(&argv);
		if (*argv)
			usage();
		return err ? 1 : 0;
	}
	if (connect_keeper(&c.sock))
		return 1;
	while (*argv && !err) {
		const char *step = *argv++;

		if (!strcmp(step, "get"))
			err = step_get(&c, &argv);
		else if (!strcmp(step, "put"))
			err = step_put(&c, &argv);
		else if (!strcmp(step, "sendfd"))
			err = step_sendfd(&c, &argv);
		else if (!strcmp(step, "scribble"))
			err = step_scribble(&c);
		else if (!strcmp(step, "list"))
			err = ask(&c, &(struct keep_msg){ .op = KEEP_LIST },
				  -1);
		else if (!strcmp(step, "ping"))
			err = ask(&c, &(struct keep_msg){ .op = KEEP_PING },
				  -1);
		else if (!strcmp(step, "hold"))
			step_hold(&c, &argv);
		else if (!strcmp(step, "linger"))
			err = step_linger(&c, &argv);
		else if (!strcmp(step, "exec"))
			err = step_exec(&c, &argv);
		else
			usage();
	}
	return err ? 1 : 0;
}

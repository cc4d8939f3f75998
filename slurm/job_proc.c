// SPDX-License-Identifier: MIT
/*
 * This file implements root's dealings with processes: the one way root
 * signals a process of a job's, job__kill_checked(); the one way it drops
 * to a user, job__drop_to_user(); and waiting for a child within a
 * deadline, job__wait_child().  A pid read from a file or from /proc may name
 * another process by the time it is signalled (pids are reused), and a
 * command line says nothing (any user can start any program under any
 * name, a setuid one included).  So root pins the process with a pidfd,
 * opens its /proc directory, checks through the pidfd that it is still
 * alive (then that directory is the pinned process's), checks through
 * that directory who it is (executable, ids, start time), and signals
 * it through the pidfd, which cannot reach another process.  The checks
 * run in a child with a budget: /proc of a process can wait for ever.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "job_i.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/proc.h"

#define EACH_DAEMON_S 5 /* the look for daemons in /proc, at most */
#define EACH_DAEMON_MAX (4 << 20) /* what it may say, at most */
#define SCAN_CHECK_MS 2000 /* the look at one process named squashcached */
#define SCAN_CHECKERS 64 /* such looks at once, at most */

#define KILL_GRACE_S 2.0 /* waiting for a killed child */
#define CHECK_MS 2000 /* one check of who a process is, at most */
#define CHECK_STUCK_MS 5000 /* all checks of this process that did not end */
#define CHECK_FLOOR_MS 250 /* one check, once those are spent */

static int64_t check_stuck_ms; /* spent on checks that did not end */

/* Read the file @name of the /proc directory @dirfd into @buf. */
static int read_at(int dirfd, const char *name, char *buf, size_t cap)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	return 0;
}

/* The start time (field 22 of stat) of the process of @dirfd. */
static int start_at(int dirfd, uint64_t *start)
{
	char line[1024], *p;
	int err = read_at(dirfd, "stat", line, sizeof(line));

	if (err)
		return err;
	/* The command name may hold spaces and parentheses. */
	p = strrchr(line, ')');
	if (!p)
		return -EPROTO;
	p++;
	for (int field = 3; field < 22; field++) {
		p += strspn(p, " ");
		p += strcspn(p, " ");
	}
	if (!*p)
		return -EPROTO;
	*start = strtoull(p, NULL, 10);
	return 0;
}

/* Are the real, effective, saved and fs uids of @dirfd's process @uid
 * (JOB_ANY_USER: one and the same uid, not root's)? */
static bool is_uid_at(int dirfd, uid_t uid)
{
	char buf[4096], *p;
	unsigned int r, e, s, f;

	if (read_at(dirfd, "status", buf, sizeof(buf)))
		return false;
	p = strstr(buf, "\nUid:");
	if (!p || sscanf(p + 5, "%u %u %u %u", &r, &e, &s, &f) != 4)
		return false;
	if (r != e || r != s || r != f)
		return false;
	return uid == JOB_ANY_USER ? r != 0 : r == (unsigned int)uid;
}

/* Is the process of @dirfd the one @want describes? */
static bool is_wanted_at(int dirfd, const struct job_proc *want)
{
	uint64_t start;
	dev_t dev;
	ino_t ino;

	/* Not stat() of "exe": that asks the program's file system, which
	 * may be the user's own FUSE server that never answers. */
	if (proc_exe_id_at(dirfd, &dev, &ino) || dev != want->exe->st_dev ||
	    ino != want->exe->st_ino)
		return false;
	if (start_at(dirfd, &start) || start != want->start)
		return false;
	return is_uid_at(dirfd, want->uid);
}

/*
 * is_wanted_at() in a child, within a budget: /proc/PID/exe and stat wait
 * on the process's exec lock, which an execve() of a user's holds as long
 * as a file it closes on exec takes to flush (a FUSE file of the user's
 * own that never answers: for ever).  Checks that do not end share
 * CHECK_STUCK_MS in the life of this process (a hook); past that each has
 * CHECK_FLOOR_MS.  Return: 0 if it is the process wanted; -EPERM if not;
 * -ETIMEDOUT if the check did not end (its child killed, not waited for);
 * -errno.
 */
static int wanted_within(int dirfd, const struct job_proc *want)
{
	int64_t budget = CHECK_STUCK_MS - check_stuck_ms, t0 = mono_ns();
	struct pollfd pf = { .events = POLLIN };
	int status, got;
	pid_t child;

	budget = budget > CHECK_MS	 ? CHECK_MS :
		 budget < CHECK_FLOOR_MS ? CHECK_FLOOR_MS :
					   budget;
	child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		/* Nothing of the hook's (slurmd reads its output to the
		 * end) in a child that may be stuck. */
		job__child_stdio(-1);
		_exit(is_wanted_at(dirfd, want) ? 0 : 1);
	}
	/* No pidfd (out of descriptors) or no poll: given up at once, not
	 * waited for. */
	pf.fd = pidfd_open(child, 0);
	do
		got = pf.fd < 0 ? 0 : poll(&pf, 1, (int)budget);
	while (got < 0 && errno == EINTR);
	if (pf.fd >= 0)
		close(pf.fd);
	if (got <= 0) {
		kill(child, SIGKILL);
		(void)waitpid(child, &status, WNOHANG);
		check_stuck_ms += (mono_ns() - t0) / 1000000;
		job__err(
			"pid %d: who it is could not be read within %lld ms (a process that waits in execve() on a file system that does not answer?): not signalled",
			(int)want->pid, (long long)budget);
		return -ETIMEDOUT;
	}
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EPERM;
}

int job__kill_checked(const struct job_proc *want, int sig)
{
	char path[32];
	int pidfd, dirfd, err;

	if (want->pid <= 1)
		return -EINVAL;
	pidfd = pidfd_open(want->pid, 0);
	if (pidfd < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d", (int)want->pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		err = -errno;
		goto out_close_pidfd;
	}
	/* Alive after the open: the directory is the pinned process's. */
	if (pidfd_send_signal(pidfd, 0, NULL, 0)) {
		err = -errno;
		goto out_close_dir;
	}
	err = wanted_within(dirfd, want);
	if (!err && pidfd_send_signal(pidfd, sig, NULL, 0))
		err = -errno;
out_close_dir:
	close(dirfd);
out_close_pidfd:
	close(pidfd);
	return err;
}

int job__exe_stat(bool self, struct stat *st)
{
	char path[PATH_MAX];
	int err;

	if (self)
		return stat("/proc/self/exe", st) ? -errno : 0;
	/* What `mountctl mount` runs in job__drop_to_user()'s environment
	 * (no SQUASHCACHED, PATH JOB_USER_PATH). */
	err = proc_find_program("squashcached", true, JOB_USER_PATH, path,
				sizeof(path));
	if (err)
		return err;
	return stat(path, st) ? -errno : 0;
}

/* The mount point a squashcached process serves: its last argument.
 * Return: true if @pid's command line is that of squashcached. */
static bool daemon_mountpoint(const char *pid, char *mnt, size_t cap)
{
	char path[300], buf[8192], *last = NULL, *b;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return false;
	buf[r] = '\0';
	b = strrchr(buf, '/');
	if (strcmp(b ? b + 1 : buf, "squashcached"))
		return false;
	for (char *a = buf; a < buf + r; a += strlen(a) + 1)
		last = a;
	if (!last || last == buf || strlen(last) >= cap)
		return false;
	memcpy(mnt, last, strlen(last) + 1);
	return true;
}

/* Is the name (comm) of the process squashcached?  From /proc/@pid/status,
 * which waits on nothing of the process's (its stat waits on its exec
 * lock): so only a process so named can make the scan wait. */
static bool named_daemon(const char *pid)
{
	char path[300], buf[256];
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return false;
	buf[r] = '\0';
	return !strncmp(buf, "Name:\tsquashcached\n",
			strlen("Name:\tsquashcached\n"));
}

/* Is the process of /proc/@pid running the executable @exe?  Asked of
 * /proc only (proc_exe_id()): any user can name a process squashcached,
 * and run it from their own FUSE server. */
static bool runs_exe(const char *pid, const struct stat *exe)
{
	dev_t dev;
	ino_t ino;

	return !proc_exe_id((pid_t)atoi(pid), &dev, &ino) &&
	       dev == exe->st_dev && ino == exe->st_ino;
}

/* In a checker of the scan: whether process @pid (named squashcached) is
 * a daemon, said on @out as "PID\0START\0MOUNT\0" if it is. */
static void __attribute__((noreturn))
check_one(const char *pid, const struct stat *exe, int out)
{
	char mnt[PATH_MAX];
	uint64_t start;

	/* Its program, from /proc alone; only then its command line
	 * (reading that takes the process's memory lock). */
	if (!runs_exe(pid, exe) || !daemon_mountpoint(pid, mnt, sizeof(mnt)) ||
	    proc_start_time((pid_t)atoi(pid), &start))
		_exit(0);
	_exit(dprintf(out, "%s%c%llu%c%s%c", pid, 0, (unsigned long long)start,
		      0, mnt, 0) < 0);
}

/* A checker of the scan's, under way. */
struct checker {
	pid_t pid; /* the checker */
	int fd; /* its pipe's read end */
	int64_t deadline; /* mono_ns() */
	char target[16]; /* the process it looks at */
};

/* In the scan's child: the checker @c ended, or (@late) is past its
 * deadline: what it said goes on to @out; a late one is killed (not
 * waited for: its wait is the kernel's, which the kill ends when it
 * can) and said as "!PID\0". */
static void checker_done(struct checker *c, bool late, int out)
{
	char buf[PATH_MAX + 64];
	ssize_t n = 0;

	if (late) {
		kill(c->pid, SIGKILL);
		(void)waitpid(c->pid, NULL, WNOHANG);
		if (dprintf(out, "!%s%c", c->target, 0) < 0)
			_exit(3);
	} else {
		do
			n = read(c->fd, buf, sizeof(buf));
		while (n < 0 && errno == EINTR);
		(void)waitpid(c->pid, NULL, 0);
		if (n > 0 && write(out, buf, (size_t)n) != n)
			_exit(3);
	}
	close(c->fd);
}

/* In the scan's child: wait for the first of @c's @n checkers to end or
 * pass its deadline (each one ended is taken out of @c).  Return: how
 * many are left. */
static unsigned int checkers_wait(struct checker *c, unsigned int n, int out)
{
	struct pollfd pf[SCAN_CHECKERS];
	int64_t first = INT64_MAX, now = mono_ns();
	unsigned int i;

	for (i = 0; i < n; i++) {
		/* No POLLIN: a record is whole once the checker ended. */
		pf[i] = (struct pollfd){ .fd = c[i].fd };
		if (c[i].deadline < first)
			first = c[i].deadline;
	}
	if (poll(pf, n, first > now ? (int)((first - now) / 1000000) + 1 : 0) <
	    0)
		return n;
	now = mono_ns();
	for (i = 0; i < n;) {
		/* POLLHUP: it ended (its record, if any, is all there). */
		if ((pf[i].revents & (POLLHUP | POLLERR)) ||
		    now >= c[i].deadline) {
			checker_done(&c[i],
				     !(pf[i].revents & (POLLHUP | POLLERR)),
				     out);
			c[i] = c[--n];
			pf[i] = pf[n];
		} else {
			i++;
		}
	}
	return n;
}

/* In the scan's child: each daemon found, as "PID\0START\0MOUNT\0" on
 * @out; each process named squashcached that could not be looked at
 * within SCAN_CHECK_MS, as "!PID\0".  Each is looked at by a checker of
 * its own, SCAN_CHECKERS at once: one that waits (its /proc exe and stat
 * wait on its exec lock, held through an execve() that a user can make
 * wait for ever) costs its own budget, not the look at the others. */
static void __attribute__((noreturn))
scan_daemons(const struct stat *exe, int out)
{
	struct checker c[SCAN_CHECKERS];
	DIR *d = opendir("/proc");
	unsigned int n = 0;
	struct dirent *e;

	if (!d)
		_exit(2);
	while ((e = readdir(d))) {
		int p[2];

		/* Its name first, from status, which waits on nothing. */
		if (!isdigit((unsigned char)e->d_name[0]) ||
		    strlen(e->d_name) >= sizeof(c[0].target) ||
		    !named_daemon(e->d_name))
			continue;
		while (n == SCAN_CHECKERS)
			n = checkers_wait(c, n, out);
		if (pipe2(p, O_CLOEXEC))
			_exit(4);
		c[n].pid = fork();
		if (c[n].pid == 0) {
			/* Nothing that tells the scan's end: a checker that
			 * waits must not hold the hook's pipe. */
			close(out);
			close(p[0]);
			check_one(e->d_name, exe, p[1]);
		}
		close(p[1]);
		if (c[n].pid < 0)
			_exit(4);
		c[n].fd = p[0];
		c[n].deadline = mono_ns() + (int64_t)SCAN_CHECK_MS * 1000000;
		snprintf(c[n].target, sizeof(c[n].target), "%s", e->d_name);
		n++;
	}
	closedir(d);
	while (n)
		n = checkers_wait(c, n, out);
	_exit(0);
}

int job__each_daemon(const struct stat *exe,
		     int (*fn)(struct job_proc *p, const char *mnt, void *arg),
		     void *arg)
{
	double end = mono_sec() + EACH_DAEMON_S;
	size_t len = 0, cap = 0;
	char *buf = NULL;
	int out[2], sum = 0, status, err = 0;
	pid_t child;

	/* /proc of another process can wait for ever: its stat, exe and
	 * links wait on its exec lock, which an execve() holds while it
	 * flushes a file it closes (a user's FUSE file that never answers);
	 * its cmdline waits on its memory lock.  So the scan runs in a child
	 * with a budget; the caller only ever reads a pipe. */
	if (pipe2(out, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child == 0) {
		/* Nothing of the hook's: a child stuck in the scan would
		 * hold slurmd's pipe of the hook's output, and slurmd reads
		 * it to the end. */
		job__child_stdio(-1);
		close(out[0]);
		scan_daemons(exe, out[1]);
	}
	close(out[1]);
	if (child < 0) {
		close(out[0]);
		return -errno;
	}
	for (;;) {
		struct pollfd pf = { .fd = out[0], .events = POLLIN };
		double left = end - mono_sec();
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) == 0) {
			err = -ETIMEDOUT;
			break;
		}
		if (len + 4096 > cap) {
			char *nb = cap < EACH_DAEMON_MAX ?
					   realloc(buf, cap + 65536) :
					   NULL;

			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap += 65536;
		}
		n = read(out[0], buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(out[0]);
	if (err) {
		/* Stuck in a wait of the kernel's: killed, not waited for.
		 * What it found so far is still looked at (a record cut off
		 * at the end is left out below). */
		kill(child, SIGKILL);
		(void)waitpid(child, &status, WNOHANG);
		job__err(
			"the look for daemons in /proc did not end within %d s (a process that waits in execve() on a file system that does not answer?): %s",
			EACH_DAEMON_S, err_str(err));
	} else {
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			free(buf);
			return -ENOENT;
		}
	}
	for (size_t i = 0; i < len;) {
		const char *pid = buf + i, *start, *mnt;
		struct job_proc p = { .uid = JOB_ANY_USER, .exe = exe };
		size_t a = strnlen(pid, len - i), b, c;

		if (i + a + 1 > len)
			break;
		if (pid[0] == '!') {
			/* Not looked at: the others were. */
			job__err(
				"process %s, named squashcached, could not be looked at within %d ms (it waits in execve() on a file system that does not answer?): skipped",
				pid + 1, SCAN_CHECK_MS);
			i += a + 1;
			continue;
		}
		if (i + a + 1 >= len)
			break;
		start = pid + a + 1;
		b = strnlen(start, len - i - a - 1);
		if (i + a + b + 2 >= len)
			break;
		mnt = start + b + 1;
		c = strnlen(mnt, len - i - a - b - 2);
		if (i + a + b + c + 3 > len)
			break;
		p.pid = (pid_t)atoi(pid);
		p.start = strtoull(start, NULL, 10);
		sum += fn(&p, mnt, arg);
		i += a + b + c + 3;
	}
	free(buf);
	return err ? err : sum;
}

/* Open the job directory's record @name (root's, 0600, a file). */
static int open_record(struct jobdir *j, const char *name, int flags)
{
	int fd = openat(j->dir, name, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Append "PID START" of @pid to the record @name.  Return: 0 or -errno. */
static int record(struct jobdir *j, const char *name, pid_t pid)
{
	int fd = open_record(j, name, O_WRONLY | O_CREAT | O_APPEND), err = 0;
	uint64_t start;

	if (fd < 0)
		return fd;
	err = proc_start_time(pid, &start);
	if (!err &&
	    dprintf(fd, "%d %llu\n", (int)pid, (unsigned long long)start) < 0)
		err = -EIO;
	close(fd);
	return err;
}

pid_t job__fork_recorded(struct jobdir *j, const char *name, bool session)
{
	int gate[2], err = 0;
	pid_t child;
	char go = 0;

	/* Both ways: the child says it is in its own session (if asked)
	 * before the parent records it and returns, the parent says go
	 * once the record is written. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gate))
		return -errno;
	child = fork();
	if (child == 0) {
		/* EOF without a go: the record is not there, or the parent
		 * is gone before writing it. */
		close(gate[1]);
		if ((session && setsid() < 0) ||
		    send(gate[0], "s", 1, MSG_NOSIGNAL) != 1 ||
		    read(gate[0], &go, 1) != 1 || go != 'g')
			_exit(125);
		close(gate[0]);
		return 0;
	}
	close(gate[0]);
	/* Our own child, one syscall from here: its "s", or EOF if it
	 * died.  Before the parent returns: slurmd kills the Prolog's
	 * process group once the Prolog exits, and a child not yet in a
	 * session of its own would go with it. */
	if (child < 0)
		err = -errno;
	else if (read(gate[1], &go, 1) != 1 || go != 's')
		err = -ECHILD;
	if (!err)
		err = record(j, name, child);
	if (!err && send(gate[1], "g", 1, MSG_NOSIGNAL) != 1)
		err = -errno;
	close(gate[1]);
	if (err && child > 0)
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
	return err ? err : child;
}

void job__kill_recorded(struct jobdir *j, const char *name, uid_t uid,
			const struct stat *exe)
{
	int fd = open_record(j, name, O_RDONLY);
	struct job_proc p = { .uid = uid, .exe = exe };
	unsigned long long pid, start;
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while (fscanf(f, "%llu %llu", &pid, &start) == 2) {
		if (pid <= 1 || pid >= (1u << 30))
			continue;
		p.pid = (pid_t)pid;
		p.start = start;
		(void)job__kill_checked(&p, SIGKILL);
	}
	fclose(f);
}

/*
 * Drop from root to the job's user for good, in a child: a session of its
 * own (so that its group can be killed), the user's groups, ids, a clean
 * environment.  Return: 0, or -1 if any step failed.
 */
int job__drop_to_user(const struct job_ids *ids)
{
	static const char *const keep[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS",
					    "TSAN_OPTIONS", "LSAN_OPTIONS",
					    "SQC_TEST_ALLOW_PAUSE" };
	char *kept[ARRAY_SIZE(keep)];

	for (size_t i = 0; i < ARRAY_SIZE(keep); i++) {
		const char *v = getenv(keep[i]);

		kept[i] = v ? strdup(v) : NULL;
	}
	if (setsid() < 0)
		return -1;
	if (ids->user[0] ? initgroups(ids->user, ids->gid) :
			   setgroups(1, &ids->gid))
		return -1;
	if (setresgid(ids->gid, ids->gid, ids->gid) ||
	    setresuid(ids->uid, ids->uid, ids->uid))
		return -1;
	if (ids->uid != 0 && (!setuid(0) || geteuid() == 0))
		return -1;
	if (chdir("/"))
		return -1;
	clearenv();
	setenv("PATH", JOB_USER_PATH, 1);
	setenv("HOME", ids->home[0] ? ids->home : "/", 1);
	if (ids->user[0]) {
		setenv("USER", ids->user, 1);
		setenv("LOGNAME", ids->user, 1);
	}
	for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
		if (kept[i])
			setenv(keep[i], kept[i], 1);
	return 0;
}

/*
 * Wait for @pid, reading its stderr from @errfd into @msg and its result
 * line from @resfd into @res, until @deadline (mono_sec()).  At the
 * deadline its process group is killed.
 * Return: its exit status; -ETIMEDOUT if it had to be killed.
 */
int job__wait_child(pid_t pid, int errfd, int resfd, double deadline, char *msg,
		    size_t mcap, char *res, size_t rcap)
{
	struct pollfd p[2] = { { .fd = errfd, .events = POLLIN },
			       { .fd = resfd, .events = POLLIN } };
	char *buf[2] = { msg, res };
	size_t len[2] = { 0, 0 }, cap[2] = { mcap, rcap };
	int status, nopen = (errfd >= 0) + (resfd >= 0);
	bool late = false;

	msg[0] = res[0] = '\0';
	while (nopen && !(late = mono_sec() >= deadline)) {
		double left = deadline - mono_sec();

		if (poll(p, 2, left > 0.2 ? 200 : (int)(left * 1000) + 1) < 0 &&
		    errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			char tmp[512];
			ssize_t n;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			n = read(p[i].fd, tmp, sizeof(tmp));
			if (n <= 0) {
				p[i].fd = -1;
				nopen--;
				continue;
			}
			if (len[i] + 1 < cap[i]) {
				size_t k = MIN((size_t)n, cap[i] - 1 - len[i]);

				memcpy(buf[i] + len[i], tmp, k);
				len[i] += k;
				buf[i][len[i]] = '\0';
			}
		}
	}
	while (!late) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) :
						   128 + WTERMSIG(status);
		if (r < 0 && errno != EINTR)
			return -ECHILD;
		late = mono_sec() >= deadline;
		if (!late)
			sleep_ms(10);
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	for (double end = mono_sec() + KILL_GRACE_S; mono_sec() < end;) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		sleep_ms(10);
	}
	return -ETIMEDOUT;
}

void job__child_stdio(int errfd)
{
	int nul = open("/dev/null", O_RDWR);

	dup2(nul, 0);
	dup2(nul, 1);
	dup2(errfd >= 0 ? errfd : nul, 2);
	if (nul > 2)
		close(nul);
}

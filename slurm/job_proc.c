// SPDX-License-Identifier: MIT
/*
 * This file implements the one way root signals a process of a job's:
 * job__kill_checked().  A pid read from a file or from /proc may name
 * another process by the time it is signalled (pids are reused), and a
 * command line says nothing (any user can start any program under any
 * name, a setuid one included).  So root pins the process with a pidfd,
 * opens its /proc directory, checks through the pidfd that it is still
 * alive (then that directory is the pinned process's), checks through
 * that directory who it is (executable, ids, start time), and signals
 * it through the pidfd, which cannot reach another process.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "job_i.h"
#include "mountctl/mountctl.h"
#include "util/proc.h"

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
	struct stat st;
	uint64_t start;

	if (fstatat(dirfd, "exe", &st, 0) || st.st_dev != want->exe->st_dev ||
	    st.st_ino != want->exe->st_ino)
		return false;
	if (start_at(dirfd, &start) || start != want->start)
		return false;
	return is_uid_at(dirfd, want->uid);
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
	err = is_wanted_at(dirfd, want) ? 0 : -EPERM;
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
	if (self)
		return stat("/proc/self/exe", st) ? -errno : 0;
	return mc_daemon_stat(JOB_USER_PATH, st);
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
	if (!last || last == buf)
		return false;
	snprintf(mnt, cap, "%s", last);
	return true;
}

/* Is the process of /proc/@pid running the executable @exe? */
static bool runs_exe(const char *pid, const struct stat *exe)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%s/exe", pid);
	return !stat(path, &st) && st.st_dev == exe->st_dev &&
	       st.st_ino == exe->st_ino;
}

int job__each_daemon(const struct stat *exe,
		     int (*fn)(struct job_proc *p, const char *mnt, void *arg),
		     void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int sum = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char mnt[PATH_MAX];
		struct job_proc p = { .uid = JOB_ANY_USER, .exe = exe };

		if (!isdigit((unsigned char)e->d_name[0]) ||
		    !daemon_mountpoint(e->d_name, mnt, sizeof(mnt)) ||
		    !runs_exe(e->d_name, exe))
			continue;
		p.pid = (pid_t)atoi(e->d_name);
		if (!proc_start_time(p.pid, &p.start))
			sum += fn(&p, mnt, arg);
	}
	closedir(d);
	return sum;
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

pid_t job__fork_recorded(struct jobdir *j, const char *name)
{
	int gate[2], err;
	pid_t child;
	char go = 0;

	if (pipe2(gate, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child == 0) {
		/* EOF without a go: the record is not there, or the parent
		 * is gone before writing it. */
		close(gate[1]);
		if (read(gate[0], &go, 1) != 1 || go != 'g')
			_exit(125);
		close(gate[0]);
		return 0;
	}
	close(gate[0]);
	err = child < 0 ? -errno : record(j, name, child);
	if (!err && write(gate[1], "g", 1) != 1)
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

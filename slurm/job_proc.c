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
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job_i.h"
#include "mountctl/mountctl.h"

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

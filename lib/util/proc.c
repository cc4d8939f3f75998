// SPDX-License-Identifier: MIT
/*
 * This file implements what is read about other processes from /proc
 * (proc.h): the start time, whether one holds a file we hold, and what it
 * runs; and which program of a name we run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/proc.h"

#define PROC_MOUNTS_MAX 65536 /* lines of a process's mountinfo read */

/* pidfds are close-on-exec from Linux 5.3 on, always. */
#define PIDFD_FLAGS 0

int proc_start_time(pid_t pid, uint64_t *start)
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

int proc_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, PIDFD_FLAGS);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

bool proc_is_alive(int pidfd, pid_t pid, uint64_t start)
{
	uint64_t now;

	if (pidfd >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		return poll(&p, 1, 0) == 0;
	}
	return !proc_start_time(pid, &now) && now == start;
}

/* Read the small file @path into @buf.  Return: 0 or -errno. */
static int read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	while (got + 1 < cap && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	return got ? 0 : -ESRCH;
}

/*
 * The memfd behind the descriptor @n of the process @pid (0: ourselves):
 * its mount id and inode, from /proc/PID/fdinfo/N once /proc/PID/fd/N
 * reads as a memfd's.  Neither takes a lock the process could hold (as
 * kcmp(2) and pidfd_getfd(2) take its exec lock, which an execve() holds
 * while it flushes the files it closes, a user's FUSE file among them),
 * and fdinfo is read only for a memfd, whose show is the common one.
 * Return: 0; -ENOENT if it is no memfd; -errno.
 */
static int memfd_id(pid_t pid, int n, unsigned long long *mnt,
		    unsigned long long *ino)
{
	char path[64], link[16], info[512], *p;
	ssize_t k;
	int err;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, n);
	else
		snprintf(path, sizeof(path), "/proc/self/fd/%d", n);
	k = readlink(path, link, sizeof(link) - 1);
	if (k < 0)
		return -errno;
	link[k] = '\0';
	if (strncmp(link, "/memfd:", 7))
		return -ENOENT;
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, n);
	else
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", n);
	err = read_small(path, info, sizeof(info));
	if (err)
		return err;
	p = strstr(info, "\nmnt_id:");
	if (!p || sscanf(p, "\nmnt_id: %llu", mnt) != 1)
		return -EPROTO;
	p = strstr(info, "\nino:");
	if (!p || sscanf(p, "\nino: %llu", ino) != 1)
		return -EPROTO;
	return 0;
}

int proc_holds_file(pid_t pid, int fd)
{
	unsigned long long mnt, ino, m, i;
	struct dirent *e;
	char path[40];
	int found = 0;
	DIR *d;

	if (memfd_id(0, fd, &mnt, &ino))
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	for (int seen = 0;
	     !found && seen < PROC_FD_WALK_MAX && (e = readdir(d)); seen++) {
		char *end;
		long n = strtol(e->d_name, &end, 10);

		if (*end || end == e->d_name || n < 0 || n > INT32_MAX)
			continue;
		found = !memfd_id(pid, (int)n, &m, &i) && m == mnt && i == ino;
	}
	closedir(d);
	return found;
}

int proc_holds_file_as(pid_t pid, int fd, int theirs)
{
	unsigned long long mnt, ino, m, i;

	if (memfd_id(0, fd, &mnt, &ino))
		return -EINVAL;
	return !memfd_id(pid, theirs, &m, &i) && m == mnt && i == ino;
}

/* The device of the mount @mnt_id in the mountinfo of the /proc
 * directory @dir. */
static int mount_dev(int dir, unsigned long mnt_id, dev_t *dev)
{
	unsigned long id, parent;
	unsigned int maj, mnr;
	char line[4096];
	int err = -ESRCH, fd;
	FILE *f;

	fd = openat(dir, "mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	/* At most PROC_MOUNTS_MAX lines: a process in a mount namespace
	 * of a user's own can have very many. */
	for (int seen = 0;
	     seen < PROC_MOUNTS_MAX && fgets(line, sizeof(line), f); seen++) {
		if (sscanf(line, "%lu %lu %u:%u", &id, &parent, &maj, &mnr) ==
			    4 &&
		    id == mnt_id) {
			*dev = makedev(maj, mnr);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

int proc_exe_id_at(int dir, dev_t *dev, ino_t *ino)
{
	char path[48], info[512], *p;
	unsigned long mnt_id = 0;
	unsigned long long i = 0;
	int fd, err;

	fd = openat(dir, "exe", O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	err = read_small(path, info, sizeof(info));
	close(fd); /* O_PATH: nothing to flush */
	if (err)
		return err;
	p = strstr(info, "mnt_id:");
	if (!p || sscanf(p, "mnt_id: %lu", &mnt_id) != 1)
		return -EPROTO;
	p = strstr(info, "ino:");
	if (!p || sscanf(p, "ino: %llu", &i) != 1)
		return -EPROTO;
	err = mount_dev(dir, mnt_id, dev);
	if (err)
		return err;
	*ino = (ino_t)i;
	return 0;
}

int proc_exe_id(pid_t pid, dev_t *dev, ino_t *ino)
{
	char path[40];
	int dir, err;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	err = proc_exe_id_at(dir, dev, ino);
	close(dir);
	return err;
}

/* Is @path an executable regular file? */
static bool is_program(const char *path)
{
	struct stat st;

	return !access(path, X_OK) && !stat(path, &st) && S_ISREG(st.st_mode);
}

int proc_find_program(const char *name, bool beside_self, const char *path,
		      char *buf, size_t cap)
{
	const char *dirs;
	char *slash;
	size_t len;
	ssize_t n;

	n = beside_self ? readlink("/proc/self/exe", buf, cap - 1) : -1;
	if (n > 0 && (size_t)n < cap - 1) {
		buf[n] = '\0';
		slash = strrchr(buf, '/');
		if (slash && (size_t)(slash + 1 - buf) + strlen(name) < cap) {
			strcpy(slash + 1, name);
			if (is_program(buf))
				return 0;
		}
	}
	dirs = path ? path : getenv("PATH");
	for (dirs = dirs ? dirs : "/usr/bin:/bin";; dirs += len + 1) {
		len = strcspn(dirs, ":");
		if ((size_t)snprintf(buf, cap, "%.*s/%s", len ? (int)len : 1,
				     len ? dirs : ".", name) < cap &&
		    is_program(buf))
			return 0;
		if (!dirs[len])
			break;
	}
	return -ENOENT;
}

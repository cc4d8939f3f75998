// SPDX-License-Identifier: MIT
/*
 * This file implements detaching and readiness (detach.h).
 *
 * Everything that can fail for a reason the user can fix (options,
 * mountpoint, image, /dev/fuse, the control address, the mount itself)
 * happens in the first process, which still has the terminal.  It then
 * forks; the child starts a new session, points its stdio at /dev/null
 * (slurmd and systemd wait for a hook's stdout to close), starts its
 * threads and the FUSE loop, and stat()s the mountpoint from a helper
 * thread.  Only when that stat has been answered through the loop does the
 * child tell the parent ("OK", or "ERR why" on the readiness pipe), which
 * then exits 0.  So when `squashcached IMG MNT` returns 0, the mount
 * answers.  systemd (Type=notify) is told the same on its socket.
 */
#define LOG_MOD "squashcached"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "detach.h"
#include "util/err.h"
#include "util/log.h"

void detach_notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int s;

	if (!path || !*path || strlen(path) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			  strlen(path));
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	sendto(s, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	close(s);
}

void detach_tell(int fd, const char *msg)
{
	if (fd < 0)
		return;
	if (write(fd, msg, strlen(msg)) < 0)
		log_warn("cannot report to the starting process: %s",
			 err_str(errno));
	close(fd);
}

/* Parent side of the detach: wait for "OK" or an error line. */
static int wait_for_child(int fd, pid_t child)
{
	char buf[600];
	size_t n = 0;
	ssize_t r;
	int status;

	alarm(DETACH_READY_TIMEOUT_S);
	while (n < sizeof(buf) - 1) {
		r = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (r < 0 && errno == EINTR) {
			fprintf(stderr,
				"squashcached: the mount did not answer within %d s; stopping it\n",
				DETACH_READY_TIMEOUT_S);
			kill(child, SIGTERM);
			return 1;
		}
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	if (!strncmp(buf, "OK", 2))
		return 0;
	if (!strncmp(buf, "ERR ", 4)) {
		fprintf(stderr, "squashcached: %s", buf + 4);
		return 1;
	}
	if (waitpid(child, &status, WNOHANG) == child && WIFSIGNALED(status))
		fprintf(stderr,
			"squashcached: the daemon died (signal %d) before the mount was ready\n",
			WTERMSIG(status));
	else
		fprintf(stderr,
			"squashcached: the daemon exited before the mount was ready (see its log: syslog, or -o log=FILE)\n");
	return 1;
}

static void on_alarm(int sig)
{
	(void)sig;
}

static int detach(int *ready_fd)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	int p[2], nul;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC)) {
		perror("squashcached: pipe");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		perror("squashcached: fork");
		return -1;
	}
	if (pid > 0) {
		close(p[1]);
		sigaction(SIGALRM, &sa, NULL);
		exit(wait_for_child(p[0], pid));
	}
	close(p[0]);
	*ready_fd = p[1];
	if (setsid() < 0)
		return -1;
	if (chdir("/"))
		return -1;
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0)
		return -1;
	dup2(nul, STDIN_FILENO);
	dup2(nul, STDOUT_FILENO);
	dup2(nul, STDERR_FILENO);
	close(nul);
	return 0;
}

int detach_open_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		fprintf(stderr, "squashcached: cannot open log file '%s': %s\n",
			path, err_str(errno));
		return -1;
	}
	return fd;
}

int detach_start(int log_fd, int *ready_fd)
{
	if (detach(ready_fd))
		return -1;
	if (log_fd >= 0)
		dup2(log_fd, STDERR_FILENO);
	else
		log_set_sink(LOG_SINK_SYSLOG);
	return 0;
}

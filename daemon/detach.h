/* SPDX-License-Identifier: MIT */
/*
 * This file declares detaching and readiness: the first process waits on
 * a pipe until the detached daemon's mount answers (detach.c).
 */
#ifndef SQC_DAEMON_DETACH_H
#define SQC_DAEMON_DETACH_H

/* The waiting parent gives up after this many seconds. */
#define DETACH_READY_TIMEOUT_S 60

/**
 * detach_open_log() - Open -o log=FILE, to log to once detached.
 * @path: the file, created 0600 if missing, appended to
 *
 * Return: the descriptor; -1 (said on stderr).
 * Context: main thread, before detaching.
 */
int detach_open_log(const char *path);

/**
 * detach_start() - Fork; the parent waits for readiness and exits.
 * @log_fd: from detach_open_log(), or -1 to log to syslog
 * @ready_fd: set to the readiness pipe, for detach_tell()
 *
 * The parent exits 0 once told "OK", else 1 with the reason on stderr
 * (an error line, the daemon's end, or DETACH_READY_TIMEOUT_S seconds,
 * after which it stops the daemon).  The child starts a new session in
 * /, with stdio on /dev/null and stderr on @log_fd if given.
 *
 * Return: 0 in the child; -1 (said, or stdio already gone).
 * Context: main thread, no other thread started.
 */
int detach_start(int log_fd, int *ready_fd);

/**
 * detach_tell() - Tell the waiting parent, and close the pipe.
 * @fd: the readiness pipe, or -1 (in the foreground: nothing to do)
 * @msg: "OK\n", or "ERR why\n"
 *
 * Context: any thread, once; cannot fail (a failure is logged).
 */
void detach_tell(int fd, const char *msg);

/**
 * detach_notify() - Tell systemd (Type=notify), if it is listening.
 * @msg: as sd_notify(3)'s state ("READY=1", "STOPPING=1")
 *
 * Context: any thread; cannot fail.
 */
void detach_notify(const char *msg);

#endif /* SQC_DAEMON_DETACH_H */

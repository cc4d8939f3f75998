/* SPDX-License-Identifier: MIT */
/*
 * This file declares what is read about other processes from /proc:
 * when one started, which names it together with its pid (a holder of a
 * mount, a job's process) so that a later process that reuses the pid is
 * not taken for it; whether it holds a file we hold; what it runs.  None
 * of these calls into the file system of the file looked at (a user's
 * FUSE server cannot make them wait): root's keeper uses them on users'
 * processes.  And which program we would run by a name: the one beside
 * our own executable (/proc/self/exe), else the one PATH gives.
 */
#ifndef SQC_UTIL_PROC_H
#define SQC_UTIL_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/**
 * proc_start_time() - When a process started, to tell it from a later one
 * that reuses its pid.
 * @pid: the process
 * @start: set to field 22 of /proc/PID/stat (clock ticks since boot)
 *
 * Return: 0; -ESRCH if no such process; -EPROTO if the line is malformed;
 * -errno if /proc/PID/stat cannot be opened.
 * Context: any thread.
 */
int proc_start_time(pid_t pid, uint64_t *start);

/**
 * proc_pidfd() - A pidfd of @pid (close-on-exec), which names that
 * process only, even once its pid is reused.
 * Return: the descriptor, or -1 with errno (ENOSYS before Linux 5.3).
 * Context: any thread.
 */
int proc_pidfd(pid_t pid);

/**
 * proc_is_alive() - Whether a process is still the one it was: by its
 * pidfd if there is one (readable once it exited), else by its pid and
 * the start time it had (proc_start_time()).
 * @pidfd: from proc_pidfd(), or -1
 * @pid: its pid
 * @start: its start time
 *
 * Context: any thread; cannot fail.
 */
bool proc_is_alive(int pidfd, pid_t pid, uint64_t start);

/**
 * proc_holds_file() - Whether a process has a descriptor of a memfd that
 * the caller has a descriptor of (the same file: one passed with
 * SCM_RIGHTS, inherited, or reopened).
 * @pid: the process
 * @fd: the caller's descriptor, of a memfd
 *
 * Walks /proc/PID/fd; a descriptor that reads as a memfd's there is
 * compared by the mount id and inode its /proc/PID/fdinfo gives.  Nothing
 * of this takes a lock the process could hold (kcmp(2) would wait on one
 * that an execve() of a user's holds while it flushes a user's FUSE file
 * for ever), nor looks at a file's contents or attributes.
 *
 * Return: 1 if it does; 0 if not (or it cannot be looked at: another
 * user's, not dumpable, gone); -EINVAL if @fd is no memfd.
 * Context: any thread.
 */
int proc_holds_file(pid_t pid, int fd);

/* At most this many of a process's descriptors are compared by
 * proc_holds_file(): a process of a user's can hold very many. */
#define PROC_FD_WALK_MAX 4096

/**
 * proc_holds_file_as() - Whether the descriptor @theirs of the process
 * @pid is of the same memfd as the caller's @fd (as proc_holds_file()).
 * Return: 1, 0, or -EINVAL as proc_holds_file().  Context: any thread.
 */
int proc_holds_file_as(pid_t pid, int fd, int theirs);

/**
 * proc_exe_id() - The device and inode of the program a process runs.
 * @pid: the process
 * @dev: set to its device
 * @ino: set to its inode
 *
 * Without stat(): an O_PATH descriptor of /proc/PID/exe (no open, no
 * attribute of the file asked of its file system), its inode and mount
 * id from our /proc/self/fdinfo, and that mount's device from the
 * process's /proc/PID/mountinfo.
 *
 * Return: 0; -ESRCH if it is gone; -errno.  Context: any thread.
 */
int proc_exe_id(pid_t pid, dev_t *dev, ino_t *ino);

/**
 * proc_exe_id_at() - proc_exe_id() of the process whose /proc directory
 * is open at @dir.
 * Return: as proc_exe_id().  Context: any thread.
 */
int proc_exe_id_at(int dir, dev_t *dev, ino_t *ino);

/**
 * proc_find_program() - Which program of that name we run: with
 * @beside_self, the one in the directory of our own executable (so a
 * build tree or an installation runs its own); else, or if there is none
 * there, the first of @path.
 * @name: the program's file name, without '/'
 * @beside_self: look beside /proc/self/exe first
 * @path: directories to search, ':' separated as PATH (an empty entry is
 *        the current directory), or NULL for this environment's PATH
 *        ("/usr/bin:/bin" where it is unset)
 * @buf: set to the program's path
 * @cap: its capacity (PATH_MAX is enough)
 *
 * Only an executable (access(X_OK)) regular file is taken.
 *
 * Return: 0; -ENOENT if there is none.  Context: any thread.
 */
int proc_find_program(const char *name, bool beside_self, const char *path,
		      char *buf, size_t cap);

#endif /* SQC_UTIL_PROC_H */

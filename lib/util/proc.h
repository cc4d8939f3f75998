/* SPDX-License-Identifier: MIT */
/*
 * This file declares what is read about other processes from /proc: for
 * now, when one started, which names it together with its pid (a holder
 * of a mount, a job's process) so that a later process that reuses the
 * pid is not taken for it.
 */
#ifndef SQC_UTIL_PROC_H
#define SQC_UTIL_PROC_H

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

#endif /* SQC_UTIL_PROC_H */

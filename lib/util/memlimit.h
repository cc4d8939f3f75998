/* SPDX-License-Identifier: MIT */
/*
 * This file declares how much memory this process may use: the smaller of
 * the machine's physical RAM and the memory limit of the cgroup the process
 * runs in (and of each ancestor of that cgroup), and the default RAM budget
 * derived from it.  Under Slurm with ConstrainRAMSpace=yes a job's daemon
 * runs in the job's memory cgroup, whose limit may be far below the node's
 * RAM: a budget taken from the RAM alone gets the daemon OOM-killed.
 *
 * Both cgroup versions are read, and both at once on a hybrid system:
 *   v1: the line "N:...memory...:/PATH" of /proc/self/cgroup, and
 *       CGROUP_ROOT/memory/PATH/memory.limit_in_bytes
 *   v2: the line "0::/PATH", and CGROUP_ROOT/PATH/memory.max ("max": none)
 * A file that is missing, unreadable, empty or not a plain decimal number
 * means no limit there, and so does a v1 value of 2^62 or more (v1 writes
 * 9223372036854771712 for none).
 */
#ifndef SQC_UTIL_MEMLIMIT_H
#define SQC_UTIL_MEMLIMIT_H

#include <stdint.h>

/* Room in struct memlimit for "cgroup v1 memory:/PATH"; longer is cut. */
#define MEMLIMIT_SOURCE_MAX 256

/* The budget when neither the RAM nor a limit can be told. */
#define MEMLIMIT_BUDGET_FALLBACK (1ull << 30)

/* What memory this process may use, and what says so. */
struct memlimit {
	uint64_t ram; /* physical RAM in bytes, 0 if unknown */
	uint64_t cgroup; /* lowest cgroup limit in bytes, 0 if none */
	uint64_t usable; /* the smaller of the two known, 0 if neither */
	/* what set @usable: "physical RAM", "unknown", or the cgroup, e.g.
	 * "cgroup v1 memory:/slurm/uid_0/job_7" or "cgroup v2 /job_7" */
	char source[MEMLIMIT_SOURCE_MAX];
};

/**
 * memlimit_read() - Find the memory a process may use, from given roots.
 * @proc_root: where procfs is mounted ("/proc"); PROC/self/cgroup is read
 * @cgroup_root: where the cgroup hierarchies are ("/sys/fs/cgroup")
 * @ram: physical RAM in bytes, 0 if unknown
 * @ml: filled in
 *
 * Takes the lowest limit of every cgroup of the process and of their
 * ancestors up to the root, on v1 and v2.  The roots are parameters so
 * that tests can point them at a fake tree.
 *
 * Context: any thread; cannot fail (what cannot be read is no limit).
 */
void memlimit_read(const char *proc_root, const char *cgroup_root, uint64_t ram,
		   struct memlimit *ml);

/**
 * memlimit_get() - Find the memory this process may use.
 * @ml: filled in
 *
 * memlimit_read() of /proc, /sys/fs/cgroup and size_ram_total().
 *
 * Context: any thread; cannot fail.
 */
void memlimit_get(struct memlimit *ml);

/**
 * memlimit_budget() - The default RAM budget: half of what may be used.
 * @ml: from memlimit_read() or memlimit_get()
 *
 * Return: @ml->usable / 2, or MEMLIMIT_BUDGET_FALLBACK when @ml->usable is
 * unknown.  Context: any thread; cannot fail.
 */
uint64_t memlimit_budget(const struct memlimit *ml);

/**
 * memlimit_available() - The machine's MemAvailable (/proc/meminfo): what
 * can be had without swapping, free and reclaimable page cache together.
 *
 * Return: bytes, or UINT64_MAX if it cannot be read.
 * Context: any thread; cannot fail.
 */
uint64_t memlimit_available(void);

#endif /* SQC_UTIL_MEMLIMIT_H */

// SPDX-License-Identifier: MIT
/*
 * This file implements mountctl's unmount service, mc_unmount(), shared by
 * `mountctl umount`, `mountctl acquire` (clearing a stale mount) and the
 * mount service (stopping a daemon that did not mount in time): ask the
 * daemon to unmount, wait until the mount has left the mount table and
 * the daemon has exited, and unmount from outside (umount2() as root,
 * fusermount3 -u otherwise) when the daemon cannot be asked, which also
 * clears stale mounts.
 *
 * libfuse detaches the mount lazily when the daemon unmounts, so a mount
 * that is still in use is unmounted too; the files open on it then fail.
 */
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mountctl.h"
#include "util/clock.h"
#include "util/err.h"

extern char **environ;

/* Is a squashcache mount on top at @path? */
static bool is_mounted(const char *path)
{
	struct mountinfo_mount m;

	return !mountinfo_find(path, &m) && ctl_is_sqc_mount(&m);
}

/* Wait until @path is unmounted and @pid (if not 0) has exited. */
static int wait_gone(const char *path, pid_t pid, double deadline)
{
	for (;;) {
		if (!is_mounted(path) && !mc_is_running(pid))
			return 0;
		if (mono_sec() >= deadline)
			return -ETIMEDOUT;
		sleep_ms(MC_POLL_MS);
	}
}

static int run_fusermount(const char *path, bool lazy)
{
	char *argv[5];
	pid_t pid;
	int n = 0, status, err;

	argv[n++] = (char *)"fusermount3";
	argv[n++] = (char *)"-u";
	if (lazy)
		argv[n++] = (char *)"-z";
	argv[n++] = (char *)path;
	argv[n] = NULL;
	err = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
	if (err) {
		mc_err("cannot run fusermount3 to unmount '%s': %s (install the fuse3 package)",
		       path, err_str(err));
		return -err;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	mc_err("fusermount3 could not unmount '%s'%s", path,
	       lazy ? "" : "; if it is busy, run mountctl umount --lazy");
	return -EBUSY;
}

/* Unmount without the daemon's help. */
static int force_unmount(const struct mountinfo_mount *m, bool lazy)
{
	if (geteuid() != 0)
		return run_fusermount(m->path, lazy);
	if (!umount2(m->path, lazy ? MNT_DETACH : 0) || errno == EINVAL)
		return 0;
	if (errno == EBUSY)
		mc_err("'%s' is busy (files are open on it): close them, or run mountctl umount --lazy %s",
		       m->path, m->path);
	else
		mc_err("cannot unmount '%s': %s", m->path, err_str(errno));
	return -errno;
}

int mc_unmount(const struct mountinfo_mount *m, bool lazy, double timeout)
{
	const struct ctl_req req = { .cmd = CTL_CMD_UMOUNT };
	double deadline = mono_sec() + timeout;
	char why[PATH_MAX + 256];
	struct ctl_reply *rep;
	pid_t pid = 0;
	int err;

	rep = malloc(sizeof(*rep));
	if (!rep)
		return -ENOMEM;
	err = ctl_ping_mount(m, CTL_TIMEOUT_MS, &pid);
	if (!err)
		err = mc_request(m, &req, rep, NULL);
	free(rep);
	if (err == -EACCES || err == -EPERM) {
		mc_err("cannot unmount '%s': %s", m->path,
		       mc_explain(m, err, false, why, sizeof(why)));
		return err;
	}
	if (err) {
		/* A stale mount's daemon is gone: nothing left to lose. */
		if (!ctl_is_stale(err))
			mc_err("%s; unmounting it without the daemon",
			       mc_explain(m, err, false, why, sizeof(why)));
		err = force_unmount(m, lazy || ctl_is_stale(err));
		if (err)
			return err;
	}
	if (!wait_gone(m->path, pid, deadline))
		return 0;
	if (!is_mounted(m->path)) {
		mc_err("'%s' is unmounted, but its daemon (pid %d) still runs %.0f s later",
		       m->path, (int)pid, timeout);
		return -ETIMEDOUT;
	}
	mc_err("the daemon did not unmount '%s' within %.0f s; unmounting it without the daemon",
	       m->path, timeout);
	err = force_unmount(m, lazy);
	if (err)
		return err;
	err = wait_gone(m->path, 0, mono_sec() + 2);
	if (err)
		mc_err("'%s' is still mounted", m->path);
	return err;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements job__private_base(): whether Slurm's
 * job_container/tmpfs plugin gives each job a private copy of the
 * directory base= is in.  It does for each of its Dirs (job_container.conf,
 * default /tmp and /dev/shm): a mount made there on the node is not the
 * one the job sees, so a job's mounts under the default base=/dev/shm
 * would be invisible to its tasks.  Read from slurm.conf ($SLURM_CONF,
 * else /etc/slurm/slurm.conf: JobContainerType) and the job_container.conf
 * next to it (Dirs); only for a message and to fail early, never to
 * grant anything.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "job_i.h"

#define DEFAULT_DIRS "/tmp,/dev/shm" /* job_container.conf's default */

/* The value of the first KEY=VALUE word of the file @path (KEY any
 * case; '#' starts a comment).  Return: 0, -ENOENT if none, -errno. */
static int conf_value(const char *path, const char *key, char *val, size_t cap)
{
	char line[4096], *save, *w;
	size_t k = strlen(key);
	FILE *f = fopen(path, "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (err == -ENOENT && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "#\n")] = '\0';
		for (w = strtok_r(line, " \t", &save); w;
		     w = strtok_r(NULL, " \t", &save)) {
			if (strncasecmp(w, key, k) || w[k] != '=')
				continue;
			snprintf(val, cap, "%s", w + k + 1);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

/* Is @path @dir or under it? */
static bool is_under(const char *path, const char *dir, size_t n)
{
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

bool job__private_base(const char *base, char *dir, size_t cap)
{
	const char *conf = getenv("SLURM_CONF");
	char val[PATH_MAX], jc[PATH_MAX], real[PATH_MAX], *slash;
	const char *p;

	if (!conf || conf[0] != '/')
		conf = "/etc/slurm/slurm.conf";
	if (conf_value(conf, "JobContainerType", val, sizeof(val)) ||
	    strcasecmp(val, "job_container/tmpfs"))
		return false;
	snprintf(jc, sizeof(jc), "%s", conf);
	slash = strrchr(jc, '/');
	snprintf(slash + 1, sizeof(jc) - (size_t)(slash + 1 - jc), "%s",
		 "job_container.conf");
	if (conf_value(jc, "Dirs", val, sizeof(val)))
		snprintf(val, sizeof(val), "%s", DEFAULT_DIRS);
	if (!realpath(base, real))
		snprintf(real, sizeof(real), "%s", base);
	for (p = val; *p; p += *p == ',') {
		size_t n = strcspn(p, ",");

		if (n && is_under(real, p, n)) {
			snprintf(dir, cap, "%.*s", (int)n, p);
			return true;
		}
		p += n;
	}
	return false;
}

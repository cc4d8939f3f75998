// SPDX-License-Identifier: MIT
/*
 * This file implements the verbs of `mountctl job` once mountctl/cmd_job.c
 * has parsed the arguments: the site's configuration (defaults, the
 * file, --set), the job's ids from the options or, as slurmd sets them
 * for a Prolog, Epilog or TaskProlog, from the environment, then the
 * work of job.c, job_task.c and job_node.c; the two answers the shell
 * hooks ask for instead of reading the config or naming mounts
 * themselves: `config KEY...` and `name IMAGE...`; and job__err(), how
 * the job code says what went wrong.
 */
#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_i.h"
#include "util/err.h"

void job__err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mountctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

static const char *env_or(const char *a, const char *b)
{
	const char *v = getenv(a);

	if ((!v || !*v) && b)
		v = getenv(b);
	return v && *v ? v : NULL;
}

static void bad_line(const char *path, int no, const char *why, void *arg)
{
	(void)arg;
	job__err("%s:%d: ignored: %s", path, no, why);
}

/* The site's configuration: defaults, the file, then --set. */
static void load_conf(const struct job_req *r, struct ds_conf *c)
{
	const char *path = r->conf ? r->conf :
				     env_or("SQUASHCACHE_SLURM_CONF", NULL);
	char why[512];
	int err;

	ds_conf_default(c);
	err = ds_conf_read(c, path ? path : DS_CONF_FILE, bad_line, NULL);
	if (err && err != -EINVAL && (path || err != -ENOENT))
		job__err("cannot read %s: %s", path ? path : DS_CONF_FILE,
			 err_str(err));
	for (int i = 0; i < r->nsets; i++)
		if (ds_conf_set(c, r->sets[i], why, sizeof(why)))
			job__err("--set %s: ignored: %s", r->sets[i], why);
}

static int parse_id(const char *s, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s ? s : "", &end, 10);
	if (!s || errno || end == s || *end || *s == '-' || v >= 0xffffffffu)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

/* The node's short name, for a hook run without SLURMD_NODENAME. */
static void host_name(char *buf, size_t cap)
{
	if (gethostname(buf, cap))
		snprintf(buf, cap, "node");
	buf[cap - 1] = '\0';
	buf[strcspn(buf, ".")] = '\0';
}

/* Fill @ids from the options, else from slurmd's environment. */
static int job_ids_get(const struct job_req *r, struct job_ids *ids)
{
	const char *job = r->job ? r->job :
				   env_or("SLURM_JOB_ID", "SLURM_JOBID");
	const char *node = r->node ? r->node : env_or("SLURMD_NODENAME", NULL);
	const char *wd = env_or("SLURM_JOB_WORK_DIR", NULL);
	unsigned int uid, gid;
	struct passwd *pw;

	memset(ids, 0, sizeof(*ids));
	if (parse_id(r->uid ? r->uid : env_or("SLURM_JOB_UID", NULL), &uid) ||
	    parse_id(r->gid ? r->gid : env_or("SLURM_JOB_GID", NULL), &gid) ||
	    !job ||
	    snprintf(ids->job, sizeof(ids->job), "%s", job) >=
		    (int)sizeof(ids->job)) {
		job__err(
			"job: no job id, uid and gid (--job, --uid, --gid, or SLURM_JOB_ID, SLURM_JOB_UID, SLURM_JOB_GID as slurmd sets them)");
		return -EINVAL;
	}
	ids->uid = uid;
	ids->gid = gid;
	if (node)
		snprintf(ids->node, sizeof(ids->node), "%s", node);
	else
		host_name(ids->node, sizeof(ids->node));
	pw = getpwuid(ids->uid);
	if (pw) {
		snprintf(ids->user, sizeof(ids->user), "%s", pw->pw_name);
		snprintf(ids->home, sizeof(ids->home), "%s", pw->pw_dir);
	}
	if (wd)
		snprintf(ids->workdir, sizeof(ids->workdir), "%s", wd);
	return 0;
}

/* The Prolog's list: --datasets, the comment's dataset= word, or (with
 * prolog_spank=yes) what the SPANK plugin passed. */
static const char *prolog_list(const struct job_req *r, const struct ds_conf *c,
			       char *buf, size_t cap)
{
	const char *comment = env_or("SLURM_JOB_COMMENT", NULL);

	if (r->datasets)
		return r->datasets;
	if (comment && !ds_comment_list(comment, buf, cap))
		return buf;
	if (c->prolog_spank)
		return env_or("SPANK_DATASET", NULL);
	return NULL;
}

/* prolog and epilog: root only, and always 0 for slurmd. */
static int run_root(const struct job_req *r, const struct ds_conf *c)
{
	static char list[16384];
	struct job_ids ids;

	if (geteuid() != 0) {
		job__err("job %s must run as root (from slurmd)",
			 r->verb == JOB_PROLOG ? "prolog" : "epilog");
		return JOB_EXIT_USAGE;
	}
	if (job_ids_get(r, &ids))
		return JOB_EXIT_OK;
	if (r->verb == JOB_EPILOG)
		job_epilog(c, &ids);
	else
		job_prolog(c, &ids, prolog_list(r, c, list, sizeof(list)));
	return JOB_EXIT_OK;
}

/* env: in a task, where the mounts are. */
static int run_env(const struct job_req *r, const struct ds_conf *c)
{
	const char *job = r->job ? r->job :
				   env_or("SLURM_JOB_ID", "SLURM_JOBID");
	const char *nd = r->node ? r->node : env_or("SLURMD_NODENAME", NULL);
	char node[65];

	if (!nd) {
		host_name(node, sizeof(node));
		nd = node;
	}
	if (!job) {
		job__err(
			"job env: no job id (--job, or SLURM_JOB_ID in a task)");
		return JOB_EXIT_USAGE;
	}
	return job_env(c, job, nd, r->datasets, r->task_prolog);
}

/* config KEY...: each value on a line of its own. */
static int run_config(const struct job_req *r, const struct ds_conf *c)
{
	char val[4096];

	for (int i = 0; i < r->nargs; i++) {
		int err = ds_conf_get(c, r->args[i], val, sizeof(val));

		if (err) {
			job__err("job config: %s: %s", r->args[i],
				 err == -ENOENT ? "no such key" : err_str(err));
			return JOB_EXIT_USAGE;
		}
		printf("%s\n", val);
	}
	return JOB_EXIT_OK;
}

/* name IMAGE...: the mount name of each, as one job's list gives them. */
static int run_name(const struct job_req *r)
{
	static struct ds_list l;

	if (r->nargs > DS_MAX_IMAGES) {
		job__err("job name: more than %d images", DS_MAX_IMAGES);
		return JOB_EXIT_USAGE;
	}
	l.n = 0;
	for (int i = 0; i < r->nargs; i++)
		snprintf(l.im[l.n++].path, sizeof(l.im[0].path), "%s",
			 r->args[i]);
	ds_list_name(&l);
	for (unsigned int i = 0; i < l.n; i++)
		printf("%s\n", l.im[i].name);
	return JOB_EXIT_OK;
}

int job_run(const struct job_req *r)
{
	struct ds_conf c;

	if (r->verb == JOB_NAME)
		return run_name(r);
	load_conf(r, &c);
	switch (r->verb) {
	case JOB_PROLOG:
	case JOB_EPILOG:
		return run_root(r, &c);
	case JOB_CHECK:
		return job_check(&c, r->datasets, stdout);
	case JOB_NODE:
		return job_check_node(&c, r->clean, r->min_age);
	case JOB_CONFIG:
		return run_config(r, &c);
	case JOB_ENV:
	case JOB_NAME:
		break;
	}
	return run_env(r, &c);
}

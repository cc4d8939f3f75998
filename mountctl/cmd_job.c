// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl job prolog|epilog|env|check`: the
 * arguments, the site's configuration and the job's ids, which come from
 * the options or, as slurmd sets them for a Prolog, Epilog or TaskProlog,
 * from the environment.  The work itself is in job.c and job_task.c.
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slurm/job.h"
#include "mountctl.h"
#include "util/err.h"

enum verb { V_PROLOG, V_EPILOG, V_ENV, V_CHECK, V_NODE };

/* Everything the options give. */
struct job_args {
	enum verb verb;
	const char *conf; /* --conf, else $SQUASHCACHE_SLURM_CONF */
	const char *datasets; /* --datasets */
	const char *job, *node, *uid, *gid; /* --job ... */
	bool task_prolog; /* env --task-prolog */
	bool clean; /* check-node --clean */
	double min_age; /* check-node --min-age */
	char **sets; /* --set KEY=VALUE, in order */
	int nsets;
};

static const char *env_or(const char *a, const char *b)
{
	const char *v = getenv(a);

	if ((!v || !*v) && b)
		v = getenv(b);
	return v && *v ? v : NULL;
}

/* The site's configuration: defaults, the file, then --set. */
static void load_conf(const struct job_args *a, struct ds_conf *c)
{
	const char *path = a->conf ? a->conf :
				     env_or("SQUASHCACHE_SLURM_CONF", NULL);
	char line[8192], why[512];
	int no = 0;
	FILE *f;

	ds_conf_default(c);
	f = fopen(path ? path : DS_CONF_FILE, "re");
	if (!f && (path || errno != ENOENT))
		mc_err("cannot read %s: %s", path ? path : DS_CONF_FILE,
		       err_str(errno));
	while (f && fgets(line, sizeof(line), f)) {
		no++;
		if (ds_conf_line(c, line, why, sizeof(why)))
			mc_err("%s:%d: ignored: %s", path ? path : DS_CONF_FILE,
			       no, why);
	}
	if (f)
		fclose(f);
	for (int i = 0; i < a->nsets; i++)
		if (ds_conf_set(c, a->sets[i], why, sizeof(why)))
			mc_err("--set %s: ignored: %s", a->sets[i], why);
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
static int job_ids_get(const struct job_args *a, struct job_ids *ids)
{
	const char *job = a->job ? a->job :
				   env_or("SLURM_JOB_ID", "SLURM_JOBID");
	const char *node = a->node ? a->node : env_or("SLURMD_NODENAME", NULL);
	const char *wd = env_or("SLURM_JOB_WORK_DIR", NULL);
	unsigned int uid, gid;
	struct passwd *pw;

	memset(ids, 0, sizeof(*ids));
	if (parse_id(a->uid ? a->uid : env_or("SLURM_JOB_UID", NULL), &uid) ||
	    parse_id(a->gid ? a->gid : env_or("SLURM_JOB_GID", NULL), &gid) ||
	    !job ||
	    snprintf(ids->job, sizeof(ids->job), "%s", job) >=
		    (int)sizeof(ids->job)) {
		mc_err("job: no job id, uid and gid (--job, --uid, --gid, or SLURM_JOB_ID, SLURM_JOB_UID, SLURM_JOB_GID as slurmd sets them)");
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
static const char *prolog_list(const struct job_args *a,
			       const struct ds_conf *c, char *buf, size_t cap)
{
	const char *comment = env_or("SLURM_JOB_COMMENT", NULL);

	if (a->datasets)
		return a->datasets;
	if (comment && !ds_comment_list(comment, buf, cap))
		return buf;
	if (c->prolog_spank)
		return env_or("SPANK_DATASET", NULL);
	return NULL;
}

/* prolog and epilog: root only, and always 0 for slurmd. */
static int run_root(const struct job_args *a, const struct ds_conf *c)
{
	static char list[16384];
	struct job_ids ids;

	if (geteuid() != 0) {
		mc_err("job %s must run as root (from slurmd)",
		       a->verb == V_PROLOG ? "prolog" : "epilog");
		return MC_EXIT_USAGE;
	}
	if (job_ids_get(a, &ids))
		return MC_EXIT_OK;
	if (a->verb == V_EPILOG)
		job_epilog(c, &ids);
	else
		job_prolog(c, &ids, prolog_list(a, c, list, sizeof(list)));
	return MC_EXIT_OK;
}

static int run_verb(const struct job_args *a)
{
	char node[65];
	struct ds_conf c;
	const char *job, *nd;

	load_conf(a, &c);
	switch (a->verb) {
	case V_PROLOG:
	case V_EPILOG:
		return run_root(a, &c);
	case V_CHECK:
		return job_check(&c, a->datasets, stdout);
	case V_NODE:
		return job_check_node(&c, a->clean, a->min_age);
	case V_ENV:
		break;
	}
	job = a->job ? a->job : env_or("SLURM_JOB_ID", "SLURM_JOBID");
	nd = a->node ? a->node : env_or("SLURMD_NODENAME", NULL);
	if (!nd) {
		host_name(node, sizeof(node));
		nd = node;
	}
	if (!job) {
		mc_err("job env: no job id (--job, or SLURM_JOB_ID in a task)");
		return MC_EXIT_USAGE;
	}
	return job_env(&c, job, nd, a->datasets, a->task_prolog);
}

static int parse_verb(const char *s, enum verb *v)
{
	static const char *const names[] = { "prolog", "epilog", "env", "check",
					     "check-node" };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(s, names[i])) {
			*v = (enum verb)i;
			return 0;
		}
	return -EINVAL;
}

/* One option into @a.  Return: -1 to go on, else the exit status. */
static int take_opt(struct job_args *a, int c, const char *arg)
{
	const char **strs[] = {
		['c'] = &a->conf, ['d'] = &a->datasets, ['j'] = &a->job,
		['n'] = &a->node, ['u'] = &a->uid,	['g'] = &a->gid
	};

	if (c > 0 && (size_t)c < ARRAY_SIZE(strs) && strs[c]) {
		*strs[c] = arg;
		return -1;
	}
	switch (c) {
	case 's':
		a->sets[a->nsets++] = (char *)arg;
		return -1;
	case 'T':
		a->task_prolog = true;
		return -1;
	case 'C':
		a->clean = true;
		return -1;
	case 'a':
		if (!mc_parse_seconds(arg, &a->min_age))
			return -1;
		return mc_bad_usage(&mc_cmd_job, "bad --min-age '%s'", arg);
	case 'h':
		mc_usage(&mc_cmd_job, stdout);
		return MC_EXIT_OK;
	default:
		mc_usage(&mc_cmd_job, stderr);
		return MC_EXIT_USAGE;
	}
}

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "conf", required_argument, NULL, 'c' },
		{ "set", required_argument, NULL, 's' },
		{ "datasets", required_argument, NULL, 'd' },
		{ "job", required_argument, NULL, 'j' },
		{ "node", required_argument, NULL, 'n' },
		{ "uid", required_argument, NULL, 'u' },
		{ "gid", required_argument, NULL, 'g' },
		{ "task-prolog", no_argument, NULL, 'T' },
		{ "clean", no_argument, NULL, 'C' },
		{ "min-age", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct job_args a = { .sets = calloc((size_t)argc, sizeof(char *)),
			      .min_age = 60 };
	int c, ret = -1;

	if (!a.sets)
		return MC_EXIT_FAIL;
	while (ret < 0 && (c = getopt_long(argc, argv, "c:s:d:j:n:u:g:TCa:h",
					   longopts, NULL)) != -1)
		ret = take_opt(&a, c, optarg);
	if (ret >= 0)
		goto out_free;
	if (optind >= argc || parse_verb(argv[optind], &a.verb)) {
		ret = mc_bad_usage(
			&mc_cmd_job,
			"expected prolog, epilog, env, check or check-node");
		goto out_free;
	}
	if (a.verb == V_CHECK && !a.datasets && optind + 1 < argc)
		a.datasets = argv[++optind];
	if (optind + 1 != argc || (a.verb == V_CHECK && !a.datasets)) {
		ret = mc_bad_usage(&mc_cmd_job, "unexpected arguments");
		goto out_free;
	}
	ret = run_verb(&a);
out_free:
	free(a.sets);
	return ret;
}

const struct mc_cmd mc_cmd_job = {
	.name = "job",
	.args = "[OPTIONS] prolog|epilog|env|check|check-node [LIST]",
	.summary = "a Slurm job's datasets on a node (for the hooks)",
	.help = "\n"
		"The node-side work of the Slurm hooks, one implementation for\n"
		"the SPANK plugin, the slurm.conf Prolog/Epilog and TaskProlog:\n"
		"\n"
		"  prolog  (root) mount each image of the job's dataset list as the\n"
		"          job's user at BASE/squashcache/job<ID>-<NODE>/<NAME>;\n"
		"          a failure goes to the job's tasks, never drains the node\n"
		"  epilog  (root) unmount, stop and remove everything of the job\n"
		"  env     (a task) print SQUASHCACHE_MOUNT=... (and _<NAME>);\n"
		"          exit 1 with the reason if a mount failed\n"
		"  check   (where the job is submitted) check LIST, print it with\n"
		"          absolute paths\n"
		"  check-node  (root; a health check, an Epilog) list mounts under\n"
		"          BASE/squashcache whose daemon is gone and daemons whose\n"
		"          mount is gone; exit 1 if there is one\n"
		"\n"
		"  -c, --conf FILE     site config (default $SQUASHCACHE_SLURM_CONF,\n"
		"                      else /etc/squashcache/slurm.conf)\n"
		"  -s, --set KEY=VAL   override one config key (repeatable)\n"
		"  -d, --datasets LIST the list (prolog: default the comment's\n"
		"                      dataset= word; env: the list expected)\n"
		"  -j, --job ID        default $SLURM_JOB_ID\n"
		"  -n, --node NAME     default $SLURMD_NODENAME\n"
		"  -u, --uid N         default $SLURM_JOB_UID\n"
		"  -g, --gid N         default $SLURM_JOB_GID\n"
		"  -T, --task-prolog   env: print `export K=V`/`print MSG` lines\n"
		"  -C, --clean         check-node: detach them, kill them\n"
		"  -a, --min-age S     check-node: a daemon counts after S seconds\n"
		"                      (default 60; a mount takes time to come up)\n"
		"  -h, --help          this text\n"
		"\n"
		"LIST: IMAGE[:OPT,...][,IMAGE...]; ',' ':' '\\' in a path are\n"
		"written '\\,' '\\:' '\\\\' (see squashcache_spank(8)).\n"
		"Exit status: prolog and epilog 0 (problems go to stderr and the\n"
		"job's tasks); env 1 if a mount failed; check 4 for a bad image,\n"
		"2 for a bad list or a refused option; check-node 1 if something\n"
		"is left.\n",
	.run = run,
};

// SPDX-License-Identifier: MIT
/*
 * This file implements the arguments of `mountctl job VERB`; the work,
 * from the site's configuration and the job's ids on, is slurm/'s
 * (job_run(), slurm/job_cmd.c), which needs nothing of mountctl's: the
 * calls go one way, from here into slurm/.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/job.h"
#include "mountctl.h"

/* job_run()'s statuses are mountctl's. */
_Static_assert(JOB_EXIT_OK == MC_EXIT_OK && JOB_EXIT_FAIL == MC_EXIT_FAIL &&
		       JOB_EXIT_USAGE == MC_EXIT_USAGE &&
		       JOB_EXIT_IMAGE == MC_EXIT_IMAGE,
	       "slurm/job.h's exit statuses are mountctl.h's");

static int parse_verb(const char *s, enum job_verb *v)
{
	static const struct {
		const char *name;
		enum job_verb verb;
	} names[] = {
		{ "prolog", JOB_PROLOG },   { "epilog", JOB_EPILOG },
		{ "env", JOB_ENV },	    { "check", JOB_CHECK },
		{ "check-node", JOB_NODE }, { "config", JOB_CONFIG },
		{ "name", JOB_NAME },
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(s, names[i].name)) {
			*v = names[i].verb;
			return 0;
		}
	return -EINVAL;
}

/* The words after the verb.  Return: 0, or -EINVAL for a wrong number. */
static int take_words(struct job_req *a, int argc, char **argv, int at)
{
	int n = argc - at;

	switch (a->verb) {
	case JOB_CHECK:
		if (!a->datasets && n == 1)
			a->datasets = argv[at];
		else if (n)
			return -EINVAL;
		return a->datasets ? 0 : -EINVAL;
	case JOB_CONFIG:
	case JOB_NAME:
		a->args = argv + at;
		a->nargs = n;
		return n ? 0 : -EINVAL;
	default:
		return n ? -EINVAL : 0;
	}
}

/* One option into @a.  Return: -1 to go on, else the exit status. */
static int take_opt(struct job_req *a, int c, const char *arg)
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
	struct job_req a = { .sets = calloc((size_t)argc, sizeof(char *)),
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
			"expected prolog, epilog, env, check, check-node, config or name");
		goto out_free;
	}
	if (take_words(&a, argc, argv, optind + 1)) {
		ret = mc_bad_usage(&mc_cmd_job, "unexpected arguments");
		goto out_free;
	}
	ret = job_run(&a);
out_free:
	free(a.sets);
	return ret;
}

const struct mc_cmd mc_cmd_job = {
	.name = "job",
	.args = "[OPTIONS] prolog|epilog|env|check-node | check LIST | config KEY... | name IMAGE...",
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
		"  config  print the value of each KEY of the site config, one a\n"
		"          line (for the shell hooks: the one parser is mountctl's)\n"
		"  name    print the mount name of each IMAGE, as a job's list\n"
		"          gives them\n"
		"\n"
		"  -c, --conf FILE     site config (default $SQUASHCACHE_SLURM_CONF,\n"
		"                      else " DS_CONF_FILE ")\n"
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

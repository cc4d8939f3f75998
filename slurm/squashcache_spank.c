// SPDX-License-Identifier: MIT
/*
 * This file implements squashcache's SPANK plugin: `--dataset=LIST` for
 * srun, sbatch and salloc mounts each image once per job on every node of
 * the job, as the job's user, and unmounts it when the job ends there.
 *
 * The plugin is glue: every decision is made by `mountctl job` (one
 * implementation for the plugin and the slurm.conf hooks; see
 * squashcache_spank(8) and docs/slurm.md).  Per context:
 *
 *   local/allocator  `mountctl job check LIST` as the user: the grammar,
 *                    the option policy, allow= and a quick look at each
 *                    image; a bad one fails the submission with its
 *                    message.  The list, paths made absolute, goes to the
 *                    nodes as SPANK_DATASET.
 *   job_prolog       (root) `mountctl job prolog`: mounts as the user;
 *                    never fails (a failing prolog drains the node), a
 *                    failure reaches the tasks instead.
 *   task_init        (the user, in each task) `mountctl job env`: sets
 *                    SQUASHCACHE_MOUNT(_<NAME>), or fails the task with
 *                    the reason a mount failed.
 *   job_epilog       (root) `mountctl job epilog`: nothing of the job left.
 *
 * Plugin arguments (plugstack.conf): conf=FILE; any other KEY=VALUE
 * overrides that key of the config file (--set).  The plugin reads the
 * file with the project's one parser (slurm/dataset.c, linked into the
 * plugin) for the one key it needs itself, mountctl=.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "dataset.h"

SPANK_PLUGIN(squashcache, 1);

#ifndef SQC_MOUNTCTL
#define SQC_MOUNTCTL "/usr/local/bin/mountctl"
#endif
#define MAX_ARGS 64 /* mountctl's arguments */
#define OUT_MAX 65536 /* what a mountctl run may print */

static char mountctl[PATH_MAX] = SQC_MOUNTCTL;
static const char *conf_args[MAX_ARGS / 2]; /* --conf F, --set K=V ... */
static int nconf;
static char *datasets; /* --dataset values joined by ',', or NULL */

static int opt_dataset(int val, const char *optarg, int remote);

static struct spank_option dataset_opt = {
	"dataset",
	"IMAGE[:OPTS][,IMAGE...]",
	"Mount the SquashFS IMAGE with squashcache on every node of the job "
	"(once per node); tasks find it in $SQUASHCACHE_MOUNT. Repeat or "
	"separate with ',' for several images.",
	1,
	0,
	opt_dataset
};

static int opt_dataset(int val, const char *optarg, int remote)
{
	size_t have = datasets ? strlen(datasets) + 1 : 0;
	char *p;

	(void)val;
	(void)remote;
	if (!optarg || !*optarg) {
		slurm_error("squashcache: --dataset needs an image path");
		return -1;
	}
	p = realloc(datasets, have + strlen(optarg) + 1);
	if (!p)
		return -1;
	if (have)
		p[have - 1] = ',';
	strcpy(p + have, optarg);
	datasets = p;
	return 0;
}

/* A line of the config file that mountctl will refuse too. */
static void bad_line(const char *path, int no, const char *why, void *arg)
{
	(void)arg;
	slurm_error("squashcache: %s:%d: ignored: %s", path, no, why);
}

/* The config file and the plugin's arguments: what mountctl is run with,
 * and mountctl= (else the one built in). */
static void load_args(int ac, char **av)
{
	const char *conf = getenv("SQUASHCACHE_SLURM_CONF");
	char why[512];
	struct ds_conf c;
	int err;

	nconf = 0;
	for (int i = 0; i < ac; i++)
		if (!strncmp(av[i], "conf=", 5))
			conf = av[i] + 5;
	conf = conf && *conf ? conf : DS_CONF_FILE;
	ds_conf_default(&c);
	err = ds_conf_read(&c, conf, bad_line, NULL);
	if (err && err != -EINVAL && err != -ENOENT)
		slurm_error("squashcache: cannot read %s: %s", conf,
			    strerror(-err));
	conf_args[nconf++] = "--conf";
	conf_args[nconf++] = conf;
	for (int i = 0; i < ac && nconf + 2 <= MAX_ARGS / 2; i++) {
		if (!strncmp(av[i], "conf=", 5))
			continue;
		if (ds_conf_set(&c, av[i], why, sizeof(why)))
			slurm_error("squashcache: %s: ignored: %s", av[i], why);
		conf_args[nconf++] = "--set";
		conf_args[nconf++] = av[i];
	}
	snprintf(mountctl, sizeof(mountctl), "%s",
		 c.mountctl[0] ? c.mountctl : SQC_MOUNTCTL);
}

/* Read @fd to EOF into @out (NUL-terminated, truncated at @cap). */
static void drain(int fd, char *out, size_t cap)
{
	size_t len = 0;
	char tmp[4096];
	ssize_t n;

	while ((n = read(fd, tmp, sizeof(tmp))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (len + 1 < cap) {
			size_t k = (size_t)n < cap - 1 - len ? (size_t)n :
							       cap - 1 - len;

			memcpy(out + len, tmp, k);
			len += k;
		}
	}
	out[len] = '\0';
}

/*
 * Run `mountctl job [conf args] EXTRA... VERB` with stdin on /dev/null,
 * stdout (and with @both, stderr) into @out; otherwise stderr is ours.
 * Return: its exit status, or -1 if it could not run.
 */
static int run_job(const char *const *extra, const char *verb, bool both,
		   char *out, size_t cap)
{
	const char *argv[MAX_ARGS + 8];
	int k = 0, p[2], st;
	pid_t pid;

	argv[k++] = mountctl;
	argv[k++] = "job";
	for (int i = 0; i < nconf; i++)
		argv[k++] = conf_args[i];
	for (; *extra && k < MAX_ARGS + 6; extra++)
		argv[k++] = *extra;
	argv[k++] = verb;
	argv[k] = NULL;
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		dup2(nul, 0);
		dup2(p[1], 1);
		if (both)
			dup2(p[1], 2);
		execv(mountctl, (char *const *)argv);
		dprintf(2, "squashcache: cannot run %s: %s\n", mountctl,
			strerror(errno));
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	drain(p[0], out, cap);
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The job's list, wherever this context has it. */
static const char *job_datasets(spank_t sp)
{
	const char *d = getenv("SPANK_DATASET");
	char *arg = NULL;

	if (d && *d)
		return d;
	if (spank_option_getopt(sp, &dataset_opt, &arg) == ESPANK_SUCCESS &&
	    arg && *arg)
		return arg;
	return datasets;
}

static void node_name(spank_t sp, char *buf, size_t cap)
{
	const char *n = getenv("SLURMD_NODENAME");

	if (n && *n) {
		snprintf(buf, cap, "%s", n);
		return;
	}
	if (spank_getenv(sp, "SLURMD_NODENAME", buf, cap) == ESPANK_SUCCESS &&
	    *buf)
		return;
	if (gethostname(buf, cap))
		snprintf(buf, cap, "node");
	buf[cap - 1] = '\0';
	buf[strcspn(buf, ".")] = '\0';
}

/* The job's ids as mountctl arguments. */
struct ids {
	char job[24], uid[24], gid[24], node[256];
};

/* Fill @x for this job.  Return: 0 or -1. */
static int get_ids(spank_t sp, struct ids *x)
{
	uint32_t id;
	uid_t uid;
	gid_t gid;

	if (spank_get_item(sp, S_JOB_ID, &id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
		return -1;
	snprintf(x->job, sizeof(x->job), "%u", (unsigned int)id);
	snprintf(x->uid, sizeof(x->uid), "%u", (unsigned int)uid);
	snprintf(x->gid, sizeof(x->gid), "%u", (unsigned int)gid);
	node_name(sp, x->node, sizeof(x->node));
	return 0;
}

/* Log each line of @out with slurm_info(). */
static void log_lines(char *out)
{
	for (char *s = strtok(out, "\n"); s; s = strtok(NULL, "\n"))
		slurm_info("%s", s);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	load_args(ac, av);
	if (spank_option_register(sp, &dataset_opt) != ESPANK_SUCCESS) {
		slurm_error("squashcache: cannot register --dataset");
		return -1;
	}
	return 0;
}

/* Local/allocator: check the list, pass it on with absolute paths. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	const char *extra[] = { "--datasets", datasets, NULL };
	static char out[OUT_MAX];
	int rc;

	(void)ac;
	(void)av;
	if (!datasets || spank_remote(sp))
		return 0;
	rc = run_job(extra, "check", false, out, sizeof(out));
	if (rc)
		return -1; /* mountctl said why on our stderr */
	out[strcspn(out, "\n")] = '\0';
	if (spank_job_control_setenv(sp, "DATASET", out, 1) != ESPANK_SUCCESS) {
		slurm_error("squashcache: cannot pass --dataset to the nodes");
		return -1;
	}
	return 0;
}

/* Root, on a node, before or after the job: prolog or epilog. */
static int root_side(spank_t sp, int ac, char **av, const char *verb)
{
	static char out[OUT_MAX];
	const char *list;
	struct ids x;

	/* slurm_spank_init is not called in these contexts. */
	load_args(ac, av);
	list = job_datasets(sp);
	if (!list || !*list)
		return 0;
	if (get_ids(sp, &x)) {
		slurm_error("squashcache: cannot get the job's ids");
		return 0;
	}
	{
		const char *extra[] = { "--job",      x.job, "--uid",  x.uid,
					"--gid",      x.gid, "--node", x.node,
					"--datasets", list,  NULL };

		if (run_job(extra, verb, true, out, sizeof(out)) < 0)
			slurm_error("squashcache: cannot run %s", mountctl);
	}
	log_lines(out);
	return 0; /* never drain the node for a user's image */
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	return root_side(sp, ac, av, "prolog");
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	return root_side(sp, ac, av, "epilog");
}

/*
 * Remote, in each task before exec: the mounts' variables, or the
 * task fails with the reason a mount failed (on the task's stderr).
 */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	static char out[OUT_MAX];
	const char *list = job_datasets(sp);
	struct ids x;

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || !list || !*list || get_ids(sp, &x))
		return 0;
	{
		const char *extra[] = { "--job",      x.job, "--node", x.node,
					"--datasets", list,  NULL };

		if (run_job(extra, "env", false, out, sizeof(out)))
			return -1;
	}
	for (char *s = strtok(out, "\n"); s; s = strtok(NULL, "\n")) {
		char *eq = strchr(s, '=');

		if (!eq)
			continue;
		*eq = '\0';
		spank_setenv(sp, s, eq + 1, 1);
	}
	return 0;
}

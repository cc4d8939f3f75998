// SPDX-License-Identifier: MIT
/*
 * This file implements squashcache's SPANK plugin: `--dataset=IMAGE[:OPTS]`
 * for srun, sbatch and salloc mounts each image once per job on every node
 * of the job, as the job's user, and unmounts it when the job ends there.
 *
 * Contexts (see docs/slurm.md):
 *   local/allocator  the option is parsed, every image is made absolute,
 *                    checked against allow= and given a quick superblock
 *                    check, so a bad image fails the submission with
 *                    "squashcache: IMAGE: why" and never reaches a node.
 *                    The list goes to the prolog as SPANK_DATASET.
 *   job_prolog       (root, slurmd) forks, drops to the job's user and runs
 *                    `mountctl mount [-o OPTS] IMAGE MNT` per image, with
 *                    MNT = BASE/USER/squashcache/jobID-NODE/NAME.  It
 *                    always returns 0 (a failing prolog drains the node);
 *                    a failure is written to a marker file instead.
 *   user_init/task_init (remote) export SQUASHCACHE_MOUNT (and
 *                    SQUASHCACHE_MOUNT_<NAME> per image); task_init fails
 *                    the task with the marker's message.
 *   job_epilog       (root) unmounts everything under the job's directory
 *                    found in /proc/self/mounts, kills a daemon that is
 *                    left and removes the directories.
 *
 * Plugin arguments (plugstack.conf): conf=FILE base=DIR options=OPTS
 * allow=PREFIX[:PREFIX...] mountctl=PATH state=DIR.  conf= is read first,
 * the other arguments override it.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(squashcache, 1);

#define SQC_MAX_IMAGES 16
#define SQC_DEFAULT_CONF "/etc/squashcache/slurm.conf"

struct sqc_conf {
	char base[PATH_MAX]; /* mount base, "/dev/shm" by default */
	char options[1024]; /* default mount options, may be empty */
	char allow[4096]; /* allowed image prefixes, ':'-separated */
	char mountctl[PATH_MAX]; /* mountctl to run */
	char state[PATH_MAX]; /* root-owned dir for failure markers */
};

struct sqc_image {
	char path[PATH_MAX]; /* absolute image path */
	char opts[1024]; /* per-image options, may be empty */
	char name[256]; /* mount name: file name without extension */
};

static struct sqc_conf conf;
static char *datasets; /* --dataset values joined by ',', or NULL */

static int opt_dataset(int val, const char *optarg, int remote);

static struct spank_option dataset_opt = {
	"dataset",
	"IMAGE[:OPTS]",
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

static void copy(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src);
}

static int set_key(const char *key, size_t klen, const char *val)
{
	if (klen == 4 && !strncmp(key, "base", 4))
		copy(conf.base, sizeof(conf.base), val);
	else if (klen == 7 && !strncmp(key, "options", 7))
		copy(conf.options, sizeof(conf.options), val);
	else if (klen == 5 && !strncmp(key, "allow", 5))
		copy(conf.allow, sizeof(conf.allow), val);
	else if (klen == 8 && !strncmp(key, "mountctl", 8))
		copy(conf.mountctl, sizeof(conf.mountctl), val);
	else if (klen == 5 && !strncmp(key, "state", 5))
		copy(conf.state, sizeof(conf.state), val);
	else if (klen == 4 && !strncmp(key, "conf", 4))
		; /* handled before */
	else
		return -1;
	return 0;
}

/* Read KEY=VALUE lines of @path; a missing file is not an error. */
static void read_conf(const char *path)
{
	char line[4096];
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *eq, *end;

		while (isspace((unsigned char)*s))
			s++;
		if (*s == '#' || !*s)
			continue;
		end = s + strlen(s);
		while (end > s && isspace((unsigned char)end[-1]))
			*--end = '\0';
		eq = strchr(s, '=');
		if (!eq || set_key(s, eq - s, eq + 1))
			slurm_info("squashcache: %s: ignoring line '%s'", path,
				   s);
	}
	fclose(f);
}

static void load_conf(int ac, char **av)
{
	const char *cf = getenv("SQUASHCACHE_SLURM_CONF");

	copy(conf.base, sizeof(conf.base), "/dev/shm");
	conf.options[0] = '\0';
	conf.allow[0] = '\0';
	copy(conf.mountctl, sizeof(conf.mountctl), "/usr/local/bin/mountctl");
	copy(conf.state, sizeof(conf.state), "/run/squashcache");
	for (int i = 0; i < ac; i++)
		if (!strncmp(av[i], "conf=", 5))
			cf = av[i] + 5;
	read_conf(cf ? cf : SQC_DEFAULT_CONF);
	for (int i = 0; i < ac; i++) {
		const char *eq = strchr(av[i], '=');

		if (!eq || set_key(av[i], eq - av[i], eq + 1))
			slurm_error("squashcache: unknown plugin argument '%s'",
				    av[i]);
	}
}

static void image_name(struct sqc_image *im)
{
	static const char *const exts[] = { ".sqfs", ".squashfs", ".sqsh",
					    ".img", ".sif" };
	const char *b = strrchr(im->path, '/');
	size_t n;

	copy(im->name, sizeof(im->name), b ? b + 1 : im->path);
	n = strlen(im->name);
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t e = strlen(exts[i]);

		if (n > e && !strcmp(im->name + n - e, exts[i])) {
			im->name[n - e] = '\0';
			break;
		}
	}
}

/*
 * Split @list ("IMG[:OPTS],IMG2,...") into @ims.  A comma-separated item
 * that does not start with '/' continues the previous image's options, so
 * "a.sqfs:ram=1G,cache=2G,/b.sqfs" is two images.
 * Return: the number of images, or -1 with @why set.
 */
static int parse_list(const char *list, struct sqc_image *ims, int max,
		      char *why, size_t wcap)
{
	char *dup = strdup(list), *save = NULL, *tok;
	int n = 0;

	if (!dup) {
		snprintf(why, wcap, "out of memory");
		return -1;
	}
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *colon;

		if (*tok != '/' && n > 0 && strchr(tok, '=')) {
			struct sqc_image *im = &ims[n - 1];
			size_t l = strlen(im->opts);

			snprintf(im->opts + l, sizeof(im->opts) - l, "%s%s",
				 l ? "," : "", tok);
			continue;
		}
		if (n == max) {
			snprintf(why, wcap, "more than %d images", max);
			free(dup);
			return -1;
		}
		memset(&ims[n], 0, sizeof(ims[n]));
		colon = strchr(tok, ':');
		if (colon) {
			*colon = '\0';
			copy(ims[n].opts, sizeof(ims[n].opts), colon + 1);
		}
		copy(ims[n].path, sizeof(ims[n].path), tok);
		image_name(&ims[n]);
		n++;
	}
	free(dup);
	return n;
}

static int is_allowed(const char *path)
{
	char buf[sizeof(conf.allow)], *save = NULL, *p;

	if (!conf.allow[0])
		return 1;
	copy(buf, sizeof(buf), conf.allow);
	for (p = strtok_r(buf, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
		size_t l = strlen(p);

		if (!strncmp(path, p, l) &&
		    (p[l - 1] == '/' || path[l] == '/' || path[l] == '\0'))
			return 1;
	}
	return 0;
}

static uint32_t le32(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * The quick check done where the job is submitted: readable, a SquashFS
 * 4.0 superblock, bytes_used within the file.  `mountctl check` walks
 * the whole image; this only catches the usual mistakes in microseconds.
 * Return: 0, or -1 with @why set.
 */
static int quick_check(const char *path, char *why, size_t wcap)
{
	unsigned char sb[96];
	struct stat st;
	uint64_t used;
	ssize_t r;
	int fd;

	if (!is_allowed(path)) {
		snprintf(why, wcap, "not under an allowed prefix (%s)",
			 conf.allow);
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, wcap, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, wcap, "not a regular file");
		goto out_bad;
	}
	r = pread(fd, sb, sizeof(sb), 0);
	if (r < 0) {
		snprintf(why, wcap, "cannot read: %s", strerror(errno));
		goto out_bad;
	}
	if (r < (ssize_t)sizeof(sb) || le32(sb) != 0x73717368) {
		snprintf(why, wcap, "not a SquashFS image (bad magic)");
		goto out_bad;
	}
	if ((sb[28] | sb[29] << 8) != 4) {
		snprintf(why, wcap, "unsupported SquashFS version %u",
			 sb[28] | sb[29] << 8);
		goto out_bad;
	}
	used = le32(sb + 40) | (uint64_t)le32(sb + 44) << 32;
	if (used < sizeof(sb) || used > (uint64_t)st.st_size) {
		snprintf(why, wcap,
			 "corrupt: superblock says %llu bytes, file has %lld",
			 (unsigned long long)used, (long long)st.st_size);
		goto out_bad;
	}
	close(fd);
	return 0;
out_bad:
	close(fd);
	return -1;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	load_conf(ac, av);
	if (spank_option_register(sp, &dataset_opt) != ESPANK_SUCCESS) {
		slurm_error("squashcache: cannot register --dataset");
		return -1;
	}
	return 0;
}

/* Local/allocator: make paths absolute, check, pass on as SPANK_DATASET. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	struct sqc_image ims[SQC_MAX_IMAGES];
	char why[512], *out;
	size_t cap, len = 0;
	int n, bad = 0;

	(void)ac;
	(void)av;
	if (!datasets || spank_remote(sp))
		return 0;
	n = parse_list(datasets, ims, SQC_MAX_IMAGES, why, sizeof(why));
	if (n < 0) {
		slurm_error("squashcache: --dataset: %s", why);
		return -1;
	}
	cap = (size_t)n * (PATH_MAX + 1100) + 1;
	out = malloc(cap);
	if (!out)
		return -1;
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		char abs[PATH_MAX];

		if (!realpath(ims[i].path, abs)) {
			slurm_error("squashcache: %s: cannot open: %s",
				    ims[i].path, strerror(errno));
			bad = 1;
			continue;
		}
		if (quick_check(abs, why, sizeof(why))) {
			slurm_error("squashcache: %s: %s", ims[i].path, why);
			bad = 1;
			continue;
		}
		len += snprintf(out + len, cap - len, "%s%s%s%s",
				len ? "," : "", abs, ims[i].opts[0] ? ":" : "",
				ims[i].opts);
	}
	if (!bad &&
	    spank_job_control_setenv(sp, "DATASET", out, 1) != ESPANK_SUCCESS) {
		slurm_error("squashcache: cannot pass --dataset to the nodes");
		bad = 1;
	}
	free(out);
	return bad ? -1 : 0;
}

static const char *node_name(spank_t sp, char *buf, size_t cap)
{
	const char *n = getenv("SLURMD_NODENAME");

	if (n && *n)
		return n;
	if (sp &&
	    spank_getenv(sp, "SLURMD_NODENAME", buf, cap) == ESPANK_SUCCESS &&
	    *buf)
		return buf;
	if (gethostname(buf, cap))
		copy(buf, cap, "node");
	buf[strcspn(buf, ".")] = '\0';
	return buf;
}

struct sqc_job {
	uid_t uid;
	gid_t gid;
	uint32_t id;
	char user[256];
	char node[256];
	char dir[PATH_MAX]; /* BASE/USER/squashcache/jobID-NODE */
	char marker[PATH_MAX]; /* STATE/jobID-NODE.err */
};

static int get_job(spank_t sp, struct sqc_job *j)
{
	char buf[256];
	struct passwd *pw;

	memset(j, 0, sizeof(*j));
	if (spank_get_item(sp, S_JOB_UID, &j->uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &j->gid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &j->id) != ESPANK_SUCCESS)
		return -1;
	pw = getpwuid(j->uid);
	if (pw)
		copy(j->user, sizeof(j->user), pw->pw_name);
	else
		snprintf(j->user, sizeof(j->user), "%u", (unsigned)j->uid);
	copy(j->node, sizeof(j->node), node_name(sp, buf, sizeof(buf)));
	snprintf(j->dir, sizeof(j->dir), "%s/%s/squashcache/job%u-%s",
		 conf.base, j->user, j->id, j->node);
	snprintf(j->marker, sizeof(j->marker), "%s/job%u-%s.err", conf.state,
		 j->id, j->node);
	return 0;
}

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

static int run_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Run @argv as the job's user with stdin/stdout on /dev/null and stderr
 * into @errfd (or /dev/null).  Return: the exit status, -1 if not run.
 */
static int run_as_user(const struct sqc_job *j, char *const argv[], int errfd)
{
	struct passwd *pw = getpwuid(j->uid);
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int nul;

		/* slurmd may run us with stdio closed: errfd may be 0-2. */
		if (errfd >= 0 && errfd < 3)
			errfd = fcntl(errfd, F_DUPFD, 3);
		nul = open("/dev/null", O_RDWR);
		if (nul < 0)
			_exit(127);
		if (nul < 3)
			nul = fcntl(nul, F_DUPFD, 3);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(errfd >= 0 ? errfd : nul, 2);
		if (setsid() < 0 || setgid(j->gid) ||
		    initgroups(pw ? pw->pw_name : j->user, j->gid) ||
		    setuid(j->uid) || (j->uid && !setuid(0)))
			_exit(126);
		if (pw) {
			setenv("HOME", pw->pw_dir, 1);
			setenv("USER", pw->pw_name, 1);
		}
		if (chdir("/"))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	return run_wait(pid);
}

/*
 * Keep the first line of mountctl's stderr, without the program and
 * module prefixes: "squashcache: IMAGE: " is put in front of it.
 */
static void tidy(char *msg)
{
	static const char *const pre[] = { "mountctl: ", "squashcached: ",
					   "squashcache: ", "error: ",
					   "image: " };
	char *s = msg;
	int again = 1;

	while (again) {
		again = 0;
		for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++) {
			size_t l = strlen(pre[i]);

			if (!strncmp(s, pre[i], l)) {
				s += l;
				again = 1;
			}
		}
	}
	memmove(msg, s, strlen(s) + 1);
	msg[strcspn(msg, "\n")] = '\0';
	strcat(msg, "\n");
}

static void write_marker(const struct sqc_job *j, const char *msg)
{
	int fd;

	if (mkdir(conf.state, 0755) == 0 && chmod(conf.state, 0755))
		slurm_info("squashcache: chmod %s: %m", conf.state);
	fd = open(j->marker, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	/* slurmd's umask may be 077; the job's tasks must read it. */
	if (fchmod(fd, 0644))
		slurm_info("squashcache: fchmod %s: %m", j->marker);
	if (write(fd, msg, strlen(msg)) < 0)
		slurm_error("squashcache: cannot write %s", j->marker);
	close(fd);
}

/* Root, on each node before the job: mount every image as the user. */
int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	struct sqc_image ims[SQC_MAX_IMAGES];
	const char *list = job_datasets(sp);
	struct sqc_job j;
	char why[512];
	int n;

	/* slurm_spank_init is not called in this context. */
	load_conf(ac, av);
	if (!list || !*list)
		return 0;
	if (get_job(sp, &j)) {
		slurm_error("squashcache: cannot get the job's ids");
		return 0;
	}
	unlink(j.marker);
	n = parse_list(list, ims, SQC_MAX_IMAGES, why, sizeof(why));
	for (int i = 0; i < n; i++) {
		char mnt[PATH_MAX], opts[2100],
			errpath[] = "/tmp/sqcspankXXXXXX";
		char msg[1400] = "";
		char *argv[8];
		int k = 0, rc, efd;

		snprintf(mnt, sizeof(mnt), "%s/%s", j.dir, ims[i].name);
		snprintf(opts, sizeof(opts), "%s%s%s", conf.options,
			 conf.options[0] && ims[i].opts[0] ? "," : "",
			 ims[i].opts);
		if (!is_allowed(ims[i].path)) {
			snprintf(
				msg, sizeof(msg),
				"squashcache: %s: not under an allowed prefix\n",
				ims[i].path);
			write_marker(&j, msg);
			continue;
		}
		argv[k++] = conf.mountctl;
		argv[k++] = (char *)"mount";
		if (opts[0]) {
			argv[k++] = (char *)"-o";
			argv[k++] = opts;
		}
		argv[k++] = ims[i].path;
		argv[k++] = mnt;
		argv[k] = NULL;
		efd = mkstemp(errpath);
		if (efd >= 0) {
			unlink(errpath);
			if (fchown(efd, j.uid, j.gid))
				slurm_info("squashcache: fchown: %m");
		}
		rc = run_as_user(&j, argv, efd);
		if (rc) {
			ssize_t r = -1;

			if (efd >= 0) {
				r = pread(efd, msg, sizeof(msg) - 2, 0);
				msg[r > 0 ? r : 0] = '\0';
				tidy(msg);
			}
			if (r <= 1)
				snprintf(msg, sizeof(msg),
					 "%s failed (exit status %d)\n",
					 conf.mountctl, rc);
			slurm_error("squashcache: %s: %.*s", ims[i].path,
				    (int)strcspn(msg, "\n"), msg);
			snprintf(why, sizeof(why),
				 "squashcache: %s: ", ims[i].path);
			write_marker(&j, why);
			write_marker(&j, msg);
		}
		if (efd >= 0)
			close(efd);
	}
	return 0; /* never drain the node for a user's image */
}

/* The fields of /proc/self/mounts escape ' ', '\t', '\n' and '\\'. */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] &&
		    s[3]) {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Pids of squashcached processes whose arguments name @mnt. */
static int daemon_pids(const char *mnt, pid_t *pids, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		char path[64], buf[8192];
		ssize_t r;
		int fd, is_sqc = 0, names = 0;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		for (char *a = buf; a < buf + r; a += strlen(a) + 1) {
			const char *b = strrchr(a, '/');

			if (a == buf && !strcmp(b ? b + 1 : a, "squashcached"))
				is_sqc = 1;
			else if (!strcmp(a, mnt))
				names = 1;
		}
		if (is_sqc && names)
			pids[n++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return n;
}

static int is_mounted(const char *mnt)
{
	char line[PATH_MAX * 2];
	FILE *f = fopen("/proc/self/mounts", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *save = NULL, *dev = strtok_r(line, " ", &save);
		char *dir = dev ? strtok_r(NULL, " ", &save) : NULL;

		if (!dir)
			continue;
		unescape(dir);
		found = !strcmp(dir, mnt);
	}
	fclose(f);
	return found;
}

static void kill_daemons(const char *mnt)
{
	pid_t pids[16];
	int n = daemon_pids(mnt, pids, 16);

	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
}

/*
 * Unmount @mnt: first `mountctl umount` as the user (a clean stop of the
 * daemon), then as root fusermount3 -u, then a lazy umount; finally no
 * squashcached naming @mnt may be left alive.
 */
static void unmount_one(const struct sqc_job *j, const char *mnt)
{
	char *argv[] = { conf.mountctl, (char *)"umount", (char *)"--lazy",
			 (char *)mnt, NULL };
	pid_t pids[16];

	if (run_as_user(j, argv, -1) == 0 && !is_mounted(mnt))
		goto out_kill;
	if (is_mounted(mnt)) {
		pid_t pid = fork();

		if (pid == 0) {
			int nul = open("/dev/null", O_RDWR);

			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
			execlp("fusermount3", "fusermount3", "-u", "-z", mnt,
			       (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			run_wait(pid);
	}
	if (is_mounted(mnt) && umount2(mnt, MNT_DETACH))
		slurm_error("squashcache: cannot unmount %s: %m", mnt);
out_kill:
	kill_daemons(mnt);
	for (int t = 0; t < 50 && daemon_pids(mnt, pids, 16); t++)
		usleep(20000);
	rmdir(mnt);
}

/* Root, on each node after the job: nothing of the job may be left. */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char line[PATH_MAX * 2], mnts[SQC_MAX_IMAGES * 4][PATH_MAX];
	struct sqc_job j;
	size_t dl;
	int n = 0;
	FILE *f;

	/* slurm_spank_init is not called in this context. */
	load_conf(ac, av);
	if (get_job(sp, &j))
		return 0;
	unlink(j.marker);
	dl = strlen(j.dir);
	f = fopen("/proc/self/mounts", "re");
	while (f && n < SQC_MAX_IMAGES * 4 && fgets(line, sizeof(line), f)) {
		char *save = NULL, *dev = strtok_r(line, " ", &save);
		char *dir = dev ? strtok_r(NULL, " ", &save) : NULL;

		if (!dir)
			continue;
		unescape(dir);
		if (!strncmp(dir, j.dir, dl) && dir[dl] == '/')
			copy(mnts[n++], PATH_MAX, dir);
	}
	if (f)
		fclose(f);
	for (int i = 0; i < n; i++)
		unmount_one(&j, mnts[i]);
	/* A daemon whose mount vanished (or never came up) must go too. */
	{
		struct sqc_image ims[SQC_MAX_IMAGES];
		const char *list = job_datasets(sp);
		char why[256], mnt[PATH_MAX];
		int k = list ? parse_list(list, ims, SQC_MAX_IMAGES, why,
					  sizeof(why)) :
			       0;

		for (int i = 0; i < k; i++) {
			snprintf(mnt, sizeof(mnt), "%s/%s", j.dir, ims[i].name);
			kill_daemons(mnt);
			rmdir(mnt);
		}
	}
	rmdir(j.dir);
	return 0;
}

static void env_name(const char *name, char *out, size_t cap)
{
	size_t i = 0;

	i = (size_t)snprintf(out, cap, "SQUASHCACHE_MOUNT_");
	for (; *name && i + 1 < cap; name++)
		out[i++] = isalnum((unsigned char)*name) ?
				   (char)toupper((unsigned char)*name) :
				   '_';
	out[i] = '\0';
}

/* Remote: export the mount points to every task. */
static int set_task_env(spank_t sp)
{
	struct sqc_image ims[SQC_MAX_IMAGES];
	const char *list = job_datasets(sp);
	struct sqc_job j;
	char why[256];
	int n;

	if (!list || !*list || get_job(sp, &j))
		return 0;
	n = parse_list(list, ims, SQC_MAX_IMAGES, why, sizeof(why));
	for (int i = 0; i < n; i++) {
		char mnt[PATH_MAX], var[300];

		snprintf(mnt, sizeof(mnt), "%s/%s", j.dir, ims[i].name);
		if (i == 0)
			spank_setenv(sp, "SQUASHCACHE_MOUNT", mnt, 1);
		if (n > 1) {
			env_name(ims[i].name, var, sizeof(var));
			spank_setenv(sp, var, mnt, 1);
		}
	}
	return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!spank_remote(sp))
		return 0;
	return set_task_env(sp);
}

/*
 * Remote, in each task before exec: fail the task with the prolog's
 * message if an image could not be mounted on this node.
 */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	struct sqc_image ims[SQC_MAX_IMAGES];
	const char *list = job_datasets(sp);
	struct sqc_job j;
	char msg[2048], why[256];
	int fd, n, bad = 0;
	ssize_t r;

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || !list || !*list || get_job(sp, &j))
		return 0;
	set_task_env(sp);
	fd = open(j.marker, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		r = read(fd, msg, sizeof(msg) - 1);
		close(fd);
		msg[r > 0 ? r : 0] = '\0';
		fprintf(stderr, "%s", msg);
		slurm_error("%s", msg);
		return -1;
	}
	n = parse_list(list, ims, SQC_MAX_IMAGES, why, sizeof(why));
	for (int i = 0; i < n; i++) {
		char mnt[PATH_MAX];

		snprintf(mnt, sizeof(mnt), "%s/%s", j.dir, ims[i].name);
		if (!is_mounted(mnt)) {
			fprintf(stderr,
				"squashcache: %s: not mounted at %s on %s (see the node's slurmd log)\n",
				ims[i].path, mnt, j.node);
			bad = 1;
		}
	}
	return bad ? -1 : 0;
}

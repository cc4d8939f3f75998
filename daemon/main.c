// SPDX-License-Identifier: MIT
/*
 * This file implements squashcached's start and stop: arguments, checks
 * that turn every usual mistake into a clear message before anything is
 * mounted, the FUSE session, detaching, readiness, and a clean unmount on
 * SIGTERM/SIGINT.
 *
 * Detaching.  Everything that can fail for a reason the user can fix
 * (options, mountpoint, image, /dev/fuse, the control address, the mount
 * itself) happens in the first process, which still has the terminal.
 * It then forks; the child starts a new session, points its stdio at
 * /dev/null (slurmd and systemd wait for a hook's stdout to close), starts
 * its threads and the FUSE loop, and stat()s the mountpoint from a helper
 * thread.  Only when that stat has been answered through the loop does the
 * child tell the parent, which then exits 0.  So when `squashcached IMG
 * MNT` returns 0, the mount answers.
 */
#define LOG_MOD "squashcached"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctl_srv.h"
#include "daemon.h"
#include "holders.h"
#include "idle.h"
#include "lister.h"
#include "statahead.h"
#include "uring.h"
#include "warm.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/mountinfo.h"
#include "util/size.h"
#include "util/version.h"

/* Exit status for an image that is missing, unreadable or invalid (as
 * mountctl's, so that mountctl passes it on). */
#define EXIT_BAD_IMAGE 4

#define READY_TIMEOUT_S 60 /* the parent gives up waiting after this */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: squashcached [-f] [-d] [-o OPTION[,OPTION...]] IMAGE MOUNTPOINT\n"
		"\n"
		"Mount a SquashFS image read-only and serve it from RAM.\n"
		"Without -f it detaches, and returns only once the mount answers.\n"
		"Unmount with: fusermount3 -u MOUNTPOINT (or mountctl umount).\n"
		"\n"
		"  -f                 stay in the foreground, log to stderr\n"
		"  -d                 debug log (implies -f)\n"
		"  -h, --help         this text\n"
		"  -V, --version      print the version\n"
		"\n"
		"options (-o):\n"
		"  ram=SIZE           RAM for staging the compressed image (default: half\n"
		"                     of memory, or of the cgroup's memory limit if lower;\n"
		"                     SIZE like 8G, 512M or 25%%)\n"
		"  stage=MODE         auto (default: full unless the image is on tmpfs),\n"
		"                     full, meta (metadata only) or none\n"
		"  cache=SIZE         decompressed data cache (default 256M)\n"
		"  meta=SIZE          decoded metadata cache (default 64M)\n"
		"  warm=SIZE          push listed files into the kernel's page cache in\n"
		"                     the background, up to SIZE (default 25%%; 0 = off)\n"
		"  order_window=SIZE  RAM for reading ahead an epoch order given with\n"
		"                     mountctl order (default 64M; 0 = refuse orders)\n"
		"  statahead=N|all    listing ahead: list up to N entries ahead of a\n"
		"                     reader that walks the tree, and directories whose\n"
		"                     files are opened by path (default 65536; 0 = off);\n"
		"                     all: also list the whole tree once mounted, and\n"
		"                     return once it is listed (for readers that never\n"
		"                     list; was -o prime)\n"
		"  list_attrs         every listing carries every entry's attributes\n"
		"                     from the start (default: files get names only\n"
		"                     until a reader looks up a file it listed)\n"
		"  statahead_wait=S   with statahead=all, return after S seconds at most\n"
		"                     (default 10; 0 = at once; was prime_wait=)\n"
		"  hold=PID:START     set by mountctl acquire: the first holder; the\n"
		"                     mount goes after its last holder (see mountctl)\n"
		"  grace=S            with hold=, keep the mount S seconds after the\n"
		"                     last holder (default 0)\n"
		"  direct_io          do not keep file data in the page cache (for\n"
		"                     datasets near the size of RAM: no double caching)\n"
		"  allow_other        let other users read the mount (needs\n"
		"                     user_allow_other in /etc/fuse.conf unless root)\n"
		"  no_splice          copy raw bytes that are not staged through memory\n"
		"                     instead of splicing them from the image file\n"
		"  no_uring           take requests from /dev/fuse even when the kernel\n"
		"                     offers io_uring (fuse module's enable_uring=Y)\n"
		"  threads=N          FUSE worker threads (default: one per core,\n"
		"                     2 to 16, if the image is on tmpfs; else 16)\n"
		"  workers=N          readahead threads (default: one per core)\n"
		"  readahead=N        blocks decoded ahead of sequential reads (default 4)\n"
		"  timeout=S          unmount after S seconds with no open file and no\n"
		"                     request (default 0 = never)\n"
		"  ctl=PATH           control socket path (default: abstract, from the\n"
		"                     mountpoint; mountctl finds it)\n"
		"  log=FILE           append the log to FILE once detached (default:\n"
		"                     syslog)\n"
		"  debug              same as -d\n");
}

/* A size; a percentage is of the memory the daemon may use (o->mem). */
static int parse_size_opt(const struct sqcd_opts *o, const char *key,
			  const char *val, uint64_t *out)
{
	int err = size_parse(val, o->mem.usable, out);

	if (err)
		fprintf(stderr,
			"squashcached: bad size '%s' for -o %s (use e.g. 512M, 8G or 25%%)\n",
			val, key);
	return err;
}

static int parse_uint_opt(const char *key, const char *val, unsigned int max,
			  unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(val, &end, 10);
	if (errno || end == val || *end || v > max) {
		fprintf(stderr,
			"squashcached: bad value '%s' for -o %s (0 .. %u)\n",
			val, key, max);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

/*
 * How many FUSE workers by default.  Each request wakes a sleeping worker,
 * often on another core, and in a VM that wake-up can cost more than the
 * request itself; a few workers that stay busy take queued requests
 * without one.  Only an image outside RAM makes requests block (demand
 * reads from slow storage), and wants many workers in flight.
 */
static unsigned int default_threads(struct img *img)
{
	struct img_stats st;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	img_get_stats(img, &st);
	if (!st.in_ram)
		return 16;
	return n < 2 ? 2 : n > 16 ? 16 : (unsigned int)n;
}

static int parse_stage_opt(const char *val, enum stage_mode *out)
{
	static const struct {
		const char *name;
		enum stage_mode mode;
	} modes[] = { { "auto", STAGE_AUTO },
		      { "full", STAGE_FULL },
		      { "meta", STAGE_META },
		      { "none", STAGE_NONE } };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(val, modes[i].name)) {
			*out = modes[i].mode;
			return 0;
		}
	fprintf(stderr,
		"squashcached: bad value '%s' for -o stage (auto, full, meta or none)\n",
		val);
	return -EINVAL;
}

/* -o hold=PID:START, as mountctl acquire passes it. */
static int parse_hold_opt(const char *val, struct sqcd_opts *o)
{
	unsigned long long start;
	int pid, end = 0;

	if (sscanf(val, "%d:%llu%n", &pid, &start, &end) != 2 || val[end] ||
	    pid <= 0) {
		fprintf(stderr,
			"squashcached: bad value '%s' for -o hold (PID:START, as mountctl acquire passes it)\n",
			val);
		return -EINVAL;
	}
	o->hold_pid = pid;
	o->hold_start = start;
	return 0;
}

static int parse_grace_opt(const char *val, double *out)
{
	char *end;

	*out = strtod(val, &end);
	if (end == val || *end || !(*out >= 0) || *out > 86400.0 * 365) {
		fprintf(stderr,
			"squashcached: bad value '%s' for -o grace (seconds)\n",
			val);
		return -EINVAL;
	}
	return 0;
}

/* An option without a value.  Return: 0, or -EINVAL (said why). */
static int parse_flag(struct sqcd_opts *o, const char *opt)
{
	const struct {
		const char *name;
		bool *field;
	} flags[] = { { "no_uring", &o->no_uring },
		      { "no_splice", &o->no_splice },
		      { "direct_io", &o->direct_io },
		      { "allow_other", &o->allow_other },
		      { "list_attrs", &o->list_attrs } };

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (!strcmp(opt, flags[i].name)) {
			*flags[i].field = true;
			return 0;
		}
	if (!strcmp(opt, "prime")) {
		/* The old name of statahead=all, kept for a release. */
		o->deprecated = "-o prime is deprecated: use -o statahead=all";
		o->statahead_all = true;
		return 0;
	}
	if (!strcmp(opt, "debug")) {
		o->debug = true;
		o->foreground = true;
		return 0;
	}
	/* Always on; accepted so that fstab-style option lists work. */
	if (!strcmp(opt, "ro") || !strcmp(opt, "default_permissions") ||
	    !strcmp(opt, "nodev") || !strcmp(opt, "nosuid"))
		return 0;
	if (!strcmp(opt, "rw")) {
		fprintf(stderr,
			"squashcached: -o rw: SquashFS images are read-only\n");
		return -EINVAL;
	}
	fprintf(stderr,
		"squashcached: unknown option '%s'; see squashcached --help\n",
		opt);
	return -EINVAL;
}

static int parse_one(struct sqcd_opts *o, char *opt)
{
	char *val = strchr(opt, '=');

	if (!val)
		return parse_flag(o, opt);
	*val++ = '\0';
	if (!strcmp(opt, "ram"))
		return parse_size_opt(o, opt, val, &o->img.ram);
	if (!strcmp(opt, "cache"))
		return parse_size_opt(o, opt, val, &o->img.data_cache);
	if (!strcmp(opt, "meta"))
		return parse_size_opt(o, opt, val, &o->img.meta_cache);
	if (!strcmp(opt, "warm"))
		return parse_size_opt(o, opt, val, &o->warm);
	if (!strcmp(opt, "order_window"))
		return parse_size_opt(o, opt, val, &o->img.order_window);
	if (!strcmp(opt, "offset"))
		return parse_size_opt(o, opt, val, &o->img.offset);
	if (!strcmp(opt, "stage"))
		return parse_stage_opt(val, &o->img.stage);
	if (!strcmp(opt, "hold"))
		return parse_hold_opt(val, o);
	if (!strcmp(opt, "grace"))
		return parse_grace_opt(val, &o->grace);
	if (!strcmp(opt, "threads"))
		return parse_uint_opt(opt, val, 1024, &o->threads);
	if (!strcmp(opt, "workers"))
		return parse_uint_opt(opt, val, 64, &o->workers);
	if (!strcmp(opt, "timeout"))
		return parse_uint_opt(opt, val, 1u << 30, &o->timeout);
	if (!strcmp(opt, "readahead"))
		return parse_uint_opt(opt, val, 256, &o->readahead);
	if (!strcmp(opt, "ctl") && *val) {
		if (strlen(val) >= sizeof(o->ctl_addr)) {
			fprintf(stderr,
				"squashcached: -o ctl path is too long\n");
			return -EINVAL;
		}
		strcpy(o->ctl_addr, val);
		return 0;
	}
	if (!strcmp(opt, "log") && *val) {
		o->logfile = val;
		return 0;
	}
	if (!strcmp(opt, "statahead") && !strcmp(val, "all")) {
		o->statahead_all = true;
		return 0;
	}
	if (!strcmp(opt, "statahead"))
		return parse_uint_opt(opt, val, 1u << 30, &o->statahead);
	/* prime_wait is the old name of statahead_wait: kept for a release,
	 * with a line in the log. */
	if (!strcmp(opt, "prime_wait"))
		o->deprecated =
			"-o prime_wait= is deprecated: use -o statahead_wait=";
	if (!strcmp(opt, "statahead_wait") || !strcmp(opt, "prime_wait"))
		return parse_uint_opt(opt, val, READY_TIMEOUT_S / 2,
				      &o->statahead_wait);
	fprintf(stderr,
		"squashcached: unknown option '%s=%s'; see squashcached --help\n",
		opt, val);
	return -EINVAL;
}

static int parse_opts(struct sqcd_opts *o, char *list)
{
	char *p = list, *start = list, *out = list;
	int err;

	/* Split at commas; "\," is a literal comma. */
	for (;; p++) {
		if (*p == '\\' && p[1]) {
			*out++ = *++p;
			continue;
		}
		if (*p == ',' || !*p) {
			bool end = !*p;

			*out = '\0';
			if (*start) {
				err = parse_one(o, start);
				if (err)
					return err;
			}
			if (end)
				return 0;
			start = out = p + 1;
			continue;
		}
		*out++ = *p;
	}
}

static int mountpoint_match(const struct mountinfo_entry *e, void *arg)
{
	return !strcmp(e->mountpoint, arg);
}

/* Is @path a mount point in this namespace? */
static bool is_mountpoint(const char *path)
{
	return mountinfo_foreach(mountpoint_match, (void *)path) == 1;
}

static int check_mountpoint(struct sqcd_opts *o)
{
	struct stat st;
	int err;

	err = ctl_canonical_mountpoint(o->mountpoint, o->canonical,
				       sizeof(o->canonical));
	if (err) {
		fprintf(stderr,
			"squashcached: mountpoint '%s': cannot resolve its directory: %s\n",
			o->mountpoint, err_str(err));
		return err;
	}
	if (stat(o->canonical, &st)) {
		err = -errno;
		if (err == -ENOENT)
			fprintf(stderr,
				"squashcached: mountpoint '%s' does not exist; create it first (mkdir -m 0700 '%s')\n",
				o->mountpoint, o->mountpoint);
		else if (err == -ENOTCONN)
			fprintf(stderr,
				"squashcached: '%s' is a stale FUSE mount whose daemon is gone; clear it with: fusermount3 -u '%s'\n",
				o->mountpoint, o->canonical);
		else
			fprintf(stderr,
				"squashcached: cannot use mountpoint '%s': %s\n",
				o->mountpoint, err_str(err));
		return err;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr,
			"squashcached: mountpoint '%s' is not a directory\n",
			o->mountpoint);
		return -ENOTDIR;
	}
	if (is_mountpoint(o->canonical)) {
		struct statvfs sv;

		/* stat() may answer from the kernel's cache; statfs asks.
		 * ECONNABORTED: it was sent as the connection ended. */
		if (statvfs(o->canonical, &sv) &&
		    (errno == ENOTCONN || errno == ECONNABORTED)) {
			fprintf(stderr,
				"squashcached: '%s' is a stale FUSE mount whose daemon is gone; clear it with: fusermount3 -u '%s'\n",
				o->mountpoint, o->canonical);
			return -ENOTCONN;
		}
		fprintf(stderr,
			"squashcached: '%s' is already a mount point; unmount it first (fusermount3 -u '%s')\n",
			o->mountpoint, o->canonical);
		return -EBUSY;
	}
	if (getuid() != 0 && access(o->canonical, W_OK)) {
		fprintf(stderr,
			"squashcached: cannot mount on '%s': you need write permission on it (mount on a directory you own)\n",
			o->mountpoint);
		return -EACCES;
	}
	return 0;
}

static void explain_fuse_failure(void)
{
	struct stat st;

	if (stat("/dev/fuse", &st)) {
		fprintf(stderr,
			"squashcached: /dev/fuse is missing: load the fuse module (modprobe fuse) or, in a container, pass the device in\n");
		return;
	}
	if (access("/dev/fuse", R_OK | W_OK))
		fprintf(stderr,
			"squashcached: /dev/fuse is not accessible to uid %u (mode %04o); Debian's default is 0666: chmod 0666 /dev/fuse\n",
			(unsigned int)getuid(), st.st_mode & 07777);
	else if (getuid() != 0 && access("/bin/fusermount3", X_OK) &&
		 access("/usr/bin/fusermount3", X_OK))
		fprintf(stderr,
			"squashcached: fusermount3 is missing: install the fuse3 package\n");
}

static void route_fuse_log(enum fuse_log_level level, const char *fmt,
			   va_list ap)
{
	log_vmsg((int)level, "libfuse", fmt, ap);
}

/* Tell systemd (Type=notify) how we are, if it is listening. */
static void sd_notify_msg(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int s;

	if (!path || !*path || strlen(path) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			  strlen(path));
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	sendto(s, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	close(s);
}

struct ready {
	struct sqcd *d;
	int fd; /* pipe to the waiting parent, or -1 */
};

static void tell_parent(int fd, const char *msg)
{
	if (fd < 0)
		return;
	if (write(fd, msg, strlen(msg)) < 0)
		log_warn("cannot report to the starting process: %s",
			 err_str(errno));
	close(fd);
}

/* Say what memory the daemon may use, whence, and the budgets in force. */
static void log_budgets(const struct sqcd *d)
{
	char limit[32] = "unknown", ram[32], warm[32];

	if (d->o.mem.usable)
		size_format(d->o.mem.usable, limit, sizeof(limit));
	log_info("memory limit %s (%s): ram=%s, warm=%s", limit,
		 d->o.mem.source, size_format(d->o.img.ram, ram, sizeof(ram)),
		 size_format(d->o.warm, warm, sizeof(warm)));
}

/* Runs beside the FUSE loop: the mount answers once this stat returns. */
static void *ready_main(void *arg)
{
	struct ready *r = arg;
	struct sqcd *d = r->d;
	char msg[PATH_MAX + 128];
	struct stat st;

	if (stat(d->o.canonical, &st)) {
		snprintf(msg, sizeof(msg),
			 "ERR the mount at '%s' does not answer: %s\n",
			 d->o.canonical, err_str(errno));
		tell_parent(r->fd, msg);
		free(r);
		return NULL;
	}
	/* feature call site: listing ahead.  With statahead=all, a reader
	 * that starts the moment the mount command returns would race the
	 * listing for the CPU and send the lookups the listing exists to
	 * save; so readiness waits for it, up to statahead_wait=. */
	if (d->o.statahead_all && d->o.statahead_wait)
		statahead_wait_all(d->statahead, d->o.statahead_wait);
	tell_parent(r->fd, "OK\n");
	snprintf(msg, sizeof(msg), "READY=1\nMAINPID=%ld\nSTATUS=serving",
		 (long)getpid());
	sd_notify_msg(msg);
	log_info("mounted '%s' (%s) on '%s', control socket %s", d->o.image_abs,
		 img_compressor(d->img), d->o.canonical, d->o.ctl_addr);
	log_budgets(d);
	free(r);
	return NULL;
}

/* Parent side of the detach: wait for "OK" or an error line. */
static int wait_for_child(int fd, pid_t child)
{
	char buf[600];
	size_t n = 0;
	ssize_t r;
	int status;

	alarm(READY_TIMEOUT_S);
	while (n < sizeof(buf) - 1) {
		r = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (r < 0 && errno == EINTR) {
			fprintf(stderr,
				"squashcached: the mount did not answer within %d s; stopping it\n",
				READY_TIMEOUT_S);
			kill(child, SIGTERM);
			return 1;
		}
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	if (!strncmp(buf, "OK", 2))
		return 0;
	if (!strncmp(buf, "ERR ", 4)) {
		fprintf(stderr, "squashcached: %s", buf + 4);
		return 1;
	}
	if (waitpid(child, &status, WNOHANG) == child && WIFSIGNALED(status))
		fprintf(stderr,
			"squashcached: the daemon died (signal %d) before the mount was ready\n",
			WTERMSIG(status));
	else
		fprintf(stderr,
			"squashcached: the daemon exited before the mount was ready (see its log: syslog, or -o log=FILE)\n");
	return 1;
}

static void on_alarm(int sig)
{
	(void)sig;
}

static int detach(int *ready_fd)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	int p[2], nul;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC)) {
		perror("squashcached: pipe");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		perror("squashcached: fork");
		return -1;
	}
	if (pid > 0) {
		close(p[1]);
		sigaction(SIGALRM, &sa, NULL);
		exit(wait_for_child(p[0], pid));
	}
	close(p[0]);
	*ready_fd = p[1];
	if (setsid() < 0)
		return -1;
	if (chdir("/"))
		return -1;
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0)
		return -1;
	dup2(nul, STDIN_FILENO);
	dup2(nul, STDOUT_FILENO);
	dup2(nul, STDERR_FILENO);
	close(nul);
	return 0;
}

static int open_logfile(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		fprintf(stderr, "squashcached: cannot open log file '%s': %s\n",
			path, err_str(errno));
		return -1;
	}
	return fd;
}

static char *fuse_mount_opts(const struct sqcd *d)
{
	struct ctl_buf b = { 0 };

	ctl_buf_printf(&b,
		       "ro,default_permissions,subtype=squashcache,fsname=");
	for (const char *p = d->o.image_abs; *p; p++) {
		if (*p == ',' || *p == '\\')
			ctl_buf_printf(&b, "\\");
		ctl_buf_printf(&b, "%c", *p);
	}
	if (d->o.allow_other)
		ctl_buf_printf(&b, ",allow_other");
	if (b.oom) {
		ctl_buf_release(&b);
		return NULL;
	}
	return b.p;
}

/*
 * The daemon's features, in start order, each with the reason for its
 * place.  They start in this order after the prefetcher, and stop in the
 * reverse order, in three rounds: first those that stop while the mount is
 * still there, then (after the unmount) those marked after_unmount, then,
 * once the session is destroyed and no FUSE worker can call in any more,
 * each release (what workers may use until then).  Every step is safe on a
 * feature that is off or did not start.
 *
 * Each feature has the same life cycle: x_start(), x_stop() (its threads
 * end), x_free().  A feature that no request thread can reach is freed
 * right after its stop; warming and listing ahead are freed in the
 * release round.
 *
 * The core's events (events.h) go to the features that hear them, in
 * this order: a feature that started and is on subscribes its handler to
 * the events of its row.
 */
struct feature {
	const char *name; /* for the reader */
	/* 0 or -errno; sets *f to the feature, or NULL when it is off */
	int (*start)(struct sqcd *d, void **f);
	void (*stop)(struct sqcd *d); /* its threads stop; cannot fail */
	bool after_unmount; /* stops once the mount is gone */
	void (*release)(struct sqcd *d); /* after the session, or NULL */
	uint32_t events; /* SQCD_EV_BIT()s its handler hears */
	void (*on_event)(void *f, const struct sqcd_event *ev); /* or NULL */
};

static int start_holders(struct sqcd *d, void **f)
{
	int err = holders_start(d, &d->holders);

	*f = d->holders;
	return err;
}

static void stop_holders(struct sqcd *d)
{
	holders_stop(d->holders);
	holders_free(d->holders);
	d->holders = NULL;
}

static int start_idle(struct sqcd *d, void **f)
{
	int err = idle_start(d, &d->idle);

	*f = d->idle;
	return err;
}

static void stop_idle(struct sqcd *d)
{
	idle_stop(d->idle);
	idle_free(d->idle);
	d->idle = NULL;
}

static int start_uring(struct sqcd *d, void **f)
{
	int err = uring_start(d, &d->uring);

	*f = d->uring;
	return err;
}

static void stop_uring(struct sqcd *d)
{
	uring_stop(d->uring);
	uring_free(d->uring);
	d->uring = NULL;
}

static int start_warm(struct sqcd *d, void **f)
{
	int err = warm_start(d, &d->warm);

	*f = d->warm;
	return err;
}

static void stop_warm(struct sqcd *d)
{
	warm_stop(d->warm);
}

static void release_warm(struct sqcd *d)
{
	warm_free(d->warm);
	d->warm = NULL;
}

static int start_statahead(struct sqcd *d, void **f)
{
	int err = statahead_start(d, &d->statahead);

	*f = d->statahead;
	return err;
}

static void cancel_statahead(struct sqcd *d)
{
	statahead_cancel(d->statahead);
}

static void release_statahead(struct sqcd *d)
{
	statahead_stop(d->statahead);
	statahead_free(d->statahead);
	d->statahead = NULL;
}

static int start_ctl(struct sqcd *d, void **f)
{
	int err = ctl_srv_start(d, &d->ctl);

	*f = d->ctl;
	return err;
}

static void stop_ctl(struct sqcd *d)
{
	ctl_srv_stop(d->ctl);
	ctl_srv_free(d->ctl);
	d->ctl = NULL;
}

#define EV(x) SQCD_EV_BIT(SQCD_EV_##x)

static const struct feature features[] = {
	/* First: before the control socket, which serves "hold" and
	 * "release".  Stops after the unmount: it holds the directory lock
	 * that acquirers wait on, released only once the mount is gone. */
	{ "holders", start_holders, stop_holders, true, NULL, 0, NULL },
	/* Stops once every thread that serves requests (FUSE workers,
	 * io_uring) is joined: none can touch the idle state any more.
	 * Hears requests and handles: a mount is idle without either. */
	{ "idle timeout", start_idle, stop_idle, false, NULL,
	  EV(REQUEST) | EV(HANDLE_OPENED) | EV(HANDLE_RELEASED),
	  idle_on_event },
	/* Stops after warming: a push of the warming thread may wait for a
	 * READ that an io_uring thread answers. */
	{ "io_uring", start_uring, stop_uring, false, NULL, 0, NULL },
	/* Before listing ahead, whose SQCD_EV_TREE_LISTED arms it.  Its
	 * thread uses the session and the image: stops before the unmount.
	 * FUSE workers push at open until the session is gone, and the
	 * listing thread may arm it until it is joined: released last.
	 * Hears what the kernel was shown and what is read; before listing
	 * ahead, so that a FORGET reaches it first. */
	{ "warming", start_warm, stop_warm, false, release_warm,
	  EV(ENTRY_LISTED) | EV(RANGE_READ) | EV(READER) | EV(FILE_OPENED) |
		  EV(TREE_LISTED) | EV(FORGOTTEN),
	  warm_on_event },
	/* Uses the session and the image: asked to stop before the unmount,
	 * which releases a listing blocked on a request; joined and freed
	 * once the session is destroyed (and the ready check, which waits
	 * for statahead=all, is joined).  Hears which directories the
	 * kernel was shown, listed and dropped. */
	{ "listing ahead", start_statahead, cancel_statahead, false,
	  release_statahead,
	  EV(LOOKED_UP) | EV(ENTRY_LISTED) | EV(DIR_LISTED) | EV(FORGOTTEN),
	  statahead_on_event },
	/* Last: it reads what the others set up.  Stops first. */
	{ "control socket", start_ctl, stop_ctl, false, NULL, 0, NULL },
};

#undef EV

/* Every feature can hear every event: subscribing cannot fail. */
_Static_assert(sizeof(features) / sizeof(features[0]) <= SQCD_EV_SUBS_MAX,
	       "more features than handlers per event");

/* Start every feature in order, and subscribe those that are on to their
 * events.  Return: 0 or the first -errno. */
static int start_features(struct sqcd *d)
{
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		void *f = NULL;
		int err = features[i].start(d, &f);

		if (err) {
			log_err("cannot start %s: %s", features[i].name,
				err_str(err));
			return err;
		}
		if (f && features[i].on_event)
			sqcd_subscribe(&d->events, features[i].events,
				       features[i].on_event, f);
	}
	return 0;
}

/* Stop, in reverse order, the features that stop before the unmount
 * (@after_unmount false) or after it (true). */
static void stop_features(struct sqcd *d, bool after_unmount)
{
	for (size_t i = sizeof(features) / sizeof(features[0]); i-- > 0;)
		if (features[i].after_unmount == after_unmount)
			features[i].stop(d);
}

/* Release, in reverse order, what features kept past their stop. */
static void release_features(struct sqcd *d)
{
	for (size_t i = sizeof(features) / sizeof(features[0]); i-- > 0;)
		if (features[i].release)
			features[i].release(d);
}

/*
 * Parse the command line into d->o, with the defaults first.
 * Return: 0 to go on; otherwise main() exits with *status:
 * -ECANCELED after --help or --version (status 0), -EINVAL after a usage
 * error (said; status 2).
 */
static int parse_args(struct sqcd *d, int argc, char **argv, int *status)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*status = 2;
	/* What the defaults come from: ram= is half of it (memlimit_budget(),
	 * which img_opts_default() takes), warm= a quarter. */
	memlimit_get(&d->o.mem);
	img_opts_default(&d->o.img);
	d->o.threads = 0; /* default_threads() once the image is open */
	d->o.warm = d->o.mem.usable / 4;
	d->o.readahead = 4;
	d->o.statahead_wait = 10;
	d->o.statahead = 65536;
	while ((c = getopt_long(argc, argv, "+fdo:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			d->o.foreground = true;
			break;
		case 'd':
			d->o.debug = true;
			d->o.foreground = true;
			break;
		case 'o':
			if (parse_opts(&d->o, optarg))
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			*status = 0;
			return -ECANCELED;
		case 'V':
			printf("squashcached %s (libfuse %s)\n", SQC_VERSION,
			       fuse_pkgversion());
			*status = 0;
			return -ECANCELED;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr,
			"squashcached: expected IMAGE and MOUNTPOINT\n");
		usage(stderr);
		return -EINVAL;
	}
	d->o.image = argv[optind];
	d->o.mountpoint = argv[optind + 1];
	log_set_level(d->o.debug ? LOG_DEBUG : LOG_INFO);
	fuse_set_log_func(route_fuse_log);
	if (d->o.deprecated)
		log_warn("%s", d->o.deprecated);
	return 0;
}

/* Does @image name an inherited descriptor, /dev/fd/N or /proc/self/fd/N? */
static bool is_fd_path(const char *image)
{
	const char *n = !strncmp(image, "/dev/fd/", 8)	      ? image + 8 :
			!strncmp(image, "/proc/self/fd/", 14) ? image + 14 :
								NULL;

	return n && *n && strspn(n, "0123456789") == strlen(n);
}

/*
 * The name of the file of descriptor @image (is_fd_path()), for the mount
 * table and messages only: it is never opened by that name (a caller
 * that checked the file it opened, e.g. against allow=, hands it over so
 * that nobody can swap the name in between).  Return: 0 or -errno (said).
 */
static int fd_image_name(const char *image, char *abs)
{
	ssize_t n = readlink(image, abs, PATH_MAX - 1);

	if (n <= 0 || abs[0] != '/') {
		fprintf(stderr,
			"squashcached: image '%s' is not an open file\n",
			image);
		return -EBADF;
	}
	abs[n] = '\0';
	return 0;
}

/*
 * Check the mount point, open the image and settle what depends on it.
 * Return: 0 to go on; otherwise -errno (said), and main() exits with
 * *status: EXIT_BAD_IMAGE for an image that is missing, unreadable or not
 * SquashFS, 1 for a bad mount point.
 */
static int open_image(struct sqcd *d, int *status)
{
	int err;

	*status = 1;
	err = check_mountpoint(&d->o);
	if (err)
		return err;
	*status = EXIT_BAD_IMAGE;
	if (is_fd_path(d->o.image)) {
		err = fd_image_name(d->o.image, d->o.image_abs);
	} else if (!realpath(d->o.image, d->o.image_abs)) {
		err = -errno;
		if (err == -ENOENT)
			fprintf(stderr,
				"squashcached: image '%s' does not exist\n",
				d->o.image);
		else
			fprintf(stderr,
				"squashcached: cannot open image '%s': %s\n",
				d->o.image, err_str(err));
	}
	if (err)
		return err;
	/* An inherited descriptor is reopened as it is, never by name. */
	err = img_open(is_fd_path(d->o.image) ? d->o.image : d->o.image_abs,
		       &d->o.img, &d->img);
	if (err) {
		fprintf(stderr, "squashcached: cannot mount '%s': %s\n",
			is_fd_path(d->o.image) ? d->o.image_abs : d->o.image,
			err == -EMEDIUMTYPE ? "not a SquashFS image" :
					      err_str(err));
		return err;
	}
	if (is_fd_path(d->o.image) && atoi(strrchr(d->o.image, '/') + 1) > 2)
		close(atoi(strrchr(d->o.image, '/') + 1)); /* img has its own */
	d->root_ref = img_get_super(d->img)->root_ref;
	if (!d->o.threads)
		d->o.threads = default_threads(d->img);
	return 0;
}

/*
 * The default control address is taken and the holder is not a daemon of
 * ours on its way out: listen at a fallback address that nobody can
 * guess, where clients look next (ctl.h).  Return: 0 or -errno.
 */
static int listen_fallback(struct sqcd *d, int probe, uid_t holder)
{
	char taken[CTL_PATH_MAX], who[64];
	int err;

	memcpy(taken, d->o.ctl_addr, sizeof(taken));
	err = ctl_fallback_address(d->o.canonical, d->o.ctl_addr,
				   sizeof(d->o.ctl_addr));
	if (err)
		return err;
	if (probe)
		snprintf(who, sizeof(who), "a socket that does not answer (%s)",
			 err_str(probe));
	else
		snprintf(who, sizeof(who), "uid %u", (unsigned int)holder);
	log_warn("control address '%s' is taken by %s: listening on '%s'",
		 taken, who, d->o.ctl_addr);
	return ctl_srv_listen(d, &d->ctl);
}

/*
 * Bind the control socket now, before detaching, so that a second daemon
 * for the same mount point is told at once.  Return: 0 or -errno (said).
 */
static int listen_ctl(struct sqcd *d)
{
	bool fixed = d->o.ctl_addr[0]; /* -o ctl=: there or nowhere */
	bool refused = false;
	uid_t holder = 0;
	int err, probe;

	if (!fixed)
		ctl_default_address(d->o.canonical, d->o.ctl_addr,
				    sizeof(d->o.ctl_addr));
	err = ctl_srv_listen(d, &d->ctl);
	for (int i = 0; err == -EADDRINUSE && i < 50; i++) {
		if (!fixed) {
			/* Anyone may bind an abstract name: who did? */
			probe = ctl_probe(d->o.ctl_addr, &holder);
			if (probe == -ECONNREFUSED && !refused) {
				/* Maybe just released: once more, at once. */
				refused = true;
				err = ctl_srv_listen(d, &d->ctl);
				continue;
			}
			if (probe || holder != getuid()) {
				err = listen_fallback(d, probe, holder);
				break;
			}
		}
		/* The mountpoint is not mounted, so a daemon of ours still
		 * holding the address is on its way out: the kernel takes a
		 * second or two to release a FUSE connection after an
		 * unmount. */
		usleep(100 * 1000);
		err = ctl_srv_listen(d, &d->ctl);
	}
	if (err)
		fprintf(stderr,
			"squashcached: cannot listen on control socket %s: %s%s\n",
			d->o.ctl_addr, err_str(err),
			err == -EADDRINUSE ?
				" (another squashcached still serves this mountpoint; stop it first)" :
				"");
	return err;
}

/* libfuse's arguments: the program name and the mount options.
 * Return: 0 or -ENOMEM (said). */
static int session_args(struct sqcd *d, const char *argv0,
			struct fuse_args *args)
{
	char *mopts = fuse_mount_opts(d);
	int err = 0;

	if (!mopts || fuse_opt_add_arg(args, argv0) ||
	    fuse_opt_add_arg(args, "-o") || fuse_opt_add_arg(args, mopts) ||
	    (d->o.debug && fuse_opt_add_arg(args, "-d"))) {
		fprintf(stderr, "squashcached: out of memory\n");
		err = -ENOMEM;
	}
	free(mopts);
	return err;
}

/* Start the prefetcher, then the features (features[]).  Return: 0 or
 * -errno, told to the parent waiting on @ready_fd. */
static int start_threads(struct sqcd *d, int ready_fd)
{
	int err;

	mono_now(&d->started);
	err = pf_new(d->img,
		     &(struct pf_opts){ .workers = d->o.workers,
					.queue_max = 256 },
		     &d->pf);
	if (!err) /* the stager threads also watch the image file */
		err = stage_start(img_stage(d->img), 0);
	if (!err)
		err = start_features(d);
	if (err) {
		char msg[256];

		snprintf(msg, sizeof(msg), "ERR cannot start threads: %s\n",
			 err_str(err));
		tell_parent(ready_fd, msg);
	}
	return err;
}

/* Start the ready check beside the FUSE loop (ready_main()).  False, told
 * to the parent, if it cannot start. */
static bool start_ready(struct sqcd *d, int ready_fd, pthread_t *t)
{
	struct ready *ready = malloc(sizeof(*ready));

	if (ready) {
		ready->d = d;
		ready->fd = ready_fd;
		if (!pthread_create(t, NULL, ready_main, ready))
			return true;
		free(ready);
	}
	tell_parent(ready_fd, "ERR cannot start threads\n");
	return false;
}

/* Serve requests until unmounted or signalled, and say why it ended.
 * Return: 0, or -ENOMEM if it could not start. */
static int serve(struct sqcd *d)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int err;

	if (!cfg) {
		log_err("out of memory; unmounting '%s'", d->o.canonical);
		return -ENOMEM;
	}
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, d->o.threads);
	fuse_loop_cfg_set_idle_threads(cfg, d->o.threads);
	err = fuse_session_loop_mt(d->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	sd_notify_msg("STOPPING=1");
	/* libfuse reports the signal that stopped it as a positive number. */
	if (err > 0)
		log_info("unmounting '%s' on %s", d->o.canonical,
			 strsignal(err));
	else if (err && err != -ENODEV)
		log_err("session loop ended: %s; unmounting '%s'", err_str(err),
			d->o.canonical);
	else
		log_info("unmounting '%s'", d->o.canonical);
	return 0;
}

/*
 * Have SIGINT, SIGTERM and SIGHUP unmount cleanly.  libfuse only takes
 * over signals left at their default, and a shell starting us in the
 * background ignores SIGINT.  Return: 0 or -1.
 */
static int take_signals(struct fuse_session *se)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	return fuse_set_signal_handlers(se);
}

/* Detach (detach()), and log to @log_fd, or else to syslog.  Return: 0
 * in the child, with *@ready_fd the pipe to the waiting parent; -1. */
static int go_background(int log_fd, int *ready_fd)
{
	if (detach(ready_fd))
		return -1;
	if (log_fd >= 0)
		dup2(log_fd, STDERR_FILENO);
	else
		log_set_sink(LOG_SINK_SYSLOG);
	return 0;
}

int main(int argc, char **argv)
{
	struct sqcd *d;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	pthread_t ready_thread;
	bool ready_running = false;
	int log_fd = -1, ready_fd = -1, ret;

	/* Listing ahead's helper process (lister.h), started by the daemon. */
	if (argc == 2 && !strcmp(argv[1], LISTER_ARG))
		return lister_main();
	/* A few malloc arenas: with one per thread, memory freed by one
	 * reader sits idle in its arena and RSS drifts above the budgets. */
	mallopt(M_ARENA_MAX, 2);
	d = calloc(1, sizeof(*d));
	if (!d) {
		fprintf(stderr, "squashcached: out of memory\n");
		return 1;
	}
	if (parse_args(d, argc, argv, &ret) || open_image(d, &ret))
		goto out_img;
	ret = 1;
	if (listen_ctl(d))
		goto out_img;
	if (d->o.logfile && !d->o.foreground) {
		log_fd = open_logfile(d->o.logfile);
		if (log_fd < 0)
			goto out_img;
	}
	if (session_args(d, argv[0], &args))
		goto out_args;
	d->se = fuse_session_new(&args, &sqcd_ops, sizeof(sqcd_ops), d);
	if (!d->se)
		goto out_args;
	if (take_signals(d->se))
		goto out_session;
	if (fuse_session_mount(d->se, d->o.canonical)) {
		explain_fuse_failure();
		goto out_signals;
	}

	if (!d->o.foreground && go_background(log_fd, &ready_fd))
		goto out_unmount;
	if (start_threads(d, ready_fd))
		goto out_unmount;
	ready_running = start_ready(d, ready_fd, &ready_thread);
	if (!ready_running)
		goto out_unmount;
	if (!serve(d))
		ret = 0;

out_unmount:
	/* See features[]: the order and its reasons. */
	stop_features(d, false);
	fuse_session_unmount(d->se);
	stop_features(d, true);
out_signals:
	fuse_remove_signal_handlers(d->se);
out_session:
	stage_stop(img_stage(d->img));
	pf_free(d->pf);
	d->pf = NULL;
	fuse_session_destroy(d->se);
	/* Unmounting closed the FUSE device, which released the ready check
	 * (it waits for statahead=all) and the lister process's request. */
	if (ready_running)
		pthread_join(ready_thread, NULL);
	release_features(d);
out_args:
	fuse_opt_free_args(&args);
out_img:
	ctl_srv_stop(d->ctl); /* still listening when the mount failed */
	ctl_srv_free(d->ctl);
	img_close(d->img);
	free(d);
	return ret;
}

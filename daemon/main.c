// SPDX-License-Identifier: MIT
/*
 * This file implements squashcached's start and stop, in order: the
 * options (options.c), checks that turn every usual mistake into a clear
 * message before anything is mounted, the image, the control socket
 * (ctl_srv.c), the FUSE session and mount, detaching (detach.c), the
 * threads and features, readiness, the session loop, and a clean unmount
 * on SIGTERM/SIGINT (stop.c).
 */
#define LOG_MOD "squashcached"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ctl_srv.h"
#include "daemon.h"
#include "detach.h"
#include "holders.h"
#include "idle.h"
#include "keep.h"
#include "lister.h"
#include "options.h"
#include "statahead.h"
#include "stop.h"
#include "uring.h"
#include "verify.h"
#include "warm.h"
#include "order/order.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/mountinfo.h"
#include "util/size.h"

/* Exit status for an image that is missing, unreadable or invalid (as
 * mountctl's, so that mountctl passes it on). */
#define EXIT_BAD_IMAGE 4

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

/* Open -o log=, which the daemon logs to once detached, into *@fd (-1
 * without one).  Return: 0 or -1 (said). */
static int open_log(const struct sqcd_opts *o, int *fd)
{
	*fd = -1;
	if (!o->logfile || o->foreground)
		return 0;
	*fd = detach_open_log(o->logfile);
	return *fd < 0 ? -1 : 0;
}

/* Log at the level asked, libfuse's messages too. */
static void set_logging(const struct sqcd_opts *o)
{
	log_set_level(o->debug ? LOG_DEBUG : LOG_INFO);
	fuse_set_log_func(route_fuse_log);
	if (o->deprecated)
		log_warn("%s", o->deprecated);
}

static char *fuse_mount_opts(const struct sqcd *d)
{
	struct json_buf b = { 0 };

	json_buf_printf(&b,
			"ro,default_permissions,subtype=squashcache,fsname=");
	for (const char *p = d->o.image_abs; *p; p++) {
		if (*p == ',' || *p == '\\')
			json_buf_printf(&b, "\\");
		json_buf_printf(&b, "%c", *p);
	}
	if (d->o.allow_other)
		json_buf_printf(&b, ",allow_other");
	if (b.oom) {
		json_buf_release(&b);
		return NULL;
	}
	return b.p;
}

/*
 * The daemon's features (daemon.h: struct sqcd_feature), in start order,
 * each with the reason for its place.  They start in this order after the
 * prefetcher, and stop in the reverse order, in three rounds: those whose
 * threads may wait on a request while the FUSE workers still answer (on
 * a signal, stop.c; if the mount went away instead, once the loop has
 * ended), then those that stop while the mount is still there, then
 * (after the unmount) the rest.  Once the session is destroyed and no
 * FUSE worker can call in any more, each is freed, in the reverse order.
 *
 * The core's events (events.h) go to the features that hear them, in
 * this order: a feature that started and is on subscribes its handler to
 * the events its table names.
 */
enum stop_round {
	ROUND_SERVING, /* while the FUSE workers still answer */
	ROUND_MOUNTED, /* once they are joined, before the unmount */
	ROUND_UNMOUNTED, /* after the unmount */
};

static const struct {
	const struct sqcd_feature *ft;
	enum stop_round round; /* when it stops */
} features[] = {
	/* First: before the control socket, which serves "hold" and
	 * "release".  Stops after the unmount: it holds the directory lock
	 * that acquirers wait on, released once the mount is gone. */
	{ &holders_feature, ROUND_UNMOUNTED },
	/* Set up before the image is opened (its prepare()); holds the
	 * keeper's connection until freed, after the stager threads are
	 * joined: closing it hands the copy back. */
	{ &keep_feature, ROUND_UNMOUNTED },
	/* Set up before the image is opened (its prepare(): which seal the
	 * image's reads are checked against); no thread, only stats. */
	{ &verify_feature, ROUND_UNMOUNTED },
	/* Stops once every thread that serves requests (FUSE workers,
	 * io_uring) is joined: none can touch the idle state any more.
	 * Hears requests and handles: a mount is idle without either. */
	{ &idle_feature, ROUND_MOUNTED },
	/* Stops after warming: a push of the warming thread may wait for a
	 * READ that an io_uring thread answers. */
	{ &uring_feature, ROUND_MOUNTED },
	/* Before listing ahead, whose SQCD_EV_TREE_LISTED arms it.  Its
	 * thread's push waits on a page that a queued READ holds locked:
	 * stops while the workers still answer (stop.c says why).
	 * FUSE workers push at open until the session is gone, and the
	 * listing thread may arm it until it is joined: what it keeps is
	 * freed after listing ahead's.  Hears what the kernel was shown and
	 * what is read; before listing ahead, so that a FORGET reaches it
	 * first. */
	{ &warm_feature, ROUND_SERVING },
	/* Uses the session and the image: asked to stop before the unmount,
	 * which releases a listing blocked on a request; joined when freed,
	 * once the session is destroyed (and the ready check, which waits
	 * for statahead=all, is joined).  Hears which directories the
	 * kernel was shown, listed and dropped. */
	{ &statahead_feature, ROUND_MOUNTED },
	/* Last: it reads what the others set up.  Stops first.  Listens
	 * before the daemon detaches (main()). */
	{ &ctl_srv_feature, ROUND_MOUNTED },
};

#define NFEATURES (sizeof(features) / sizeof(features[0]))

/* Every feature can hear every event: subscribing cannot fail. */
_Static_assert(NFEATURES <= SQCD_EV_SUBS_MAX,
	       "more features than handlers per event");
_Static_assert(NFEATURES <= SQCD_FEATURES_MAX, "more features than room");

/* The place of @ft in features[], or NFEATURES. */
static size_t feature_at(const struct sqcd_feature *ft)
{
	size_t i = 0;

	while (i < NFEATURES && features[i].ft != ft)
		i++;
	return i;
}

/* What features set up before the image is opened (their prepare()),
 * once each place knows its table (sqcd_feature()).
 * Return: 0 or -errno (said). */
static int prepare_features(struct sqcd *d)
{
	for (size_t i = 0; i < NFEATURES; i++)
		d->feature_tables[i] = features[i].ft;
	for (size_t i = 0; i < NFEATURES; i++) {
		const struct sqcd_feature *ft = features[i].ft;
		int err = ft->prepare ? ft->prepare(d, &d->features[i]) : 0;

		if (err) {
			fprintf(stderr, "squashcached: cannot prepare %s: %s\n",
				ft->name, err_str(err));
			return err;
		}
	}
	return 0;
}

/* Start every feature in order, and subscribe those that are on to their
 * events and the core's questions.  Return: 0 or the first -errno. */
static int start_features(struct sqcd *d)
{
	for (size_t i = 0; i < NFEATURES; i++) {
		const struct sqcd_feature *ft = features[i].ft;
		int err = ft->start(d, &d->features[i]);

		if (err) {
			log_err("cannot start %s: %s", ft->name, err_str(err));
			return err;
		}
		if (d->features[i] && ft->on_event)
			sqcd_subscribe(&d->events, ft->events, ft->on_event,
				       d->features[i]);
		if (d->features[i] && ft->names_only)
			d->events.names_only =
				(struct sqcd_query){ ft->names_only,
						     d->features[i] };
	}
	return 0;
}

/* Which features have been stopped: on a signal the stop thread stops
 * the first round, and the main thread the others (and the first, if the
 * loop ended without a signal) once it has joined that thread. */
static bool stopped[NFEATURES];

/* Stop, in reverse order, the features of @round not stopped yet. */
static void stop_features(struct sqcd *d, enum stop_round round)
{
	for (size_t i = NFEATURES; i-- > 0;)
		if (features[i].round == round && !stopped[i]) {
			features[i].ft->stop(d->features[i]);
			stopped[i] = true;
		}
}

/* stop_start()'s callback, on a signal. */
static void stop_serving(void *d)
{
	stop_features(d, ROUND_SERVING);
}

/* Free every feature, in reverse order. */
static void free_features(struct sqcd *d)
{
	for (size_t i = NFEATURES; i-- > 0;) {
		features[i].ft->free(d->features[i]);
		d->features[i] = NULL;
	}
}

struct ready {
	struct sqcd *d;
	int fd; /* pipe to the waiting parent, or -1 */
};

/* Say what memory the daemon may use, whence, the budgets in force, and
 * how staging reads the image. */
static void log_budgets(const struct sqcd *d)
{
	char limit[32] = "unknown", ram[32], warm[32], meta[32];
	struct img_stats st;

	if (d->o.mem.usable)
		size_format(d->o.mem.usable, limit, sizeof(limit));
	img_get_stats(d->img, &st);
	size_format(st.meta.budget + st.bmap.budget, meta, sizeof(meta));
	log_info("memory limit %s (%s): ram=%s, warm=%s, meta=%s%s", limit,
		 d->o.mem.source, size_format(d->o.img.ram, ram, sizeof(ram)),
		 size_format(d->o.warm, warm, sizeof(warm)), meta,
		 d->o.img.meta_cache ? "" : " (sized from the image's tables)");
	if (st.in_ram)
		return;
	if (st.direct)
		log_info("staging reads the image with O_DIRECT");
	else if (st.direct_refused)
		log_info(
			"staging reads the image through the page cache: its O_DIRECT reads are refused");
	else if (st.direct_err)
		log_info(
			"staging reads the image through the page cache: its O_DIRECT open %s (%s)",
			st.direct_err == ESTALE ? "found another file" :
						  "failed",
			err_str(st.direct_err));
	else if (d->o.img.stage_cached)
		log_info(
			"staging reads the image through the page cache (-o stage_cached)");
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
		detach_tell(r->fd, msg);
		free(r);
		return NULL;
	}
	/* What readers should find done (statahead=all's listing). */
	for (size_t i = 0; i < NFEATURES; i++)
		if (features[i].ft->ready)
			features[i].ft->ready(d->features[i]);
	detach_tell(r->fd, "OK\n");
	snprintf(msg, sizeof(msg), "READY=1\nMAINPID=%ld\nSTATUS=serving",
		 (long)getpid());
	detach_notify(msg);
	log_info("mounted '%s' (%s) on '%s', control socket %s", d->o.image_abs,
		 img_compressor(d->img), d->o.canonical, d->o.ctl_addr);
	log_budgets(d);
	free(r);
	return NULL;
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
 * Settle d->o.image_abs, the image's absolute name.  For an inherited
 * descriptor (is_fd_path()) it is the name of its file, for the mount
 * table and messages only: the file is never opened by that name (a
 * caller that checked the file it opened, e.g. against allow=, hands it
 * over so that nobody can swap the name in between).
 * Return: 0 or -errno (said).
 */
static int image_name(struct sqcd *d)
{
	ssize_t n;
	int err;

	if (is_fd_path(d->o.image)) {
		n = readlink(d->o.image, d->o.image_abs, PATH_MAX - 1);
		if (n <= 0 || d->o.image_abs[0] != '/') {
			fprintf(stderr,
				"squashcached: image '%s' is not an open file\n",
				d->o.image);
			return -EBADF;
		}
		d->o.image_abs[n] = '\0';
		return 0;
	}
	if (realpath(d->o.image, d->o.image_abs))
		return 0;
	err = -errno;
	if (err == -ENOENT)
		fprintf(stderr, "squashcached: image '%s' does not exist\n",
			d->o.image);
	else
		fprintf(stderr, "squashcached: cannot open image '%s': %s\n",
			d->o.image, err_str(err));
	return err;
}

/*
 * Check the mount point, open the image and settle what depends on it.
 * Return: 0 to go on; otherwise -errno (said), and main() exits with
 * *status: EXIT_BAD_IMAGE for an image that is missing, unreadable or not
 * SquashFS, 1 for a bad mount point.
 */
static int open_image(struct sqcd *d, int *status)
{
	bool fd_image = is_fd_path(d->o.image);
	int err;

	*status = 1;
	err = check_mountpoint(&d->o);
	if (err)
		return err;
	*status = EXIT_BAD_IMAGE;
	err = image_name(d);
	if (err)
		return err;
	err = prepare_features(d);
	if (err)
		return err;
	/* An inherited descriptor is reopened as it is, never by name. */
	err = img_open(fd_image ? d->o.image : d->o.image_abs, &d->o.img,
		       &d->img);
	if (err) {
		fprintf(stderr, "squashcached: cannot mount '%s': %s\n",
			fd_image ? d->o.image_abs : d->o.image,
			err == -EMEDIUMTYPE ?
				"not a SquashFS image" :
			d->o.img.seal && (err == -EBADMSG || err == -ESTALE ||
					  err == -EKEYREJECTED) ?
				"its seal does not fit it (said above; mountctl seal IMAGE makes it again)" :
				err_str(err));
		return err;
	}
	if (fd_image && atoi(strrchr(d->o.image, '/') + 1) > 2)
		close(atoi(strrchr(d->o.image, '/') + 1)); /* img has its own */
	err = order_attach(d->img,
			   &(struct order_opts){ .window = d->o.order_window,
						 .plans = d->o.order_plans },
			   &d->order);
	if (err) {
		fprintf(stderr, "squashcached: cannot mount '%s': %s\n",
			d->o.image, err_str(err));
		return err;
	}
	d->root_ref = img_get_super(d->img)->root_ref;
	if (!d->o.threads)
		d->o.threads = default_threads(d->img);
	return 0;
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

/* Start the prefetcher, then the features (features[]); the control
 * socket, listening at *@ctl, is one of them from here on (*@ctl is set
 * to NULL).  Return: 0 or -errno, told to the parent waiting on
 * @ready_fd. */
static int start_threads(struct sqcd *d, struct ctl_srv **ctl, int ready_fd)
{
	int err;

	d->features[feature_at(&ctl_srv_feature)] = *ctl;
	*ctl = NULL;
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
		detach_tell(ready_fd, msg);
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
	detach_tell(ready_fd, "ERR cannot start threads\n");
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
	detach_notify("STOPPING=1");
	if (stop_signal())
		log_info("unmounting '%s' on %s", d->o.canonical,
			 strsignal(stop_signal()));
	else if (err && err != -ENODEV)
		log_err("session loop ended: %s; unmounting '%s'", err_str(err),
			d->o.canonical);
	else
		log_info("unmounting '%s'", d->o.canonical);
	return 0;
}

int main(int argc, char **argv)
{
	struct sqcd *d;
	struct ctl_srv *ctl = NULL;
	struct stop *stopper = NULL;
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
	pthread_mutex_init(&d->notify_lock, NULL);
	if (sqcd_opts_parse(&d->o, argc, argv, &ret))
		goto out_img;
	set_logging(&d->o);
	if (open_image(d, &ret))
		goto out_img;
	ret = 1;
	/* Before detaching, so that a second daemon for the same mount
	 * point is told at once. */
	if (ctl_srv_listen(d, &ctl))
		goto out_img;
	if (open_log(&d->o, &log_fd))
		goto out_img;
	if (session_args(d, argv[0], &args))
		goto out_args;
	d->se = fuse_session_new(&args, &sqcd_ops, sizeof(sqcd_ops), d);
	if (!d->se)
		goto out_args;
	if (stop_install())
		goto out_session;
	if (fuse_session_mount(d->se, d->o.canonical)) {
		explain_fuse_failure();
		goto out_signals;
	}

	if (!d->o.foreground && detach_start(log_fd, &ready_fd))
		goto out_unmount;
	if (start_threads(d, &ctl, ready_fd))
		goto out_unmount;
	if (stop_start(d->se, stop_serving, d, &stopper)) {
		detach_tell(ready_fd, "ERR cannot start threads\n");
		goto out_unmount;
	}
	ready_running = start_ready(d, ready_fd, &ready_thread);
	if (!ready_running)
		goto out_unmount;
	if (!serve(d))
		ret = 0;

out_unmount:
	stop_end(stopper);
	/* See features[]: the order and its reasons. */
	stop_features(d, ROUND_SERVING);
	stop_features(d, ROUND_MOUNTED);
	/* Listing ahead is joined only once the session is destroyed (a
	 * listing of its may wait on a request that the unmount releases):
	 * its notifies end here, before the unmount closes the device. */
	sqcd_notify_end(d);
	fuse_session_unmount(d->se);
	stop_features(d, ROUND_UNMOUNTED);
out_signals:
	stop_remove();
out_session:
	stage_stop(img_stage(d->img));
	pf_free(d->pf);
	d->pf = NULL;
	fuse_session_destroy(d->se);
	/* Unmounting closed the FUSE device, which released the ready check
	 * (it waits for statahead=all) and the lister process's request. */
	if (ready_running)
		pthread_join(ready_thread, NULL);
	free_features(d);
out_args:
	fuse_opt_free_args(&args);
out_img:
	/* What prepare() set up when the mount failed before the features
	 * started (freed already, and NULL, otherwise). */
	free_features(d);
	ctl_srv_stop(ctl); /* still listening when the mount failed */
	ctl_srv_free(ctl);
	img_close(d->img);
	pthread_mutex_destroy(&d->notify_lock);
	free(d);
	return ret;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements faultfs, a test tool: a FUSE file system holding
 * one file, "image", whose bytes are those of a real file, except that
 * reads overlapping chosen byte ranges fail with EIO.  It stands for
 * storage that returns read errors, under a squashcached mount.
 *
 *   faultfs FILE MOUNTPOINT FAILFILE
 *
 * FAILFILE is read at every request: each line "START LENGTH" is a byte
 * range whose reads fail, a line "hold START LENGTH" a range whose reads
 * wait until that line is gone from the file (storage that stalls there,
 * until the test lets it go on; with FAULTFS_PARALLEL=1 the other reads
 * are served meanwhile), and a line "block" makes every read of the image
 * from then on block (see FAULTFS_BLOCK).  No file, or an empty one, means
 * no failures.
 * The image file is served with direct_io and no attribute caching, so
 * every read and every size change reaches this process.  Runs in the
 * foreground until unmounted (fusermount3 -u).  Run as root the mount has
 * allow_other; run by a user it is that user's own.
 *
 * Environment: FAULTFS_LOG=FILE appends "OFFSET LENGTH" for each read
 * served, so that a test can count how often each byte was read;
 * FAULTFS_DELAY_US=N makes each read take N microseconds longer.  Requests
 * are served one at a time (slow storage with one queue), or with
 * FAULTFS_PARALLEL=1 by as many threads as are under way (storage that
 * serves many reads at once, each as slow).  FAULTFS_BLOCK=1 makes every
 * read of the image block: the request is never answered, and an interrupt
 * does not answer it either, so the reader waits in the kernel, unkillable,
 * as on a hard-mounted file system whose server died.  Such reads fail with
 * EIO only when faultfs stops (SIGTERM, or fusermount3 -u once nothing
 * holds the file open); every other request is still answered.
 * FAULTFS_ODIRECT=open refuses an open with O_DIRECT (EINVAL), and
 * FAULTFS_ODIRECT=read every read through such an open: storage whose
 * client takes no O_DIRECT, at open or only at the first read.
 */
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int src_fd;
static const char *failfile;
static unsigned long long reads, failed;
static FILE *readlog;
static useconds_t delay_us;
static int block_all; /* FAULTFS_BLOCK=1 */
static const char *odirect; /* FAULTFS_ODIRECT: "open", "read" or NULL */
static fuse_req_t held[4096]; /* reads never answered, until we stop */
static size_t nheld; /* entries of held[] */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the above */

/* What FAILFILE says about a read. */
enum fault { FAULT_NONE, FAULT_EIO, FAULT_BLOCK, FAULT_HOLD };

static enum fault fault_of(off_t off, size_t len)
{
	unsigned long long a, n;
	enum fault ret = FAULT_NONE;
	char line[128];
	FILE *f = fopen(failfile, "r");

	if (!f)
		return FAULT_NONE;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "block", 5)) {
			ret = FAULT_BLOCK;
			break;
		}
		if (sscanf(line, "%llu %llu", &a, &n) == 2 &&
		    (unsigned long long)off < a + n &&
		    a < (unsigned long long)off + len)
			ret = FAULT_EIO;
		if (ret == FAULT_NONE &&
		    sscanf(line, "hold %llu %llu", &a, &n) == 2 &&
		    (unsigned long long)off < a + n &&
		    a < (unsigned long long)off + len)
			ret = FAULT_HOLD;
	}
	fclose(f);
	return ret;
}

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	struct stat s;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return;
	}
	fstat(src_fd, &s);
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = s.st_size;
}

static void ff_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, "image"))
		return (void)fuse_reply_err(req, ENOENT);
	memset(&e, 0, sizeof(e));
	e.ino = 2;
	fill_attr(2, &e.attr);
	fuse_reply_entry(req, &e);
}

static void ff_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 0);
}

static void ff_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != 2)
		return (void)fuse_reply_err(req, EISDIR);
	if (odirect && (fi->flags & O_DIRECT)) {
		if (!strcmp(odirect, "open"))
			return (void)fuse_reply_err(req, EINVAL);
		fi->fh = 1; /* its reads fail */
	}
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void ff_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	enum fault fault = block_all ? FAULT_BLOCK : fault_of(off, size);
	char *buf;
	ssize_t n;

	(void)ino;
	if (fi->fh == 1)
		return (void)fuse_reply_err(req, EINVAL);
	/* Held: look again at FAILFILE every 10 ms until it lets go. */
	while (fault == FAULT_HOLD) {
		usleep(10000);
		fault = fault_of(off, size);
	}
	pthread_mutex_lock(&lock);
	reads++;
	if (fault == FAULT_BLOCK && nheld < sizeof(held) / sizeof(held[0])) {
		/* Keep the request unanswered; main() fails it at exit. */
		held[nheld++] = req;
		pthread_mutex_unlock(&lock);
		return;
	}
	pthread_mutex_unlock(&lock);
	if (fault == FAULT_BLOCK)
		return; /* past the table: never answered at all */
	if (delay_us)
		usleep(delay_us);
	if (fault == FAULT_EIO) {
		pthread_mutex_lock(&lock);
		failed++;
		pthread_mutex_unlock(&lock);
		return (void)fuse_reply_err(req, EIO);
	}
	buf = malloc(size);
	if (!buf)
		return (void)fuse_reply_err(req, ENOMEM);
	n = pread(src_fd, buf, size, off);
	if (n < 0) {
		fuse_reply_err(req, errno);
	} else {
		if (readlog && n > 0) {
			pthread_mutex_lock(&lock);
			fprintf(readlog, "%lld %zd\n", (long long)off, n);
			fflush(readlog);
			pthread_mutex_unlock(&lock);
		}
		fuse_reply_buf(req, buf, (size_t)n);
	}
	free(buf);
}

static void ff_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	char buf[512];
	struct stat st = { .st_ino = 2, .st_mode = S_IFREG };
	size_t n = 0;

	(void)ino;
	(void)fi;
	if (off == 0)
		n = fuse_add_direntry(req, buf, sizeof(buf), "image", &st, 1);
	fuse_reply_buf(req, buf, n < size ? n : 0);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = ff_lookup,
	.getattr = ff_getattr,
	.open = ff_open,
	.read = ff_read,
	.readdir = ff_readdir,
};

int main(int argc, char **argv)
{
	/* Run by a user, the mount is that user's own (fusermount3 allows
	 * allow_other only with user_allow_other in /etc/fuse.conf). */
	char *fargv[] = { argv[0], "-o",
			  getuid() ? "ro,default_permissions" :
				     "ro,default_permissions,allow_other",
			  NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_session *se;
	int ret;

	if (argc != 4) {
		fprintf(stderr, "usage: faultfs FILE MOUNTPOINT FAILFILE\n");
		return 2;
	}
	src_fd = open(argv[1], O_RDONLY);
	if (src_fd < 0) {
		perror(argv[1]);
		return 1;
	}
	failfile = argv[3];
	if (getenv("FAULTFS_LOG")) {
		readlog = fopen(getenv("FAULTFS_LOG"), "a");
		if (!readlog) {
			perror(getenv("FAULTFS_LOG"));
			return 1;
		}
	}
	if (getenv("FAULTFS_DELAY_US"))
		delay_us = (useconds_t)strtoul(getenv("FAULTFS_DELAY_US"), NULL,
					       10);
	block_all = getenv("FAULTFS_BLOCK") && atoi(getenv("FAULTFS_BLOCK"));
	odirect = getenv("FAULTFS_ODIRECT");
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_set_signal_handlers(se) ||
	    fuse_session_mount(se, argv[2])) {
		fuse_opt_free_args(&args); /* libfuse may have added to them */
		return 1;
	}
	if (getenv("FAULTFS_PARALLEL") && atoi(getenv("FAULTFS_PARALLEL"))) {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();

		if (!cfg)
			return 1;
		fuse_loop_cfg_set_max_threads(cfg, 64);
		fuse_loop_cfg_set_idle_threads(cfg, 64);
		ret = fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	} else {
		ret = fuse_session_loop(se);
	}
	/* The connection is still up: release the readers we kept waiting. */
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nheld; i++)
		fuse_reply_err(held[i], EIO);
	fprintf(stderr, "faultfs: %zu reads were blocked\n", nheld);
	nheld = 0;
	pthread_mutex_unlock(&lock);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	fprintf(stderr, "faultfs: %llu reads, %llu failed\n", reads, failed);
	return ret ? 1 : 0;
}

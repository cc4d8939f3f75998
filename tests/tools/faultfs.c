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
 * range whose reads fail.  No file, or an empty one, means no failures.
 * The image file is served with direct_io and no attribute caching, so
 * every read and every size change reaches this process.  Runs in the
 * foreground until unmounted (fusermount3 -u).
 *
 * Environment: FAULTFS_LOG=FILE appends "OFFSET LENGTH" for each read
 * served, so that a test can count how often each byte was read;
 * FAULTFS_DELAY_US=N makes each read take N microseconds longer.  Requests
 * are served one at a time (slow storage with one queue), or with
 * FAULTFS_PARALLEL=1 by as many threads as are under way (storage that
 * serves many reads at once, each as slow).
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
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the above */

static int overlaps_failure(off_t off, size_t len)
{
	unsigned long long a, n;
	FILE *f = fopen(failfile, "r");
	int hit = 0;

	if (!f)
		return 0;
	while (!hit && fscanf(f, "%llu %llu", &a, &n) == 2)
		hit = (unsigned long long)off < a + n &&
		      a < (unsigned long long)off + len;
	fclose(f);
	return hit;
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
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void ff_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	char *buf;
	ssize_t n;

	(void)ino;
	(void)fi;
	pthread_mutex_lock(&lock);
	reads++;
	pthread_mutex_unlock(&lock);
	if (delay_us)
		usleep(delay_us);
	if (overlaps_failure(off, size)) {
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
	char *fargv[] = { argv[0], "-o", "ro,default_permissions,allow_other",
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
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	fprintf(stderr, "faultfs: %llu reads, %llu failed\n", reads, failed);
	return ret ? 1 : 0;
}

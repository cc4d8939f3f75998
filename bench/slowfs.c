// SPDX-License-Identifier: MIT
/*
 * This file implements slowfs, the benchmark's stand-in for a parallel file
 * system: a read-only FUSE passthrough of the regular files at the top of
 * one directory, where every request pays a latency and all data shares
 * one bandwidth budget.  This kernel has no netem, no NFS server and no
 * device-mapper, so the slowness has to be made in user space.
 *
 *   slowfs [-f] [-o OPTION[,OPTION...]] BACKING_DIR MOUNTPOINT
 *
 *   latency_ms=F       latency of each read request (default 1)
 *   meta_latency_ms=F  latency of lookup, getattr, open, readdir (default:
 *                      latency_ms), like a metadata server round trip
 *   bw=SIZE            bandwidth shared by all requests, bytes per second,
 *                      K/M/G = 2^10/2^20/2^30 (default 500M; 0 = no cap)
 *   blksize=SIZE       st_blksize reported for files (default 4M, like a
 *                      Lustre stripe); cp sizes its reads by it
 *   stripes=N          N storage servers, each with its own queue,
 *                      latency_ms and bw / N of bandwidth; a file is laid
 *                      over them round robin in stripe_size pieces, as
 *                      Lustre stripes a file over OSTs (default 1: one link)
 *   stripe_size=SIZE   bytes per stripe (default 1M, Lustre's default)
 *   threads=N          FUSE worker threads = requests in flight (default 64)
 *   cached             let the kernel keep file data in the page cache
 *                      (default: direct_io, so the page cache cannot hide
 *                      the latency; and no kernel readahead either)
 *   allow_other        let other users read the mount
 *
 * The model.  A read of n bytes arriving at time t is finished at
 *	start = max(link_free, t + latency);  link_free = start + n / bw
 * and replied at link_free: a lone request costs latency + n / bw, many
 * requests in flight overlap their latencies and queue on the bandwidth.
 * With stripes=N each server has its own link_free: a read is split at
 * stripe boundaries, each piece queues on its server's link, and the read
 * is replied once its last piece is done.
 * With direct_io the kernel sends each read() to us as is (split at
 * max_pages, 1 MiB here), so a reader's request size decides how much
 * latency it pays per byte: as on a real PFS client without readahead.
 *
 * The file ".slowfs-stats" in the root reads as one JSON line of counters
 * (requests, bytes, time spent waiting, most requests in flight).
 */
#define FUSE_USE_VERSION 314

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATS_INO 2 /* the .slowfs-stats file */
#define FIRST_INO 3 /* files[i] has inode FIRST_INO + i */
#define STATS_NAME ".slowfs-stats"
#define STATS_SIZE 4096 /* st_size of the stats file; replies are shorter */
#define TIMEOUT 86400.0 /* entry and attribute timeout: nothing changes */
#define MAX_STRIPES 64

struct sf_file {
	char *name; /* name in BACKING_DIR */
	int fd; /* open read-only for the life of the mount */
	struct stat st; /* as found at start */
};

struct sf {
	struct sf_file *files; /* regular files of BACKING_DIR */
	size_t nfiles; /* entries in files */
	double latency; /* seconds per read request */
	double meta_latency; /* seconds per metadata request */
	double bw; /* bytes per second, 0 = unlimited */
	uint64_t blksize; /* st_blksize reported */
	bool cached; /* no direct_io */
	unsigned int stripes; /* servers; 1 = one shared link */
	uint64_t stripe_size; /* bytes per stripe */
	pthread_mutex_t link_lock; /* protects link_free */
	double link_free[MAX_STRIPES]; /* when each server is idle again */
	atomic_uint_fast64_t reads; /* read requests */
	atomic_uint_fast64_t read_bytes; /* bytes replied */
	atomic_uint_fast64_t meta_ops; /* lookup, getattr, open, readdir */
	atomic_uint_fast64_t wait_us; /* time requests spent delayed */
	atomic_uint inflight; /* read requests being served */
	atomic_uint max_inflight; /* the most at once */
};

static struct sf sf = { .link_lock = PTHREAD_MUTEX_INITIALIZER };

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_until(double when)
{
	struct timespec t;

	if (when <= now())
		return;
	t.tv_sec = (time_t)when;
	t.tv_nsec = (long)((when - (double)t.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) ==
	       EINTR)
		;
}

/* Delay the calling request as the model says: @n bytes at @off. */
static void delay(double latency, uint64_t off, uint64_t n)
{
	double t = now(), done = t + latency, bw = sf.bw / sf.stripes;

	if (n && sf.bw > 0) {
		pthread_mutex_lock(&sf.link_lock);
		while (n) {
			/* The piece of this read on one server. */
			uint64_t in =
				sf.stripes > 1 ?
					sf.stripe_size - off % sf.stripe_size :
					n;
			unsigned int s =
				sf.stripes > 1 ?
					(unsigned int)(off / sf.stripe_size %
						       sf.stripes) :
					0;
			double *free_at = &sf.link_free[s];

			in = in < n ? in : n;
			if (*free_at < t + latency)
				*free_at = t + latency;
			*free_at += (double)in / bw;
			if (*free_at > done)
				done = *free_at;
			off += in;
			n -= in;
		}
		pthread_mutex_unlock(&sf.link_lock);
	}
	sleep_until(done);
	atomic_fetch_add(&sf.wait_us, (uint64_t)((now() - t) * 1e6));
}

static struct sf_file *file_of(fuse_ino_t ino)
{
	if (ino < FIRST_INO || ino - FIRST_INO >= sf.nfiles)
		return NULL;
	return &sf.files[ino - FIRST_INO];
}

static int attr_of(fuse_ino_t ino, struct stat *st)
{
	struct sf_file *f = file_of(ino);

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_nlink = 1;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else if (ino == STATS_INO) {
		st->st_mode = S_IFREG | 0444;
		st->st_size = STATS_SIZE;
	} else if (f) {
		*st = f->st;
		st->st_ino = ino;
		st->st_mode = S_IFREG | (f->st.st_mode & 0444);
		st->st_blksize = (blksize_t)sf.blksize;
	} else {
		return -ENOENT;
	}
	return 0;
}

static void sf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
}

static void sf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	fuse_ino_t ino = 0;

	atomic_fetch_add(&sf.meta_ops, 1);
	if (parent != FUSE_ROOT_ID)
		return (void)fuse_reply_err(req, ENOENT);
	if (!strcmp(name, STATS_NAME))
		ino = STATS_INO;
	for (size_t i = 0; !ino && i < sf.nfiles; i++)
		if (!strcmp(sf.files[i].name, name))
			ino = FIRST_INO + i;
	delay(sf.meta_latency, 0, 0);
	if (!ino)
		return (void)fuse_reply_err(req, ENOENT);
	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.attr_timeout = TIMEOUT;
	e.entry_timeout = TIMEOUT;
	attr_of(ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void sf_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st;
	int err = attr_of(ino, &st);

	(void)fi;
	atomic_fetch_add(&sf.meta_ops, 1);
	delay(sf.meta_latency, 0, 0);
	if (err)
		return (void)fuse_reply_err(req, -err);
	fuse_reply_attr(req, &st, TIMEOUT);
}

static void sf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	atomic_fetch_add(&sf.meta_ops, 1);
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return (void)fuse_reply_err(req, EROFS);
	if (ino != STATS_INO && !file_of(ino))
		return (void)fuse_reply_err(req, ino == FUSE_ROOT_ID ? EISDIR :
								       ENOENT);
	if (ino != STATS_INO)
		delay(sf.meta_latency, 0, 0);
	fi->direct_io = ino == STATS_INO || !sf.cached;
	fi->keep_cache = sf.cached;
	fuse_reply_open(req, fi);
}

static pthread_key_t buf_key; /* frees a thread's buffer when it exits */
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

static void buf_key_init(void)
{
	pthread_key_create(&buf_key, free);
}

/*
 * The calling thread's read buffer, at least size bytes; NULL if out of
 * memory.  Kept for the thread's life: a fresh 1 MiB malloc per request
 * would mmap and fault it in every time.
 */
static char *thread_buf(size_t size)
{
	static __thread char *buf;
	static __thread size_t cap;

	pthread_once(&buf_once, buf_key_init);
	if (size > cap) {
		char *grown = realloc(buf, size);

		if (!grown)
			return NULL;
		buf = grown;
		cap = size;
		pthread_setspecific(buf_key, buf);
	}
	return buf ? buf : thread_buf(1);
}

static void stats_read(fuse_req_t req, size_t size, off_t off)
{
	char buf[STATS_SIZE];
	int n = snprintf(
		buf, sizeof(buf),
		"{\"reads\":%llu,\"read_bytes\":%llu,\"meta_ops\":%llu,"
		"\"wait_s\":%.3f,\"max_inflight\":%u,\"latency_ms\":%.3f,"
		"\"meta_latency_ms\":%.3f,\"bw\":%.0f,\"blksize\":%llu,"
		"\"stripes\":%u,\"stripe_size\":%llu,"
		"\"direct_io\":%s}\n",
		(unsigned long long)atomic_load(&sf.reads),
		(unsigned long long)atomic_load(&sf.read_bytes),
		(unsigned long long)atomic_load(&sf.meta_ops),
		(double)atomic_load(&sf.wait_us) / 1e6,
		atomic_load(&sf.max_inflight), sf.latency * 1e3,
		sf.meta_latency * 1e3, sf.bw, (unsigned long long)sf.blksize,
		sf.stripes, (unsigned long long)sf.stripe_size,
		sf.cached ? "false" : "true");

	if (n < 0 || off >= n)
		return (void)fuse_reply_buf(req, NULL, 0);
	if ((size_t)(n - off) < size)
		size = (size_t)(n - off);
	fuse_reply_buf(req, buf + off, size);
}

static void sf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct sf_file *f = file_of(ino);
	unsigned int in, max;
	ssize_t n;
	char *buf;

	(void)fi;
	if (ino == STATS_INO)
		return stats_read(req, size, off);
	if (!f)
		return (void)fuse_reply_err(req, EBADF);
	buf = thread_buf(size);
	if (!buf)
		return (void)fuse_reply_err(req, ENOMEM);
	in = atomic_fetch_add(&sf.inflight, 1) + 1;
	max = atomic_load(&sf.max_inflight);
	while (in > max &&
	       !atomic_compare_exchange_weak(&sf.max_inflight, &max, in))
		;
	n = pread(f->fd, buf, size, off);
	if (n < 0) {
		int err = errno;

		atomic_fetch_sub(&sf.inflight, 1);
		return (void)fuse_reply_err(req, err);
	}
	delay(sf.latency, (uint64_t)off, (uint64_t)n);
	atomic_fetch_add(&sf.reads, 1);
	atomic_fetch_add(&sf.read_bytes, (uint64_t)n);
	atomic_fetch_sub(&sf.inflight, 1);
	fuse_reply_buf(req, buf, (size_t)n);
}

static void sf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	char *buf, *p;
	size_t left = size;

	(void)fi;
	if (ino != FUSE_ROOT_ID)
		return (void)fuse_reply_err(req, ENOTDIR);
	atomic_fetch_add(&sf.meta_ops, 1);
	delay(sf.meta_latency, 0, 0);
	buf = malloc(size);
	if (!buf)
		return (void)fuse_reply_err(req, ENOMEM);
	p = buf;
	/* entry k: 0 ".", 1 "..", 2 stats, 3.. files */
	for (size_t k = (size_t)off; k < sf.nfiles + 3; k++) {
		struct stat st = { 0 };
		const char *name;
		size_t len;

		if (k == 0 || k == 1) {
			name = k ? ".." : ".";
			st.st_ino = FUSE_ROOT_ID;
			st.st_mode = S_IFDIR;
		} else if (k == 2) {
			name = STATS_NAME;
			st.st_ino = STATS_INO;
			st.st_mode = S_IFREG;
		} else {
			name = sf.files[k - 3].name;
			st.st_ino = FIRST_INO + (k - 3);
			st.st_mode = S_IFREG;
		}
		len = fuse_add_direntry(req, p, left, name, &st, (off_t)k + 1);
		if (len > left)
			break;
		p += len;
		left -= len;
	}
	fuse_reply_buf(req, buf, size - left);
	free(buf);
}

static void sf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv = { .f_bsize = 4096,
			      .f_frsize = 4096,
			      .f_namemax = 255 };

	(void)ino;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops sf_ops = {
	.init = sf_init,
	.lookup = sf_lookup,
	.getattr = sf_getattr,
	.open = sf_open,
	.read = sf_read,
	.readdir = sf_readdir,
	.statfs = sf_statfs,
};

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -1;
	switch (*end) {
	case 'K':
	case 'k':
		v *= 1024.0;
		end++;
		break;
	case 'M':
	case 'm':
		v *= 1048576.0;
		end++;
		break;
	case 'G':
	case 'g':
		v *= 1073741824.0;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int parse_opts(char *list, unsigned int *threads, bool *allow_other)
{
	for (char *opt = strtok(list, ","); opt; opt = strtok(NULL, ",")) {
		char *val = strchr(opt, '=');
		uint64_t v;

		if (val)
			*val++ = '\0';
		if (val && !strcmp(opt, "latency_ms"))
			sf.latency = strtod(val, NULL) / 1e3;
		else if (val && !strcmp(opt, "meta_latency_ms"))
			sf.meta_latency = strtod(val, NULL) / 1e3;
		else if (val && !strcmp(opt, "bw") && !parse_size(val, &v))
			sf.bw = (double)v;
		else if (val && !strcmp(opt, "blksize") &&
			 !parse_size(val, &v) && v)
			sf.blksize = v;
		else if (val && !strcmp(opt, "stripes") &&
			 strtoul(val, NULL, 10) >= 1 &&
			 strtoul(val, NULL, 10) <= MAX_STRIPES)
			sf.stripes = (unsigned int)strtoul(val, NULL, 10);
		else if (val && !strcmp(opt, "stripe_size") &&
			 !parse_size(val, &v) && v)
			sf.stripe_size = v;
		else if (val && !strcmp(opt, "threads"))
			*threads = (unsigned int)strtoul(val, NULL, 10);
		else if (!val && !strcmp(opt, "cached"))
			sf.cached = true;
		else if (!val && !strcmp(opt, "allow_other"))
			*allow_other = true;
		else {
			fprintf(stderr, "slowfs: bad option '%s'\n", opt);
			return -1;
		}
	}
	return 0;
}

static int scan(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int dfd;

	if (!d) {
		fprintf(stderr, "slowfs: cannot open '%s': %s\n", dir,
			strerror(errno));
		return -1;
	}
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		struct sf_file f = { 0 };
		struct sf_file *grown;

		if (de->d_name[0] == '.')
			continue;
		f.fd = openat(dfd, de->d_name, O_RDONLY | O_CLOEXEC);
		if (f.fd < 0)
			continue;
		if (fstat(f.fd, &f.st) || !S_ISREG(f.st.st_mode)) {
			close(f.fd);
			continue;
		}
		f.name = strdup(de->d_name);
		grown = realloc(sf.files, (sf.nfiles + 1) * sizeof(*grown));
		if (!f.name || !grown) {
			fprintf(stderr, "slowfs: out of memory\n");
			closedir(d);
			return -1;
		}
		sf.files = grown;
		sf.files[sf.nfiles++] = f;
	}
	closedir(d);
	return 0;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	unsigned int threads = 64;
	bool foreground = false, allow_other = false, meta_set = false;
	int opt, ret = 1;

	sf.latency = 1e-3;
	sf.meta_latency = -1;
	sf.bw = 500.0 * 1048576.0;
	sf.stripes = 1;
	sf.stripe_size = 1048576;
	sf.blksize = 4u << 20;
	while ((opt = getopt(argc, argv, "fo:h")) != -1) {
		switch (opt) {
		case 'f':
			foreground = true;
			break;
		case 'o':
			if (parse_opts(optarg, &threads, &allow_other))
				return 2;
			break;
		default:
			fprintf(stderr,
				"usage: slowfs [-f] [-o latency_ms=F,meta_latency_ms=F,bw=SIZE,blksize=SIZE,stripes=N,stripe_size=SIZE,threads=N,cached,allow_other] BACKING_DIR MOUNTPOINT\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "slowfs: need BACKING_DIR and MOUNTPOINT\n");
		return 2;
	}
	meta_set = sf.meta_latency >= 0;
	if (!meta_set)
		sf.meta_latency = sf.latency;
	if (!threads)
		threads = 1;
	if (scan(argv[optind]))
		return 1;

	fuse_opt_add_arg(&args, "slowfs");
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, allow_other ? "fsname=slowfs,allow_other" :
					      "fsname=slowfs");
	se = fuse_session_new(&args, &sf_ops, sizeof(sf_ops), NULL);
	if (!se)
		goto out_args;
	if (fuse_set_signal_handlers(se))
		goto out_session;
	if (fuse_session_mount(se, argv[optind + 1]))
		goto out_signals;
	if (fuse_daemonize(foreground))
		goto out_unmount;
	cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, threads);
	fuse_loop_cfg_set_idle_threads(cfg, threads);
	ret = fuse_session_loop_mt(se, cfg) ? 1 : 0;
	fuse_loop_cfg_destroy(cfg);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_args:
	fuse_opt_free_args(&args);
	return ret;
}

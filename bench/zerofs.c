// SPDX-License-Identifier: MIT
/*
 * This file implements zerofs, the benchmark's FUSE floor: a low-level
 * FUSE server that does no work per request.  At start it reads the whole
 * tree of a SquashFS image through lib/image (names, attributes, and by
 * default every file's bytes) into memory; after that a request is a
 * table or hash lookup and one reply, nothing is decompressed, cached or
 * counted.  What a reader still pays against it is FUSE itself: the
 * round trips, the kernel's side, the wake-ups.
 *
 *   zerofs [-f] [-o OPTION[,OPTION...]] IMAGE MOUNTPOINT
 *
 *   pattern      serve every file as a fixed pattern of its size instead
 *                of its bytes (nothing read at start but the tree; for a
 *                machine without the RAM for the set)
 *   list_names   list regular files by name only in READDIRPLUS (node id
 *                0, as squashcached does while its list_names holds)
 *                instead of with their attributes
 *   threads=N    FUSE worker threads (default: one per CPU, 2 .. 16, as
 *                squashcached for an image in RAM)
 *
 * The same mount options and transport as squashcached: `ro,
 * default_permissions`, entries and attributes valid for a year, open and
 * opendir answered ENOSYS where the kernel allows it (it then keeps the
 * page cache and caches listings; otherwise keep_cache and cache_readdir),
 * READDIRPLUS, async reads, parallel directory operations, 1 MiB requests,
 * st_blksize 4096, ioctl answered ENOTTY (CPython's isatty() per open is
 * one round trip, as on squashcached), /dev/fuse with one queue and no
 * cloned fds.  Left out: FUSE over io_uring (squashcached's daemon/uring.c
 * is its own code, libfuse 3.14 has none), so with the fuse module's
 * enable_uring on, compare it with squashcached -o no_uring.
 *
 * Node ids: the tree is loaded breadth first into one array, so that a
 * directory's entries are consecutive; node id = index + 1 (the root is
 * FUSE_ROOT_ID).  A lookup hashes (parent, name).
 */
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "image/image.h"
#include "util/compiler.h"

#define ZF_TIMEOUT (365.0 * 86400.0)
#define ZF_BLKSIZE 4096
#define PATTERN_SIZE (1u << 20)

struct zf_node {
	char *name; /* entry name ("" for the root) */
	char *data; /* file bytes or symlink target; NULL: the pattern */
	uint64_t size; /* st_size */
	uint32_t mode, nlink, uid, gid, mtime, ino; /* attributes */
	uint32_t parent; /* index of the parent directory */
	uint32_t first, count; /* directory: entries at [first, first+count) */
	uint64_t ref; /* inode reference in the image (loading only) */
};

static struct {
	struct zf_node *nodes; /* the tree, breadth first */
	uint32_t n; /* nodes */
	uint32_t cap; /* allocated */
	uint32_t *slots; /* hash of (parent, name) -> index + 1; 0: empty */
	uint32_t nslots; /* a power of two */
	bool pattern; /* serve the pattern, not the bytes */
	bool list_names; /* READDIRPLUS: regular files by name only */
	bool no_open; /* the kernel takes ENOSYS for open (init) */
	bool no_opendir; /* and for opendir */
	uint64_t bytes; /* file bytes held */
	char pat[PATTERN_SIZE]; /* the pattern */
} zf;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint32_t name_hash(uint32_t parent, const char *name)
{
	uint32_t h = 2166136261u ^ parent;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h ^ (h >> 15);
}

static void hash_add(uint32_t idx)
{
	uint32_t mask = zf.nslots - 1;
	uint32_t s = name_hash(zf.nodes[idx].parent, zf.nodes[idx].name) & mask;

	while (zf.slots[s])
		s = (s + 1) & mask;
	zf.slots[s] = idx + 1;
}

/* Return: the index of @name in directory @parent, or UINT32_MAX. */
static uint32_t hash_find(uint32_t parent, const char *name)
{
	uint32_t mask = zf.nslots - 1;
	uint32_t s = name_hash(parent, name) & mask;

	for (; zf.slots[s]; s = (s + 1) & mask) {
		const struct zf_node *x = &zf.nodes[zf.slots[s] - 1];

		if (x->parent == parent && !strcmp(x->name, name))
			return zf.slots[s] - 1;
	}
	return UINT32_MAX;
}

/* Append a node for @ino named @name under @parent.  Return: 0 or -errno. */
static int add_node(struct img *img, const struct img_inode *ino,
		    const char *name, uint32_t parent)
{
	struct zf_node *x;
	size_t got;
	int err;

	if (zf.n == zf.cap) {
		uint32_t cap = zf.cap ? zf.cap * 2 : 1024;
		struct zf_node *p = realloc(zf.nodes, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		zf.nodes = p;
		zf.cap = cap;
	}
	x = &zf.nodes[zf.n];
	memset(x, 0, sizeof(*x));
	x->name = strdup(name);
	if (!x->name)
		return -ENOMEM;
	x->size = ino->size;
	x->mode = ino->mode;
	x->nlink = ino->nlink;
	x->uid = ino->uid;
	x->gid = ino->gid;
	x->mtime = ino->mtime;
	x->ino = ino->ino;
	x->parent = parent;
	x->ref = ino->ref;
	if ((ino->type == IMG_REG && !zf.pattern) || ino->type == IMG_SYMLINK) {
		x->data = malloc(ino->size + 1);
		if (!x->data)
			return -ENOMEM;
		if (ino->type == IMG_SYMLINK)
			err = img_readlink(img, ino, x->data, ino->size + 1);
		else
			err = img_file_read(img, NULL, ino, 0, x->data,
					    ino->size, &got);
		if (err)
			return err;
		if (ino->type == IMG_REG)
			zf.bytes += ino->size;
	}
	zf.n++;
	return 0;
}

/* List directory node @d of the image, appending its entries. */
static int load_dir(struct img *img, uint32_t d)
{
	struct img_inode dir, child;
	struct img_dir_iter it;
	struct img_dirent de;
	int err;

	err = img_inode_get(img, zf.nodes[d].ref, &dir);
	if (!err)
		err = img_dir_open(img, &dir, 0, &it);
	if (err)
		return err;
	zf.nodes[d].first = zf.n;
	while ((err = img_dir_next(&it, &de)) == 1) {
		err = img_inode_get(img, de.ref, &child);
		if (!err)
			err = add_node(img, &child, de.name, d);
		if (err)
			return err;
	}
	zf.nodes[d].count = zf.n - zf.nodes[d].first;
	return err;
}

/* Load the whole tree of @path.  Return: 0 or -errno (said). */
static int load(const char *path)
{
	struct img_opts o;
	struct img_inode root;
	struct img *img;
	double t0 = now();
	int err;

	img_opts_default(&o);
	o.stage = STAGE_NONE;
	err = img_open(path, &o, &img);
	if (err) {
		fprintf(stderr, "zerofs: cannot open '%s': %s\n", path,
			strerror(-err));
		return err;
	}
	err = img_inode_get(img, img_get_super(img)->root_ref, &root);
	if (!err)
		err = add_node(img, &root, "", 0);
	/* breadth first: zf.n grows while the loop runs */
	for (uint32_t i = 0; !err && i < zf.n; i++)
		if (S_ISDIR(zf.nodes[i].mode))
			err = load_dir(img, i);
	img_close(img);
	if (err) {
		fprintf(stderr, "zerofs: cannot load '%s': %s\n", path,
			strerror(-err));
		return err;
	}
	for (zf.nslots = 1024; zf.nslots < 2 * zf.n; zf.nslots *= 2)
		;
	zf.slots = calloc(zf.nslots, sizeof(*zf.slots));
	if (!zf.slots)
		return -ENOMEM;
	for (uint32_t i = 1; i < zf.n; i++)
		hash_add(i);
	for (size_t i = 0; i < sizeof(zf.pat); i++)
		zf.pat[i] = (char)('a' + i % 26);
	fprintf(stderr,
		"zerofs: %u nodes, %llu file bytes in memory%s, %.2f s\n", zf.n,
		(unsigned long long)zf.bytes,
		zf.pattern ? " (pattern mode)" : "", now() - t0);
	return 0;
}

static struct zf_node *node_of(fuse_ino_t id)
{
	return id >= 1 && id <= zf.n ? &zf.nodes[id - 1] : NULL;
}

static void fill_stat(const struct zf_node *x, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = x->ino;
	st->st_mode = x->mode;
	st->st_nlink = x->nlink;
	st->st_uid = x->uid;
	st->st_gid = x->gid;
	st->st_size = (off_t)x->size;
	st->st_blksize = ZF_BLKSIZE;
	st->st_blocks = S_ISREG(x->mode) ? (blkcnt_t)((x->size + 511) / 512) :
					   0;
	st->st_mtim.tv_sec = x->mtime;
	st->st_atim.tv_sec = x->mtime;
	st->st_ctim.tv_sec = x->mtime;
}

static void fill_entry(const struct zf_node *x, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = (fuse_ino_t)(x - zf.nodes) + 1;
	e->generation = 1;
	e->attr_timeout = ZF_TIMEOUT;
	e->entry_timeout = ZF_TIMEOUT;
	fill_stat(x, &e->attr);
}

static void zf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned int)FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~(unsigned int)FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	zf.no_open = conn->capable & FUSE_CAP_NO_OPEN_SUPPORT;
	zf.no_opendir = conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT;
	conn->max_write = 1u << 20;
	conn->max_read = 0;
	conn->max_readahead = conn->max_readahead ? conn->max_readahead :
						    1u << 20;
	conn->time_gran = 1000000000;
}

/* Valid replies: fuse_reply_entry, fuse_reply_err. */
static void zf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	uint32_t i = hash_find((uint32_t)parent - 1, name);

	if (i == UINT32_MAX) {
		memset(&e, 0, sizeof(e));
		e.entry_timeout = ZF_TIMEOUT;
		return (void)fuse_reply_entry(req, &e);
	}
	fill_entry(&zf.nodes[i], &e);
	fuse_reply_entry(req, &e);
}

/* Valid replies: fuse_reply_attr, fuse_reply_err. */
static void zf_getattr(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct zf_node *x = node_of(id);
	struct stat st;

	(void)fi;
	if (!x)
		return (void)fuse_reply_err(req, ENOENT);
	fill_stat(x, &st);
	fuse_reply_attr(req, &st, ZF_TIMEOUT);
}

/* Valid replies: fuse_reply_readlink, fuse_reply_err. */
static void zf_readlink(fuse_req_t req, fuse_ino_t id)
{
	struct zf_node *x = node_of(id);

	if (!x || !S_ISLNK(x->mode))
		return (void)fuse_reply_err(req, EINVAL);
	fuse_reply_readlink(req, x->data);
}

/* Valid replies: fuse_reply_open, fuse_reply_err (ENOSYS: no more opens,
 * the kernel keeps the page cache). */
static void zf_open(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	(void)id;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return (void)fuse_reply_err(req, EROFS);
	if (zf.no_open)
		return (void)fuse_reply_err(req, ENOSYS);
	fi->keep_cache = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

/* Valid replies: fuse_reply_buf, fuse_reply_err. */
static void zf_read(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct zf_node *x = node_of(id);
	size_t n;

	(void)fi;
	if (!x || off < 0)
		return (void)fuse_reply_err(req, EINVAL);
	if ((uint64_t)off >= x->size)
		return (void)fuse_reply_buf(req, NULL, 0);
	n = (size_t)MIN((uint64_t)size, x->size - (uint64_t)off);
	if (x->data)
		return (void)fuse_reply_buf(req, x->data + off, n);
	fuse_reply_buf(req, zf.pat, MIN(n, sizeof(zf.pat)));
}

/* Valid replies: fuse_reply_open, fuse_reply_err (ENOSYS: listings are
 * cached). */
static void zf_opendir(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	(void)id;
	if (zf.no_opendir)
		return (void)fuse_reply_err(req, ENOSYS);
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* Entry @k (0 ".", 1 "..", then the entries) of @d into @buf.  Return:
 * bytes it takes (more than @left: not added). */
static size_t add_entry(fuse_req_t req, const struct zf_node *d, uint32_t k,
			char *buf, size_t left, bool plus)
{
	const struct zf_node *x;
	struct fuse_entry_param e;
	const char *name;

	if (k < 2) {
		x = k ? &zf.nodes[d->parent] : d;
		name = k ? ".." : ".";
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = x->ino;
		e.attr.st_mode = S_IFDIR;
	} else {
		x = &zf.nodes[d->first + k - 2];
		name = x->name;
		if (plus && !(zf.list_names && S_ISREG(x->mode))) {
			fill_entry(x, &e);
		} else {
			memset(&e, 0, sizeof(e));
			e.attr.st_ino = x->ino;
			e.attr.st_mode = x->mode & S_IFMT;
		}
	}
	if (plus)
		return fuse_add_direntry_plus(req, buf, left, name, &e, k + 1);
	return fuse_add_direntry(req, buf, left, name, &e.attr, k + 1);
}

static void readdir_common(fuse_req_t req, fuse_ino_t id, size_t size,
			   off_t off, bool plus)
{
	struct zf_node *d = node_of(id);
	size_t pos = 0, n;
	char *buf;

	if (!d || !S_ISDIR(d->mode))
		return (void)fuse_reply_err(req, ENOTDIR);
	size = MIN(size, (size_t)1 << 20);
	buf = malloc(size);
	if (!buf)
		return (void)fuse_reply_err(req, ENOMEM);
	for (uint32_t k = (uint32_t)off; k < d->count + 2; k++) {
		n = add_entry(req, d, k, buf + pos, size - pos, plus);
		if (n > size - pos)
			break;
		pos += n;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

/* Valid replies: fuse_reply_buf, fuse_reply_err. */
static void zf_readdir(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, id, size, off, false);
}

/* Valid replies: fuse_reply_buf, fuse_reply_err. */
static void zf_readdirplus(fuse_req_t req, fuse_ino_t id, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, id, size, off, true);
}

/* Valid replies: fuse_reply_statfs. */
static void zf_statfs(fuse_req_t req, fuse_ino_t id)
{
	struct statvfs st;

	(void)id;
	memset(&st, 0, sizeof(st));
	st.f_bsize = ZF_BLKSIZE;
	st.f_frsize = ZF_BLKSIZE;
	st.f_files = zf.n;
	st.f_namemax = 256;
	st.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &st);
}

/* Valid replies: fuse_reply_err. */
static void zf_getxattr(fuse_req_t req, fuse_ino_t id, const char *name,
			size_t size)
{
	(void)id, (void)name, (void)size;
	fuse_reply_err(req, ENODATA);
}

/* Valid replies: fuse_reply_buf, fuse_reply_xattr. */
static void zf_listxattr(fuse_req_t req, fuse_ino_t id, size_t size)
{
	(void)id;
	if (size)
		return (void)fuse_reply_buf(req, NULL, 0);
	fuse_reply_xattr(req, 0);
}

/* As squashcached: one round trip per isatty(), answered ENOTTY.
 * Valid replies: fuse_reply_err. */
static void zf_ioctl(fuse_req_t req, fuse_ino_t id, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned int flags,
		     const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	(void)id, (void)cmd, (void)arg, (void)fi, (void)flags, (void)in_buf;
	(void)in_bufsz, (void)out_bufsz;
	fuse_reply_err(req, ENOTTY);
}

static const struct fuse_lowlevel_ops zf_ops = {
	.init = zf_init,
	.lookup = zf_lookup,
	.getattr = zf_getattr,
	.readlink = zf_readlink,
	.open = zf_open,
	.read = zf_read,
	.opendir = zf_opendir,
	.readdir = zf_readdir,
	.readdirplus = zf_readdirplus,
	.statfs = zf_statfs,
	.getxattr = zf_getxattr,
	.listxattr = zf_listxattr,
	.ioctl = zf_ioctl,
};

static int parse_opts(char *s, unsigned int *threads)
{
	char *opt, *save = NULL;

	for (opt = strtok_r(s, ",", &save); opt;
	     opt = strtok_r(NULL, ",", &save)) {
		if (!strcmp(opt, "pattern"))
			zf.pattern = true;
		else if (!strcmp(opt, "list_names"))
			zf.list_names = true;
		else if (!strncmp(opt, "threads=", 8) && atoi(opt + 8) > 0)
			*threads = (unsigned int)atoi(opt + 8);
		else {
			fprintf(stderr, "zerofs: bad option '%s'\n", opt);
			return -1;
		}
	}
	return 0;
}

/* "ro,default_permissions,subtype=zerofs,fsname=IMAGE" into @buf. */
static int mount_opts(const char *image, char *buf, size_t len)
{
	size_t pos = (size_t)snprintf(
		buf, len, "ro,default_permissions,subtype=zerofs,fsname=");

	for (const char *p = image; *p; p++) {
		if (pos + 3 >= len)
			return -1;
		if (*p == ',' || *p == '\\')
			buf[pos++] = '\\';
		buf[pos++] = *p;
	}
	buf[pos] = '\0';
	return 0;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int threads = ncpu < 2 ? 2 : ncpu > 16 ? 16 : (unsigned)ncpu;
	bool foreground = false;
	static char mopts[8192];
	int opt, ret = 1;

	while ((opt = getopt(argc, argv, "fo:h")) != -1) {
		switch (opt) {
		case 'f':
			foreground = true;
			break;
		case 'o':
			if (parse_opts(optarg, &threads))
				return 2;
			break;
		default:
			fprintf(stderr,
				"usage: zerofs [-f] [-o pattern,list_names,threads=N] IMAGE MOUNTPOINT\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "zerofs: need IMAGE and MOUNTPOINT\n");
		return 2;
	}
	if (load(argv[optind]) ||
	    mount_opts(argv[optind], mopts, sizeof(mopts)))
		return 1;
	fuse_opt_add_arg(&args, "zerofs");
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, mopts);
	se = fuse_session_new(&args, &zf_ops, sizeof(zf_ops), NULL);
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

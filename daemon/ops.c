// SPDX-License-Identifier: MIT
/*
 * This file implements the FUSE low-level operations: glue between the
 * kernel's requests and lib/image.  Each operation makes exactly one
 * fuse_reply_*() call on every path; an error exit is
 * `return (void)fuse_reply_err(req, reply_errno(d, err))`, where
 * reply_errno() turns -EFSCORRUPTED and -EIO into EIO and counts them.
 * An operation that asks lib/image anything is a thin wrapper: it counts
 * the request, calls do_<op>() (0 or -errno: do_lookup(), do_getattr(),
 * do_readlink(), do_read(), do_readdir(), do_getxattr(), do_listxattr()),
 * and replies once it returns.  The others reply from the request and the
 * mount's settings once they have counted it and told the features (open,
 * opendir, release, releasedir, statfs, forget, ioctl, and EROFS for
 * anything that would write).
 *
 * Node ids are derived from inode references, with no table: the root is
 * FUSE_ROOT_ID and any other inode is its reference + 2, so forget needs
 * no bookkeeping and any thread can serve any node.  Everything is
 * immutable, so entries and attributes are given long timeouts, files and
 * directories are opened without a round trip where the kernel allows it
 * (it then keeps their page cache and caches listings), and readdirplus
 * fills the dentry cache while listing (for regular files, only where
 * listing ahead does not answer names_only, see statahead.c).
 *
 * The operations call no feature: what the features act on (a request
 * served, a file read, a directory listed, ...) they emit as events
 * (events.h), which features[] in main.c routes to the features.
 */
#define LOG_MOD "fuse"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "daemon.h"
#include "util/err.h"
#include "util/log.h"

#define READ_SPANS_MAX 260 /* 1 MiB of 4 KiB blocks, plus the ends */

static struct sqcd *req_daemon(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Count a request of kind @op, and say that one is served. */
static void count(struct sqcd *d, enum sqcd_op op)
{
	atomic_fetch_add_explicit(&d->ops[op], 1, memory_order_relaxed);
	sqcd_emit(&d->events, &(struct sqcd_event){ .type = SQCD_EV_REQUEST });
}

/* A handle was opened (@opened) or released. */
static void emit_handle(struct sqcd *d, bool opened)
{
	sqcd_emit(&d->events,
		  &(struct sqcd_event){
			  .type = opened ? SQCD_EV_HANDLE_OPENED :
					   SQCD_EV_HANDLE_RELEASED });
}

/* Map an error for the kernel; corruption and I/O failures are EIO. */
static int reply_errno(struct sqcd *d, int err)
{
	if (err == -EFSCORRUPTED || err == -EIO) {
		atomic_fetch_add_explicit(&d->eio, 1, memory_order_relaxed);
		return EIO;
	}
	return -err;
}

static fuse_ino_t ref_to_node(const struct sqcd *d, uint64_t ref)
{
	return ref == d->root_ref ? FUSE_ROOT_ID : (fuse_ino_t)(ref + 2);
}

static uint64_t node_to_ref(const struct sqcd *d, fuse_ino_t node)
{
	return node == FUSE_ROOT_ID ? d->root_ref : (uint64_t)node - 2;
}

static int get_inode(struct sqcd *d, fuse_ino_t node, struct img_inode *ino)
{
	return img_inode_get(d->img, node_to_ref(d, node), ino);
}

static void fill_stat(const struct img_inode *ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino->ino;
	st->st_mode = ino->mode;
	st->st_nlink = ino->nlink;
	st->st_uid = ino->uid;
	st->st_gid = ino->gid;
	st->st_size = (off_t)ino->size;
	/* The preferred I/O size, not the image's block size: Python's open()
	 * gives every file a buffer this large, and a 128 KiB one is mapped
	 * and unmapped per file by glibc.  Reads reach the kernel's page
	 * cache first, so a small size costs no extra request. */
	st->st_blksize = SQCD_IO_BLKSIZE;
	if (ino->type == IMG_REG)
		st->st_blocks =
			(blkcnt_t)((ino->size -
				    MIN(ino->size, ino->file.sparse) + 511) /
				   512);
	/* Squashfs stores one time; the kernel shows it as all three. */
	st->st_mtim.tv_sec = ino->mtime;
	st->st_atim.tv_sec = ino->mtime;
	st->st_ctim.tv_sec = ino->mtime;
	if (ino->type == IMG_BLKDEV || ino->type == IMG_CHRDEV)
		st->st_rdev = ino->rdev; /* same encoding as Linux's dev_t */
}

static void fill_entry(const struct sqcd *d, const struct img_inode *ino,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ref_to_node(d, ino->ref);
	e->generation = 1;
	e->attr_timeout = SQCD_TIMEOUT;
	e->entry_timeout = SQCD_TIMEOUT;
	fill_stat(ino, &e->attr);
}

/* init: ask for every cache the kernel offers. */
static void sqcd_init(void *userdata, struct fuse_conn_info *conn)
{
	struct sqcd *d = userdata;

	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* Every listing readdirplus, unless a feature asks otherwise
	 * (listing ahead, see SQCD_EV_INIT below). */
	conn->want &= ~(unsigned int)FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~(unsigned int)FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	/* The idle timeout counts open handles: it needs every OPEN. */
	d->no_open = !d->o.direct_io && !d->o.timeout &&
		     (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
	d->no_opendir = !d->o.timeout &&
			(conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT);
	/* Raw bytes that are not staged go from the image's page cache to
	 * the kernel by splice (splice.c), unless a feature asks otherwise
	 * (io_uring, see SQCD_EV_INIT below). */
	if (!d->o.no_splice && (conn->capable & FUSE_CAP_SPLICE_WRITE))
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	/* Large requests: the kernel derives max_pages from max_write. */
	conn->max_write = 1u << 20;
	conn->max_read = 0;
	conn->max_readahead = conn->max_readahead ? conn->max_readahead :
						    1u << 20;
	conn->time_gran = 1000000000;
	/* The features' say: listing ahead wants plain listings past a
	 * first batch, io_uring no splicing (statahead.c, uring.c). */
	sqcd_emit(&d->events,
		  &(struct sqcd_event){ .type = SQCD_EV_INIT, .conn = conn });
	d->splice = conn->want & FUSE_CAP_SPLICE_WRITE;
	log_debug("init: proto %u.%u, no_open %d, no_opendir %d, readahead %u",
		  conn->proto_major, conn->proto_minor, d->no_open,
		  d->no_opendir, conn->max_readahead);
}

static int do_lookup(struct sqcd *d, fuse_req_t req, fuse_ino_t parent,
		     const char *name, struct fuse_entry_param *e)
{
	struct img_inode dir, ino;
	struct img_dirent de;
	int err;

	err = get_inode(d, parent, &dir);
	if (err)
		return err;
	err = img_dir_lookup(d->img, &dir, name, strlen(name), &de);
	if (err)
		return err;
	err = img_inode_get(d->img, de.ref, &ino);
	if (err)
		return err;
	fill_entry(d, &ino, e);
	sqcd_emit(&d->events, &(struct sqcd_event){ .type = SQCD_EV_LOOKED_UP,
						    .req = req,
						    .node = e->ino,
						    .ino = &ino,
						    .dir = &dir,
						    .name = name });
	return 0;
}

/*
 * Valid replies: fuse_reply_entry (an entry, or a negative one with
 * ino 0 that the kernel caches), fuse_reply_err.
 */
static void sqcd_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct sqcd *d = req_daemon(req);
	struct fuse_entry_param e;
	int err;

	count(d, SQCD_OP_LOOKUP);
	err = do_lookup(d, req, parent, name, &e);
	if (err == -ENOENT) {
		memset(&e, 0, sizeof(e));
		e.entry_timeout = SQCD_TIMEOUT;
		return (void)fuse_reply_entry(req, &e);
	}
	if (err)
		return (void)fuse_reply_err(req, reply_errno(d, err));
	fuse_reply_entry(req, &e);
}

/* The kernel dropped @node's inode, and with it its pages and entries. */
static void forget_one(struct sqcd *d, fuse_ino_t node)
{
	struct img_inode ino;

	/* Nothing keeps state per inode unless a feature hears of it. */
	if (node == FUSE_ROOT_ID ||
	    !sqcd_hears(&d->events, SQCD_EV_BIT(SQCD_EV_FORGOTTEN)) ||
	    img_inode_get(d->img, node_to_ref(d, node), &ino))
		return;
	sqcd_emit(&d->events, &(struct sqcd_event){ .type = SQCD_EV_FORGOTTEN,
						    .node = node,
						    .ino = &ino });
}

/* Valid replies: fuse_reply_none. */
static void sqcd_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct sqcd *d = req_daemon(req);

	(void)nlookup;
	forget_one(d, ino);
	fuse_reply_none(req);
}

/* Valid replies: fuse_reply_none. */
static void sqcd_forget_multi(fuse_req_t req, size_t count_,
			      struct fuse_forget_data *forgets)
{
	struct sqcd *d = req_daemon(req);

	for (size_t i = 0; i < count_; i++)
		forget_one(d, forgets[i].ino);
	fuse_reply_none(req);
}

static int do_getattr(struct sqcd *d, fuse_ino_t node, struct stat *st)
{
	struct img_inode ino;
	int err;

	err = get_inode(d, node, &ino);
	if (err)
		return err;
	fill_stat(&ino, st);
	return 0;
}

/* Valid replies: fuse_reply_attr, fuse_reply_err. */
static void sqcd_getattr(fuse_req_t req, fuse_ino_t node,
			 struct fuse_file_info *fi)
{
	struct sqcd *d = req_daemon(req);
	struct stat st;
	int err;

	(void)fi;
	count(d, SQCD_OP_GETATTR);
	err = do_getattr(d, node, &st);
	if (err)
		return (void)fuse_reply_err(req, reply_errno(d, err));
	fuse_reply_attr(req, &st, SQCD_TIMEOUT);
}

static int do_readlink(struct sqcd *d, fuse_ino_t node, char *target,
		       size_t cap)
{
	struct img_inode ino;
	int err;

	err = get_inode(d, node, &ino);
	if (err)
		return err;
	return img_readlink(d->img, &ino, target, cap);
}

/* Valid replies: fuse_reply_readlink, fuse_reply_err. */
static void sqcd_readlink(fuse_req_t req, fuse_ino_t node)
{
	struct sqcd *d = req_daemon(req);
	char target[IMG_SYMLINK_MAX + 1];
	int err;

	count(d, SQCD_OP_READLINK);
	err = do_readlink(d, node, target, sizeof(target));
	if (err)
		return (void)fuse_reply_err(req, reply_errno(d, err));
	fuse_reply_readlink(req, target);
}

/*
 * Valid replies: fuse_reply_open, fuse_reply_err (ENOSYS asks the kernel
 * to stop sending open at all; it then keeps the page cache).
 */
static void sqcd_open(fuse_req_t req, fuse_ino_t node,
		      struct fuse_file_info *fi)
{
	struct sqcd *d = req_daemon(req);

	(void)node;
	count(d, SQCD_OP_OPEN);
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return (void)fuse_reply_err(req, EROFS);
	if (d->no_open)
		return (void)fuse_reply_err(req, ENOSYS);
	if (d->o.direct_io) {
		fi->direct_io = 1;
	} else {
		fi->keep_cache = 1;
		fi->noflush = 1;
	}
	emit_handle(d, true);
	fuse_reply_open(req, fi);
}

/* Valid replies: fuse_reply_err (0). */
static void sqcd_release(fuse_req_t req, fuse_ino_t node,
			 struct fuse_file_info *fi)
{
	(void)node;
	(void)fi;
	emit_handle(req_daemon(req), false);
	fuse_reply_err(req, 0);
}

static void read_ahead(struct sqcd *d, const struct img_inode *ino,
		       uint64_t end)
{
	const struct img_super *sb = img_get_super(d->img);
	uint64_t next = DIV_ROUND_UP(end, (uint64_t)sb->block_size);

	if (!d->pf || !d->o.readahead || next >= ino->file.nblocks ||
	    end >= ino->size)
		return;
	if (!pf_readahead(d->pf, ino, (uint32_t)next, d->o.readahead))
		atomic_fetch_add_explicit(&d->readaheads, 1,
					  memory_order_relaxed);
}

/* Answer a read with bytes made ready: spliced from a pipe, or straight
 * from the cached blocks to the kernel. */
static void reply_bytes(struct sqcd *d, fuse_req_t req,
			const struct sqcd_bytes *b)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(b->total);
	struct iovec iov[READ_SPANS_MAX];

	if (b->fd >= 0) {
		bv.buf[0].flags = FUSE_BUF_IS_FD;
		bv.buf[0].fd = b->fd;
		fuse_reply_data(req, &bv, 0);
		atomic_fetch_add_explicit(&d->spliced, 1, memory_order_relaxed);
		return;
	}
	for (unsigned int i = 0; i < b->n; i++) {
		iov[i].iov_base = (void *)b->spans[i].data;
		iov[i].iov_len = b->spans[i].len;
	}
	fuse_reply_iov(req, iov, (int)b->n);
}

/* Make @size bytes at @off of @node ready in @b (sqcd_bytes_ready());
 * on success the caller sends them, then calls sqcd_bytes_put(). */
static int do_read(struct sqcd *d, fuse_req_t req, fuse_ino_t node, size_t size,
		   off_t off, struct sqcd_bytes *b)
{
	struct img_inode ino;
	int err;

	if (off < 0)
		return -EINVAL;
	err = get_inode(d, node, &ino);
	if (err)
		return err;
	sqcd_emit(&d->events, &(struct sqcd_event){ .type = SQCD_EV_RANGE_READ,
						    .req = req,
						    .node = node,
						    .ino = &ino,
						    .off = (uint64_t)off,
						    .size = size });
	err = sqcd_bytes_map(d, &ino, (uint64_t)off, size, b);
	if (err)
		return err;
	read_ahead(d, &ino, (uint64_t)off + b->total);
	return sqcd_bytes_ready(d, &ino, (uint64_t)off, size, b);
}

/* Valid replies: fuse_reply_iov, fuse_reply_data, fuse_reply_err. */
static void sqcd_read(fuse_req_t req, fuse_ino_t node, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	struct sqcd *d = req_daemon(req);
	const struct img_read_ctx rc = { IMG_READ_DEMAND, sqcd_reply_buf() };
	struct img_span spans[READ_SPANS_MAX];
	struct sqcd_bytes b = { .spans = spans,
				.cap = READ_SPANS_MAX,
				.rc = &rc };
	int err;

	(void)fi;
	count(d, SQCD_OP_READ);
	err = do_read(d, req, node, size, off, &b);
	if (err)
		return (void)fuse_reply_err(req, reply_errno(d, err));
	reply_bytes(d, req, &b);
	sqcd_bytes_put(d, &b);
	atomic_fetch_add_explicit(&d->bytes_served, b.total,
				  memory_order_relaxed);
}

/*
 * Valid replies: fuse_reply_open, fuse_reply_err (ENOSYS: the kernel
 * stops sending opendir and caches listings).
 */
static void sqcd_opendir(fuse_req_t req, fuse_ino_t node,
			 struct fuse_file_info *fi)
{
	struct sqcd *d = req_daemon(req);

	(void)node;
	count(d, SQCD_OP_OPENDIR);
	if (d->no_opendir)
		return (void)fuse_reply_err(req, ENOSYS);
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	emit_handle(d, true);
	fuse_reply_open(req, fi);
}

/* Valid replies: fuse_reply_err (0). */
static void sqcd_releasedir(fuse_req_t req, fuse_ino_t node,
			    struct fuse_file_info *fi)
{
	(void)node;
	(void)fi;
	emit_handle(req_daemon(req), false);
	fuse_reply_err(req, 0);
}

/* A READDIR or READDIRPLUS reply being filled. */
struct dir_reply {
	fuse_req_t req; /* the request */
	char *buf; /* the reply */
	size_t size; /* bytes at @buf */
	size_t pos; /* bytes filled */
	bool plus; /* READDIRPLUS: entries with their attributes */
	bool names; /* but regular files with names only (node id 0) */
};

/* Add @name, its attributes in @e, next at @next.  Return: false if it
 * does not fit (nothing added). */
static bool add_one(struct dir_reply *r, const char *name,
		    const struct fuse_entry_param *e, off_t next)
{
	size_t n, left = r->size - r->pos;

	if (r->plus)
		n = fuse_add_direntry_plus(r->req, r->buf + r->pos, left, name,
					   e, next);
	else
		n = fuse_add_direntry(r->req, r->buf + r->pos, left, name,
				      &e->attr, next);
	if (n > left)
		return false;
	r->pos += n;
	return true;
}

/* Add "." and ".." from @off on.  Return: false if the reply is full. */
static bool add_dots(struct sqcd *d, struct dir_reply *r,
		     const struct img_inode *dir, off_t off)
{
	const struct img_super *sb = img_get_super(d->img);
	uint32_t parent = dir->dir.parent;
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	for (int dot = (int)off; dot < 2; dot++) {
		e.attr.st_mode = S_IFDIR;
		if (dot == 0)
			e.attr.st_ino = dir->ino;
		else
			e.attr.st_ino = parent > sb->inode_count ? dir->ino :
								   parent;
		if (!add_one(r, dot ? ".." : ".", &e, dot + 1))
			return false;
	}
	return true;
}

/* Add entry @de of @dir.  Return: 1 if added, 0 if it does not fit,
 * -errno. */
static int add_entry(struct sqcd *d, struct dir_reply *r,
		     const struct img_inode *dir, const struct img_dirent *de)
{
	struct fuse_entry_param e;
	struct img_inode child;
	int err;

	/* Node id 0 in a READDIRPLUS: the kernel lists the name, makes no
	 * inode and keeps no attributes.  Directories and symlinks keep
	 * theirs: a walker goes into them, and os.walk stats a symlink to
	 * learn what it points to. */
	if (!r->plus || (r->names && de->type == IMG_REG)) {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = de->ino;
		e.attr.st_mode = img_type_mode(de->type);
		return add_one(r, de->name, &e, (off_t)(de->next + 2));
	}
	err = img_inode_get(d->img, de->ref, &child);
	if (err)
		return err;
	fill_entry(d, &child, &e);
	if (!add_one(r, de->name, &e, (off_t)(de->next + 2)))
		return 0;
	/* The kernel now holds this inode. */
	sqcd_emit(&d->events,
		  &(struct sqcd_event){ .type = SQCD_EV_ENTRY_LISTED,
					.req = r->req,
					.node = e.ino,
					.ino = &child,
					.dir = dir,
					.name = de->name });
	return 1;
}

/*
 * Directory offsets: 1 and 2 follow "." and ".."; anything else is an
 * image cookie (a listing offset, at least 12) plus 2.
 */
static int do_readdir(struct sqcd *d, fuse_ino_t node, off_t off,
		      struct dir_reply *r)
{
	struct img_inode dir;
	struct img_dir_iter it;
	struct img_dirent de;
	uint64_t cookie;
	int err;

	err = get_inode(d, node, &dir);
	if (err)
		return err;
	if (dir.type != IMG_DIR)
		return -ENOTDIR;
	if (!add_dots(d, r, &dir, off))
		return 0;
	cookie = off > 2 ? (uint64_t)off - 2 : 0;
	err = img_dir_open(d->img, &dir, cookie, &it);
	if (err)
		return err;
	/* Listing ahead makes the regular files' inodes later, if a reader
	 * wants them. */
	r->names = r->plus && sqcd_ask(&d->events.names_only, r->req);
	while ((err = img_dir_next(&it, &de)) == 1) {
		err = add_entry(d, r, &dir, &de);
		if (err < 0)
			return err;
		if (!err)
			break;
	}
	if (err < 0 && r->pos == 0)
		return err;
	/* err 0: img_dir_next() ended the listing in this reply, or a
	 * READDIRPLUS reply is full (add_entry()): told as an end too. */
	if (off == 0 || (err == 0 && r->pos))
		sqcd_emit(&d->events, &(struct sqcd_event){
					      .type = SQCD_EV_DIR_LISTED,
					      .req = r->req,
					      .dir = &dir,
					      .first = off == 0,
					      .eof = err == 0 && r->pos,
					      .names = r->names || !r->plus });
	return 0;
}

static void readdir_common(fuse_req_t req, fuse_ino_t node, size_t size,
			   off_t off, bool plus)
{
	struct sqcd *d = req_daemon(req);
	struct dir_reply r = { .req = req, .plus = plus };
	int err;

	count(d, plus ? SQCD_OP_READDIRPLUS : SQCD_OP_READDIR);
	log_debug("readdir%s %zu at %lld", plus ? "plus" : "", size,
		  (long long)off);
	r.size = MIN(size, (size_t)1 << 20);
	r.buf = malloc(r.size);
	if (!r.buf)
		return (void)fuse_reply_err(req, ENOMEM);
	err = do_readdir(d, node, off, &r);
	if (err)
		fuse_reply_err(req, reply_errno(d, err));
	else
		fuse_reply_buf(req, r.buf, r.pos);
	free(r.buf);
}

/* Valid replies: fuse_reply_buf, fuse_reply_err. */
static void sqcd_readdir(fuse_req_t req, fuse_ino_t node, size_t size,
			 off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, node, size, off, false);
}

/* Valid replies: fuse_reply_buf, fuse_reply_err. */
static void sqcd_readdirplus(fuse_req_t req, fuse_ino_t node, size_t size,
			     off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, node, size, off, true);
}

/* Valid replies: fuse_reply_statfs. */
static void sqcd_statfs(fuse_req_t req, fuse_ino_t node)
{
	struct sqcd *d = req_daemon(req);
	const struct img_super *sb = img_get_super(d->img);
	struct statvfs st;

	(void)node;
	count(d, SQCD_OP_STATFS);
	memset(&st, 0, sizeof(st));
	st.f_bsize = sb->block_size;
	st.f_frsize = sb->block_size;
	st.f_blocks = DIV_ROUND_UP(sb->bytes_used, (uint64_t)sb->block_size);
	st.f_files = sb->inode_count;
	st.f_namemax = IMG_NAME_MAX;
	st.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &st);
}

static int do_getxattr(struct sqcd *d, fuse_ino_t node, const char *name,
		       void *buf, size_t size, size_t *len)
{
	struct img_inode ino;
	int err;

	if (!img_has_xattrs(d->img))
		return -ENODATA;
	err = get_inode(d, node, &ino);
	if (err)
		return err;
	return img_xattr_get(d->img, &ino, name, buf, size, len);
}

/* Valid replies: fuse_reply_buf, fuse_reply_xattr, fuse_reply_err. */
static void sqcd_getxattr(fuse_req_t req, fuse_ino_t node, const char *name,
			  size_t size)
{
	struct sqcd *d = req_daemon(req);
	size_t len = 0;
	char *buf = NULL;
	int err;

	count(d, SQCD_OP_GETXATTR);
	if (size) {
		buf = malloc(size);
		if (!buf)
			return (void)fuse_reply_err(req, ENOMEM);
	}
	err = do_getxattr(d, node, name, buf, size, &len);
	if (err)
		fuse_reply_err(req, reply_errno(d, err));
	else if (size)
		fuse_reply_buf(req, buf, len);
	else
		fuse_reply_xattr(req, len);
	free(buf);
}

/* Hide trusted.* from callers without privilege, as the kernel does. */
static size_t filter_trusted(char *list, size_t len)
{
	size_t in = 0, out = 0, n;

	while (in < len) {
		n = strnlen(list + in, len - in) + 1;
		if (strncmp(list + in, "trusted.", 8)) {
			memmove(list + out, list + in, n);
			out += n;
		}
		in += n;
	}
	return out;
}

/* The names of @node's attributes that the caller may see, into *@list
 * (NULL without any; the caller frees it), @len bytes long. */
static int do_listxattr(struct sqcd *d, fuse_req_t req, fuse_ino_t node,
			char **list, size_t *len)
{
	struct img_inode ino;
	char *buf;
	size_t cap;
	int err;

	*list = NULL;
	*len = 0;
	if (!img_has_xattrs(d->img))
		return 0;
	err = get_inode(d, node, &ino);
	if (!err)
		err = img_xattr_list(d->img, &ino, NULL, 0, len);
	if (err)
		return err;
	cap = *len;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	err = img_xattr_list(d->img, &ino, buf, cap + 1, len);
	if (err) {
		free(buf);
		return err;
	}
	if (fuse_req_ctx(req)->uid != 0)
		*len = filter_trusted(buf, *len);
	*list = buf;
	return 0;
}

/* Valid replies: fuse_reply_buf, fuse_reply_xattr, fuse_reply_err. */
static void sqcd_listxattr(fuse_req_t req, fuse_ino_t node, size_t size)
{
	struct sqcd *d = req_daemon(req);
	size_t len;
	char *buf;
	int err;

	count(d, SQCD_OP_LISTXATTR);
	err = do_listxattr(d, req, node, &buf, &len);
	if (err)
		fuse_reply_err(req, reply_errno(d, err));
	else if (!size)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

/* Anything that would change the image.  Valid replies: fuse_reply_err. */
static void reply_read_only(fuse_req_t req)
{
	count(req_daemon(req), SQCD_OP_WRITE);
	fuse_reply_err(req, EROFS);
}

static void sqcd_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			 int to_set, struct fuse_file_info *fi)
{
	(void)ino, (void)attr, (void)to_set, (void)fi;
	reply_read_only(req);
}

static void sqcd_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode, dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	reply_read_only(req);
}

static void sqcd_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode)
{
	(void)parent, (void)name, (void)mode;
	reply_read_only(req);
}

static void sqcd_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent, (void)name;
	reply_read_only(req);
}

static void sqcd_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			 const char *name)
{
	(void)link, (void)parent, (void)name;
	reply_read_only(req);
}

static void sqcd_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			fuse_ino_t newparent, const char *newname,
			unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	reply_read_only(req);
}

static void sqcd_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		      const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	reply_read_only(req);
}

static void sqcd_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		       size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino, (void)buf, (void)size, (void)off, (void)fi;
	reply_read_only(req);
}

static void sqcd_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode, struct fuse_file_info *fi)
{
	(void)parent, (void)name, (void)mode, (void)fi;
	reply_read_only(req);
}

static void sqcd_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			  const char *value, size_t size, int flags)
{
	(void)ino, (void)name, (void)value, (void)size, (void)flags;
	reply_read_only(req);
}

static void sqcd_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino, (void)name;
	reply_read_only(req);
}

static void sqcd_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			   off_t offset, off_t length,
			   struct fuse_file_info *fi)
{
	(void)ino, (void)mode, (void)offset, (void)length, (void)fi;
	reply_read_only(req);
}

/*
 * The kernel has no negative cache for ioctls: each one is a round trip.
 * CPython's open() asks isatty() of every file it opens, so a Python
 * reader costs one of these per file; count them so that the stats show
 * it.  The first time, the file is about to be read: said to the features
 * before the answer (warming pushes it into the page cache, so that the
 * reads need no round trip).
 * Valid replies: fuse_reply_err (ENOTTY: no such ioctl).
 */
static void sqcd_ioctl(fuse_req_t req, fuse_ino_t node, unsigned int cmd,
		       void *arg, struct fuse_file_info *fi, unsigned int flags,
		       const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct sqcd *d = req_daemon(req);
	struct img_inode ino;

	(void)cmd, (void)arg, (void)fi, (void)in_buf;
	(void)in_bufsz, (void)out_bufsz;
	count(d, SQCD_OP_IOCTL);
	if (sqcd_hears(&d->events, SQCD_EV_BIT(SQCD_EV_READER) |
					   SQCD_EV_BIT(SQCD_EV_FILE_OPENED)) &&
	    !(flags & FUSE_IOCTL_DIR) && !get_inode(d, node, &ino)) {
		sqcd_emit(&d->events,
			  &(struct sqcd_event){ .type = SQCD_EV_READER });
		sqcd_emit(&d->events,
			  &(struct sqcd_event){ .type = SQCD_EV_FILE_OPENED,
						.req = req,
						.node = node,
						.ino = &ino });
	}
	fuse_reply_err(req, ENOTTY);
}

void sqcd_drop_listing(struct sqcd *d, uint64_t ref)
{
	pthread_mutex_lock(&d->notify_lock);
	if (!d->notify_off)
		fuse_lowlevel_notify_inval_inode(d->se, ref_to_node(d, ref), 0,
						 0);
	pthread_mutex_unlock(&d->notify_lock);
}

void sqcd_notify_end(struct sqcd *d)
{
	pthread_mutex_lock(&d->notify_lock);
	d->notify_off = true;
	pthread_mutex_unlock(&d->notify_lock);
}

const struct fuse_lowlevel_ops sqcd_ops = {
	.init = sqcd_init,
	.lookup = sqcd_lookup,
	.forget = sqcd_forget,
	.forget_multi = sqcd_forget_multi,
	.getattr = sqcd_getattr,
	.readlink = sqcd_readlink,
	.open = sqcd_open,
	.read = sqcd_read,
	.release = sqcd_release,
	.opendir = sqcd_opendir,
	.readdir = sqcd_readdir,
	.readdirplus = sqcd_readdirplus,
	.releasedir = sqcd_releasedir,
	.statfs = sqcd_statfs,
	.getxattr = sqcd_getxattr,
	.listxattr = sqcd_listxattr,
	.setattr = sqcd_setattr,
	.mknod = sqcd_mknod,
	.mkdir = sqcd_mkdir,
	.unlink = sqcd_unlink,
	.rmdir = sqcd_unlink,
	.symlink = sqcd_symlink,
	.rename = sqcd_rename,
	.link = sqcd_link,
	.write = sqcd_write,
	.create = sqcd_create,
	.setxattr = sqcd_setxattr,
	.removexattr = sqcd_removexattr,
	.fallocate = sqcd_fallocate,
	.ioctl = sqcd_ioctl,
};

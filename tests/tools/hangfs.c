// SPDX-License-Identifier: MIT
/*
 * This file implements hangfs, a test tool: a FUSE file system that a
 * user mounts to make a root server wait on it, as a hostile user would.
 * It holds one regular file, "file" (1 MiB of zeros, mode 0644; "file0"
 * to "file63", not listed, are more of the same, each its own inode), whose
 * FLUSH, sent by every close() of a descriptor of it, is never answered
 * when another user's process (root's) closes it: that close() waits in
 * the kernel (request_wait_answer), unkillable, for as long as the
 * connection lives.  The mounting user's own processes are answered, so
 * that the client that hands a descriptor over exits.
 *
 *   hangfs [-a] [-s] [-w] MOUNTPOINT
 *
 * -a: a GETATTR of the file by another user is not answered either (an
 * fstat() that hangs, as on a hung NFS or Lustre server; the kernel sends
 * one only where the mount lets that user in).
 * -s: the mounting user's own FLUSH is not answered either (so that one
 * of its processes can hang itself where it likes: in an execve() that
 * closes the file, say).
 * -w: writes are cached by the kernel (FUSE_CAP_WRITEBACK_CACHE) and no
 * WRITE is answered, whoever asks: a close() of a descriptor written to
 * waits for ever in its FLUSH's writeback (said as "WRITE"), and so does
 * the last release of that file (it waits for the writeback to end),
 * where no signal reaches it.
 *
 * Each request left unanswered is said on stderr, as it comes:
 * "hangfs: FLUSH of uid U pid P not answered" (or GETATTR).  Runs in the
 * foreground until SIGTERM or SIGINT, then answers what it left (EIO);
 * if it is killed, the kernel ends the connection and fails them.  A test
 * ends it with /sys/fs/fuse/connections/N/abort (N: the mount's minor
 * device number), which fails them at once whatever hangfs does.
 */
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_INO 2
#define EXTRA_FILES 64 /* file0 ... file63, inodes 3 ... */
#define FILE_SIZE (1 << 20)

static int hang_getattr; /* -a */
static int hang_self; /* -s */
static int hang_write; /* -w */
static fuse_req_t held[256]; /* requests not answered */
static size_t nheld;

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = FILE_SIZE;
	}
}

/* Whether @req, of @what, is left unanswered: another user's, of the file.
 * Said on stderr when it is. */
static int hang(fuse_req_t req, const char *what)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if (ctx->uid == getuid() && !(hang_self && !strcmp(what, "FLUSH")))
		return 0;
	fprintf(stderr, "hangfs: %s of uid %u pid %d not answered\n", what,
		(unsigned int)ctx->uid, (int)ctx->pid);
	if (nheld < sizeof(held) / sizeof(held[0]))
		held[nheld++] = req;
	return 1;
}

static void hf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	fuse_ino_t ino = FILE_INO;
	unsigned int n;
	char end;

	/* "file", and "file0" to "file63" (as many inodes: what waits on
	 * one's writeback is that one's alone) */
	if (parent != FUSE_ROOT_ID || strncmp(name, "file", 4))
		return (void)fuse_reply_err(req, ENOENT);
	if (name[4]) {
		if (sscanf(name + 4, "%u%c", &n, &end) != 1 || n >= EXTRA_FILES)
			return (void)fuse_reply_err(req, ENOENT);
		ino = FILE_INO + 1 + n;
	}
	memset(&e, 0, sizeof(e));
	e.ino = ino;
	fill_attr(ino, &e.attr);
	fuse_reply_entry(req, &e); /* no caching: every fstat() asks */
}

static void hf_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino >= FILE_INO && hang_getattr && hang(req, "GETATTR"))
		return;
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 0);
}

static void hf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino < FILE_INO)
		return (void)fuse_reply_err(req, EISDIR);
	fuse_reply_open(req, fi);
}

static void hf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	static const char zeros[65536];

	(void)ino;
	(void)fi;
	if (off >= FILE_SIZE)
		size = 0;
	else if ((off_t)size > FILE_SIZE - off)
		size = (size_t)(FILE_SIZE - off);
	fuse_reply_buf(req, zeros, size < sizeof(zeros) ? size : sizeof(zeros));
}

static void hf_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	if (!hang(req, "FLUSH"))
		fuse_reply_err(req, 0);
}

static void hf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (hang_write && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
}

static void hf_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	(void)ino;
	(void)buf;
	(void)off;
	(void)fi;
	if (!hang_write)
		return (void)fuse_reply_err(req, EROFS);
	fprintf(stderr, "hangfs: WRITE of uid %u pid %d not answered\n",
		(unsigned int)ctx->uid, (int)ctx->pid);
	if (nheld < sizeof(held) / sizeof(held[0]))
		held[nheld++] = req;
	(void)size;
}

static void hf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct stat st = { .st_ino = FILE_INO, .st_mode = S_IFREG };
	char buf[512];
	size_t n = 0;

	(void)ino;
	(void)fi;
	if (off == 0)
		n = fuse_add_direntry(req, buf, sizeof(buf), "file", &st, 1);
	fuse_reply_buf(req, buf, n < size ? n : 0);
}

static const struct fuse_lowlevel_ops ops = {
	.init = hf_init,
	.lookup = hf_lookup,
	.getattr = hf_getattr,
	.open = hf_open,
	.read = hf_read,
	.flush = hf_flush,
	.readdir = hf_readdir,
	.write = hf_write,
};

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, fargv);
	struct fuse_session *se;
	int ret;

	for (; argc > 2 && argv[1][0] == '-'; argc--, argv++) {
		if (!strcmp(argv[1], "-a"))
			hang_getattr = 1;
		else if (!strcmp(argv[1], "-s"))
			hang_self = 1;
		else if (!strcmp(argv[1], "-w"))
			hang_write = 1;
		else
			break;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: hangfs [-a] [-s] [-w] MOUNTPOINT\n");
		return 2;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_set_signal_handlers(se) ||
	    fuse_session_mount(se, argv[1])) {
		fuse_opt_free_args(&args);
		return 1;
	}
	ret = fuse_session_loop(se);
	for (size_t i = 0; i < nheld; i++)
		fuse_reply_err(held[i], EIO);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return ret ? 1 : 0;
}

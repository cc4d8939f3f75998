// SPDX-License-Identifier: MIT
/*
 * This file implements the keep feature (keep.h): asking the keeper for
 * a copy of the image when it is opened, making and handing it a new one
 * when it has none, and the feature's life and stats.
 */
#define LOG_MOD "keep"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon.h"
#include "keep.h"
#include "keep/keep.h"
#include "seal/seal.h"
#include "util/compiler.h"
#include "util/err.h"
#include "util/log.h"

struct keep {
	struct sqcd *d;
	const char *path; /* the keeper's socket */
	int sock; /* the connection, open while the copy is used, or -1 */
	int memfd; /* the copy until the image is opened, or -1 */
	struct keep_key key; /* the image's identity */
	const char *answer; /* what came of asking, for the stats */
	uint64_t keeper_complete; /* bytes complete in the copy given */
	/* A site copy (KEEP_F_SITE): root's, read-only, staged by the
	 * keeper; this mount follows it. */
	bool site;
	int writer; /* the keeper's pidfd until the image is opened, or -1 */
	bool has_root; /* root checks its chunks against a seal of root */
	uint8_t root[SEAL_HASH_SIZE];
};

/* Give the keeper a new copy of @size bytes.  Return: 0 or -errno. */
static int put_new(struct keep *k, uint64_t size)
{
	struct keep_msg m = { .op = KEEP_PUT };
	int err, fd;

	err = stage_backing_new(size, &k->key, sizeof(k->key), "squashcache",
				&k->memfd);
	if (err)
		return err;
	err = keep_send(k->sock, &m, k->memfd);
	if (!err)
		err = keep_recv(k->sock, &m, &fd);
	if (!err && fd >= 0)
		close(fd);
	if (!err && (m.op != KEEP_DONE || m.status))
		err = m.op != KEEP_DONE ? -EPROTO : m.status;
	return err;
}

/* The copy given is the site's: root writes it, this mount follows it
 * (reads its chunks as they land, writes nothing), and it is of the image
 * by its file alone (no pid namespace: no claims). */
static void take_site(struct keep *k, const struct keep_msg *m)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	k->site = true;
	k->answer = "site";
	k->key.pidns = 0;
	k->has_root = m->name[0] && !seal_parse_hex(m->name, k->root);
	/* Its staging ends if the keeper is gone (killed mid-way). */
	if (!getsockopt(k->sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) &&
	    cr.pid > 0)
		k->writer = (int)syscall(SYS_pidfd_open, cr.pid, 0);
}

/* Ask for the copy of the image @fd.  Return: 0 or -errno. */
static int ask(struct keep *k, int fd, uint64_t offset, uint64_t size)
{
	struct keep_msg m = { .op = KEEP_GET, .a = offset, .b = size };
	int err;

	/* For display: a longer name is cut (the identity is the file's). */
	memcpy(m.name, k->d->o.image_abs,
	       MIN(strlen(k->d->o.image_abs), sizeof(m.name) - 1));
	err = keep_send(k->sock, &m, fd);
	if (!err)
		err = keep_recv(k->sock, &m, &k->memfd);
	if (err)
		return err;
	if (m.op == KEEP_COPY && k->memfd >= 0) {
		k->answer = "copy";
		k->keeper_complete = m.a;
		if (m.flags & KEEP_F_SITE)
			take_site(k, &m);
		return 0;
	}
	if (m.op != KEEP_NONE)
		return m.op == KEEP_DONE && m.status ? m.status : -EPROTO;
	k->answer = "new";
	return put_new(k, size);
}

static int connect_keeper(struct keep *k)
{
	return keep_connect(k->path, KEEP_BUDGET_MS, &k->sock);
}

/* img_opts.backing: the copy to stage into, from the keeper. */
static void backing(void *arg, int fd, uint64_t offset, uint64_t size,
		    struct stage_backing *out)
{
	struct keep *k = arg;
	struct stat sb;
	int err;

	out->fd = -1;
	if (fstat(fd, &sb)) {
		k->answer = "error";
		return;
	}
	keep_key_of(&sb, offset, keep_pidns(0), &k->key);
	err = connect_keeper(k);
	if (err) {
		k->answer = "no keeper";
		log_info("no keeper at '%s' (%s); staging without keeping",
			 k->path, err_str(err));
		return;
	}
	err = ask(k, fd, offset, size);
	if (err) {
		k->answer = "error";
		log_warn(
			"the keeper at '%s' failed: %s; staging without keeping",
			k->path, err_str(err));
		if (k->memfd >= 0)
			close(k->memfd);
		k->memfd = -1;
		close(k->sock);
		k->sock = -1;
		return;
	}
	out->fd = k->memfd;
	out->key = &k->key;
	out->key_len = sizeof(k->key);
	out->follow = k->site;
	out->writer = k->writer;
	out->checked_root = k->has_root ? k->root : NULL;
}

/*
 * The feature's prepare(): with -o keep, set d->o.img.backing so that
 * img_open() asks the keeper, and set the feature up (it starts with the
 * others).  Return: 0; -ENOMEM.  Context: main(), before img_open().
 */
static int keep_prepare(struct sqcd *d, void **f)
{
	struct keep *k;

	if (!d->o.keep)
		return 0;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->d = d;
	k->path = d->o.keep;
	k->sock = k->memfd = k->writer = -1;
	k->answer = "off";
	d->o.img.backing = backing;
	d->o.img.backing_arg = k;
	*f = k;
	return 0;
}

/* The copy was refused (stage.h): have the keeper drop it once this
 * mount ends, rather than keep it for the next. */
static void forget(struct keep *k)
{
	struct keep_msg m = { .op = KEEP_FORGET };
	int fd;

	memcpy(m.name, k->d->o.image_abs,
	       MIN(strlen(k->d->o.image_abs), sizeof(m.name) - 1));
	if (!keep_send(k->sock, &m, -1) && !keep_recv(k->sock, &m, &fd) &&
	    fd >= 0)
		close(fd);
}

/* Tell the keeper which process uses the copy: this one, detached from
 * the one that asked (the keeper takes the sender of each message from
 * the kernel, and checks that it holds the copy). */
static void say_here(struct keep *k)
{
	struct keep_msg m = { .op = KEEP_PING };
	int fd = stage_backing_fd(img_stage(k->d->img));

	if (k->sock < 0)
		return;
	/* Which of this process's descriptors is the copy: the keeper
	 * compares that one, not every one it has. */
	m.b = fd >= 0 ? (uint64_t)fd + 1 : 0;
	if (!keep_send(k->sock, &m, -1) && !keep_recv(k->sock, &m, &fd) &&
	    fd >= 0)
		close(fd);
}

/* The image is open and maps the copy (the stage keeps a descriptor of
 * it): this one is not needed. */
static int keep_start(struct sqcd *d, void **f)
{
	struct keep *k = *f;
	struct stage_stats ss;

	if (!k)
		return 0;
	if (k->memfd >= 0)
		close(k->memfd);
	k->memfd = -1;
	if (k->writer >= 0)
		close(k->writer); /* the stage keeps its own */
	k->writer = -1;
	say_here(k);
	stage_get_stats(img_stage(d->img), &ss);
	if (ss.backing == STAGE_BACKING_REFUSED && !k->site) {
		k->answer = "refused";
		forget(k);
	}
	/*
	 * A whole copy adopted: every byte is in RAM already, so what a
	 * first epoch still pays is the kernel's (an inode per file, a FUSE
	 * request per read).  List the tree at once, in the background (the
	 * mount command does not wait for it), and warming, armed by the
	 * tree listed, pushes the files into this mount's page cache while
	 * the job starts: its first epoch reads them as a later one does.
	 * Listing ahead's and warming's options still rule: off stays off,
	 * and warm= bounds what is pushed.
	 */
	if (ss.adopted && ss.staged >= ss.planned && d->o.statahead &&
	    d->o.warm && !d->o.statahead_all) {
		d->o.statahead_all = true;
		d->o.statahead_wait = 0;
		log_info(
			"the kept copy is whole: listing the tree and warming the page cache");
	}
	return 0;
}

static void keep_stop(void *f)
{
	(void)f;
}

/* Once the stager threads are joined: closing the connection hands the
 * copy back to the keeper. */
static void keep_free(void *f)
{
	struct keep *k = f;

	if (!k)
		return;
	if (k->memfd >= 0)
		close(k->memfd);
	if (k->writer >= 0)
		close(k->writer);
	if (k->sock >= 0)
		close(k->sock);
	free(k);
}

void keep_stats_json(struct keep *k, struct json_buf *b)
{
	struct stage_stats ss;

	if (!k)
		return;
	stage_get_stats(img_stage(k->d->img), &ss);
	json_buf_printf(b, "\"keep\":{\"socket\":");
	json_buf_str(b, k->path);
	json_buf_printf(b, ",\"site\":%s", k->site ? "true" : "false");
	json_buf_printf(b,
			",\"answer\":\"%s\",\"keeper_complete\":%llu,"
			"\"adopted\":%llu,\"adopted_chunks\":%llu,"
			"\"peers\":%llu},",
			k->answer, (unsigned long long)k->keeper_complete,
			(unsigned long long)ss.adopted,
			(unsigned long long)((ss.adopted + (128u << 10) - 1) >>
					     17),
			(unsigned long long)ss.peers);
}

const struct sqcd_feature keep_feature = {
	.name = "keep",
	.prepare = keep_prepare,
	.start = keep_start,
	.stop = keep_stop,
	.free = keep_free,
};

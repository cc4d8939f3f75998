// SPDX-License-Identifier: MIT
/*
 * This file implements the bytes of a file range made ready to send, for
 * a read reply (ops.c) and for a push into the page cache (warm.c) alike:
 * raw image bytes that are not staged are spliced from the image file's
 * page cache into a pipe of the calling thread, and libfuse splices that
 * pipe into /dev/fuse, so the bytes are copied once (into the reader's
 * page cache), not read into memory and written out again.  Everything
 * else, and a range that mixes both, is sent from memory.
 *
 * Why a pipe of our own, and not libfuse's file splicing: libfuse turns a
 * short splice from a file into a short reply, and the kernel takes a short
 * reply as the end of the file.  A read error of the storage would then
 * look like a truncated file.  Filling our own pipe first lets us check
 * that every byte arrived; if not, the range is read through memory,
 * where the error is reported as EIO.
 */
#define LOG_MOD "fuse"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "daemon.h"
#include "util/log.h"

#define PIPE_SIZE (1 << 20) /* holds the largest read reply */

struct thread_pipe {
	int rd; /* read end, handed to libfuse */
	int wr; /* write end, filled from the image */
};

static pthread_key_t pipe_key;
static pthread_once_t pipe_once = PTHREAD_ONCE_INIT;
static bool pipe_key_ok;

static void pipe_free(void *p)
{
	struct thread_pipe *tp = p;

	close(tp->rd);
	close(tp->wr);
	free(tp);
}

static void pipe_key_init(void)
{
	pipe_key_ok = !pthread_key_create(&pipe_key, pipe_free);
}

static struct thread_pipe *thread_pipe(void)
{
	struct thread_pipe *tp;
	int fds[2];

	pthread_once(&pipe_once, pipe_key_init);
	if (!pipe_key_ok)
		return NULL;
	tp = pthread_getspecific(pipe_key);
	if (tp)
		return tp;
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
		return NULL;
	/* Big enough for a whole reply; smaller pipes only fail over to the
	 * memory path for large reads. */
	fcntl(fds[1], F_SETPIPE_SZ, PIPE_SIZE);
	tp = malloc(sizeof(*tp));
	if (!tp || pthread_setspecific(pipe_key, tp)) {
		free(tp);
		close(fds[0]);
		close(fds[1]);
		return NULL;
	}
	tp->rd = fds[0];
	tp->wr = fds[1];
	return tp;
}

/* Throw away whatever is left in the pipe. */
static void drain(struct thread_pipe *tp)
{
	char buf[4096];
	int left = 0;

	while (!ioctl(tp->rd, FIONREAD, &left) && left > 0)
		if (read(tp->rd, buf, sizeof(buf)) <= 0)
			break;
}

/*
 * Splice @n file ranges of the image into this thread's pipe, and set *@fd
 * to its read end.  Return: 0; a negative errno if not every byte could be
 * spliced (the pipe is then empty again).
 */
static int splice_fill(const struct img_span *spans, unsigned int n, int *fd)
{
	struct thread_pipe *tp = thread_pipe();
	ssize_t r;

	if (!tp)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++) {
		loff_t pos = (loff_t)spans[i].fd_off;
		size_t left = spans[i].len;

		while (left) {
			r = splice(spans[i].fd, &pos, tp->wr, NULL, left,
				   SPLICE_F_NONBLOCK);
			if (r <= 0) {
				/* A read error, the end of a shrunk file, a
				 * full pipe, or no splice for this file. */
				int err = r < 0 ? -errno : -EIO;

				drain(tp);
				return err;
			}
			left -= (size_t)r;
		}
	}
	*fd = tp->rd;
	return 0;
}

int sqcd_bytes_map(struct sqcd *d, const struct img_inode *ino, uint64_t off,
		   size_t size, struct sqcd_bytes *b)
{
	unsigned int n;
	int err;

	b->n = 0;
	b->total = 0;
	b->nfd = 0;
	b->fd = -1;
	err = d->splice ? img_file_map(d->img, b->rc, ino, off, size, b->spans,
				       b->cap, &n) :
			  img_file_spans(d->img, b->rc, ino, off, size,
					 b->spans, b->cap, &n);
	if (err)
		return err;
	b->n = n;
	for (unsigned int i = 0; i < n; i++) {
		b->nfd += !b->spans[i].data;
		b->total += b->spans[i].len;
	}
	return 0;
}

int sqcd_bytes_ready(struct sqcd *d, const struct img_inode *ino, uint64_t off,
		     size_t size, struct sqcd_bytes *b)
{
	unsigned int n;
	int err;

	if (!b->nfd || (b->nfd == b->n && !splice_fill(b->spans, b->n, &b->fd)))
		return 0;
	/* Some bytes in memory, some in the file, or the splice fell short:
	 * from memory, where errors are reported. */
	img_spans_put(d->img, b->spans, b->n);
	b->n = 0;
	b->nfd = 0;
	err = img_file_spans(d->img, b->rc, ino, off, size, b->spans, b->cap,
			     &n);
	if (err)
		return err;
	b->n = n;
	return 0;
}

void sqcd_bytes_put(struct sqcd *d, struct sqcd_bytes *b)
{
	struct thread_pipe *tp;

	/* Nothing may be left for the next request on this thread. */
	if (b->fd >= 0 && (tp = thread_pipe()))
		drain(tp);
	img_spans_put(d->img, b->spans, b->n);
	b->n = 0;
	b->fd = -1;
}

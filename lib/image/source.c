// SPDX-License-Identifier: MIT
/*
 * This file implements the image file as a source of bytes: reading it
 * with counts per reader, noticing that it changed under us, and the
 * sources that the staged copy (lib/stage) and a window (struct
 * img_window, img_window_read()) read through.
 */
#define LOG_MOD "image"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "image/image_i.h"
#include "seal/seal.h"
#include "util/ckd.h"
#include "util/log.h"

/* Log a failed or short read of the file, once per image. */
static void log_read_error(struct img *img, uint64_t at, int err)
{
	if (!img__log_once(img, __FILE__, __LINE__))
		return;
	if (err)
		log_err("cannot read image '%s' at %llu: %s", img->path,
			(unsigned long long)at, err_str(err));
	else
		log_err("image '%s' ends at %llu, before the %llu bytes its superblock claims (truncated while mounted?)",
			img->path, (unsigned long long)at,
			(unsigned long long)img->sb.bytes_used);
}

/* A read of @len bytes on behalf of @src returned them all. */
static void count_read(struct img *img, size_t len, enum img_read_source src)
{
	atomic_fetch_add_explicit(&img->src_reads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&img->src_bytes, len, memory_order_relaxed);
	atomic_fetch_add_explicit(&img->src_by[src], len, memory_order_relaxed);
}

/* pread() @len bytes of @fd at file offset @at into @dst, on through
 * EINTR and short reads.  Return: the bytes read, @len unless a read
 * failed (*err: its errno) or met the end of the file (*err: 0). */
static size_t pread_whole(int fd, void *dst, size_t len, uint64_t at, int *err)
{
	size_t done = 0;
	ssize_t n;

	*err = 0;
	while (done < len) {
		n = pread(fd, (char *)dst + done, len - done,
			  (off_t)(at + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*err = n < 0 ? errno : 0;
			break;
		}
		done += (size_t)n;
	}
	return done;
}

/* preadv() of @n buffers at @iov from file offset @at, on through EINTR
 * and short reads (@iov is used up).  Return: the bytes read, all of
 * them unless a read failed (*err: its errno) or met the end of the file
 * (*err: 0). */
static size_t preadv_whole(int fd, struct iovec *iov, int n, uint64_t at,
			   int *err)
{
	size_t done = 0;
	ssize_t got;

	*err = 0;
	while (n > 0) {
		if (!iov->iov_len) {
			iov++;
			n--;
			continue;
		}
		got = preadv(fd, iov, n, (off_t)(at + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			*err = got < 0 ? errno : 0;
			break;
		}
		done += (size_t)got;
		for (; n > 0 && (size_t)got >= iov->iov_len; iov++, n--)
			got -= (ssize_t)iov->iov_len;
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + got;
			iov->iov_len -= (size_t)got;
		}
	}
	return done;
}

/* Short reads are the file shrinking under us. */
int img__preadv(struct img *img, uint64_t off, struct iovec *iov, int n,
		enum img_read_source src)
{
	size_t len = 0, done;
	int err;

	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (atomic_load_explicit(&img->changed, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&img->src_errors, 1,
					  memory_order_relaxed);
		return -EIO;
	}
	/* bytes_used <= file_size = size - offset, checked at open. */
	off += img->offset;
	done = preadv_whole(img->fd, iov, n, off, &err);
	if (done < len) {
		atomic_fetch_add_explicit(&img->src_errors, 1,
					  memory_order_relaxed);
		log_read_error(img, off + done, err);
		return -EIO;
	}
	count_read(img, len, src);
	return 0;
}

int img__pread(struct img *img, uint64_t off, void *dst, size_t len,
	       enum img_read_source src)
{
	struct iovec iov = { dst, len };

	return img__preadv(img, off, &iov, 1, src);
}

/*
 * The stage's reads with O_DIRECT.  Through the page cache, a staged byte
 * is copied twice (storage client to page cache, page cache to the staged
 * copy) and then dropped from the page cache (POSIX_FADV_DONTNEED), and
 * the client's readahead, running past what was just dropped, reads some
 * of it from the storage again: 7-11% more than the image when readers
 * fill chunks while the stager streams (bench/slowfs with a page cache,
 * 128 KiB and 16 MiB readahead).  With O_DIRECT the client reads into the
 * staged copy itself, each byte once, in the stager's own large reads:
 * staging 1 GB there took the daemon 0.4-0.6 s of CPU against 5.1-5.3 s,
 * and 2.1 s against 3.3-4.3 s (docs/performance.md, "Staging with
 * O_DIRECT").
 *
 * Only what is DIO_ALIGN-aligned in the file and in memory goes this way:
 * the stager's and readers' chunk reads (the staged copy is mapped
 * page-aligned, chunks are 128 KiB) but for the image's unaligned last
 * page, and nothing of an image at an unaligned offset in its file.
 * 4 KiB covers the logical block size of the file systems that take
 * O_DIRECT; one that wants more refuses the read (EINVAL), and from then
 * on the stage reads through the page cache, said once in the log.
 */
#define DIO_ALIGN 4096u

/* Open the image again with O_DIRECT into img->dio_fd, or leave it -1
 * with the reason in img->dio_err (the daemon logs it once it has
 * detached).  Through /proc/self/fd: the same file as img->fd whatever its
 * name now names, checked by its identity. */
static void open_direct(struct img *img)
{
	struct stat a, b;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", img->fd);
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		img->dio_err = errno;
		return;
	}
	if (fstat(fd, &a) || fstat(img->fd, &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		img->dio_err = ESTALE;
		close(fd);
		return;
	}
	img->dio_fd = fd;
}

/* Read for the stage with O_DIRECT, counted as img__pread() counts.
 * @len and the file offset are DIO_ALIGN-aligned.  Return: 0; -1 when
 * the read is to go through the page cache instead (refused, failed or
 * short: img__pread() then reads it, and says and counts what is wrong
 * with the file). */
static int read_direct(struct img *img, uint64_t off, void *dst, size_t len,
		       enum img_read_source src)
{
	uint64_t at = off + img->offset; /* <= the file's size: open_file() */
	size_t done;
	int err;

	if (atomic_load_explicit(&img->changed, memory_order_relaxed))
		return -1;
	done = pread_whole(img->dio_fd, dst, len, at, &err);
	if (done < len) {
		/* Refused from the start, not cut short by the end. */
		if (!done && err == EINVAL &&
		    !atomic_exchange(&img->dio_refused, true))
			log_info(
				"image '%s': O_DIRECT read refused at %llu: staging through the page cache from now on",
				img->path, (unsigned long long)at);
		return -1;
	}
	count_read(img, len, src);
	atomic_fetch_add_explicit(&img->src_direct, len, memory_order_relaxed);
	return 0;
}

/* Of @len bytes at image offset @off into @dst, how many from the start
 * can be read with O_DIRECT: 0, or a multiple of DIO_ALIGN. */
static size_t direct_len(struct img *img, uint64_t off, const void *dst,
			 size_t len)
{
	if (img->dio_fd < 0 ||
	    atomic_load_explicit(&img->dio_refused, memory_order_relaxed) ||
	    (((off + img->offset) | (uintptr_t)dst) & (DIO_ALIGN - 1)))
		return 0;
	return len & ~(size_t)(DIO_ALIGN - 1);
}

/* struct stage_src.read: bytes for the staged copy.  @reader is the
 * struct img_read_ctx of the read that stages them, NULL for a stager.
 * With O_DIRECT what is aligned (a chunk read but for the image's last
 * page), through the page cache the rest. */
static int stage_read(void *arg, uint64_t off, void *dst, size_t len,
		      const void *reader)
{
	const struct img_read_ctx *rc = reader;
	enum img_read_source src = rc ? rc->src : IMG_READ_STAGER;
	struct img *img = arg;
	size_t head = direct_len(img, off, dst, len);
	int err;

	if (head && !read_direct(img, off, dst, head, src)) {
		off += head;
		dst = (char *)dst + head;
		len -= head;
		if (!len)
			return 0;
	}
	err = img__pread(img, off, dst, len, src);
	/* The staged copy serves these bytes from now on; keep the page
	 * cache from holding them a second time. */
	if (!err && !img->in_ram)
		posix_fadvise(img->fd, (off_t)(off + img->offset), (off_t)len,
			      POSIX_FADV_DONTNEED);
	return err;
}

int img_window_read(struct img *img, uint64_t off, void *dst, size_t len)
{
	uint64_t end;
	int err;

	if (ckd_add(&end, off, len) || end > img->sb.bytes_used)
		return IMG_CORRUPT(
			img,
			"window read of %zu bytes at %llu is past the end of the filesystem",
			len, (unsigned long long)off);
	err = img->seal ?
		      img__sealed_pread(img, off, dst, len, IMG_READ_ORDER) :
		      img__pread(img, off, dst, len, IMG_READ_ORDER);
	/* The window holds them until read: not the page cache too. */
	if (!err && !img->in_ram)
		posix_fadvise(img->fd, (off_t)(off + img->offset), (off_t)len,
			      POSIX_FADV_DONTNEED);
	return err;
}

bool img_staged(struct img *img, uint64_t off, uint64_t len)
{
	return stage_holds(img->stage, off, len);
}

/* struct stage_src.watch. */
static void stage_watch(void *arg)
{
	img_check_changed(arg);
}

int img__stage_open(struct img *img, const struct img_opts *o)
{
	struct stage_src src = { stage_read, stage_watch, img, img->path,
				 img->seal ? img__seal_chunk : NULL };
	struct stage_backing b = { .fd = -1, .writer = -1 };
	struct stage_opts so = {
		.size = img->sb.bytes_used,
		/* Planned before the tables are checked: the superblock's
		 * inode table position is not trusted here, only clamped. */
		.meta_start = img->sb.inode_table,
		.mode = o->stage,
		.budget = o->ram,
	};

	if (so.mode == STAGE_AUTO)
		so.mode = img->in_ram ? STAGE_NONE : STAGE_FULL;
	/* Also for stage=none: mountctl stage may start staging later. */
	if (!img->in_ram && !o->stage_cached && so.budget && so.size)
		open_direct(img);
	/* Only what will be staged is worth a backing copy. */
	if (o->backing && so.mode != STAGE_NONE && so.budget && so.size) {
		o->backing(o->backing_arg, img->fd, img->offset, so.size, &b);
		if (b.fd >= 0)
			so.backing = &b;
	}
	/* A copy whose one writer checked every chunk against this seal
	 * (root's copy of a site image): its chunks need no second hash. */
	if (so.backing && b.follow && b.checked_root && img->seal &&
	    !memcmp(b.checked_root, seal_root(img->seal), SEAL_HASH_SIZE)) {
		src.check = NULL;
		img->seal_trusted = true;
	}
	return stage_new(&src, &so, &img->stage);
}

struct stage *img_stage(struct img *img)
{
	return img->stage;
}

bool img_check_changed(struct img *img)
{
	struct stat st;

	if (atomic_load(&img->changed))
		return true;
	if (fstat(img->fd, &st))
		return false;
	if (!S_ISREG(st.st_mode))
		return false;
	/* Size, mtime and ctime: a user can set mtime back after writing,
	 * not ctime.  A ctime change that comes with a change of links is
	 * taken for the link: a rename over the image's path unlinks our
	 * inode, yet the bytes we read stay the same.  Any other (a write,
	 * chmod, touch) counts as a change. */
	if ((uint64_t)st.st_size == img->file_size + img->offset &&
	    st.st_mtim.tv_sec == img->mtime.tv_sec &&
	    st.st_mtim.tv_nsec == img->mtime.tv_nsec) {
		if (st.st_ctim.tv_sec == img->ctime.tv_sec &&
		    st.st_ctim.tv_nsec == img->ctime.tv_nsec)
			return false;
		if (st.st_nlink != img->nlink) {
			/* From here on, against the ctime after the link. */
			img->ctime = st.st_ctim;
			img->nlink = st.st_nlink;
			return false;
		}
	}
	if (!atomic_exchange(&img->changed, true))
		log_err("image '%s' changed while mounted; bytes not yet in RAM will fail with EIO (remount to serve the new image)",
			img->path);
	return true;
}

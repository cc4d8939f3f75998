// SPDX-License-Identifier: MIT
/*
 * This file implements the keeper's site copies, root's side
 * (keep_site.h): which images are the site's, and the jobs that make a
 * site copy.
 *
 * A site copy is made by root from the image file's own bytes, never by
 * a user's daemon, and once handed out no user process can change a byte
 * of it:
 *  - root opens the image itself, by the real path the user's descriptor
 *    resolves to (under a site= prefix), one component at a time
 *    (open_exact(): no symlink followed, no user's own FUSE mount
 *    entered, O_NONBLOCK so that no FIFO waits for a writer), and reads
 *    from it only if it is the very file the user's daemon opened: same
 *    device, inode, size, mtime and ctime.  So root reads no file the
 *    user could not read, and a path swapped meanwhile gets no copy;
 *  - the copy is a memfd of root's, mode 0400 (no user may reopen it
 *    through /proc/PID/fd, for writing or at all), mapped writable by
 *    root's own stage before it is sealed F_SEAL_FUTURE_WRITE (no write()
 *    and no new writable mapping, by anyone), and handed out as a
 *    descriptor opened for reading only (no write, no shared writable
 *    mapping, no F_ADD_SEALS); once staged it is sealed F_SEAL_WRITE and
 *    F_SEAL_SEAL;
 *  - each 128 KiB chunk is checked against the image's seal (the file
 *    IMAGE.sqcseal beside it, root's or the image owner's, and the root
 *    hash --site-roots names for the image) before it is marked complete
 *    in the copy's trailer: a chunk that does not match is never marked,
 *    and readers read it from the image themselves (where their own seal
 *    refuses it).
 * The copy is staged with lib/stage, as a daemon stages (the metadata
 * first, then the data in order, in 1 MiB reads paced to the storage,
 * with O_DIRECT where the file system takes it), and users' mounts follow
 * it (stage_backing.follow): each takes the chunks as they land and reads
 * the rest from its own descriptor meanwhile.
 *
 * Every job runs on a thread of its own: what it waits on is the site's
 * storage, never a user (a user's own FUSE mount is never a site image,
 * keep_site_of()), and a job that hangs there holds only its thread and
 * its place in the caps.  The keeper's loop waits on none of it: the
 * logic gives a job KEEP_SITE_READY_MS to be ready, then answers its GETs
 * as for users' own images.
 */
#define LOG_MOD "keeper"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "keep/keep.h"
#include "keep_site.h"
#include "stage/stage.h"
#include "util/err.h"
#include "util/log.h"
#include "util/mountinfo.h"

#define ROOTS_MAX (1u << 20) /* bytes of --site-roots read */
#define WAIT_STEP_MS 200 /* a job looks whether it is stopped this often */
#define BAD_LOGGED 8 /* chunks refused by the seal that a copy logs */
#define DIO_ALIGN 4096u

struct event {
	struct event *next;
	struct keep_site_event ev;
};

/* One site copy being made. */
struct job {
	struct job *next; /* in s->jobs, under s->lock */
	struct keep_site *s;
	uint64_t id;
	uid_t uid; /* whose GET began it */
	char path[PATH_MAX]; /* the image's real path */
	struct stat want; /* the user's descriptor's fstat() */
	uint64_t offset; /* where the image starts in the file */
	atomic_bool stop; /* keep_site_stop() */
	/* The job's thread's own: */
	int fd; /* the image, root's open, or -1 */
	int dio_fd; /* the same with O_DIRECT, or -1 */
	atomic_bool dio_off; /* O_DIRECT refused once */
	atomic_bool changed; /* the image changed while staging */
	struct seal *seal; /* or NULL */
	uint64_t size; /* bytes of the range: the superblock's bytes_used */
	_Atomic unsigned int bad; /* chunks the seal refused */
};

struct keep_site {
	struct keep_site_opts o;
	char prefixes[KEEP_SITE_PREFIXES_MAX];
	char roots[PATH_MAX];
	int wake;
	pthread_mutex_t lock; /* protects the fields below */
	struct job *jobs; /* not ended */
	struct event *events, **tail; /* not taken yet */
};

/* Whether @path is under one of @prefixes (':' separated), by whole
 * components: /data allows /data/x, not /database. */
static bool under(const char *prefixes, const char *path)
{
	const char *p = prefixes;

	while (*p) {
		size_t n = strcspn(p, ":");

		while (n > 1 && p[n - 1] == '/')
			n--;
		if (n == 1 && p[0] == '/')
			return path[0] == '/';
		if (n && !strncmp(path, p, n) &&
		    (path[n] == '/' || path[n] == '\0'))
			return true;
		p += strcspn(p, ":");
		if (*p == ':')
			p++;
	}
	return false;
}

int keep_site_new(const struct keep_site_opts *o, int wake,
		  struct keep_site **out)
{
	struct keep_site *s;
	const char *p;

	if (!o->prefixes || strlen(o->prefixes) >= KEEP_SITE_PREFIXES_MAX ||
	    (o->roots && strlen(o->roots) >= PATH_MAX))
		return -EINVAL;
	for (p = o->prefixes; *p; p += strcspn(p, ":"), p += *p == ':')
		if (*p != '/')
			return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	strcpy(s->prefixes, o->prefixes);
	s->o.prefixes = s->prefixes;
	if (o->roots) {
		strcpy(s->roots, o->roots);
		s->o.roots = s->roots;
	}
	s->wake = wake;
	s->tail = &s->events;
	pthread_mutex_init(&s->lock, NULL);
	*out = s;
	return 0;
}

unsigned int keep_site_busy(struct keep_site *s)
{
	unsigned int n = 0;

	pthread_mutex_lock(&s->lock);
	for (struct job *j = s->jobs; j; j = j->next)
		n++;
	pthread_mutex_unlock(&s->lock);
	return n;
}

unsigned int keep_site_free(struct keep_site *s, int wait_ms)
{
	struct keep_site_event ev;
	unsigned int left;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	for (struct job *j = s->jobs; j; j = j->next)
		atomic_store(&j->stop, true);
	pthread_mutex_unlock(&s->lock);
	for (int t = 0; keep_site_busy(s) && t < wait_ms; t += 20)
		usleep(20000);
	while (keep_site_next(s, &ev))
		if (ev.what == KEEP_SITE_READY)
			close(ev.fd);
	/* A job still in a call that does not return keeps @s: it goes
	 * with the process. */
	left = keep_site_busy(s);
	if (left)
		return left;
	pthread_mutex_destroy(&s->lock);
	free(s);
	return 0;
}

/* The mount of @fd: whether it is a user's own FUSE mount. */
struct fs_look {
	unsigned long id; /* the mount's id */
	bool found, users;
};

static int look_mount(char *line, struct fs_look *l)
{
	struct mountinfo_entry e;
	unsigned long id;
	const char *u;

	if (sscanf(line, "%lu", &id) != 1 || id != l->id ||
	    mountinfo_parse_line(line, &e))
		return 0;
	l->found = true;
	if (!strcmp(e.fstype, "fuse") || !strncmp(e.fstype, "fuse.", 5) ||
	    !strcmp(e.fstype, "fuseblk")) {
		u = strstr(e.super_opts, "user_id=");
		l->users = !u || strtoul(u + 8, NULL, 10) != 0;
	}
	return 1;
}

/*
 * Whether our descriptor @fd is on a file system a user may have made
 * (a FUSE mount of someone but root), or whose mount cannot be told: its
 * mount id from /proc/self/fdinfo, that mount in /proc/self/mountinfo.
 * Neither asks the file's own file system anything.
 */
static bool on_users_fs(int fd)
{
	struct fs_look l = { 0 };
	char path[48], info[512], *p, *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int in;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return true;
	n = read(in, info, sizeof(info) - 1);
	close(in);
	if (n <= 0)
		return true;
	info[n] = '\0';
	p = strstr(info, "mnt_id:");
	if (!p || sscanf(p, "mnt_id: %lu", &l.id) != 1)
		return true;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return true;
	while (getline(&line, &cap, f) > 0 && !look_mount(line, &l))
		;
	free(line);
	fclose(f);
	return !l.found || l.users;
}

bool keep_site_of(const struct keep_site *s, int fd, const struct stat *sb,
		  char *path, size_t cap)
{
	char link[40];
	ssize_t n;

	if (!s || !S_ISREG(sb->st_mode) || !sb->st_nlink)
		return false;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, cap - 1);
	if (n <= 0 || (size_t)n >= cap - 1)
		return false;
	path[n] = '\0';
	if (path[0] != '/' || !under(s->prefixes, path))
		return false;
	return !on_users_fs(fd);
}

/* Tell the keeper's loop. */
static void post(struct keep_site *s, const struct keep_site_event *ev)
{
	struct event *e = calloc(1, sizeof(*e));
	uint64_t one = 1;

	if (!e) {
		/* The logic gives it up after KEEP_SITE_READY_MS. */
		if (ev->what == KEEP_SITE_READY)
			close(ev->fd);
		log_err("out of memory: a site copy's news is lost");
		return;
	}
	e->ev = *ev;
	pthread_mutex_lock(&s->lock);
	*s->tail = e;
	s->tail = &e->next;
	pthread_mutex_unlock(&s->lock);
	if (write(s->wake, &one, sizeof(one)) < 0)
		log_warn("cannot wake the keeper's loop: %s", err_str(-errno));
}

bool keep_site_next(struct keep_site *s, struct keep_site_event *ev)
{
	struct event *e;

	pthread_mutex_lock(&s->lock);
	e = s->events;
	if (e) {
		s->events = e->next;
		if (!s->events)
			s->tail = &s->events;
	}
	pthread_mutex_unlock(&s->lock);
	if (!e)
		return false;
	*ev = e->ev;
	free(e);
	return true;
}

/*
 * Open @path for reading as root, one component at a time: each opened
 * O_PATH without following a symlink (one is refused), its mount looked
 * at before anything is asked of its file system (a user's own FUSE
 * mount, which could make root wait for good, is refused: a mount point
 * is crossed without asking the file system under it), then the file
 * itself reopened through our own descriptor, O_NONBLOCK (a FIFO does
 * not wait for a writer).  Return: the descriptor or -errno (-EPERM: a
 * user's file system on the way; -ELOOP: a symlink).
 */
static int open_exact(const char *path)
{
	char name[NAME_MAX + 1], self[40];
	const char *p = path;
	int dir, next, fd;
	struct stat sb;
	size_t n;

	if (path[0] != '/')
		return -EINVAL;
	dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	for (;;) {
		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (!n || n > NAME_MAX || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.')) {
			close(dir);
			return -EINVAL;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		next = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		close(dir); /* O_PATH: nothing to flush */
		if (next < 0)
			return -errno;
		if (on_users_fs(next)) {
			close(next);
			return -EPERM;
		}
		if (fstat(next, &sb)) {
			fd = -errno;
			close(next);
			return fd;
		}
		if (S_ISLNK(sb.st_mode)) {
			close(next);
			return -ELOOP;
		}
		if (!*(p + strspn(p, "/")))
			break; /* the file */
		if (!S_ISDIR(sb.st_mode)) {
			close(next);
			return -ENOTDIR;
		}
		dir = next;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", next);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	close(next);
	return fd;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Whether @sb is the file @want is of, unchanged. */
static bool same_image(const struct stat *sb, const struct stat *want)
{
	return S_ISREG(sb->st_mode) && sb->st_nlink &&
	       sb->st_dev == want->st_dev && sb->st_ino == want->st_ino &&
	       sb->st_size == want->st_size &&
	       same_time(&sb->st_mtim, &want->st_mtim) &&
	       same_time(&sb->st_ctim, &want->st_ctim);
}

/* The root hash --site-roots names for @path: 1 if it names one (set in
 * @root), 0 if not, -errno if the file cannot be trusted or read. */
static int named_root(const struct keep_site *s, const char *path,
		      uint8_t root[SEAL_HASH_SIZE])
{
	char *buf, *line, *save = NULL;
	struct stat sb;
	int fd, found = 0;
	ssize_t n;

	if (!s->o.roots)
		return 0;
	fd = open(s->o.roots, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_uid != 0 ||
	    sb.st_mode & 022) {
		close(fd);
		return -EPERM;
	}
	buf = malloc(ROOTS_MAX + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = pread(fd, buf, ROOTS_MAX, 0);
	close(fd);
	if (n < 0) {
		free(buf);
		return -errno;
	}
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char hex[SEAL_HEX_SIZE];
		char *p = line + strspn(line, " \t");

		if (*p == '#' || strlen(p) < SEAL_HEX_SIZE)
			continue;
		memcpy(hex, p, SEAL_HEX_SIZE - 1);
		hex[SEAL_HEX_SIZE - 1] = '\0';
		p += SEAL_HEX_SIZE - 1;
		if (*p != ' ' && *p != '\t')
			continue;
		p += strspn(p, " \t");
		if (*p == '*')
			p++; /* sha256sum's binary mark */
		p[strcspn(p, "\r")] = '\0';
		if (!strcmp(p, path) && !seal_parse_hex(hex, root))
			found = 1;
	}
	free(buf);
	return found;
}

/* Open the seal of the image (IMAGE.sqcseal beside its real path) and
 * learn its root, as the site wants it.  Return: the seal's descriptor;
 * -ENOENT if there is none and none is needed (*@root unset); -errno
 * (said) if the image may have no site copy. */
static int open_seal(struct job *j, uint8_t root[SEAL_HASH_SIZE])
{
	enum keep_site_seal mode = j->s->o.seal;
	uint8_t named[SEAL_HASH_SIZE];
	char path[PATH_MAX + sizeof(SEAL_SUFFIX)];
	int have, fd, err;
	struct stat sb;

	have = named_root(j->s, j->path, named);
	if (have < 0) {
		log_err("cannot read the site's root hashes '%s' (%s): no site copy of '%s'",
			j->s->o.roots, err_str(have), j->path);
		return have;
	}
	if (mode == KEEP_SITE_SEAL_ROOT && !have) {
		log_warn(
			"'%s' has no root hash in '%s': no site copy of it (seal it: mountctl seal)",
			j->path, j->s->o.roots);
		return -EKEYREJECTED;
	}
	snprintf(path, sizeof(path), "%s%s", j->path, SEAL_SUFFIX);
	fd = open_exact(path);
	if (fd == -ENOENT && mode == KEEP_SITE_SEAL_AUTO && !have)
		return -ENOENT;
	if (fd < 0) {
		log_warn("cannot open the seal '%s' (%s): no site copy of '%s'",
			 path, err_str(fd), j->path);
		return fd == -ENOENT ? -ENOKEY : fd;
	}
	/* As trusted as the image: root's or its owner's, written by
	 * them only. */
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) ||
	    (sb.st_uid != 0 && sb.st_uid != j->want.st_uid) ||
	    sb.st_mode & 022) {
		log_warn(
			"the seal '%s' is not the image owner's or root's alone: no site copy of '%s'",
			path, j->path);
		close(fd);
		return -EPERM;
	}
	fcntl(fd, F_SETFL, 0);
	err = seal_peek(fd, path, j->size, root);
	if (!err && have && memcmp(root, named, SEAL_HASH_SIZE))
		err = -EKEYREJECTED;
	if (err) {
		log_warn("the seal '%s' is refused (%s): no site copy of '%s'",
			 path,
			 err == -EKEYREJECTED ? "not the root the site names" :
						err_str(err),
			 j->path);
		close(fd);
		return err;
	}
	return fd;
}

/* Read @len bytes at @at of @fd into @dst, all of them.  Return: 0;
 * -EIO at the end of the file; -errno. */
static int pread_all(int fd, void *dst, size_t len, uint64_t at)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, (char *)dst + done, len - done,
				  (off_t)(at + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* struct stage_src.read: bytes of the image for the copy, with O_DIRECT
 * where aligned (the storage's client reads straight into the copy), the
 * rest through the page cache, dropped from it after. */
static int job_read(void *arg, uint64_t off, void *dst, size_t len,
		    const void *reader)
{
	struct job *j = arg;
	uint64_t at = j->offset + off;
	size_t head = 0;
	int err;

	(void)reader;
	if (atomic_load(&j->changed) || atomic_load(&j->stop))
		return atomic_load(&j->changed) ? -ESTALE : -ECANCELED;
	if (j->dio_fd >= 0 && !atomic_load(&j->dio_off) &&
	    !((at | (uintptr_t)dst) & (DIO_ALIGN - 1)))
		head = len & ~(size_t)(DIO_ALIGN - 1);
	if (head) {
		err = pread_all(j->dio_fd, dst, head, at);
		if (err == -EINVAL && !atomic_exchange(&j->dio_off, true))
			log_info(
				"'%s': O_DIRECT refused; staging its site copy through the page cache",
				j->path);
		if (!err) {
			off += head;
			at += head;
			dst = (char *)dst + head;
			len -= head;
		}
	}
	if (!len)
		return 0;
	err = pread_all(j->fd, dst, len, at);
	if (!err)
		posix_fadvise(j->fd, (off_t)at, (off_t)len,
			      POSIX_FADV_DONTNEED);
	return err;
}

/* struct stage_src.watch: the image changed under the copy (root's own
 * descriptor of the site's file: no user's file system). */
static void job_watch(void *arg)
{
	struct job *j = arg;
	struct stat sb;

	if (atomic_load(&j->changed) || fstat(j->fd, &sb))
		return;
	if (sb.st_size == j->want.st_size &&
	    same_time(&sb.st_mtim, &j->want.st_mtim) &&
	    (same_time(&sb.st_ctim, &j->want.st_ctim) ||
	     sb.st_nlink != j->want.st_nlink)) {
		/* A rename over its path (a link count change) leaves the
		 * bytes as they were. */
		j->want.st_ctim = sb.st_ctim;
		j->want.st_nlink = sb.st_nlink;
		return;
	}
	atomic_store(&j->changed, true);
	log_err("the site image '%s' changed while its copy was staged; staging it stopped (the next mount stages the new one)",
		j->path);
}

/* struct stage_src.check: a chunk against the seal, if the image has
 * one, before it is marked complete. */
static int job_check(void *arg, uint64_t off, const void *bytes, size_t len)
{
	struct job *j = arg;
	uint64_t bad = 0;
	int err;

	if (!j->seal)
		return 0;
	err = seal_check(j->seal, off, bytes, len, &bad);

	if (err == -EBADMSG && atomic_fetch_add(&j->bad, 1) < BAD_LOGGED)
		log_err("the site copy of '%s': block %llu (bytes %llu to %llu) does not match its seal; its chunk is never marked complete",
			j->path, (unsigned long long)bad,
			(unsigned long long)bad * SEAL_BLOCK_SIZE,
			(unsigned long long)(bad + 1) * SEAL_BLOCK_SIZE);
	return err;
}

/* Open the image for O_DIRECT reads (through root's own descriptor, the
 * same file), or leave dio_fd -1. */
static void open_direct(struct job *j)
{
	struct stat a;
	char path[40];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", j->fd);
	j->dio_fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (j->dio_fd >= 0 &&
	    (fstat(j->dio_fd, &a) || a.st_ino != j->want.st_ino ||
	     a.st_dev != j->want.st_dev)) {
		close(j->dio_fd);
		j->dio_fd = -1;
	}
}

/*
 * Tests only: with SQC_TEST_SITE_PAUSE=FILE in the keeper's environment,
 * a copy handed out waits before it is staged while FILE exists (10 s at
 * most), so that a test sees mounts serve from their own descriptors.
 * Root's environment only: the Prolog starts the keeper with PATH and
 * the sanitizers' variables alone.
 */
static void test_pause(struct job *j)
{
	const char *f = getenv("SQC_TEST_SITE_PAUSE");

	/* 120 s at most: as long as the test waits for the copy (10 s ran
	 * out under the load of a whole suite on 2 cores, while the test
	 * still read through the mounts). */
	for (int i = 0;
	     f && *f && i < 6000 && !access(f, F_OK) && !atomic_load(&j->stop);
	     i++)
		usleep(20000);
}

/* Stage the copy @st to its end, or until stopped.  Return: 0 when every
 * chunk was read; -errno of what stopped it. */
static int stage_through(struct job *j, struct stage *st)
{
	struct stage_stats ss;
	int err = stage_start(st, 0);

	while (!err && stage_wait(st, WAIT_STEP_MS) == -ETIMEDOUT)
		if (atomic_load(&j->stop))
			err = -ECANCELED;
	stage_stop(st);
	stage_get_stats(st, &ss);
	if (!err && atomic_load(&j->changed))
		err = -ESTALE;
	if (!err && ss.error)
		err = -ss.error;
	if (!err)
		log_info(
			"the site copy of '%s' is staged: %llu bytes in %.1f s%s",
			j->path, (unsigned long long)ss.staged, ss.seconds,
			ss.refused ?
				", chunks that do not match its seal left out" :
				"");
	return err;
}

/*
 * Make the copy: open and check the image, make the memfd, map it with
 * a stage, seal it against others' writes, hand it out (READY), open the
 * seal, stage.  Return: 0 once staged; -errno (before READY the caller
 * reports FAILED, after it ENDED).
 */
static int make_copy(struct job *j, bool *ready)
{
	struct keep_site_event ev = { .what = KEEP_SITE_READY, .id = j->id };
	struct stage_src src = { job_read, job_watch, j, j->path, job_check };
	struct stage_backing b = { .fd = -1, .writer = -1 };
	struct stage_opts so = { 0 };
	struct stage *st = NULL;
	struct stage_stats ss;
	struct img_super sup;
	struct keep_key key;
	struct stat sb;
	int seal_fd = -1, memfd = -1, err;
	char name[40];

	j->fd = open_exact(j->path);
	if (j->fd < 0) {
		log_warn("root cannot open '%s' (%s): no site copy", j->path,
			 j->fd == -EPERM ?
				 "a user's own file system is on its path" :
			 j->fd == -ELOOP ? "a symlink is on its path" :
					   err_str(j->fd));
		return j->fd;
	}
	if (fstat(j->fd, &sb))
		return -errno;
	if (!same_image(&sb, &j->want)) {
		log_warn(
			"'%s' is not the file the user's mount opened (replaced since?): no site copy",
			j->path);
		return -ESTALE;
	}
	fcntl(j->fd, F_SETFL, 0); /* reads wait for the storage */
	err = img_read_super(j->fd, j->offset, (uint64_t)sb.st_size, &sup);
	if (err) {
		log_warn(
			"'%s' is not a sound SquashFS image at %llu (%s): no site copy",
			j->path, (unsigned long long)j->offset, err_str(err));
		return err;
	}
	j->size = sup.bytes_used;
	seal_fd = open_seal(j, ev.root);
	if (seal_fd < 0 && seal_fd != -ENOENT)
		return seal_fd;
	ev.has_root = seal_fd >= 0;
	if (atomic_load(&j->stop)) {
		err = -ECANCELED;
		goto out_close;
	}
	keep_key_of(&j->want, j->offset, 0, &key);
	err = stage_backing_new_writer(j->size, &key, sizeof(key),
				       "squashcache-site", &memfd);
	if (err)
		goto out_close;
	/* Root's, and none but root may open it through /proc. */
	if (fchmod(memfd, 0400)) {
		err = -errno;
		goto out_close;
	}
	b.fd = memfd;
	b.key = &key;
	b.key_len = sizeof(key);
	so.size = j->size;
	so.meta_start = sup.inode_table;
	so.mode = STAGE_FULL;
	so.budget = j->size;
	so.backing = &b;
	err = stage_new(&src, &so, &st);
	if (err)
		goto out_close;
	stage_get_stats(st, &ss);
	if (ss.backing != STAGE_BACKING_USED) {
		err = -ENOMEM;
		goto out_free;
	}
	/* Mapped writable by this stage: from now on nobody (root
	 * included) writes it otherwise, nor maps it writable again. */
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE)) {
		err = -errno;
		goto out_free;
	}
	snprintf(name, sizeof(name), "/proc/self/fd/%d", memfd);
	ev.fd = open(name, O_RDONLY | O_CLOEXEC);
	if (ev.fd < 0) {
		err = -errno;
		goto out_free;
	}
	ev.range = j->size;
	post(j->s, &ev);
	*ready = true;
	/* The whole tree now, read and checked while the mounts serve from
	 * their own descriptors; before any chunk is read (stage_start()
	 * orders it before the stager threads' checks). */
	if (seal_fd >= 0) {
		err = seal_open(seal_fd, j->path, j->size, ev.root, &j->seal);
		if (err)
			goto out_end;
	}
	open_direct(j);
	test_pause(j);
	err = stage_through(j, st);

out_end:
	if (st)
		stage_backing_end(st);
out_free:
	stage_free(st);
	if (*ready && memfd >= 0 &&
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SEAL))
		log_warn("cannot seal the site copy of '%s' for good: %s",
			 j->path, err_str(-errno));
out_close:
	if (memfd >= 0)
		close(memfd);
	if (seal_fd >= 0)
		close(seal_fd);
	return err;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	struct keep_site *s = j->s;
	struct keep_site_event ev = { .id = j->id };
	bool ready = false;
	int err = make_copy(j, &ready);

	if (j->fd >= 0)
		close(j->fd);
	if (j->dio_fd >= 0)
		close(j->dio_fd);
	seal_free(j->seal);
	ev.what = ready ? KEEP_SITE_ENDED : KEEP_SITE_FAILED;
	ev.err = err;
	post(s, &ev);
	pthread_mutex_lock(&s->lock);
	for (struct job **p = &s->jobs; *p; p = &(*p)->next) {
		if (*p == j) {
			*p = j->next;
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
	free(j);
	return NULL;
}

int keep_site_start(struct keep_site *s, uint64_t id, uid_t uid,
		    const char *path, const struct stat *image, uint64_t offset)
{
	unsigned int all = 0, mine = 0;
	pthread_attr_t a;
	struct job *j;
	pthread_t t;
	int err;

	if (strlen(path) >= sizeof(j->path))
		return -ENAMETOOLONG;
	pthread_mutex_lock(&s->lock);
	for (struct job *o = s->jobs; o; o = o->next) {
		all++;
		mine += o->uid == uid;
	}
	pthread_mutex_unlock(&s->lock);
	if (all >= KEEP_SITE_JOBS || (uid != 0 && mine >= KEEP_SITE_USER_JOBS))
		return -EBUSY;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->s = s;
	j->id = id;
	j->uid = uid;
	strcpy(j->path, path);
	j->want = *image;
	j->offset = offset;
	j->fd = j->dio_fd = -1;
	pthread_mutex_lock(&s->lock);
	j->next = s->jobs;
	s->jobs = j;
	pthread_mutex_unlock(&s->lock);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	err = -pthread_create(&t, &a, job_main, j);
	pthread_attr_destroy(&a);
	if (err) {
		pthread_mutex_lock(&s->lock);
		for (struct job **p = &s->jobs; *p; p = &(*p)->next) {
			if (*p == j) {
				*p = j->next;
				break;
			}
		}
		pthread_mutex_unlock(&s->lock);
		free(j);
	}
	return err;
}

void keep_site_stop(struct keep_site *s, uint64_t id)
{
	pthread_mutex_lock(&s->lock);
	for (struct job *j = s->jobs; j; j = j->next)
		if (j->id == id)
			atomic_store(&j->stop, true);
	pthread_mutex_unlock(&s->lock);
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the keeper's server (keep_srv.h): the root process
 * that holds staged copies between mounts for every user of the node.
 * Its logic is lib/keep's (keeper_request(), ...); here are its socket,
 * the loop that serves the connections, each request's user from
 * SO_PEERCRED, the checks of what a user hands it, the checks of who
 * uses a copy, and its limits.  Everything is in memory: when it ends,
 * every copy is gone.
 *
 * Root never waits on a user.  One thread runs the loop; every socket is
 * non-blocking and every answer is queued and sent as the peer reads
 * (a peer that reads nothing for OUT_MS is closed).  A descriptor a user
 * sends may be of a file on the user's own FUSE server, or on a hung NFS
 * or Lustre server: its fstat() (GETATTR) and its close() (FLUSH) may
 * never return.  So on the loop's thread such a descriptor is only ever
 * asked fcntl(F_GETFL) and fcntl(F_GET_SEALS), which look at no file
 * system; a copy (PUT) must be a memfd (F_GET_SEALS proves shmem, whose
 * fstat() and close() wait on nobody), and anything else is fstat()ed and
 * closed on a thread of its own, a job: KEEP_SRV_USER_JOBS of a user at
 * once (their connections are not read meanwhile), KEEP_SRV_JOBS of all
 * users, and KEEP_SRV_JOB_MS for the request it serves (then its
 * connection is closed; the thread ends when the call returns, if ever,
 * still counted against its user).  Every descriptor of a message is
 * received (none left for the kernel to release here); those beyond the
 * one its request names are closed by one job.
 *
 * Bounded.  A user but root has at most KEEP_SRV_USER_CONNS connections
 * and KEEP_USER_COPIES copies; the connections and copies of all fit in
 * the descriptors the keeper has (RLIMIT_NOFILE, raised at start), with
 * ROOT_CONNS connections only root may take; accept() out of descriptors
 * takes and refuses one connection with a descriptor kept spare for it,
 * so the loop never spins on a listening socket it cannot serve.  A
 * connection's socket, refused or let go of, may hold messages a user
 * queued, with descriptors in them, which its last close releases: it
 * is closed by the reaper, a child process (keep_reap.c), never here.
 *
 * Site copies (--site, keep_site.c): a GET's job also tells whether the
 * image is the site's (its real path, its mount); the logic then starts
 * a job of root's that makes the one copy of it for all users, whose
 * reports (ready, failed, ended) come back through the same eventfd.
 *
 * In use.  A copy counts as in use (outside the budget) only while the
 * process at the other end of a connection that uses it is alive, runs
 * the daemon (by device and inode) and holds the copy's descriptor
 * (proc_holds_file(), from /proc without kcmp(2)): looked at on the tick
 * after it got the copy, then every
 * LOOK_MS.  Anything else (a client that keeps its connection and drops
 * the copy, a program that is not the daemon) counts against the budget,
 * as a kept copy does, and may be dropped.
 */
#define LOG_MOD "keeper"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "keep/keep.h"
#include "keep_reap.h"
#include "keep_site.h"
#include "keep_srv.h"
#include "util/err.h"
#include "util/log.h"
#include "util/memlimit.h"
#include "util/proc.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

#define TICK_MS 1000 /* the budget, the floor, the checks */
#define LOOK_MS 5000 /* a connection's peer is looked at again */
#define OUT_MS 10000 /* a peer that reads none of its answers */
#define ROOT_CONNS 16 /* connections only root may take */
#define ACCEPTS 64 /* accepted at one wake, at most */
#define PAUSE_MS 100 /* no descriptor even for the spare: listen later */
#define EXIT_WAIT_MS 1000 /* at exit, jobs still in a user's call */

struct server;

/* A look at a user's descriptor, on a thread of its own. */
struct job {
	struct job *next; /* in the server's done list */
	struct server *sv;
	uint64_t serial; /* of the connection it is for; 0: none */
	uid_t uid; /* whose descriptor */
	int fd; /* the descriptor, closed by the job */
	bool stat_it; /* GET: fstat() it first */
	struct keep_msg m; /* the request */
	struct stat sb; /* fstat() of it */
	int err; /* 0 or -errno of fstat(), -EINVAL: not a regular file */
	bool site; /* GET: a site image (keep_site_of()), at path */
	char path[PATH_MAX];
	bool look; /* a look at a peer (fd: our copy's memfd, dup'd) */
	pid_t pid; /* the peer looked at */
	int pidfd; /* its pidfd, dup'd, or -1 */
	int theirs; /* the descriptor it named, or -1 */
	bool used; /* the look's answer: a live daemon holds the copy */
	int *more; /* more descriptors to close (a message's extras) */
	unsigned int nmore;
};

/* A connection. */
struct peer {
	int fd; /* the socket, also its id in the keeper */
	uid_t uid; /* its peer's, SO_PEERCRED */
	pid_t pid; /* its peer, SO_PEERCRED */
	int pidfd; /* its peer, or -1 */
	uint64_t serial; /* unique: fds are reused */
	struct job *job; /* the look at its GET's image, or NULL */
	int64_t job_since; /* ms, when that look started */
	int64_t out_since; /* ms, since answers wait to be sent; 0: none */
	int64_t next_look; /* ms, when its peer is looked at next */
	struct job *look; /* the look at its peer under way, or NULL */
	int64_t look_since; /* ms, when that look started */
	int64_t looked_at; /* ms, when a look last answered; 0: never */
	int theirs; /* the sender's descriptor of the copy, as it said in
		       a PING (checked, not trusted), or -1 */
};

struct user {
	uid_t uid;
	unsigned int conns; /* connections */
	unsigned int jobs; /* jobs of theirs not ended */
};

struct server {
	const struct keep_srv_opts *o;
	struct keeper *k;
	struct keep_site *site; /* site copies, or NULL */
	struct keep_reap *reap; /* closes refused connections */
	int listen_fd;
	int root_fd; /* root's own listening socket (KEEP_ROOT_SUFFIX) */
	char root_name[NAME_MAX + 1]; /* its name in the directory */
	int dir_fd; /* the socket's directory, checked */
	const char *name; /* the socket's name in it */
	int wake_fd; /* eventfd: a job ended */
	int spare_fd; /* /dev/null, given up to accept() at EMFILE */
	struct peer *peers;
	size_t npeers;
	size_t max_conns; /* from RLIMIT_NOFILE */
	struct pollfd *pfd; /* [0] listen, [1] wake, [2] reaper, then peers */
	struct user *users;
	size_t nusers;
	unsigned int jobs; /* of users but root, not ended */
	struct job *unstarted; /* jobs whose thread could not start yet */
	pthread_mutex_t lock; /* protects done */
	struct job *done; /* jobs ended */
	uint64_t serial; /* connections so far */
	int64_t listen_at; /* ms: listen again from then */
	bool said_emfile;
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

unsigned long keep_srv_nofile(void)
{
	struct rlimit rl = { KEEP_SRV_NOFILE, KEEP_SRV_NOFILE };

	if (setrlimit(RLIMIT_NOFILE, &rl) && !getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024;
	return rl.rlim_cur == RLIM_INFINITY ? KEEP_SRV_NOFILE :
					      (unsigned long)rl.rlim_cur;
}

static struct user *user_of(struct server *sv, uid_t uid)
{
	struct user *u;

	for (size_t i = 0; i < sv->nusers; i++)
		if (sv->users[i].uid == uid)
			return &sv->users[i];
	u = realloc(sv->users, (sv->nusers + 1) * sizeof(*u));
	if (!u)
		return NULL;
	sv->users = u;
	u = &sv->users[sv->nusers++];
	*u = (struct user){ .uid = uid };
	return u;
}

static struct peer *peer_of(struct server *sv, uint64_t serial)
{
	for (size_t i = 0; i < sv->npeers; i++)
		if (sv->peers[i].serial == serial && sv->peers[i].fd >= 0)
			return &sv->peers[i];
	return NULL;
}

/*
 * On a look's thread: whether the peer @j looks at is a live daemon that
 * holds the copy (j->fd).  Each step reads /proc of a user's process, and
 * some of /proc waits on the process's exec lock, which an execve() of
 * the user's holds while it flushes a user's FUSE file: hence a thread.
 */
static bool peer_uses(struct server *sv, const struct job *j)
{
	struct pollfd alive = { .fd = j->pidfd, .events = POLLIN };
	dev_t dev;
	ino_t ino;
	int held;

	if (j->pidfd < 0 || poll(&alive, 1, 0) != 0)
		return false;
	if (sv->o->has_daemon &&
	    (proc_exe_id(j->pid, &dev, &ino) || dev != sv->o->daemon_dev ||
	     ino != sv->o->daemon_ino))
		return false;
	/* The descriptor the daemon named, else a walk of its descriptors
	 * (at most PROC_FD_WALK_MAX: a user's process may hold very many). */
	held = j->theirs >= 0 ? proc_holds_file_as(j->pid, j->fd, j->theirs) :
				proc_holds_file(j->pid, j->fd);
	if (held != 1)
		return false;
	/* Alive after the looks: they were at that process. */
	return poll(&alive, 1, 0) == 0;
}

/* The job's thread: the calls a user's file system may make wait. */
static void *job_main(void *arg)
{
	struct job *j = arg;
	struct server *sv = j->sv;
	uint64_t one = 1;

	if (j->look) {
		j->used = peer_uses(sv, j);
		if (j->pidfd >= 0)
			close(j->pidfd);
	} else if (j->stat_it) {
		if (fstat(j->fd, &j->sb))
			j->err = -errno;
		else if (!S_ISREG(j->sb.st_mode))
			j->err = -EINVAL;
		else
			j->site = keep_site_of(sv->site, j->fd, &j->sb, j->path,
					       sizeof(j->path));
	}
	close(j->fd);
	for (unsigned int i = 0; i < j->nmore; i++)
		close(j->more[i]);
	pthread_mutex_lock(&sv->lock);
	j->next = sv->done;
	sv->done = j;
	pthread_mutex_unlock(&sv->lock);
	if (write(sv->wake_fd, &one, sizeof(one)) < 0)
		log_warn("cannot wake the keeper's loop: %s", err_str(-errno));
	return NULL;
}

/* Start @j's thread, or leave it for the next tick.  The descriptor is
 * the job's from here on. */
static void job_start(struct server *sv, struct job *j)
{
	pthread_attr_t a;
	pthread_t t;
	int err;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 << 10);
	err = pthread_create(&t, &a, job_main, j);
	pthread_attr_destroy(&a);
	if (err) {
		j->next = sv->unstarted;
		sv->unstarted = j;
	}
}

/* A job for @uid's descriptor @fd (for the connection @serial, or 0).
 * Return: the job, or NULL (out of memory: the descriptor is left in the
 * server's table, never closed here). */
/* Count @j, made by the caller, against @uid and start it. */
static void job_new_from(struct server *sv, uid_t uid, struct job *j)
{
	struct user *u = user_of(sv, uid);

	j->sv = sv;
	j->uid = uid;
	if (u)
		u->jobs++;
	if (uid != 0)
		sv->jobs++;
	job_start(sv, j);
}

static struct job *job_new(struct server *sv, uid_t uid, int fd, bool stat_it,
			   uint64_t serial, const struct keep_msg *m)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		log_err("out of memory: a descriptor of uid %u is left open",
			(unsigned int)uid);
		return NULL;
	}
	j->fd = fd;
	j->stat_it = stat_it;
	j->serial = serial;
	if (m)
		j->m = *m;
	job_new_from(sv, uid, j);
	return j;
}

/* Let go of a descriptor @uid sent: closed here if it is shmem, which no
 * user can make wait, else by a job. */
static void dispose(struct server *sv, uid_t uid, int fd)
{
	if (fd < 0)
		return;
	if (fcntl(fd, F_GET_SEALS) >= 0)
		close(fd);
	else
		job_new(sv, uid, fd, false, 0, NULL);
}

/* Let go of the descriptors a message carried beside the one its request
 * names: all closed by one job (a user's TCP socket can linger in its
 * close for as long as its SO_LINGER says). */
static void dispose_more(struct server *sv, uid_t uid, const int *fds,
			 unsigned int n)
{
	int *more = n ? malloc(n * sizeof(*more)) : NULL;
	struct job *j;

	if (!more) {
		if (n)
			log_err("out of memory: %u descriptors of uid %u are left open",
				n, (unsigned int)uid);
		return;
	}
	memcpy(more, fds, n * sizeof(*more));
	j = calloc(1, sizeof(*j));
	if (!j) {
		free(more);
		log_err("out of memory: %u descriptors of uid %u are left open",
			n, (unsigned int)uid);
		return;
	}
	j->fd = -1;
	j->more = more;
	j->nmore = n;
	job_new_from(sv, uid, j);
}

static void close_peer(struct server *sv, struct peer *p)
{
	struct user *u = user_of(sv, p->uid);

	keeper_closed(sv->k, p->fd);
	/* Closed by the reaper: the close releases what is still queued on
	 * the socket, descriptors a user sent among them, which can wait. */
	keep_reap_take(sv->reap, p->fd, p->uid);
	if (u && u->conns)
		u->conns--;
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->job)
		p->job->serial = 0; /* its answer is nobody's now */
	if (p->look)
		p->look->serial = 0;
	p->fd = -1;
}

/* Send what is queued for @p, as far as its socket takes it. */
static void flush(struct server *sv, struct peer *p, int64_t now)
{
	struct keep_msg m;
	int fd, err;

	while (p->fd >= 0 && keeper_answer_next(sv->k, p->fd, &m, &fd)) {
		err = keep_send(p->fd, &m, fd);
		if (err == -EAGAIN) {
			if (!p->out_since)
				p->out_since = now;
			return;
		}
		if (err) {
			close_peer(sv, p);
			return;
		}
		keeper_answer_sent(sv->k, p->fd);
	}
	p->out_since = 0;
}

static void flush_all(struct server *sv, int64_t now)
{
	for (size_t i = 0; i < sv->npeers; i++)
		if (sv->peers[i].fd >= 0)
			flush(sv, &sv->peers[i], now);
}

static void request(struct server *sv, struct peer *p, const struct keep_msg *m,
		    const struct stat *sb, int fd)
{
	if (keeper_request(sv->k, p->fd, m, sb, fd))
		close_peer(sv, p);
}

/* Whether @p's next message may be read: nothing of it under way, and
 * its user (but root) within their jobs. */
static bool readable(struct server *sv, const struct peer *p)
{
	struct keep_msg m;
	struct user *u;
	int fd;

	if (p->fd < 0 || p->job || keeper_answer_next(sv->k, p->fd, &m, &fd))
		return false;
	if (p->uid == 0)
		return true;
	u = user_of(sv, p->uid);
	return u && u->jobs < KEEP_SRV_USER_JOBS && sv->jobs < KEEP_SRV_JOBS;
}

/* The process @pid sends on @p's connection now. */
static void new_sender(struct peer *p, pid_t pid)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pid = pid;
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	p->theirs = -1; /* until it says which is its copy */
	p->next_look = 0;
}

/* One message of @p. */
static void serve_one(struct server *sv, struct peer *p, int64_t now)
{
	int fds[KEEP_MSG_FDS], fd, err, fl;
	struct keep_msg m;
	struct ucred cr;
	unsigned int n;

	/* Every descriptor received, none dropped by the kernel on this
	 * thread (keep_recv_fds() says why); those beyond the first go. */
	err = keep_recv_fds(p->fd, &m, fds, &n, &cr);
	fd = n ? fds[0] : -1;
	if (n > 1)
		dispose_more(sv, p->uid, fds + 1, n - 1);
	if (err == -EAGAIN || err == -EWOULDBLOCK)
		return;
	if (err) {
		dispose(sv, p->uid, fd);
		close_peer(sv, p);
		return;
	}
	/* Another process of the peer's user sends now (a daemon detached
	 * into a child): it is the one looked at from now on. */
	if (cr.pid > 0 && cr.pid != p->pid && cr.uid == p->uid)
		new_sender(p, cr.pid);
	if (m.op == KEEP_PING && m.b && m.b <= INT32_MAX) {
		p->theirs = (int)(m.b - 1);
		p->next_look = 0;
	}
	switch (m.op) {
	case KEEP_GET:
		if (fd < 0)
			break;
		/* A regular file opened for reading: O_PATH proves nothing,
		 * and F_GETFL looks at no file system. */
		fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fl & O_PATH || (fl & O_ACCMODE) == O_WRONLY) {
			dispose(sv, p->uid, fd);
			fd = -1;
			break;
		}
		p->job = job_new(sv, p->uid, fd, true, p->serial, &m);
		p->job_since = now;
		return;
	case KEEP_PUT:
		if (fd >= 0 && fcntl(fd, F_GET_SEALS) < 0) {
			dispose(sv, p->uid, fd); /* not a memfd */
			fd = -1;
		}
		request(sv, p, &m, NULL, fd);
		return;
	default:
		dispose(sv, p->uid, fd);
		fd = -1;
		break;
	}
	request(sv, p, &m, NULL, fd);
}

/* What the site copies' jobs report, to the keeper's logic. */
static void site_news(struct server *sv)
{
	struct keep_site_event ev;

	while (sv->site && keep_site_next(sv->site, &ev)) {
		switch (ev.what) {
		case KEEP_SITE_READY:
			if (keeper_site_ready(sv->k, ev.id, ev.fd, ev.range,
					      ev.has_root ? ev.root : NULL)) {
				close(ev.fd); /* shmem: waits on nobody */
				keep_site_stop(sv->site, ev.id);
			}
			break;
		case KEEP_SITE_FAILED:
			keeper_site_failed(sv->k, ev.id, ev.err);
			break;
		default:
			keeper_site_ended(sv->k, ev.id, ev.err);
			break;
		}
	}
}

/* keeper_opts.site_start and site_stop. */
static int site_start(void *arg, uint64_t id, uid_t uid, const char *path,
		      const struct stat *image, uint64_t offset)
{
	struct server *sv = arg;

	return keep_site_start(sv->site, id, uid, path, image, offset);
}

static void site_stop(void *arg, uint64_t id)
{
	struct server *sv = arg;

	keep_site_stop(sv->site, id);
}

/* Jobs that ended: their GETs are answered. */
static void jobs_ended(struct server *sv)
{
	struct job *j, *next;
	uint64_t n;

	if (read(sv->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("cannot read the keeper's wake: %s", err_str(-errno));
	pthread_mutex_lock(&sv->lock);
	j = sv->done;
	sv->done = NULL;
	pthread_mutex_unlock(&sv->lock);
	for (; j; j = next) {
		struct user *u = user_of(sv, j->uid);
		struct peer *p = j->serial ? peer_of(sv, j->serial) : NULL;

		next = j->next;
		if (u && u->jobs)
			u->jobs--;
		free(j->more);
		if (j->uid != 0 && sv->jobs)
			sv->jobs--;
		if (j->look) {
			if (p && p->look == j) {
				p->look = NULL;
				p->looked_at = now_ms();
				keeper_set_used(sv->k, p->fd, j->used);
			}
		} else if (p && p->job == j) {
			p->job = NULL;
			if (!j->err && j->site) {
				if (keeper_get_site(sv->k, p->fd, &j->m, &j->sb,
						    j->path))
					close_peer(sv, p);
			} else {
				request(sv, p, &j->m, j->err ? NULL : &j->sb,
					-1);
			}
		}
		free(j);
	}
	site_news(sv);
}

static void look(struct server *sv, struct peer *p, int64_t now)
{
	int copy = keeper_copy_fd(sv->k, p->fd);
	struct user *u = user_of(sv, p->uid);
	struct job *j;

	if (copy < 0)
		return;
	/* A look that does not answer within its budget, or none for that
	 * long (its user's jobs all taken): no daemon is known to use it. */
	if (p->look ? now - p->look_since > KEEP_SRV_JOB_MS :
		      p->looked_at &&
			      now - p->looked_at > LOOK_MS + KEEP_SRV_JOB_MS)
		keeper_set_used(sv->k, p->fd, false);
	if (p->look || now < p->next_look || !u ||
	    (p->uid != 0 &&
	     (u->jobs >= KEEP_SRV_USER_JOBS || sv->jobs >= KEEP_SRV_JOBS)))
		return;
	j = calloc(1, sizeof(*j));
	if (!j)
		return;
	j->fd = fcntl(copy, F_DUPFD_CLOEXEC, 0);
	j->pidfd = p->pidfd >= 0 ? fcntl(p->pidfd, F_DUPFD_CLOEXEC, 0) : -1;
	if (j->fd < 0) {
		if (j->pidfd >= 0)
			close(j->pidfd);
		free(j);
		return;
	}
	j->sv = sv;
	j->uid = p->uid;
	j->serial = p->serial;
	j->look = true;
	j->pid = p->pid;
	j->theirs = p->theirs;
	u->jobs++;
	if (p->uid != 0)
		sv->jobs++;
	p->look = j;
	p->look_since = now;
	p->next_look = now + LOOK_MS;
	job_start(sv, j);
}

static void tick(struct server *sv, int64_t now)
{
	struct job *j;
	uint64_t avail;

	for (size_t i = 0; i < sv->npeers; i++) {
		struct peer *p = &sv->peers[i];

		if (p->fd < 0)
			continue;
		if (p->job && now - p->job_since > KEEP_SRV_JOB_MS) {
			log_warn(
				"a descriptor uid %u sent did not answer within %d ms; closing the connection",
				(unsigned int)p->uid, KEEP_SRV_JOB_MS);
			close_peer(sv, p);
			continue;
		}
		if (p->out_since && now - p->out_since > OUT_MS) {
			close_peer(sv, p);
			continue;
		}
		look(sv, p, now);
	}
	keeper_tick(sv->k);
	avail = memlimit_available();
	if (avail < sv->o->floor)
		keeper_evict(sv->k, sv->o->floor - avail);
	j = sv->unstarted;
	sv->unstarted = NULL;
	while (j) {
		struct job *next = j->next;

		job_start(sv, j);
		j = next;
	}
}

/* Hand a connection refused at accept to the reaper: its closer runs as
 * the connecting user (SO_PEERCRED; nobody's if that cannot be read). */
static void reap_refused(struct server *sv, int c)
{
	struct ucred cr = { .uid = 65534 };
	socklen_t len = sizeof(cr);

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		cr.uid = 65534;
	keep_reap_take(sv->reap, c, cr.uid);
}

/* Take one connection, from root's own socket (@root) or the public one.
 * Return: false once there is none to take. */
static bool accept_one(struct server *sv, int64_t now, bool root)
{
	int lfd = root ? sv->root_fd : sv->listen_fd;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct user *u;
	struct peer *p;
	int c, pidfd = -1;

	c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c < 0) {
		if (errno != EMFILE && errno != ENFILE)
			return errno == EINTR || errno == ECONNABORTED;
		/* Out of descriptors: take the connection with the spare
		 * one and close it, so that it does not wait on. */
		if (!sv->said_emfile)
			log_warn("out of descriptors: connections are refused");
		sv->said_emfile = true;
		if (sv->spare_fd >= 0)
			close(sv->spare_fd);
		c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0)
			reap_refused(sv, c);
		sv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (sv->spare_fd < 0)
			sv->listen_at = now + PAUSE_MS;
		return false;
	}
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) ||
	    setsockopt(c, SOL_SOCKET, SO_PASSCRED, &(int){ 1 }, sizeof(int)))
		goto out_close;
	u = user_of(sv, cr.uid);
	/* Root's socket is 0600: only root reaches it. */
	if (!u || (root && cr.uid != 0) || sv->npeers >= sv->max_conns ||
	    (cr.uid != 0 && (u->conns >= KEEP_SRV_USER_CONNS ||
			     sv->npeers + ROOT_CONNS >= sv->max_conns)))
		goto out_close;
	len = sizeof(pidfd);
	if (getsockopt(c, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len))
		pidfd = (int)syscall(SYS_pidfd_open, cr.pid, 0);
	if (keeper_open(sv->k, c, cr.uid, keep_pidns_of(pidfd)))
		goto out_close;
	p = &sv->peers[sv->npeers++];
	*p = (struct peer){ .fd = c,
			    .uid = cr.uid,
			    .pid = cr.pid,
			    .pidfd = pidfd,
			    .theirs = -1,
			    .serial = ++sv->serial };
	u->conns++;
	return true;

out_close:
	if (pidfd >= 0)
		close(pidfd);
	reap_refused(sv, c);
	return true;
}

/* Drop the closed peers from the table. */
static void compact(struct server *sv)
{
	size_t n = 0;

	for (size_t i = 0; i < sv->npeers; i++)
		if (sv->peers[i].fd >= 0)
			sv->peers[n++] = sv->peers[i];
	sv->npeers = n;
}

static void serve(struct server *sv)
{
	int64_t next_tick = now_ms() + TICK_MS;

	while (!stopping) {
		int64_t now = now_ms();
		nfds_t n = 4;
		int got;

		/* Not listening while refused connections wait to be closed
		 * (as many as keep_reap takes): connections wait unaccepted.
		 * Root's own socket is listened on all the same: no user's
		 * flood of connections keeps root out. */
		sv->pfd[0] = (struct pollfd){
			.fd = now >= sv->listen_at &&
					      !keep_reap_full(sv->reap) ?
				      sv->listen_fd :
				      -1,
			.events = POLLIN
		};
		sv->pfd[1] =
			(struct pollfd){ .fd = sv->wake_fd, .events = POLLIN };
		sv->pfd[2] = (struct pollfd){ .fd = keep_reap_fd(sv->reap),
					      .events = POLLIN };
		sv->pfd[3] = (struct pollfd){ .fd = now >= sv->listen_at ?
							    sv->root_fd :
							    -1,
					      .events = POLLIN };
		for (size_t i = 0; i < sv->npeers; i++) {
			struct peer *p = &sv->peers[i];

			sv->pfd[n++] = (struct pollfd){
				.fd = p->fd,
				.events =
					(short)((readable(sv, p) ? POLLIN : 0) |
						(p->out_since ? POLLOUT : 0))
			};
		}
		got = poll(sv->pfd, n,
			   (int)(next_tick > now ? next_tick - now : 0));
		if (got < 0 && errno != EINTR)
			break;
		now = now_ms();
		if (got > 0 && sv->pfd[1].revents)
			jobs_ended(sv);
		for (size_t i = 0; got > 0 && i < sv->npeers; i++) {
			struct peer *p = &sv->peers[i];
			short re = sv->pfd[i + 4].revents;

			if (p->fd < 0 || !re)
				continue;
			/* Looked at again: a request served before this one
			 * in this round may have taken the user's last job. */
			if (re & POLLIN) {
				if (readable(sv, p))
					serve_one(sv, p, now);
			} else if (re & (POLLHUP | POLLERR | POLLNVAL))
				close_peer(sv, p);
		}
		if (got > 0 && sv->pfd[3].revents & POLLIN)
			for (int i = 0;
			     i < ACCEPTS && accept_one(sv, now, true); i++)
				;
		if (got > 0 && sv->pfd[0].revents & POLLIN)
			for (int i = 0;
			     i < ACCEPTS && !keep_reap_full(sv->reap) &&
			     accept_one(sv, now, false);
			     i++)
				;
		keep_reap_run(sv->reap);
		flush_all(sv, now);
		if (now >= next_tick) {
			tick(sv, now);
			flush_all(sv, now);
			next_tick = now + TICK_MS;
		}
		compact(sv);
	}
}

/* Jobs not ended, waited for until @end (ms). */
static unsigned int jobs_left(struct server *sv, int64_t end)
{
	for (;;) {
		unsigned int n = 0;

		jobs_ended(sv);
		for (size_t i = 0; i < sv->nusers; i++)
			n += sv->users[i].jobs;
		if (!n || now_ms() >= end)
			return n;
		poll(&(struct pollfd){ .fd = sv->wake_fd, .events = POLLIN }, 1,
		     50);
	}
}

static void server_free(struct server *sv)
{
	close(sv->wake_fd);
	if (sv->spare_fd >= 0)
		close(sv->spare_fd);
	close(sv->dir_fd);
	pthread_mutex_destroy(&sv->lock);
	free(sv->users);
	free(sv->pfd);
	free(sv->peers);
	free(sv);
}

/* Listen at @name in the checked directory, with @mode.  Return: the
 * socket, or -errno. */
static int listen_one(struct server *sv, const char *name, mode_t mode)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s, err;

	/* Bound through the checked directory's descriptor, not its path. */
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path),
			     "/proc/self/fd/%d/%s", sv->dir_fd,
			     name) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	unlinkat(sv->dir_fd, name, 0);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    fchmodat(sv->dir_fd, name, mode, 0) || listen(s, 128)) {
		err = -errno;
		if (s >= 0)
			close(s);
		return err;
	}
	return s;
}

/* Listen at the socket, in its checked directory, mode 0666, and at
 * root's beside it, mode 0600.  Return: 0 or -errno (said). */
static int listen_at(struct server *sv)
{
	int probe, err;

	sv->dir_fd = keep_dir_open(sv->o->socket, true, &sv->name);
	if (sv->dir_fd < 0) {
		err = sv->dir_fd;
		fprintf(stderr,
			"mountctl keeper: the directory of '%s' must be root's and writable by root only: %s\n",
			sv->o->socket, err_str(err));
		return err;
	}
	if (!keep_connect(sv->o->socket, 1000, &probe)) {
		close(probe);
		fprintf(stderr,
			"mountctl keeper: one already listens at '%s'\n",
			sv->o->socket);
		return -EADDRINUSE;
	}
	if ((size_t)snprintf(sv->root_name, sizeof(sv->root_name), "%s%s",
			     sv->name,
			     KEEP_ROOT_SUFFIX) >= sizeof(sv->root_name)) {
		err = -ENAMETOOLONG;
		goto out_said;
	}
	/* Root's first: a root client finds it whenever the public one is
	 * there. */
	sv->root_fd = listen_one(sv, sv->root_name, 0600);
	if (sv->root_fd < 0) {
		err = sv->root_fd;
		goto out_said;
	}
	sv->listen_fd = listen_one(sv, sv->name, 0666);
	if (sv->listen_fd < 0) {
		err = sv->listen_fd;
		close(sv->root_fd);
		unlinkat(sv->dir_fd, sv->root_name, 0);
		goto out_said;
	}
	return 0;

out_said:
	fprintf(stderr, "mountctl keeper: cannot listen at '%s': %s\n",
		sv->o->socket, err_str(err));
	return err;
}

int keep_serve(const struct keep_srv_opts *o)
{
	struct keeper_opts ko = { .budget = o->budget,
				  .site_budget = o->site_budget };
	struct keep_site_opts so = { .prefixes = o->site,
				     .seal = (enum keep_site_seal)o->site_seal,
				     .roots = o->site_roots };
	unsigned long nofile, reserve;
	struct server *sv;
	unsigned int left;

	if (geteuid() != 0) {
		fprintf(stderr,
			"mountctl keeper: must run as root (it holds every user's copies)\n");
		return 1;
	}
	nofile = keep_srv_nofile();
	/* Per connection: its socket, its pidfd, a copy, an answer's dup;
	 * plus jobs (a job may hold a message's every descriptor: with the
	 * table full, a receive would leave descriptors to the kernel to
	 * release on the loop), sockets for the reaper, the spare, the
	 * loop's own. */
	sv = calloc(1, sizeof(*sv));
	if (!sv)
		return 1;
	sv->o = o;
	/* First, while the keeper holds nothing of a user's and runs no
	 * thread: the reaper is forked with what it holds. */
	if (keep_reap_new(&sv->reap)) {
		fprintf(stderr, "mountctl keeper: cannot start\n");
		free(sv);
		return 1;
	}
	reserve = KEEP_SRV_JOBS * KEEP_MSG_FDS + KEEP_REAP_PENDING + 128;
	sv->max_conns = nofile > reserve + 4 * ROOT_CONNS ?
				(nofile - reserve) / 4 :
				ROOT_CONNS;
	ko.max_copies = (unsigned int)sv->max_conns;
	sv->peers = calloc(sv->max_conns, sizeof(*sv->peers));
	sv->pfd = calloc(sv->max_conns + 4, sizeof(*sv->pfd));
	pthread_mutex_init(&sv->lock, NULL);
	sv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	sv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (o->site && o->site[0]) {
		ko.site_start = site_start;
		ko.site_stop = site_stop;
		ko.site_arg = sv;
	}
	if (!sv->peers || !sv->pfd || sv->wake_fd < 0 ||
	    (ko.site_start && keep_site_new(&so, sv->wake_fd, &sv->site)) ||
	    keeper_new(&ko, &sv->k) || listen_at(sv)) {
		fprintf(stderr, "mountctl keeper: cannot start\n");
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	log_info(
		"listening at %s: %lu descriptors, %zu connections (%u a user), %u copies of a user",
		o->socket, nofile, sv->max_conns, KEEP_SRV_USER_CONNS,
		KEEP_USER_COPIES);
	if (sv->site)
		log_info(
			"site images under %s: one copy each for all their readers, within %llu bytes",
			o->site, (unsigned long long)o->site_budget);
	fprintf(stderr, "mountctl keeper: listening at %s\n", o->socket);
	serve(sv);
	for (size_t i = 0; i < sv->npeers; i++)
		if (sv->peers[i].fd >= 0)
			close_peer(sv, &sv->peers[i]);
	unlinkat(sv->dir_fd, sv->name, 0);
	unlinkat(sv->dir_fd, sv->root_name, 0);
	close(sv->listen_fd);
	close(sv->root_fd);
	keep_reap_free(sv->reap);
	/* A job's thread may still be in a user's fstat() or close(): then
	 * sv stays for it, and the process ends with it. */
	left = jobs_left(sv, now_ms() + EXIT_WAIT_MS);
	/* Stops the site copies' jobs (site_stop()); then they are waited
	 * for as long, and one in a call that does not return is left to
	 * end with the process. */
	keeper_free(sv->k);
	left += keep_site_free(sv->site, EXIT_WAIT_MS);
	if (!left)
		server_free(sv);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the daemon's side of the control protocol (ctl.h):
 * a thread that accepts connections on the control socket, checks who is
 * asking, and answers ping, stats (built by the core, stats.c), stage,
 * umount, hold and release.
 */
#define LOG_MOD "ctl"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl_srv.h"
#include "daemon.h"
#include "holders.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

/* "hold PID START" and "release PID" (holders.h). */
static void holder_cmd(struct sqcd *d, const char *cmd, struct ctl_buf *b)
{
	unsigned long long start = 0;
	int pid, n, end = 0;
	bool hold = cmd[0] == 'h';

	if (hold)
		n = sscanf(cmd, "hold %d %llu%n", &pid, &start, &end) == 2;
	else
		n = sscanf(cmd, "release %d%n", &pid, &end) == 1;
	if (!n || cmd[end] || pid <= 0) {
		ctl_buf_printf(b,
			       "{\"ok\":false,\"error\":\"bad arguments\"}\n");
		return;
	}
	n = hold ? holders_add(d->holders, pid, start) :
		   holders_remove(d->holders, pid);
	if (n >= 0) {
		ctl_buf_printf(b, "{\"ok\":true,\"holders\":%d}\n", n);
		return;
	}
	ctl_buf_printf(b, "{\"ok\":false,\"error\":\"%s\"}\n",
		       n == -EOPNOTSUPP ? "not holder-managed" :
		       n == -ESHUTDOWN	? "closing" :
		       n == -ENOENT	? "not a holder" :
		       n == -ESRCH	? "no such process" :
					  err_str(n));
}

/*
 * "stage [full|meta] [BYTES]": start or extend staging (ctl.h).  The mode
 * defaults to full, the budget to the larger of the current one and the
 * mount's ram=, or when both are 0 to the default ram= of a daemon started
 * now: memlimit_budget(), from the memory limit the daemon is under now.
 */
static void stage_cmd(struct sqcd *d, const char *args, struct ctl_buf *b)
{
	enum img_stage_mode mode = IMG_STAGE_FULL;
	unsigned long long budget = 0;
	char word[16] = "";
	char lim[32];
	struct img_stats st;
	int n = 0, err;

	if (sscanf(args, " %15[a-z]%n", word, &n) == 1) {
		if (!strcmp(word, "meta"))
			mode = IMG_STAGE_META;
		else if (strcmp(word, "full"))
			goto out_bad;
		args += n;
	}
	n = 0;
	if (sscanf(args, " %llu%n", &budget, &n) == 1)
		args += n;
	if (args[strspn(args, " ")])
		goto out_bad;
	img_get_stats(d->img, &st);
	if (!budget)
		budget = MAX(st.stage_budget, d->o.img.ram);
	if (!budget) {
		struct memlimit ml;

		memlimit_get(&ml);
		budget = memlimit_budget(&ml);
		log_info("staging budget not given: half of %s (%s)",
			 ml.usable ? size_format(ml.usable, lim, sizeof(lim)) :
				     "unknown",
			 ml.source);
	}
	/* No stager, no staging: say so rather than leave it "idle". */
	err = d->pf ? img_stage_resume(d->img, mode, budget) : -EOPNOTSUPP;
	if (err) {
		ctl_buf_printf(b, "{\"ok\":false,\"error\":");
		ctl_buf_json_str(b, err_str(err));
		ctl_buf_printf(b, "}\n");
		return;
	}
	pf_stage_resume(d->pf);
	log_info("staging %s resumed with a budget of %llu bytes",
		 mode == IMG_STAGE_META ? "(metadata)" : "(full)",
		 (unsigned long long)MAX(budget, st.stage_budget));
	ctl_buf_printf(b, "{\"ok\":true,\"mode\":\"%s\",\"budget\":%llu}\n",
		       mode == IMG_STAGE_META ? "meta" : "full",
		       (unsigned long long)MAX(budget, st.stage_budget));
	return;
out_bad:
	ctl_buf_printf(b, "{\"ok\":false,\"error\":\"usage: stage "
			  "[full|meta] [BYTES]\"}\n");
}

static void serve(struct sqcd *d, int c)
{
	struct ctl_buf b = { 0 };
	char cmd[64];
	size_t n = 0;
	ssize_t r;
	uid_t uid;
	pid_t pid;
	bool umount = false;

	if (ctl_peer(c, &uid, &pid) || (uid != getuid() && uid != 0)) {
		ctl_buf_printf(
			&b, "{\"ok\":false,\"error\":\"permission denied\"}\n");
		goto out_send;
	}
	/* One short line; a client that stalls is dropped after 2 s. */
	while (n < sizeof(cmd) - 1) {
		struct pollfd p = { .fd = c, .events = POLLIN };

		if (poll(&p, 1, 2000) <= 0)
			goto out_close;
		r = recv(c, cmd + n, sizeof(cmd) - 1 - n, 0);
		if (r <= 0)
			goto out_close;
		n += (size_t)r;
		if (memchr(cmd, '\n', n))
			break;
	}
	cmd[n] = '\0';
	cmd[strcspn(cmd, "\r\n")] = '\0';
	if (!strcmp(cmd, "ping")) {
		/* The mount point proves a fallback address ours (ctl.h). */
		ctl_buf_printf(&b, "{\"ok\":true,\"pid\":%d,\"mountpoint\":",
			       (int)getpid());
		ctl_buf_json_str(&b, d->o.canonical);
		ctl_buf_printf(&b, "}\n");
	} else if (!strcmp(cmd, "stats")) {
		sqcd_stats_json(d, &b);
		ctl_buf_printf(&b, "\n");
	} else if (!strncmp(cmd, "hold ", 5) || !strncmp(cmd, "release ", 8)) {
		holder_cmd(d, cmd, &b);
	} else if (!strcmp(cmd, "stage") || !strncmp(cmd, "stage ", 6)) {
		stage_cmd(d, cmd + 5, &b);
	} else if (!strcmp(cmd, "umount")) {
		ctl_buf_printf(&b, "{\"ok\":true}\n");
		umount = true;
	} else {
		ctl_buf_printf(
			&b, "{\"ok\":false,\"error\":\"unknown command\"}\n");
	}
out_send:
	if (!b.oom && b.len)
		send(c, b.p, b.len, MSG_NOSIGNAL);
out_close:
	close(c);
	ctl_buf_release(&b);
	if (umount) {
		log_info("unmount requested by pid %d", (int)pid);
		/* The session's signal handler unmounts cleanly. */
		kill(getpid(), SIGTERM);
	}
}

struct ctl_srv {
	struct sqcd *d; /* the daemon */
	int fd; /* the listening socket */
	pthread_t thread; /* serves it */
	bool running; /* @thread was started */
};

static void *ctl_main(void *arg)
{
	struct ctl_srv *f = arg;
	int c;

	for (;;) {
		c = accept4(f->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* the socket was shut down */
		}
		serve(f->d, c);
	}
	return NULL;
}

int ctl_srv_listen(struct sqcd *d, struct ctl_srv **out)
{
	struct ctl_srv *f;
	int err;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->d = d;
	err = ctl_listen(d->o.ctl_addr, &f->fd);
	if (err) {
		free(f);
		return err;
	}
	*out = f;
	return 0;
}

int ctl_srv_start(struct sqcd *d, struct ctl_srv **out)
{
	struct ctl_srv *f = *out;
	int err;

	if (!f) {
		err = ctl_srv_listen(d, &f);
		if (err)
			return err;
	}
	err = -pthread_create(&f->thread, NULL, ctl_main, f);
	if (err) {
		ctl_srv_stop(f);
		ctl_srv_free(f);
		*out = NULL;
		return err;
	}
	f->running = true;
	*out = f;
	return 0;
}

void ctl_srv_stop(struct ctl_srv *f)
{
	if (!f)
		return;
	shutdown(f->fd, SHUT_RDWR);
	if (f->running)
		pthread_join(f->thread, NULL);
	close(f->fd);
	if (f->d->o.ctl_addr[0] != '@')
		unlink(f->d->o.ctl_addr);
}

void ctl_srv_free(struct ctl_srv *f)
{
	free(f);
}

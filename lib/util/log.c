// SPDX-License-Identifier: MIT
/*
 * This file implements the logging sink declared in log.h.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

static atomic_int log_level = LOG_INFO;
static enum log_sink log_sink = LOG_SINK_STDERR;
static void (*log_hook)(int level, const char *line);

static const char *level_name(int level)
{
	switch (level) {
	case LOG_EMERG:
	case LOG_ALERT:
	case LOG_CRIT:
	case LOG_ERR:
		return "error";
	case LOG_WARNING:
		return "warning";
	case LOG_NOTICE:
	case LOG_INFO:
		return "info";
	default:
		return "debug";
	}
}

void log_set_level(int level)
{
	atomic_store(&log_level, level);
}

bool log_is_enabled(int level)
{
	return level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

void log_set_sink(enum log_sink sink)
{
	if (sink == LOG_SINK_SYSLOG && log_sink != LOG_SINK_SYSLOG)
		openlog("squashcached", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_sink = sink;
}

void log_set_hook(void (*hook)(int level, const char *line))
{
	log_hook = hook;
}

void log_vmsg(int level, const char *mod, const char *fmt, va_list ap)
{
	char line[1024];
	int n = 0;
	int m;

	if (!log_is_enabled(level))
		return;
	if (log_sink == LOG_SINK_STDERR)
		n = snprintf(line, sizeof(line),
			     "squashcache: %s: ", level_name(level));
	if (mod && n >= 0 && (size_t)n < sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s: ", mod);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	/* libfuse's messages already end with a newline */
	while (n > 0 && line[n - 1] == '\n')
		n--;
	line[n] = '\0';
	if (log_hook)
		log_hook(level, line);
	if (log_sink == LOG_SINK_SYSLOG) {
		syslog(level, "%s", line);
		return;
	}
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return; /* nowhere left to report it */
}

void log_msg(int level, const char *mod, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, mod, fmt, ap);
	va_end(ap);
}

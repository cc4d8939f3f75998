/* SPDX-License-Identifier: MIT */
/*
 * This file implements the one logging sink of squashcache.
 *
 * Messages carry a syslog level and the module that wrote them (LOG_MOD,
 * defined by each .c file before it includes this header).  They go to
 * stderr (which systemd's journal picks up) or to syslog; the daemon routes
 * libfuse's own messages here too.  Style: lowercase, no trailing period,
 * what first, the subject in quotes: "cannot open image '%s': %s".
 * Nothing is logged per request above debug.
 */
#ifndef SQC_UTIL_LOG_H
#define SQC_UTIL_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <syslog.h>

#include "util/compiler.h"

#ifndef LOG_MOD
#define LOG_MOD "squashcache"
#endif

enum log_sink {
	LOG_SINK_STDERR, /* one line per message on fd 2 */
	LOG_SINK_SYSLOG, /* syslog(3), ident "squashcached" */
};

/**
 * log_msg() - Log one message.
 * @level: syslog level (LOG_ERR ... LOG_DEBUG)
 * @mod: module prefix
 * @fmt: printf format
 *
 * Return: nothing; cannot fail (an unwritable sink drops the message).
 * Context: any thread; each message is written with one write(2).
 */
void log_msg(int level, const char *mod, const char *fmt, ...) __printf(3, 4);

/**
 * log_vmsg() - Like log_msg() with a va_list.
 * @level: syslog level
 * @mod: module prefix, may be NULL
 * @fmt: printf format
 * @ap: arguments
 *
 * Return: nothing; cannot fail.
 * Context: any thread.
 */
void log_vmsg(int level, const char *mod, const char *fmt, va_list ap)
	__printf(3, 0);

/**
 * log_set_level() - Drop messages less severe than @level.
 * @level: syslog level; the default is LOG_INFO
 *
 * Context: call before starting threads.
 */
void log_set_level(int level);

/**
 * log_is_enabled() - Tell whether a message at @level would be written.
 * @level: syslog level
 *
 * Return: true if it would.  Context: any thread.
 */
bool log_is_enabled(int level);

/**
 * log_set_sink() - Choose where messages go.
 * @sink: LOG_SINK_STDERR (default) or LOG_SINK_SYSLOG
 *
 * Context: call before starting threads.
 */
void log_set_sink(enum log_sink sink);

/**
 * log_set_hook() - Also pass each message written to @hook (for tests).
 * @hook: called with the level and the formatted line; NULL removes it
 *
 * Context: call before starting threads.
 */
void log_set_hook(void (*hook)(int level, const char *line));

#define log_err(...) log_msg(LOG_ERR, LOG_MOD, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, LOG_MOD, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, LOG_MOD, __VA_ARGS__)
#define log_debug(...)                                            \
	do {                                                      \
		if (unlikely(log_is_enabled(LOG_DEBUG)))          \
			log_msg(LOG_DEBUG, LOG_MOD, __VA_ARGS__); \
	} while (0)

#endif /* SQC_UTIL_LOG_H */

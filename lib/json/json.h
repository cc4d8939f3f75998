/* SPDX-License-Identifier: MIT */
/*
 * This file declares the JSON of the project: a growing buffer to write
 * JSON text into (the daemon's replies, `mountctl status --json`) and a
 * small scanner to read values out of one object by dotted path (the
 * replies of the control protocol, lib/ctl).  It is not a general parser:
 * nothing is built but the value asked for.
 */
#ifndef SQC_JSON_JSON_H
#define SQC_JSON_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growing string for building JSON text. */
struct json_buf {
	char *p; /* NUL-terminated contents */
	size_t len; /* bytes used, without the NUL */
	size_t cap; /* bytes allocated */
	bool oom; /* an append failed; contents are incomplete */
};

/**
 * json_buf_printf() - Append formatted text.
 * @b: buffer (zero-initialised before the first call)
 * @fmt: printf format
 *
 * Context: any thread; on allocation failure sets b->oom.
 */
void json_buf_printf(struct json_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * json_buf_str() - Append a JSON string literal, escaped.
 * @b: buffer
 * @s: the string (bytes that are not UTF-8 are escaped as \u00XX)
 *
 * Context: any thread; on allocation failure sets b->oom.
 */
void json_buf_str(struct json_buf *b, const char *s);

/**
 * json_buf_release() - Free a buffer's memory.
 * @b: buffer; zeroed, ready for use again
 *
 * Context: any thread.
 */
void json_buf_release(struct json_buf *b);

/**
 * json_get() - Find a value in a JSON object by dotted path.
 * @json: the text of one JSON object
 * @path: "stage.staged_bytes"
 * @out: set to the start of the value
 * @len: set to its length in bytes
 *
 * Handles objects, arrays, strings with escapes, numbers, true, false and
 * null, and rejects anything else.
 *
 * Return: 0; -ENOENT; -EPROTO if the text is not well formed.
 * Context: any thread.
 */
int json_get(const char *json, const char *path, const char **out, size_t *len);

/**
 * json_u64() - json_get() for a non-negative integer.
 * @json: JSON text
 * @path: dotted path
 * @out: the number
 *
 * Return: 0; -ENOENT; -EPROTO if the value is not such a number.
 * Context: any thread.
 */
int json_u64(const char *json, const char *path, uint64_t *out);

/**
 * json_double() - json_get() for any number.
 * @json: JSON text
 * @path: dotted path
 * @out: the number
 *
 * Return: 0; -ENOENT; -EPROTO.  Context: any thread.
 */
int json_double(const char *json, const char *path, double *out);

/**
 * json_str() - json_get() for a string, unescaped into @buf.
 * @json: JSON text
 * @path: dotted path
 * @buf: destination, NUL-terminated
 * @cap: its capacity
 *
 * Return: 0; -ENOENT; -EPROTO; -ERANGE if @cap is too small.
 * Context: any thread.
 */
int json_str(const char *json, const char *path, char *buf, size_t cap);

#endif /* SQC_JSON_JSON_H */

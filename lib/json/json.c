// SPDX-License-Identifier: MIT
/*
 * This file implements the JSON buffer and scanner declared in json.h.
 * The scanner walks the text once per lookup, skipping the values it
 * passes (at most 32 containers deep), so it needs no memory of its own.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

void json_buf_printf(struct json_buf *b, const char *fmt, ...)
{
	va_list ap;
	size_t want;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	want = b->len + (size_t)n + 1;
	if (want > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < want)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/* Length of the well-formed UTF-8 sequence of 2..4 bytes at @p, or 0. */
static size_t utf8_len(const unsigned char *p)
{
	uint32_t c;
	size_t n;

	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2;
	else if (*p >= 0xe0 && *p <= 0xef)
		n = 3;
	else if (*p >= 0xf0 && *p <= 0xf4)
		n = 4;
	else
		return 0;
	c = *p & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (n == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return n;
}

void json_buf_str(struct json_buf *b, const char *s)
{
	size_t n;

	json_buf_printf(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			json_buf_printf(b, "\\%c", *p);
		} else if (*p >= 0x80 && (n = utf8_len(p))) {
			/* UTF-8 goes through as is: JSON text is UTF-8. */
			json_buf_printf(b, "%.*s", (int)n, (const char *)p);
			p += n - 1;
		} else if (*p < 0x20 || *p >= 0x7f) {
			json_buf_printf(b, "\\u%04x", *p);
		} else {
			json_buf_printf(b, "%c", *p);
		}
	}
	json_buf_printf(b, "\"");
}

void json_buf_release(struct json_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* JSON scanning.  Each skip_* returns the position after the value, or
 * NULL if the text is malformed. */
static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *skip_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if (*p == '\\') {
			p++;
			if (!*p)
				return NULL;
		}
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *skip_value(const char *p, int depth);

static const char *skip_container(const char *p, int depth, char close,
				  bool keys)
{
	p = skip_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (keys) {
			p = skip_string(p);
			if (!p)
				return NULL;
			p = skip_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = skip_value(skip_ws(p), depth + 1);
		if (!p)
			return NULL;
		p = skip_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
		p = skip_ws(p);
	}
}

static const char *skip_value(const char *p, int depth)
{
	if (depth > 32)
		return NULL;
	switch (*p) {
	case '{':
		return skip_container(p, depth, '}', true);
	case '[':
		return skip_container(p, depth, ']', false);
	case '"':
		return skip_string(p);
	case 't':
		return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f':
		return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n':
		return strncmp(p, "null", 4) ? NULL : p + 4;
	default:
		if (*p != '-' && (*p < '0' || *p > '9'))
			return NULL;
		p++;
		while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' ||
		       *p == 'E' || *p == '+' || *p == '-')
			p++;
		return p;
	}
}

int json_get(const char *json, const char *path, const char **out, size_t *len)
{
	const char *p = skip_ws(json);
	const char *seg = path, *dot, *key, *end;
	size_t seglen;

	for (;;) {
		if (*p != '{')
			return -ENOENT;
		dot = strchr(seg, '.');
		seglen = dot ? (size_t)(dot - seg) : strlen(seg);
		p = skip_ws(p + 1);
		for (;;) {
			if (*p == '}')
				return -ENOENT;
			key = p;
			end = skip_string(p);
			if (!end)
				return -EPROTO;
			p = skip_ws(end);
			if (*p++ != ':')
				return -EPROTO;
			p = skip_ws(p);
			if ((size_t)(end - key - 2) == seglen &&
			    !memcmp(key + 1, seg, seglen))
				break;
			p = skip_value(p, 0);
			if (!p)
				return -EPROTO;
			p = skip_ws(p);
			if (*p == ',')
				p = skip_ws(p + 1);
			else if (*p != '}')
				return -EPROTO;
		}
		if (!dot) {
			end = skip_value(p, 0);
			if (!end)
				return -EPROTO;
			*out = p;
			*len = (size_t)(end - p);
			return 0;
		}
		seg = dot + 1;
	}
}

/* The number at @path: its text at *@v, *@len bytes, starting with a
 * digit (or with @sign, a '-').  Return: 0, -ENOENT or -EPROTO. */
static int number_at(const char *json, const char *path, bool sign,
		     const char **v, size_t *len)
{
	int err = json_get(json, path, v, len);

	if (err)
		return err;
	if ((**v < '0' || **v > '9') && !(sign && **v == '-'))
		return -EPROTO;
	return 0;
}

int json_u64(const char *json, const char *path, uint64_t *out)
{
	const char *v;
	char *end;
	size_t len;
	int err;

	err = number_at(json, path, false, &v, &len);
	if (err)
		return err;
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (errno || end != v + len)
		return -EPROTO;
	return 0;
}

int json_double(const char *json, const char *path, double *out)
{
	const char *v;
	char *end;
	size_t len;
	int err;

	err = number_at(json, path, true, &v, &len);
	if (err)
		return err;
	*out = strtod(v, &end);
	if (end != v + len)
		return -EPROTO;
	return 0;
}

int json_str(const char *json, const char *path, char *buf, size_t cap)
{
	const char *v, *end;
	size_t len, n = 0;
	int err;

	err = json_get(json, path, &v, &len);
	if (err)
		return err;
	if (*v != '"')
		return -EPROTO;
	end = v + len - 1;
	for (const char *p = v + 1; p < end; p++) {
		char c = *p;

		if (c == '\\') {
			p++;
			switch (*p) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'u': {
				unsigned int u;

				if (end - p < 5 ||
				    sscanf(p + 1, "%4x", &u) != 1)
					return -EPROTO;
				c = (char)(u & 0xff);
				p += 4;
				break;
			}
			default:
				c = *p;
			}
		}
		if (n + 1 >= cap)
			return -ERANGE;
		buf[n++] = c;
	}
	if (!cap)
		return -ERANGE;
	buf[n] = '\0';
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the dataset list grammar, the mount names and the
 * site's configuration and option policy (see dataset.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "util/compiler.h"

/* Options without a value that an item may be (see is_option_item()). */
static const char *const flags[] = { "direct_io",    "no_uring",    "no_splice",
				     "stage_cached", "allow_other", "debug",
				     "ro",	     "prime",	    "nodev",
				     "nosuid" };

/* Never from a user: what each would let a user do. */
static const struct {
	const char *name;
	const char *why;
} refused[] = {
	{ "allow_other", "it would open the mount to every user of the node" },
	{ "log", "it would write a file the site did not choose" },
	{ "ctl", "it would bind a control address the site did not choose" },
	{ "debug", "it keeps the daemon in the foreground" },
	{ "hold", "the mount lives as long as the job, not a process" },
	{ "grace", "the mount lives as long as the job, not a process" },
};

static void say(char *why, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (!cap)
		return;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
}

/* Copy @len bytes of @src into @dst of @cap; -ENAMETOOLONG if too long. */
static int put(char *dst, size_t cap, const char *src, size_t len)
{
	if (len >= cap)
		return -ENAMETOOLONG;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || c == '_';
}

/* Length of the option name at @s ([a-z_]+), 0 if there is none. */
static size_t name_len(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && is_name_char(s[i]))
		i++;
	return i;
}

static bool is_flag(const char *s, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(flags); i++)
		if (strlen(flags[i]) == n && !memcmp(flags[i], s, n))
			return true;
	return false;
}

/*
 * Check one option list: ',' separated NAME or NAME=VALUE, names [a-z_]+,
 * no backslash, no empty option.  Return: 0 or -EINVAL with @why set.
 */
static int check_opt_syntax(const char *opts, char *why, size_t cap)
{
	const char *p = opts;

	if (strchr(opts, '\\')) {
		say(why, cap, "a backslash in options '%s'", opts);
		return -EINVAL;
	}
	while (*p) {
		size_t n = strcspn(p, ","), k = name_len(p, n);

		if (!k || (k < n && p[k] != '=')) {
			say(why, cap, "bad option '%.*s' (NAME or NAME=VALUE)",
			    (int)n, p);
			return -EINVAL;
		}
		p += n;
		if (*p == ',' && !*++p) {
			say(why, cap, "an empty option in '%s'", opts);
			return -EINVAL;
		}
	}
	return 0;
}

void ds_conf_default(struct ds_conf *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->base, "/dev/shm");
	strcpy(c->user_options, DS_USER_OPTIONS);
	c->timeout_s = DS_DEFAULT_TIMEOUT_S;
	strcpy(c->keep, "0");
	strcpy(c->keep_socket, DS_KEEP_SOCKET);
	strcpy(c->site_seal, "auto");
}

bool ds_conf_keeps(const struct ds_conf *c)
{
	return strspn(c->keep, "0") != strcspn(c->keep, "%KMGTiB");
}

/*
 * keep=, keep_min_available=: a size as ram= takes it (digits, an optional
 * K, M, G or T with "B" or "iB"), or a percentage of the node's RAM from 0
 * to 100.  Only the syntax: the keeper reads it (mountctl keeper --keep).
 */
static int set_size(char *out, size_t ocap, const char *v, const char *key,
		    char *why, size_t cap)
{
	static const char *const units[] = { "",    "K",   "M",	  "G",	"T",
					     "KB",  "MB",  "GB",  "TB", "KiB",
					     "MiB", "GiB", "TiB", "%" };
	size_t n = strspn(v, "0123456789");
	bool ok = n > 0 && n <= 15;

	if (ok) {
		ok = false;
		for (size_t i = 0; i < ARRAY_SIZE(units); i++)
			ok |= !strcmp(v + n, units[i]);
	}
	if (ok && v[n] == '%')
		ok = strtoul(v, NULL, 10) <= 100;
	if (!ok || put(out, ocap, v, strlen(v))) {
		say(why, cap, "%s=%s: a size (512M, 4G) or a percentage (10%%)",
		    key, v);
		return -EINVAL;
	}
	return 0;
}

static int set_bool(bool *out, const char *v, const char *key, char *why,
		    size_t cap)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
		*out = false;
	else {
		say(why, cap, "%s=%s: say yes or no", key, v);
		return -EINVAL;
	}
	return 0;
}

static int set_timeout(unsigned int *out, const char *v, char *why, size_t cap)
{
	char *end;
	unsigned long t;

	errno = 0;
	t = strtoul(v, &end, 10);
	if (errno || end == v || *end || *v == '-' || t < 1 || t > 3600) {
		say(why, cap, "timeout=%s: seconds from 1 to 3600", v);
		return -EINVAL;
	}
	*out = (unsigned int)t;
	return 0;
}

/* allow=, site=: ':' separated absolute prefixes. */
static int check_allow(const char *key, const char *v, char *why, size_t cap)
{
	const char *p = v;

	while (*p) {
		size_t n = strcspn(p, ":");

		if (n && *p != '/') {
			say(why, cap, "%s=: '%.*s' is not an absolute path",
			    key, (int)n, p);
			return -EINVAL;
		}
		p += n;
		if (*p)
			p++;
	}
	return 0;
}

/* user_options=: ',' separated option names. */
static int check_names(const char *v, char *why, size_t cap)
{
	for (const char *p = v; *p; p++)
		if (!is_name_char(*p) && *p != ',') {
			say(why, cap,
			    "user_options=: option names only ([a-z_], ',' between)");
			return -EINVAL;
		}
	return 0;
}

/* What a string key's value must be. */
enum kind { K_PATH, K_OPTS, K_NAMES, K_ALLOW, K_PATH_OR_NONE };

/* Validate @v for @key; set *@dst/@dcap to the string field it goes to. */
static int string_field(struct ds_conf *c, const char *key, const char *v,
			char **dst, size_t *dcap, char *why, size_t cap)
{
	const struct {
		const char *key;
		char *field;
		size_t cap;
		enum kind kind;
	} keys[] = {
		{ "base", c->base, sizeof(c->base), K_PATH },
		{ "options", c->options, sizeof(c->options), K_OPTS },
		{ "force_options", c->force_options, sizeof(c->force_options),
		  K_OPTS },
		{ "user_options", c->user_options, sizeof(c->user_options),
		  K_NAMES },
		{ "allow", c->allow, sizeof(c->allow), K_ALLOW },
		{ "mountctl", c->mountctl, sizeof(c->mountctl), K_PATH },
		{ "keep_socket", c->keep_socket, sizeof(c->keep_socket),
		  K_PATH },
		{ "site", c->site, sizeof(c->site), K_ALLOW },
		{ "site_roots", c->site_roots, sizeof(c->site_roots),
		  K_PATH_OR_NONE },
	};

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (strcmp(key, keys[i].key))
			continue;
		*dst = keys[i].field;
		*dcap = keys[i].cap;
		switch (keys[i].kind) {
		case K_PATH_OR_NONE:
			if (!*v)
				return 0;
			/* fall through */
		case K_PATH:
			if (*v == '/' && !strchr(v, ','))
				return 0;
			say(why, cap, "%s=%s: give an absolute path, no ','",
			    key, v);
			return -EINVAL;
		case K_OPTS:
			return check_opt_syntax(v, why, cap);
		case K_NAMES:
			return check_names(v, why, cap);
		case K_ALLOW:
			return check_allow(key, v, why, cap);
		}
	}
	say(why, cap, "unknown key '%s'", key);
	return -EINVAL;
}

int ds_conf_set(struct ds_conf *c, const char *kv, char *why, size_t cap)
{
	char key[32], val[4096];
	const char *eq, *s = kv, *e;
	size_t dcap;
	char *dst;
	int err;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
			 e[-1] == '\r'))
		e--;
	eq = memchr(s, '=', (size_t)(e - s));
	if (!eq || put(key, sizeof(key), s, (size_t)(eq - s)) ||
	    put(val, sizeof(val), eq + 1, (size_t)(e - eq - 1))) {
		say(why, cap, "'%.*s' is not KEY=VALUE", (int)(e - s), s);
		return -EINVAL;
	}
	if (!strcmp(key, "state"))
		return 0;
	if (!strcmp(key, "timeout"))
		return set_timeout(&c->timeout_s, val, why, cap);
	if (!strcmp(key, "prolog_spank"))
		return set_bool(&c->prolog_spank, val, key, why, cap);
	if (!strcmp(key, "keep"))
		return set_size(c->keep, sizeof(c->keep), val, key, why, cap);
	if (!strcmp(key, "keep_min_available") && !val[0]) {
		c->keep_min_available[0] = '\0'; /* the keeper's own */
		return 0;
	}
	if (!strcmp(key, "keep_min_available"))
		return set_size(c->keep_min_available,
				sizeof(c->keep_min_available), val, key, why,
				cap);
	if (!strcmp(key, "site_keep") && !val[0]) {
		c->site_keep[0] = '\0'; /* keep='s */
		return 0;
	}
	if (!strcmp(key, "site_keep"))
		return set_size(c->site_keep, sizeof(c->site_keep), val, key,
				why, cap);
	if (!strcmp(key, "site_seal")) {
		if (strcmp(val, "auto") && strcmp(val, "require") &&
		    strcmp(val, "root")) {
			say(why, cap, "site_seal=%s: auto, require or root",
			    val);
			return -EINVAL;
		}
		strcpy(c->site_seal, val);
		return 0;
	}
	err = string_field(c, key, val, &dst, &dcap, why, cap);
	if (err)
		return err;
	if (put(dst, dcap, val, strlen(val))) {
		say(why, cap, "%s= is too long", key);
		return -EINVAL;
	}
	return 0;
}

int ds_conf_line(struct ds_conf *c, const char *line, char *why, size_t cap)
{
	const char *s = line + strspn(line, " \t");

	if (!*s || *s == '#' || *s == '\n' || *s == '\r')
		return 0;
	return ds_conf_set(c, s, why, cap);
}

/*
 * Is the raw item @s (escapes not undone) of @n bytes an option of the
 * image before it?  "NAME=..." or one of flags[].
 */
int ds_conf_read(struct ds_conf *c, const char *path,
		 void (*bad)(const char *path, int no, const char *why,
			     void *arg),
		 void *arg)
{
	char line[8192], why[512];
	FILE *f = fopen(path, "re");
	int no = 0, err = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		no++;
		if (!line[n] && !feof(f)) {
			/* Too long: the line is refused, its rest skipped. */
			int ch;

			while ((ch = getc(f)) != EOF && ch != '\n')
				;
			snprintf(why, sizeof(why), "a line over %zu bytes",
				 sizeof(line) - 2);
		} else if (!ds_conf_line(c, line, why, sizeof(why))) {
			continue;
		}
		err = -EINVAL;
		if (bad)
			bad(path, no, why, arg);
	}
	if (ferror(f))
		err = -EIO;
	fclose(f);
	return err;
}

int ds_conf_get(const struct ds_conf *c, const char *key, char *buf, size_t cap)
{
	const struct {
		const char *key;
		const char *val;
	} keys[] = {
		{ "base", c->base },
		{ "options", c->options },
		{ "force_options", c->force_options },
		{ "user_options", c->user_options },
		{ "allow", c->allow },
		{ "mountctl", c->mountctl },
		{ "prolog_spank", c->prolog_spank ? "yes" : "no" },
		{ "keep", c->keep },
		{ "keep_min_available", c->keep_min_available },
		{ "keep_socket", c->keep_socket },
		{ "site", c->site },
		{ "site_keep", c->site_keep },
		{ "site_seal", c->site_seal },
		{ "site_roots", c->site_roots },
	};
	int n = -1;

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (!strcmp(key, keys[i].key))
			n = snprintf(buf, cap, "%s", keys[i].val);
	if (!strcmp(key, "timeout"))
		n = snprintf(buf, cap, "%u", c->timeout_s);
	if (n < 0)
		return -ENOENT;
	return (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

static bool is_option_item(const char *s, size_t n)
{
	size_t k = name_len(s, n);

	if (!k)
		return false;
	return (k < n && s[k] == '=') || (k == n && is_flag(s, n));
}

/* Length of the raw text at @s up to an unescaped @stop or the end. */
static size_t raw_len(const char *s, char stop)
{
	size_t i = 0;

	while (s[i] && s[i] != stop) {
		if (s[i] == '\\' && s[i + 1])
			i++;
		i++;
	}
	return i;
}

/* Undo escapes of @n raw bytes at @s into @dst.  -EINVAL, -ENAMETOOLONG. */
static int unescape(const char *s, size_t n, char *dst, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\') {
			if (++i == n)
				return -EINVAL;
		}
		if (o + 1 >= cap)
			return -ENAMETOOLONG;
		dst[o++] = s[i];
	}
	dst[o] = '\0';
	return 0;
}

/* Append option text @s (@n bytes) to @im's options. */
static int add_opts(struct ds_image *im, const char *s, size_t n, char *why,
		    size_t cap)
{
	size_t have = strlen(im->opts);
	char tmp[DS_OPTS_MAX];
	int err;

	if (put(tmp, sizeof(tmp), s, n) ||
	    have + (have ? 1 : 0) + n >= sizeof(im->opts)) {
		say(why, cap, "options of '%s' are too long", im->path);
		return -EINVAL;
	}
	err = check_opt_syntax(tmp, why, cap);
	if (err)
		return err;
	if (n && have)
		im->opts[have++] = ',';
	memcpy(im->opts + have, tmp, n + 1);
	return 0;
}

/* Parse one image item: PATH[:OPTS]. */
static int parse_image(const char *s, size_t n, struct ds_image *im, char *why,
		       size_t cap)
{
	char raw[PATH_MAX + DS_OPTS_MAX];
	size_t plen;
	int err;

	memset(im, 0, sizeof(*im));
	if (put(raw, sizeof(raw), s, n)) {
		say(why, cap, "an image path is too long");
		return -EINVAL;
	}
	plen = raw_len(raw, ':');
	err = unescape(raw, plen, im->path, sizeof(im->path));
	if (err == -ENAMETOOLONG)
		say(why, cap, "an image path is too long");
	else if (err)
		say(why, cap, "'%s' ends in a backslash", raw);
	else if (!im->path[0])
		say(why, cap, "an empty image path in '%s'", raw);
	if (err || !im->path[0])
		return -EINVAL;
	if (raw[plen] == ':')
		return add_opts(im, raw + plen + 1, n - plen - 1, why, cap);
	return 0;
}

void ds_image_name(const char *path, char *out)
{
	static const char *const exts[] = { ".sqfs", ".squashfs", ".sqsh",
					    ".img", ".sif" };
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	n = strlen(b);
	for (size_t i = 0; i < ARRAY_SIZE(exts); i++) {
		size_t e = strlen(exts[i]);

		if (n > e && !strcmp(b + n - e, exts[i])) {
			n -= e;
			break;
		}
	}
	/* Leave room for "-16". */
	if (n > DS_NAME_MAX - 4)
		n = DS_NAME_MAX - 4;
	for (size_t i = 0; i < n; i++) {
		char c = b[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' ||
			  c == '-';

		out[i] = ok && !(i == 0 && c == '.') ? c : '_';
	}
	out[n] = '\0';
	if (!n)
		strcpy(out, "dataset");
}

static bool name_taken(const struct ds_list *l, unsigned int upto,
		       const char *name)
{
	for (unsigned int i = 0; i < upto; i++)
		if (!strcmp(l->im[i].name, name))
			return true;
	return false;
}

void ds_list_name(struct ds_list *l)
{
	for (unsigned int i = 0; i < l->n; i++) {
		char base[DS_NAME_MAX];

		ds_image_name(l->im[i].path, base);
		snprintf(l->im[i].name, DS_NAME_MAX, "%s", base);
		for (unsigned int k = 2; name_taken(l, i, l->im[i].name); k++)
			snprintf(l->im[i].name, DS_NAME_MAX, "%.*s-%u",
				 (int)DS_NAME_MAX - 16, base, k % 1000u);
	}
}

int ds_list_parse(const char *text, struct ds_list *out, char *why, size_t cap)
{
	const char *p = text;
	int err;

	out->n = 0;
	while (*p) {
		size_t n = raw_len(p, ',');

		if (!n) {
			say(why, cap, "an empty item in '%s'", text);
			return -EINVAL;
		}
		if (is_option_item(p, n)) {
			if (!out->n) {
				say(why, cap,
				    "option '%.*s' comes before any image (write a file of that name as ./%.*s)",
				    (int)n, p, (int)n, p);
				return -EINVAL;
			}
			err = add_opts(&out->im[out->n - 1], p, n, why, cap);
		} else if (out->n == DS_MAX_IMAGES) {
			say(why, cap, "more than %d images", DS_MAX_IMAGES);
			return -E2BIG;
		} else {
			err = parse_image(p, n, &out->im[out->n], why, cap);
			out->n += !err;
		}
		if (err)
			return err;
		p += n;
		if (*p == ',' && !*++p) {
			say(why, cap, "'%s' ends in a comma", text);
			return -EINVAL;
		}
	}
	ds_list_name(out);
	return 0;
}

int ds_list_format(const struct ds_list *l, char *buf, size_t cap)
{
	size_t o = 0;

	for (unsigned int i = 0; i < l->n; i++) {
		const struct ds_image *im = &l->im[i];

		if (i && o + 1 < cap)
			buf[o++] = ',';
		for (const char *s = im->path; *s; s++) {
			if (strchr(",:\\ \t", *s) && o + 1 < cap)
				buf[o++] = '\\';
			if (o + 1 < cap)
				buf[o++] = *s;
		}
		if (im->opts[0] && o + 1 < cap)
			buf[o++] = ':';
		for (const char *s = im->opts; *s; s++)
			if (o + 1 < cap)
				buf[o++] = *s;
		if (o + 1 >= cap)
			return -ENAMETOOLONG;
	}
	if (!cap)
		return -ENAMETOOLONG;
	buf[o] = '\0';
	return 0;
}

int ds_comment_list(const char *comment, char *buf, size_t cap)
{
	const char *p = comment;

	for (;;) {
		size_t n = 0;

		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			return -ENOENT;
		while (p[n] && p[n] != ' ' && p[n] != '\t' && p[n] != '\n') {
			if (p[n] == '\\' && p[n + 1])
				n++;
			n++;
		}
		if (n > 8 && !strncmp(p, "dataset=", 8))
			return put(buf, cap, p + 8, n - 8);
		p += n;
	}
}

/* Is @name (@n bytes) in the ',' separated @list? */
static bool in_list(const char *list, const char *name, size_t n)
{
	const char *p = list;

	while (*p) {
		size_t k = strcspn(p, ",");

		if (k == n && !memcmp(p, name, n))
			return true;
		p += k;
		if (*p)
			p++;
	}
	return false;
}

int ds_check_user_opts(const struct ds_conf *c, const char *opts, char *why,
		       size_t cap)
{
	const char *p = opts;
	int err = check_opt_syntax(opts, why, cap);

	if (err)
		return err;
	while (*p) {
		size_t n = strcspn(p, ","), k = name_len(p, n);

		for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
			if (strlen(refused[i].name) == k &&
			    !memcmp(refused[i].name, p, k)) {
				say(why, cap,
				    "option '%.*s' is not allowed in a job's dataset: %s",
				    (int)k, p, refused[i].why);
				return -EPERM;
			}
		if (!in_list(c->user_options, p, k)) {
			say(why, cap,
			    "option '%.*s' is not one users may set on this cluster (they may set: %s)",
			    (int)k, p,
			    c->user_options[0] ? c->user_options : "none");
			return -EPERM;
		}
		p += n;
		if (*p)
			p++;
	}
	return 0;
}

int ds_mount_opts(const struct ds_conf *c, const char *user, char *buf,
		  size_t cap)
{
	char keep[sizeof(c->keep_socket) + 8];
	const char *parts[] = { c->options, user, c->force_options,
				ds_conf_keeps(c) ? keep : NULL };
	size_t o = 0;

	snprintf(keep, sizeof(keep), "keep=%s", c->keep_socket);

	if (!cap)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		int n;

		if (!parts[i] || !parts[i][0])
			continue;
		n = snprintf(buf + o, cap - o, "%s%s", o ? "," : "", parts[i]);
		if (n < 0 || (size_t)n >= cap - o)
			return -ENAMETOOLONG;
		o += (size_t)n;
	}
	return 0;
}

bool ds_is_allowed(const struct ds_conf *c, const char *path)
{
	const char *p = c->allow;

	if (!p[0])
		return true;
	while (*p) {
		size_t n = strcspn(p, ":");

		/* "/data/" is "/data"; "/" allows everything. */
		while (n > 1 && p[n - 1] == '/')
			n--;
		if (n == 1 && p[0] == '/')
			return true;
		if (n && !strncmp(path, p, n) &&
		    (path[n] == '/' || path[n] == '\0'))
			return true;
		p += strcspn(p, ":");
		if (*p)
			p++;
	}
	return false;
}

int ds_job_dir_name(const char *job, const char *node, char *buf, size_t cap)
{
	size_t jl = strspn(job, "0123456789"), nl = strlen(node);
	int n;

	if (!jl || job[jl] || jl > 20 || !nl || nl > 64 || node[0] == '.')
		return -EINVAL;
	for (size_t i = 0; i < nl; i++) {
		char c = node[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return -EINVAL;
	}
	n = snprintf(buf, cap, "job%s-%s", job, node);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int ds_env_name(const char *name, char *buf, size_t cap)
{
	static const char pre[] = "SQUASHCACHE_MOUNT_";
	size_t o = sizeof(pre) - 1;

	if (cap < o + strlen(name) + 1)
		return -ENAMETOOLONG;
	memcpy(buf, pre, o);
	for (; *name; name++) {
		char c = *name;

		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			c = '_';
		buf[o++] = c;
	}
	buf[o] = '\0';
	return 0;
}

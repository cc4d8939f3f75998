// SPDX-License-Identifier: MIT
/*
 * This file implements the verify feature (verify.h): which seal the
 * image's reads are checked against (-o seal=, -o seal_root=), set in
 * img_opts before the image is opened, its one log line, and its stats.
 */
#define LOG_MOD "verify"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "verify.h"
#include "seal/seal.h"
#include "util/log.h"

struct verify {
	struct sqcd *d;
	char path[PATH_MAX]; /* the seal's file */
};

/*
 * The feature's prepare(): set d->o.img.seal from -o seal= (auto: the
 * image's name and SEAL_SUFFIX, if there is such a file; require: that
 * file, which must be there; off; or a path, which must be there) and
 * d->o.img.seal_root from -o seal_root= (which needs a seal).
 * Return: 0; -EINVAL (said).  Context: main(), before img_open().
 */
static int verify_prepare(struct sqcd *d, void **f)
{
	const char *mode = d->o.seal;
	bool beside = !strcmp(mode, "auto") || !strcmp(mode, "require");
	struct verify *v;
	char cwd[PATH_MAX];
	int n;

	if (!strcmp(mode, "off")) {
		if (!d->o.seal_root_set)
			return 0;
		fprintf(stderr,
			"squashcached: -o seal_root= needs a seal: drop -o seal=off\n");
		return -EINVAL;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->d = d;
	if (beside)
		n = snprintf(v->path, sizeof(v->path), "%s%s", d->o.image_abs,
			     SEAL_SUFFIX);
	else if (mode[0] == '/')
		n = snprintf(v->path, sizeof(v->path), "%s", mode);
	else if (getcwd(cwd, sizeof(cwd)))
		n = snprintf(v->path, sizeof(v->path), "%s/%s", cwd, mode);
	else
		n = -1;
	if (n < 0 || (size_t)n >= sizeof(v->path)) {
		fprintf(stderr,
			"squashcached: -o seal: the path is too long\n");
		free(v);
		return -EINVAL;
	}
	d->o.img.seal = v->path;
	/* Only the default may find none; a root to match needs one. */
	d->o.img.seal_optional = !strcmp(mode, "auto") && !d->o.seal_root_set;
	d->o.img.seal_root = d->o.seal_root_set ? d->o.seal_root : NULL;
	*f = v;
	return 0;
}

/* The image is open: off if it had no seal. */
static int verify_start(struct sqcd *d, void **f)
{
	struct verify *v = *f;
	char hex[SEAL_HEX_SIZE];
	struct seal *s;

	if (!v)
		return 0;
	s = img_seal(d->img, NULL);
	if (!s) {
		free(v);
		*f = NULL;
		return 0;
	}
	log_info(
		"every byte read from '%s' is checked against its seal '%s' (root %s%s)",
		d->o.image_abs, v->path, seal_hex(seal_root(s), hex),
		d->o.seal_root_set ? ", as required" : "");
	return 0;
}

static void verify_stop(void *f)
{
	(void)f;
}

static void verify_free(void *f)
{
	free(f);
}

void verify_stats_json(struct verify *v, struct json_buf *b)
{
	struct seal_stats st = { 0 };
	struct stage_stats ss;
	struct img_stats is;
	char hex[SEAL_HEX_SIZE];
	struct seal *s = v ? img_seal(v->d->img, NULL) : NULL;

	if (!s) {
		json_buf_printf(b, "\"verify\":{\"seal\":null},");
		return;
	}
	seal_get_stats(s, &st);
	img_get_stats(v->d->img, &is);
	stage_get_stats(img_stage(v->d->img), &ss);
	json_buf_printf(b, "\"verify\":{\"seal\":");
	json_buf_str(b, v->path);
	json_buf_printf(b,
			",\"root\":\"%s\",\"data_bytes\":%llu,"
			"\"tree_bytes\":%llu,\"blocks_ok\":%llu,"
			"\"blocks_bad\":%llu,\"bytes_hashed\":%llu,"
			"\"bad_reads\":%llu,\"bad_staged\":%llu,"
			"\"refused_bytes\":%llu},",
			seal_hex(seal_root(s), hex),
			(unsigned long long)st.data_size,
			(unsigned long long)st.tree_bytes,
			(unsigned long long)st.blocks_ok,
			(unsigned long long)st.blocks_bad,
			(unsigned long long)st.bytes_hashed,
			(unsigned long long)is.seal_bad_reads,
			(unsigned long long)is.seal_bad_staged,
			(unsigned long long)ss.refused);
}

const struct sqcd_feature verify_feature = {
	.name = "verify",
	.prepare = verify_prepare,
	.start = verify_start,
	.stop = verify_stop,
	.free = verify_free,
};

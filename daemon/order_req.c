// SPDX-License-Identifier: MIT
/*
 * This file implements the "order" control request (order_req.h): each
 * path of the body is resolved in the image (img_resolve(), which refuses
 * malformed paths and symlinks out of the image), its file's ranges are
 * added to a new epoch order (order_plan_add()), and only once every path
 * is found the daemon's order is replaced with it (order_plan_set()).
 */
#define LOG_MOD "order"

#include <errno.h>
#include <string.h>

#include "daemon.h"
#include "order/order.h"
#include "order_req.h"
#include "util/err.h"
#include "util/log.h"

#define SHOWN_MAX 48 /* bytes of a path a refusal shows */

/* Refuse the order at entry @i (1-based), path @p of @len bytes. */
static void refuse_at(struct ctl_reply *rep, uint64_t i, const char *p,
		      size_t len, const char *why)
{
	char shown[SHOWN_MAX + 4];
	size_t n = len > SHOWN_MAX ? SHOWN_MAX : len;

	memcpy(shown, p, n);
	strcpy(shown + n, len > n ? "..." : "");
	for (size_t k = 0; k < n; k++)
		if ((unsigned char)shown[k] < 0x20)
			shown[k] = '?';
	ctl_reply_refuse(rep, "order entry %llu '%s': %s",
			 (unsigned long long)i, shown, why);
}

/* Why the file at a path cannot be ordered; -EINVAL from img_resolve()
 * is a malformed path, from the type check not a regular file. */
static const char *why_not(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such file in the image";
	case -ENOTDIR:
		return "a component is not a directory";
	case -EISDIR:
		return "a directory, not a file";
	case -EINVAL:
		return "not a regular file";
	case -ENAMETOOLONG:
		return "a name is too long";
	case -EXDEV:
		return "a symlink that leaves the image";
	case -ELOOP:
		return "too many symlinks";
	default:
		return err_str(err);
	}
}

/* Add the file at path @p (@n bytes, entry @i) to @plan, or refuse. */
static int add_path(struct sqcd *d, struct img_paths *ps, const char *p,
		    size_t n, uint64_t i, struct order_plan *plan,
		    struct ctl_reply *rep)
{
	struct img_inode f;
	int err;

	err = img_resolve(ps, p, n, &f);
	if (err == -EINVAL) {
		refuse_at(
			rep, i, p, n,
			"not a path relative to the mount's root, or it has empty, '.' or '..' names");
		return err;
	}
	if (!err && f.type != IMG_REG)
		err = f.type == IMG_DIR ? -EISDIR : -EINVAL;
	if (!err)
		err = order_plan_add(plan, d->img, &f);
	if (err)
		refuse_at(rep, i, p, n, why_not(err));
	return err;
}

/* Add every path of @body to @plan.  Return: true if all were added. */
static bool build(struct sqcd *d, const char *body, uint64_t len,
		  struct order_plan *plan, struct ctl_reply *rep)
{
	const char *p = body, *end = body + len;
	struct img_paths *ps;
	uint64_t i = 0;
	size_t n;
	int err;

	err = img_paths_new(d->img, &ps);
	if (err) {
		ctl_reply_refuse(rep, "%s", err_str(err));
		return false;
	}
	for (; p < end && !err; p += n + 1) {
		n = strlen(p); /* the body ends in a NUL past @end */
		i++;
		if (p + n == end) {
			refuse_at(rep, i, p, n, "does not end in a NUL");
			err = -EINVAL;
		} else {
			err = add_path(d, ps, p, n, i, plan, rep);
		}
	}
	img_paths_free(ps);
	return !err;
}

void order_req(struct sqcd *d, const char *body, uint64_t len,
	       struct ctl_reply *rep)
{
	struct order_plan plan = { 0 };
	struct order_stats os = { 0 };
	uint64_t files, staged;
	int err;

	if (d->order)
		order_get_stats(d->order, &os);
	if (!os.window) {
		ctl_reply_refuse(
			rep, "epoch order off (mounted with order_window=0)");
		return;
	}
	if (!build(d, body, len, &plan, rep)) {
		order_plan_release(&plan);
		return;
	}
	files = plan.items;
	staged = plan.staged;
	err = order_plan_set(d->order, &plan);
	if (err) {
		ctl_reply_refuse(rep, "%s", err_str(err));
		return;
	}
	/* Ranges that files share are read once: count them once. */
	order_get_stats(d->order, &os);
	log_info(
		"epoch order: %llu files, %llu bytes to read ahead (%llu staged)",
		(unsigned long long)files, (unsigned long long)os.planned,
		(unsigned long long)staged);
	rep->order.files = files;
	rep->order.bytes = os.planned;
	rep->order.staged = staged;
	rep->order.window = os.window;
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the epoch order of an image (order.h): the order as
 * the image's window, and the plans of ranges built from the stored bytes
 * each file's read needs (img_file_extents()).  A file's data blocks lie
 * one after the other in the image: they make one range, split between
 * blocks where it would pass ORDER_RANGE_MAX; its tail is a range of its
 * own, which files sharing a fragment block share.
 */
#define LOG_MOD "order"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "order/order.h"

/* struct order_src.read: the order reads the image file. */
static int src_read(void *arg, uint64_t off, void *dst, size_t len)
{
	return img_window_read(arg, off, dst, len);
}

/* struct img_window: the image asks the order. */
static int win_get(void *arg, uint64_t off, size_t len, void *dst)
{
	return order_get(arg, off, len, dst);
}

static bool win_in_ram(void *arg, uint64_t off, size_t len)
{
	return order_has(arg, off, len);
}

static void win_used(void *arg, uint64_t off, size_t len, uint64_t amount)
{
	order_skip(arg, off, len, amount);
}

static void win_release(void *arg)
{
	order_free(arg);
}

int order_attach(struct img *img, const struct order_opts *o,
		 struct order **out)
{
	const struct order_src src = { src_read, img };
	struct img_window w = { win_get, win_in_ram, win_used, win_release,
				NULL };
	int err;

	err = order_new(&src, o, out);
	if (err)
		return err;
	w.arg = *out;
	err = img_set_window(img, &w);
	if (err) {
		order_free(*out);
		*out = NULL;
	}
	return err;
}

/* A file being added: its plan, and the run of blocks not pushed yet. */
struct adder {
	struct order_plan *p;
	struct img *img;
	uint64_t start; /* the run: [start, end) */
	uint64_t end;
};

/* Append [@off, @off + @len) for the file being added, unless staging
 * holds it. */
static int push(struct adder *a, uint64_t off, uint64_t len)
{
	struct order_plan *p = a->p;
	struct order_range *r;
	size_t cap;

	if (!len)
		return 0;
	if (img_staged(a->img, off, len)) {
		p->staged += len;
		return 0;
	}
	if (p->n == p->cap) {
		cap = p->cap ? p->cap * 2 : 1024;
		r = realloc(p->r, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		p->r = r;
		p->cap = cap;
	}
	p->r[p->n++] =
		(struct order_range){ off, (uint32_t)len, (uint32_t)p->items };
	p->bytes += len;
	return 0;
}

/* Push the run of blocks so far; the next starts at @at. */
static int flush(struct adder *a, uint64_t at)
{
	int err = push(a, a->start, a->end - a->start);

	a->start = a->end = at;
	return err;
}

/* img_extent_fn: a block joins the run unless that would make it too
 * long (or it does not follow it); the tail is a range of its own. */
static int on_extent(void *arg, uint64_t off, uint32_t len, bool tail)
{
	struct adder *a = arg;
	int err;

	if (tail) {
		err = flush(a, off);
		return err ? err : push(a, off, len);
	}
	if (off != a->end || a->end - a->start + len > ORDER_RANGE_MAX) {
		err = flush(a, off);
		if (err)
			return err;
	}
	a->end = off + len;
	return 0;
}

int order_plan_add(struct order_plan *p, struct img *img,
		   const struct img_inode *f)
{
	const struct order_plan was = *p;
	struct adder a = { p, img, 0, 0 };
	int err;

	if (p->items >= UINT32_MAX)
		return -ENOMEM;
	err = img_file_extents(img, f, on_extent, &a);
	if (!err)
		err = flush(&a, 0);
	if (err) {
		/* As it was, but for the room grown in @r. */
		p->n = was.n;
		p->bytes = was.bytes;
		p->staged = was.staged;
		return err;
	}
	p->items++;
	return 0;
}

int order_plan_set(struct order *ord, uint64_t client, struct order_plan *p)
{
	struct order_range *r = p->r;
	size_t n = p->n;
	uint64_t items = p->items;

	memset(p, 0, sizeof(*p));
	if (!ord) {
		free(r);
		return -EOPNOTSUPP;
	}
	return order_set(ord, client, r, n, items);
}

void order_plan_release(struct order_plan *p)
{
	free(p->r);
	memset(p, 0, sizeof(*p));
}

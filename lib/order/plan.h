/* SPDX-License-Identifier: MIT */
/*
 * This file declares the epoch order of a SquashFS image: an order
 * (order.h) that reads the image and serves its readers as the image's
 * window (struct img_window, image.h), and the plans it reads ahead,
 * built file by file from the bytes a read of each file needs.  It is
 * lib/order's only use of lib/image: order.c knows nothing of SquashFS,
 * and lib/image nothing of the order.
 */
#ifndef SQC_ORDER_PLAN_H
#define SQC_ORDER_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "order/order.h"

/*
 * An epoch order being built: the ranges of the image that reading its
 * files needs, in their order.  Zero it before the first
 * order_plan_add(); order_plan_set() takes the ranges, or
 * order_plan_release() frees them.
 */
struct order_plan {
	struct order_range *r; /* the ranges */
	size_t n; /* how many */
	size_t cap; /* room in @r */
	uint64_t items; /* files added */
	uint64_t bytes; /* the ranges' bytes */
	uint64_t staged; /* bytes left out: staging holds them */
};

/**
 * order_attach() - Set up the epoch order of an image.
 * @img: image, opened and not yet read by anyone but img_open()
 * @window: bytes held at most; 0: orders are refused (-EOPNOTSUPP)
 * @out: set to the order, for order_plan_set() and its stats
 *
 * The order reads the image (img_window_read()) and is the image's window
 * (img_set_window()): reads of the image take bytes it holds.
 *
 * Return: 0; -ENOMEM; -EBUSY if @img has a window already.
 * Ownership: the image's: img_close() frees the order.
 * Context: before the image is shared.
 */
int order_attach(struct img *img, uint64_t window, struct order **out);

/**
 * order_plan_add() - Add a file to an epoch order being built.
 * @p: the order being built
 * @img: image
 * @f: a regular file
 *
 * Adds the image ranges a read of the whole file needs: its data blocks
 * (in pieces of at most ORDER_RANGE_MAX, split between blocks) and its
 * tail (only the tail's bytes of a fragment stored uncompressed, the
 * whole fragment block otherwise), but for those staging holds or has
 * planned.  Sparse blocks need nothing.
 *
 * Return: 0; -EINVAL if not a regular file; -EFSCORRUPTED; -EIO;
 * -ENOMEM.  On error @p is as it was.
 * Context: any thread.
 */
int order_plan_add(struct order_plan *p, struct img *img,
		   const struct img_inode *f);

/**
 * order_plan_set() - Read ahead an epoch order from now on.
 * @ord: the image's order (order_attach()), or NULL
 * @p: the order built with order_plan_add(); its ranges are taken (@p is
 *     zeroed), also on error
 *
 * Replaces the order before it; an empty @p clears it.
 *
 * Return: 0; -EOPNOTSUPP if @ord is NULL or its window 0; -ENOMEM;
 * -errno from pthread_create().
 * Context: any thread.
 */
int order_plan_set(struct order *ord, struct order_plan *p);

/**
 * order_plan_release() - Free an order not given to order_plan_set().
 * @p: the order being built; zeroed
 *
 * Context: any thread; cannot fail.
 */
void order_plan_release(struct order_plan *p);

#endif /* SQC_ORDER_PLAN_H */

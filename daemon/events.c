// SPDX-License-Identifier: MIT
/*
 * This file implements the core's side of its events (events.h): the
 * table of handlers that features[] in main.c fills, and what a handler
 * may ask of the core in return.
 */
#include <errno.h>

#include "events.h"
#include "uring.h"

int sqcd_subscribe(struct sqcd_events *evs, uint32_t mask,
		   void (*fn)(void *f, const struct sqcd_event *ev), void *f)
{
	for (unsigned int ev = 0; ev < SQCD_EV__COUNT; ev++)
		if ((mask & SQCD_EV_BIT(ev)) && evs->n[ev] >= SQCD_EV_SUBS_MAX)
			return -ENOSPC;
	for (unsigned int ev = 0; ev < SQCD_EV__COUNT; ev++) {
		if (!(mask & SQCD_EV_BIT(ev)))
			continue;
		evs->sub[ev][evs->n[ev]++] = (struct sqcd_sub){ fn, f };
		evs->heard |= SQCD_EV_BIT(ev);
	}
	return 0;
}

/* The transport knows where a reply is copied from. */
void *sqcd_reply_buf(void)
{
	return uring_reply_buf();
}

/* The transport knows which queue the calling thread serves. */
void sqcd_push_gate(atomic_uint **busy, unsigned int *max)
{
	uring_gate(busy, max);
}

// SPDX-License-Identifier: MIT
/*
 * This file implements the pacing of the stager threads: how many of
 * their reads to keep under way, from how long they take (the rule of TCP
 * Vegas).
 */
#include "stage/stage_i.h"

/*
 * The fastest full-run read seen is the storage's time with no queue; once
 * per round (target reads), the mean time says how many reads wait in a
 * queue:
 *
 *	queued = target * (1 - rtt_min / rtt_mean)
 *
 * Fewer than STAGE_QUEUE_LOW: the storage has room (another server, a free
 * share of a link) and the target grows by one.  More than
 * STAGE_QUEUE_HIGH: reads queue behind each other, or behind readers'
 * reads, and it shrinks by one.  So a reader's read waits behind a few
 * stager reads at most, and a store that serves many reads at once gets as
 * many.
 */
void stage__pace(struct stage *st, int64_t rtt)
{
	double queued;

	if (rtt <= 0)
		return;
	if (!st->rtt_min || rtt < st->rtt_min)
		st->rtt_min = rtt;
	st->rtt_sum += rtt;
	if (++st->rtt_n < st->target)
		return;
	st->rtt_last = st->rtt_sum / st->rtt_n;
	queued =
		st->target * (1.0 - (double)st->rtt_min / (double)st->rtt_last);
	if (queued < STAGE_QUEUE_LOW && st->target < STAGE_TARGET_MAX)
		st->target++;
	else if (queued > STAGE_QUEUE_HIGH && st->target > 1)
		st->target--;
	st->rtt_sum = 0;
	st->rtt_n = 0;
}

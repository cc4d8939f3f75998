/* SPDX-License-Identifier: MIT */
/*
 * This file declares page-cache warming (-o warm=SIZE): files that a
 * listing showed the kernel, and files being opened, are pushed into the
 * kernel's page cache (see warm.c).  The module owns its thread, its queue
 * and its counters; it hears the core's events (warm_on_event()) and is
 * started and stopped through features[] in main.c.
 */
#ifndef SQC_DAEMON_WARM_H
#define SQC_DAEMON_WARM_H

struct sqcd;
struct sqcd_feature;
struct sqcd_event;
struct warm;
struct json_buf;

/**
 * warm_start() - Start pushing listed files into the page cache.
 * @d: the daemon, with its session and prefetcher set up
 * @out: set to the module, or NULL when warming is off (warm=0, direct_io)
 *
 * Return: 0; -ENOMEM; -errno from pthread_create().
 * Context: main thread, before the session loop.
 */
int warm_start(struct sqcd *d, void **out);

/**
 * warm_stop() - Stop the warming thread.
 * @f: the module; NULL is fine
 *
 * What it keeps stays for pushes at open until warm_free(): FUSE workers
 * and io_uring threads may still push.
 *
 * Context: main thread, after the session loop; cannot fail.
 */
void warm_stop(void *f);

/**
 * warm_free() - Free what warming kept, once nothing pushes.
 * @f: the module, stopped; NULL is fine
 *
 * Context: main thread, once every request thread and the listing thread
 * (which emits SQCD_EV_TREE_LISTED) are joined.
 */
void warm_free(void *f);

/**
 * warm_on_event() - Hear the core's events (events.h).
 * @f: the module (struct warm)
 * @ev: the event:
 *      SQCD_EV_ENTRY_LISTED: a listed file is kept until a read follows,
 *      then queued (files are pushed in the order their data lies in the
 *      image, the stager's order);
 *      SQCD_EV_RANGE_READ: files listed before may be pushed now, a READ
 *      of a whole file marks it given, and the rest of a file larger
 *      than the first READ is pushed before the reply;
 *      SQCD_EV_READER, SQCD_EV_TREE_LISTED: files listed before may be
 *      pushed now;
 *      SQCD_EV_FILE_OPENED: the file (up to 1 MiB) is pushed before the
 *      reply, once;
 *      SQCD_EV_FORGOTTEN: the kernel may be given the file again.
 *      Others are ignored.
 *
 * Pushes before a reply wait for no other push: they are skipped when
 * enough threads push already (sqcd_push_gate(), or half the FUSE
 * workers), since a push can wait for a READ that needs a free thread.
 *
 * Context: FUSE workers and io_uring threads, inside the request, and the
 * listing thread (SQCD_EV_TREE_LISTED); queueing takes warming's lock,
 * never waits on the warming itself.
 */
void warm_on_event(void *f, const struct sqcd_event *ev);

/**
 * warm_stats_json() - Append "warm":{budget,files,bytes,dropped,open_files,
 * open_bytes}, and a comma.
 * @w: the module; NULL appends zeros
 * @b: the stats reply
 *
 * Context: the control thread.
 */
void warm_stats_json(struct warm *w, struct json_buf *b);

/* The feature as the core knows it (daemon.h): warm_start(), warm_stop(),
 * warm_free() and the events warm_on_event() hears. */
extern const struct sqcd_feature warm_feature;

#endif /* SQC_DAEMON_WARM_H */

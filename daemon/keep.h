/* SPDX-License-Identifier: MIT */
/*
 * This file declares the keep feature (-o keep, -o keep=PATH): the
 * daemon stages the image into a copy that the keeper (mountctl keeper,
 * lib/keep) holds, and starts from the copy the keeper kept of this
 * user's last mount of the same, unchanged image.  It asks the keeper
 * while the image is opened, before anything is staged (img_opts.backing),
 * and holds the keeper's connection open until the daemon ends: the
 * keeper keeps the copy once it closes, an exit or a SIGKILL alike.
 * Without a keeper (no socket, or not root's) the mount stages as
 * without -o keep, after one log line.
 */
#ifndef SQC_DAEMON_KEEP_H
#define SQC_DAEMON_KEEP_H

struct sqcd;
struct sqcd_feature;
struct json_buf;
struct keep;

/**
 * keep_stats_json() - Append "keep":{...} to the stats, when on.
 * @k: the feature, or NULL (nothing is appended)
 * @b: buffer
 *
 * keep: {socket, site (the copy is the site's: root's, staged by the
 * keeper, followed here), answer ("copy": the keeper had one, "site":
 * the site copy, "new": a new copy was given to it, "no keeper",
 * "refused", "error"), keeper_complete
 * (bytes complete in the copy the keeper gave), adopted (bytes staged at
 * start from it), adopted_chunks, peers (bytes another mount sharing
 * the copy staged while this one ran)}.
 *
 * Context: any thread.
 */
void keep_stats_json(struct keep *k, struct json_buf *b);

extern const struct sqcd_feature keep_feature;

#endif /* SQC_DAEMON_KEEP_H */

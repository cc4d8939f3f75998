/* SPDX-License-Identifier: MIT */
/*
 * This file declares the verify feature (-o seal=, -o seal_root=): the
 * daemon finds the image's seal (mountctl seal; IMAGE.sqcseal beside the
 * image by default), and lib/image checks every byte it reads from the
 * image against it (docs/design.md, "Checked bytes").  The feature only
 * says which seal, before the image is opened, and shows what the checks
 * found in the stats; it has no thread.
 */
#ifndef SQC_DAEMON_VERIFY_H
#define SQC_DAEMON_VERIFY_H

struct sqcd;
struct sqcd_feature;
struct json_buf;
struct verify;

/**
 * verify_stats_json() - Append "verify":{...} to the stats.
 * @v: the feature, or NULL: reads are not checked ("seal":null)
 * @b: buffer
 *
 * verify: {seal (its path, or null), root (its root hash in hex),
 * data_bytes (the bytes it covers), tree_bytes (its tree, held in RAM),
 * blocks_ok, blocks_bad (4 KiB blocks checked, and those that did not
 * match), bytes_hashed, bad_reads (reads failed with EIO for a
 * mismatch), bad_staged (blocks of a kept copy that did not match, read
 * from the file instead), refused_bytes (chunks read for staging that did
 * not match: not staged)}.
 *
 * Context: any thread.
 */
void verify_stats_json(struct verify *v, struct json_buf *b);

extern const struct sqcd_feature verify_feature;

#endif /* SQC_DAEMON_VERIFY_H */

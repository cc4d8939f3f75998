// SPDX-License-Identifier: MIT
/*
 * This file implements the libFuzzer target for the control protocol's
 * messages (lib/ctl/proto.c).  The first byte of an input picks the
 * decoder: 0 is ctl_req_decode(), 1 + N is ctl_reply_decode() for command
 * N (taken modulo the commands); the rest, up to its first NUL, is the
 * line.  The replay driver tests/tools/fuzz_replay.c compiles this file
 * in and runs tests/fuzz/regress/ctl-* and tests/fuzz/seeds/fuzz_ctl/
 * through it.
 *
 * Oracle, besides crashes and sanitizer reports: a refused line leaves
 * the request untouched; an accepted one encodes, and its encoding
 * decodes to a request that encodes the same; an accepted reply (but
 * stats, which only the daemon builds) encodes and decodes back to the
 * same encoding, a refusal to the same error.  A violation aborts.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CTL_FUZZ_LINE_MAX 4096 /* longer inputs are cut */

static void fail(const char *what, const char *line)
{
	fprintf(stderr, "fuzz_ctl: %s: '%s'\n", what, line);
	abort();
}

static void check_request(const char *line)
{
	struct ctl_req r, again, untouched;
	char enc[CTL_REQ_MAX], enc2[CTL_REQ_MAX];

	memset(&r, 0xa5, sizeof(r));
	untouched = r;
	if (ctl_req_decode(line, &r)) {
		if (memcmp(&r, &untouched, sizeof(r)))
			fail("a refused request was written", line);
		(void)ctl_req_usage(line);
		return;
	}
	if (ctl_req_encode(&r, enc, sizeof(enc)))
		fail("an accepted request does not encode", line);
	if (ctl_req_decode(enc, &again))
		fail("an encoded request does not decode", enc);
	if (ctl_req_encode(&again, enc2, sizeof(enc2)) || strcmp(enc, enc2))
		fail("a request does not encode the same twice", line);
}

static void check_reply(enum ctl_cmd cmd, const char *json)
{
	struct json_buf b = { 0 }, b2 = { 0 };
	struct ctl_reply *rep = malloc(sizeof(*rep));
	struct ctl_reply *again = malloc(sizeof(*again));

	if (!rep || !again)
		abort();
	if (ctl_reply_decode(cmd, json, rep))
		goto out_free;
	if (rep->ok && cmd == CTL_CMD_STATS)
		goto out_free;
	if (ctl_reply_encode(rep, &b))
		fail("an accepted reply does not encode", json);
	if (ctl_reply_decode(cmd, b.p, again))
		fail("an encoded reply does not decode", b.p);
	if (again->ok != rep->ok || strcmp(again->error, rep->error))
		fail("a reply changed its status or error", json);
	if (ctl_reply_encode(again, &b2) || strcmp(b.p, b2.p))
		fail("a reply does not encode the same twice", json);
out_free:
	json_buf_release(&b);
	json_buf_release(&b2);
	free(again);
	free(rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line;
	size_t len;

	if (!size)
		return 0;
	len = size - 1;
	if (len > CTL_FUZZ_LINE_MAX)
		len = CTL_FUZZ_LINE_MAX;
	line = malloc(len + 1);
	if (!line)
		return 0;
	memcpy(line, data + 1, len);
	line[len] = '\0';
	if (data[0] == 0)
		check_request(line);
	else
		check_reply((enum ctl_cmd)((data[0] - 1) % CTL_CMD_COUNT),
			    line);
	free(line);
	return 0;
}

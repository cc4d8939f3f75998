// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/util: size parsing and
 * printing, error strings, checked arithmetic, little-endian decoding and
 * the log sink.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/ckd.h"
#include "util/endian.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

START_TEST(test_size_parse)
{
	uint64_t v;

	ck_assert_int_eq(size_parse("0", 0, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(size_parse("4096", 0, &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(size_parse("512K", 0, &v), 0);
	ck_assert_uint_eq(v, 512 << 10);
	ck_assert_int_eq(size_parse("64m", 0, &v), 0);
	ck_assert_uint_eq(v, 64 << 20);
	ck_assert_int_eq(size_parse("8GiB", 0, &v), 0);
	ck_assert_uint_eq(v, 8ull << 30);
	ck_assert_int_eq(size_parse("2TB", 0, &v), 0);
	ck_assert_uint_eq(v, 2ull << 40);
	ck_assert_int_eq(size_parse("25%", 1000, &v), 0);
	ck_assert_uint_eq(v, 250);
	ck_assert_int_eq(size_parse("25%", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("101%", 1000, &v), -EINVAL);
	ck_assert_int_eq(size_parse("", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("-1", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("12Q", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("12 M", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("1Mx", 0, &v), -EINVAL);
	ck_assert_int_eq(size_parse("99999999999999999999", 0, &v), -ERANGE);
	ck_assert_int_eq(size_parse("17179869184T", 0, &v), -ERANGE);
}
END_TEST

START_TEST(test_size_format)
{
	char buf[32];

	ck_assert_str_eq(size_format(0, buf, sizeof(buf)), "0 B");
	ck_assert_str_eq(size_format(1023, buf, sizeof(buf)), "1023 B");
	ck_assert_str_eq(size_format(1536, buf, sizeof(buf)), "1.5 KiB");
	ck_assert_str_eq(size_format(3ull << 30, buf, sizeof(buf)), "3.0 GiB");
	ck_assert_uint_gt(size_ram_total(), 1 << 20);
}
END_TEST

START_TEST(test_err_str)
{
	ck_assert_str_eq(err_str(-EFSCORRUPTED), "image is corrupt");
	ck_assert_str_eq(err_str(EFSCORRUPTED), "image is corrupt");
	ck_assert_str_eq(err_str(-ENOENT), strerror(ENOENT));
}
END_TEST

START_TEST(test_ckd)
{
	uint64_t r;
	uint32_t s;

	ck_assert(!ckd_add(&r, UINT64_MAX - 1, 1));
	ck_assert(ckd_add(&r, UINT64_MAX, 1));
	ck_assert(ckd_mul(&r, 1ull << 32, 1ull << 32));
	ck_assert(!ckd_mul(&r, 1ull << 31, 1ull << 32));
	ck_assert(ckd_add(&s, 0xffffffffu, 1u));
	ck_assert(ckd_sub(&s, 0u, 1u));
}
END_TEST

START_TEST(test_endian)
{
	const uint8_t b[8] = { 1, 2, 3, 4, 5, 6, 7, 0x88 };
	struct le64 v;
	uint8_t out[8];

	memcpy(&v, b, 8);
	ck_assert_uint_eq(le16_get(b), 0x0201);
	ck_assert_uint_eq(le32_get(b), 0x04030201);
	ck_assert_uint_eq(le64_get(b), 0x8807060504030201ull);
	ck_assert_uint_eq(le64_dec(v), 0x8807060504030201ull);
	le64_put(out, 0x8807060504030201ull);
	ck_assert(memcmp(out, b, 8) == 0);
	le32_put(out, 0xdeadbeef);
	ck_assert_uint_eq(le32_get(out), 0xdeadbeef);
	le16_put(out, 0xbeef);
	ck_assert_uint_eq(le16_get(out), 0xbeef);
}
END_TEST

static char last_line[1100];
static int hook_calls;

static void hook(int level, const char *line)
{
	(void)level;
	hook_calls++;
	snprintf(last_line, sizeof(last_line), "%s", line);
}

START_TEST(test_log)
{
	char big[2000];

	/* The sink still writes to stderr; keep the test's output short. */
	if (!freopen("/dev/null", "w", stderr))
		ck_abort_msg("cannot silence stderr");
	log_set_hook(hook);
	log_set_level(LOG_INFO);
	log_msg(LOG_DEBUG, "t", "hidden %d", 1);
	ck_assert_int_eq(hook_calls, 0);
	ck_assert(!log_is_enabled(LOG_DEBUG));
	log_msg(LOG_ERR, "mod", "cannot open image '%s': %s", "x", "nope");
	ck_assert_int_eq(hook_calls, 1);
	ck_assert_str_eq(
		last_line,
		"squashcache: error: mod: cannot open image 'x': nope");
	/* Trailing newlines (libfuse's style) are dropped. */
	log_msg(LOG_WARNING, NULL, "fuse says\n");
	ck_assert_str_eq(last_line, "squashcache: warning: fuse says");
	/* An overlong message is cut, not overflowed. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_msg(LOG_ERR, "m", "%s", big);
	ck_assert_uint_lt(strlen(last_line), 1024);
	log_set_level(LOG_DEBUG);
	log_msg(LOG_DEBUG, "t", "shown");
	ck_assert_str_eq(last_line, "squashcache: debug: t: shown");
	log_set_hook(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("util");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_size_parse);
	tcase_add_test(tc, test_size_format);
	tcase_add_test(tc, test_err_str);
	tcase_add_test(tc, test_ckd);
	tcase_add_test(tc, test_endian);
	tcase_add_test(tc, test_log);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

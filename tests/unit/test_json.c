// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of lib/json: the scanner on nested,
 * escaped and malformed text, and the buffer's growth and string escapes.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

START_TEST(test_json)
{
	const char *j =
		"{\"ok\":true,\"n\":42,\"neg\":-1.5e2,\"s\":\"a\\\"b\\\\c\\u0041\","
		"\"arr\":[1,{\"x\":2},\"]\"],\"o\":{\"in\":{\"deep\":7},"
		"\"z\":null}}";
	const char *v;
	char s[32];
	uint64_t u;
	double d;
	size_t len;

	ck_assert_int_eq(json_u64(j, "n", &u), 0);
	ck_assert_uint_eq(u, 42);
	ck_assert_int_eq(json_u64(j, "o.in.deep", &u), 0);
	ck_assert_uint_eq(u, 7);
	ck_assert_int_eq(json_double(j, "neg", &d), 0);
	ck_assert(d == -150.0);
	ck_assert_int_eq(json_u64(j, "neg", &u), -EPROTO);
	ck_assert_int_eq(json_str(j, "s", s, sizeof(s)), 0);
	ck_assert_str_eq(s, "a\"b\\cA");
	ck_assert_int_eq(json_str(j, "s", s, 3), -ERANGE);
	ck_assert_int_eq(json_get(j, "ok", &v, &len), 0);
	ck_assert_uint_eq(len, 4);
	ck_assert_int_eq(json_get(j, "o.z", &v, &len), 0);
	ck_assert(!strncmp(v, "null", len));
	ck_assert_int_eq(json_get(j, "missing", &v, &len), -ENOENT);
	ck_assert_int_eq(json_get(j, "o.missing", &v, &len), -ENOENT);
	ck_assert_int_eq(json_get(j, "n.x", &v, &len), -ENOENT);
	/* Skipping an array holding a "]" in a string works. */
	ck_assert_int_eq(json_get(j, "o", &v, &len), 0);
	/* Malformed text is refused, never overrun. */
	ck_assert_int_eq(json_u64("{\"a\":1", "b", &u), -EPROTO);
	ck_assert_int_eq(json_u64("{\"a\" 1}", "a", &u), -EPROTO);
	ck_assert_int_eq(json_u64("{\"a\":\"unterminated}", "b", &u), -EPROTO);
	ck_assert_int_eq(json_u64("[1,2]", "a", &u), -ENOENT);
}
END_TEST

START_TEST(test_buf)
{
	struct json_buf b = { 0 };
	char out[64];
	uint64_t u;

	json_buf_printf(&b, "{\"name\":");
	json_buf_str(&b, "tab\there \"q\" \xc3\xa9 \xff");
	for (int i = 0; i < 1000; i++)
		json_buf_printf(&b, "%s", i ? "" : ",\"n\":123");
	json_buf_printf(&b, "}");
	ck_assert(!b.oom);
	ck_assert_int_eq(json_u64(b.p, "n", &u), 0);
	ck_assert_uint_eq(u, 123);
	ck_assert_int_eq(json_str(b.p, "name", out, sizeof(out)), 0);
	/* Valid UTF-8 passes through; an invalid byte is escaped. */
	ck_assert(strstr(b.p, "\xc3\xa9") != NULL);
	ck_assert(strstr(b.p, "\\u00ff") != NULL);
	ck_assert(!strncmp(out, "tab\there \"q\" \xc3\xa9 \xff", 17));
	json_buf_release(&b);
	ck_assert_ptr_null(b.p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("json");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_buf);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

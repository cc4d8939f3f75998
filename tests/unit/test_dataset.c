// SPDX-License-Identifier: MIT
/*
 * This file implements the unit tests of slurm/dataset.c: the --dataset
 * grammar and its escapes, mount names, the comment's dataset= word, the
 * site configuration (its file too) and the option policy (what users may not set, and
 * forced options coming last).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slurm/dataset.h"

static struct ds_list l;
static char why[512];

START_TEST(test_list_basic)
{
	ck_assert_int_eq(
		ds_list_parse(
			"/d/a.sqfs:ram=1G,cache=2G,/d/b.squashfs,direct_io", &l,
			why, sizeof(why)),
		0);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_str_eq(l.im[0].path, "/d/a.sqfs");
	ck_assert_str_eq(l.im[0].opts, "ram=1G,cache=2G");
	ck_assert_str_eq(l.im[0].name, "a");
	ck_assert_str_eq(l.im[1].path, "/d/b.squashfs");
	ck_assert_str_eq(l.im[1].opts, "direct_io");
	ck_assert_str_eq(l.im[1].name, "b");
	/* Relative paths are images; "./ram=1G" is a file of that name. */
	ck_assert_int_eq(ds_list_parse("x.sqfs,./ram=1G", &l, why, sizeof(why)),
			 0);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_str_eq(l.im[1].path, "./ram=1G");
	ck_assert_int_eq(ds_list_parse("", &l, why, sizeof(why)), 0);
	ck_assert_uint_eq(l.n, 0);
}
END_TEST

START_TEST(test_list_escapes)
{
	char out[1024];

	ck_assert_int_eq(ds_list_parse("/d/a\\,b\\:c\\\\d.sqfs:ram=1G,/e f.img",
				       &l, why, sizeof(why)),
			 0);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_str_eq(l.im[0].path, "/d/a,b:c\\d.sqfs");
	ck_assert_str_eq(l.im[0].opts, "ram=1G");
	ck_assert_str_eq(l.im[0].name, "a_b_c_d");
	ck_assert_str_eq(l.im[1].name, "e_f");
	/* Formatting gives a list that parses back to the same images. */
	ck_assert_int_eq(ds_list_format(&l, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/d/a\\,b\\:c\\\\d.sqfs:ram=1G,/e\\ f.img");
	ck_assert_int_eq(ds_list_parse(out, &l, why, sizeof(why)), 0);
	ck_assert_str_eq(l.im[0].path, "/d/a,b:c\\d.sqfs");
	ck_assert_str_eq(l.im[1].path, "/e f.img");
	ck_assert_int_eq(ds_list_format(&l, out, 8), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_list_bad)
{
	static const char *const bad[] = {
		"ram=1G,/d/a.sqfs", /* an option before any image */
		"/d/a.sqfs,", /* trailing comma */
		"/d/a.sqfs,,/b", /* empty item */
		"/d/a.sqfs\\", /* trailing backslash */
		":ram=1G", /* empty path */
		"/d/a.sqfs:Ram=1", /* option names are [a-z_] */
		"/d/a.sqfs:ram=1,", /* empty option */
		"/d/a.sqfs:=1", /* no name */
	};
	char many[4096] = "";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(ds_list_parse(bad[i], &l, why, sizeof(why)) ==
				      -EINVAL,
			      "%s parsed", bad[i]);
		ck_assert_msg(why[0], "no reason for %s", bad[i]);
	}
	for (int i = 0; i <= DS_MAX_IMAGES; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
			 "%s/d/%d.sqfs", i ? "," : "", i);
	ck_assert_int_eq(ds_list_parse(many, &l, why, sizeof(why)), -E2BIG);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_int_eq(
		ds_list_parse("/a/data.sqfs,/b/data.sqfs,/c/data.img,"
			      "/d/.hidden,/e/..,/f/.sqfs,/g/x\xc3\xa9.sif",
			      &l, why, sizeof(why)),
		0);
	ck_assert_uint_eq(l.n, 7);
	ck_assert_str_eq(l.im[0].name, "data");
	ck_assert_str_eq(l.im[1].name, "data-2");
	ck_assert_str_eq(l.im[2].name, "data-3");
	ck_assert_str_eq(l.im[3].name, "_hidden");
	ck_assert_str_eq(l.im[4].name, "_.");
	ck_assert_str_eq(l.im[5].name, "_sqfs");
	ck_assert_str_eq(l.im[6].name, "x__");
	/* No name is ".", ".." or holds a '/'. */
	for (unsigned int i = 0; i < l.n; i++) {
		ck_assert_ptr_null(strchr(l.im[i].name, '/'));
		ck_assert_int_ne(l.im[i].name[0], '.');
	}
}
END_TEST

START_TEST(test_comment)
{
	char buf[256];

	ck_assert_int_eq(
		ds_comment_list("run-42 dataset=/a.sqfs:ram=0,/b\\ c.sqfs note",
				buf, sizeof(buf)),
		0);
	ck_assert_str_eq(buf, "/a.sqfs:ram=0,/b\\ c.sqfs");
	ck_assert_int_eq(ds_list_parse(buf, &l, why, sizeof(why)), 0);
	ck_assert_str_eq(l.im[1].path, "/b c.sqfs");
	ck_assert_int_eq(ds_comment_list("nodataset=/x dataset", buf,
					 sizeof(buf)),
			 -ENOENT);
	ck_assert_int_eq(ds_comment_list("", buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(ds_comment_list("dataset=/x", buf, 2), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_conf)
{
	struct ds_conf c;

	ds_conf_default(&c);
	ck_assert_str_eq(c.base, "/dev/shm");
	ck_assert_uint_eq(c.timeout_s, DS_DEFAULT_TIMEOUT_S);
	ck_assert_int_eq(ds_conf_line(&c, "# a comment\n", why, sizeof(why)),
			 0);
	ck_assert_int_eq(ds_conf_line(&c, "\n", why, sizeof(why)), 0);
	ck_assert_int_eq(ds_conf_line(&c, "  base=/scratch/local \n", why,
				      sizeof(why)),
			 0);
	ck_assert_str_eq(c.base, "/scratch/local");
	ck_assert_int_eq(ds_conf_set(&c, "timeout=12", why, sizeof(why)), 0);
	ck_assert_uint_eq(c.timeout_s, 12);
	ck_assert_int_eq(ds_conf_set(&c, "state=/run/x", why, sizeof(why)), 0);
	ck_assert_int_eq(ds_conf_set(&c, "prolog_spank=yes", why, sizeof(why)),
			 0);
	ck_assert(c.prolog_spank);
	/* Bad values leave the setting as it was. */
	ck_assert_int_eq(ds_conf_set(&c, "base=relative", why, sizeof(why)),
			 -EINVAL);
	ck_assert_str_eq(c.base, "/scratch/local");
	ck_assert_int_eq(ds_conf_set(&c, "timeout=0", why, sizeof(why)),
			 -EINVAL);
	ck_assert_int_eq(ds_conf_set(&c, "timeout=-5", why, sizeof(why)),
			 -EINVAL);
	ck_assert_uint_eq(c.timeout_s, 12);
	ck_assert_int_eq(ds_conf_set(&c, "allow=/a:rel", why, sizeof(why)),
			 -EINVAL);
	ck_assert_int_eq(ds_conf_set(&c, "force_options=ram=1G,\\x", why,
				     sizeof(why)),
			 -EINVAL);
	ck_assert_int_eq(ds_conf_set(&c, "user_options=ram;rm", why,
				     sizeof(why)),
			 -EINVAL);
	ck_assert_int_eq(ds_conf_set(&c, "bogus=1", why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "bogus"));
	ck_assert_int_eq(ds_conf_set(&c, "no equals sign", why, sizeof(why)),
			 -EINVAL);
}
END_TEST

/* keep=: off by default; a size or a percentage; mounts get keep=SOCKET. */
START_TEST(test_conf_keep)
{
	static const char *const bad[] = {
		"keep=-1", "keep=1X",  "keep=101%",	  "keep=",
		"keep=G",  "keep=1 G", "keep_socket=rel", "keep_socket=/a,b"
	};
	struct ds_conf c;
	char buf[512];

	ds_conf_default(&c);
	ck_assert(!ds_conf_keeps(&c));
	ck_assert_int_eq(ds_mount_opts(&c, "ram=1G", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "ram=1G");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(ds_conf_set(&c, bad[i], why, sizeof(why)),
				 -EINVAL);
	ck_assert(!ds_conf_keeps(&c));
	ck_assert_int_eq(ds_conf_set(&c, "keep=00G", why, sizeof(why)), 0);
	ck_assert(!ds_conf_keeps(&c));
	ck_assert_int_eq(ds_conf_set(&c, "keep=0%", why, sizeof(why)), 0);
	ck_assert(!ds_conf_keeps(&c));
	ck_assert_int_eq(ds_conf_set(&c, "keep=10%", why, sizeof(why)), 0);
	ck_assert(ds_conf_keeps(&c));
	ck_assert_int_eq(ds_conf_set(&c, "keep=512MiB", why, sizeof(why)), 0);
	ck_assert(ds_conf_keeps(&c));
	ck_assert_int_eq(
		ds_conf_set(&c, "keep_min_available=1G", why, sizeof(why)), 0);
	ck_assert_int_eq(
		ds_conf_set(&c, "keep_min_available=", why, sizeof(why)), 0);
	ck_assert_str_eq(c.keep_min_available, "");
	ck_assert_int_eq(ds_conf_get(&c, "keep", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "512MiB");
	ck_assert_int_eq(ds_conf_get(&c, "keep_socket", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, DS_KEEP_SOCKET);
	ck_assert_int_eq(
		ds_conf_set(&c, "keep_socket=/run/k/s", why, sizeof(why)), 0);
	/* Last, so that a user's keep=PATH never wins. */
	ck_assert_int_eq(ds_mount_opts(&c, "keep=/tmp/x", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "keep=/tmp/x,keep=/run/k/s");
}
END_TEST

/* site=, site_keep=, site_seal=, site_roots=: the keeper's site copies. */
START_TEST(test_conf_site)
{
	static const char *const bad[] = { "site=data",	     "site=/d:rel",
					   "site_keep=1X",   "site_seal=yes",
					   "site_seal=",     "site_roots=rel",
					   "site_roots=/a,b" };
	struct ds_conf c;
	char buf[512];

	ds_conf_default(&c);
	ck_assert_str_eq(c.site, "");
	ck_assert_str_eq(c.site_seal, "auto");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ds_conf_set(&c, bad[i], why, sizeof(why)) ==
				      -EINVAL,
			      "%s accepted", bad[i]);
	ck_assert_int_eq(ds_conf_set(&c, "site=/p/data:/scratch/ds", why,
				     sizeof(why)),
			 0);
	ck_assert_int_eq(ds_conf_set(&c, "site_keep=40%", why, sizeof(why)), 0);
	ck_assert_int_eq(ds_conf_set(&c, "site_seal=root", why, sizeof(why)),
			 0);
	ck_assert_int_eq(ds_conf_set(&c, "site_roots=/etc/squashcache/roots",
				     why, sizeof(why)),
			 0);
	ck_assert_int_eq(ds_conf_get(&c, "site", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/p/data:/scratch/ds");
	ck_assert_int_eq(ds_conf_get(&c, "site_keep", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "40%");
	ck_assert_int_eq(ds_conf_get(&c, "site_seal", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "root");
	ck_assert_int_eq(ds_conf_get(&c, "site_roots", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/etc/squashcache/roots");
	ck_assert_int_eq(ds_conf_set(&c, "site_keep=", why, sizeof(why)), 0);
	ck_assert_str_eq(c.site_keep, "");
	ck_assert_int_eq(ds_conf_set(&c, "site_roots=", why, sizeof(why)), 0);
	ck_assert_str_eq(c.site_roots, "");
	/* The mounts are as with keep= alone: the keeper decides. */
	ck_assert_int_eq(ds_conf_set(&c, "keep=1G", why, sizeof(why)), 0);
	ck_assert_int_eq(ds_mount_opts(&c, "", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "keep=" DS_KEEP_SOCKET);
}
END_TEST

static int bad_lines;
static int bad_no[8];

static void on_bad(const char *path, int no, const char *reason, void *arg)
{
	(void)path;
	(void)reason;
	ck_assert_ptr_eq(arg, &bad_lines);
	if (bad_lines < 8)
		bad_no[bad_lines] = no;
	bad_lines++;
}

START_TEST(test_conf_file)
{
	static char text[20000];
	char path[] = "/tmp/sqc-dsconf.XXXXXX", val[4096];
	struct ds_conf c;
	size_t n;
	FILE *f;
	int fd;

	/* Good lines apply, a bad one is said and skipped; a line too long
	 * is refused whole, and its rest ("base=/evil") is no line. */
	n = (size_t)snprintf(text, sizeof(text),
			     "# site\nbase=/scratch\nbogus=1\noptions=");
	memset(text + n, 'a', 9000);
	n += 9000;
	snprintf(text + n, sizeof(text) - n,
		 "base=/evil\ntimeout=9\nmountctl=/opt/bin/mountctl");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ds_conf_default(&c);
	bad_lines = 0;
	ck_assert_int_eq(ds_conf_read(&c, path, on_bad, &bad_lines), -EINVAL);
	unlink(path);
	ck_assert_int_eq(bad_lines, 2);
	ck_assert_int_eq(bad_no[0], 3);
	ck_assert_int_eq(bad_no[1], 4);
	ck_assert_str_eq(c.base, "/scratch");
	ck_assert_str_eq(c.options, "");
	ck_assert_uint_eq(c.timeout_s, 9);
	ck_assert_str_eq(c.mountctl, "/opt/bin/mountctl");
	ck_assert_int_eq(ds_conf_read(&c, path, NULL, NULL), -ENOENT);

	/* What the hooks ask. */
	ck_assert_int_eq(ds_conf_get(&c, "base", val, sizeof(val)), 0);
	ck_assert_str_eq(val, "/scratch");
	ck_assert_int_eq(ds_conf_get(&c, "timeout", val, sizeof(val)), 0);
	ck_assert_str_eq(val, "9");
	ck_assert_int_eq(ds_conf_get(&c, "prolog_spank", val, sizeof(val)), 0);
	ck_assert_str_eq(val, "no");
	ck_assert_int_eq(ds_conf_get(&c, "user_options", val, sizeof(val)), 0);
	ck_assert_str_eq(val, DS_USER_OPTIONS);
	ck_assert_int_eq(ds_conf_get(&c, "options", val, sizeof(val)), 0);
	ck_assert_str_eq(val, "");
	ck_assert_int_eq(ds_conf_get(&c, "state", val, sizeof(val)), -ENOENT);
	ck_assert_int_eq(ds_conf_get(&c, "base", val, 4), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_list_name)
{
	/* The names `mountctl job name` gives the hooks. */
	l.n = 3;
	snprintf(l.im[0].path, sizeof(l.im[0].path), "/d/my data.sqfs");
	snprintf(l.im[1].path, sizeof(l.im[1].path), "/e/my data.sqsh");
	snprintf(l.im[2].path, sizeof(l.im[2].path), "/f/");
	ds_list_name(&l);
	ck_assert_str_eq(l.im[0].name, "my_data");
	ck_assert_str_eq(l.im[1].name, "my_data-2");
	ck_assert_str_eq(l.im[2].name, "dataset");
}
END_TEST

START_TEST(test_image_name)
{
	/* One image's name: also mountctl's default mount point's. */
	char n[DS_NAME_MAX];

	ds_image_name("/d/train set.sqfs", n);
	ck_assert_str_eq(n, "train_set");
	ds_image_name("..", n);
	ck_assert_str_eq(n, "_.");
	ds_image_name("/d/.hidden.img", n);
	ck_assert_str_eq(n, "_hidden");
	ds_image_name("a/b\\c.squashfs", n);
	ck_assert_str_eq(n, "b_c");
	ds_image_name("/d/.sif", n);
	ck_assert_str_eq(n, "_sif");
}
END_TEST

START_TEST(test_policy)
{
	struct ds_conf c;
	char buf[256];

	ds_conf_default(&c);
	ck_assert_int_eq(ds_check_user_opts(&c, "ram=1G,stage=meta,direct_io",
					    why, sizeof(why)),
			 0);
	ck_assert_int_eq(ds_check_user_opts(&c, "", why, sizeof(why)), 0);
	/* Refused whatever user_options= says. */
	ck_assert_int_eq(
		ds_conf_set(&c, "user_options=ram,allow_other,log,ctl,hold",
			    why, sizeof(why)),
		0);
	ck_assert_int_eq(ds_check_user_opts(&c, "allow_other", why,
					    sizeof(why)),
			 -EPERM);
	ck_assert_ptr_nonnull(strstr(why, "allow_other"));
	ck_assert_int_eq(ds_check_user_opts(&c, "ram=1,log=/etc/x", why,
					    sizeof(why)),
			 -EPERM);
	ck_assert_ptr_nonnull(strstr(why, "'log'"));
	ck_assert_int_eq(ds_check_user_opts(&c, "ctl=@x", why, sizeof(why)),
			 -EPERM);
	ck_assert_int_eq(ds_check_user_opts(&c, "hold=1:2", why, sizeof(why)),
			 -EPERM);
	/* Not in user_options=. */
	ck_assert_int_eq(ds_check_user_opts(&c, "threads=64", why, sizeof(why)),
			 -EPERM);
	ck_assert_ptr_nonnull(strstr(why, "threads"));
	ck_assert_int_eq(ds_check_user_opts(&c, "ram=1,\\,x", why, sizeof(why)),
			 -EINVAL);
	/* The site's options, then the user's, then the forced ones. */
	ck_assert_int_eq(ds_conf_set(&c, "options=cache=64M", why, sizeof(why)),
			 0);
	ck_assert_int_eq(ds_conf_set(&c, "force_options=ram=100M,threads=4",
				     why, sizeof(why)),
			 0);
	ck_assert_int_eq(ds_mount_opts(&c, "ram=10G", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "cache=64M,ram=10G,ram=100M,threads=4");
	ck_assert_int_eq(ds_mount_opts(&c, "", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "cache=64M,ram=100M,threads=4");
	ck_assert_int_eq(ds_mount_opts(&c, "ram=10G", buf, 10), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_allow)
{
	struct ds_conf c;

	ds_conf_default(&c);
	ck_assert(ds_is_allowed(&c, "/anything"));
	ck_assert_int_eq(ds_conf_set(&c, "allow=/data/:/lustre/ds", why,
				     sizeof(why)),
			 0);
	ck_assert(ds_is_allowed(&c, "/data/x.sqfs"));
	ck_assert(ds_is_allowed(&c, "/lustre/ds/a/b.sqfs"));
	ck_assert(ds_is_allowed(&c, "/lustre/ds"));
	ck_assert(!ds_is_allowed(&c, "/database/x.sqfs"));
	ck_assert(!ds_is_allowed(&c, "/lustre/dsx/a.sqfs"));
	ck_assert(!ds_is_allowed(&c, "/etc/shadow"));
	ck_assert_int_eq(ds_conf_set(&c, "allow=/", why, sizeof(why)), 0);
	ck_assert(ds_is_allowed(&c, "/etc/x"));
}
END_TEST

START_TEST(test_job_dir_env)
{
	char buf[128];

	ck_assert_int_eq(ds_job_dir_name("42", "n1", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "job42-n1");
	ck_assert_int_eq(ds_job_dir_name("42", "../x", buf, sizeof(buf)),
			 -EINVAL);
	ck_assert_int_eq(ds_job_dir_name("42", ".n", buf, sizeof(buf)),
			 -EINVAL);
	ck_assert_int_eq(ds_job_dir_name("4 2", "n1", buf, sizeof(buf)),
			 -EINVAL);
	ck_assert_int_eq(ds_job_dir_name("", "n1", buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(ds_job_dir_name("42", "", buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(ds_job_dir_name("42", "n1", buf, 5), -ENAMETOOLONG);
	ck_assert_int_eq(ds_env_name("data-2.v1", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "SQUASHCACHE_MOUNT_DATA_2_V1");
	ck_assert_int_eq(ds_env_name("data", buf, 10), -ENAMETOOLONG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dataset");
	TCase *tc = tcase_create("dataset");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_list_basic);
	tcase_add_test(tc, test_list_escapes);
	tcase_add_test(tc, test_list_bad);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_comment);
	tcase_add_test(tc, test_conf);
	tcase_add_test(tc, test_conf_file);
	tcase_add_test(tc, test_conf_keep);
	tcase_add_test(tc, test_conf_site);
	tcase_add_test(tc, test_list_name);
	tcase_add_test(tc, test_image_name);
	tcase_add_test(tc, test_policy);
	tcase_add_test(tc, test_allow);
	tcase_add_test(tc, test_job_dir_env);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

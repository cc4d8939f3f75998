// SPDX-License-Identifier: MIT
/*
 * This file implements `mountctl seal`: make the seal of an image (its
 * hash tree, lib/seal) and write it beside the image, IMAGE.sqcseal, by
 * a rename so that nobody ever reads half of one; or, with --check, read
 * the seal and the image and say whether they match.  The image is opened
 * once and everything is read through that descriptor: lib/image checks
 * that it is SquashFS (a SIF file's SquashFS partition, as mountctl mount
 * finds it) and says how many bytes it has, which are what is sealed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "mountctl.h"
#include "seal/seal.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

struct seal_args {
	const char *image; /* IMAGE as given */
	const char *seal; /* --seal PATH, or NULL: beside the image */
	const uint8_t *root; /* --root: the root it must have, or NULL */
	uint8_t root_buf[SEAL_HASH_SIZE];
	bool check; /* --check */
	bool have_offset; /* --offset given */
	uint64_t offset; /* where the SquashFS starts in the file */
};

/*
 * Open the image and find its SquashFS range: the offset (--offset, a SIF
 * file's partition, or 0) and the filesystem's bytes.  Return: an exit
 * code (said); *@fd the image, open.
 */
static int open_image(struct seal_args *a, int *fd, uint64_t *size)
{
	struct img_opts opts;
	char proc[64], why[256];
	struct img *img;
	int err;

	*fd = open(a->image, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		mc_err("cannot open image '%s': %s", a->image, strerror(errno));
		return MC_EXIT_IMAGE;
	}
	if (!a->have_offset && mc_sif_is(a->image) &&
	    mc_sif_offset(a->image, &a->offset, why, sizeof(why))) {
		mc_err("'%s': %s", a->image, why);
		return MC_EXIT_IMAGE;
	}
	img_opts_default(&opts);
	opts.stage = STAGE_NONE;
	opts.offset = a->offset;
	/* The file just opened, whatever the name names by now. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", *fd);
	err = img_open(proc, &opts, &img);
	if (err) {
		mc_err("cannot %s '%s': %s", a->check ? "check" : "seal",
		       a->image,
		       err == -EMEDIUMTYPE ? "not a SquashFS image" :
					     err_str(err));
		return MC_EXIT_IMAGE;
	}
	*size = img_get_super(img)->bytes_used;
	img_close(img);
	return MC_EXIT_OK;
}

/* Where the seal is: --seal, or the image's real path and SEAL_SUFFIX.
 * Return: 0 or an exit code (said). */
static int seal_path(const struct seal_args *a, int fd, char *out, size_t cap)
{
	char proc[64], real[PATH_MAX];
	ssize_t n;

	if (a->seal) {
		if ((size_t)snprintf(out, cap, "%s", a->seal) >= cap)
			goto out_long;
		return 0;
	}
	/* Beside the file itself, not beside a symlink to it. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, real, sizeof(real) - 1);
	if (n <= 0 || real[0] != '/') {
		mc_err("cannot find where image '%s' is: %s", a->image,
		       n < 0 ? strerror(errno) : "not a file");
		return MC_EXIT_USAGE;
	}
	real[n] = '\0';
	if ((size_t)snprintf(out, cap, "%s%s", real, SEAL_SUFFIX) < cap)
		return 0;
out_long:
	mc_err("the seal's path for '%s' is too long", a->image);
	return MC_EXIT_USAGE;
}

/* Write the seal of [off, off + size) of @fd to @path, by a rename of a
 * file made beside it.  Return: an exit code (said). */
static int write_seal(const struct seal_args *a, int fd, uint64_t size,
		      const char *path, uint8_t root[SEAL_HASH_SIZE])
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	struct stat sb;
	int out, dfd, err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >=
	    sizeof(tmp)) {
		mc_err("the seal's path '%s' is too long", path);
		return MC_EXIT_USAGE;
	}
	out = mkostemp(tmp, O_CLOEXEC);
	if (out < 0) {
		mc_err("cannot write the seal '%s': %s (give another place with --seal PATH)",
		       path, strerror(errno));
		return MC_EXIT_FAIL;
	}
	err = seal_write(fd, a->offset, size, out, root);
	/* Readable by whoever may read the image. */
	if (!err && !fstat(fd, &sb) &&
	    fchmod(out, (sb.st_mode & 0444) | S_IWUSR))
		err = -errno;
	if (!err && fsync(out))
		err = -errno;
	if (close(out) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		mc_err("cannot write the seal '%s': %s", path,
		       err == -EIO ? "the image ends before its bytes do" :
				     err_str(err));
		return err == -EIO ? MC_EXIT_IMAGE : MC_EXIT_FAIL;
	}
	/* The rename itself, on disk. */
	snprintf(dir, sizeof(dir), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return MC_EXIT_OK;
}

/* Check the image against its seal.  Return: an exit code (said). */
static int check_seal(const struct seal_args *a, int fd, uint64_t size,
		      const char *path)
{
	char hex[SEAL_HEX_SIZE], sz[32];
	uint64_t bad = 0, nbad = 0;
	struct seal *s;
	int sfd, err;

	sfd = open(path, O_RDONLY | O_CLOEXEC);
	if (sfd < 0) {
		err = errno;
		mc_err("cannot open the seal '%s': %s%s", path, strerror(err),
		       err == ENOENT ? " (make it with: mountctl seal IMAGE)" :
				       "");
		return MC_EXIT_FAIL;
	}
	/* seal_open() says what is wrong with it. */
	err = seal_open(sfd, path, size, a->root, &s);
	close(sfd);
	if (err) {
		if (err == -ENOMEM || err == -EIO)
			mc_err("cannot read the seal '%s': %s", path,
			       err_str(err));
		return MC_EXIT_FAIL;
	}
	err = seal_check_fd(s, fd, a->offset, &bad, &nbad);
	seal_hex(seal_root(s), hex);
	seal_free(s);
	if (err == -EBADMSG) {
		mc_err("'%s' does not match its seal '%s': %llu of %llu blocks of 4 KiB differ, the first at byte %llu",
		       a->image, path, (unsigned long long)nbad,
		       (unsigned long long)DIV_ROUND_UP(size, SEAL_BLOCK_SIZE),
		       (unsigned long long)(bad * SEAL_BLOCK_SIZE));
		return MC_EXIT_FAIL;
	}
	if (err) {
		mc_err("cannot read image '%s': %s", a->image,
		       err == -EIO ? "it ends before its bytes do" :
				     err_str(err));
		return MC_EXIT_IMAGE;
	}
	printf("%s  %s\n", hex, a->image);
	fprintf(stderr, "mountctl: '%s' (%s) matches its seal '%s'\n", a->image,
		size_format(size, sz, sizeof(sz)), path);
	return MC_EXIT_OK;
}

static int run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "check", no_argument, NULL, 'c' },
		{ "seal", required_argument, NULL, 's' },
		{ "root", required_argument, NULL, 'r' },
		{ "offset", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct seal_args a = { 0 };
	uint8_t root[SEAL_HASH_SIZE];
	char path[PATH_MAX], hex[SEAL_HEX_SIZE], *end;
	uint64_t size;
	int c, fd = -1, ret;

	while ((c = getopt_long(argc, argv, "cs:r:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a.check = true;
			break;
		case 's':
			a.seal = optarg;
			break;
		case 'r':
			if (seal_parse_hex(optarg, a.root_buf))
				return mc_bad_usage(
					&mc_cmd_seal,
					"bad --root '%s' (64 hex digits, as mountctl seal prints)",
					optarg);
			a.root = a.root_buf;
			break;
		case 'O':
			errno = 0;
			a.offset = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || *optarg == '-')
				return mc_bad_usage(
					&mc_cmd_seal,
					"bad --offset '%s' (bytes before the SquashFS in the file)",
					optarg);
			a.have_offset = true;
			break;
		case 'h':
			mc_usage(&mc_cmd_seal, stdout);
			return MC_EXIT_OK;
		default:
			mc_usage(&mc_cmd_seal, stderr);
			return MC_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return mc_bad_usage(&mc_cmd_seal,
				    "expected one IMAGE, got %d arguments",
				    argc - optind);
	if (a.root && !a.check)
		return mc_bad_usage(
			&mc_cmd_seal,
			"--root goes with --check (sealing prints the root)");
	a.image = argv[optind];
	log_set_level(LOG_WARNING);
	ret = open_image(&a, &fd, &size);
	if (!ret)
		ret = seal_path(&a, fd, path, sizeof(path));
	if (!ret && a.check)
		ret = check_seal(&a, fd, size, path);
	else if (!ret) {
		ret = write_seal(&a, fd, size, path, root);
		if (!ret)
			printf("%s  %s\n", seal_hex(root, hex), a.image);
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

const struct mc_cmd mc_cmd_seal = {
	.name = "seal",
	.args = "[--check [--root HEX]] [--seal PATH] [--offset N] IMAGE",
	.summary = "write an image's hash tree beside it, or check it",
	.help = "\n"
		"Reads IMAGE once and writes its seal, a tree of SHA-256 hashes of\n"
		"its 4 KiB blocks, to IMAGE.sqcseal beside the image file (a\n"
		"symlink's target; made beside it, then renamed into place), and\n"
		"prints the root hash and IMAGE.  squashcached finds the seal\n"
		"there and checks every byte it reads from the image against it:\n"
		"a block that does not match fails with EIO.  Pin the root with\n"
		"squashcached -o seal_root=HEX to accept that seal only.\n"
		"\n"
		"  -c, --check        do not write: read the seal and the whole image\n"
		"                     and say whether they match (prints the root)\n"
		"  -r, --root HEX     with --check: the seal must have this root hash\n"
		"  -s, --seal PATH    the seal's file (default IMAGE.sqcseal)\n"
		"      --offset N     the SquashFS starts N bytes into the file (a\n"
		"                     SIF file's partition is found by itself)\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 written, or the image matches its seal; 1 it does\n"
		"not match, the seal is damaged, of another image or has another\n"
		"root, or cannot be written; 2 usage error; 4 the image is\n"
		"missing, unreadable or not SquashFS.\n",
	.run = run,
};

// SPDX-License-Identifier: MIT
/*
 * This file implements finding the SquashFS partition of an Apptainer /
 * Singularity SIF file, so that `mountctl mount` can pass offset= to the
 * daemon.
 *
 * Detection: a file is a SIF file when the 10 bytes at offset 32 (after
 * the 32-byte "#!/usr/bin/env run-singularity" launch line) are
 * "SIF_MAGIC\0".  The global header then holds, little-endian, the
 * descriptor count (dtotal, int64 at 88) and the descriptor table's offset
 * (descroff, int64 at 96).  Each descriptor is 585 packed bytes: datatype
 * (int32 at 0), used (byte at 4), fileoff (int64 at 17), filelen (int64 at
 * 25), and for a partition (datatype 0x4004) fstype (int32 at 201, 1 =
 * SquashFS) and parttype (int32 at 205, 2 = primary system).  The primary
 * system SquashFS partition is taken, else the first SquashFS partition.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mountctl.h"

#define SIF_MAGIC_OFF 32
#define SIF_MAGIC "SIF_MAGIC" /* 9 bytes and a NUL */
#define SIF_HDR_LEN 128
#define SIF_DTOTAL_OFF 88
#define SIF_DESCROFF_OFF 96
#define SIF_DESC_LEN 585
#define SIF_DESC_MAX 4096 /* more descriptors than any real file has */
#define SIF_DATA_PARTITION 0x4004
#define SIF_FS_SQUASH 1
#define SIF_PART_PRIMSYS 2

static uint64_t get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EINVAL;
}

bool mc_sif_is(const char *path)
{
	unsigned char hdr[SIF_MAGIC_OFF + 10];
	bool is = false;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (!read_at(fd, hdr, sizeof(hdr), 0))
		is = !memcmp(hdr + SIF_MAGIC_OFF, SIF_MAGIC, 10);
	close(fd);
	return is;
}

/* One descriptor: 0 and the partition if it is a used SquashFS one. */
static int check_desc(const unsigned char *d, uint64_t size, uint64_t *off,
		      uint64_t *len, bool *primary)
{
	if ((uint32_t)get_le(d, 4) != SIF_DATA_PARTITION || !d[4] ||
	    (uint32_t)get_le(d + 201, 4) != SIF_FS_SQUASH)
		return -ENOENT;
	*off = get_le(d + 17, 8);
	*len = get_le(d + 25, 8);
	if (*off > size || *len > size - *off)
		return -EINVAL;
	*primary = (uint32_t)get_le(d + 205, 4) == SIF_PART_PRIMSYS;
	return 0;
}

int mc_sif_offset(const char *path, uint64_t *out, char *why, size_t whylen)
{
	unsigned char hdr[SIF_HDR_LEN], d[SIF_DESC_LEN];
	uint64_t dtotal, descoff, off, len, i;
	bool found = false, primary;
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(why, whylen, "%s", strerror(-err));
		return err;
	}
	err = fstat(fd, &st) ? -errno : read_at(fd, hdr, sizeof(hdr), 0);
	if (err || memcmp(hdr + SIF_MAGIC_OFF, SIF_MAGIC, 10)) {
		snprintf(why, whylen,
			 "not a SIF file (no SIF_MAGIC at byte %d)",
			 SIF_MAGIC_OFF);
		err = -EINVAL;
		goto out_close;
	}
	dtotal = get_le(hdr + SIF_DTOTAL_OFF, 8);
	descoff = get_le(hdr + SIF_DESCROFF_OFF, 8);
	if (dtotal > SIF_DESC_MAX || descoff > (uint64_t)st.st_size) {
		snprintf(why, whylen,
			 "SIF header is damaged (%llu descriptors at %llu)",
			 (unsigned long long)dtotal,
			 (unsigned long long)descoff);
		err = -EINVAL;
		goto out_close;
	}
	for (i = 0; i < dtotal; i++) {
		err = read_at(fd, d, sizeof(d), descoff + i * SIF_DESC_LEN);
		if (err) {
			snprintf(
				why, whylen,
				"SIF descriptor %llu is past the end of the file",
				(unsigned long long)i);
			goto out_close;
		}
		err = check_desc(d, (uint64_t)st.st_size, &off, &len, &primary);
		if (err == -EINVAL) {
			snprintf(
				why, whylen,
				"SIF descriptor %llu points past the end of the file",
				(unsigned long long)i);
			goto out_close;
		}
		if (err)
			continue;
		if (!found || primary)
			*out = off;
		found = true;
		if (primary)
			break;
	}
	err = 0;
	if (!found) {
		snprintf(why, whylen, "SIF file has no SquashFS partition");
		err = -ENOENT;
	}
out_close:
	close(fd);
	return err;
}

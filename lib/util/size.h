/* SPDX-License-Identifier: MIT */
/*
 * This file implements parsing and printing of byte sizes ("512M", "2G",
 * "10%"), shared by the daemon's options and mountctl.
 */
#ifndef SQC_UTIL_SIZE_H
#define SQC_UTIL_SIZE_H

#include <stddef.h>
#include <stdint.h>

/**
 * size_parse() - Parse a byte size.
 * @s: digits with an optional suffix K, M, G or T (powers of 1024, an
 *     optional trailing "B" or "iB"), or a percentage of @total such as "25%"
 * @total: what a percentage is taken of (e.g. physical RAM); 0 forbids "%"
 * @out: the size in bytes
 *
 * Return: 0, or -EINVAL if @s is not a size, -ERANGE if it overflows.
 * Context: any thread.
 */
int size_parse(const char *s, uint64_t total, uint64_t *out);

/**
 * size_format() - Print a byte size for people ("1.5 GiB").
 * @bytes: the size
 * @buf: where to write
 * @cap: capacity of @buf, at least 16
 *
 * Return: @buf.  Context: any thread; cannot fail.
 */
char *size_format(uint64_t bytes, char *buf, size_t cap);

/**
 * size_ram_total() - Physical memory of this machine in bytes.
 *
 * Return: the size, or 0 if it cannot be told.  Context: any thread.
 */
uint64_t size_ram_total(void);

#endif /* SQC_UTIL_SIZE_H */

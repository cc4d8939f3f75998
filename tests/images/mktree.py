#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Generate a deterministic source tree for SquashFS round-trip tests.

    /usr/bin/python3 tests/images/mktree.py [options] DEST

The tree is a pure function of --seed and the selected kinds: names,
contents, modes, owners, xattrs and mtimes all come from seeded PRNGs
(one per kind, so enabling a kind does not reshuffle the others).  Run as
root: devices, owners, trusted.* and security.* xattrs need it.

Kinds (top-level directory in brackets):
  files      regular files of many sizes, random/compressible/zero  [files]
  dupes      duplicate contents, shared tails, near-duplicates      [dupes]
  names      255-byte, odd, UTF-8 and non-UTF-8 byte names          [names]
  sparse     holes at start, middle, end; all-hole files            [sparse]
  hardlinks  link groups across dirs, nlink 2..20, of every type    [links]
  symlinks   relative, absolute, dangling, looping, 4000+ bytes     [symlinks]
  devices    char/block devices, major/minor up to 4095/1048575     [dev]
  fifos      named pipes                                            [fifos]
  sockets    AF_UNIX sockets (bound, then closed)                   [sockets]
  xattrs     user/trusted/security xattrs, inline and out-of-line,
             shared sets, shared values, capability, POSIX ACLs     [xattrs]
  deep       two 60-level chains, one ~3000 bytes long              [deep]
  owners     uid/gid combinations and 2200 distinct ids             [owners]
  modes      all 4096 permission bit combinations, odd dir modes    [modes]
  mtimes     (attribute) varied mtimes, 0 .. 2^32-1, on every entry
  varyowner  (attribute) varied owners on every entry

Profiles: standard = every kind above; minimal = files, names,
symlinks, hardlinks, xattrs, mtimes; none = nothing (add kinds with
--with, or --big-dir/--huge-sparse).

--big-dir[=N] adds bigdir/ with N entries (default 100000); --huge-sparse
adds huge/ with a sparse file larger than 4 GiB that has data on both
sides of the 4 GiB mark.

Exit status: 0 done, 1 error, 2 usage, 77 the destination filesystem
lacks a feature the selected kinds need (the message says which).
"""

import argparse
import errno
import os
import random
import socket
import stat
import struct
import sys

KINDS = [
    "files", "dupes", "names", "sparse", "hardlinks", "symlinks", "devices",
    "fifos", "sockets", "xattrs", "deep", "owners", "modes", "mtimes",
    "varyowner",
]
PROFILES = {
    "standard": list(KINDS),
    "minimal": ["files", "names", "symlinks", "hardlinks", "xattrs", "mtimes"],
    "none": [],
}

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

# Timestamps squashfs can hold (unsigned 32-bit seconds).
MTIME_POOL = [0, 1, 2**31 - 1, 2**31, 2**32 - 1, 1234567890, 1700000000]
FIXED_MTIME = 1700000000
ROOT_MTIME = 1600000000
# Ids that exercise the id table: 0, overflow ids, >16 bit, >2^31, -2.
ID_POOL = [0, 1, 1000, 65534, 65535, 65536, 100000, 4000000000, 4294967294]

WORDS = (b"squash cache block fragment inode directory xattr table "
         b"lookup index metadata superblock compressor zstd gzip lz4 xz "
         b"lzo hole sparse tail export uid gid mode").split()


class Unsupported(Exception):
    """The destination filesystem lacks a feature we need."""


def text_bytes(rng, n):
    """Compressible, line-structured bytes."""
    out = bytearray()
    while len(out) < n:
        k = rng.randrange(4, 12)
        out += b"%08d " % rng.randrange(10**8)
        out += b" ".join(rng.choice(WORDS) for _ in range(k))
        out += b"\n"
    return bytes(out[:n])


def mixed_bytes(rng, n):
    """4 KiB pieces that are random, text or zero: mixes compressed,
    uncompressed and all-zero blocks at every block size."""
    out = bytearray()
    while len(out) < n:
        r = rng.random()
        if r < 0.4:
            out += rng.randbytes(4096)
        elif r < 0.8:
            out += text_bytes(rng, 4096)
        else:
            out += bytes(4096)
    return bytes(out[:n])


def x86ish_bytes(rng, n):
    """CALL rel32 instructions to a handful of absolute targets, padded
    with a few opcode-like bytes: the x86 BCJ filter turns the relative
    displacements back into repeating absolute addresses."""
    targets = [0x1000 + 0x40 * i for i in range(16)]
    out = bytearray()
    while len(out) < n:
        out += bytes(rng.choice(b"\x55\x89\xe5\x48\x8b\x90\xc3")
                     for _ in range(rng.randrange(0, 4)))
        rel = (rng.choice(targets) - (len(out) + 5)) & 0xFFFFFFFF
        out += b"\xe8" + rel.to_bytes(4, "little")
    return bytes(out[:n])


class Tree:
    def __init__(self, root, seed, kinds, quiet):
        self.root = os.fsencode(root)
        self.seed = seed
        self.kinds = set(kinds)
        self.quiet = quiet
        self.dirs = []  # (path, mtime) for the final bottom-up pass
        self.entries = 0
        self.data_bytes = 0
        self.notes = []

    def rng(self, what):
        return random.Random("%d:%s" % (self.seed, what))

    def p(self, rel):
        if isinstance(rel, str):
            rel = rel.encode()
        return os.path.join(self.root, rel) if rel else self.root

    def meta(self, rng, mode, uid=None, gid=None, mtime=None):
        if uid is None:
            uid = rng.choice(ID_POOL) if "varyowner" in self.kinds else 0
        if gid is None:
            gid = rng.choice(ID_POOL) if "varyowner" in self.kinds else 0
        if mtime is None:
            if "mtimes" in self.kinds:
                mtime = (rng.choice(MTIME_POOL) if rng.random() < 0.5
                         else rng.randrange(2**32))
            else:
                mtime = FIXED_MTIME
        return mode, uid, gid, mtime

    # Attributes, in the only order that sticks: owner (chown clears
    # setuid/setgid and security.capability), xattrs, mode, then mtime
    # (directories last of all, bottom-up, in finish()).
    def attrs(self, path, meta, xattrs=None, is_dir=False, is_link=False):
        mode, uid, gid, mtime = meta
        os.chown(path, uid, gid, follow_symlinks=False)
        for name, value in (xattrs or {}).items():
            self.setxattr(path, name, value)
        if not is_link:
            os.chmod(path, mode)
        if is_dir:
            self.dirs.append((path, mtime))
        else:
            os.utime(path, (mtime, mtime), follow_symlinks=False)
        self.entries += 1

    def setxattr(self, path, name, value):
        if isinstance(name, str):
            name = name.encode()
        try:
            os.setxattr(path, name, value, follow_symlinks=False)
        except OSError as e:
            if e.errno in (errno.EOPNOTSUPP, errno.ENOTSUP):
                raise Unsupported("setxattr %s: %s" % (name.decode(), e))
            raise

    def mkdir(self, rel, meta, xattrs=None):
        path = self.p(rel)
        os.mkdir(path, 0o700)
        self.attrs(path, meta, xattrs, is_dir=True)
        return path

    def file(self, rel, data, meta, xattrs=None):
        path = self.p(rel)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        self.data_bytes += len(data)
        self.attrs(path, meta, xattrs)
        return path

    def sparse(self, rel, size, pieces, meta, xattrs=None):
        """A file of SIZE bytes that is a hole except for PIECES, a list of
        (offset, bytes)."""
        path = self.p(rel)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            for off, data in pieces:
                os.pwrite(fd, data, off)
                self.data_bytes += len(data)
            os.ftruncate(fd, size)
        finally:
            os.close(fd)
        self.attrs(path, meta, xattrs)
        return path

    def symlink(self, rel, target, meta, xattrs=None):
        path = self.p(rel)
        if isinstance(target, str):
            target = target.encode()
        os.symlink(target, path)
        self.attrs(path, meta, xattrs, is_link=True)
        return path

    def node(self, rel, kind, meta, dev=0, xattrs=None):
        path = self.p(rel)
        if kind == "c":
            os.mknod(path, 0o600 | stat.S_IFCHR, dev)
        elif kind == "b":
            os.mknod(path, 0o600 | stat.S_IFBLK, dev)
        elif kind == "p":
            os.mkfifo(path, 0o600)
        elif kind == "s":
            make_socket(path)
        else:
            raise ValueError(kind)
        self.attrs(path, meta, xattrs)
        return path

    def link(self, src_rel, rel):
        os.link(self.p(src_rel), self.p(rel), follow_symlinks=False)

    def finish(self):
        # Deepest first, so setting a child's mtime cannot disturb it.
        self.dirs.sort(key=lambda d: d[0].count(b"/"), reverse=True)
        for path, mtime in self.dirs:
            os.utime(path, (mtime, mtime), follow_symlinks=False)


def make_socket(path):
    """Bind an AF_UNIX socket at PATH and close it, leaving the inode.
    sun_path is short, so bind a relative name from inside the directory."""
    d, name = os.path.split(path)
    old = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.chdir(d)
        s.bind(name)
    finally:
        s.close()
        os.fchdir(old)
        os.close(old)


# ---------------------------------------------------------------------------
# Kinds

def k_files(t):
    r = t.rng("files")
    t.mkdir("files", t.meta(r, 0o755))
    # Block-size edges for -b 4K .. 1M, each as random (stored
    # uncompressed) and compressible data; at 1M, mixed blocks and one
    # random file: data volume is what makes xz/lzma builds slow.
    edges = [0, 1, 2, 3, 7, 8, 100, 511, 512, 513, 4095, 4096, 4097, 8191,
             8192, 8193, 65535, 65536, 65537, 131071, 131072, 131073]
    for n in edges:
        t.file("files/rand_%d" % n, r.randbytes(n), t.meta(r, 0o644))
        t.file("files/text_%d" % n, text_bytes(r, n), t.meta(r, 0o644))
    for n in [1048575, 1048576, 1048577]:
        t.file("files/mixed_%d" % n, mixed_bytes(r, n), t.meta(r, 0o644))
    t.file("files/rand_1048577", r.randbytes(MiB + 1), t.meta(r, 0o644))
    for n in [1, 4096, 131072, 131073, 1048577]:
        t.file("files/zero_%d" % n, bytes(n), t.meta(r, 0o644))
    # Several MiB: incompressible, compressible, and a mix of block kinds.
    t.file("files/rand_2m", r.randbytes(2 * MiB + 5), t.meta(r, 0o644))
    t.file("files/text_2m", text_bytes(r, 2 * MiB + 3), t.meta(r, 0o644))
    t.file("files/mixed_2m", mixed_bytes(r, 2 * MiB + 77), t.meta(r, 0o644))
    # x86-like code (relative CALLs to a few targets), where xz -Xbcj x86
    # wins and data blocks carry the BCJ filter.
    t.file("files/x86ish", x86ish_bytes(r, 384 * KiB), t.meta(r, 0o755))
    # Many small files: several fragment blocks' worth of tails.
    t.mkdir("files/small", t.meta(r, 0o755))
    for i in range(300):
        n = r.randrange(1, 3000)
        data = r.randbytes(n) if i % 2 else text_bytes(r, n)
        t.file("files/small/s%03d" % i, data, t.meta(r, 0o644))


def k_dupes(t):
    r = t.rng("dupes")
    t.mkdir("dupes", t.meta(r, 0o755))
    big = r.randbytes(256 * KiB + 7)
    small = text_bytes(r, 333)
    block = r.randbytes(128 * KiB)
    tail_a, tail_b = r.randbytes(100), r.randbytes(100)
    for s in "abc":
        t.file("dupes/big_" + s, big, t.meta(r, 0o644))
    for s in "abcde":
        t.file("dupes/small_" + s, small, t.meta(r, 0o644))
    for s in "abc":
        t.file("dupes/empty_" + s, b"", t.meta(r, 0o644))
    # Same blocks, different tails; different blocks, same tail.
    t.file("dupes/sameblocks_1", block + tail_a, t.meta(r, 0o644))
    t.file("dupes/sameblocks_2", block + tail_b, t.meta(r, 0o644))
    t.file("dupes/sametail_1", r.randbytes(128 * KiB) + tail_a,
           t.meta(r, 0o644))
    t.file("dupes/sametail_2", r.randbytes(128 * KiB) + tail_a,
           t.meta(r, 0o644))
    # Same size, differing only in the last byte.
    near = bytearray(big)
    near[-1] ^= 0x5A
    t.file("dupes/near_big", bytes(near), t.meta(r, 0o644))
    near = bytearray(small)
    near[-1] ^= 0x5A
    t.file("dupes/near_small", bytes(near), t.meta(r, 0o644))
    # A small file equal to the start of a big one.
    t.file("dupes/prefix_of_big", big[:333], t.meta(r, 0o644))


ODD_NAMES = [
    b"with space", b" leading space", b"trailing space ", b"new\nline",
    b"tab\tchar", b"-leading-dash", b"--", b"-", b"back\\slash",
    b"\\", b"quote\"d", b"apos'trophe", b"$(dollar)", b"*?[glob]",
    b"a:b;c|d&e", b"%s%n%x", b".hidden", b"..dots", b"...",
    b"\x01ctl\x1f\x7f", b"\xff\xfe", b"\x80", b"hi\xc3\x28bad-utf8",
    b"\xed\xa0\x80surrogate", "ünïcödé".encode(), "日本語のファイル".encode(),
    "emoji-\U0001F600".encode(), "combining-e\u0301".encode(),
    "precomposed-\u00e9".encode(), b"Case", b"case", b"CASE",
    # Neighbours in byte order: lookup must compare bytes unsigned.
    b"x", b"x ", b"x\x01", b"x\x7f", b"x\x80", b"x\xff", b"x0", b"xx",
    b"=", b"#hash", b"~tilde", b"@at",
]


def k_names(t):
    r = t.rng("names")
    t.mkdir("names", t.meta(r, 0o755))
    for name in ODD_NAMES:
        t.file(b"names/" + name, name + b"\n", t.meta(r, 0o644))
    long_ascii = b"a" * 255
    long_utf8 = "é".encode() * 127 + b"z"  # 255 bytes
    long_high = bytes(range(0x80, 0x80 + 127)) * 2 + b"!"  # 255, not UTF-8
    for name in [long_ascii, b"a" * 254, long_utf8, long_high]:
        assert len(name) <= 255
        t.file(b"names/" + name, name[:16], t.meta(r, 0o644))
    t.mkdir(b"names/" + b"D" * 255, t.meta(r, 0o755))
    t.file(b"names/" + b"D" * 255 + b"/" + b"f" * 255, b"nested\n",
           t.meta(r, 0o644))
    t.symlink(b"names/" + b"L" * 255, b"T" * 255, t.meta(r, 0o777))
    # A directory of odd names holding directories with odd names.
    t.mkdir(b"names/dirs", t.meta(r, 0o755))
    for name in [b"new\nline", b"\xff", b" ", b"-d", "ü".encode()]:
        t.mkdir(b"names/dirs/" + name, t.meta(r, 0o755))
        t.file(b"names/dirs/" + name + b"/inner", b"x", t.meta(r, 0o644))


def k_sparse(t):
    r = t.rng("sparse")
    t.mkdir("sparse", t.meta(r, 0o755))
    rb = r.randbytes
    t.sparse("sparse/hole_start", 3 * MiB + 100,
             [(3 * MiB - 100 * KiB, rb(100 * KiB + 100))], t.meta(r, 0o644))
    t.sparse("sparse/hole_middle", 2 * MiB + 5 + 300 * KiB,
             [(0, rb(256 * KiB)), (2 * MiB + 5, text_bytes(r, 300 * KiB))],
             t.meta(r, 0o644))
    t.sparse("sparse/hole_end", 4 * MiB, [(0, rb(200 * KiB))],
             t.meta(r, 0o644))
    t.sparse("sparse/all_hole", 5 * MiB, [], t.meta(r, 0o644))
    t.sparse("sparse/all_hole_tiny", 100, [], t.meta(r, 0o644))
    t.sparse("sparse/all_hole_1m_plus1", MiB + 1, [], t.meta(r, 0o644))
    t.sparse("sparse/alternating", 8 * MiB + 333,
             [(i * 2 * MiB + 4097, rb(256 * KiB)) for i in range(4)] +
             [(8 * MiB + 300, rb(33))], t.meta(r, 0o644))
    t.sparse("sparse/one_block_128k", 512 * KiB,
             [(128 * KiB, rb(128 * KiB))], t.meta(r, 0o644))
    t.sparse("sparse/one_block_4k", 64 * KiB, [(4 * KiB, rb(4 * KiB))],
             t.meta(r, 0o644))
    t.sparse("sparse/data_then_hole_tail", 3 * MiB + 7,
             [(0, text_bytes(r, 512 * KiB))], t.meta(r, 0o644))
    t.file("sparse/written_zeros_1m", bytes(MiB), t.meta(r, 0o644))


def k_huge_sparse(t):
    r = t.rng("huge")
    t.mkdir("huge", t.meta(r, 0o755))
    four = 4 * GiB
    size = four + 5 * MiB + 123
    pieces = [
        (0, r.randbytes(1000)),
        (GiB + 12345, text_bytes(r, 200 * KiB)),
        (four - 3000, r.randbytes(6000)),  # straddles the 4 GiB mark
        (four + MiB, r.randbytes(MiB + 17)),
        (size - 50, r.randbytes(50)),
    ]
    t.sparse("huge/sparse_4g_plus", size, pieces, t.meta(r, 0o644))


def k_hardlinks(t):
    r = t.rng("hardlinks")
    for d in ["links", "links/sub1", "links/sub2", "links/sub2/deeper",
              "links/many"]:
        t.mkdir(d, t.meta(r, 0o755))
    t.file("links/a1", r.randbytes(200 * KiB + 3), t.meta(r, 0o644))
    for n in ["links/a2", "links/a3", "links/sub1/a4",
              "links/sub2/deeper/a5"]:
        t.link("links/a1", n)
    t.file("links/b1", text_bytes(r, 999), t.meta(r, 0o640))
    t.link("links/b1", "links/sub1/b2")
    t.file("links/e1", b"", t.meta(r, 0o600))
    t.link("links/e1", "links/e2")
    t.link("links/e1", "links/sub2/e3")
    t.file("links/suid1", b"#!/bin/sh\n", t.meta(r, 0o4755, 1000, 1000))
    t.link("links/suid1", "links/sub1/suid2")
    t.symlink("links/sym1", "a1", t.meta(r, 0o777))
    t.link("links/sym1", "links/sym2")
    t.link("links/sym1", "links/sub1/sym3")
    t.node("links/fifo1", "p", t.meta(r, 0o644))
    t.link("links/fifo1", "links/fifo2")
    t.link("links/fifo1", "links/sub2/fifo3")
    t.node("links/chr1", "c", t.meta(r, 0o660), os.makedev(1, 7))
    t.link("links/chr1", "links/chr2")
    t.node("links/blk1", "b", t.meta(r, 0o660), os.makedev(259, 300))
    t.link("links/blk1", "links/sub1/blk2")
    if "sockets" in t.kinds:
        t.node("links/sock1", "s", t.meta(r, 0o755))
        t.link("links/sock1", "links/sock2")
    if "xattrs" in t.kinds:
        t.file("links/x1", b"xattr hard link\n", t.meta(r, 0o644),
               {"user.linked": b"shared by x1 and x2",
                "trusted.linked": r.randbytes(300)})
        t.link("links/x1", "links/sub2/x2")
    t.file("links/many/m00", text_bytes(r, 5000), t.meta(r, 0o644))
    for i in range(1, 20):
        t.link("links/many/m00", "links/many/m%02d" % i)


def k_symlinks(t):
    r = t.rng("symlinks")
    t.mkdir("symlinks", t.meta(r, 0o755))
    long4000 = (b"long/" * 800)[:3999] + b"X"
    long4095 = (b"abcdefghijklmno/" * 256)[:4094] + b"Y"
    targets = [
        ("rel", b"../files/rand_1"), ("rel_dir", b".."),
        ("abs", b"/etc/passwd"), ("abs_root", b"/"),
        ("dangling", b"does/not/exist"), ("dangling_abs", b"/nonexistent/x"),
        ("one", b"x"), ("dot", b"."), ("self", b"self"),
        ("loop_a", b"loop_b"), ("loop_b", b"loop_a"),
        ("odd", b"with\nnewline \xff\xfe and spaces"),
        ("utf8", "ünï/cödé/日本".encode()),
        ("long4000", long4000), ("long4095", long4095),
        ("len_59", b"t" * 59), ("len_60", b"t" * 60), ("len_61", b"t" * 61),
        ("len_255", b"u" * 255), ("len_256", b"u" * 256),
        ("trailing_slash", b"dir/"), ("double//slash", b"a//b"),
    ]
    for name, target in targets:
        t.symlink(b"symlinks/" + name.encode().replace(b"/", b"_"), target,
                  t.meta(r, 0o777))


DEVICES = [
    ("c", "null", 1, 3), ("c", "zero_zero", 0, 0), ("c", "tty0", 4, 0),
    ("c", "maj255_min255", 255, 255), ("c", "maj256", 256, 1),
    ("c", "min256", 1, 256), ("c", "min65536", 10, 65536),
    ("c", "m300_70000", 300, 70000), ("c", "max", 4095, 1048575),
    ("b", "sda", 8, 0), ("b", "sda1", 8, 1), ("b", "nvme", 259, 0),
    ("b", "loop1023", 7, 1023), ("b", "m4000_1000000", 4000, 1000000),
    ("b", "maj511_min511", 511, 511), ("b", "max", 4095, 1048575),
]


def k_devices(t):
    r = t.rng("devices")
    t.mkdir("dev", t.meta(r, 0o755))
    for kind, name, major, minor in DEVICES:
        mode = r.choice([0o600, 0o660, 0o666, 0o640, 0o000, 0o7777])
        t.node("dev/%s_%s" % (kind, name), kind, t.meta(r, mode),
               os.makedev(major, minor))


def k_fifos(t):
    r = t.rng("fifos")
    t.mkdir("fifos", t.meta(r, 0o755))
    for mode in [0o644, 0o000, 0o666, 0o7777, 0o1600]:
        t.node("fifos/fifo_%04o" % mode, "p", t.meta(r, mode))


def k_sockets(t):
    r = t.rng("sockets")
    t.mkdir("sockets", t.meta(r, 0o755))
    for mode in [0o755, 0o777, 0o600, 0o000]:
        t.node("sockets/sock_%04o" % mode, "s", t.meta(r, mode))


def acl_xattr(entries):
    """Binary system.posix_acl_* value: version 2, (tag, perm, id) list."""
    out = struct.pack("<I", 2)
    for tag, perm, ident in entries:
        out += struct.pack("<HHI", tag, perm, ident)
    return out


ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_MASK, ACL_OTHER = 1, 2, 4, 0x10, 0x20
ACL_UNDEFINED = 0xFFFFFFFF


def k_xattrs(t):
    # mksquashfs 4.5.1 (checked by parsing its xattr table): a value over
    # 128 bytes is stored out of line; a value of 8 bytes or more already
    # stored for an earlier, different xattr set becomes an out-of-line
    # reference to that copy, even when the copy itself is inline; files
    # with identical sets share one xattr id.  Root xattrs are kept.
    r = t.rng("xattrs")
    t.mkdir("xattrs", t.meta(r, 0o755),
            {"user.dir": b"on the directory", "trusted.dir": b"t"})
    v = {
        "small": b"1",
        "v127": r.randbytes(127), "v128": r.randbytes(128),
        "v129": r.randbytes(129), "v200": bytes(range(200)),
        "v1000": text_bytes(r, 1000), "v3000": r.randbytes(3000),
        "eight": b"12345678", "seven": b"1234567",
        "shared500": r.randbytes(500),
    }
    def f(name, x, mode=0o644):
        t.file("xattrs/" + name, name.encode() + b"\n", t.meta(r, mode), x)

    f("plain", {"user.a": v["small"]})
    f("empty_value", {"user.empty": b""})
    f("all_ns", {"user.u": b"user value", "trusted.t": b"trusted value",
                 "security.s": b"security value"})
    f("inline_edge", {"user.v127": v["v127"], "user.v128": v["v128"]})
    f("ool_129", {"user.v129": v["v129"]})
    f("ool_binary_200", {"trusted.bin": v["v200"]})
    f("ool_1000", {"user.v1000": v["v1000"], "security.small": b"s"})
    f("ool_3000", {"user.v3000": v["v3000"]})
    f("long_name", {"user." + "n" * 250: b"name is 255 bytes"})
    f("many", {"user.k%02d" % i: text_bytes(r, 20 + i) for i in range(40)})
    # Identical sets on several files (one xattr id in the image).
    same = {"user.shared": r.randbytes(300), "trusted.shared": b"x",
            "security.shared": b"y"}
    for i in range(4):
        f("sameset_%d" % i, same)
    # The same value in different sets (stored once, out of line).
    f("dupval_1", {"user.a": v["shared500"], "user.b": b"p"})
    f("dupval_2", {"user.c": v["shared500"], "user.d": b"q"})
    f("dupval_3", {"trusted.x": v["shared500"]})
    f("dup8_1", {"user.e": v["eight"], "user.s": v["seven"]})
    f("dup8_2", {"user.f": v["eight"], "user.t": v["seven"]})
    # Other inode types (user.* is only allowed on files and dirs).
    t.symlink("xattrs/symlink", "plain", t.meta(r, 0o777),
              {"trusted.link": b"on a symlink", "security.link": b"sl"})
    t.mkdir("xattrs/subdir", t.meta(r, 0o700),
            {"user.sub": v["v1000"], "security.sub": b"d"})
    t.file("xattrs/subdir/inner", b"inner\n", t.meta(r, 0o600),
           {"user.inner": b"1"})
    t.node("xattrs/fifo", "p", t.meta(r, 0o644), xattrs={"trusted.fifo": b"f"})
    t.node("xattrs/chr", "c", t.meta(r, 0o600), os.makedev(1, 3),
           {"security.dev": b"d", "trusted.dev": v["v200"]})
    if "sockets" in t.kinds:
        t.node("xattrs/sock", "s", t.meta(r, 0o755),
               xattrs={"trusted.sock": b"s"})
    f("mode000", {"user.locked": b"readable by root"}, 0o000)
    t.file("xattrs/multiblock", r.randbytes(300 * KiB), t.meta(r, 0o644),
           {"user.big": b"file has blocks and xattrs"})
    t.sparse("xattrs/sparse", 2 * MiB, [(MiB, b"data")], t.meta(r, 0o644),
             {"user.sparse": b"1"})
    # A file capability (VFS_CAP_REVISION_2, effective, cap_net_raw).
    # Set after chown (chown drops it), which attrs() guarantees.
    cap = struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0)
    f("capability", {"security.capability": cap, "user.other": b"o"})
    # POSIX ACLs live in system.*, which SquashFS cannot store: mksquashfs
    # drops them.  Their presence on the source is deliberate.
    acl = acl_xattr([(ACL_USER_OBJ, 6, ACL_UNDEFINED), (ACL_USER, 4, 1000),
                     (ACL_GROUP_OBJ, 4, ACL_UNDEFINED),
                     (ACL_MASK, 4, ACL_UNDEFINED),
                     (ACL_OTHER, 0, ACL_UNDEFINED)])
    try:
        f("acl", {"system.posix_acl_access": acl, "user.with_acl": b"1"})
        t.mkdir("xattrs/acl_default_dir", t.meta(r, 0o750),
                {"system.posix_acl_default": acl})
    except Unsupported as e:
        t.notes.append("no POSIX ACLs on this filesystem (%s)" % e)


def k_deep(t):
    r = t.rng("deep")
    t.mkdir("deep", t.meta(r, 0o755))
    rel = "deep"
    for i in range(60):
        rel += "/level%02d" % i
        t.mkdir(rel, t.meta(r, 0o755))
    t.file(rel + "/leaf", b"60 levels down\n", t.meta(r, 0o644))
    t.symlink(rel + "/up", "../" * 60 + "files", t.meta(r, 0o777))
    t.link(rel + "/leaf", "deep/leaf_hardlink")
    rel = "deep/long"
    t.mkdir(rel, t.meta(r, 0o755))
    for i in range(60):  # ~3000-byte path
        rel += "/%02d_" % i + "n" * 46
        t.mkdir(rel, t.meta(r, 0o755))
    t.file(rel + "/leaf", text_bytes(r, 70000), t.meta(r, 0o644))


def k_owners(t):
    r = t.rng("owners")
    t.mkdir("owners", t.meta(r, 0o755, 0, 0))
    for uid in ID_POOL:
        for gid in ID_POOL:
            t.file("owners/u%d_g%d" % (uid, gid), b"", t.meta(r, 0o644, uid,
                                                             gid))
    t.symlink("owners/symlink_owned", "u0_g0",
              t.meta(r, 0o777, 4000000000, 100000))
    t.mkdir("owners/dir_owned", t.meta(r, 0o755, 65534, 4294967294))
    # More distinct ids than one 8 KiB id-table block holds (2048).
    t.mkdir("owners/many_ids", t.meta(r, 0o755, 0, 0))
    for i in range(2200):
        t.file("owners/many_ids/i%04d" % i, b"",
               t.meta(r, 0o644, 200000 + i, 300000 + i))


def k_modes(t):
    r = t.rng("modes")
    t.mkdir("modes", t.meta(r, 0o755))
    for mode in range(0o10000):
        t.file("modes/f%04o" % mode, b"", t.meta(r, mode))
    for mode in [0o000, 0o100, 0o111, 0o500, 0o555, 0o700, 0o750, 0o777,
                 0o1777, 0o2755, 0o3775, 0o4755, 0o7777, 0o1000, 0o6000]:
        d = "modes/d%04o" % mode
        t.mkdir(d, t.meta(r, mode))
        t.file(d + "/inside", b"x\n", t.meta(r, 0o644))
    t.node("modes/fifo_0000", "p", t.meta(r, 0o000))
    t.node("modes/chr_7777", "c", t.meta(r, 0o7777), os.makedev(1, 3))
    t.node("modes/blk_1000", "b", t.meta(r, 0o1000), os.makedev(8, 0))


def k_big_dir(t, n):
    r = t.rng("bigdir")
    t.mkdir("bigdir", t.meta(r, 0o755))
    for i in range(n):
        # Varied name lengths and a shared prefix make index entries busy.
        name = "entry-%06d-%s" % (i, "x" * r.randrange(0, 40))
        rel = "bigdir/" + name
        m = t.meta(r, 0o644)
        if i % 1000 == 999:
            t.mkdir(rel, m)
        elif i % 100 == 42:
            t.symlink(rel, "entry-%06d" % (i - 1), m)
        elif i % 10 == 3:
            t.file(rel, name.encode() + b"\n", m)
        else:
            t.file(rel, b"", m)


GENERATORS = [
    ("files", k_files), ("dupes", k_dupes), ("names", k_names),
    ("sparse", k_sparse), ("hardlinks", k_hardlinks),
    ("symlinks", k_symlinks), ("devices", k_devices), ("fifos", k_fifos),
    ("sockets", k_sockets), ("xattrs", k_xattrs), ("deep", k_deep),
    ("owners", k_owners), ("modes", k_modes),
]


def split_kinds(s):
    out = [k for k in s.split(",") if k]
    for k in out:
        if k not in KINDS:
            raise argparse.ArgumentTypeError("unknown kind %r" % k)
    return out


def main(argv):
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dest", help="directory to create (must not exist or "
                    "be empty)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", choices=sorted(PROFILES), default="standard")
    ap.add_argument("--with", dest="with_", type=split_kinds, default=[],
                    metavar="KINDS", help="comma-separated kinds to add")
    ap.add_argument("--without", type=split_kinds, default=[],
                    metavar="KINDS", help="comma-separated kinds to drop")
    ap.add_argument("--big-dir", type=int, nargs="?", const=100000,
                    default=0, metavar="N",
                    help="add bigdir/ with N entries (default 100000)")
    ap.add_argument("--huge-sparse", action="store_true",
                    help="add a >4 GiB sparse file with data past 4 GiB")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)

    kinds = [k for k in PROFILES[a.profile] + a.with_ if k not in a.without]
    if os.path.lexists(a.dest):
        if not os.path.isdir(a.dest) or os.listdir(a.dest):
            ap.error("%s exists and is not an empty directory" % a.dest)
    else:
        os.mkdir(a.dest)
    os.umask(0)
    t = Tree(a.dest, a.seed, kinds, a.quiet)
    try:
        for kind, gen in GENERATORS:
            if kind in t.kinds:
                gen(t)
        if a.big_dir:
            k_big_dir(t, a.big_dir)
        if a.huge_sparse:
            k_huge_sparse(t)
        os.chown(t.root, 0, 0)
        if "xattrs" in t.kinds:  # mksquashfs 4.5.1 keeps root xattrs
            t.setxattr(t.root, "user.root", b"on the root directory")
            t.setxattr(t.root, "trusted.root", b"r")
        os.chmod(t.root, 0o755)
        t.dirs.append((t.root, ROOT_MTIME))
        t.finish()
    except Unsupported as e:
        print("mktree: %s does not support: %s" % (a.dest, e),
              file=sys.stderr)
        return 77
    if not a.quiet:
        for n in t.notes:
            print("mktree: note: " + n)
        print("mktree: %s: seed %d, kinds %s%s%s: %d entries, %d data bytes"
              % (a.dest, a.seed, ",".join(k for k in KINDS if k in t.kinds)
                 or "-", ", big-dir %d" % a.big_dir if a.big_dir else "",
                 ", huge-sparse" if a.huge_sparse else "", t.entries,
                 t.data_bytes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

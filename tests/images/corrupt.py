#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Locate the structures of a SquashFS 4.0 image and write damaged copies.

    corrupt.py info IMG                 structures, inodes and entries (text)
    corrupt.py regions IMG              one "NAME START LENGTH" line per region
    corrupt.py offsets IMG [N]          truncation points: region boundaries
                                        and N (default 50) evenly spaced
    corrupt.py truncations IMG DIR [N]  write DIR/trunc-OFFSET for each of those
    corrupt.py flips IMG DIR [RELS [BITS]]
                                        write DIR/flip-REGION-REL-BIT for each
                                        region (RELS default 0,1,-1,7; BITS
                                        default 0,5), print their paths
    corrupt.py mutate IMG DIR N SEED    write N copies with 1-2 random bytes
                                        flipped (half in the first 4 KiB),
                                        print their paths
    corrupt.py blocks IMG DIR           write the compressed metadata blocks as
                                        seeds for fuzz_decompress (codec id,
                                        le24 capacity 8192, block)
    corrupt.py get IMG TARGET           print a field's value
    corrupt.py set IMG OUT TARGET VALUE write a copy with a field changed
    corrupt.py flip IMG OUT REGION REL [BIT]
                                        copy with bit BIT (default 0) of byte
                                        REL (modulo the region's length; may
                                        be negative) of REGION flipped
    corrupt.py truncate IMG OUT OFFSET  copy cut to OFFSET bytes
    corrupt.py link IMG OUT PATH TARGET copy whose directory entry PATH points
                                        at the inode of TARGET (a directory
                                        loop when TARGET is an ancestor, a
                                        hard-linked directory otherwise)
    corrupt.py read MNT [REF]           read everything under a mounted
                                        image (compared with the tree REF):
                                        one "ok|eio|eloop|enoent|diff|missing
                                        |err PATH" line each; exit 1 on "err"

TARGET names a field:
    super.FIELD          superblock: magic inode_count block_size frag_count
                         compression block_log flags id_count version_major
                         version_minor root_ref bytes_used id_table
                         xattr_table inode_table dir_table frag_table
                         export_table
    inode:PATH.FIELD     the inode of PATH ("/" is the root; "/sub/tail"):
                         type mode uid gid mtime ino, and by type nlink,
                         size, start_block, offset, parent, idx_count,
                         blocks_start, frag, frag_off, sparse, xattr, rdev,
                         block0 (first block size word), target (symlink)
    entry:PATH.FIELD     the directory entry of PATH in its parent:
                         offset ino_delta type size name
    header:PATH.FIELD    the header PATH's entry sits under: count start ino
    frag:N.FIELD         fragment table entry N: start size
    xattrid:N.FIELD      xattr id table entry N: ref count size
    id:N                 id table entry N
VALUE is an integer (0x.. allowed) or, for name, a string with Python
escapes ("sm/ll", "a\\x00b").  Fields inside metadata can be changed only
where the metadata block is stored uncompressed (images made with -noI;
-noD/-noF/-noX keep data, fragments and xattrs plain); otherwise the
command fails with exit status 3.

Regions (for flip/offsets): super, comp_opts, data (data and fragment
blocks), inode_table, dir_table, frag_table, frag_index, export_table,
export_index, id_table, id_index, xattr_kv, xattr_ids, xattr_header,
xattr_index, padding; and meta:TABLE:K for metadata block K of TABLE
(inode_table, dir_table, ...), whose first two bytes are its header.

Only the standard library is used.  Exit status: 0 done, 1 error, 2 usage,
3 the field is stored compressed.
"""

import lzma
import struct
import sys
import zlib

SUPER = [  # name, offset, size
    ("magic", 0, 4), ("inode_count", 4, 4), ("mkfs_time", 8, 4),
    ("block_size", 12, 4), ("frag_count", 16, 4), ("compression", 20, 2),
    ("block_log", 22, 2), ("flags", 24, 2), ("id_count", 26, 2),
    ("version_major", 28, 2), ("version_minor", 30, 2), ("root_ref", 32, 8),
    ("bytes_used", 40, 8), ("id_table", 48, 8), ("xattr_table", 56, 8),
    ("inode_table", 64, 8), ("dir_table", 72, 8), ("frag_table", 80, 8),
    ("export_table", 88, 8),
]
NONE = 0xFFFFFFFFFFFFFFFF
META = 8192

# Inode layouts after the 16-byte common header: (name, size) in order.
INODE_REST = {
    1: [("start_block", 4), ("nlink", 4), ("size", 2), ("offset", 2),
        ("parent", 4)],
    8: [("nlink", 4), ("size", 4), ("start_block", 4), ("parent", 4),
        ("idx_count", 2), ("offset", 2), ("xattr", 4)],
    2: [("blocks_start", 4), ("frag", 4), ("frag_off", 4), ("size", 4)],
    9: [("blocks_start", 8), ("size", 8), ("sparse", 8), ("nlink", 4),
        ("frag", 4), ("frag_off", 4), ("xattr", 4)],
    3: [("nlink", 4), ("size", 4)],
    10: [("nlink", 4), ("size", 4)],
    4: [("nlink", 4), ("rdev", 4)],
    5: [("nlink", 4), ("rdev", 4)],
    11: [("nlink", 4), ("rdev", 4), ("xattr", 4)],
    12: [("nlink", 4), ("rdev", 4), ("xattr", 4)],
    6: [("nlink", 4)],
    7: [("nlink", 4)],
    13: [("nlink", 4), ("xattr", 4)],
    14: [("nlink", 4), ("xattr", 4)],
}
HEADER = [("type", 2), ("mode", 2), ("uid", 2), ("gid", 2), ("mtime", 4),
          ("ino", 4)]


class Compressed(Exception):
    pass


def die(msg, code=1):
    sys.stderr.write("corrupt.py: %s\n" % msg)
    sys.exit(code)


def uint(b):
    return int.from_bytes(b, "little")


def decompress(comp, raw):
    if comp == 1:
        return zlib.decompress(raw)
    if comp in (2, 4):
        return lzma.decompress(raw)
    raise Compressed("compressor %d is not readable from Python" % comp)


class Table:
    """A run of metadata blocks, decoded, with a map back to the file."""

    def __init__(self, img, start, end):
        self.img = img
        self.start = start
        self.blocks = []  # (file pos, stored len, plain, decoded start)
        self.data = bytearray()
        self.bad = None
        pos = start
        while pos + 2 <= end:
            h = uint(img.data[pos:pos + 2])
            n = h & 0x7FFF
            plain = bool(h & 0x8000)
            raw = bytes(img.data[pos + 2:pos + 2 + n])
            if n == 0 or pos + 2 + n > end:
                self.bad = pos
                break
            try:
                dec = raw if plain else decompress(img.sb["compression"], raw)
            except Exception as e:  # noqa: BLE001 - any codec failure
                self.bad = "%d: %s" % (pos, e)
                dec = b""
            self.blocks.append((pos, n, plain, len(self.data)))
            self.data += dec
            pos += 2 + n
        self.end = pos

    def dec_offset(self, rel_block, off):
        for pos, _, _, dstart in self.blocks:
            if pos - self.start == rel_block:
                return dstart + off
        raise KeyError("no metadata block at +%d" % rel_block)

    def file_offset(self, d, size=1):
        """File offset of decoded bytes [d, d+size), if stored plain."""
        for i, (pos, n, plain, dstart) in enumerate(self.blocks):
            nxt = (self.blocks[i + 1][3] if i + 1 < len(self.blocks)
                   else len(self.data))
            if dstart <= d < nxt:
                if not plain:
                    raise Compressed("metadata block at %d is compressed "
                                     "(make the image with -noI)" % pos)
                if d + size > nxt:
                    raise Compressed("field straddles metadata blocks")
                return pos + 2 + d - dstart
        raise KeyError("decoded offset %d is outside the table" % d)


class Image:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = bytearray(f.read())
        if len(self.data) < 96 or self.data[:4] != b"hsqs":
            die("%s: not a SquashFS 4.0 image" % path)
        self.sb = {}
        for name, off, size in SUPER:
            self.sb[name] = uint(self.data[off:off + size])
        sb = self.sb
        self.block_size = sb["block_size"]
        self.regions = [("super", 0, 96)]
        pos = 96
        if sb["flags"] & 0x0400:
            n = uint(self.data[96:98]) & 0x7FFF
            self.regions.append(("comp_opts", 96, 2 + n))
            pos = 98 + n
        self.data_start = pos
        self.regions.append(("data", pos, sb["inode_table"] - pos))
        # Tables after the directory table, from their indexes.
        self.tables = {}
        nxt = sb["bytes_used"]
        if sb["xattr_table"] != NONE:
            xt = sb["xattr_table"]
            kv_start = uint(self.data[xt:xt + 8])
            count = uint(self.data[xt + 8:xt + 12])
            nidx = (count * 16 + META - 1) // META
            idx = [uint(self.data[xt + 16 + 8 * i:xt + 24 + 8 * i])
                   for i in range(nidx)]
            self.regions.append(("xattr_header", xt, 16))
            self.regions.append(("xattr_index", xt + 16, 8 * nidx))
            if idx:
                self.regions.append(("xattr_ids", idx[0], xt - idx[0]))
                self.tables["xattr_ids"] = Table(self, idx[0], xt)
                self.regions.append(("xattr_kv", kv_start, idx[0] - kv_start))
                self.tables["xattr_kv"] = Table(self, kv_start, idx[0])
            self.xattr_count = count
            nxt = kv_start
        self.index_region("id", sb["id_table"], sb["id_count"], 4)
        if sb["export_table"] != NONE:
            self.index_region("export", sb["export_table"],
                              sb["inode_count"], 8)
        if sb["frag_count"]:
            self.index_region("frag", sb["frag_table"], sb["frag_count"], 16)
        starts = [r[1] for r in self.regions if r[0] in
                  ("frag_table", "export_table", "id_table", "xattr_kv")]
        self.dir_end = min(starts) if starts else sb["bytes_used"]
        self.regions.append(("inode_table", sb["inode_table"],
                             sb["dir_table"] - sb["inode_table"]))
        self.regions.append(("dir_table", sb["dir_table"],
                             self.dir_end - sb["dir_table"]))
        self.tables["inode_table"] = Table(self, sb["inode_table"],
                                           sb["dir_table"])
        self.tables["dir_table"] = Table(self, sb["dir_table"], self.dir_end)
        if len(self.data) > sb["bytes_used"]:
            self.regions.append(("padding", sb["bytes_used"],
                                 len(self.data) - sb["bytes_used"]))
        self.regions.sort(key=lambda r: r[1])
        self.inodes = {}  # path -> inode dict
        self.entries = {}  # path -> entry dict
        try:
            self.walk()
        except (KeyError, Compressed, IndexError, struct.error) as e:
            self.walk_error = str(e)
        else:
            self.walk_error = None

    def index_region(self, what, start, count, esize):
        nidx = (count * esize + META - 1) // META
        idx = [uint(self.data[start + 8 * i:start + 8 * i + 8])
               for i in range(nidx)]
        self.regions.append((what + "_index", start, 8 * nidx))
        if idx:
            self.regions.append((what + "_table", idx[0], start - idx[0]))
            self.tables[what + "_table"] = Table(self, idx[0], start)

    # Inodes and directories.
    def inode(self, ref, path):
        t = self.tables["inode_table"]
        d = t.dec_offset(ref >> 16, ref & 0xFFFF)
        ino = {"ref": ref, "path": path, "fields": {}}
        p = d
        for name, size in HEADER + INODE_REST.get(
                uint(t.data[d:d + 2]), []):
            ino["fields"][name] = (p, size)
            ino[name] = uint(t.data[p:p + size])
            p += size
        typ = ino["type"]
        if typ in (2, 9):
            ino["fields"]["block0"] = (p, 4)
            ino["block0"] = uint(t.data[p:p + 4])
        if typ in (3, 10):
            ino["fields"]["target"] = (p, ino["size"])
            ino["target"] = bytes(t.data[p:p + ino["size"]])
        return ino

    def listing(self, dino):
        t = self.tables["dir_table"]
        d = t.dec_offset(dino["start_block"], dino["offset"])
        end = d + dino["size"] - 3
        out = []
        while d < end:
            hdr = {"fields": {"count": (d, 4), "start": (d + 4, 4),
                              "ino": (d + 8, 4)}}
            count = uint(t.data[d:d + 4]) + 1
            hstart = uint(t.data[d + 4:d + 8])
            hino = uint(t.data[d + 8:d + 12])
            d += 12
            for _ in range(count):
                e = {"fields": {"offset": (d, 2), "ino_delta": (d + 2, 2),
                                "type": (d + 4, 2), "size": (d + 6, 2)},
                     "header": hdr}
                off = uint(t.data[d:d + 2])
                delta = struct.unpack("<h", t.data[d + 2:d + 4])[0]
                e["type"] = uint(t.data[d + 4:d + 6])
                n = uint(t.data[d + 6:d + 8]) + 1
                e["fields"]["name"] = (d + 8, n)
                e["name"] = bytes(t.data[d + 8:d + 8 + n])
                e["ref"] = hstart << 16 | off
                e["ino"] = hino + delta
                out.append(e)
                d += 8 + n
        return out

    def walk(self):
        root = self.inode(self.sb["root_ref"], "/")
        self.inodes["/"] = root
        todo = [root]
        seen = {root["ref"]}
        while todo:
            dino = todo.pop(0)
            for e in self.listing(dino):
                name = e["name"].decode("utf-8", "surrogateescape")
                path = dino["path"].rstrip("/") + "/" + name
                self.entries[path] = e
                child = self.inode(e["ref"], path)
                self.inodes[path] = child
                if child["type"] in (1, 8) and e["ref"] not in seen:
                    seen.add(e["ref"])
                    todo.append(child)

    # Fields.
    def read_field(self, target):
        """The value of a field, from decoded metadata if need be."""
        try:
            off, size = self.locate(target)
            return uint(self.data[off:off + size])
        except Compressed:
            self.decoded = True
            try:
                d, size, table = self.locate(target)
            finally:
                self.decoded = False
            return uint(table.data[d:d + size])

    decoded = False

    def at(self, table, d, size):
        if self.decoded:
            return d, size, table
        return table.file_offset(d, size), size

    def locate(self, target):
        """Return (file offset, size) of a field."""
        if target == "super" or target.startswith("super."):
            name = target.split(".", 1)[1]
            for n, off, size in SUPER:
                if n == name:
                    return off, size
            die("no superblock field '%s'" % name, 2)
        kind, rest = target.split(":", 1)
        obj, _, field = rest.rpartition(".")
        if kind in ("inode", "entry", "header"):
            if self.walk_error:
                die("cannot walk the image: %s" % self.walk_error)
            src = self.inodes if kind == "inode" else self.entries
            if obj not in src:
                die("no such path '%s' (have: %s)" %
                    (obj, " ".join(sorted(src))), 2)
            rec = src[obj]
            if kind == "header":
                rec = rec["header"]
            if field not in rec["fields"]:
                die("%s '%s' has no field '%s' (has: %s)" %
                    (kind, obj, field, " ".join(rec["fields"])), 2)
            d, size = rec["fields"][field]
            table = self.tables["inode_table" if kind == "inode"
                                else "dir_table"]
            return self.at(table, d, size)
        if kind in ("frag", "xattrid", "id"):
            tname, esize, layout = {
                "frag": ("frag_table", 16, {"start": (0, 8), "size": (8, 4)}),
                "xattrid": ("xattr_ids", 16,
                            {"ref": (0, 8), "count": (8, 4), "size": (12, 4)}),
                "id": ("id_table", 4, {"": (0, 4)}),
            }[kind]
            if kind == "id":
                obj, field = rest, ""
            table = self.tables.get(tname)
            if table is None:
                die("image has no %s" % tname, 2)
            if field not in layout:
                die("no field '%s' in %s (have: %s)" %
                    (field, kind, " ".join(layout)), 2)
            o, size = layout[field]
            return self.at(table, int(obj, 0) * esize + o, size)
        die("unknown target '%s'" % target, 2)
        return None

    def relink(self, epath, tpath):
        """Point the entry of EPATH at the inode of TPATH."""
        if self.walk_error:
            die("cannot walk the image: %s" % self.walk_error)
        if epath not in self.entries or tpath not in self.inodes:
            die("no such path '%s' or '%s'" % (epath, tpath), 2)
        e = self.entries[epath]
        tgt = self.inodes[tpath]
        t = self.tables["dir_table"]
        hstart = uint(t.data[e["header"]["fields"]["start"][0]:][:4])
        hino = uint(t.data[e["header"]["fields"]["ino"][0]:][:4])
        if tgt["ref"] >> 16 != hstart:
            raise Compressed("target inode is in another metadata block "
                             "than the entry's header")
        delta = tgt["ino"] - hino
        if not -32768 <= delta < 32768:
            raise Compressed("inode number too far from the header's")
        typ = tgt["type"] if tgt["type"] <= 7 else tgt["type"] - 7
        for field, value in (("offset", tgt["ref"] & 0xFFFF),
                             ("ino_delta", delta & 0xFFFF), ("type", typ)):
            d, size = e["fields"][field]
            off = t.file_offset(d, size)
            self.data[off:off + size] = value.to_bytes(size, "little")

    def region(self, name):
        if name.startswith("meta:"):
            _, tname, k = name.split(":")
            t = self.tables.get(tname)
            if t is None or int(k) >= len(t.blocks):
                die("no metadata block %s" % name, 2)
            pos, n, _, _ = t.blocks[int(k)]
            return pos, 2 + n
        for n, start, length in self.regions:
            if n == name:
                return start, length
        die("no region '%s' (have: %s)" %
            (name, " ".join(r[0] for r in self.regions)), 2)
        return None


def parse_value(s):
    try:
        return int(s, 0)
    except ValueError:
        return s.encode("latin-1").decode("unicode_escape").encode("latin-1")


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def cmd_info(img):
    sb = img.sb
    print("superblock:")
    for name, off, size in SUPER:
        print("  %-14s %#x" % (name, sb[name]))
    print("regions:")
    for name, start, length in img.regions:
        print("  %-14s %8d %8d" % (name, start, length))
    for tname, t in sorted(img.tables.items()):
        kinds = "".join("p" if b[2] else "c" for b in t.blocks)
        print("table %s: %d blocks [%s]%s" %
              (tname, len(t.blocks), kinds,
               " (stops at %s)" % t.bad if t.bad else ""))
    if img.walk_error:
        print("walk stopped: %s" % img.walk_error)
    for path in sorted(img.inodes):
        ino = img.inodes[path]
        extra = " ".join("%s=%d" % (k, ino[k]) for k in ino["fields"]
                         if k not in ("type", "mode", "uid", "gid", "mtime"))
        print("inode %s type=%d ref=%#x %s" % (path, ino["type"], ino["ref"],
                                               extra))


def cmd_read(mnt, ref):
    """Read everything under a mount, bounded by the caller's timeout.

    One line per path: "ok", "eio" (EIO, the expected answer for damaged
    parts), "eloop" (the kernel's answer to a directory loop), "enoent"
    (listed, yet not found), "diff" (read fine but differs from REF:
    possible where a codec has no checksum), "missing" (in REF, not
    found), "err" (any other errno, e.g. ENOTCONN when the daemon died).
    Exit status 0 unless an "err" was seen.
    """
    import errno
    import os
    bad = 0

    def report(kind, path, extra=""):
        nonlocal bad
        if kind == "err":
            bad += 1
        print("%s %s%s" % (kind, path, extra))

    def oserr(path, e):
        # ELOOP: the kernel refuses a directory that is its own ancestor.
        # ENOENT: a listed name a lookup cannot find (a listing out of
        # order, say): a clean answer, unlike ENOTCONN (the daemon died).
        kind = {errno.EIO: "eio", errno.ELOOP: "eloop",
                errno.ENOENT: "enoent"}.get(e.errno, "err")
        report(kind, path,
               " " + os.strerror(e.errno) if kind == "err" else "")

    def walk(rel):
        path = os.path.join(mnt, rel)
        try:
            names = os.listdir(path)
        except OSError as e:
            oserr(rel or ".", e)
            names = []
        want = []
        if ref:
            try:
                want = os.listdir(os.path.join(ref, rel))
            except OSError:
                pass
        # Names the listing lost are still looked up: a damaged listing
        # must not hide the entries that can be served.
        for n in sorted(set(names) | set(want)):
            sub = os.path.join(rel, n)
            p = os.path.join(mnt, sub)
            try:
                st = os.lstat(p)
            except OSError as e:
                if e.errno == errno.ENOENT and n not in names:
                    report("missing", sub)
                else:
                    oserr(sub, e)
                continue
            try:
                for x in os.listxattr(p, follow_symlinks=False):
                    os.getxattr(p, x, follow_symlinks=False)
            except OSError as e:
                if e.errno not in (errno.ENOTSUP, errno.ENODATA):
                    oserr(sub + "@xattr", e)
            import stat as S
            if S.S_ISDIR(st.st_mode):
                if rel.count("/") < 8:
                    walk(sub)
                continue
            try:
                if S.S_ISLNK(st.st_mode):
                    got = os.readlink(p).encode("utf-8", "surrogateescape")
                    exp = None
                    if ref and os.path.islink(os.path.join(ref, sub)):
                        exp = os.readlink(os.path.join(ref, sub)).encode(
                            "utf-8", "surrogateescape")
                elif S.S_ISREG(st.st_mode):
                    with open(p, "rb") as f:
                        got = f.read()
                    exp = None
                    if ref and os.path.isfile(os.path.join(ref, sub)):
                        with open(os.path.join(ref, sub), "rb") as f:
                            exp = f.read()
                else:
                    got = exp = None
            except OSError as e:
                oserr(sub, e)
                continue
            report("ok" if exp is None or got == exp else "diff", sub)

    walk("")
    return 1 if bad else 0


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    cmd, path = argv[1], argv[2]
    if cmd == "read":
        return cmd_read(path, argv[3] if len(argv) > 3 else None)
    img = Image(path)
    try:
        if cmd == "info":
            cmd_info(img)
        elif cmd == "regions":
            for name, start, length in img.regions:
                print(name, start, length)
        elif cmd in ("offsets", "truncations"):
            outdir = None
            if cmd == "truncations":
                outdir = argv[3]
                argv = argv[:3] + argv[4:]
            n = int(argv[3]) if len(argv) > 3 else 50
            size = len(img.data)
            pts = {size * i // (n + 1) for i in range(1, n + 1)}
            for _, start, length in img.regions:
                for p in (start, start + 1, start + length - 1):
                    if 0 < p < size:
                        pts.add(p)
            for t in img.tables.values():
                for pos, n2, _, _ in t.blocks:
                    for p in (pos + 1, pos + 2, pos + 2 + n2 // 2):
                        if 0 < p < size:
                            pts.add(p)
            pts.update(p for p in (1, 4, 95, 96) if p < size)
            for p in sorted(pts):
                if outdir:
                    name = "%s/trunc-%d" % (outdir, p)
                    write(name, img.data[:p])
                    print(name)
                else:
                    print(p)
        elif cmd == "mutate":
            import random
            outdir, n, seed = argv[3], int(argv[4]), int(argv[5], 0)
            base = path.rsplit("/", 1)[-1]
            rng = random.Random("%d/%s" % (seed, base))
            for i in range(n):
                data = bytearray(img.data)
                what = []
                for _ in range(rng.randint(1, 2)):
                    lim = 4096 if rng.random() < 0.5 else len(data)
                    off = rng.randrange(min(lim, len(data)))
                    x = rng.randint(1, 255)
                    data[off] ^= x
                    what.append("%d^%02x" % (off, x))
                name = "%s/mut-%s-%d-%s" % (outdir, base, i, ",".join(what))
                write(name, data)
                print(name)
        elif cmd == "blocks":
            # Seeds for tests/fuzz/fuzz_decompress.c: byte 0 the codec id,
            # bytes 1-3 the output capacity (le24), then one stored block.
            outdir = argv[3]
            base = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            comp = img.sb["compression"]
            for tname, t in sorted(img.tables.items()):
                for k, (pos, n, plain, _) in enumerate(t.blocks[:2]):
                    if plain:
                        continue
                    name = "%s/dec-%s-%s-%d" % (outdir, base, tname, k)
                    write(name, bytes([comp]) + (8192).to_bytes(3, "little")
                          + bytes(img.data[pos + 2:pos + 2 + n]))
                    print(name)
        elif cmd == "flips":
            outdir = argv[3]
            rels = [int(x, 0) for x in (argv[4] if len(argv) > 4
                                        else "0,1,-1,7").split(",")]
            bits = [int(x, 0) for x in (argv[5] if len(argv) > 5
                                        else "0,5").split(",")]
            for rname, start, length in img.regions:
                if length <= 0:
                    continue
                for rel in rels:
                    for bit in bits:
                        off = start + rel % length
                        img.data[off] ^= 1 << bit
                        name = "%s/flip-%s-%d-%d" % (outdir, rname, rel, bit)
                        write(name, img.data)
                        img.data[off] ^= 1 << bit
                        print(name)
        elif cmd == "get":
            print(img.read_field(argv[3]))
        elif cmd == "set":
            if len(argv) != 6:
                return 2
            out, target, value = argv[3], argv[4], parse_value(argv[5])
            off, size = img.locate(target)
            if isinstance(value, bytes):
                img.data[off:off + len(value)] = value
            else:
                img.data[off:off + size] = (value & ((1 << 8 * size) - 1)
                                            ).to_bytes(size, "little")
            write(out, img.data)
        elif cmd == "link":
            if len(argv) != 6:
                return 2
            out, epath, tpath = argv[3], argv[4], argv[5]
            img.relink(epath, tpath)
            write(out, img.data)
        elif cmd == "flip":
            if len(argv) < 6:
                return 2
            out, rname, rel = argv[3], argv[4], int(argv[5], 0)
            bit = int(argv[6], 0) if len(argv) > 6 else 0
            start, length = img.region(rname)
            if length <= 0:
                die("region %s is empty" % rname)
            off = start + rel % length
            img.data[off] ^= 1 << bit
            write(out, img.data)
        elif cmd == "truncate":
            write(argv[3], img.data[:int(argv[4], 0)])
        else:
            print(__doc__)
            return 2
    except Compressed as e:
        die(str(e), 3)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

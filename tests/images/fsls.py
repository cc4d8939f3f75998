#!/usr/bin/python3
"""List a mounted tree in the format of tests/tools/sqc_ls (see there).

    fsls.py DIR [--no-xattrs]

Used to compare libsquashcache's view of an image with the kernel's.
"""
import os
import stat
import sys
import zlib


def esc(b):
    out = []
    for c in b:
        if 32 < c < 127 and c != 0x5C:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


TYPES = {stat.S_IFDIR: "dir", stat.S_IFREG: "reg", stat.S_IFLNK: "lnk",
         stat.S_IFBLK: "blk", stat.S_IFCHR: "chr", stat.S_IFIFO: "fifo",
         stat.S_IFSOCK: "sock"}


def line(path, full, no_xattrs):
    st = os.lstat(full)
    t = TYPES[stat.S_IFMT(st.st_mode)]
    isdev = t in ("blk", "chr")
    size = 0 if t == "dir" else st.st_size
    nlink = 0 if t == "dir" else st.st_nlink
    parts = [esc(path), t, "%04o" % stat.S_IMODE(st.st_mode), str(st.st_uid),
             str(st.st_gid), str(size), str(int(st.st_mtime)), str(nlink),
             "%d:%d" % ((os.major(st.st_rdev), os.minor(st.st_rdev)) if isdev else (0, 0))]
    if t == "reg":
        crc = 0
        with open(full, "rb") as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                crc = zlib.crc32(b, crc)
        parts.append("%08x" % crc)
    elif t == "lnk":
        parts.append(esc(os.readlink(full)))
    else:
        parts.append("-")
    if not no_xattrs:
        names = sorted(os.listxattr(full, follow_symlinks=False))
        if names:
            parts.append(";".join("%s=%s" % (n, os.getxattr(full, n, follow_symlinks=False).hex())
                                  for n in names))
        else:
            parts.append("-")
    return " ".join(parts)


def walk(root, rel, no_xattrs):
    names = sorted(os.listdir(root + b"/" + rel))
    for n in names:
        sub = rel + b"/" + n
        print(line(sub, root + b"/" + sub, no_xattrs))
        if stat.S_ISDIR(os.lstat(root + b"/" + sub).st_mode):
            walk(root, sub, no_xattrs)


def main():
    root = os.fsencode(sys.argv[1])
    no_x = "--no-xattrs" in sys.argv
    sys.stdout.reconfigure(errors="surrogateescape")
    print(line(b".", root, no_x))
    walk(root, b".", no_x)


main()

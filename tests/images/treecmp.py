#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Compare two directory trees entry by entry, without following symlinks.

    /usr/bin/python3 tests/images/treecmp.py [options] LEFT RIGHT

For every entry (names compared as bytes): file type, permission bits
(including setuid/setgid/sticky), uid, gid, size (all but directories),
mtime in seconds, nlink (directories only with --dir-nlink), rdev of
devices, symlink target, xattrs (names and values), and the content of
regular files.  Hard-link structure is checked too: names that share an
inode on one side must share one on the other, and no others may.

Content is read in 1 MiB-aligned windows and digested as sha256 over the
offset and bytes of every window that is not all zeros (plus the length),
so a 4 GiB hole costs a read and a compare but no hashing, and with
--trust-holes not even the read; equal digests mean equal content.  On a
mismatch the first differing byte offset is reported.

Xattrs: SquashFS stores only the user., trusted. and security.
namespaces; mksquashfs drops anything else (e.g. system.posix_acl_*) with
"Unrecognised xattr prefix".  When LEFT is a source tree and RIGHT an
image, pass --dropped-xattr-prefix system. : such names must then be
absent on the right (counted as expected drops); every other name must
match exactly.  A listxattr that fails with EOPNOTSUPP counts as an
empty list: the kernel's squashfs does that for directories and symlinks
of an image without an xattr table (regular files list nothing), and a
reader answering "none" instead is not wrong.

Exit status: 0 equal, 1 differences (each printed), 2 usage or a root that
cannot be read.  The last line is a summary.
"""

import argparse
import errno
import hashlib
import os
import stat
import sys

CHUNK = 1 << 20
ZEROS = bytes(CHUNK)


def fill(fd, buf, off):
    """Read len(buf) bytes at OFF, or up to EOF; short reads are retried."""
    mv = memoryview(buf)
    got = 0
    while got < len(buf):
        n = os.preadv(fd, [mv[got:]], off + got)
        if n == 0:
            break
        got += n
    return got


def show(b):
    """Printable form of a byte string (names may not be UTF-8)."""
    if isinstance(b, str):
        b = os.fsencode(b)
    out = []
    for c in b:
        if c == 0x5C:
            out.append("\\\\")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        elif c == 0x0A:
            out.append("\\n")
        elif c == 0x09:
            out.append("\\t")
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


def short(b, limit=80):
    if b is None:
        return "(absent)"
    s = show(b)
    if len(s) > limit:
        return "%s...(%d bytes)" % (s[:limit], len(b))
    return s


def ftype(mode):
    for test, name in [(stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"),
                       (stat.S_ISLNK, "symlink"), (stat.S_ISCHR, "chardev"),
                       (stat.S_ISBLK, "blockdev"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket")]:
        if test(mode):
            return name
    return "type-%o" % stat.S_IFMT(mode)


class Side:
    """One tree.  Lookups are relative to an open directory fd (xattr calls
    go through /proc/self/fd/N/NAME), so path length never matters."""

    def __init__(self, root, label, trust_holes):
        self.root = root
        self.label = label
        self.trust_holes = trust_holes
        self.inodes = {}  # st_ino -> [rel paths] for non-directories
        self.symlinks = set()  # rel paths of symlinks (--lax-symlink-links)
        self.bytes_read = 0
        self.bytes_hashed = 0

    def proc(self, dfd, name):
        return b"/proc/self/fd/%d/%s" % (dfd, name)


class Cmp:
    def __init__(self, args):
        self.a = args
        self.ndiff = 0
        self.entries = 0
        self.dropped = 0
        self.max_diffs = args.max_diffs

    def diff(self, rel, field, left, right):
        self.ndiff += 1
        if self.max_diffs and self.ndiff > self.max_diffs:
            if self.ndiff == self.max_diffs + 1:
                print("treecmp: more differences not shown (--max-diffs)")
            return
        print("DIFF %s: %s: left=%s right=%s" % (show(rel) or ".", field, left,
                                                 right))

    # -- xattrs ------------------------------------------------------------

    def xattrs(self, side, dfd, name, rel):
        path = side.proc(dfd, name) if name else b"/proc/self/fd/%d" % dfd
        try:
            names = os.listxattr(path, follow_symlinks=False)
        except OSError as e:
            if e.errno in (errno.EOPNOTSUPP, errno.ENOTSUP):
                return {}  # see "Xattrs" above
            return "error: " + os.strerror(e.errno)
        out = {}
        for n in names:
            try:
                out[n] = os.getxattr(path, n, follow_symlinks=False)
            except OSError as e:
                out[n] = ("<getxattr error: %s>" % os.strerror(e.errno)
                          ).encode()
        return out

    def cmp_xattrs(self, rel, lx, rx):
        if isinstance(lx, str) or isinstance(rx, str):
            if lx != rx:
                self.diff(rel, "listxattr", lx if isinstance(lx, str) else
                          "ok", rx if isinstance(rx, str) else "ok")
            return
        drop = tuple(self.a.dropped_xattr_prefix)
        for n in sorted(set(lx) | set(rx)):
            if drop and n.startswith(drop):
                if n in rx:
                    self.diff(rel, "xattr %s" % show(n),
                              "(must be dropped)", short(rx[n]))
                else:
                    self.dropped += 1
                continue
            lv, rv = lx.get(n), rx.get(n)
            if lv != rv:
                self.diff(rel, "xattr %s" % show(n), short(lv), short(rv))

    # -- content -----------------------------------------------------------

    def digest(self, side, dfd, name):
        """(digest hex, content length) or (None, error string).

        The digest covers (offset, bytes) of every 1 MiB-aligned window
        that is not all zeros, plus the length, so it does not depend on
        how the filesystem splits reads.  On a side with trusted holes,
        SEEK_DATA skips windows that are entirely hole."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY,
                         dir_fd=dfd)
        except OSError as e:
            return None, "open: " + os.strerror(e.errno)
        h = hashlib.sha256()
        buf = bytearray(CHUNK)
        off = 0
        try:
            while True:
                if side.trust_holes:
                    try:
                        data = os.lseek(fd, off, os.SEEK_DATA)
                    except OSError as e:
                        if e.errno != errno.ENXIO:
                            raise
                        off = max(off, os.fstat(fd).st_size)
                        break
                    off = max(off, data - data % CHUNK)
                n = fill(fd, buf, off)
                side.bytes_read += n
                if n == 0:
                    break
                if not (buf == ZEROS if n == CHUNK else
                        bytes(buf[:n]) == ZEROS[:n]):
                    h.update(off.to_bytes(8, "little"))
                    h.update(memoryview(buf)[:n])
                    side.bytes_hashed += n
                off += n
                if n < CHUNK:
                    break
        except OSError as e:
            return None, "read at %d: %s" % (off, os.strerror(e.errno))
        finally:
            os.close(fd)
        h.update(b"len" + off.to_bytes(8, "little"))
        return h.hexdigest(), off

    def first_difference(self, ldfd, rdfd, name):
        fds = []
        try:
            for d in (ldfd, rdfd):
                fds.append(os.open(name, os.O_RDONLY | os.O_NOFOLLOW,
                                   dir_fd=d))
            lb, rb = bytearray(CHUNK), bytearray(CHUNK)
            off = 0
            while True:
                ln, rn = fill(fds[0], lb, off), fill(fds[1], rb, off)
                if ln != rn or lb[:ln] != rb[:rn]:
                    n = min(ln, rn)
                    i = next((i for i in range(n) if lb[i] != rb[i]), n)
                    return "%d (left byte %s, right byte %s)" % (
                        off + i, "%#04x" % lb[i] if i < ln else "EOF",
                        "%#04x" % rb[i] if i < rn else "EOF")
                if ln < CHUNK:
                    return "none found on re-read"
                off += ln
        except OSError as e:
            return "? (%s)" % os.strerror(e.errno)
        finally:
            for fd in fds:
                os.close(fd)

    # -- entries -----------------------------------------------------------

    def cmp_entry(self, sides, dfds, name, rel):
        """Compare one entry; return True if it is a directory on both sides
        (so the caller descends)."""
        L, R = sides
        st = []
        for side, dfd in zip(sides, dfds):
            try:
                st.append(os.lstat(name, dir_fd=dfd))
            except OSError as e:
                st.append(e)
        ls, rs = st
        if isinstance(ls, OSError) or isinstance(rs, OSError):
            self.diff(rel, "lstat",
                      "ok" if not isinstance(ls, OSError) else ls.strerror,
                      "ok" if not isinstance(rs, OSError) else rs.strerror)
            return False
        self.entries += 1
        lt, rt = ftype(ls.st_mode), ftype(rs.st_mode)
        if lt != rt:
            self.diff(rel, "type", lt, rt)
            return False
        a = self.a
        if stat.S_IMODE(ls.st_mode) != stat.S_IMODE(rs.st_mode):
            self.diff(rel, "mode", "%04o" % stat.S_IMODE(ls.st_mode),
                      "%04o" % stat.S_IMODE(rs.st_mode))
        if a.owner:
            if ls.st_uid != rs.st_uid:
                self.diff(rel, "uid", ls.st_uid, rs.st_uid)
            if ls.st_gid != rs.st_gid:
                self.diff(rel, "gid", ls.st_gid, rs.st_gid)
        if a.mtime and ls.st_mtime_ns // 10**9 != rs.st_mtime_ns // 10**9:
            self.diff(rel, "mtime", ls.st_mtime_ns // 10**9,
                      rs.st_mtime_ns // 10**9)
        if a.all_times:
            for f in ("st_mtime_ns", "st_atime_ns", "st_ctime_ns"):
                if getattr(ls, f) != getattr(rs, f):
                    self.diff(rel, f[3:], getattr(ls, f), getattr(rs, f))
        is_dir = lt == "dir"
        if not is_dir and ls.st_size != rs.st_size:
            self.diff(rel, "size", ls.st_size, rs.st_size)
        if is_dir:
            if a.dir_nlink and ls.st_nlink != rs.st_nlink:
                self.diff(rel, "nlink", ls.st_nlink, rs.st_nlink)
        else:
            lax = a.lax_symlink_links and lt == "symlink"
            if a.nlink and not lax and ls.st_nlink != rs.st_nlink:
                self.diff(rel, "nlink", ls.st_nlink, rs.st_nlink)
            if lax:
                L.symlinks.add(rel)
            if a.hardlinks:
                L.inodes.setdefault(ls.st_ino, []).append(rel)
                R.inodes.setdefault(rs.st_ino, []).append(rel)
        if lt in ("chardev", "blockdev") and ls.st_rdev != rs.st_rdev:
            self.diff(rel, "rdev", "%d:%d" % (os.major(ls.st_rdev),
                                              os.minor(ls.st_rdev)),
                      "%d:%d" % (os.major(rs.st_rdev), os.minor(rs.st_rdev)))
        if lt == "symlink":
            tg = []
            for dfd in dfds:
                try:
                    tg.append(os.readlink(name, dir_fd=dfd))
                except OSError as e:
                    tg.append("error: " + e.strerror)
            if tg[0] != tg[1]:
                self.diff(rel, "symlink target",
                          *[short(x) if isinstance(x, bytes) else x
                            for x in tg])
        if a.xattrs:
            self.cmp_xattrs(rel, self.xattrs(L, dfds[0], name, rel),
                            self.xattrs(R, dfds[1], name, rel))
        if lt == "file" and a.content:
            (ld, ll), (rd, rl) = [self.digest(s, d, name)
                                  for s, d in zip(sides, dfds)]
            if ld is None or rd is None:
                self.diff(rel, "content", ld or ll, rd or rl)
            else:
                for d, n, s in ((ld, ll, ls), (rd, rl, rs)):
                    if n != s.st_size:
                        side = "left" if s is ls else "right"
                        self.diff(rel, "%s read length vs st_size" % side,
                                  n, s.st_size)
                if ld != rd:
                    self.diff(rel, "content", "sha256~%s" % ld[:16],
                              "sha256~%s (first difference at byte %s)"
                              % (rd[:16], self.first_difference(
                                  dfds[0], dfds[1], name)))
        return is_dir

    def listing(self, dfd, rel):
        try:
            return set(os.listdir(dfd)), None
        except OSError as e:
            return set(), e.strerror

    def walk(self, sides, dfds, rel):
        (lnames, lerr), (rnames, rerr) = [self.listing(d, rel) for d in dfds]
        if lerr or rerr:
            self.diff(rel, "readdir", lerr or "ok", rerr or "ok")
        lnames = {os.fsencode(n) for n in lnames}
        rnames = {os.fsencode(n) for n in rnames}
        for n in sorted(lnames - rnames):
            self.diff(os.path.join(rel, n), "exists", "yes", "no")
        for n in sorted(rnames - lnames):
            self.diff(os.path.join(rel, n), "exists", "no", "yes")
        subdirs = []
        for n in sorted(lnames & rnames):
            r = os.path.join(rel, n)
            if self.cmp_entry(sides, dfds, n, r):
                subdirs.append((n, r))
        for n, r in subdirs:
            fds = []
            for d in dfds:
                try:
                    fds.append(os.open(n, os.O_RDONLY | os.O_DIRECTORY |
                                       os.O_NOFOLLOW, dir_fd=d))
                except OSError as e:
                    fds.append(e.strerror)
            if all(isinstance(fd, int) for fd in fds):
                self.walk(sides, fds, r)
            else:
                self.diff(r, "opendir", *[fd if isinstance(fd, str) else "ok"
                                          for fd in fds])
            for fd in fds:
                if isinstance(fd, int):
                    os.close(fd)

    def check_hardlinks(self, sides):
        groups = []
        for side in sides:
            g = {}
            for paths in side.inodes.values():
                key = tuple(sorted(paths))
                for p in paths:
                    g[p] = key
            groups.append(g)
        lg, rg = groups
        seen = set()
        for p in sorted(lg):
            if p not in rg or lg[p] == rg[p] or lg[p] in seen:
                continue
            if p in sides[0].symlinks and set(rg[p]) <= set(lg[p]):
                continue  # a split group: --lax-symlink-links
            seen.add(lg[p])
            self.diff(p, "hard-link group",
                      "[%s]" % ", ".join(show(x) for x in lg[p]),
                      "[%s]" % ", ".join(show(x) for x in rg[p]))

    def run(self, left, right):
        th = self.a.trust_holes
        sides = [Side(left, "left", th in ("left", "both")),
                 Side(right, "right", th in ("right", "both"))]
        dfds = []
        for s in sides:
            try:
                dfds.append(os.open(s.root, os.O_RDONLY | os.O_DIRECTORY))
            except OSError as e:
                print("treecmp: %s: %s" % (show(s.root), e.strerror),
                      file=sys.stderr)
                return 2
        # The roots themselves: attributes and xattrs, not the name.
        self.cmp_entry(sides, dfds, b".", b"")
        self.walk(sides, dfds, b"")
        for fd in dfds:
            os.close(fd)
        if self.a.hardlinks:
            self.check_hardlinks(sides)
        read = sum(s.bytes_read for s in sides)
        hashed = sum(s.bytes_hashed for s in sides)
        print("treecmp: %s vs %s: %d entries compared, %d bytes read "
              "(%d hashed), %d expected xattr drops, %d differences"
              % (show(left), show(right), self.entries, read, hashed,
                 self.dropped, self.ndiff))
        return 1 if self.ndiff else 0


def main(argv):
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("left")
    ap.add_argument("right")
    ap.add_argument("--no-xattrs", dest="xattrs", action="store_false",
                    help="do not compare xattrs (mksquashfs -no-xattrs)")
    ap.add_argument("--no-owner", dest="owner", action="store_false",
                    help="do not compare uid/gid (-all-root, -force-uid)")
    ap.add_argument("--no-mtime", dest="mtime", action="store_false")
    ap.add_argument("--no-content", dest="content", action="store_false")
    ap.add_argument("--no-nlink", dest="nlink", action="store_false",
                    help="do not compare nlink of non-directories")
    ap.add_argument("--no-hardlinks", dest="hardlinks", action="store_false",
                    help="do not check hard-link structure; implies "
                    "--no-nlink (mksquashfs -no-hardlinks)")
    ap.add_argument("--lax-symlink-links", action="store_true",
                    help="for symlinks, accept a right-side hard-link group "
                    "that is a subset of the left one and skip nlink "
                    "(mksquashfs 4.5.1 gives some names of a hard-linked "
                    "symlink their own inode)")
    ap.add_argument("--dir-nlink", action="store_true",
                    help="compare directory nlink too (off by default: "
                    "filesystems differ, e.g. btrfs says 1; SquashFS, ext4 "
                    "and tmpfs all say 2 + subdirectories)")
    ap.add_argument("--all-times", action="store_true",
                    help="compare mtime, atime and ctime to the nanosecond "
                    "(between two mounts of one image)")
    ap.add_argument("--dropped-xattr-prefix", action="append", default=[],
                    metavar="PREFIX",
                    help="xattrs named PREFIX* must be absent on the right "
                    "(repeatable; use 'system.' for source vs image)")
    ap.add_argument("--trust-holes", choices=["none", "left", "right",
                                              "both"], default="none",
                    help="on that side, skip holes found with SEEK_DATA "
                    "instead of reading them (for a source tree on a local "
                    "filesystem; never for the mount under test)")
    ap.add_argument("--max-diffs", type=int, default=0, metavar="N",
                    help="print at most N differences (default: all)")
    a = ap.parse_args(argv)
    if not a.hardlinks:
        a.nlink = False
    return Cmp(a).run(os.fsencode(a.left), os.fsencode(a.right))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

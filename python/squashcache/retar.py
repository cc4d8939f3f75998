# SPDX-License-Identifier: MIT
"""Stream a tar file as one that sqfstar packs as it is, nothing unpacked.

    python3 -m squashcache.retar [--nested] IN.tar | sqfstar ... IMAGE.sqfs

Reads IN.tar (or standard input for "-"; gzip, bzip2 and xz too) one
member at a time and writes a plain tar to standard output with every
file and directory readable by all (a+rX): an image keeps the modes of
its files, and squashcached enforces them, so a file of mode 0600 in the
tar would be unreadable to a user who mounts an image packed with
-all-root.  With --nested, a member NAME.tar is itself a tar, written
out as the directory NAME/ with its members in it: ImageNet's
ILSVRC2012_img_train.tar holds one such tar per class, so

    python3 -m squashcache.retar --nested ILSVRC2012_img_train.tar |
        sqfstar -comp zstd -all-root -no-xattrs imagenet-train.sqfs

packs train/<class>/<image>.JPEG straight from the download, with no
copy of the tree on any file system.  Memory stays at one member's
buffer: nothing is held but the member being copied.
"""

import argparse
import sys
import tarfile

__all__ = ["retar"]


def _rel(name):
    """@name without leading "./" and "/": a path inside the image."""
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def _readable(info):
    info.mode |= 0o555 if info.isdir() else 0o444
    if info.isreg() and info.mode & 0o100:
        info.mode |= 0o111
    return info


def _copy(src, info, out, prefix=""):
    if prefix:
        info.name = prefix + _rel(info.name)
        if info.islnk():
            info.linkname = prefix + _rel(info.linkname)
    _readable(info)
    out.addfile(info, src.extractfile(info) if info.isreg() else None)


def retar(infile, outfile, nested=False):
    """Copy the tar on binary stream @infile to @outfile, as the module's
    docstring says.  Return: the number of members written."""
    n = 0
    with tarfile.open(fileobj=infile, mode="r|*") as src, \
            tarfile.open(fileobj=outfile, mode="w|",
                         format=tarfile.PAX_FORMAT) as out:
        for info in src:
            if nested and info.isreg() and info.name.endswith(".tar"):
                stem = _rel(info.name[:-len(".tar")])
                d = tarfile.TarInfo(stem)
                d.type, d.mode, d.mtime = tarfile.DIRTYPE, 0o755, info.mtime
                out.addfile(d)
                n += 1
                with tarfile.open(fileobj=src.extractfile(info),
                                  mode="r|*") as inner:
                    for m in inner:
                        _copy(inner, m, out, stem + "/")
                        n += 1
                continue
            _copy(src, info, out)
            n += 1
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python3 -m squashcache.retar",
        description="Write a tar to standard output with every file "
        "readable (a+rX), for sqfstar; --nested makes each NAME.tar "
        "member the directory NAME/.")
    ap.add_argument("tar", help="the tar to read; - for standard input")
    ap.add_argument("--nested", action="store_true",
                    help="expand members NAME.tar into directories NAME/ "
                    "(ImageNet's ILSVRC2012_img_train.tar)")
    a = ap.parse_args(argv)
    if sys.stdout.isatty():
        ap.error("standard output is a terminal: pipe it into sqfstar")
    try:
        if a.tar == "-":
            retar(sys.stdin.buffer, sys.stdout.buffer, a.nested)
        else:
            with open(a.tar, "rb") as f:
                retar(f, sys.stdout.buffer, a.nested)
    except (OSError, tarfile.TarError) as e:
        print("squashcache.retar: %s: %s" % (a.tar, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""squashcache.torch's loader without isatty(): same bytes, no ioctl.

    noioctl_check.py --src SRC --mnt MNT          compare, then strace
    noioctl_check.py --loop MODE MNT              (strace's child)

Compares, for every file under SRC, read_bytes(MNT/f) with SRC/f's bytes
and pil_loader(MNT/f) with PIL's decode of SRC/f, then runs a reading
loop over the mount under `strace -f -e trace=ioctl,write` twice: with
CPython's open(p, "rb").read() it must see one TCGETS per file (so that
the check can fail, and strace works), with read_bytes() none.

Exit status: 0 passed, 1 a check failed, 77 strace missing.
"""
import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

START, END = b"NOIOCTL-START\n", b"NOIOCTL-END\n"


def files_under(top):
    out = []
    for dp, _, fns in os.walk(top):
        for fn in fns:
            out.append(os.path.relpath(os.path.join(dp, fn), top))
    return sorted(out)


def loop(mode, mnt):
    """Read every file under mnt between two markers on stderr."""
    from squashcache.torch import read_bytes
    paths = [os.path.join(mnt, f) for f in files_under(mnt)]
    os.write(2, START)
    for p in paths:
        if mode == "open":
            with open(p, "rb") as f:
                f.read()
        else:
            read_bytes(p)
    os.write(2, END)
    print(len(paths))


def tcgets(mode, mnt):
    """(files read, TCGETS ioctls between the markers) of one loop."""
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "strace.log")
        r = subprocess.run(["strace", "-f", "-qq", "-o", log, "-e",
                            "trace=ioctl,write", sys.executable,
                            os.path.abspath(__file__), "--loop", mode, mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        if r.returncode != 0:
            sys.exit("noioctl_check: the %s loop failed: %s" % (
                mode, r.stderr.strip()[-500:]))
        inside = False
        n = 0
        marks = 0
        with open(log) as f:
            for line in f:
                if "NOIOCTL-START" in line:
                    inside = True
                    marks += 1
                elif "NOIOCTL-END" in line:
                    inside = False
                    marks += 1
                elif inside and "ioctl(" in line and "TCGETS" in line:
                    n += 1
        if marks != 2:
            sys.exit("noioctl_check: strace did not log the markers")
        return int(r.stdout.split()[-1]), n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loop", nargs=2, metavar=("MODE", "MNT"))
    ap.add_argument("--src")
    ap.add_argument("--mnt")
    a = ap.parse_args()
    if a.loop:
        return loop(*a.loop)
    from PIL import Image
    from squashcache.torch import pil_loader, read_bytes

    names = files_under(a.src)
    if not names:
        sys.exit("noioctl_check: no files under %s" % a.src)
    images = 0
    for f in names:
        with open(os.path.join(a.src, f), "rb") as fh:
            want = fh.read()
        got = read_bytes(os.path.join(a.mnt, f))
        if got != want:
            print("FAIL: read_bytes(%s): %d bytes, the source has %d" % (
                f, len(got), len(want)))
            return 1
        try:
            ref = Image.open(io.BytesIO(want)).convert("RGB")
        except OSError:
            continue  # not an image
        img = pil_loader(os.path.join(a.mnt, f))
        if img.size != ref.size or img.tobytes() != ref.tobytes():
            print("FAIL: pil_loader(%s) differs from PIL on the source" % f)
            return 1
        images += 1
    print("read_bytes: %d files as the source; pil_loader: %d images as "
          "PIL decodes the source" % (len(names), images))
    if not shutil.which("strace"):
        print("SKIP: strace is not installed")
        return 77
    n, calls = tcgets("open", a.mnt)
    print("open(p, 'rb').read(): %d files, %d TCGETS" % (n, calls))
    if calls < n:
        print("FAIL: strace saw %d TCGETS for %d files read with open(): "
              "the check cannot see them" % (calls, n))
        return 1
    n, calls = tcgets("read_bytes", a.mnt)
    print("read_bytes(): %d files, %d TCGETS" % (n, calls))
    if calls:
        print("FAIL: read_bytes() made %d TCGETS ioctls" % calls)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

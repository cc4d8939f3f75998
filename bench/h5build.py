# SPDX-License-Identifier: MIT
"""Convert an ImageFolder tree into one HDF5 file, as HPC courses teach.

    h5build.py SRC OUT.h5 [--split train]

This file implements the conversion the JSC course "Speedup data
loading" shows for ImageNet, for bench/run.sh hdf5: per split one
variable-length uint8 dataset holding each JPEG file's bytes as they
are (no decoding), and one int64 dataset of the class indices, both in
ImageFolder's sample order (classes are the sorted folder names, files
sorted within a class), made with h5py:

    SPLIT/images   (N,) vlen uint8: the files' bytes
    SPLIT/targets  (N,) int64: the class index of each
    SPLIT/classes  attribute: the class names, in index order

The images set has one split (train).  Prints one JSON line: files,
bytes of the files, the HDF5 file's size, seconds, h5py's and HDF5's
versions.
"""
import argparse
import json
import os
import sys
import time

import h5py
import numpy as np

EXTS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff",
        ".webp")


def samples(src):
    """ImageFolder's (path, class index) list and its classes."""
    classes = sorted(e.name for e in os.scandir(src) if e.is_dir())
    out = []
    for ci, c in enumerate(classes):
        for dp, _, fns in sorted(os.walk(os.path.join(src, c),
                                         followlinks=True)):
            for fn in sorted(fns):
                if fn.lower().endswith(EXTS):
                    out.append((os.path.join(dp, fn), ci))
    return out, classes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--split", default="train")
    a = ap.parse_args()
    if os.path.exists(a.out):
        sys.exit("h5build.py: '%s' exists; remove it first" % a.out)
    t0 = time.monotonic()
    items, classes = samples(a.src)
    total = 0
    with h5py.File(a.out, "w") as f:
        g = f.create_group(a.split)
        images = g.create_dataset("images", (len(items),),
                                  dtype=h5py.vlen_dtype(np.dtype("uint8")))
        targets = g.create_dataset("targets", (len(items),), dtype="int64")
        g.attrs["classes"] = classes
        for i, (path, ci) in enumerate(items):
            with open(path, "rb") as fh:
                data = fh.read()
            images[i] = np.frombuffer(data, dtype=np.uint8)
            targets[i] = ci
            total += len(data)
    secs = time.monotonic() - t0
    print(json.dumps({"files": len(items), "bytes": total,
                      "h5_bytes": os.path.getsize(a.out),
                      "seconds": round(secs, 3), "h5py": h5py.__version__,
                      "hdf5": h5py.version.hdf5_version,
                      "split": a.split, "classes": len(classes)}))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Time training epochs over a squashcache mount and over the source tree.

    /usr/bin/python3 tests/py/sqc_demo_epoch.py --mnt DIR --src DIR
        [--workers 2] [--batch 32]

The `make demo` workload: torchvision.datasets.ImageFolder with the usual
ImageNet evaluation transform (decode, Resize(256), CenterCrop(224),
ToTensor) and a DataLoader, as a training script would use it.  It runs
one epoch over the mount (the first, cold: every file goes through the
daemon), a second over the mount (warm: the kernel's page cache answers),
and one over the source directory, and prints files/s and MiB/s for each.
The tensors and labels of the three epochs are hashed batch by batch and
must be identical.

Exit status: 0 done, 1 the epochs differ or an error, 2 usage,
130 interrupted.
"""
import argparse
import errno
import hashlib
import os
import sys
import time
import warnings

sys.dont_write_bytecode = True
warnings.filterwarnings("ignore", message="This DataLoader will create")
MIB = 1048576.0


def epoch(root, workers, batch):
    """One pass; returns (files, bytes, seconds, digest of all batches)."""
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    t0 = time.monotonic()
    ds = datasets.ImageFolder(root, transform=transforms.Compose([
        transforms.Resize(256),
        transforms.CenterCrop(224),
        transforms.ToTensor(),
    ]))
    loader = DataLoader(ds, batch_size=batch, shuffle=False,
                        num_workers=workers, timeout=300)
    h = hashlib.sha256()
    files = 0
    for x, y in loader:
        h.update(x.numpy().tobytes())
        h.update(y.numpy().tobytes())
        files += len(y)
    secs = time.monotonic() - t0
    size = sum(os.path.getsize(p) for p, _ in ds.samples)
    return files, size, secs, h.hexdigest(), len(ds.classes)


def cache_drops():
    """How often the page cache was dropped (echo N > drop_caches)."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("drop_pagecache "):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mnt", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    a = ap.parse_args()

    import torch
    torch.set_num_threads(1)
    runs = [("epoch 1 over the mount (cold)", a.mnt),
            ("epoch 2 over the mount (warm)", a.mnt),
            ("same epoch over the source dir", a.src)]
    print("  %-32s %6s %8s %8s %8s %7s"
          % ("", "files", "MiB", "seconds", "files/s", "MiB/s"))
    digests = []
    drops = cache_drops()
    dropped = 0
    for k, (name, root) in enumerate(runs):
        files, size, secs, digest, _ = epoch(root, a.workers, a.batch)
        if k == 1:  # anything dropped between filling and re-reading?
            dropped = cache_drops() - drops
        digests.append(digest)
        print("  %-32s %6d %8.1f %8.2f %8.0f %7.1f"
              % (name, files, size / MIB, secs, files / secs,
                 size / MIB / secs), flush=True)
    print()
    if dropped:
        print("  note: something on this machine dropped the kernel's caches "
              "(drop_caches) %d\n  times during these epochs, so the warm "
              "epoch had to ask the daemon again" % dropped)
    if len(set(digests)) != 1:
        print("  the tensors or labels DIFFER between the mount and the "
              "source (sha256 %s)" % ", ".join(d[:12] for d in digests))
        return 1
    print("  tensors and labels: identical in all three epochs "
          "(sha256 %s...)" % digests[0][:16])
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # one line for people, not a traceback
        print("\n  reading the dataset failed: %s: %s" % (type(e).__name__, e),
              file=sys.stderr)
        if isinstance(e, OSError) and e.errno == errno.ENOTCONN:
            print("  (the squashcache daemon is gone: see Troubleshooting in "
                  "README.md)", file=sys.stderr)
        sys.exit(1)

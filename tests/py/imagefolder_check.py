#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check that torchvision sees the same dataset through a mount.

    /usr/bin/python3 tests/py/imagefolder_check.py --src DIR --mnt DIR
        [--manifest FILE] [--epochs 3] [--workers 4]

1. Same data: torchvision.datasets.ImageFolder over DIR and over the
   mount, each with a real transform (decode, Resize, CenterCrop,
   ToTensor) and DataLoader(num_workers=2, shuffle=False), must give the
   same classes, class_to_idx, samples (paths relative to the root, in
   order), and batch by batch the same labels and torch.equal tensors.
   With --manifest the samples must also be exactly the ones
   sqc_dataset.py wrote.
2. Shuffled epochs: --epochs epochs over the mount with --workers
   workers and shuffle=True; each sample returns (index, label, SHA-256
   of its bytes) after decoding it through the transform too.  Every
   index must come exactly once per epoch, with the source file's hash
   and label, and the epochs must not all come in the same order.

Prints a line per step and "imagefolder_check: ok"; any difference is
printed and the exit status is 1 (0 done, 2 usage).
"""
import argparse
import collections
import hashlib
import json
import os
import sys
import time
import warnings

sys.dont_write_bytecode = True
# More workers than cores is the point of the shuffled run.
warnings.filterwarnings("ignore", message="This DataLoader will create")

import torch  # noqa: E402
import torchvision  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402
from torchvision import datasets, transforms  # noqa: E402

TIMEOUT = 120  # seconds a DataLoader waits for a batch before failing


class Mismatch(Exception):
    pass


def transform():
    return transforms.Compose([
        transforms.Resize(40),
        transforms.CenterCrop(32),
        transforms.ToTensor(),
    ])


def rel_samples(ds):
    return [(os.path.relpath(p, ds.root), t) for p, t in ds.samples]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_same(src, mnt, manifest, batch):
    a = datasets.ImageFolder(src, transform=transform())
    b = datasets.ImageFolder(mnt, transform=transform())
    if a.classes != b.classes:
        raise Mismatch("classes differ: %r vs %r" % (a.classes, b.classes))
    if a.class_to_idx != b.class_to_idx:
        raise Mismatch("class_to_idx differs: %r vs %r"
                       % (a.class_to_idx, b.class_to_idx))
    sa, sb = rel_samples(a), rel_samples(b)
    if sa != sb:
        diff = [(x, y) for x, y in zip(sa, sb) if x != y][:5]
        raise Mismatch("samples differ (%d vs %d), first differences: %r"
                       % (len(sa), len(sb), diff))
    if manifest:
        with open(manifest) as f:
            m = json.load(f)
        if a.classes != sorted(m["classes"]):
            raise Mismatch("classes %r, expected %r"
                           % (a.classes, sorted(m["classes"])))
        want = sorted((os.path.normpath(p), a.class_to_idx[m["classes"][c]])
                      for p, c in m["samples"])
        if sorted(sa) != want:
            raise Mismatch("ImageFolder found %d samples, the generator "
                           "wrote %d; missing %r, unexpected %r"
                           % (len(sa), len(want),
                              sorted(set(want) - set(sa))[:5],
                              sorted(set(sa) - set(want))[:5]))
    print("same classes (%d), class_to_idx and samples (%d)"
          % (len(a.classes), len(sa)))

    kw = dict(batch_size=batch, shuffle=False, num_workers=2,
              timeout=TIMEOUT)
    n = nb = 0
    for (xa, ya), (xb, yb) in zip(DataLoader(a, **kw), DataLoader(b, **kw)):
        if not torch.equal(ya, yb):
            raise Mismatch("batch %d: labels differ: %r vs %r"
                           % (nb, ya.tolist(), yb.tolist()))
        if xa.shape != xb.shape or not torch.equal(xa, xb):
            for k in range(min(len(xa), len(xb))):
                if not torch.equal(xa[k], xb[k]):
                    raise Mismatch("batch %d: tensor of sample %d (%s) "
                                   "differs" % (nb, n + k, sa[n + k][0]))
            raise Mismatch("batch %d: tensors differ (shapes %r vs %r)"
                           % (nb, tuple(xa.shape), tuple(xb.shape)))
        n += len(ya)
        nb += 1
    if n != len(sa):
        raise Mismatch("the loaders gave %d samples, not %d" % (n, len(sa)))
    print("same labels and tensors (torch.equal) in %d batches, %d samples, "
          "num_workers=2, shuffle=False" % (nb, n))
    return a


class Hashed(Dataset):
    """Sample i of an ImageFolder as (i, label, sha256 of the file)."""

    def __init__(self, root):
        self.ds = datasets.ImageFolder(root, transform=transform())

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        path, label = self.ds.samples[i]
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        x, y = self.ds[i]  # decode and transform as training would
        if y != label or x.shape != (3, 32, 32):
            raise RuntimeError("sample %d: label %d, shape %r"
                               % (i, y, tuple(x.shape)))
        return i, label, digest


def check_epochs(src_ds, mnt, epochs, workers, batch):
    want = [(t, sha256(p)) for p, t in src_ds.samples]
    ds = Hashed(mnt)
    if len(ds) != len(want):
        raise Mismatch("%d samples on the mount, %d in the source"
                       % (len(ds), len(want)))
    gen = torch.Generator()
    gen.manual_seed(20240607)
    loader = DataLoader(ds, batch_size=batch, shuffle=True,
                        num_workers=workers, timeout=TIMEOUT,
                        generator=gen, persistent_workers=False)
    orders = []
    for e in range(epochs):
        seen = []
        for idx, labels, digests in loader:
            for i, t, d in zip(idx.tolist(), labels.tolist(), digests):
                if (t, d) != want[i]:
                    raise Mismatch("epoch %d: sample %d (%s): label %d "
                                   "sha256 %s, source has label %d sha256 %s"
                                   % (e, i, ds.ds.samples[i][0], t, d,
                                      want[i][0], want[i][1]))
                seen.append(i)
        count = collections.Counter(seen)
        twice = sorted(i for i, c in count.items() if c > 1)
        missing = sorted(set(range(len(want))) - set(count))
        if twice or missing or len(seen) != len(want):
            raise Mismatch("epoch %d: %d samples seen; seen twice: %r; "
                           "missing: %r" % (e, len(seen), twice[:10],
                                            missing[:10]))
        orders.append(seen)
        print("epoch %d: all %d samples exactly once, bytes match the "
              "source (shuffle=True, num_workers=%d)"
              % (e, len(seen), workers))
    if epochs > 1 and all(o == orders[0] for o in orders):
        raise Mismatch("every epoch came in the same order: not shuffled")
    if orders and orders[0] == sorted(orders[0]):
        raise Mismatch("epoch 0 came in index order: not shuffled")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="the source tree")
    ap.add_argument("--mnt", required=True, help="the mounted image")
    ap.add_argument("--manifest", help="sqc_dataset.py --manifest output")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    a = ap.parse_args()
    torch.set_num_threads(1)
    print("torch %s, torchvision %s, python %s"
          % (torch.__version__, torchvision.__version__,
             sys.version.split()[0]))
    t0 = time.monotonic()
    try:
        src_ds = check_same(a.src, a.mnt, a.manifest, a.batch)
        t1 = time.monotonic()
        print("(%.1f s)" % (t1 - t0))
        check_epochs(src_ds, a.mnt, a.epochs, a.workers, a.batch)
        print("(%.1f s)" % (time.monotonic() - t1))
    except Mismatch as e:
        print("imagefolder_check: MISMATCH: %s" % e, file=sys.stderr)
        return 1
    print("imagefolder_check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check that an epoch order changes nothing a DataLoader returns.

    /usr/bin/python3 tests/py/order_check.py --src DIR --mnt DIR
        [--workers 4] [--seed 7] [--epochs 2]

For each epoch, three DataLoader runs over torchvision's ImageFolder
(decode, Resize, CenterCrop, ToTensor), each sampler a RandomSampler
seeded alike:
  1. over the mount, the sampler wrapped in squashcache.torch.EpochOrder
     (strict: an order that cannot be given fails the check);
  2. over the mount, without the hint;
  3. over the source tree.
All three must give the same indices, labels and torch.equal tensors in
the same order.  The first run's order must have been accepted for every
sample of the epoch (EpochOrder.last, mountctl's summary).

Needs the squashcache module on sys.path (python/ of the checkout) and
SQUASHCACHE_MOUNTCTL or mountctl on PATH.  Prints "order_check: ok";
exit status 1 on a difference.
"""
import argparse
import re
import sys
import warnings

sys.dont_write_bytecode = True
warnings.filterwarnings("ignore", message="This DataLoader will create")

import torch  # noqa: E402
from torch.utils.data import DataLoader, RandomSampler  # noqa: E402
from torchvision import datasets, transforms  # noqa: E402

from squashcache.torch import EpochOrder  # noqa: E402


def as_list(batch):
    return batch


class Indexed(torch.utils.data.Dataset):
    """ImageFolder's sample, with its index."""

    def __init__(self, ds):
        self.ds = ds
        self.samples = ds.samples

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        x, y = self.ds[i]
        return i, y, x


def run(root, workers, seed, hint):
    tf = transforms.Compose([transforms.Resize(40), transforms.CenterCrop(32),
                             transforms.ToTensor()])
    ds = Indexed(datasets.ImageFolder(root, transform=tf))
    gen = torch.Generator().manual_seed(seed)
    sampler = RandomSampler(ds, generator=gen)
    if hint:
        sampler = EpochOrder(sampler, ds, strict=True)
    loader = DataLoader(ds, batch_size=8, sampler=sampler,
                        num_workers=workers, collate_fn=as_list, timeout=120)
    out = [s for batch in loader for s in batch]
    return out, (sampler.last if hint else None), len(ds)


def same(a, b, what):
    if len(a) != len(b):
        sys.exit("order_check: %s: %d samples against %d" %
                 (what, len(a), len(b)))
    for k, (x, y) in enumerate(zip(a, b)):
        if x[0] != y[0] or x[1] != y[1] or not torch.equal(x[2], y[2]):
            sys.exit("order_check: %s: sample %d differs (index %d/%d, "
                     "label %d/%d)" % (what, k, x[0], y[0], x[1], y[1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--mnt", required=True)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--epochs", type=int, default=2)
    a = ap.parse_args()
    for e in range(a.epochs):
        seed = a.seed + e
        hinted, last, n = run(a.mnt, a.workers, seed, True)
        m = re.match(r"order: (\d+) files", last or "")
        if not m or int(m.group(1)) != n:
            sys.exit("order_check: epoch %d: the order was not given for "
                     "all %d samples: %r" % (e, n, last))
        plain, _, _ = run(a.mnt, a.workers, seed, False)
        src, _, _ = run(a.src, a.workers, seed, False)
        same(hinted, plain, "epoch %d, hinted vs not" % e)
        same(hinted, src, "epoch %d, hinted vs the source" % e)
        print("epoch %d: %d samples, the same with and without the hint "
              "and from the source (%s)" % (e, n, last))
    print("order_check: ok")


if __name__ == "__main__":
    main()

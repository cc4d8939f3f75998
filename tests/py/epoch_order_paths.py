#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check how squashcache.torch.EpochOrder learns its paths: never by
loading a sample.

    PYTHONPATH=python /usr/bin/python3 tests/py/epoch_order_paths.py

A dataset with .samples (or .imgs, or a Subset of one) gives its paths
without a single __getitem__; a list of paths is taken as it is; a
dataset without .samples, or a list of something else, is refused with
TypeError, again without a __getitem__.  Prints "epoch_order_paths: ok";
exit status 1 on a failure.
"""
import sys

sys.dont_write_bytecode = True

from torch.utils.data import Dataset, SequentialSampler, Subset  # noqa: E402

from squashcache.torch import EpochOrder  # noqa: E402


class Counting(Dataset):
    """Five samples; counts the loads (each would decode an image)."""

    loads = 0

    def __len__(self):
        return 5

    def __getitem__(self, i):
        if i >= 5:
            raise IndexError(i)
        Counting.loads += 1
        return i


class WithSamples(Counting):
    def __init__(self, attr):
        setattr(self, attr, [("/m/c%d/%d.png" % (i % 2, i), i % 2)
                             for i in range(5)])


def refused(what, source):
    try:
        EpochOrder(SequentialSampler(range(5)), source)
    except TypeError as e:
        print("%s: refused: %s" % (what, e))
        return
    sys.exit("epoch_order_paths: %s was taken as paths" % what)


def main():
    want = ["/m/c%d/%d.png" % (i % 2, i) for i in range(5)]
    for attr in ("samples", "imgs"):
        ds = WithSamples(attr)
        eo = EpochOrder(SequentialSampler(ds), ds)
        if eo.paths != want:
            sys.exit("epoch_order_paths: .%s gave %r" % (attr, eo.paths))
    sub = Subset(WithSamples("samples"), [3, 1])
    eo = EpochOrder(SequentialSampler(sub), sub)
    if eo.paths != [want[3], want[1]]:
        sys.exit("epoch_order_paths: a Subset gave %r" % eo.paths)
    eo = EpochOrder(SequentialSampler(want), tuple(want))
    if eo.paths != want:
        sys.exit("epoch_order_paths: a tuple of paths gave %r" % eo.paths)
    refused("a dataset without .samples", Counting())
    refused("a Subset of a dataset without .samples", Subset(Counting(), [0]))
    refused("a list of numbers", [0, 1, 2])
    if Counting.loads:
        sys.exit("epoch_order_paths: %d samples loaded to learn the paths"
                 % Counting.loads)
    print("epoch_order_paths: ok (no sample loaded)")


if __name__ == "__main__":
    main()

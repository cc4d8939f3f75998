# SPDX-License-Identifier: MIT
"""squashcache.torch: an epoch order for PyTorch's DataLoader.

    from squashcache.torch import EpochOrder
    ds = torchvision.datasets.ImageFolder(mount)
    loader = DataLoader(ds, batch_size=64, num_workers=4,
                        sampler=EpochOrder(RandomSampler(ds), ds))

EpochOrder yields what the sampler it wraps yields; at the start of each
epoch it gives the mount the paths of those indices, in that order
(squashcache.order()).  The tensors are the same with or without it.
"""

import warnings

from torch.utils.data import Sampler

from . import OrderError, order


def _paths_of(source):
    # ImageFolder and DatasetFolder keep (path, class) pairs in .samples
    samples = getattr(source, "samples", None)
    if samples is not None:
        return [s[0] for s in samples]
    return list(source)


class EpochOrder(Sampler):
    """Wrap @sampler; tell the mount each epoch's order before it starts.

    @sampler: any sampler of indices (RandomSampler, DistributedSampler..)
    @paths: the dataset (anything with .samples, as ImageFolder), or a
            sequence: index -> file path on the mount
    @mountpoint: the mount; by default the one holding the first path
    @strict: raise OrderError when the order cannot be given (default:
             warn once and go on without it)
    """

    def __init__(self, sampler, paths, mountpoint=None, strict=False):
        super().__init__(None)
        self.sampler = sampler
        self.paths = _paths_of(paths)
        self.mountpoint = mountpoint
        self.strict = strict
        self.last = None  # mountctl's summary of the last order
        self._warned = False

    def __iter__(self):
        indices = list(self.sampler)
        if indices:
            try:
                self.last = order([self.paths[i] for i in indices],
                                  self.mountpoint)
            except OrderError as e:
                if self.strict:
                    raise
                if not self._warned:
                    warnings.warn("squashcache: epoch order not given: %s"
                                  % e, RuntimeWarning, stacklevel=2)
                    self._warned = True
        return iter(indices)

    def __len__(self):
        return len(self.sampler)

    def set_epoch(self, epoch):
        """Passed on to the wrapped sampler (DistributedSampler has it)."""
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

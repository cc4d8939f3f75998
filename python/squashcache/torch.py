# SPDX-License-Identifier: MIT
"""squashcache.torch: an epoch order for PyTorch's DataLoader.

    from squashcache.torch import EpochOrder
    ds = torchvision.datasets.ImageFolder(mount)
    loader = DataLoader(ds, batch_size=64, num_workers=4,
                        sampler=EpochOrder(RandomSampler(ds), ds))

EpochOrder yields what the sampler it wraps yields; at the start of each
epoch it gives the mount the paths of those indices, in that order
(squashcache.order()).  The tensors are the same with or without it.

With torch.distributed, wrap each rank's DistributedSampler:

    sampler = DistributedSampler(ds)          # this rank's shard
    loader = DataLoader(ds, batch_size=64, num_workers=4,
                        persistent_workers=True,
                        sampler=EpochOrder(sampler, ds))
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)       # or sampler.set_epoch()
        for batch in loader: ...

The order is given by the process that iterates the loader (the rank's
main process: a DataLoader draws its indices there and hands them to its
workers, persistent or not), once per epoch, as this rank's own: the
ranks that share a node's mount each give theirs, and the daemon reads
them all ahead at once and drops a rank's order when its process ends.

And an opt-in loader that reads files without CPython's isatty() ioctl:

    from squashcache.torch import pil_loader
    ds = torchvision.datasets.ImageFolder(mount, loader=pil_loader)

CPython's open(path, "rb") asks the new file whether it is a terminal
(an ioctl TCGETS) to choose its buffering; on a FUSE mount that is one
round trip to the daemon per file, which the kernel does not cache.
read_bytes() opens with os.open() and reads with os.read(): openat,
fstat, read, close, no ioctl.  pil_loader() is torchvision's default
loader (PIL, converted to RGB) on those bytes.  Note that squashcached
takes that ioctl as its sign that a file is about to be read (it pushes
the file into the page cache ahead of the reads); without it the first
read of a file is the sign.  bench/ measures both ways (`dl_rawfd_w4`,
`train_decfd`): in a decoded epoch the loader paid off, first and warm
(docs/performance.md, "Decode-bound epochs").
"""

import io
import os
import warnings

try:
    from torch.utils.data import Sampler, Subset
except ImportError as _e:
    raise ImportError("squashcache.torch needs PyTorch: pip install "
                      "'squashcache[torch]', or use a Python that has torch "
                      "(Debian: python3-torch)") from _e

from . import OrderError, order


def _paths_of(source):
    """The file path of each index of @source, without reading a sample.

    ImageFolder and DatasetFolder keep (path, class) pairs in .samples
    (.imgs is its older name); a Subset takes its dataset's paths at its
    indices; a list or tuple is taken as the paths themselves.  Any other
    dataset is refused: listing it would load and decode every sample.
    """
    for attr in ("samples", "imgs"):
        samples = getattr(source, attr, None)
        if samples is not None:
            return [s[0] for s in samples]
    if isinstance(source, Subset):
        paths = _paths_of(source.dataset)
        return [paths[i] for i in source.indices]
    if isinstance(source, (list, tuple)):
        for p in source:
            if not isinstance(p, (str, bytes, os.PathLike)):
                raise TypeError("EpochOrder: paths holds a %s, not a file "
                                "path" % type(p).__name__)
        return list(source)
    raise TypeError("EpochOrder: %s has no .samples: pass the list of its "
                    "file paths (index -> path on the mount) instead"
                    % type(source).__name__)


class EpochOrder(Sampler):
    """Wrap @sampler; tell the mount each epoch's order before it starts.

    @sampler: any sampler of indices (RandomSampler, DistributedSampler..)
    @paths: the dataset (anything with .samples or .imgs, as
            ImageFolder, or a Subset of one), or a list or tuple: index
            -> file path on the mount.  Another dataset raises TypeError:
            its paths cannot be had without decoding every sample.
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


def read_bytes(path):
    """The whole file at @path as bytes, without an isatty() ioctl.

    One read of the size fstat gives plus one byte: the common case is
    openat, fstat, read, close.  A file that grew or came short is read
    on to its end.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size + 1)
        if len(data) == size:
            return data
        parts = [data]
        while True:
            more = os.read(fd, max(size, 1 << 16))
            if not more:
                break
            parts.append(more)
        return b"".join(parts)
    finally:
        os.close(fd)


def pil_loader(path):
    """torchvision's default image loader (PIL, RGB), on read_bytes()."""
    from PIL import Image

    img = Image.open(io.BytesIO(read_bytes(path)))
    return img.convert("RGB")

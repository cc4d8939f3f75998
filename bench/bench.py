# SPDX-License-Identifier: MIT
"""The benchmark's measuring half: mounts, passes, numbers.

This file implements what bench/run.sh calls once the data sets, images and
tars exist: every contender (tmpfs, the kernel's squashfs, squashfuse_ll,
squashcached) is measured on every measure, interleaved per repetition, and
every pass is written to one JSON file that bench/report.py turns into
markdown.  Nothing here invents a number: a contender or a pass that fails
is recorded as failed, with its error.

    bench.py OUT.json

The parameters come from the environment run.sh sets (config_from_env():
the build, DATASETS_JSON naming each set's list, image, tar and tmpfs
tree, the scratch directory in /dev/shm, repetitions, slow-storage
parameters); the effective configuration is saved in OUT.json.

Phases of a pass, per contender:
  first  page cache dropped, then a fresh mount (tmpfs: the extracted tree)
  cold   page cache dropped again (squashcached keeps its own RAM cache)
  warm   the same pass again at once
"""
import io
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
PHASES = ("first", "cold", "warm")


def log(msg):
    sys.stderr.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def drops():
    """Times the page cache was dropped on this machine, by anyone."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("drop_pagecache "):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def run(cmd, timeout=None, check=True, **kw):
    return subprocess.run(cmd, check=check, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, **kw)


def proc_cpu(pid):
    """utime+stime of pid in seconds, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def proc_mem(pid):
    """(VmRSS, VmHWM) of pid in bytes, or (None, None)."""
    rss = hwm = None
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, hwm


def find_daemon(exe_name, mnt):
    """pid of the process named exe_name whose argv ends with mnt."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        argv = [a.decode(errors="replace") for a in argv if a]
        if argv and os.path.basename(argv[0]) == exe_name and \
                argv[-1] in (mnt, os.path.realpath(mnt)):
            return int(d)
    return None


def numeric_delta(after, before):
    """after - before for every numeric leaf of two JSON objects."""
    if isinstance(after, dict):
        out = {}
        for k, v in after.items():
            d = numeric_delta(v, before.get(k) if isinstance(before, dict)
                              else None)
            if d is not None:
                out[k] = d
        return out
    if isinstance(after, bool) or not isinstance(after, (int, float)):
        return None
    if not isinstance(before, (int, float)) or isinstance(before, bool):
        before = 0
    return round(after - before, 6) if isinstance(after, float) \
        else after - before


def sqc_socket_name(mnt):
    """The daemon's default control address (lib/ctl/addr.c)."""
    h = 1469598103934665603
    for c in os.path.realpath(mnt).encode():
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "\0squashcache-%016x" % h


def sqc_stats(build, mnt):
    """squashcached's stats object: mountctl if it exists, else the socket."""
    mountctl = os.path.join(build, "mountctl")
    if os.access(mountctl, os.X_OK):
        try:
            r = run([mountctl, "status", "--json", mnt], timeout=10)
            # one object, or an array of one per mount (several lines)
            st = json.loads(r.stdout)
            if isinstance(st, list):
                st = st[0] if len(st) == 1 else None
            if isinstance(st, dict):
                return st
        except (subprocess.SubprocessError, ValueError, IndexError):
            pass
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sqc_socket_name(mnt))
        s.sendall(b"stats\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        return json.loads(data)
    except (OSError, ValueError):
        return None


class Registry:
    """Mounts and daemons, written to files run.sh's trap cleans up."""

    def __init__(self, scratch):
        self.mounts_file = os.path.join(scratch, "mounts.txt")
        self.pids_file = os.path.join(scratch, "pids.txt")

    def add(self, mnt, pid=None):
        with open(self.mounts_file, "a") as f:
            f.write(mnt + "\n")
        if pid:
            with open(self.pids_file, "a") as f:
                f.write("%d\n" % pid)


def is_mounted(mnt):
    real = os.path.realpath(mnt)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if line.split()[4] == real:
                return True
    return False


def fuse_abort(mnt):
    """Abort the FUSE connection behind mnt so that no pass hangs for ever."""
    try:
        dev = os.stat(mnt).st_dev
        with open("/sys/fs/fuse/connections/%d/abort" % os.minor(dev),
                  "w") as f:
            f.write("1")
    except OSError:
        pass


class Contender:
    """A way to present a data set: tmpfs tree, loop mount or FUSE daemon."""
    name = "?"
    exe = None
    is_fuse = False
    mount_timeout = 120  # seconds the mount command may take

    def __init__(self, cfg, reg):
        self.cfg = cfg
        self.reg = reg
        self.mnt = None
        self.pid = None
        self.dev = None

    def root(self, ds):
        return self.mnt

    def mount_cmd(self, image, mnt):
        raise NotImplementedError

    def mount(self, ds, image=None, mnt=None, extra=None):
        """Mount; returns seconds the mount command took."""
        image = image or ds["image"]
        mnt = mnt or os.path.join(self.cfg["scratch"], "mnt",
                                  "%s-%s" % (self.name, ds["name"]))
        os.makedirs(mnt, exist_ok=True)
        cmd = self.mount_cmd(image, mnt, extra)
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           timeout=self.mount_timeout)
        secs = time.monotonic() - t0
        if r.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (
                " ".join(cmd), r.returncode, (r.stderr or r.stdout).strip()))
        self.mnt = mnt
        if self.exe:
            self.pid = find_daemon(self.exe, mnt)
        self.reg.add(mnt, self.pid)
        return secs

    def after_mount(self):
        self.dev = None
        if self.mnt:
            try:
                self.dev = os.stat(self.mnt).st_dev
            except OSError:
                pass

    def umount(self):
        if not self.mnt:
            return
        mnt, pid = self.mnt, self.pid
        self.mnt = self.pid = None
        if self.is_fuse:
            r = run(["fusermount3", "-u", mnt], check=False, timeout=60)
            if r.returncode != 0:
                run(["fusermount3", "-u", "-z", mnt], check=False)
        else:
            r = run(["umount", mnt], check=False, timeout=60)
            if r.returncode != 0:
                run(["umount", "-l", mnt], check=False)
        if pid:
            for _ in range(200):
                if not os.path.exists("/proc/%d" % pid):
                    break
                time.sleep(0.05)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def abort(self):
        if self.is_fuse and self.mnt:
            fuse_abort(self.mnt)

    def daemon_sample(self):
        if not self.pid:
            return None
        rss, hwm = proc_mem(self.pid)
        return {"cpu_s": proc_cpu(self.pid), "rss": rss, "hwm": hwm}

    def stats(self):
        return None


class Tmpfs(Contender):
    name = "tmpfs"

    def root(self, ds):
        return ds["tmpfs_root"]

    def mount(self, ds, image=None, mnt=None, extra=None):
        return 0.0

    def umount(self):
        pass


class Kernel(Contender):
    name = "kernel"

    def mount_cmd(self, image, mnt, extra):
        return ["mount", "-t", "squashfs", "-o", "loop,ro", image, mnt]


class Squashfuse(Contender):
    name = "squashfuse_ll"
    exe = "squashfuse_ll"
    is_fuse = True

    def mount_cmd(self, image, mnt, extra):
        return ["squashfuse_ll", image, mnt]


class Squashcached(Contender):
    name = "squashcached"
    exe = "squashcached"
    is_fuse = True
    nlog = 0
    option = None  # a variant's own -o option

    def mount_cmd(self, image, mnt, extra):
        Squashcached.nlog += 1
        logf = os.path.join(self.cfg["scratch"], "logs",
                            "squashcached-%03d.log" % Squashcached.nlog)
        opts = ["log=" + logf]
        if self.cfg.get("sqc_opts"):
            opts.append(self.cfg["sqc_opts"])
        if self.option:
            opts.append(self.option)
        if extra:
            opts.append(extra)
        return [os.path.join(self.cfg["build"], "squashcached"), "-o",
                ",".join(opts), image, mnt]

    def stats(self):
        if not self.mnt:
            return None
        return sqc_stats(self.cfg["build"], self.mnt)


class SquashcachedPrime(Squashcached):
    """squashcached -o prime: the mount command returns once the tree is
    listed, so opening by path needs no lookup.  Not in the default list;
    CONTENDERS=...,squashcached_prime puts it beside the default."""
    name = "squashcached_prime"
    option = "prime"


class SquashcachedNoUring(Squashcached):
    """squashcached -o no_uring: requests through /dev/fuse even where the
    kernel offers io_uring, for comparing the two transports in one run."""
    name = "squashcached_no_uring"
    option = "no_uring"


class SquashcachedNoStatahead(Squashcached):
    """squashcached -o statahead=0: no listing ahead of walkers and of
    readers that open by path, for measuring what listing ahead gives."""
    name = "squashcached_no_statahead"
    option = "statahead=0"


class SquashcachedListAttrs(Squashcached):
    """squashcached -o list_attrs: every listing a readdirplus with every
    attribute, as before names-only listings (issue #20)."""
    name = "squashcached_list_attrs"
    option = "list_attrs"


class SquashcachedBase(Squashcached):
    """squashcached built from another commit (BASE_BUILD): a before/after
    of a change side by side in one run.  Not in the default list."""
    name = "squashcached_base"

    def __init__(self, cfg, reg):
        super().__init__(dict(cfg, build=cfg["base_build"]), reg)


class Zerofs(Contender):
    """bench/zerofs: the FUSE floor.  It loads the image's tree and (unless
    ZEROFS_OPTS has `pattern`) every file's bytes into memory before it
    mounts, then answers each request from memory with no other work,
    with squashcached's mount options and /dev/fuse transport.  Its mount
    command's time is that load: it is left out of mount to first byte."""
    name = "zerofs"
    exe = "zerofs"
    is_fuse = True
    mount_timeout = 1800  # 1.28M files' bytes are read before the mount

    def mount_cmd(self, image, mnt, extra):
        opts = [o for o in (self.cfg.get("zerofs_opts"), extra) if o]
        return [os.path.join(self.cfg["build"], "bench", "zerofs")] + \
            (["-o", ",".join(opts)] if opts else []) + [image, mnt]


# The larger-than-RAM case's contenders (Bench.ram()).
RAM_SQC = ("sqc_quarter", "sqc_quarter_order")
RAM_PEERS = ("direct_kernel", "direct_squashfuse_ll")

CONTENDERS = {"tmpfs": Tmpfs, "kernel": Kernel, "squashfuse_ll": Squashfuse,
              "squashcached": Squashcached,
              "squashcached_prime": SquashcachedPrime,
              "squashcached_no_uring": SquashcachedNoUring,
              "squashcached_no_statahead": SquashcachedNoStatahead,
              "squashcached_list_attrs": SquashcachedListAttrs,
              "squashcached_base": SquashcachedBase, "zerofs": Zerofs}


class Watchdog:
    """Abort a contender whose pass takes longer than the limit."""

    def __init__(self, contender, seconds):
        self.c = contender
        self.seconds = seconds
        self.fired = False
        self.t = None

    def _fire(self):
        self.fired = True
        log("watchdog: %s pass exceeded %d s, aborting" % (
            self.c.name, self.seconds))
        self.c.abort()

    def __enter__(self):
        self.t = threading.Timer(self.seconds, self._fire)
        self.t.daemon = True
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.t.cancel()
        return False


# --- the passes ------------------------------------------------------------

class Loaders:
    """Persistent DataLoader workers, started once, before any mount.

    The sampler yields absolute paths, so one set of workers serves every
    contender; worker start-up (a fork of this process) is not timed.
    """

    def __init__(self, cfg):
        import torch
        import torch.utils.data as tud
        self.torch = torch
        self.tud = tud
        self.cfg = cfg
        self.loaders = {}

    def get(self, mode, workers):
        key = (mode, workers)
        if key in self.loaders:
            return self.loaders[key]
        tud = self.tud

        class ListSampler(tud.Sampler):
            def __init__(self):
                self.items = []

            def __iter__(self):
                return iter(self.items)

            def __len__(self):
                return len(self.items)

        sampler = ListSampler()
        if mode in ("raw", "rawfd"):
            ds = RawDataset() if mode == "raw" else RawFdDataset()
            collate = collate_count
            bs = self.cfg["dl_batch"]
        elif mode in ("decode", "decodefd"):
            ds = DecodeDataset() if mode == "decode" else DecodeFdDataset()
            collate = None
            bs = self.cfg["pil_batch"]
        else:
            ds = PilDataset()
            collate = None
            bs = self.cfg["pil_batch"]
        kw = {}
        if collate:
            kw["collate_fn"] = collate
        loader = tud.DataLoader(ds, batch_size=bs, sampler=sampler,
                                num_workers=workers, persistent_workers=True,
                                worker_init_fn=worker_init,
                                timeout=self.cfg["pass_timeout"], **kw)
        # warm the workers up on a file outside every contender
        sampler.items = [self.cfg["warmup_file"]] * (bs * workers)
        for _ in loader:
            pass
        self.loaders[key] = (loader, sampler)
        return self.loaders[key]

    def discard(self, mode, workers):
        """Forget a loader whose epoch failed; the next get() makes one."""
        entry = self.loaders.pop((mode, workers), None)
        if entry:
            it = getattr(entry[0], "_iterator", None)
            if it is not None:
                try:
                    it._shutdown_workers()
                except Exception:  # noqa: BLE001 - best effort
                    pass


class RawDataset:
    def __getitem__(self, path):
        with open(path, "rb") as f:
            return len(f.read())

    def __len__(self):
        return 1 << 40


# python/: squashcache.torch for the rawfd measures (the workers fork
# from this process, so they have it too)
PYDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                     "python")


def sqc_torch(name):
    """squashcache.torch's @name, from this tree's python/."""
    if PYDIR not in sys.path:
        sys.path.insert(0, PYDIR)
    import squashcache.torch
    return getattr(squashcache.torch, name)


class RawFdDataset:
    """Raw bytes through squashcache.torch.read_bytes(): os.open and
    os.read, without CPython's isatty() ioctl per open."""

    def __getitem__(self, path):
        return len(sqc_torch("read_bytes")(path))

    def __len__(self):
        return 1 << 40


class PilDataset:
    tf = None

    def __getitem__(self, path):
        from PIL import Image
        if PilDataset.tf is None:
            import torchvision.transforms as T
            PilDataset.tf = T.Compose([T.RandomResizedCrop(224),
                                       T.ToTensor()])
        with open(path, "rb") as f:
            img = Image.open(f)
            img = img.convert("RGB")
        return PilDataset.tf(img)

    def __len__(self):
        return 1 << 40


class DecodeDataset:
    """What a training epoch does with each JPEG: torchvision's ImageNet
    training transform (RandomResizedCrop(224), RandomHorizontalFlip,
    ToTensor) on the PIL decode of the file, as ImageFolder's default
    loader opens it."""

    def __getitem__(self, path):
        from PIL import Image
        with open(path, "rb") as f:
            img = Image.open(f)
            img = img.convert("RGB")
        return train_transform()(img)

    def __len__(self):
        return 1 << 40


class DecodeFdDataset(DecodeDataset):
    """The same epoch with ImageFolder(loader=squashcache.torch.pil_loader):
    the file read without CPython's isatty() ioctl per open."""
    def __getitem__(self, path):
        return train_transform()(sqc_torch("pil_loader")(path))


class H5Dataset:
    """The HDF5 recipe's Dataset, as the course writes it: the length
    read in __init__ (the file opened and closed there), the file opened
    lazily on the first __getitem__ in each worker and kept open, each
    sample's bytes from the vlen dataset, PIL decoding from a BytesIO.
    mode "raw" returns the bytes' length instead of decoding."""

    def __init__(self, path, split, mode):
        import h5py
        self.path, self.split, self.mode = path, split, mode
        self.h5 = self.images = self.targets = None
        with h5py.File(path, "r") as f:
            self.n = len(f[split + "/targets"])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.h5 is None:
            import h5py
            self.h5 = h5py.File(self.path, "r")
            self.images = self.h5[self.split + "/images"]
            self.targets = self.h5[self.split + "/targets"]
        data = self.images[i]
        target = int(self.targets[i])
        if self.mode == "raw":
            return len(data), target
        from PIL import Image
        img = Image.open(io.BytesIO(data.tobytes())).convert("RGB")
        return train_transform()(img), target


_TF = []


def train_transform():
    """RandomResizedCrop(224), RandomHorizontalFlip, ToTensor."""
    if not _TF:
        import torchvision.transforms as T
        _TF.append(T.Compose([T.RandomResizedCrop(224),
                              T.RandomHorizontalFlip(), T.ToTensor()]))
    return _TF[0]


def raw_len_loader(path):
    with open(path, "rb") as f:
        return len(f.read())


def folder_dataset(root, mode):
    """ImageFolder as a training script makes it: decoded with the
    training transform, or (raw) a loader returning the bytes' count."""
    import torchvision.datasets as D
    if mode == "raw":
        return D.ImageFolder(root, loader=raw_len_loader)
    return D.ImageFolder(root, transform=train_transform())


def collate_raw(batch):
    return sum(n for n, _ in batch)


def hdf5_epoch(loader, mode):
    """One epoch: (samples, their bytes; None when decoded)."""
    files = total = 0
    for b in loader:
        if mode == "raw":
            total += b
        else:
            files += b[0].shape[0]
    if mode == "raw":
        return len(loader.dataset), total
    return files, None


def collate_count(batch):
    return sum(batch)


def worker_init(_):
    import torch
    torch.set_num_threads(1)


def pass_preader(cfg, root, ds, threads, seed, lst=None, timeout=None):
    """preader read on ds's list (or lst: seed 0 keeps its order)."""
    cmd = [os.path.join(cfg["build"], "bench", "preader"), "read", root,
           lst or ds["list"], str(threads), str(seed)]
    r = run(cmd, check=False, timeout=timeout or cfg["pass_timeout"] + 60)
    if r.returncode != 0 or not r.stdout.strip():
        raise RuntimeError("preader: rc %d %s %s" % (
            r.returncode, r.stdout.strip(), r.stderr.strip()))
    return json.loads(r.stdout)


def pass_cwalk(cfg, root, threads):
    cmd = [os.path.join(cfg["build"], "bench", "preader"), "walk", root,
           str(threads)]
    r = run(cmd, check=False, timeout=cfg["pass_timeout"] + 60)
    if r.returncode != 0:
        raise RuntimeError("preader walk: rc %d %s %s" % (
            r.returncode, r.stdout.strip(), r.stderr.strip()))
    return json.loads(r.stdout)


def pass_pywalk(root):
    t0 = time.perf_counter()
    files = dirs = 0
    for dp, dns, fns in os.walk(root):
        dirs += 1
        for fn in fns:
            os.lstat(os.path.join(dp, fn))
            files += 1
    return {"seconds": time.perf_counter() - t0, "files": files,
            "dirs": dirs}


def pass_imagefolder(root, any_file):
    import torchvision.datasets as D
    t0 = time.perf_counter()
    if any_file:
        d = D.ImageFolder(root, is_valid_file=_any_file)
    else:
        d = D.ImageFolder(root)
    return {"seconds": time.perf_counter() - t0, "files": len(d.samples),
            "classes": len(d.classes)}


def _any_file(_):
    return True


class EpochTimeout(Exception):
    """An epoch went past its deadline and was stopped."""


def pass_dl(loaders, mode, workers, paths, deadline=None):
    """One DataLoader epoch over paths; past deadline (time.monotonic())
    it stops after the batch at hand and raises EpochTimeout."""
    loader, sampler = loaders.get(mode, workers)
    sampler.items = paths
    t0 = time.perf_counter()
    total = 0
    try:
        for b in loader:
            total += b if mode in ("raw", "rawfd") else b.shape[0]
            if deadline is not None and time.monotonic() > deadline:
                raise EpochTimeout("epoch stopped after %.0f s" % (
                    time.perf_counter() - t0))
    except BaseException:
        loaders.discard(mode, workers)
        raise
    secs = time.perf_counter() - t0
    out = {"seconds": secs, "files": len(paths)}
    if mode in ("raw", "rawfd"):
        out["bytes"] = total
    return out


def pass_train(loaders, workers, root, seed, mode="raw"):
    """What a training script does first: ImageFolder(root), then one
    shuffled epoch of its samples: raw bytes, or (mode "decode") each
    image decoded and augmented as a training epoch does."""
    import torchvision.datasets as D
    t0 = time.perf_counter()
    d = D.ImageFolder(root)
    listed = time.perf_counter() - t0
    r = pass_dl(loaders, mode, workers,
                shuffled([p for p, _ in d.samples], seed))
    r["list_seconds"] = listed
    r["seconds"] = time.perf_counter() - t0
    return r


def shuffled(paths, seed):
    p = list(paths)
    random.Random(seed).shuffle(p)
    return p


class Bench:
    def __init__(self, cfg):
        self.cfg = cfg
        self.reg = Registry(cfg["scratch"])
        self.contenders = []
        self.skipped = {}
        for name in cfg["contenders"]:
            c = CONTENDERS[name](cfg, self.reg)
            ok, why = self.available(c)
            if ok:
                self.contenders.append(c)
            else:
                self.skipped[name] = why
        self.loaders = None
        self.partial = None
        self.res = {"passes": [], "mount_first_byte": [], "untar": [],
                    "skipped": self.skipped, "errors": [], "slow": {}}
        self.lists = {}
        for ds in cfg["datasets"].values():
            with open(ds["list"]) as f:
                self.lists[ds["name"]] = [l.rstrip("\n") for l in f if
                                          l.strip()]

    def available(self, c):
        if c.name == "squashfuse_ll" and not shutil_which("squashfuse_ll"):
            return False, "squashfuse_ll not installed"
        if isinstance(c, Squashcached) and not os.access(
                os.path.join(c.cfg["build"], "squashcached"), os.X_OK):
            return False, "%s/squashcached not built" % c.cfg["build"]
        if c.name == "zerofs" and not os.access(
                os.path.join(c.cfg["build"], "bench", "zerofs"), os.X_OK):
            return False, "%s/bench/zerofs not built" % c.cfg["build"]
        if c.name == "kernel":
            with open("/proc/filesystems") as f:
                if "squashfs" not in f.read():
                    r = run(["modprobe", "squashfs"], check=False)
                    if r.returncode:
                        return False, "kernel has no squashfs"
        return True, None

    # -- helpers --

    def order(self, rep):
        k = rep % len(self.contenders)
        return self.contenders[k:] + self.contenders[:k]

    def extract(self, ds, rep):
        dst = ds["tmpfs_root"]
        if os.path.exists(dst):
            run(["rm", "-rf", dst])
        os.makedirs(dst)
        drop_caches()
        t0 = time.monotonic()
        run(["tar", "-x", "-b", str(self.cfg["tar_blocking"]), "-f",
             ds["tar"], "-C", dst], timeout=3600)
        secs = time.monotonic() - t0
        self.res["untar"].append({"rep": rep, "set": ds["name"],
                                  "seconds": secs})
        log("untar %s into /dev/shm: %.2f s" % (ds["name"], secs))

    def mount_first_byte(self, rep):
        for ds in self.cfg["datasets"].values():
            probe = self.lists[ds["name"]][len(self.lists[ds["name"]]) // 2]
            for c in self.order(rep):
                # zerofs's mount command is its load of the whole set
                if c.name in ("tmpfs", "zerofs"):
                    continue
                rec = {"rep": rep, "set": ds["name"], "contender": c.name}
                try:
                    drop_caches()
                    t0 = time.monotonic()
                    mount_s = c.mount(ds)
                    with open(os.path.join(c.mnt, probe), "rb") as f:
                        b = f.read(1)
                    t1 = time.monotonic()
                    if len(b) != 1:
                        raise RuntimeError("no first byte from " + probe)
                    rec.update(mount_s=mount_s, total_s=t1 - t0)
                    st = c.stats()
                    if st:
                        rec["stats"] = st
                    sample = c.daemon_sample()
                    if sample:
                        rec["daemon"] = sample
                except Exception as e:  # noqa: BLE001 - recorded
                    rec["error"] = str(e)
                    log("mount %s %s: %s" % (c.name, ds["name"], e))
                finally:
                    c.umount()
                self.res["mount_first_byte"].append(rec)
                if "total_s" in rec:
                    log("mount-to-first-byte %s %s: %.1f ms" % (
                        c.name, ds["name"], rec["total_s"] * 1e3))

    def one_pass(self, measure, c, ds, rep, phase, since=None):
        root = c.root(ds)
        seed = self.cfg["seed"] + rep
        kind = measure["kind"]
        before_cpu = before_stats = None
        if c.pid:
            before_cpu = proc_cpu(c.pid)
        if isinstance(c, Squashcached):
            before_stats = c.stats()
        rec = {"rep": rep, "measure": measure["id"], "set": ds["name"],
               "contender": c.name, "phase": phase, "load1": load1()}
        drops0 = drops() if since is None else since
        try:
            with Watchdog(c, self.cfg["pass_timeout"]) as wd:
                if kind == "cread":
                    r = pass_preader(self.cfg, root, ds, measure["threads"],
                                     seed)
                elif kind == "cwalk":
                    r = pass_cwalk(self.cfg, root, measure["threads"])
                elif kind == "pywalk":
                    r = pass_pywalk(root)
                elif kind == "imagefolder":
                    # the small set's names have no image extension
                    r = pass_imagefolder(root, ds["name"] == "small")
                elif kind == "train":
                    r = pass_train(self.loaders, measure["workers"], root,
                                   seed, measure.get("mode", "raw"))
                elif kind == "dl":
                    paths = self.lists[ds["name"]]
                    if measure.get("subset"):
                        paths = shuffled(paths, 1000 + seed)[
                            :measure["subset"]]
                    paths = [os.path.join(root, p)
                             for p in shuffled(paths, seed)]
                    r = pass_dl(self.loaders, measure["mode"],
                                measure["workers"], paths)
                else:
                    raise ValueError(kind)
            if wd.fired:
                raise RuntimeError("aborted after %d s" %
                                   self.cfg["pass_timeout"])
            if r.get("errors"):
                raise RuntimeError("%d files failed" % r["errors"])
            rec.update(r)
        except Exception as e:  # noqa: BLE001 - recorded
            rec["error"] = str(e)[:500]
            log("pass %s %s %s %s: %s" % (measure["id"], ds["name"],
                                          c.name, phase, e))
        # someone else on the machine dropped the page cache mid-pass
        rec["foreign_drops"] = drops() - drops0
        if c.pid:
            cpu = proc_cpu(c.pid)
            rss, hwm = proc_mem(c.pid)
            rec["daemon"] = {"cpu_s": (cpu - before_cpu)
                             if cpu is not None and before_cpu is not None
                             else None, "rss": rss, "hwm": hwm}
        if before_stats:
            after = c.stats()
            if after:
                rec["sqc"] = {"delta": {k: numeric_delta(after.get(k),
                                                         before_stats.get(k))
                                        for k in ("fuse", "cache",
                                                  "image_io", "prefetch")
                                        if k in after},
                              "after": {k: after.get(k) for k in
                                        ("stage", "process", "inodes",
                                         "cache")}}
        self.res["passes"].append(rec)
        return rec

    def measure(self, measure, rep):
        ds = self.cfg["datasets"][measure["set"]]
        for c in self.order(rep):
            if c.name == "tmpfs" and self.cfg["scale"]:
                try:
                    self.extract(ds, rep)
                    self.measure_one(measure, c, ds, rep)
                finally:
                    run(["rm", "-rf", ds["tmpfs_root"]], check=False)
            else:
                self.measure_one(measure, c, ds, rep)

    def measure_one(self, measure, c, ds, rep):
        """The three phases of one measure on one contender."""
        try:
            # Cold before the mount, not after it: a job starts reading
            # right after its prolog mounted, and what the mount itself
            # put in the kernel's caches (-o prime's dentries) is part
            # of what is measured.
            drop_caches()
            if c.name != "tmpfs":
                c.mount(ds)
            c.after_mount()
        except Exception as e:  # noqa: BLE001 - recorded
            for ph in PHASES:
                self.res["passes"].append({
                    "rep": rep, "measure": measure["id"],
                    "set": ds["name"], "contender": c.name,
                    "phase": ph, "error": "mount: %s" % e})
            log("mount %s for %s: %s" % (c.name, measure["id"], e))
            c.umount()
            return
        try:
            line = []
            since = None
            for ph in PHASES:
                if ph == "cold":
                    drop_caches()
                # warm counts foreign drops since the pass before it
                rec = self.one_pass(measure, c, ds, rep, ph,
                                    since if ph == "warm" else None)
                since = drops()
                tries = 1
                while ph == "warm" and rec.get("foreign_drops") and \
                        tries < self.cfg["warm_tries"]:
                    # a warm pass whose page cache another process
                    # dropped is not warm: keep it, marked, and again
                    rec["discarded"] = "foreign drop_caches"
                    rec["phase"] = "warm-disturbed"
                    rec = self.one_pass(measure, c, ds, rep, ph)
                    tries += 1
                line.append("%s %s%s" % (
                    ph, "%.3fs" % rec["seconds"] if "seconds" in rec
                    else "FAIL", " (try %d)" % tries if tries > 1 else
                    ""))
            log("rep %d %-14s %-7s %-13s %s" % (
                rep, measure["id"], ds["name"], c.name, ", ".join(line)))
        finally:
            c.umount()

    # -- the slow-storage case --

    def slow(self):
        sc = self.cfg["slow"]
        self.res["slow_profiles"] = []
        for prof in sc["profiles"]:
            out = {"profile": prof["name"], "runs": []}
            self.res["slow_profiles"].append(out)
            pfs = self._start_slowfs(prof, out)
            try:
                self._slow_runs(pfs, out)
            finally:
                run(["fusermount3", "-u", pfs], check=False)

    def _start_slowfs(self, prof, out, allow_other=False):
        """Mount bench/slowfs over the store with one storage profile;
        its parameters and command go into out.  Returns the mount.
        allow_other: other users may read it (users' daemons)."""
        sc = self.cfg["slow"]
        out["params"] = dict(prof, blksize=sc["blksize"],
                             threads=sc["threads"])
        pfs = os.path.join(self.cfg["scratch"], "pfs")
        os.makedirs(pfs, exist_ok=True)
        opts = ("latency_ms=%s,meta_latency_ms=%s,bw=%s,blksize=%s,"
                "threads=%s,stripes=%s,stripe_size=%s" % (
                    prof["latency_ms"], prof["meta_latency_ms"],
                    prof["bw"], sc["blksize"], sc["threads"],
                    prof["stripes"], prof["stripe_size"]))
        if prof.get("cached"):
            opts += ",cached"
        if allow_other:
            opts += ",allow_other"
        cmd = [os.path.join(self.cfg["build"], "bench", "slowfs"), "-o",
               opts, self.cfg["store"], pfs]
        out["command"] = " ".join(cmd)
        log("slow storage profile %s: %s" % (prof["name"], opts))
        run(cmd, timeout=60)
        self.reg.add(pfs, find_daemon("slowfs", pfs))
        if prof.get("cached") and prof.get("read_ahead_kb"):
            # The kernel caps a FUSE mount's readahead at 128 KiB, a
            # request's latency each: sequential reads of a cached
            # profile would crawl where a PFS client reads ahead by
            # megabytes (Lustre: 64 MiB per file).  Its bdi is the
            # mount's device number.
            dev = os.stat(pfs).st_dev
            bdi = "/sys/class/bdi/%d:%d/read_ahead_kb" % (os.major(dev),
                                                          os.minor(dev))
            with open(bdi, "w") as f:
                f.write("%d\n" % prof["read_ahead_kb"])
            out["params"]["read_ahead_kb"] = prof["read_ahead_kb"]
        return pfs

    def _pfs_stats(self, pfs):
        try:
            with open(os.path.join(pfs, ".slowfs-stats")) as f:
                return json.loads(f.read())
        except (OSError, ValueError):
            return {}

    def _aggregate(self, pfs, big, streams=8):
        """Aggregate bandwidth of the storage: several 1 MiB streams at
        once over distinct parts of one file, as a striped reader does."""
        mib = max(1, min(64, os.path.getsize(big) // streams // 1048576))
        drop_caches()
        s0 = self._pfs_stats(pfs)
        t0 = time.monotonic()
        procs = [subprocess.Popen(
            ["dd", "if=" + big, "of=/dev/null", "bs=1M", "count=%d" % mib,
             "skip=%d" % (i * mib)], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL) for i in range(streams)]
        for p in procs:
            p.wait()
        secs = time.monotonic() - t0
        nbytes = self._pfs_stats(pfs).get("read_bytes", 0) - \
            s0.get("read_bytes", 0)
        return {"streams": streams, "seconds": secs, "bytes": nbytes,
                "mb_per_s": nbytes / secs / 1e6}

    def _calibrate(self, pfs, out):
        """Single-stream dd speeds at three block sizes and the aggregate
        of 8 streams, through slowfs; the image sizes beside them."""
        big = os.path.join(pfs, os.path.basename(
            self.cfg["datasets"]["images"]["image"]))
        cal = {}
        for bs in ("128K", "1M", "4M"):
            # each from the storage: a cached profile keeps what the last
            # dd read in the page cache
            drop_caches()
            s0 = self._pfs_stats(pfs)
            t0 = time.monotonic()
            run(["dd", "if=" + big, "of=/dev/null", "bs=" + bs,
                 "count=%d" % (256 * 1024 * 1024 // parse_size(bs))])
            secs = time.monotonic() - t0
            s1 = self._pfs_stats(pfs)
            nbytes = s1.get("read_bytes", 0) - s0.get("read_bytes", 0)
            cal["dd_bs_" + bs] = {"seconds": secs, "bytes": nbytes,
                                  "mb_per_s": nbytes / secs / 1e6}
        out["calibration"] = cal
        out["aggregate"] = self._aggregate(pfs, big)
        out["image_bytes"] = {
            n: os.path.getsize(d["image"]) for n, d in
            self.cfg["datasets"].items() if os.path.exists(d["image"])}
        log("slowfs calibration: " + ", ".join(
            "%s %.0f MB/s" % (k, v["mb_per_s"]) for k, v in cal.items()) +
            ", %d streams %.0f MB/s" % (out["aggregate"]["streams"],
                                        out["aggregate"]["mb_per_s"]))

    def _slow_runs(self, pfs, out):
        sc = self.cfg["slow"]
        self._calibrate(pfs, out)
        runs = out.setdefault("runs", [])
        names = [c for c in sc["contenders"]
                 if c not in self.skipped_slow()]
        out["skipped"] = {c: self.skipped_slow()[c] for c in
                          sc["contenders"] if c in self.skipped_slow()}
        for rep in range(self.cfg["slow_reps"]):
            for rd in sc["readers"]:
                ds = self.cfg["datasets"][rd["set"]]
                k = rep % len(names)
                for name in names[k:] + names[:k]:
                    rec = self.slow_one(pfs, name, rd, ds, rep)
                    rec["profile"] = out["profile"]
                    runs.append(rec)
                    self.checkpoint()
                    if "total_s" in rec:
                        log("slow rep %d %s %s %-16s total %.2f s (%s)" % (
                            rep, rd["id"], ds["name"], name, rec["total_s"],
                            ", ".join("%s %.2f" % (k2, rec[k2]) for k2 in
                                      ("prep_s", "mount_s", "epoch_s",
                                       "epoch2_s")
                                      if rec.get(k2) is not None)))
                    else:
                        log("slow rep %d %s %s %s: %s" % (
                            rep, rd["id"], ds["name"], name,
                            rec.get("error")))

    def skipped_slow(self):
        s = {}
        if "squashfuse_ll" in self.skipped:
            s["cp_squashfuse_ll"] = self.skipped["squashfuse_ll"]
            s["direct_squashfuse_ll"] = self.skipped["squashfuse_ll"]
        if not os.path.exists(os.path.join(self.cfg["base_build"],
                                           "squashcached")):
            s["sqc_stage_base"] = "no daemon in BASE_BUILD=%s" % \
                self.cfg["base_build"]
        if "squashcached" in self.skipped:
            s["sqc_stage"] = s["sqc_demand"] = self.skipped["squashcached"]
            s["sqc_stage_no_uring"] = self.skipped["squashcached"]
        if "kernel" in self.skipped:
            s["cp_kernel"] = self.skipped["kernel"]
        return s

    def slow_one(self, pfs, name, rd, ds, rep):
        sc = self.cfg["slow"]
        scratch = self.cfg["scratch"]
        src_img = os.path.join(pfs, os.path.basename(ds["image"]))
        src_tar = os.path.join(pfs, os.path.basename(ds["tar"]))
        local = os.path.join(scratch, "slowlocal")
        mnt = os.path.join(scratch, "mnt", "slow-" + name)
        rec = {"rep": rep, "reader": rd["id"], "set": ds["name"],
               "contender": name}
        c = None
        if os.path.exists(local):
            run(["rm", "-rf", local])
        os.makedirs(local)
        drop_caches()
        s0 = self._pfs_stats(pfs)
        s_mid = None
        drops0 = drops()
        t_start = time.monotonic()
        try:
            prep = 0.0
            if name in ("sqc_stage", "sqc_demand", "sqc_stage_no_uring",
                        "sqc_stage_base"):
                # sqc_stage_base: the daemon built from another commit
                # (BASE_BUILD), for a before/after in one run
                c = (SquashcachedBase if name == "sqc_stage_base" else
                     Squashcached)(self.cfg, self.reg)
                extra = "stage=full" if name != "sqc_demand" else "stage=none"
                if name == "sqc_stage_no_uring":
                    extra += ",no_uring"
                rec["mount_s"] = c.mount(ds, image=src_img, mnt=mnt,
                                         extra=extra)
                root = c.mnt
            elif name == "direct_squashfuse_ll":
                c = Squashfuse(self.cfg, self.reg)
                rec["mount_s"] = c.mount(ds, image=src_img, mnt=mnt)
                root = c.mnt
            elif name in ("cp_squashfuse_ll", "cp_kernel"):
                dst = os.path.join(local, os.path.basename(ds["image"]))
                t0 = time.monotonic()
                run(["cp", src_img, dst], timeout=3600)
                prep = rec["prep_s"] = time.monotonic() - t0
                c = (Squashfuse if name == "cp_squashfuse_ll" else Kernel)(
                    self.cfg, self.reg)
                rec["mount_s"] = c.mount(ds, image=dst, mnt=mnt)
                root = c.mnt
            elif name == "untar_tmpfs":
                dst = os.path.join(local, "tree")
                os.makedirs(dst)
                t0 = time.monotonic()
                run(["tar", "-x", "-b", str(self.cfg["tar_blocking"]), "-f",
                     src_tar, "-C", dst], timeout=3600)
                prep = rec["prep_s"] = time.monotonic() - t0
                rec["mount_s"] = 0.0
                root = dst
            else:
                raise ValueError(name)
            if c:
                c.after_mount()
            guard = c or Tmpfs(self.cfg, self.reg)

            def epoch(seed):
                with Watchdog(guard, sc["timeout"]) as wd:
                    t0 = time.monotonic()
                    if rd["kind"] == "cread":
                        r = pass_preader(self.cfg, root, ds, rd["threads"],
                                         seed)
                    else:
                        paths = [os.path.join(root, p) for p in
                                 shuffled(self.lists[ds["name"]], seed)]
                        r = pass_dl(self.loaders, rd["mode"], rd["workers"],
                                    paths)
                    secs = time.monotonic() - t0
                if wd.fired:
                    raise RuntimeError("epoch aborted after %d s" %
                                       sc["timeout"])
                if r.get("errors"):
                    raise RuntimeError("%d files failed" % r["errors"])
                return r, secs

            cpu0 = proc_cpu(c.pid) if c and c.pid else None
            r, rec["epoch_s"] = epoch(self.cfg["seed"] + rep)
            cpu1 = proc_cpu(c.pid) if c and c.pid else None
            rec["total_s"] = time.monotonic() - t_start
            s_mid = self._pfs_stats(pfs)
            if isinstance(c, Squashcached):
                st = c.stats()
                if st:
                    rec["sqc"] = {k: st.get(k) for k in
                                  ("stage", "fuse", "image_io", "process")}
            # The second epoch: another order, the page cache dropped, so
            # that what it reads from storage is what the contender lost.
            drop_caches()
            _, rec["epoch2_s"] = epoch(self.cfg["seed"] + rep + 1000)
            cpu2 = proc_cpu(c.pid) if c and c.pid else None
            if None not in (cpu0, cpu1, cpu2):
                # the daemon's CPU during each epoch (staging included)
                rec["daemon_cpu_epoch_s"] = cpu1 - cpu0
                rec["daemon_cpu_epoch2_s"] = cpu2 - cpu1
            rec["pfs2"] = numeric_delta(self._pfs_stats(pfs), s_mid)
            rec["files"] = r.get("files")
            rec["bytes"] = r.get("bytes")
            rec["prep_s"] = prep
            if c and c.pid:
                rec["daemon"] = c.daemon_sample()
        except Exception as e:  # noqa: BLE001 - recorded
            rec["error"] = str(e)[:500]
        finally:
            if c:
                c.umount()
            s1 = self._pfs_stats(pfs)
            # first epoch (with its copy or untar) only, when it ended
            rec["pfs"] = numeric_delta(s_mid if s_mid else s1, s0)
            rec["foreign_drops"] = drops() - drops0
            run(["rm", "-rf", local], check=False)
        return rec

    # -- larger than RAM (sh bench/run.sh ram) --

    def _stop_slowfs(self, pfs):
        """Unmount slowfs; a daemon or loop device of the last run may
        still hold it for a moment."""
        for _ in range(40):
            if run(["fusermount3", "-u", pfs], check=False).returncode == 0:
                return
            time.sleep(0.25)
        run(["fusermount3", "-u", "-z", pfs], check=False)

    def skipped_ram(self):
        s = {}
        for name, cls in (("direct_kernel", Kernel),
                          ("direct_squashfuse_ll", Squashfuse),
                          ("sqc_quarter", Squashcached)):
            ok, why = self.available(cls(self.cfg, self.reg))
            if not ok:
                s[name] = why
        if "sqc_quarter" in s:
            s["sqc_quarter_order"] = s["sqc_quarter"]
        for n in self.cfg["ram"]["contenders"]:
            if n not in RAM_SQC + RAM_PEERS:
                s[n] = "no such contender (RAM_CONTENDERS: %s)" % ", ".join(
                    RAM_PEERS + RAM_SQC)
        return s

    def ram(self):
        """Every contender reads the image straight from slowfs; the
        squashcached ones stage a quarter of it (ram=).  Per run: mount,
        a first epoch, staging waited for, drop_caches, the measured
        epoch in another order (ram_one())."""
        rc = self.cfg["ram"]
        ds = self.cfg["datasets"]["images"]
        skipped = self.skipped_ram()
        names = [n for n in rc["contenders"] if n not in skipped]
        self.res["ram"] = {"skipped": {n: skipped[n] for n in
                                       rc["contenders"] if n in skipped},
                           "profiles": []}
        if not names:
            return
        for prof in rc["profiles"]:
            out = {"profile": prof["name"], "runs": []}
            self.res["ram"]["profiles"].append(out)
            pfs = self._start_slowfs(prof, out)
            try:
                self._calibrate(pfs, out)
                # the model's bandwidth, as slowfs took it (bytes/s)
                out["bw_bytes_per_s"] = self._pfs_stats(pfs).get("bw")
                for rep in range(max(rc["reps"], rc["peer_reps"])):
                    k = rep % len(names)
                    for rd in rc["readers"]:
                        for name in names[k:] + names[:k]:
                            n = rc["reps"] if name in RAM_SQC else \
                                rc["peer_reps"]
                            if rep >= n:
                                continue
                            rec = self.ram_one(pfs, name, rd, ds, rep)
                            rec["profile"] = prof["name"]
                            out["runs"].append(rec)
                            self.checkpoint()
                            self._ram_log(rec)
            finally:
                self._stop_slowfs(pfs)

    @staticmethod
    def _ram_log(rec):
        head = "ram %s rep %d %s %-20s" % (rec["profile"], rec["rep"],
                                            rec["reader"], rec["contender"])
        if "error" in rec:
            log("%s %s" % (head, rec["error"]))
            return
        first = rec.get("first") or {}
        log("%s epoch %.2f s, %.0f MB from storage (unstaged %.0f MB)%s%s"
            % (head, rec["epoch_s"],
               (rec.get("pfs") or {}).get("read_bytes", 0) / 1e6,
               rec["unstaged"] / 1e6,
               "; first epoch %.2f s" % first["seconds"]
               if "seconds" in first else "",
               "; staging waited %.2f s" % rec["stage_wait_s"]
               if "stage_wait_s" in rec else ""))

    def order_hint(self, mnt, paths):
        """The epoch-order hint: `mountctl order -0 MNT` with the epoch's
        paths, NUL-terminated, on stdin."""
        mountctl = os.path.join(self.cfg["build"], "mountctl")
        if not os.access(mountctl, os.X_OK):
            raise RuntimeError("order hint missing: no %s" % mountctl)
        data = b"".join(p.encode() + b"\0" for p in paths)
        t0 = time.monotonic()
        try:
            r = subprocess.run([mountctl, "order", "-0", mnt], input=data,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=120)
        except subprocess.TimeoutExpired:
            raise RuntimeError("order hint: `mountctl order -0 MNT` did "
                               "not return in 120 s") from None
        secs = time.monotonic() - t0
        msg = (r.stderr or r.stdout).decode(errors="replace").strip()
        if r.returncode != 0:
            # the first line says why (the rest may be a usage text)
            raise RuntimeError("order hint missing or refused: `mountctl "
                               "order -0 MNT` exited %d: %s" % (
                                   r.returncode,
                                   (msg.splitlines() or [""])[0][:300]))
        return {"order_s": secs,
                "order_out": r.stdout.decode(errors="replace").strip()[:300]}

    def wait_staged(self, c, timeout):
        """Poll the daemon's stats until staging is done (or off);
        returns (seconds waited, the last stats)."""
        t0 = time.monotonic()
        misses = 0
        while True:
            st = c.stats()
            if st is None:
                misses += 1
                if misses >= 20:
                    raise RuntimeError("no stats from squashcached")
            else:
                misses = 0
                stage = st.get("stage") or {}
                if stage.get("error"):
                    raise RuntimeError("staging failed: %s" %
                                       stage["error"])
                if stage.get("state") in ("done", "off"):
                    return time.monotonic() - t0, st
            if time.monotonic() - t0 > timeout:
                raise RuntimeError("staging not done after %d s" % timeout)
            time.sleep(0.1)

    def ram_epoch(self, c, rd, ds, seed, hint):
        """One shuffled epoch on c's mount, the order hint first if
        asked (its time counts in the epoch's, as in a training loop
        that sends it at the start of each epoch)."""
        rc = self.cfg["ram"]
        rel = shuffled(self.lists[ds["name"]], seed)
        paths = [os.path.join(c.mnt, p) for p in rel]
        out = {"seed": seed}
        lst = None
        if rd["kind"] == "cread":
            # preader with seed 0 reads the list in its order: the same
            # order as the hint's
            lst = os.path.join(self.cfg["scratch"], "ram-epoch.list")
            with open(lst, "w") as f:
                f.write("".join(p + "\n" for p in rel))
        deadline = time.monotonic() + rc["timeout"]
        # The deadline stops an epoch between batches (or kills preader);
        # the watchdog aborts a FUSE mount that stopped answering.
        with Watchdog(c, rc["timeout"] + 60) as wd:
            t0 = time.monotonic()
            try:
                if hint:
                    out.update(self.order_hint(c.mnt, paths))
                if rd["kind"] == "cread":
                    r = pass_preader(self.cfg, c.mnt, ds, rd["threads"], 0,
                                     lst=lst, timeout=max(
                                         1, deadline - time.monotonic()))
                else:
                    r = pass_dl(self.loaders, rd["mode"], rd["workers"],
                                paths, deadline=deadline)
            except subprocess.TimeoutExpired:
                raise EpochTimeout("preader killed") from None
            secs = time.monotonic() - t0
        if wd.fired:
            raise EpochTimeout("mount aborted")
        if r.get("errors"):
            raise RuntimeError("%d files failed" % r["errors"])
        out.update(seconds=secs, files=r.get("files"), bytes=r.get("bytes"))
        return out

    @staticmethod
    def _detach_loops(backing):
        """Loop devices still backed by a file (umount frees them, not
        always at once)."""
        for _ in range(40):
            r = run(["losetup", "-n", "-O", "NAME", "-j", backing],
                    check=False)
            devs = r.stdout.split()
            if not devs:
                return
            time.sleep(0.25)
        for d in devs:
            run(["losetup", "-d", d], check=False)

    def ram_one(self, pfs, name, rd, ds, rep):
        rc = self.cfg["ram"]
        src_img = os.path.join(pfs, os.path.basename(ds["image"]))
        img_bytes = os.path.getsize(ds["image"])
        mnt = os.path.join(self.cfg["scratch"], "mnt", "ram-" + name)
        sqc = name in RAM_SQC
        hint = name == "sqc_quarter_order"
        rec = {"rep": rep, "reader": rd["id"], "set": ds["name"],
               "contender": name, "image_bytes": img_bytes,
               "load1": load1()}
        c = None
        drop_caches()
        drops0 = drops()
        foreign = 0
        s0 = self._pfs_stats(pfs)
        try:
            extra = None
            if sqc:
                c = Squashcached(self.cfg, self.reg)
                rec["ram_budget"] = img_bytes // 4
                extra = "stage=full,ram=%d" % rec["ram_budget"]
                if rc["sqc_opts"]:
                    extra += "," + rc["sqc_opts"]
                rec["sqc_options"] = extra
            elif name == "direct_kernel":
                c = Kernel(self.cfg, self.reg)
            elif name == "direct_squashfuse_ll":
                c = Squashfuse(self.cfg, self.reg)
            else:
                raise ValueError(name)
            rec["mount_s"] = c.mount(ds, image=src_img, mnt=mnt, extra=extra)
            c.after_mount()
            if sqc or rc["peer_first"]:
                s = self._pfs_stats(pfs)
                try:
                    first = self.ram_epoch(c, rd, ds, self.cfg["seed"] + rep,
                                           hint)
                except EpochTimeout as e:
                    rec["timed_out"] = "first"
                    raise RuntimeError("first epoch timed out (> %d s, %s)"
                                       % (rc["timeout"], e)) from None
                first["pfs"] = numeric_delta(self._pfs_stats(pfs), s)
                rec["first"] = first
            if sqc:
                rec["stage_wait_s"], st = self.wait_staged(c, rc["timeout"])
                rec["stage_after_first"] = st.get("stage")
            foreign += drops() - drops0
            drop_caches()
            drops1 = drops()
            before = c.stats() if sqc else None
            if sqc:
                if not (before or {}).get("stage"):
                    raise RuntimeError("no stage stats from squashcached")
                rec["staged"] = before["stage"]["staged"]
            else:
                rec["staged"] = 0
            rec["unstaged"] = img_bytes - rec["staged"]
            cpu0 = proc_cpu(c.pid) if c.pid else None
            s1 = self._pfs_stats(pfs)
            try:
                ep = self.ram_epoch(c, rd, ds,
                                    self.cfg["seed"] + rep + 1000, hint)
            except EpochTimeout as e:
                rec["timed_out"] = "epoch"
                raise RuntimeError("epoch timed out (> %d s, %s)" % (
                    rc["timeout"], e)) from None
            rec["pfs"] = numeric_delta(self._pfs_stats(pfs), s1)
            rec["epoch_s"] = ep["seconds"]
            for k in ("seed", "files", "bytes", "order_s", "order_out"):
                if ep.get(k) is not None:
                    rec[k] = ep[k]
            foreign += drops() - drops1
            if sqc:
                after = c.stats()
                if after:
                    rec["sqc"] = {
                        "delta": {k: numeric_delta(after.get(k),
                                                   before.get(k))
                                  for k in ("fuse", "cache", "image_io",
                                            "prefetch") if k in after},
                        "after": {k: after.get(k) for k in
                                  ("stage", "order", "cache", "warm",
                                   "process") if k in after}}
            if c.pid:
                rec["daemon"] = c.daemon_sample()
                cpu = rec["daemon"].get("cpu_s")
                rec["daemon"]["epoch_cpu_s"] = cpu - cpu0 \
                    if cpu is not None and cpu0 is not None else None
        except Exception as e:  # noqa: BLE001 - recorded
            rec["error"] = str(e)[:500]
        finally:
            if c:
                c.umount()
            if name == "direct_kernel":
                self._detach_loops(src_img)
            # everything read from storage from the mount to the unmount
            rec["pfs_run"] = numeric_delta(self._pfs_stats(pfs), s0)
            rec["foreign_drops"] = foreign
        return rec

    # -- the HDF5 recipe side by side (sh bench/run.sh hdf5) --

    def hdf5(self):
        """Per storage (the store in RAM, then each slowfs profile), per
        mode (raw, decoded), per repetition, each way in turn: the HDF5
        file, squashcached on the image, the tar extracted into
        /dev/shm; hdf5_one() makes one run."""
        hc = self.cfg["hdf5"]
        ds = self.cfg["datasets"]["images"]
        self.res["hdf5"] = {"storages": []}
        for prof in hc["profiles"]:
            out = {"profile": prof["name"], "runs": []}
            self.res["hdf5"]["storages"].append(out)
            if prof["name"] == "ram":
                where, pfs = self.cfg["store"], None
                out["params"] = {"where": where}
            else:
                if hc["cached"]:
                    prof = dict(prof, cached=True,
                                read_ahead_kb=hc["read_ahead_kb"])
                pfs = where = self._start_slowfs(prof, out)
                self._calibrate(pfs, out)
            try:
                for rep in range(hc["reps"]):
                    for mode in hc["modes"]:
                        k = rep % len(hc["contenders"])
                        for name in hc["contenders"][k:] + \
                                hc["contenders"][:k]:
                            rec = self.hdf5_one(where, pfs, name, mode, ds,
                                                rep)
                            rec["profile"] = prof["name"]
                            out["runs"].append(rec)
                            self.checkpoint()
                            log("hdf5 %s rep %d %-7s %-12s %s" % (
                                prof["name"], rep, mode, name,
                                rec.get("error") or
                                "epoch 1 %.2f s (prep %.2f), epoch 2 %.2f s"
                                % (rec["epoch1_s"], rec.get("prep_s", 0),
                                   rec["epoch2_s"])))
            finally:
                if pfs:
                    self._stop_slowfs(pfs)

    def hdf5_loader(self, dset, mode, seed):
        import torch
        import torch.utils.data as tud
        g = torch.Generator()
        g.manual_seed(seed)
        hc = self.cfg["hdf5"]
        kw = {"collate_fn": collate_raw} if mode == "raw" else {}
        return tud.DataLoader(
            dset, batch_size=hc["batch_raw"] if mode == "raw" else
            hc["batch_decoded"], sampler=tud.RandomSampler(dset, generator=g),
            num_workers=hc["workers"], persistent_workers=True,
            worker_init_fn=worker_init, timeout=hc["timeout"], **kw)

    def hdf5_one(self, where, pfs, name, mode, ds, rep):
        """One run: page cache dropped; the way's preparation (untar,
        mount); the dataset made and the first epoch (cold), then a
        second epoch at once (the workers and their open file stay)."""
        hc = self.cfg["hdf5"]
        scratch = self.cfg["scratch"]
        local = os.path.join(scratch, "h5local")
        rec = {"rep": rep, "mode": mode, "contender": name,
               "load1": load1()}
        c = None
        loader = None
        run(["rm", "-rf", local], check=False)
        os.makedirs(local)
        drop_caches()
        s0 = self._pfs_stats(pfs) if pfs else {}
        drops0 = drops()
        try:
            t0 = time.monotonic()
            if name == "hdf5":
                prep_root = os.path.join(where, os.path.basename(ds["h5"]))
            elif name == "squashcached":
                c = Squashcached(self.cfg, self.reg)
                rec["mount_s"] = c.mount(
                    ds, image=os.path.join(where,
                                           os.path.basename(ds["image"])),
                    mnt=os.path.join(scratch, "mnt", "h5-sqc"),
                    extra="stage=full" if pfs else None)
                c.after_mount()
                prep_root = c.mnt
            elif name == "untar_tmpfs":
                run(["tar", "-x", "-b", str(self.cfg["tar_blocking"]), "-f",
                     os.path.join(where, os.path.basename(ds["tar"])),
                     "-C", local], timeout=3600)
                rec["untar_s"] = time.monotonic() - t0
                prep_root = local
            else:
                raise ValueError(name)
            rec["prep_s"] = time.monotonic() - t0
            cpu0 = proc_cpu(c.pid) if c and c.pid else None
            guard = c or Tmpfs(self.cfg, self.reg)
            with Watchdog(guard, hc["timeout"]) as wd:
                t1 = time.monotonic()
                if name == "hdf5":
                    dset = H5Dataset(prep_root, "train", mode)
                else:
                    dset = folder_dataset(prep_root, mode)
                rec["dataset_s"] = time.monotonic() - t1
                loader = self.hdf5_loader(dset, mode,
                                          self.cfg["seed"] + rep)
                rec["files"], rec["bytes"] = hdf5_epoch(loader, mode)
                rec["epoch1_s"] = time.monotonic() - t1
                rec["total_s"] = time.monotonic() - t0
                s1 = self._pfs_stats(pfs) if pfs else {}
                cpu1 = proc_cpu(c.pid) if c and c.pid else None
                t2 = time.monotonic()
                hdf5_epoch(loader, mode)
                rec["epoch2_s"] = time.monotonic() - t2
            if wd.fired:
                raise RuntimeError("aborted after %d s" % hc["timeout"])
            if pfs:
                rec["pfs"] = numeric_delta(s1, s0)
                rec["pfs2"] = numeric_delta(self._pfs_stats(pfs), s1)
            if cpu0 is not None and cpu1 is not None:
                rec["daemon_cpu_epoch_s"] = cpu1 - cpu0
                cpu2 = proc_cpu(c.pid)
                if cpu2 is not None:
                    rec["daemon_cpu_epoch2_s"] = cpu2 - cpu1
        except Exception as e:  # noqa: BLE001 - recorded
            rec["error"] = str(e)[:500]
        finally:
            it = getattr(loader, "_iterator", None)
            if it is not None:
                try:
                    it._shutdown_workers()
                except Exception:  # noqa: BLE001 - best effort
                    pass
            if c:
                c.umount()
            rec["foreign_drops"] = drops() - drops0
            run(["rm", "-rf", local], check=False)
        return rec

    # -- the whole run --

    def checkpoint(self):
        """Save what was measured so far, in case the run dies."""
        if not self.partial:
            return
        with open(self.partial + ".tmp", "w") as f:
            json.dump(dict(self.res, config=self.cfg), f)
        os.replace(self.partial + ".tmp", self.partial)

    def run(self):
        cfg = self.cfg
        measures = cfg["measures"]
        self.loaders = Loaders(cfg)
        if cfg["hdf5"]["enabled"]:
            # sh bench/run.sh hdf5: that comparison alone
            t0 = time.monotonic()
            self.hdf5()
            self.res["hdf5_seconds"] = time.monotonic() - t0
            self.res["main_seconds"] = 0.0
            return self.res
        if cfg["ram"]["enabled"]:
            # sh bench/run.sh ram: that case alone
            for rd in cfg["ram"]["readers"]:
                if rd["kind"] == "dl":
                    self.loaders.get(rd["mode"], rd["workers"])
            t0 = time.monotonic()
            self.ram()
            self.res["ram_seconds"] = time.monotonic() - t0
            self.res["main_seconds"] = 0.0
            return self.res
        for m in measures:
            if m["kind"] == "dl":
                self.loaders.get(m["mode"], m["workers"])
            elif m["kind"] == "train":
                self.loaders.get(m.get("mode", "raw"), m["workers"])
        for rd in cfg["slow"]["readers"] if cfg["slow"]["enabled"] else []:
            if rd["kind"] == "dl":
                self.loaders.get(rd["mode"], rd["workers"])
        t0 = time.monotonic()
        for rep in range(cfg["reps"]):
            log("=== repetition %d of %d: order %s" % (
                rep + 1, cfg["reps"],
                ", ".join(c.name for c in self.order(rep))))
            # At scale the tree is extracted for tmpfs's own passes only
            # (measure()): 1.28M files take 6-7 GB of /dev/shm, which the
            # other contenders' page caches would otherwise do without.
            for ds in cfg["datasets"].values() if not cfg["scale"] else []:
                self.extract(ds, rep)
            self.mount_first_byte(rep)
            for m in measures:
                self.measure(m, rep)
                self.checkpoint()
        self.res["main_seconds"] = time.monotonic() - t0
        if cfg["slow"]["enabled"]:
            t0 = time.monotonic()
            self.slow()
            self.res["slow_seconds"] = time.monotonic() - t0
        return self.res


def shutil_which(name):
    import shutil
    return shutil.which(name)


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def env(name, default):
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    return type(default)(v) if not isinstance(default, str) else v


def default_measures(pil_subset):
    m = [
        {"id": "imagefolder", "kind": "imagefolder", "set": "images"},
        {"id": "imagefolder", "kind": "imagefolder", "set": "small"},
        {"id": "dl_raw_w2", "kind": "dl", "mode": "raw", "workers": 2,
         "set": "images"},
        {"id": "dl_raw_w4", "kind": "dl", "mode": "raw", "workers": 4,
         "set": "images"},
        {"id": "dl_raw_w4", "kind": "dl", "mode": "raw", "workers": 4,
         "set": "small"},
        # the same with squashcache.torch.read_bytes() (no isatty ioctl)
        {"id": "dl_rawfd_w4", "kind": "dl", "mode": "rawfd", "workers": 4,
         "set": "images"},
        {"id": "dl_rawfd_w4", "kind": "dl", "mode": "rawfd", "workers": 4,
         "set": "small"},
        {"id": "train_w4", "kind": "train", "workers": 4, "set": "images"},
        # decode-bound: ImageFolder + the training transform, as many
        # workers as cores (sh bench/run.sh decode; not in "default")
        {"id": "train_dec", "kind": "train", "mode": "decode",
         "workers": os.cpu_count() or 1, "set": "images"},
        # the same with ImageFolder(loader=squashcache.torch.pil_loader)
        {"id": "train_decfd", "kind": "train", "mode": "decodefd",
         "workers": os.cpu_count() or 1, "set": "images"},
        {"id": "dl_pil_w2", "kind": "dl", "mode": "pil", "workers": 2,
         "set": "images", "subset": pil_subset},
        {"id": "dl_pil_w4", "kind": "dl", "mode": "pil", "workers": 4,
         "set": "images", "subset": pil_subset},
        {"id": "cread_t4", "kind": "cread", "threads": 4, "set": "images"},
        {"id": "cread_t16", "kind": "cread", "threads": 16, "set": "images"},
        {"id": "cread_t4", "kind": "cread", "threads": 4, "set": "small"},
        {"id": "cread_t16", "kind": "cread", "threads": 16, "set": "small"},
        {"id": "walk_py", "kind": "pywalk", "set": "small"},
        {"id": "walk_c_t1", "kind": "cwalk", "threads": 1, "set": "small"},
    ]
    return m


def scale_measures():
    """sh bench/run.sh scale: ImageNet's shape (set scale) and a quarter
    of it (set scale_q, the growth check: listing and walking only)."""
    return [
        {"id": "imagefolder", "kind": "imagefolder", "set": "scale"},
        {"id": "walk_py", "kind": "pywalk", "set": "scale"},
        {"id": "dl_raw_w4", "kind": "dl", "mode": "raw", "workers": 4,
         "set": "scale"},
        {"id": "cread_t16", "kind": "cread", "threads": 16, "set": "scale"},
        # opt-in (MEASURES=...,dl_rawfd_w4): read_bytes(), no isatty
        {"id": "dl_rawfd_w4", "kind": "dl", "mode": "rawfd", "workers": 4,
         "set": "scale"},
        {"id": "imagefolder", "kind": "imagefolder", "set": "scale_q"},
        {"id": "walk_py", "kind": "pywalk", "set": "scale_q"},
    ]


def config_from_env():
    """The run's parameters, from the environment run.sh sets."""
    with open(os.environ["DATASETS_JSON"]) as f:
        datasets = json.load(f)
    for ds in datasets.values():
        for k in ("gen_json", "build_json", "h5_build_json"):
            try:
                with open(ds[k]) as f:
                    ds[k.replace("_json", "")] = json.load(f)
            except (OSError, KeyError, ValueError):
                ds[k.replace("_json", "")] = None
    pil_subset = env("PIL_SUBSET", 2000)
    scale = env("SCALE", 0) == 1
    measures = scale_measures() if scale else default_measures(pil_subset)
    only = env("MEASURES", "default")
    if only == "default" and scale:
        measures = [m for m in measures if m["id"] != "dl_rawfd_w4"]
    elif only == "default":
        # the 4-thread C reader on the small set is left out by default: on
        # the kernel and squashfuse_ll it adds about 20 minutes per
        # repetition at 300,000 files and says little the 16-thread one
        # does not
        measures = [m for m in measures
                    if (m["id"], m["set"]) != ("cread_t4", "small") and
                    m["id"] not in ("train_dec", "train_decfd",
                                    "dl_rawfd_w4")]
    elif only != "all":
        keep = set(only.split(","))
        measures = [m for m in measures if m["id"] in keep or
                    "%s/%s" % (m["id"], m["set"]) in keep]
    slow_readers = [
        {"id": "cread_t16", "kind": "cread", "threads": 16, "set": "images"},
        {"id": "dl_raw_w4", "kind": "dl", "mode": "raw", "workers": 4,
         "set": "images"},
        {"id": "dl_raw_w8", "kind": "dl", "mode": "raw", "workers": 8,
         "set": "images"},
        {"id": "cread_t16", "kind": "cread", "threads": 16, "set": "small"},
        {"id": "dl_dec", "kind": "dl", "mode": "decode",
         "workers": os.cpu_count() or 1, "set": "images"},
    ]
    only_slow = env("SLOW_READERS", "cread_t16/images,dl_raw_w4/images,"
                    "dl_raw_w8/images")
    # sh bench/run.sh ram: larger than RAM, on the images set
    ram_mode = env("RAM", 0) == 1
    h5_mode = env("HDF5", 0) == 1
    keep = set(env("RAM_READERS", "dl_raw_w4/images").split(","))
    ram_readers = [m for m in slow_readers if m["set"] == "images" and
                   (m["id"] in keep or "%s/%s" % (m["id"], m["set"]) in keep)]
    if only_slow != "all":
        slow_readers = [m for m in slow_readers
                        if "%s/%s" % (m["id"], m["set"]) in
                        set(only_slow.split(","))]
    slow_cont = env("SLOW_CONTENDERS", "sqc_stage,sqc_demand,"
                    "cp_squashfuse_ll,untar_tmpfs")
    # Storage profiles: a parallel file system as one link (the first
    # takes SLOW_LATENCY_MS and SLOW_BW), one with more latency and less
    # bandwidth, and one striped over 4 servers with a queue each.
    profiles = {
        "pfs": {"latency_ms": env("SLOW_LATENCY_MS", "1"),
                "meta_latency_ms": env("SLOW_META_LATENCY_MS", "1"),
                "bw": env("SLOW_BW", "500M"), "stripes": 1,
                "stripe_size": "1M"},
        "pfs_slow": {"latency_ms": "5", "meta_latency_ms": "5",
                     "bw": "200M", "stripes": 1, "stripe_size": "1M"},
        "striped": {"latency_ms": "1", "meta_latency_ms": "1",
                    "bw": "500M", "stripes": 4, "stripe_size": "1M"},
    }
    slow_profiles = [dict(profiles[n], name=n) for n in
                     env("SLOW_PROFILES", "pfs,pfs_slow,striped").split(",")
                     if n in profiles]
    # SLOW_CACHED=1: each profile as a PFS client with a page cache and
    # SLOW_READAHEAD_KB of readahead (the HDF5 comparison's client)
    # instead of one whose every read goes to the storage
    if env("SLOW_CACHED", 0):
        slow_profiles = [dict(p, cached=True,
                              read_ahead_kb=env("SLOW_READAHEAD_KB", 16384))
                         for p in slow_profiles]
    return {
        "build": env("BUILD", "build"),
        "scratch": os.environ["SCRATCH"],
        "store": os.environ["STORE"],
        "datasets": datasets,
        "scale": scale,
        "contenders": [] if ram_mode or h5_mode else
        env("CONTENDERS", "tmpfs,kernel,squashfuse_ll,"
            "squashcached").split(","),
        "measures": [] if ram_mode or h5_mode else measures,
        "reps": env("REPS", 3),
        "slow_reps": env("SLOW_REPS", 3),
        "seed": env("SEED", 42),
        "pass_timeout": env("PASS_TIMEOUT", 1200),
        "dl_batch": env("DL_BATCH", 64),
        "pil_batch": env("PIL_BATCH", 32),
        "pil_subset": pil_subset,
        "tar_blocking": env("TAR_BLOCKING", 2048),
        "warm_tries": env("WARM_TRIES", 3),
        "sqc_opts": env("SQC_OPTS", ""),
        "zerofs_opts": env("ZEROFS_OPTS", ""),
        "base_build": os.path.abspath(env("BASE_BUILD", "build-base")),
        "first_drop": "before_mount",
        "warmup_file": os.environ["WARMUP_FILE"],
        "slow": {
            "enabled": env("SLOW", 1) != 0,
            "latency_ms": env("SLOW_LATENCY_MS", "1"),
            "meta_latency_ms": env("SLOW_META_LATENCY_MS", "1"),
            "bw": env("SLOW_BW", "500M"),
            "blksize": env("SLOW_BLKSIZE", "4M"),
            "threads": env("SLOW_THREADS", "64"),
            "timeout": env("SLOW_TIMEOUT", 900),
            "readers": slow_readers,
            "contenders": slow_cont.split(","),
            "profiles": slow_profiles,
        },
        "hdf5": {
            "enabled": h5_mode,
            # "ram": the files in /dev/shm as they are; then slowfs
            "profiles": [dict(profiles.get(n, {}), name=n) for n in
                         env("H5_STORAGES", "ram,pfs,pfs_slow").split(",")
                         if n == "ram" or n in profiles],
            "contenders": env("H5_CONTENDERS", "hdf5,squashcached,"
                              "untar_tmpfs").split(","),
            "modes": env("H5_MODES", "raw,decoded").split(","),
            "reps": env("H5_REPS", 3),
            "workers": env("H5_WORKERS", os.cpu_count() or 1),
            "batch_raw": env("DL_BATCH", 64),
            "batch_decoded": env("PIL_BATCH", 32),
            "timeout": env("SLOW_TIMEOUT", 900),
            # slowfs with the page cache and readahead: a PFS client
            # with RAM to spare (0: every read goes to the storage)
            "cached": env("H5_PFS_CACHED", 1) != 0,
            "read_ahead_kb": env("H5_PFS_READAHEAD_KB", 16384),
        },
        "ram": {
            "enabled": ram_mode,
            "readers": ram_readers,
            "contenders": env("RAM_CONTENDERS", ",".join(
                RAM_PEERS + RAM_SQC)).split(","),
            "profiles": slow_profiles,
            # the squashcached rows, and the kernel's and squashfuse_ll's
            # (whose epochs take minutes on pfs_slow)
            "reps": env("RAM_REPS", 3),
            "peer_reps": env("RAM_PEER_REPS", 3),
            # a peer's first epoch: nothing of it survives drop_caches
            "peer_first": env("RAM_PEER_FIRST", 0) != 0,
            "timeout": env("SLOW_TIMEOUT", 900),
            "ram": "image bytes / 4",
            "sqc_opts": env("RAM_SQC_OPTS", ""),
        },
    }


def sh_out(cmd):
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
        return r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def damon_info():
    """Proactive reclaim by DAMON, if the machine runs it: page cache that
    stays idle long enough is paged out, which makes long warm passes of
    page-cache-backed contenders partly cold."""
    base = "/sys/kernel/mm/damon/admin/kdamonds"
    out = []

    def rd(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return None

    try:
        kds = sorted(os.listdir(base))
    except OSError:
        return None
    for k in kds:
        if not k.isdigit() or rd("%s/%s/state" % (base, k)) != "on":
            continue
        ctx = "%s/%s/contexts/0" % (base, k)
        aggr = int(rd(ctx + "/monitoring_attrs/intervals/aggr_us") or 0)
        try:
            schemes = sorted(os.listdir(ctx + "/schemes"))
        except OSError:
            schemes = []
        for sc in schemes:
            if not sc.isdigit():
                continue
            p = "%s/schemes/%s" % (ctx, sc)
            out.append({
                "kdamond": k, "operations": rd(ctx + "/operations"),
                "action": rd(p + "/action"),
                "min_age_s": int(rd(p + "/access_pattern/age/min") or 0) *
                aggr / 1e6,
                "max_nr_accesses": rd(p + "/access_pattern/nr_accesses/max"),
                "quota_bytes_per_reset": rd(p + "/quotas/bytes"),
                "quota_reset_ms": rd(p + "/quotas/reset_interval_ms"),
                "applied_bytes": rd(p + "/stats/sz_applied")})
    return out


def side_main(cfg_from_env, make):
    """The main of a benchmark beside the main one (sweep, seal, site):
    its parameters from the environment (cfg_from_env()), make(cfg) its
    object (run() gives the results; own_drops; stop(), if it has one,
    runs whatever happens), and the results, with the machine before and
    after and the command, written as JSON to sys.argv[1]."""
    out_path = sys.argv[1]
    cfg = cfg_from_env()
    os.makedirs(os.path.join(cfg["scratch"], "logs"), exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M:%S %z")
    machine = machine_info()
    t0 = time.monotonic()
    b = make(cfg)
    try:
        res = b.run()
    finally:
        if hasattr(b, "stop"):
            b.stop()
    res["own_drops"] = b.own_drops
    res["bench_seconds"] = time.monotonic() - t0
    res["config"] = cfg
    res["machine"] = machine
    with open("/proc/loadavg") as f:
        machine["loadavg_end"] = f.read().split()[:3]
    machine["drop_pagecache_end"] = drops()
    machine["damon_end"] = damon_info()
    res["started"] = started
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    res["command"] = os.environ.get("BENCH_CMDLINE", "")
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    log("wrote " + out_path)


def machine_info():
    """What the run ran on, for the report's header."""
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    info["cpus"] = os.cpu_count()
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                info["mem_bytes"] = int(line.split()[1]) * 1024
    u = os.uname()
    info["kernel"] = "%s %s %s" % (u.sysname, u.release, u.machine)
    info["host"] = u.nodename
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    info["os"] = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    info["virt"] = sh_out(["systemd-detect-virt"]) or "unknown"
    st = os.statvfs("/dev/shm")
    info["dev_shm_bytes"] = st.f_blocks * st.f_frsize
    pk = {}
    for p in ("fuse3", "libfuse3-3", "squashfs-tools", "squashfuse",
              "erofs-utils", "python3-torch", "python3-torchvision",
              "python3-pil", "tar", "coreutils"):
        v = sh_out(["dpkg-query", "-W", "-f=${Version}", p])
        pk[p] = v if v and "no packages" not in v else None
    info["packages"] = pk
    info["python"] = sys.version.split()[0]
    info["mksquashfs"] = (sh_out(["mksquashfs", "-version"]) or
                          "").splitlines()[0:1]
    git = sh_out(["git", "rev-parse", "--short", "HEAD"])
    dirty = sh_out(["git", "status", "--porcelain", "--untracked-files=normal",
                    "--", "lib", "daemon"])
    info["squashcache_commit"] = (git or "?") + (
        " + uncommitted or untracked files in lib/ daemon/" if dirty else "")
    info["squashcached_binary"] = os.environ.get("SQC_BINARY", "?")
    info["drop_pagecache_start"] = drops()
    info["damon"] = damon_info()
    try:
        with open("/sys/module/fuse/parameters/enable_uring") as f:
            info["fuse_enable_uring"] = f.read().strip()
    except OSError:
        info["fuse_enable_uring"] = None
    with open("/proc/loadavg") as f:
        info["loadavg_start"] = f.read().split()[:3]
    return info


def main():
    out_path = sys.argv[1]
    cfg = config_from_env()
    os.makedirs(os.path.join(cfg["scratch"], "logs"), exist_ok=True)
    b = Bench(cfg)
    b.partial = out_path + ".partial"
    started = time.strftime("%Y-%m-%d %H:%M:%S %z")
    machine = machine_info()
    t0 = time.monotonic()
    try:
        res = b.run()
    except BaseException:
        for c in b.contenders:
            c.umount()
        raise
    res["bench_seconds"] = time.monotonic() - t0
    res["config"] = cfg
    res["machine"] = machine
    with open("/proc/loadavg") as f:
        machine["loadavg_end"] = f.read().split()[:3]
    machine["drop_pagecache_end"] = drops()
    res["started"] = started
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    res["command"] = os.environ.get("BENCH_CMDLINE", "")
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    if os.path.exists(b.partial):
        os.unlink(b.partial)
    log("wrote " + out_path)


if __name__ == "__main__":
    main()

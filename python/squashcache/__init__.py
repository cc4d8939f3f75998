# SPDX-License-Identifier: MIT
"""Tell a squashcache mount the order in which an epoch will read its files.

A training epoch reads its files in a shuffled order.  When the image is
larger than the RAM the daemon may stage it into, every file that is not
staged costs one round trip to the storage.  Told the order first, the
daemon reads those files ahead, many at once, in that order, and drops
each once it has been read: the epoch then takes about as long as the
storage needs to send the unstaged bytes.

    import squashcache
    squashcache.order(paths_in_the_order_they_will_be_read)

For PyTorch, squashcache.torch.EpochOrder wraps a sampler and does this at
the start of each epoch.  The hint is optional: without it everything
reads the same bytes, only slower behind slow storage.

An order is the calling process's: it replaces that process's order only,
and the daemon drops it when the process ends.  The processes that share
a mount (the ranks of a training job on one node, each with its own shard
of the data set) each give theirs, and the daemon reads them all ahead
at once, as far as each one's readers have got.

This module runs `mountctl order` (the control socket's client): the
mountctl that SQUASHCACHE_MOUNTCTL names, else the first on PATH.  It
needs no other package; squashcache.torch needs PyTorch.
"""

import os
import shutil
import subprocess

__all__ = ["OrderError", "mountpoint_of", "order", "clear"]

FSTYPE = "fuse.squashcache"


class OrderError(RuntimeError):
    """The order could not be given: mountctl's message says why."""


def _mountctl():
    """The mountctl to run: $SQUASHCACHE_MOUNTCTL, else the first on PATH.
    Raises OrderError when there is none."""
    named = os.environ.get("SQUASHCACHE_MOUNTCTL")
    if named:
        return named
    found = shutil.which("mountctl")
    if found is None:
        raise OrderError("mountctl is not on PATH: add the directory of "
                         "squashcache's programs to PATH, or set "
                         "SQUASHCACHE_MOUNTCTL=/path/to/mountctl")
    return found


def _unescape(field):
    # /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _mounts():
    with open("/proc/self/mountinfo", encoding="utf-8",
              errors="surrogateescape") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split(" ")
            if len(fields) > 4 and right.split(" ")[0] == FSTYPE:
                yield _unescape(fields[4])


def mountpoint_of(path):
    """The squashcache mount point that holds @path (its innermost), or
    None.  Compares paths only: nothing under the mount is looked up."""
    p = os.path.abspath(os.fspath(path))
    best = None
    for m in _mounts():
        if (p == m or p.startswith(m.rstrip("/") + "/")) and \
                (best is None or len(m) > len(best)):
            best = m
    return best


def _owner(pid):
    """The --pid of an order: this process by default; 0: none (the
    mount's own order)."""
    pid = os.getpid() if pid is None else int(pid)
    if pid < 0:
        raise ValueError("pid must be a process id, or 0 for the mount's "
                         "own order")
    return ["--pid", str(pid)] if pid else []


def _send(mountpoint, body, clear_it=False, pid=None):
    cmd = [_mountctl(), "order"] + _owner(pid)
    cmd += ["--clear"] if clear_it else ["-0"]
    cmd.append(mountpoint)
    try:
        r = subprocess.run(cmd, input=body, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, check=False)
    except OSError as e:
        raise OrderError("cannot run %s: %s (SQUASHCACHE_MOUNTCTL names "
                         "the mountctl to run)" % (cmd[0], e)) from e
    if r.returncode:
        msg = r.stderr.decode(errors="replace").strip()
        raise OrderError(msg or "%s exited with %d" % (cmd[0], r.returncode))
    return r.stdout.decode(errors="replace").strip()


def order(paths, mountpoint=None, pid=None):
    """Tell the mount that this epoch reads @paths, in this order.

    @paths: file paths under one squashcache mount (absolute, or relative
    to the mount's root when @mountpoint is given).  @mountpoint: the
    mount; by default the one holding the first path.  @pid: the process
    whose order it is (this one by default: its order replaces this
    process's order before, and goes when the process ends); 0 for the
    mount's own order, which the next such order replaces.

    Returns mountctl's one-line summary.  Raises OrderError if a path is
    not a file of the image (nothing changes then), the mount is not a
    squashcache mount, or the daemon refuses; ValueError if @paths is
    empty or a path holds a NUL.
    """
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ValueError("no paths: use squashcache.clear() to forget an order")
    if mountpoint is None:
        mountpoint = mountpoint_of(paths[0])
        if mountpoint is None:
            raise OrderError("%r is not on a squashcache mount" % paths[0])
    parts = []
    for p in paths:
        b = os.fsencode(p)
        if b"\0" in b:
            raise ValueError("a path holds a NUL: %r" % p)
        parts.append(b)
    parts.append(b"")
    return _send(os.fspath(mountpoint), b"\0".join(parts), pid=pid)


def clear(mountpoint, pid=None):
    """Forget this process's epoch order on the mount (@pid: another
    process's; 0: the mount's own)."""
    return _send(os.fspath(mountpoint), b"", clear_it=True, pid=pid)

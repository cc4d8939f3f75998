#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Read a running squashcached's statistics over its control socket.

    /usr/bin/python3 tests/py/sqc_stats.py [--ctl ADDR] MOUNTPOINT [FIELD...]
    /usr/bin/python3 tests/py/sqc_stats.py [--ctl ADDR] --json MOUNTPOINT
    /usr/bin/python3 tests/py/sqc_stats.py [--ctl ADDR] --summary MOUNTPOINT

A stand-in for `mountctl status` for the tests and the demo, speaking the
protocol of lib/ctl/ctl.h: connect, send "stats\\n", read one JSON line.
Without --ctl the address is the daemon's default, "@squashcache-<hash>"
in the abstract namespace, where <hash> is the 64-bit FNV-1a of the
canonical mount path (ctl_default_address() in lib/ctl/addr.c).  --ctl
takes what was given to squashcached's -o ctl=PATH.

With FIELD arguments (dotted paths such as fuse.bytes_served) it prints
one value per line; --json pretty-prints the whole object; --summary
prints a short report for people.

Exit status: 0 done, 1 no daemon answers or the reply is not valid,
2 usage.
"""
import argparse
import json
import os
import socket
import sys


def canonical_mountpoint(path):
    """Like ctl_canonical_mountpoint(): resolve the parent, keep the name."""
    path = path.rstrip("/") or "/"
    parent, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(parent), name)


def default_address(mountpoint):
    """The abstract socket name squashcached listens on by default."""
    h = 1469598103934665603
    for c in os.fsencode(canonical_mountpoint(mountpoint)):
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "@squashcache-%016x" % h


def request(addr, cmd="stats", timeout=5.0):
    """Send one command, return the decoded JSON reply."""
    target = "\0" + addr[1:] if addr.startswith("@") else addr
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(target)
        s.sendall(cmd.encode() + b"\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    reply = json.loads(data.decode())
    if not reply.get("ok"):
        raise RuntimeError("daemon says: %s" % reply.get("error", "not ok"))
    return reply


def stats(mountpoint, ctl=None):
    """The stats object of the daemon serving @mountpoint."""
    return request(ctl or default_address(mountpoint))


def get(obj, dotted):
    for key in dotted.split("."):
        obj = obj[key]
    return obj


def mb(n):
    """A size for people: 512 B, 7.3 KiB, 67.4 MiB, 1.2 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1024.0
    return None


def summary(st):
    """A few lines a person can read, from a stats object."""
    stage = st.get("stage", {})
    fuse = st.get("fuse", {})
    io = st.get("image_io", {})
    pf = st.get("prefetch", {})
    proc = st.get("process", {})
    lines = [
        "image        %s (%s, %d KiB blocks, %d inodes, %s)"
        % (st.get("image"), st.get("compressor"),
           st.get("block_size", 0) // 1024, st.get("inodes", 0),
           mb(io.get("bytes", 0))),
        "mountpoint   %s (daemon pid %s, up %.1f s)"
        % (st.get("mountpoint"), st.get("pid"), st.get("uptime_s", 0.0)),
    ]
    if stage.get("on_tmpfs"):
        lines.append("staging      %s: the image file is on tmpfs already"
                     % stage.get("state"))
    else:
        lines.append(
            "staging      %s: %s of %s (%.0f%%) in %.2f s, %.0f MB/s"
            % (stage.get("state"), mb(stage.get("staged", 0)),
               mb(stage.get("planned", 0)), stage.get("percent", 0.0),
               stage.get("seconds", 0.0), stage.get("mb_per_s", 0.0)))
    for name in ("data", "meta"):
        c = st.get("cache", {}).get(name, {})
        lines.append(
            "%-12s %s used of %s (peak %s), %d hits, %d misses, "
            "%d evictions"
            % (name + " cache", mb(c.get("bytes", 0)),
               mb(c.get("budget", 0)), mb(c.get("peak", 0)),
               c.get("hits", 0), c.get("misses", 0),
               c.get("evictions", 0)))
    lines += [
        "served       %s in %d reads; %d lookups, %d opens; %d EIO"
        % (mb(fuse.get("bytes_served", 0)), fuse.get("read", 0),
           fuse.get("lookup", 0), fuse.get("open", 0), fuse.get("eio", 0)),
        "image reads  %d (%s), %d decompressions, %d corrupt blocks"
        % (io.get("reads", 0), mb(io.get("read_bytes", 0)),
           io.get("decompressions", 0), io.get("corrupt", 0)),
        "prefetch     %d workers, %d jobs done, %d dropped, %d errors"
        % (pf.get("workers", 0), pf.get("done", 0), pf.get("dropped", 0),
           pf.get("errors", 0)),
        "process      RSS %s, CPU %.2f s user + %.2f s system, %d threads"
        % (mb(proc.get("rss_bytes", 0)), proc.get("cpu_user_s", 0.0),
           proc.get("cpu_sys_s", 0.0), proc.get("threads", 0)),
    ]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctl", help="control socket (squashcached -o ctl=)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--json", action="store_true",
                      help="pretty-print the whole stats object")
    mode.add_argument("--summary", action="store_true",
                      help="a short report for people")
    ap.add_argument("mountpoint")
    ap.add_argument("field", nargs="*", help="dotted path, e.g. fuse.eio")
    a = ap.parse_args()
    try:
        st = stats(a.mountpoint, a.ctl)
    except (OSError, ValueError, RuntimeError) as e:
        print("sqc_stats: no statistics from the daemon of '%s': %s"
              % (a.mountpoint, e), file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(st, indent=2))
    elif a.summary or not a.field:
        print(summary(st))
    for f in a.field:
        try:
            print(get(st, f))
        except (KeyError, TypeError):
            print("sqc_stats: no field '%s' in the stats" % f,
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

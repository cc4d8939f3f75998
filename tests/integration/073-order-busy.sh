#!/bin/sh
# An epoch order in flight does not hold the control socket (issue 30),
# a case of the hostile-user suite: the mount's own user sends an order of
# tens of thousands of paths, or one whose body comes slowly, and the
# requests that keep the mount alive and watched (ping, stats, hold,
# release, umount) are answered meanwhile, not queued behind it:
#   1. while an order of 40,000 paths is in flight (its last bytes held
#      back, trickled so that the daemon keeps waiting for them), stats
#      and ping come back, the order's reply has not come, and the order
#      is not set yet; once the rest of its body is sent, the order is
#      taken whole;
#   2. the orders of many processes at once (the ranks of a job on a
#      node: 8, 16 and 64 of them, each its own order with its pid) wait
#      for the one in flight, none is refused as busy, stats and ping are
#      answered meanwhile, then each is carried out and held beside the
#      others (the stats list every process and its files), and each
#      goes once its process ends;
#   3. an order of 40,000 paths sent whole: pings are answered while it
#      is carried out (reported; how many depends on the machine);
#   4. umount asked while an order is in flight and 64 processes' orders
#      wait: the daemon exits at once, and none of the orders is carried
#      out.
# TIMEOUT: 300
# TSAN: yes
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_cmd mksquashfs

NFILES=40000
note "a tree of $NFILES small files in 200 directories"
"$PYTHON" - "$T/src" "$NFILES" <<'PY'
import os, sys
top, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(top, "d%03d" % (i % 200))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d" % i), "w") as f:
        f.write("file %d\n" % i)
PY
mkimg "$T/src" "$T/img.sqfs" -comp gzip -no-xattrs
sqc_mount "$T/img.sqfs" "$T/mnt" -o "stage=none,ctl=$T/ctl.sock,log=$T/daemon.log"
pid=$(sqc_pid "$T/mnt")

"$PYTHON" - "$T/ctl.sock" "$NFILES" >"$T/py.out" 2>&1 <<'PY' || { cat "$T/py.out"; fail "control requests queued behind an order"; }
import json, select, socket, sys, time
addr, n = sys.argv[1], int(sys.argv[2])
paths = ["d%03d/f%05d" % (i % 200, i) for i in range(n)]
body = b"".join(p.encode() + b"\0" for p in paths)

def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(addr)
    return s

def reply(s, timeout=60):
    s.settimeout(timeout)
    r = b""
    while not r.endswith(b"\n"):
        c = s.recv(65536)
        if not c:
            break
        r += c
    s.close()
    return r

def ask(line, timeout=60):
    s = connect()
    s.sendall(line.encode())
    return reply(s, timeout)

def has_reply(s):
    return bool(select.select([s], [], [], 0)[0])

def stats():
    r = ask("stats\n")
    assert r.startswith(b'{"ok":true'), r[:200]
    return json.loads(r)

def held_order(b, hold=64):
    """An order whose last @hold bytes are held back: in flight."""
    s = connect()
    s.sendall(b"order %d\n" % len(b) + b[:-hold])
    return s, b[-hold:]

def ask_held(s, rest, line):
    """Ask @line on another connection while @s's order is in flight,
    trickling @rest a byte every 0.4 s (the daemon drops a body that
    stalls 2 s).  Return: the reply and the bytes of @rest left."""
    q = connect()
    q.sendall(line.encode())
    while not select.select([q], [], [], 0.4)[0]:
        assert len(rest) > 1, \
            "no reply to %r within %.0f s of an order in flight" % \
            (line, 0.4 * 63)
        s.sendall(rest[:1])
        rest = rest[1:]
    return reply(q), rest

orders = stats()["order"]["orders"]

# 1. Requests answered while an order is in flight.
s, rest = held_order(body)
t0 = time.monotonic()
r, rest = ask_held(s, rest, "stats\n")
took = time.monotonic() - t0
assert r.startswith(b'{"ok":true'), r[:200]
assert json.loads(r)["order"]["orders"] == orders, "the order was set early"
assert not has_reply(s), "the order was answered before its body came"
r, rest = ask_held(s, rest, "ping\n")
assert r.startswith(b'{"ok":true') and b'"pid"' in r, r
assert not has_reply(s), "the order was answered before its body came"
s.sendall(rest)
r = reply(s)
assert r.startswith(b'{"ok":true') and b'"files":%d' % n in r, r
st = stats()["order"]
assert st["orders"] == orders + 1 and st["files"] == n, st
print("1. stats in %.2f s and ping while an order of %d paths was in "
      "flight; then the order: %s" % (took, n, r.decode().strip()))

# 2. The orders of 8, 16 and 64 processes at once wait for the one in
# flight: none is refused, and each is held beside the others.
import os


def start_time():
    """Our start time, as the daemon checks it (/proc/PID/stat field 22)."""
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def rank(k, out, go, sent):
    """A child: its own order of 3 files; a byte to @sent once it is sent;
    its reply, or what went wrong, as a line to @out (always: the parent
    reads one from each); then wait until @go is closed.  Never returns."""
    r = b"(no reply)"
    try:
        mine = b"".join(b"d%03d/f%05d\0" % ((k * 3 + j) % 200, k * 3 + j)
                        for j in range(3))
        s = connect()
        s.sendall(b"order %d %d %d\n" % (len(mine), os.getpid(),
                                         start_time()) + mine)
        os.write(sent, b"s")
        r = reply(s, 120)
    except BaseException as e:  # noqa: B036 - reported to the parent
        r = b"(%s: %s)" % (type(e).__name__.encode(), str(e).encode())
    finally:
        try:
            os.write(out, r.strip().replace(b"\n", b" ") + b"\n")
            os.read(go, 1)
        finally:
            os._exit(0)


def ranks(n):
    """Fork @n ranks; return (pids, their replies' pipe, the pipe that
    lets them exit, the pipe each writes to once its order is sent)."""
    out_r, out_w = os.pipe()
    go_r, go_w = os.pipe()
    sent_r, sent_w = os.pipe()
    kids = []
    for k in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(out_r)
            os.close(go_w)
            os.close(sent_r)
            rank(k, out_w, go_r, sent_w)
        kids.append(pid)
    for fd in (out_w, go_r, sent_w):
        os.close(fd)
    return kids, out_r, go_w, sent_r


def wait_sent(s, rest, sent, n):
    """Until @n ranks have sent their orders, trickling @rest of the order
    in flight on @s (a byte every 0.4 s, as ask_held()).  Return: the
    bytes of @rest left."""
    got = 0
    while got < n:
        if select.select([sent], [], [], 0.4)[0]:
            c = os.read(sent, n - got)
            assert c, "a rank ended before sending its order"
            got += len(c)
            continue
        assert len(rest) > 1, "%d of %d ranks sent their orders in %.0f s" % (
            got, n, 0.4 * 63)
        s.sendall(rest[:1])
        rest = rest[1:]
    return rest


def pending(fd):
    return bool(select.select([fd], [], [], 0)[0])


for nranks in (8, 16, 64):
    before = stats()["order"]["orders"]
    s, rest = held_order(body)
    kids, out_r, go_w, sent_r = ranks(nranks)
    rest = wait_sent(s, rest, sent_r, nranks)
    os.close(sent_r)
    # Asked after every rank's order: answered once all of them wait.
    r, rest = ask_held(s, rest, "stats\n")
    assert json.loads(r)["order"]["orders"] == before, \
        "an order jumped the queue"
    r, rest = ask_held(s, rest, "ping\n")
    assert r.startswith(b'{"ok":true'), r
    assert not pending(out_r), "a waiting order was answered: %r" % \
        os.read(out_r, 4096)
    s.sendall(rest)
    r = reply(s)
    assert b'"files":%d' % n in r, r
    with os.fdopen(out_r, "rb") as f:
        lines = [f.readline() for _ in range(nranks)]
    for line in lines:
        assert line.startswith(b'{"ok":true') and b'"files":3' in line, \
            "a rank's order: %r" % line
    st = stats()["order"]
    by = {c["pid"]: c for c in st["by_client"]}
    assert st["clients"] == nranks + 1 and sorted(by) == [0] + sorted(kids), \
        (st["clients"], sorted(by))
    assert all(by[p]["files"] == 3 for p in kids), by
    assert st["files"] == n + 3 * nranks and st["refused"] == 0, st
    # Each rank's order goes when it ends.
    os.close(go_w)
    for pid in kids:
        os.waitpid(pid, 0)
    t0 = time.monotonic()
    while stats()["order"]["clients"] != 1:
        assert time.monotonic() - t0 < 10, \
            "the ranks' orders outlived them by 10 s"
        time.sleep(0.05)
    print("2. %d processes' orders waited for the one in flight, none "
          "refused, each held beside the others, and each gone %.2f s "
          "after its process ended" % (nranks, time.monotonic() - t0))

# 3. An order sent whole: pings while it is carried out.
s = connect()
s.sendall(b"order %d\n" % len(body) + body)
t0 = time.monotonic()
pings = 0
while not has_reply(s):
    r = ask("ping\n")
    assert r.startswith(b'{"ok":true'), r
    pings += 1 if not has_reply(s) else 0
r = reply(s)
assert b'"files":%d' % n in r, r
print("3. an order of %d paths took %.2f s; %d pings answered meanwhile" %
      (n, time.monotonic() - t0, pings))

# 4. umount while an order is in flight and 64 processes' orders wait.
s, rest = held_order(body)
kids, out_r, go_w, sent_r = ranks(64)
rest = wait_sent(s, rest, sent_r, 64)
os.close(sent_r)
r, rest = ask_held(s, rest, "stats\n")  # after every rank's order line
assert r.startswith(b'{"ok":true'), r
r, rest = ask_held(s, rest, "umount\n")
assert r.startswith(b'{"ok":true'), r
t0 = time.monotonic()
r = reply(s, 30)
assert not r.startswith(b'{"ok":true'), "an order was carried out after umount: %r" % r
with os.fdopen(out_r, "rb") as f:
    lines = [f.readline() for _ in range(64)]
took = time.monotonic() - t0
assert not any(line.startswith(b'{"ok":true') for line in lines), \
    "a waiting order was carried out after umount: %r" % lines
os.close(go_w)
for pid in kids:
    os.waitpid(pid, 0)
assert took < 10, "64 waiting orders held the unmount for %.1f s" % took
print("4. umount answered while an order was in flight and 64 waited; "
      "the order: %s; the 64 refused within %.2f s: %s" % (
          r.decode().strip() or "(connection closed)", took,
          lines[0].decode().strip() or "(connection closed)"))
PY
cat "$T/py.out"
wait_gone "$pid" 20 "daemon $pid (umount asked while an order was in flight)"
! is_mounted "$T/mnt" || fail "$T/mnt still mounted after umount"
echo "control requests are answered while an order is in flight"

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
#   2. orders wait for the one in flight, a bounded number of them: one
#      more is refused at once as busy, and those that waited are
#      carried out, in turn, once it is done;
#   3. an order of 40,000 paths sent whole: pings are answered while it
#      is carried out (reported; how many depends on the machine);
#   4. umount asked while an order is in flight: the daemon exits at once
#      and the order is refused, not carried out.
# TIMEOUT: 300
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

# 2. Orders wait for the one in flight, at most 4; one more is refused.
s, rest = held_order(body)
small = b"d000/f00000\0d001/f00001\0"
waiting = []
for k in range(4):
    w = connect()
    w.sendall(b"order %d\n" % len(small) + small)
    waiting.append(w)
r, rest = ask_held(s, rest, "order %d\n" % len(small))
assert r.startswith(b'{"ok":false') and b"busy" in r, r
r, rest = ask_held(s, rest, "stats\n")
assert json.loads(r)["order"]["orders"] == orders + 1, "an order jumped the queue"
assert not any(has_reply(w) for w in waiting), "a waiting order was answered"
s.sendall(rest)
r = reply(s)
assert b'"files":%d' % n in r, r
for w in waiting:
    r = reply(w)
    assert r.startswith(b'{"ok":true') and b'"files":2' in r, r
st = stats()["order"]
assert st["orders"] == orders + 6 and st["files"] == 2, st
print("2. 4 orders waited for the one in flight and were carried out; "
      "a 5th was refused as busy")

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

# 4. umount while an order is in flight.
s, rest = held_order(body)
r, rest = ask_held(s, rest, "umount\n")
assert r.startswith(b'{"ok":true'), r
r = reply(s, 30)
assert not r.startswith(b'{"ok":true'), "an order was carried out after umount: %r" % r
print("4. umount answered while an order was in flight; the order: %s" %
      (r.decode().strip() or "(connection closed)"))
PY
cat "$T/py.out"
wait_gone "$pid" 20 "daemon $pid (umount asked while an order was in flight)"
! is_mounted "$T/mnt" || fail "$T/mnt still mounted after umount"
echo "control requests are answered while an order is in flight"

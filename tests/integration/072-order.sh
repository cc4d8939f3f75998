#!/bin/sh
# The epoch order (mountctl order, squashcache.torch.EpochOrder): the
# daemon reads ahead, in the order given, what a read of each file needs,
# and readers get the source's bytes:
#   1. files of every shape (several blocks, compressed and stored
#      fragments, a duplicate, a sparse file) read in a shuffled order
#      after `mountctl order`, with a window smaller than the image:
#      byte for byte the source's, every planned range read once, the
#      window within its budget;
#   2. bad orders (no such file, '..', empty names, a directory, a
#      symlink, a path outside the mount, no NUL at the end, another
#      user, symlinks out of the image or in a loop) are refused with a
#      clear error and change nothing, and another user who trickles
#      bytes does not hold the control socket; a symlink to a file is
#      followed; an order of a process (--pid) sits beside the mount's
#      own, replaces its own only, and goes when the process ends, and
#      --pid of no running process is refused;
#   3. ranges that overlap without being equal (a file whose block list
#      points inside another's, as a block-deduplicating packer writes:
#      mksquashfs only shares whole files, whose ranges are equal) are
#      each served from the window and dropped after their own user;
#   4. torchvision's ImageFolder + DataLoader (4 workers) with EpochOrder
#      gives the same tensors as without it and as the source tree, the
#      orders are the script's process's and go when it ends;
#      EpochOrder takes the paths of a dataset from .samples (or .imgs,
#      or a Subset's) and loads no sample for that, and refuses a
#      dataset without them (tests/py/epoch_order_paths.py).
# TIMEOUT: 300
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_cmd mksquashfs shuf cmp setpriv
PY="$TOP/tests/py"
export PYTHONDONTWRITEBYTECODE=1

jget() {
    "$PYTHON" -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[k]
print(v)' "$1" "$2" || fail "no '$2' in $1"
}
stats() {
    "$MOUNTCTL" status --json "$1" >"$2" || fail "no statistics from the daemon of $1"
    "$PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
json.dump(d[0] if isinstance(d, list) else d, open(sys.argv[1], "w"))' "$2"
}

note "a tree of every shape, packed with gzip and 4 KiB blocks"
mkdir -p "$T/src/a/b" "$T/src/c"
i=0
while [ $i -lt 60 ]; do
    # sizes from 1 byte to ~37 KiB: tails alone, blocks and tails
    head -c $((1 + i * 631)) /dev/urandom >"$T/src/a/r$i"
    # compressible: packed fragments that files share
    yes "line $i of a text file" | head -c $((100 + i * 97)) >"$T/src/a/b/t$i"
    i=$((i + 1))
done
head -c 300000 /dev/urandom >"$T/src/c/big"
cp "$T/src/c/big" "$T/src/c/big-copy" # mksquashfs shares its blocks
truncate -s 200000 "$T/src/c/sparse"
printf 'end' >>"$T/src/c/sparse"
ln -s ../a/r1 "$T/src/c/link"
ln -s /etc/passwd "$T/src/c/abs"
ln -s ../../../x "$T/src/c/up"
ln -s loop "$T/src/c/loop"
ln -s ../a "$T/src/c/dirlink"
mkfifo "$T/src/c/fifo"
mkimg "$T/src" "$T/img.sqfs" -comp gzip -b 4096 -no-xattrs
(cd "$T/src" && find . -type f | sed 's|^\./||' | shuf --random-source="$T/img.sqfs") >"$T/order"
nfiles=$(wc -l <"$T/order")

# order_pass [,OPTIONS]: mount, order, read every file in that order, and
# check the order's counts.
order_pass() {
    sqc_mount "$T/img.sqfs" "$T/mnt" -o "stage=none,order_window=64K,log=$T/daemon.log${1:-}"
    "$MOUNTCTL" order "$T/mnt" <"$T/order" >"$T/order.out" 2>&1 ||
        fail "mountctl order failed: $(cat "$T/order.out")"
    cat "$T/order.out"
    grep -q "^order: $nfiles files, " "$T/order.out" || fail "mountctl order did not report $nfiles files"
    while read -r f; do
        cmp "$T/src/$f" "$T/mnt/$f" || fail "$f differs through the mount after an order"
    done <"$T/order"
    stats "$T/mnt" "$T/s1.json"
    planned=$(jget "$T/s1.json" order.planned)
    read=$(jget "$T/s1.json" order.read)
    served=$(jget "$T/s1.json" order.served)
    held_max=$(jget "$T/s1.json" order.held_max)
    ranges=$(jget "$T/s1.json" order.ranges)
    skipped=$(jget "$T/s1.json" order.skipped)
    held=$(jget "$T/s1.json" order.held)
    echo "order: $ranges ranges, $planned bytes planned, $read read, $served served, $skipped taken from the data cache, $held held at the end (at most $held_max)"
    [ "$(jget "$T/s1.json" order.files)" -eq "$nfiles" ] || fail "the daemon's order does not hold $nfiles files"
    [ "$read" -eq "$planned" ] || fail "read $read bytes for an order of $planned: a range read twice or not at all"
    [ "$(jget "$T/s1.json" image_io.order_bytes)" -eq "$read" ] || fail "image_io.order_bytes is not the order's reads"
    [ "$served" -gt 0 ] || fail "no read took its bytes from the order's window"
    # Compressed fragment blocks that files share: decoded for the first file,
    # found in the data cache by the others, which count as having taken it.
    [ "$skipped" -gt 0 ] || fail "no shared fragment block was taken from the data cache"
    # Every file was read whole: every range was taken by all its users.
    [ "$held" -eq 0 ] || fail "$held bytes still held after every file was read"
    # A reader may read one range past the window, and a range is at most 8 MiB
    # (here one file of 300,000 bytes at most).
    [ "$held_max" -le $((65536 + 300000)) ] || fail "the window held $held_max bytes, budget 65536"
    [ "$(jget "$T/s1.json" order.errors)" -eq 0 ] || fail "order reads failed"
    [ "$(jget "$T/s1.json" fuse.eio)" -eq 0 ] || fail "EIO replies"
}
# Through /dev/fuse raw bytes not in RAM are spliced from the image file,
# but not those the order's window holds; over io_uring they are copied.
note "1. mountctl order, then the files in that order (/dev/fuse, splicing)"
order_pass ,no_uring
sqc_umount "$T/mnt"
note "1. again, over FUSE's io_uring where the kernel offers it"
order_pass

note "2. bad orders are refused and change nothing"
orders=$(jget "$T/s1.json" order.orders)
refused() { # WANT_EXIT TEXT INPUT...
    _want=$1 _text=$2
    shift 2
    printf '%s\n' "$@" >"$T/bad"
    _rc=0
    "$MOUNTCTL" order "$T/mnt" <"$T/bad" >"$T/bad.out" 2>&1 || _rc=$?
    [ $_rc -eq "$_want" ] || fail "order of '$*': exit $_rc, want $_want ($(cat "$T/bad.out"))"
    grep -q -- "$_text" "$T/bad.out" || fail "order of '$*': no '$_text' in: $(cat "$T/bad.out")"
    echo "refused: $* -> $(cat "$T/bad.out")"
}
refused 1 "no such file in the image" a/r1 a/nope
refused 1 "'a/nope'" a/nope
refused 1 "relative to the mount's root" a/r1 a/../a/r2
refused 1 "relative to the mount's root" a//r1
refused 1 "relative to the mount's root" ./a/r1
refused 1 "a directory, not a file" a/b
refused 1 "not a regular file" c/fifo
refused 1 "a symlink that leaves the image" c/abs
refused 1 "a symlink that leaves the image" c/up
refused 1 "too many symlinks" c/loop
refused 1 "a directory, not a file" c/dirlink
refused 1 "a component is not a directory" a/r1/x
refused 2 "is not under the mount point" /etc/passwd
refused 2 "no paths on standard input" ""
"$PYTHON" - "$T/mnt" "$(sqc_pid "$T/mnt")" >"$T/raw.out" 2>&1 <<'PY' || fail "raw order requests: $(cat "$T/raw.out")"
import os, socket, sys
mnt, pid = sys.argv[1], sys.argv[2]
# the daemon's control socket, by the inode of one of its descriptors
inodes = set()
for fd in os.listdir("/proc/%s/fd" % pid):
    t = os.readlink("/proc/%s/fd/%s" % (pid, fd))
    if t.startswith("socket:["):
        inodes.add(t[8:-1])
addr = None
for line in open("/proc/net/unix").read().splitlines()[1:]:
    f = line.split()
    if len(f) >= 8 and f[6] in inodes and f[7].startswith("@squashcache-"):
        addr = "\0" + f[7][1:]
assert addr, "no control socket of pid %s" % pid

def ask(body, line=None, uid=None):
    if uid is not None and os.fork() == 0:
        os.setgroups([]); os.setgid(uid); os.setuid(uid)
        os._exit(0 if b"permission denied" in ask(body, line) else 3)
    if uid is not None:
        return os.wait()[1]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(addr)
    s.sendall((line or "order %d\n" % len(body)).encode() + body)
    r = b""
    while True:
        c = s.recv(65536)
        if not c:
            return r
        r += c

r = ask(b"a/r1")
assert b"does not end in a NUL" in r, r
r = ask(b"a/r1\0\0")
assert b"relative to the mount" in r, r
r = ask(b"a/r1\0", line="order 99\n")  # announced more than it sends
assert b"did not come whole" in r, r
# Another user is refused before the daemon reads a byte of the body.
assert ask(b"", line="order 5\n", uid=65534) == 0, \
    "another user was not refused"
# Nor can another user hold the control thread by trickling bytes after
# its refusal: the daemon's owner (here root) is answered at once.
import time
child = os.fork()
if child == 0:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
    t = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    t.connect(addr)
    try:
        for _ in range(30):
            t.send(b"x")
            time.sleep(0.15)
    except OSError:
        pass
    os._exit(0)
time.sleep(0.3)
t0 = time.monotonic()
st = ask(b"", line="stats\n")
took = time.monotonic() - t0
os.waitpid(child, 0)
assert b'"ok":true' in st, st[:200]
assert took < 1.5, "stats waited %.1f s behind another user's trickle" % took
print("raw requests refused:", r.decode().strip(),
      "; stats behind a trickling user: %.2f s" % took)
PY
cat "$T/raw.out"
stats "$T/mnt" "$T/s2.json"
[ "$(jget "$T/s2.json" order.orders)" -eq "$orders" ] || fail "a refused order replaced the order"
[ "$(jget "$T/s2.json" order.files)" -eq "$nfiles" ] || fail "a refused order changed the order's files"
note "a symlink in the image is followed to its file"
printf 'c/link\n' | "$MOUNTCTL" order "$T/mnt" | grep -q "^order: 1 files" ||
    fail "an order of a symlink to a file was not taken"
note "an order of a process sits beside the mount's own, and goes with it"
sleep 300 &
sleeper=$!
printf 'a/r1\na/r2\na/r3\n' | "$MOUNTCTL" order --pid $sleeper "$T/mnt" | grep -q "^order: 3 files" ||
    fail "an order of pid $sleeper was not taken"
printf 'a/r4\na/r5\n' | "$MOUNTCTL" order --pid $sleeper "$T/mnt" | grep -q "^order: 2 files" ||
    fail "a second order of pid $sleeper was not taken"
stats "$T/mnt" "$T/s3.json"
"$PYTHON" - "$T/s3.json" "$sleeper" <<'PY' || fail "the process's order is not beside the mount's own: $(cat "$T/s3.json")"
import json, sys
o = json.load(open(sys.argv[1]))["order"]
by = {c["pid"]: c for c in o["by_client"]}
assert o["clients"] == 2 and sorted(by) == [0, int(sys.argv[2])], o
assert by[0]["files"] == 1 and by[int(sys.argv[2])]["files"] == 2, by
assert by[int(sys.argv[2])]["orders"] == 2 and o["files"] == 3, o
assert o["plans"] > 0 and o["plans"] <= o["plans_budget"], o
PY
kill $sleeper
wait $sleeper 2>/dev/null || :
# The daemon watches the process (a pidfd): wait for its order to go.
i=0
until stats "$T/mnt" "$T/s4.json" && [ "$(jget "$T/s4.json" order.clients)" -eq 1 ]; do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "the order of pid $sleeper outlived it by 10 s"
    sleep 0.1
done
[ "$(jget "$T/s4.json" order.files)" -eq 1 ] || fail "the mount's own order went with pid $sleeper's"
printf 'a/r1\n' | "$MOUNTCTL" order --pid $sleeper "$T/mnt" >"$T/gone.out" 2>&1 &&
    fail "an order of pid $sleeper was taken after it ended"
grep -q "no such process" "$T/gone.out" || fail "no clear error for a --pid that ended: $(cat "$T/gone.out")"
"$MOUNTCTL" order --clear "$T/mnt" | grep -q "order: none" || fail "mountctl order --clear"
stats "$T/mnt" "$T/s3.json"
[ "$(jget "$T/s3.json" order.files)" -eq 0 ] || fail "--clear left an order"
[ "$(jget "$T/s3.json" order.clients)" -eq 0 ] || fail "--clear left a client"
sqc_umount "$T/mnt"
note "order_window=0 refuses orders"
sqc_mount "$T/img.sqfs" "$T/mnt0" -o "order_window=0,log=$T/daemon0.log"
printf 'a/r1\n' | "$MOUNTCTL" order "$T/mnt0" >"$T/off.out" 2>&1 && fail "an order was taken with order_window=0"
grep -q "order_window=0" "$T/off.out" || fail "no clear error with order_window=0: $(cat "$T/off.out")"
sqc_umount "$T/mnt0"

note "3. overlapping ranges: a file's blocks inside another's"
mkdir -p "$T/osrc"
head -c 12288 /dev/urandom >"$T/osrc/a" # three raw 4 KiB blocks
tail -c +4097 "$T/osrc/a" | head -c 4096 >"$T/osrc/b" # a's second block
mkimg "$T/osrc" "$T/over.sqfs" -comp gzip -b 4096 -noI -no-xattrs
# Point b's block list at a's second block: its range [a1, a1 + 4 KiB)
# then lies inside a's [a0, a0 + 12 KiB).  Inodes are stored raw (-noI).
"$PYTHON" - "$T/over.sqfs" "$T/osrc/b" <<'PY' || fail "could not make b share a's block"
import struct, sys
img = bytearray(open(sys.argv[1], "rb").read())
blk = open(sys.argv[2], "rb").read()
a1 = img.find(blk)
own = img.find(blk, a1 + 1)
assert a1 > 0 and own > a1, "blocks not found stored raw"
old = struct.pack("<II", own, 0xffffffff)
at = img.find(old)
assert at > 0 and img.find(old, at + 1) < 0, "b's inode not found once"
assert struct.unpack_from("<I", img, at + 12)[0] == 4096
img[at:at + 4] = struct.pack("<I", a1)
open(sys.argv[1], "wb").write(img)
PY
sqc_mount "$T/over.sqfs" "$T/omnt" -o "stage=none,order_window=64K,no_uring,log=$T/daemon-o.log"
printf 'a\nb\n' | "$MOUNTCTL" order "$T/omnt" >"$T/over.out" 2>&1 ||
    fail "mountctl order failed: $(cat "$T/over.out")"
cmp "$T/osrc/a" "$T/omnt/a" || fail "a differs through the mount"
cmp "$T/osrc/b" "$T/omnt/b" || fail "b differs through the mount"
stats "$T/omnt" "$T/so.json"
echo "overlapping: $(jget "$T/so.json" order.ranges) ranges, $(jget "$T/so.json" order.read) bytes read, $(jget "$T/so.json" order.served) served, $(jget "$T/so.json" order.held) held at the end"
[ "$(jget "$T/so.json" order.ranges)" -eq 2 ] || fail "the two ranges were merged or lost"
[ "$(jget "$T/so.json" order.read)" -eq 16384 ] || fail "the window did not read both ranges once"
# Every byte of both files from the window: none from the image file.
[ "$(jget "$T/so.json" order.served)" -eq 16384 ] ||
    fail "reads inside overlapping ranges were not served by the window"
[ "$(jget "$T/so.json" order.held)" -eq 0 ] || fail "a range was left held after its user read it"
sqc_umount "$T/omnt"

note "4. ImageFolder + DataLoader with EpochOrder: the same tensors"
if ! "$PYTHON" -c 'import torchvision' >"$T/import.log" 2>&1; then
    skip "$PYTHON cannot import torchvision: $(tail -n 1 "$T/import.log")"
fi
PYTHONPATH="$TOP/python" "$PYTHON" "$PY/epoch_order_paths.py" ||
    fail "EpochOrder learnt its paths by loading samples, or took a dataset it cannot"
"$PYTHON" "$PY/sqc_dataset.py" --profile test --classes 4 --per-class 30 \
    --seed 72 "$T/isrc"
mkimg "$T/isrc" "$T/images.sqfs" -comp lz4 -no-xattrs
sqc_mount "$T/images.sqfs" "$T/imnt" -o "stage=none,log=$T/daemon-i.log"
PYTHONPATH="$TOP/python" SQUASHCACHE_MOUNTCTL="$MOUNTCTL" \
    "$PYTHON" "$PY/order_check.py" --src "$T/isrc" --mnt "$T/imnt" \
    --workers 4 --epochs 2 >"$T/check.out" 2>&1 ||
    { cat "$T/check.out"; fail "the epoch order changed what the DataLoader returned"; }
cat "$T/check.out"
# The orders were the script's process's: they went when it ended.
i=0
until stats "$T/imnt" "$T/si.json" && [ "$(jget "$T/si.json" order.clients)" -eq 0 ]; do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "order_check.py's order outlived it by 10 s"
    sleep 0.1
done
echo "image order: $(jget "$T/si.json" order.orders) orders, $(jget "$T/si.json" order.served) bytes served from the window, $(jget "$T/si.json" order.files) files left once the script ended"
[ "$(jget "$T/si.json" order.orders)" -eq 2 ] || fail "EpochOrder did not give one order per epoch"
[ "$(jget "$T/si.json" order.files)" -eq 0 ] || fail "an order outlived its process"
[ "$(jget "$T/si.json" order.errors)" -eq 0 ] || fail "order reads failed"
sqc_umount "$T/imnt"
echo "epoch order checks passed"

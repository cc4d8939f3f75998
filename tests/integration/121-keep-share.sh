#!/bin/sh
# TIMEOUT: 300
# Sharing a kept copy between mounts at the same time (-o keep, mountctl
# keeper on a private socket), the image on slow storage (faultfs, 250 ms
# a read, many at once) so that the mounts stage at the same time.
# Checks, for real, that:
#   (a) two mounts of the same image by the same user at once share one
#       copy (the second's keep.answer is "copy"), both read the whole
#       tree right, and the storage bytes they read in all (image_io
#       summed) are the image once: ~1.00x, not 2x;
#   (b) another user's mount at the same time gets its own copy and
#       reads the image itself;
#   (c) once all have ended, the keeper keeps one copy per user, not in
#       use.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs
need_test_users

KDIR="$T/keeper"
K="$KDIR/k.sock"
mkdir -m 0755 "$KDIR"
A=$TU_A
B=$TU_B

start_keeper 1G

# kept_count UID USED [FIELD]: copies the keeper holds for UID that
# mounts use (True: connections, or FIELD in_use: a live daemon that
# holds it, as the keeper checks) or not (False)
kept_count() {
    "$MOUNTCTL" status --kept --json --socket "$K" | "$PYTHON" -c 'import json, sys
f = sys.argv[3]
print(sum(1 for e in json.load(sys.stdin)
          if e["uid"] == int(sys.argv[1]) and
          str(bool(e[f])) == sys.argv[2]))' "$1" "$2" "${3:-connections}"
}

# mount_keep USER IMG MNT: mount as USER with -o keep
mount_keep() {
    mkdir -p "$3"
    _mounts="$3 $_mounts"
    chown "$1" "$3"
    as "$1" "$SQUASHCACHED" -o "keep=$K" "$2" "$3"
}

note "an incompressible tree, ~8 MB, on slow storage"
"$PYTHON" - "$T" <<'PY'
import os, random, sys
r = random.Random(1)
for d in range(4):
    os.makedirs(f"{sys.argv[1]}/src/d{d}", exist_ok=True)
    for f in range(10):
        with open(f"{sys.argv[1]}/src/d{d}/f{f}", "wb") as o:
            o.write(r.randbytes(200000 + f))
PY
mkimg "$T/src" "$T/src.sqfs" -comp lz4 -all-time 0 -mkfs-time 0 -all-root
chmod 0644 "$T/src.sqfs"
: >"$T/failfile"
FAULTFS_PARALLEL=1 FAULTFS_DELAY_US=250000 start_faultfs "$T/src.sqfs" "$T/store" "$T/failfile"
IMG="$T/store/image"
uid_a=$(id -u $A)
uid_b=$(id -u $B)

note "(a) two mounts of user a at once share one copy"
mount_keep $A "$IMG" "$T/m1"
mount_keep $A "$IMG" "$T/m2"
[ "$(stat_of "$T/m1" keep.answer)" = new ] || fail "first mount: keep.answer $(stat_of "$T/m1" keep.answer), not new"
[ "$(stat_of "$T/m2" keep.answer)" = copy ] || fail "second mount: keep.answer $(stat_of "$T/m2" keep.answer), not copy (the copy in use was not shared)"
total=$(stat_of "$T/m1" image_bytes)
adopted=$(stat_of "$T/m2" keep.adopted)
note "    the second mount started with $adopted of $total bytes complete"
[ "$adopted" -lt "$total" ] ||
    fail "the first mount was done before the second began: storage too fast to test staging at once"

note "(b) user b's mount at the same time: its own copy"
mount_keep $B "$IMG" "$T/mb"
[ "$(stat_of "$T/mb" keep.answer)" = new ] || fail "user b: keep.answer $(stat_of "$T/mb" keep.answer), not new"

as $A diff -r "$T/src" "$T/m1" >"$T/diff1" 2>&1 &
d1=$!
as $A diff -r "$T/src" "$T/m2" >"$T/diff2" 2>&1 &
d2=$!
as $B diff -r "$T/src" "$T/mb" >"$T/diffb" 2>&1 &
db=$!
wait $d1 || fail "mount 1: files differ: $(head -5 "$T/diff1")"
wait $d2 || fail "mount 2: files differ: $(head -5 "$T/diff2")"
wait $db || fail "user b: files differ: $(head -5 "$T/diffb")"
for m in m1 m2 mb; do
    wait_done "$T/$m" 120
done
r1=$(stat_of "$T/m1" image_io.read_bytes)
r2=$(stat_of "$T/m2" image_io.read_bytes)
rb=$(stat_of "$T/mb" image_io.read_bytes)
p1=$(stat_of "$T/m1" keep.peers)
p2=$(stat_of "$T/m2" keep.peers)
note "    user a read $r1 + $r2 bytes (peers $p1, $p2), user b $rb, of $total"
"$PYTHON" -c 'import sys
r1, r2, total = map(int, sys.argv[1:])
print("    user a read %.3fx the image in all" % ((r1 + r2) / total))
# Each mount reads the superblock (96 bytes) before staging starts.
sys.exit(0 if r1 + r2 <= total + total // 100 + 192 else 1)' "$r1" "$r2" "$total" ||
    fail "two mounts of user a read $((r1 + r2)) bytes in all, more than the image's $total once"
[ $((p1 + p2)) -gt 0 ] || fail "neither mount took a chunk the other staged (peers 0)"
[ "$rb" -ge "$total" ] || fail "user b read only $rb bytes: it shared user a's copy"
[ "$(kept_count "$uid_a" True)" = 1 ] || fail "user a's mounts hold $(kept_count "$uid_a" True) copies, not 1"

note "(c) once all end: one copy kept per user"
sqc_umount "$T/m1"
[ "$(kept_count "$uid_a" True)" = 1 ] || fail "user a's copy not in use while mount 2 runs"
# The keeper finds the daemon that holds it (looked at within a second of
# its GET, then every 5 s): in use, outside the budget.
_u_i=0
until [ "$(kept_count "$uid_a" True in_use)" = 1 ]; do
    _u_i=$((_u_i + 1))
    [ $_u_i -lt 500 ] || fail "the keeper never found user a's daemon holding its copy: $("$MOUNTCTL" status --kept --json --socket "$K")"
    sleep 0.02
done
as $A diff -r "$T/src" "$T/m2" || fail "mount 2 after mount 1 ended: files differ"
sqc_umount "$T/m2"
sqc_umount "$T/mb"
_c_i=0
until [ "$(kept_count "$uid_a" False)" = 1 ] && [ "$(kept_count "$uid_b" False)" = 1 ]; do
    _c_i=$((_c_i + 1))
    [ $_c_i -lt 250 ] || fail "not one kept copy per user: $("$MOUNTCTL" status --kept --json --socket "$K")"
    sleep 0.02
done
[ "$(kept_count "$uid_a" True)" = 0 ] || fail "user a's copy still in use"
fusermount3 -u "$T/store"
echo "keep share ok"

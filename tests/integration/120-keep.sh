#!/bin/sh
# TIMEOUT: 300
# Keeping a staged copy between mounts (-o keep, mountctl keeper): a
# keeper runs as root on a private socket.  Checks, for real, that:
#   (a) a mount of an image staged to the end, unmounted and mounted
#       again, is staged at once: it reads 96 bytes from storage (the
#       superblock, read before staging starts) and nothing else, and
#       the files are the source's; that mount lists the tree and
#       pushes every file into the page cache without a reader (the
#       first one, and one that adopts a part, do neither);
#   (b) the image rewritten in place at the same size, its mtime set
#       back with touch -d, is not adopted: the copy is made again and
#       the files are the new image's;
#   (c) another user mounting the same image (readable by both) gets no
#       copy of the first user's, and lists only their own; a user
#       holds at most 64 connections to the keeper, and others are
#       served meanwhile;
#   (f) a daemon killed with SIGKILL mid-stage leaves its copy with only
#       its complete chunks, and the next mount reads exactly the rest;
#   (e) a keeper killed with SIGKILL: the daemons keep serving, and the
#       next mount (with a new keeper) stages afresh;
#   (d) a --keep budget smaller than two copies keeps only the most
#       recently used; mountctl keeper --evict frees kept copies for
#       root and is refused to a user;
#   (h) no keeper, or a socket a user listens on: the mount stages as
#       without -o keep (answer "no keeper"), and gives the user's
#       socket nothing;
#   (g) memory short (--min-available above what is available): the
#       keeper drops kept copies within a few seconds.
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

# kept_json [USER]: the kept copies USER (default root) sees, as JSON
kept_json() {
    if [ -n "${1:-}" ]; then
        as "$1" "$MOUNTCTL" status --kept --json --socket "$K"
    else
        "$MOUNTCTL" status --kept --json --socket "$K"
    fi
}

# kept_field IMAGE UID FIELD: FIELD of the copy of IMAGE kept for UID
kept_field() {
    kept_json | "$PYTHON" -c 'import json, sys
for e in json.load(sys.stdin):
    if e["image"] == sys.argv[1] and e["uid"] == int(sys.argv[2]):
        print(e[sys.argv[3]])
        break
else:
    print("none")' "$1" "$2" "$3"
}

# wait_kept IMAGE UID: until the keeper holds IMAGE's copy for UID, not
# in use (the daemon's connection closed)
wait_kept() {
    _wk_i=0
    until [ "$(kept_field "$1" "$2" connections)" = 0 ]; do
        _wk_i=$((_wk_i + 1))
        [ $_wk_i -lt 250 ] || fail "no kept copy of $1 for uid $2: $(kept_json)"
        sleep 0.02
    done
}

# mount_keep USER IMG MNT [ARGS]: mount as USER (root: "") with -o keep
mount_keep() {
    _mk_u=$1
    _mk_img=$2
    _mk_mnt=$3
    shift 3
    mkdir -p "$_mk_mnt"
    _mounts="$_mk_mnt $_mounts"
    if [ -n "$_mk_u" ]; then
        chown "$_mk_u" "$_mk_mnt"
        as "$_mk_u" "$SQUASHCACHED" -o "keep=$K" "$@" "$_mk_img" "$_mk_mnt"
    else
        "$SQUASHCACHED" -o "keep=$K" "$@" "$_mk_img" "$_mk_mnt"
    fi
}

note "two trees of the same shape, incompressible, ~8 MB; images of the same size"
"$PYTHON" - "$T" <<'PY'
import os, random, sys
for tree, seed in (("src", 1), ("src2", 2), ("src3", 3)):
    r = random.Random(seed)
    for d in range(4):
        os.makedirs(f"{sys.argv[1]}/{tree}/d{d}", exist_ok=True)
        for f in range(10):
            with open(f"{sys.argv[1]}/{tree}/d{d}/f{f}", "wb") as o:
                o.write(r.randbytes(200000 + f))
PY
for t in src src2 src3; do
    mkimg "$T/$t" "$T/$t.sqfs" -comp lz4 -all-time 0 -mkfs-time 0 -all-root
done
chmod 0644 "$T"/*.sqfs
[ "$(stat -c %s "$T/src.sqfs")" = "$(stat -c %s "$T/src2.sqfs")" ] ||
    fail "the two images differ in size; cannot rewrite in place"
IMG="$T/img.sqfs"
cp "$T/src.sqfs" "$IMG"
uid_a=$(id -u $A)
uid_b=$(id -u $B)

note "(h) no keeper, or a user's socket: staged as without keep"
mkdir -m 0777 "$T/fake"
as $A "$PYTHON" -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
s.listen()
s.settimeout(60)
try:
    c, _ = s.accept()
    open(sys.argv[2], "w").write("connected")
except OSError:
    pass' "$T/fake/k.sock" "$T/fake/got" &
_pids="$! $_pids"
_h_i=0
until [ -S "$T/fake/k.sock" ]; do
    _h_i=$((_h_i + 1))
    [ $_h_i -lt 250 ] || fail "the user's socket did not appear"
    sleep 0.02
done
for sock in "$T/none.sock" "$T/fake/k.sock"; do
    mkdir -p "$T/mh"
    chown $A "$T/mh"
    _mounts="$T/mh $_mounts"
    as $A "$SQUASHCACHED" -o "keep=$sock" "$IMG" "$T/mh"
    wait_done "$T/mh" 60
    [ "$(stat_of "$T/mh" keep.answer)" = "no keeper" ] ||
        fail "keep=$sock: keep.answer $(stat_of "$T/mh" keep.answer)"
    as $A diff -r "$T/src" "$T/mh" || fail "keep=$sock: files differ"
    sqc_umount "$T/mh"
done
[ ! -e "$T/fake/got" ] || fail "the daemon connected to a user's socket"

start_keeper 1G

note "(a) staged, unmounted, mounted again: staged at once, 96 bytes read"
mount_keep $A "$IMG" "$T/ma"
wait_done "$T/ma" 60
[ "$(stat_of "$T/ma" keep.answer)" = new ] || fail "first mount: keep.answer $(stat_of "$T/ma" keep.answer), not new"
[ "$(stat_of "$T/ma" statahead.all_state)" = off ] || fail "first mount: the tree listed at once ($(stat_of "$T/ma" statahead.all_state))"
bytes=$(stat_of "$T/ma" image_bytes)
sqc_umount "$T/ma"
wait_kept "$IMG" "$uid_a"
[ "$(kept_field "$IMG" "$uid_a" complete_bytes)" = "$bytes" ] ||
    fail "the kept copy holds $(kept_field "$IMG" "$uid_a" complete_bytes) complete bytes, not $bytes"
mount_keep $A "$IMG" "$T/ma"
wait_done "$T/ma" 1
[ "$(stat_of "$T/ma" keep.answer)" = copy ] || fail "second mount: keep.answer $(stat_of "$T/ma" keep.answer), not copy"
[ "$(stat_of "$T/ma" keep.adopted)" = "$bytes" ] || fail "second mount adopted $(stat_of "$T/ma" keep.adopted) bytes, not $bytes"
[ "$(stat_of "$T/ma" image_io.stager_bytes)" = 0 ] || fail "second mount: the stager read $(stat_of "$T/ma" image_io.stager_bytes) bytes"
# A whole copy: the tree is listed and every file pushed into the page
# cache without a reader.
nfiles=$(find "$T/src" -type f -size +0 | wc -l)
wait_stat "$T/ma" warm.files "$nfiles" 30 "second mount: warming did not push the $nfiles files"
[ "$(stat_of "$T/ma" statahead.all_state)" = "done" ] || fail "second mount: the tree was not listed ($(stat_of "$T/ma" statahead.all_state))"
as $A diff -r "$T/src" "$T/ma" || fail "second mount: files differ from the source"
[ "$(stat_of "$T/ma" image_io.read_bytes)" = 96 ] ||
    fail "second mount read $(stat_of "$T/ma" image_io.read_bytes) bytes from storage, not the 96 of the superblock"
sqc_umount "$T/ma"
wait_kept "$IMG" "$uid_a"

note "(b) rewritten in place at the same size, mtime set back: not adopted"
# The mtime to the nanosecond, the inode and the size stay as they were:
# only the ctime (which no user can set) tells the new bytes apart.
before=$(stat -c '%i %s %y' "$IMG")
cat "$T/src2.sqfs" >"$IMG"
touch -d "${before#* * }" "$IMG"
[ "$(stat -c '%i %s %y' "$IMG")" = "$before" ] ||
    fail "the rewrite changed the inode, size or mtime: $(stat -c '%i %s %y' "$IMG"), was $before"
mount_keep $A "$IMG" "$T/ma"
wait_done "$T/ma" 60
[ "$(stat_of "$T/ma" keep.answer)" = new ] || fail "changed image: keep.answer $(stat_of "$T/ma" keep.answer), not new"
[ "$(stat_of "$T/ma" keep.adopted)" = 0 ] || fail "changed image: adopted $(stat_of "$T/ma" keep.adopted) bytes"
[ "$(stat_of "$T/ma" image_io.read_bytes)" -ge "$bytes" ] || fail "changed image: read only $(stat_of "$T/ma" image_io.read_bytes) bytes"
as $A diff -r "$T/src2" "$T/ma" || fail "changed image: files differ from the new image's"

note "(c) another user gets no copy of the first user's"
mount_keep $B "$IMG" "$T/mb"
wait_done "$T/mb" 60
[ "$(stat_of "$T/mb" keep.answer)" = new ] || fail "user b: keep.answer $(stat_of "$T/mb" keep.answer), not new"
[ "$(stat_of "$T/mb" image_io.stager_bytes)" -gt 0 ] || fail "user b staged nothing from storage"
as $B diff -r "$T/src2" "$T/mb" || fail "user b: files differ"
sqc_umount "$T/mb"
sqc_umount "$T/ma"
wait_kept "$IMG" "$uid_a"
wait_kept "$IMG" "$uid_b"
kept_json $B | "$PYTHON" -c 'import json, sys
v = json.load(sys.stdin)
assert v and all(e["uid"] == int(sys.argv[1]) for e in v), v' "$uid_b" ||
    fail "user b sees copies that are not theirs"
as $B "$MOUNTCTL" forget --all --socket "$K" >/dev/null || fail "user b cannot forget"
[ "$(kept_field "$IMG" "$uid_b" bytes)" = none ] || fail "user b's copy survived forget"
[ "$(kept_field "$IMG" "$uid_a" connections)" = 0 ] || fail "user b's forget dropped user a's copy"
# 70 connections of user b, each asking LIST (struct keep_msg: magic
# "SQPK", op 3, then zeros to 312 bytes): 64 are answered (the keeper
# takes them in the order they came), and all stay open until root and
# user a have been served.
as $B "$PYTHON" - "$K" "$T/fake/conns" "$T/fake/release" <<'PY' &
import os, socket, struct, sys, time
msg = struct.pack("<II", 0x4b505153, 3) + bytes(312 - 8)
socks, answered = [], 0
for i in range(70):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    socks.append(s)
for s in socks:
    s.settimeout(5)
    try:
        s.send(msg)
        if s.recv(4096):
            answered += 1
    except OSError:
        pass
open(sys.argv[2], "w").write(str(answered))
end = time.monotonic() + 60
while not os.path.exists(sys.argv[3]) and time.monotonic() < end:
    time.sleep(0.02)
PY
_pids="$! $_pids"
_c_i=0
until [ -s "$T/fake/conns" ]; do
    _c_i=$((_c_i + 1))
    [ $_c_i -lt 500 ] || fail "user b's connections did not finish"
    sleep 0.02
done
[ "$(cat "$T/fake/conns")" = 64 ] || fail "user b got $(cat "$T/fake/conns") connections answered, not 64"
[ "$(kept_field "$IMG" "$uid_a" connections)" = 0 ] || fail "root not served while user b holds connections"
kept_json $A >/dev/null || fail "user a not served while user b holds connections"
[ -s "$T/fake/conns" ] && kill -0 "${_pids%% *}" 2>/dev/null ||
    fail "user b's connections closed before root and user a were served"
: >"$T/fake/release"

note "(f) a daemon killed mid-stage: the next mount reads exactly the rest"
: >"$T/failfile"
FAULTFS_DELAY_US=300000 start_faultfs "$T/src3.sqfs" "$T/store" "$T/failfile"
mount_keep "" "$T/store/image" "$T/mf" -o threads=2
wait_stat "$T/mf" stage.staged 2000000 60 "staging did not start"
pid=$(sqc_pid "$T/mf")
[ "$(stat_of "$T/mf" stage.state)" != "done" ] || fail "staging ended before the kill: slow storage is too fast"
kill -9 "$pid"
wait_gone "$pid" 10 "the killed daemon"
fusermount3 -u -z "$T/mf" 2>/dev/null || umount -l "$T/mf"
wait_kept "$T/store/image" 0
part=$(kept_field "$T/store/image" 0 complete_bytes)
bytes3=$(stat -c %s "$T/src3.sqfs")
note "    $part bytes complete of the image"
[ "$part" -gt 0 ] && [ "$part" -lt "$bytes3" ] || fail "killed mid-stage: $part bytes complete"
mount_keep "" "$T/store/image" "$T/mf"
wait_done "$T/mf" 120
[ "$(stat_of "$T/mf" keep.adopted)" = "$part" ] || fail "adopted $(stat_of "$T/mf" keep.adopted) bytes, not $part"
[ "$(stat_of "$T/mf" statahead.all_state)" = off ] || fail "a part adopted: the tree listed at once ($(stat_of "$T/mf" statahead.all_state))"
total=$(stat_of "$T/mf" image_bytes)
[ "$(stat_of "$T/mf" image_io.read_bytes)" = $((96 + total - part)) ] ||
    fail "read $(stat_of "$T/mf" image_io.read_bytes) bytes, not the superblock and the $((total - part)) missing"
diff -r "$T/src3" "$T/mf" || fail "after the kill: files differ"

note "(e) the keeper killed: the daemons keep serving; the next mount stages afresh"
mount_keep $A "$IMG" "$T/ma"
wait_done "$T/ma" 1
[ "$(stat_of "$T/ma" keep.answer)" = copy ] || fail "(e) keep.answer $(stat_of "$T/ma" keep.answer), not copy"
kill -9 "$KPID"
wait_gone "$KPID" 10 "the killed keeper"
as $A diff -r "$T/src2" "$T/ma" || fail "files differ once the keeper is gone"
diff -r "$T/src3" "$T/mf" || fail "files differ once the keeper is gone"
sqc_umount "$T/ma"
sqc_umount "$T/mf"
fusermount3 -u "$T/store"
start_keeper 1G
[ "$(kept_json)" = "[
]" ] || [ "$(kept_json | tr -d '\n')" = "[]" ] || fail "a new keeper holds copies: $(kept_json)"
mount_keep $A "$IMG" "$T/ma"
[ "$(stat_of "$T/ma" keep.answer)" = new ] || fail "after the keeper's kill: keep.answer $(stat_of "$T/ma" keep.answer)"
wait_done "$T/ma" 60
[ "$(stat_of "$T/ma" image_io.stager_bytes)" -gt 0 ] || fail "after the keeper's kill: nothing staged from storage"
sqc_umount "$T/ma"
kill "$KPID"
wait_gone "$KPID" 10 "the keeper"

note "(d) a budget for one copy keeps the most recent"
copy=$(( (bytes + 4095) / 4096 * 4096 + 8192 ))
start_keeper $((copy * 3 / 2))
mount_keep "" "$T/src.sqfs" "$T/m1"
wait_done "$T/m1" 60
sqc_umount "$T/m1"
wait_kept "$T/src.sqfs" 0
mount_keep "" "$T/src3.sqfs" "$T/m3"
wait_done "$T/m3" 60
sqc_umount "$T/m3"
wait_kept "$T/src3.sqfs" 0
[ "$(kept_field "$T/src.sqfs" 0 bytes)" = none ] || fail "the older copy is still kept: $(kept_json)"
mount_keep "" "$T/src3.sqfs" "$T/m3"
wait_done "$T/m3" 1
[ "$(stat_of "$T/m3" keep.answer)" = copy ] || fail "the recent copy was not kept"
sqc_umount "$T/m3"
wait_kept "$T/src3.sqfs" 0
as $A "$MOUNTCTL" keeper --evict 1 --socket "$K" 2>/dev/null &&
    fail "a user may evict"
[ "$(kept_field "$T/src3.sqfs" 0 connections)" = 0 ] || fail "a user's evict dropped a copy"
"$MOUNTCTL" keeper --evict 1 --socket "$K" >/dev/null || fail "root cannot evict"
[ "$(kept_field "$T/src3.sqfs" 0 bytes)" = none ] || fail "evict left the copy: $(kept_json)"
kill "$KPID"
wait_gone "$KPID" 10 "the keeper"

note "(g) memory short: kept copies are dropped"
"$MOUNTCTL" keeper --socket "$K" --keep 1G --min-available 100% \
    2>>"$T/keeper.log" &
KPID=$!
_pids="$KPID $_pids"
_g_i=0
until "$MOUNTCTL" status --kept --socket "$K" >/dev/null 2>&1; do
    _g_i=$((_g_i + 1))
    [ $_g_i -lt 250 ] || fail "the keeper did not start"
    sleep 0.02
done
mount_keep "" "$T/src.sqfs" "$T/m1"
wait_done "$T/m1" 60
[ "$(stat_of "$T/m1" keep.answer)" = new ] || fail "(g) keep.answer $(stat_of "$T/m1" keep.answer)"
sqc_umount "$T/m1"
_g_i=0
until [ "$(kept_field "$T/src.sqfs" 0 bytes)" = none ]; do
    _g_i=$((_g_i + 1))
    [ $_g_i -lt 250 ] || fail "memory short, yet the copy is kept after 5 s: $(kept_json)"
    sleep 0.02
done
grep -q "dropping the kept copy of '$T/src.sqfs'" "$T/keeper.log" ||
    fail "the keeper did not say it dropped the copy"
echo "keep ok"

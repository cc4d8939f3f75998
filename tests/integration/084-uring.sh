#!/bin/sh
# FUSE over io_uring.  Where the kernel offers it (Linux 6.14 and later,
# with the fuse module's enable_uring=Y), squashcached takes requests from
# per-core io_uring queues instead of /dev/fuse.  This test turns
# enable_uring on (and back as it was at exit) and checks that:
#   - the mount serves over io_uring: threads and requests in the stats
#     and in mountctl status;
#   - a generated tree of every kind compares equal, stat for stat and byte
#     for byte, with its source and with the kernel's own squashfs mount;
#   - 16 readers at once with threads=2 all read the right bytes;
#   - READs of 1 MiB that mix sparse, stored, compressed and fragment
#     bytes read right (stored bytes are read into the ring's payload in
#     place, the others are moved around them);
#   - -o no_uring, and enable_uring=N, serve through /dev/fuse;
#   - a corrupt data block fails that read with EIO, once logged, and the
#     daemon goes on serving the other files over io_uring;
#   - SIGTERM and an unmount stop the daemon, also while a reader holds a
#     file open; after SIGKILL the mount answers ENOTCONN, not a hang;
# and then runs 083-warm (pushes into the page cache, READ counts) and
# 086-ahead (listing ahead of readers) again with io_uring on.
# TIMEOUT: 400
# ALONE: sets the fuse module's enable_uring; runs 083 and 086 (they drop the page cache)
# TSAN: yes
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trees.sh"
need_mounter
need_cmd timeout cmp
P=/sys/module/fuse/parameters/enable_uring
[ -w "$P" ] || skip "this kernel's fuse module has no io_uring ($P)"
old=$(cat "$P")
at_exit "echo '$old' >'$P'"
echo Y >"$P"

note "a tree of every kind, over io_uring, against its source and the kernel"
make_tree "$T/src" -q
pack "$T/src" "$T/img.sqfs" -comp zstd -b 64K
sqc_mount "$T/img.sqfs" "$T/m" -o "log=$T/d1.log"
th=$(stat_of "$T/m" fuse.uring_threads)
[ "$th" -ge 2 ] || fail "the mount does not use io_uring (uring_threads $th; log: $(cat "$T/d1.log"))"
# shellcheck disable=SC2086 # options are words
compare "mount vs source" $SRC_CMP_OPTS "$T/src" "$T/m"
kmount_retry "$T/img.sqfs" "$T/k"
compare "mount vs kernel" "$T/k" "$T/m"
req=$(stat_of "$T/m" fuse.uring_requests)
[ "$req" -gt 1000 ] || fail "only $req requests came over io_uring"
"$MOUNTCTL" status "$T/m" | grep -Eq "^requests +io_uring, $th threads, [0-9]+ requests" ||
    fail "mountctl status does not show io_uring: $("$MOUNTCTL" status "$T/m")"
sqc_umount "$T/m"

note "1 MiB READs mixing sparse, stored, compressed and fragment bytes"
# direct_io: the kernel passes each read() on as one READ.  The image in
# the test's directory is not staged when it is on tmpfs, so stored blocks
# are read from the file into the payload.
mkdir -p "$T/mix"
"$PYTHON" - "$T/mix/f" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    for i in range(24):
        if i % 3 == 0:
            f.write(bytes(65536))  # sparse
        elif i % 3 == 1:
            f.write(os.urandom(65536))  # stored as is
        else:
            f.write(b"%05d" % i * 13000 + os.urandom(536))  # compressed
    f.write(os.urandom(5000))  # the tail, in a fragment
PY
mkimg "$T/mix" "$T/mix.sqfs" -comp zstd -b 64K
sqc_mount "$T/mix.sqfs" "$T/m" -o "direct_io,stage=none,log=$T/d7.log"
[ "$(stat_of "$T/m" fuse.uring_threads)" -ge 2 ] || fail "mixed: no io_uring"
for bs in 1048576 777777 65536; do
    dd if="$T/m/f" bs=$bs 2>/dev/null | cmp -s - "$T/mix/f" || fail "reads of $bs bytes give other bytes"
done
dd if="$T/m/f" bs=300000 skip=2 2>/dev/null |
    cmp -s - "$(dd if="$T/mix/f" bs=300000 skip=2 2>/dev/null >"$T/mix.tail"; echo "$T/mix.tail")" ||
    fail "reads of 300000 bytes from 600000 give other bytes"
sqc_umount "$T/m"

note "16 readers at once, 2 threads"
mkdir -p "$T/par"
i=0
while [ $i -lt 64 ]; do
    head -c $((3000 + i * 37001)) /dev/urandom >"$T/par/f$i"
    i=$((i + 1))
done
mkimg "$T/par" "$T/par.sqfs" -comp lz4 -b 128K
sqc_mount "$T/par.sqfs" "$T/m" -o "threads=2,log=$T/d2.log"
[ "$(stat_of "$T/m" fuse.uring_threads)" -ge 2 ] || fail "threads=2: no io_uring"
r=0
while [ $r -lt 16 ]; do
    (
        j=$r
        n=0
        while [ $n -lt 64 ]; do
            f=f$(((j * 7 + n) % 64))
            cmp "$T/par/$f" "$T/m/$f" || exit 1
            n=$((n + 1))
        done
    ) >"$T/reader$r.log" 2>&1 &
    eval "rp$r=\$!"
    r=$((r + 1))
done
r=0
while [ $r -lt 16 ]; do
    eval "wait \$rp$r" || fail "reader $r: $(cat "$T/reader$r.log")"
    r=$((r + 1))
done
sqc_umount "$T/m"

note "-o no_uring, and enable_uring=N: /dev/fuse"
sqc_mount "$T/par.sqfs" "$T/m" -o "no_uring,log=$T/d3.log"
[ "$(stat_of "$T/m" fuse.uring_threads)" -eq 0 ] || fail "no_uring still uses io_uring"
cmp "$T/par/f9" "$T/m/f9" || fail "no_uring: f9 differs"
[ "$(stat_of "$T/m" fuse.uring_requests)" -eq 0 ] || fail "no_uring: requests came over io_uring"
sqc_umount "$T/m"
echo N >"$P"
sqc_mount "$T/par.sqfs" "$T/m" -o "log=$T/d4.log"
[ "$(stat_of "$T/m" fuse.uring_threads)" -eq 0 ] || fail "enable_uring=N, yet io_uring is used"
cmp "$T/par/f9" "$T/m/f9" || fail "enable_uring=N: f9 differs"
sqc_umount "$T/m"
echo Y >"$P"

note "a corrupt block: EIO for that file, the others still served"
mkdir -p "$T/cor"
# "a" comes first in the image: its first block starts after the 96-byte
# superblock.  Compressible, so that its blocks are stored compressed.
yes "squashcache uring corrupt-block test line" | head -c 1000000 >"$T/cor/a"
head -c 300000 /dev/urandom >"$T/cor/b"
mkimg "$T/cor" "$T/cor.sqfs" -comp gzip -b 128K -noappend
printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377' |
    dd of="$T/cor.sqfs" bs=1 seek=200 conv=notrunc 2>/dev/null
sqc_mount "$T/cor.sqfs" "$T/m" -o "log=$T/d5.log,stage=none,warm=0"
[ "$(stat_of "$T/m" fuse.uring_threads)" -ge 2 ] || fail "corrupt image: no io_uring"
if timeout 20 cat "$T/m/a" >/dev/null 2>"$T/cat.err"; then
    fail "reading the corrupt file succeeded"
fi
grep -q "Input/output error" "$T/cat.err" || fail "corrupt file: not EIO: $(cat "$T/cat.err")"
timeout 20 cat "$T/m/a" >/dev/null 2>&1 && fail "the second read of the corrupt file succeeded"
timeout 20 cmp "$T/cor/b" "$T/m/b" || fail "the intact file differs after the corrupt one"
[ "$(stat_of "$T/m" fuse.eio)" -ge 1 ] || fail "no EIO counted"
[ "$(grep -c "corrupt\|EIO\|checksum\|decompress" "$T/d5.log")" -ge 1 ] ||
    fail "the corruption is not in the log: $(cat "$T/d5.log")"
sqc_umount "$T/m"

note "a readdirplus entry the kernel cannot use: its FORGET comes over io_uring"
# A directory whose size runs past its table: the listing hands the
# kernel entries it then drops with a FORGET sent as a request
# (fuse_force_forget()); that FORGET must be committed like any reply.
sh "$TOP/tests/images/mkimages.sh" "$T/imgs" >"$T/mkimages.log" 2>&1 ||
    { cat "$T/mkimages.log"; fail "mkimages.sh failed"; }
"$PYTHON" "$TOP/tests/images/corrupt.py" set "$T/imgs/plain-noI.sqfs" \
    "$T/hds.sqfs" inode:/sub.size 0xfffffff0 || fail "corrupt.py failed"
sqc_mount "$T/hds.sqfs" "$T/m" -o "log=$T/d8.log"
[ "$(stat_of "$T/m" fuse.uring_threads)" -ge 2 ] || fail "hds: no io_uring"
rc=0
timeout 20 ls "$T/m/sub" >/dev/null 2>&1 || rc=$?
[ $rc -ne 124 ] || fail "listing the damaged directory hung"
timeout 20 ls "$T/m/sub" >/dev/null 2>&1 || rc=$?
[ $rc -ne 124 ] || fail "listing the damaged directory again hung"
timeout 10 stat "$T/m/blocks" >/dev/null || fail "the daemon no longer answers"
sqc_umount "$T/m"

note "SIGTERM with a reader holding a file open"
sqc_mount "$T/par.sqfs" "$T/m" -o "log=$T/d6.log"
pid=$(sqc_pid "$T/m")
[ -n "$pid" ] || fail "no daemon pid for $T/m"
# shellcheck disable=SC2217 # the open file is the point, not the input
sleep 30 <"$T/m/f3" &
holder=$!
cmp "$T/par/f4" "$T/m/f4" || fail "f4 differs"
kill -TERM "$pid"
wait_gone "$pid" 10 "daemon $pid (SIGTERM)"
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
! is_mounted "$T/m" || fail "still mounted after SIGTERM"
grep -q "unmounting" "$T/d6.log" || fail "SIGTERM: no clean unmount in the log: $(cat "$T/d6.log")"

note "SIGKILL: the mount fails at once, it does not hang"
sqc_mount "$T/par.sqfs" "$T/m" -o "log=$T/d7.log"
pid=$(sqc_pid "$T/m")
kill -KILL "$pid"
wait_gone "$pid" 10 "daemon $pid (SIGKILL)"
if timeout 10 cat "$T/m/f5" >/dev/null 2>"$T/dead.err"; then
    fail "reading a dead mount succeeded"
fi
rc=0
timeout 10 stat "$T/m/f6" >/dev/null 2>&1 || rc=$?
[ "$rc" -ne 124 ] || fail "stat on a dead mount hung"
fusermount3 -u -z "$T/m" 2>/dev/null || umount -l "$T/m"

# The listing thread knows its own requests by their pid, which the ring
# carries too: 086 fails if they count as a reader's.
for t in 083-warm 086-ahead; do
    note "$t over io_uring"
    BUILD="$BUILD" sh "$TOP/tests/integration/$t.sh" >"$T/$t.log" 2>&1 ||
        { tail -n 30 "$T/$t.log"; fail "$t failed over io_uring"; }
done
echo "ok"

#!/bin/sh
# Staging reads with O_DIRECT (lib/image/source.c).  Checks that:
#   - behind a PFS client with a page cache and 16 MiB of readahead
#     (bench/slowfs cached), with 16 readers in random order during
#     staging, the storage serves the image once: read_bytes at the
#     storage is the image's size, every page of it but the unaligned last
#     one read with O_DIRECT (stage.o_direct, image_io.direct_bytes), and
#     the readers get the source's bytes;
#   - -o stage_cached stages through the page cache: no O_DIRECT read,
#     the same bytes;
#   - storage that refuses O_DIRECT at open (tests/tools/faultfs
#     FAULTFS_ODIRECT=open), or at the first read (=read): the stage
#     reads through the page cache, said once in the log, everything is
#     staged, nothing counts as a read error, the bytes are right.
# TIMEOUT: 180
# TSAN: yes
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs cmp

SLOWFS="$BUILD/bench/slowfs"
[ -x "$SLOWFS" ] || fail "$SLOWFS not built (make tests builds it)"

note "a tree of ~32 MB of incompressible files"
mkdir -p "$T/src" "$T/back"
rand_tree "$T/src" 74 4 50 2000 70000 150000 300000
mkimg "$T/src" "$T/back/img.sqfs" -comp lz4
size=$(stat -c %s "$T/back/img.sqfs")
"$TOOLS/stress" --manifest "$T/src" >"$T/manifest"

# same MNT: every file of the source read back equal through MNT.
same() {
    ( cd "$T/src" && find . -type f | sort ) | while read -r f; do
        cmp -s "$T/src/$f" "$1/$f" || echo "$f"
    done >"$T/wrong"
    [ ! -s "$T/wrong" ] || fail "wrong bytes in $(head -3 "$T/wrong")"
}

slow_bytes() {
    sed -n 's/.*"read_bytes":\([0-9]*\).*/\1/p' "$T/pfs/.slowfs-stats"
}

# staged_behind_pfs [OPTIONS]: mount the image from slowfs (a page cache,
# 16 MiB readahead, 40 MB/s: staging takes about a second), read it with
# 16 random readers while it stages, wait for staging, check the bytes.
# Leaves the mount at $T/m; prints the bytes the storage served.
staged_behind_pfs() {
    mkdir -p "$T/pfs"
    "$SLOWFS" -o "latency_ms=1,bw=40M,cached" "$T/back" "$T/pfs" ||
        fail "slowfs did not mount"
    _mounts="$T/pfs $_mounts"
    dev=$(stat -c %d "$T/pfs")
    echo 16384 >"/sys/class/bdi/$((dev >> 8)):$((dev & 255))/read_ahead_kb" ||
        fail "cannot set the slowfs mount's readahead"
    b0=$(slow_bytes)
    sqc_mount "$T/pfs/img.sqfs" "$T/m" -o "log=$T/d-pfs${1:+-$1}.log${1:+,$1}"
    "$TOOLS/stress" "$T/m" "$T/manifest" 16 2 74 >"$T/stress.out" 2>&1 ||
        { cat "$T/stress.out" >&2; fail "readers saw errors"; }
    "$MOUNTCTL" wait "$T/m" >/dev/null || fail "staging did not end"
    same "$T/m"
    echo $(($(slow_bytes) - b0))
}

stop_pfs() {
    sqc_umount "$T/m"
    fusermount3 -u "$T/pfs" || fail "cannot unmount slowfs"
}

note "behind a PFS client with a page cache, readers during staging"
served=$(staged_behind_pfs)
# What the stats count as the image (bytes_used): mksquashfs pads the file.
image=$(stat_of "$T/m" image_bytes)
direct=$(stat_of "$T/m" image_io.direct_bytes)
by_readers=$(stat_of "$T/m" stage.by_readers)
note "storage served $served bytes for an image of $image ($size in its file); $direct with O_DIRECT; readers brought in $by_readers"
[ "$(stat_of "$T/m" stage.o_direct)" = True ] || fail "the stage does not read with O_DIRECT"
[ "$(stat_of "$T/m" staged_bytes)" -eq "$image" ] || fail "not all staged"
[ "$direct" -eq $((image / 4096 * 4096)) ] ||
    fail "$direct bytes read with O_DIRECT, want every page but the last: $((image / 4096 * 4096))"
# Twice at most: the superblock's read at open, before anything is known,
# and the kernel's first readahead with it (4 pages), which the stage
# reads again; through the page cache 7-12% of the image was read twice
# here (docs/performance.md, "Staging with O_DIRECT").
[ "$served" -le $((size + 5 * 4096)) ] ||
    fail "the storage served $served bytes for an image of $size in its file"
[ "$(stat_of "$T/m" image_io.read_errors)" -eq 0 ] || fail "read errors"
stop_pfs

note "-o stage_cached: through the page cache"
served=$(staged_behind_pfs stage_cached)
note "storage served $served bytes for an image of $size"
[ "$(stat_of "$T/m" stage.o_direct)" = False ] || fail "stage_cached reads with O_DIRECT"
[ "$(stat_of "$T/m" image_io.direct_bytes)" -eq 0 ] || fail "stage_cached read with O_DIRECT"
[ "$(stat_of "$T/m" staged_bytes)" -eq "$image" ] || fail "stage_cached: not all staged"
stop_pfs

# refused WHEN MESSAGE: faultfs refuses O_DIRECT at WHEN; the stage
# reads through the page cache and says MESSAGE once.
refused() {
    : >"$T/failfile"
    FAULTFS_ODIRECT=$1 start_faultfs "$T/back/img.sqfs" "$T/store-$1" "$T/failfile"
    sqc_mount "$T/store-$1/image" "$T/m" -o "log=$T/d-$1.log"
    "$TOOLS/stress" "$T/m" "$T/manifest" 16 1 75 >"$T/stress.out" 2>&1 ||
        { cat "$T/stress.out"; fail "O_DIRECT refused at $1: readers saw errors"; }
    "$MOUNTCTL" wait "$T/m" >/dev/null || fail "O_DIRECT refused at $1: staging did not end"
    same "$T/m"
    [ "$(grep -c "$2" "$T/d-$1.log")" -eq 1 ] ||
        fail "O_DIRECT refused at $1: not said once in the log: $(cat "$T/d-$1.log")"
    [ "$(stat_of "$T/m" stage.o_direct)" = False ] || fail "O_DIRECT refused at $1: stage.o_direct"
    [ "$(stat_of "$T/m" image_io.direct_bytes)" -eq 0 ] || fail "O_DIRECT refused at $1: direct_bytes"
    [ "$(stat_of "$T/m" staged_bytes)" -eq "$image" ] || fail "O_DIRECT refused at $1: not all staged"
    [ "$(stat_of "$T/m" image_io.read_errors)" -eq 0 ] ||
        fail "O_DIRECT refused at $1: counted as read errors"
    note "O_DIRECT refused at $1: $(grep -o "$2.*" "$T/d-$1.log")"
    sqc_umount "$T/m"
    fusermount3 -u "$T/store-$1"
}

note "storage that refuses O_DIRECT at open"
refused open "through the page cache: its O_DIRECT open failed (Invalid argument)"
note "storage that refuses O_DIRECT reads"
refused read "through the page cache: its O_DIRECT reads are refused"

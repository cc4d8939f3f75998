#!/bin/sh
# The io_uring fence (daemon/uring.c).  The io_uring path relies on how
# libfuse 3.14 behaves inside, so it is used only with that libfuse; this
# test checks that:
#   - with another libfuse (SQC_TEST_LIBFUSE_VERSION=3.18.0, a test-only
#     override of fuse_pkgversion()) the daemon logs exactly one line
#     "io_uring: libfuse 3.18.0 not tested, using /dev/fuse", serves the
#     right bytes through /dev/fuse, and its stats say io_uring is
#     unavailable, and why; where the kernel offers io_uring (root, the
#     fuse module's enable_uring), it is not used either;
#   - without the override the stats say io_uring is available;
#   - a daemon built without liburing (make SQC_NO_URING=1) builds, mounts,
#     serves the right bytes, and its stats say io_uring is unavailable.
# TIMEOUT: 120
# ALONE: sets the fuse module's enable_uring
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd cmp make

mkdir -p "$T/src/d"
head -c 700000 /dev/urandom >"$T/src/a"
yes "squashcache fence line" | head -c 300000 >"$T/src/d/b"
mkimg "$T/src" "$T/img.sqfs" -comp zstd -b 64K

# check_mount MNT WHAT: the mount serves the source's bytes.
check_mount() {
    cmp "$T/src/a" "$1/a" || fail "$2: a differs"
    cmp "$T/src/d/b" "$1/d/b" || fail "$2: d/b differs"
}

note "the libfuse it runs with, as built"
sqc_mount "$T/img.sqfs" "$T/m" -o "log=$T/d0.log"
check_mount "$T/m" "tested libfuse"
[ "$(stat_of "$T/m" fuse.uring_available)" = True ] ||
    fail "io_uring unavailable with the tested libfuse: $(stat_of "$T/m" fuse.uring_unavailable)"
grep -q "not tested" "$T/d0.log" && fail "fallback logged with the tested libfuse: $(cat "$T/d0.log")"
sqc_umount "$T/m"

# fallback LOG WHAT: one line, the stats, the bytes; MNT mounted.
fallback() {
    n=$(grep -c "io_uring: libfuse 3.18.0 not tested, using /dev/fuse" "$1" || true)
    [ "$n" -eq 1 ] || fail "$2: $n fallback lines, not 1: $(cat "$1")"
    check_mount "$T/m" "$2"
    [ "$(stat_of "$T/m" fuse.uring_available)" = False ] || fail "$2: io_uring said available"
    [ "$(stat_of "$T/m" fuse.uring_unavailable)" = "libfuse 3.18.0 not tested" ] ||
        fail "$2: reason '$(stat_of "$T/m" fuse.uring_unavailable)'"
    [ "$(stat_of "$T/m" fuse.uring_threads)" -eq 0 ] || fail "$2: io_uring threads run"
    [ "$(stat_of "$T/m" fuse.uring_requests)" -eq 0 ] || fail "$2: requests came over io_uring"
    # Later requests and stats add no line.
    check_mount "$T/m" "$2"
    n=$(grep -c "not tested" "$1" || true)
    [ "$n" -eq 1 ] || fail "$2: the fallback logged $n times"
}

note "an untested libfuse (SQC_TEST_LIBFUSE_VERSION=3.18.0): /dev/fuse, one line"
SQC_TEST_LIBFUSE_VERSION=3.18.0 sqc_mount "$T/img.sqfs" "$T/m" -o "log=$T/d1.log"
fallback "$T/d1.log" "untested libfuse"
sqc_umount "$T/m"

P=/sys/module/fuse/parameters/enable_uring
if [ "$(id -u)" -eq 0 ] && [ -w "$P" ]; then
    note "the same with the kernel offering io_uring (enable_uring=Y)"
    old=$(cat "$P")
    at_exit "echo '$old' >'$P'"
    echo Y >"$P"
    SQC_TEST_LIBFUSE_VERSION=3.18.0 sqc_mount "$T/img.sqfs" "$T/m" -o "log=$T/d2.log"
    fallback "$T/d2.log" "untested libfuse, enable_uring=Y"
    sqc_umount "$T/m"
    echo "$old" >"$P"
else
    note "not root or no enable_uring: the kernel-offered case is 084's"
fi

note "a daemon built without liburing (SQC_NO_URING=1)"
# Only the daemon, at -O0: cheap.
(cd "$TOP" && make -s -j2 BUILD="$T/b" DEBUG=1 SQC_NO_URING=1 "$T/b/squashcached") \
    >"$T/build.log" 2>&1 || { tail -n 30 "$T/build.log"; fail "the build without liburing failed"; }
if ldd "$T/b/squashcached" | grep -q liburing; then
    fail "the build without liburing links liburing"
fi
SQUASHCACHED="$T/b/squashcached" sqc_mount "$T/img.sqfs" "$T/m" -o "log=$T/d3.log"
check_mount "$T/m" "no liburing"
[ "$(stat_of "$T/m" fuse.uring_available)" = False ] || fail "no liburing: io_uring said available"
[ "$(stat_of "$T/m" fuse.uring_unavailable)" = "built without liburing" ] ||
    fail "no liburing: reason '$(stat_of "$T/m" fuse.uring_unavailable)'"
[ "$(stat_of "$T/m" fuse.uring_threads)" -eq 0 ] || fail "no liburing: io_uring threads"
sqc_umount "$T/m"
echo "ok"

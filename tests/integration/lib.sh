# Shared helpers for tests/integration/NNN-name.sh; source it first.
#
# Each test gets a private work directory ($T) and an EXIT trap that
# unmounts whatever the test mounted and kills the daemons it started, so
# a failing test leaves nothing behind.  Readiness comes from the daemon
# itself: squashcached without -f returns only once the mount answers.
#
#   skip "reason"        exit 77 (the runner prints the reason)
#   fail "reason"        exit 1
#   need_root / need_fuse / need_cmd CMD / need_kernel_squashfs
#   sqc_mount IMG MNT [squashcached args...]   mount, register cleanup
#   sqc_umount MNT       unmount and wait for the daemon to exit
#   kmount IMG MNT       kernel squashfs loop mount (root), registered
#   mkimg SRC IMG [mksquashfs args...]          pack quietly, no progress
#   at_exit 'COMMANDS'   run COMMANDS at exit, before the unmounts
# shellcheck shell=sh

set -eu

TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
PYTHON=${PYTHON:-/usr/bin/python3}
SQUASHCACHED="$BUILD/squashcached"
MOUNTCTL="$BUILD/mountctl"
TOOLS="$BUILD/tests/tools"
export SQUASHCACHED MOUNTCTL TOOLS PYTHON BUILD TOP

T=$(mktemp -d "${SQC_TMPDIR:-/tmp}/sqc-test.XXXXXX")
_mounts=""
_pids=""
_hooks=""

at_exit() {
    _hooks="$_hooks
$1"
}

_cleanup() {
    rc=$?
    if [ -n "$_hooks" ]; then
        eval "$_hooks" || true
    fi
    for m in $_mounts; do
        if grep -q " $m " /proc/self/mounts 2>/dev/null; then
            fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        fi
    done
    for p in $_pids; do
        kill "$p" 2>/dev/null || true
    done
    if [ "${SQC_KEEP:-0}" = 1 ]; then
        echo "kept work directory $T"
    else
        rm -rf "$T" 2>/dev/null || true
    fi
    exit $rc
}
trap _cleanup EXIT
trap 'exit 130' INT TERM

skip() {
    echo "SKIP: $*"
    exit 77
}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

note() {
    echo "--- $*"
}

need_root() {
    [ "$(id -u)" -eq 0 ] || skip "needs root"
}

need_cmd() {
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || skip "needs '$c' (not installed)"
    done
}

need_fuse() {
    [ -c /dev/fuse ] || skip "no /dev/fuse on this machine"
    [ -x "$SQUASHCACHED" ] || fail "$SQUASHCACHED not built"
    if [ "$(id -u)" -ne 0 ] && ! [ -r /dev/fuse ] && ! [ -w /dev/fuse ]; then
        skip "/dev/fuse is not accessible to uid $(id -u)"
    fi
}

need_kernel_squashfs() {
    need_root
    grep -qw squashfs /proc/filesystems || modprobe squashfs 2>/dev/null || true
    grep -qw squashfs /proc/filesystems || skip "kernel has no squashfs"
}

# Is MNT a mount point right now?  (/proc, not stat: stat on another
# user's FUSE mount fails even for root.)
is_mounted() {
    grep -q " $1 " /proc/self/mounts
}

sqc_mount() {
    img=$1
    mnt=$2
    shift 2
    mkdir -p "$mnt"
    _mounts="$mnt $_mounts"
    "$SQUASHCACHED" "$@" "$img" "$mnt" || return $?
    is_mounted "$mnt" || fail "squashcached returned 0 but $mnt is not mounted"
}

# Run the daemon in the foreground (-f) in the background of this shell,
# and wait until the mount answers.  Sets SQC_PID.
sqc_mount_fg() {
    img=$1
    mnt=$2
    shift 2
    mkdir -p "$mnt"
    _mounts="$mnt $_mounts"
    "$SQUASHCACHED" -f "$@" "$img" "$mnt" >"$T/daemon-fg.log" 2>&1 &
    SQC_PID=$!
    _pids="$SQC_PID $_pids"
    i=0
    while ! is_mounted "$mnt"; do
        kill -0 "$SQC_PID" 2>/dev/null || { cat "$T/daemon-fg.log" >&2; fail "squashcached -f exited"; }
        i=$((i + 1))
        [ $i -lt 500 ] || fail "mount did not appear within 10 s"
        sleep 0.02
    done
    stat "$mnt" >/dev/null
}

# The pid of the daemon serving MNT (from its control socket or ps).
sqc_pid() {
    pgrep -f "squashcached.* $1\$" | head -n 1
}

sqc_umount() {
    mnt=$1
    pid=$(sqc_pid "$mnt" || true)
    fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt"
    if [ -n "$pid" ]; then
        i=0
        # A zombie has exited; init may reap it late.
        while kill -0 "$pid" 2>/dev/null &&
            [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
            i=$((i + 1))
            [ $i -lt 500 ] || fail "daemon $pid still running 10 s after unmount"
            sleep 0.02
        done
    fi
    ! is_mounted "$mnt" || fail "$mnt still mounted"
}

kmount() {
    mkdir -p "$2"
    _mounts="$2 $_mounts"
    mount -t squashfs -o loop,ro "$1" "$2"
}

mkimg() {
    src=$1
    img=$2
    shift 2
    mksquashfs "$src" "$img" -noappend -no-progress -quiet "$@" >/dev/null
}

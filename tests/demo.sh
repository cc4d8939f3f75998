#!/bin/sh
# The squashcache demo, `make demo`: the main job on a built-in sample.
#
#   BUILD=build PYTHON=/usr/bin/python3 sh tests/demo.sh
#
# Generates a small image-classification dataset (seeded JPEGs in class
# folders), packs it into one SquashFS image with mksquashfs, mounts the
# image with squashcache (mountctl if it is built, else squashcached),
# times a PyTorch ImageFolder + DataLoader epoch over the mount and over
# the source directory beside it, prints the daemon's cache and staging
# statistics, then unmounts and removes everything it made, also on
# failure or Ctrl-C.
#
# Everything lives in /dev/shm/$USER-squashcache-demo (mode 0700), or in
# $TMPDIR when /dev/shm is missing or short of space; SQC_DEMO_DIR picks
# the parent directory.  Only the image goes to $TMPDIR or /var/tmp if one
# of them is on disk (not tmpfs), so that the daemon stages it into RAM as
# it would from a cluster's file system.  SQC_DEMO_CLASSES and SQC_DEMO_PER_CLASS size the
# dataset (default 10 x 100 images of 50-100 KB).  Works as a normal user
# when /dev/fuse is accessible.  `make demo` installs the Debian packages
# first (tests/deps.sh demo) and builds.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    [ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
fi
PY="$TOP/tests/py"
SQUASHCACHED="$BUILD/squashcached"
MOUNTCTL="$BUILD/mountctl"
CLASSES=${SQC_DEMO_CLASSES:-10}
PER_CLASS=${SQC_DEMO_PER_CLASS:-100}
NEED_MB=$((CLASSES * PER_CLASS * 200 / 1000 + 50)) # source + image + slack
export PYTHONDONTWRITEBYTECODE=1

W=""        # the work directory, once it is ours
IMGDIR=""   # a second one for the image on disk, once it is ours
MNT=""      # the mount point, once something may be mounted there
CTL=""      # -o ctl= socket when mounted by squashcached directly
VIA=""      # mountctl or squashcached
DAEMON_PID=""

say() { printf '%s\n' "$*"; }
heading() { printf '\n== %s ==\n' "$*"; }
die() {
    printf '\ndemo: %s\n' "$*" >&2
    exit 1
}
now_ms() { date +%s%3N; }
secs_since() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN { printf "%.2f", (b - a) / 1000 }'; }
mib() { awk -v n="$1" 'BEGIN { printf "%.1f MiB", n / 1048576 }'; }

# Is $1 a mount point?  (/proc, not stat: stat hangs or fails on a broken
# FUSE mount.)
is_mounted() {
    awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/self/mounts
}

unmount() {
    [ -n "$MNT" ] && is_mounted "$MNT" || return 0
    if [ "$VIA" = mountctl ] && "$MOUNTCTL" umount "$MNT"; then
        :
    elif fusermount3 -u "$MNT" 2>/dev/null; then
        :
    else
        # Busy or broken: detach it now, the kernel finishes later.
        fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
    fi
    # The daemon exits once the kernel lets go of the mount.
    if [ -n "$DAEMON_PID" ]; then
        i=0
        while kill -0 "$DAEMON_PID" 2>/dev/null && [ $i -lt 100 ]; do
            sleep 0.1
            i=$((i + 1))
        done
    fi
    ! is_mounted "$MNT"
}

cleanup() {
    rc=$?
    trap - EXIT INT TERM HUP
    [ $rc -lt 128 ] || say "demo: interrupted; cleaning up" >&2
    if [ -n "$MNT" ] && is_mounted "$MNT"; then
        [ $rc -eq 0 ] || say "demo: unmounting $MNT" >&2
        if ! unmount; then
            say "demo: $MNT is still mounted; unmount it with: fusermount3 -u $MNT" >&2
            exit 1
        fi
    fi
    if [ $rc -eq 1 ] && [ -s "$W/daemon.log" ]; then
        say "demo: the daemon's log:" >&2
        tail -n 20 "$W/daemon.log" | sed 's/^/    /' >&2
    fi
    if [ -n "$W" ] && [ -d "$W" ]; then
        rm -rf "$W"
    fi
    if [ -n "$IMGDIR" ] && [ -d "$IMGDIR" ]; then
        rm -rf "$IMGDIR"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

say "squashcache demo: pack a small image dataset into one SquashFS image,"
say "mount it with squashcache, and read it with a PyTorch DataLoader."

heading "1. Checks"
[ -x "$SQUASHCACHED" ] || die "$SQUASHCACHED is not built: run 'make' (or 'make demo') in $TOP"
say "  squashcached  $SQUASHCACHED ($("$SQUASHCACHED" --version 2>/dev/null || echo '?'))"
if [ -x "$MOUNTCTL" ] && "$MOUNTCTL" --help >/dev/null 2>&1; then
    VIA=mountctl
    say "  mountctl      $MOUNTCTL"
else
    VIA=squashcached
    say "  mountctl      not built yet: mounting with squashcached, unmounting with fusermount3"
fi
command -v mksquashfs >/dev/null 2>&1 ||
    die "mksquashfs is missing: install squashfs-tools (apt-get install squashfs-tools)"
if ! versions=$("$PYTHON" -c 'import torch, torchvision, PIL
print("torch %s, torchvision %s, Pillow %s" % (torch.__version__, torchvision.__version__, PIL.__version__))' 2>&1); then
    say "$versions" | tail -n 1 >&2
    die "$PYTHON cannot import torch, torchvision and PIL: install Debian's python3-torchvision and python3-pil (apt-get install python3-torchvision python3-pil), or set PYTHON= to a python that has them"
fi
say "  python        $PYTHON: $versions"

if [ ! -c /dev/fuse ]; then
    die "/dev/fuse is missing: load the module (modprobe fuse, as root); in a container, pass the device in (docker run --device /dev/fuse --cap-add SYS_ADMIN ...)"
fi
if [ ! -r /dev/fuse ] || [ ! -w /dev/fuse ]; then
    die "/dev/fuse is not accessible to $(id -un) (mode $(stat -c %a /dev/fuse)): ask root to run 'chmod 0666 /dev/fuse' (Debian's default mode; udev normally sets it), or run the demo as root"
fi
if [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null 2>&1; then
    die "fusermount3 is missing: install the fuse3 package (apt-get install fuse3)"
fi
say "  /dev/fuse     ok (mode $(stat -c %a /dev/fuse))"

# Where: /dev/shm if it has room, else $TMPDIR.
user=$(id -un 2>/dev/null || echo "uid$(id -u)")
has_room() {
    [ -d "$1" ] && [ -w "$1" ] &&
        [ "$(df -Pk "$1" | awk 'NR == 2 { print int($4 / 1024) }')" -ge "$NEED_MB" ]
}
if [ -n "${SQC_DEMO_DIR:-}" ]; then
    base=$SQC_DEMO_DIR
    has_room "$base" || die "SQC_DEMO_DIR=$base is not a writable directory with $NEED_MB MB free"
elif has_room /dev/shm; then
    base=/dev/shm
elif has_room "${TMPDIR:-/tmp}"; then
    base=${TMPDIR:-/tmp}
else
    die "need $NEED_MB MB free in /dev/shm or \$TMPDIR (${TMPDIR:-/tmp}); set SQC_DEMO_DIR to a directory with room"
fi
dir="$base/$user-squashcache-demo"
# Make directory $1 (mode 0700) for this run.  A leftover of an earlier
# run that was killed hard is unmounted and removed first, but only if it
# is ours: a real directory, owned by us, with our marker file in it.
claim_dir() {
    if [ -e "$1" ] || [ -L "$1" ]; then
        if [ -L "$1" ] || [ ! -d "$1" ] || [ ! -O "$1" ] || [ ! -e "$1/.squashcache-demo" ]; then
            say "  $1 exists and is not a demo directory of $user" >&2
            return 1
        fi
        say "  removing the leftovers of an earlier run in $1"
        MNT="$1/mnt"
        if ! unmount; then
            say "  cannot unmount the earlier run's $MNT: fusermount3 -u $MNT" >&2
            MNT=""
            return 1
        fi
        MNT=""
        rm -rf "$1"
    fi
    mkdir -m 0700 "$1" && : >"$1/.squashcache-demo"
}
claim_dir "$dir" || die "cannot use $dir: remove it, or set SQC_DEMO_DIR to another parent directory"
W=$dir
say "  work dir      $W (mode 0700, removed at the end)"

heading "2. Sample dataset"
say "  $CLASSES classes x $PER_CLASS JPEG images, seeded, in $W/src"
t=$(now_ms)
out=$("$PYTHON" "$PY/sqc_dataset.py" --profile demo --classes "$CLASSES" \
    --per-class "$PER_CLASS" --seed 1 "$W/src") || die "cannot generate the dataset"
src_bytes=$(du -sb "$W/src" | cut -f 1)
say "  $out, in $(secs_since "$t") s"

heading "3. Packing with mksquashfs"
# On a cluster the image sits on a disk-backed file system and squashcache
# stages it into RAM; do the same here when there is such a place.
for d in "${TMPDIR:-}" /var/tmp; do
    if [ -z "$d" ] || [ ! -d "$d" ] || [ ! -w "$d" ]; then
        continue
    fi
    [ "$(stat -f -c %T "$d")" != tmpfs ] || continue
    [ "$(df -Pk "$d" | awk 'NR == 2 { print int($4 / 1024) }')" -ge "$NEED_MB" ] || continue
    if claim_dir "$d/$user-squashcache-demo"; then
        IMGDIR="$d/$user-squashcache-demo"
        break
    fi
done
IMG="${IMGDIR:-$W}/dataset.sqfs"
set -- -comp zstd -b 128K -no-xattrs -all-root -noappend
say "  mksquashfs src $IMG $*"
t=$(now_ms)
(cd "$W" && mksquashfs src "$IMG" "$@" -no-progress -quiet) >"$W/mksquashfs.log" 2>&1 ||
    { cat "$W/mksquashfs.log" >&2; die "mksquashfs failed"; }
img_bytes=$(stat -c %s "$IMG")
say "  $(mib "$img_bytes") for $(mib "$src_bytes") of files, in $(secs_since "$t") s"
say "  (JPEG is already compressed: the image is about as big as the files)"
if [ -n "$IMGDIR" ]; then
    say "  The image is on disk ($(stat -f -c %T "$IMGDIR")), as it would be on Lustre or GPFS:"
    say "  squashcache stages it into RAM while it already serves reads."
fi

heading "4. Mounting"
mkdir -m 0700 "$W/mnt"
MNT="$W/mnt"
t=$(now_ms)
mounted=""
if [ "$VIA" = mountctl ]; then
    say "  \$ mountctl mount -o log=daemon.log $IMG mnt"
    if "$MOUNTCTL" mount -o "log=$W/daemon.log" "$IMG" "$MNT" >/dev/null; then
        mounted=1
    else
        say "  mountctl mount failed (above); trying squashcached directly"
        VIA=squashcached
    fi
fi
if [ -z "$mounted" ]; then
    CTL="$W/ctl.sock"
    say "  \$ squashcached -o ctl=ctl.sock,log=daemon.log $IMG mnt"
    "$SQUASHCACHED" -o "ctl=$CTL,log=$W/daemon.log" "$IMG" "$MNT" ||
        die "squashcached could not mount the image (the reason is above)"
fi
is_mounted "$MNT" || die "the mount command succeeded but $MNT is not mounted"
say "  mounted in $(secs_since "$t") s: $(find "$MNT" -mindepth 1 -maxdepth 1 -type d | wc -l) class folders in $MNT"

# The daemon's statistics without mountctl: stats [--summary|FIELD...]
stats() {
    if [ -n "$CTL" ]; then
        "$PYTHON" "$PY/sqc_stats.py" --ctl "$CTL" "$MNT" "$@"
    else
        "$PYTHON" "$PY/sqc_stats.py" "$MNT" "$@"
    fi
}
DAEMON_PID=$(stats pid 2>/dev/null || true)
case "$DAEMON_PID" in *[!0-9]* | "") DAEMON_PID="" ;; esac

heading "5. Training epochs: ImageFolder + DataLoader(num_workers=2, batch_size=32)"
say "  transform: decode, Resize(256), CenterCrop(224), ToTensor(); shuffle=False"
"$PYTHON" "$PY/sqc_demo_epoch.py" --mnt "$MNT" --src "$W/src" --workers 2 --batch 32 ||
    die "the epochs failed"
say "  The source tree sits in RAM here ($base), the best case for it; on a"
say "  cluster it would be millions of files on Lustre or GPFS.  Decoding"
say "  and resizing JPEGs on $(nproc) cores sets the pace of these epochs."

heading "6. Daemon statistics"
shown=""
if [ "$VIA" = mountctl ]; then
    say "  \$ mountctl status mnt"
    if "$MOUNTCTL" status "$MNT" >"$W/status.txt" 2>&1; then
        sed 's/^/  /' "$W/status.txt"
        shown=1
    else
        sed 's/^/  /' "$W/status.txt"
        say "  (mountctl status failed; asking the daemon directly)"
    fi
fi
if [ -z "$shown" ]; then
    stats --summary >"$W/status.txt" 2>&1 || true
    sed 's/^/  /' "$W/status.txt"
fi

heading "7. Cleaning up"
if [ "$VIA" = mountctl ]; then
    say "  \$ mountctl umount mnt"
else
    say "  \$ fusermount3 -u mnt"
fi
unmount || die "$MNT is still mounted"
say "  unmounted; daemon stopped"
rm -rf "$W" ${IMGDIR:+"$IMGDIR"}
say "  removed $W${IMGDIR:+ and $IMGDIR}"
W=""
IMGDIR=""
MNT=""
say ""
say "Done.  To use squashcache on your own data, see README.md: pack with"
say "mksquashfs, mount with squashcached or mountctl, point ImageFolder at it."

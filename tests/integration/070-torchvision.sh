#!/bin/sh
# End to end with PyTorch: torchvision's ImageFolder and DataLoader read
# a tree of real images through a squashcache mount and must get exactly
# what they get from the source tree (tests/py/imagefolder_check.py):
# the same samples, labels and tensors in order with 2 workers, then 3
# shuffled epochs with 4 workers that see every sample once per epoch
# with the source's bytes.  The daemon's own statistics must show that
# it served the bytes, with no EIO and no corrupt block.
#
# Runs with Debian's python3-torchvision ($PYTHON, /usr/bin/python3);
# skips only if that cannot import torchvision.
# TIMEOUT: 300
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_cmd mksquashfs
PY="$TOP/tests/py"
export PYTHONDONTWRITEBYTECODE=1

if ! "$PYTHON" -c 'import torchvision' >"$T/import.log" 2>&1; then
    skip "$PYTHON cannot import torchvision: $(tail -n 1 "$T/import.log")"
fi

note "generate 5 classes x 40 images (JPEG, PNG, grayscale, CMYK, odd sizes)"
"$PYTHON" "$PY/sqc_dataset.py" --profile test --classes 5 --per-class 40 \
    --seed 70 --manifest "$T/manifest.json" "$T/src"

note "pack with mksquashfs -comp zstd"
mkimg "$T/src" "$T/img.sqfs" -comp zstd -no-xattrs -all-root

note "mount"
sqc_mount "$T/img.sqfs" "$T/mnt" -o "ctl=$T/ctl.sock,log=$T/daemon.log"

note "ImageFolder + DataLoader: mount vs source"
"$PYTHON" "$PY/imagefolder_check.py" --src "$T/src" --mnt "$T/mnt" \
    --manifest "$T/manifest.json" --epochs 3 --workers 4 ||
    fail "torchvision saw different data through the mount"

# Python's open() gives each file a buffer of st_blksize bytes.  With
# the image's block size (128 KiB) every open of a small file made glibc
# map and unmap a fresh buffer and fault in its heap again: a warm pass
# of one Python reader over 20,000 files took 2.3-2.6 s instead of 1.7-1.8.
note "open() on the mount buffers like the source tree"
f=$(cd "$T/src" && find . -type f | sort | head -n 1)
bufs=$("$PYTHON" -c 'import sys
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        print(sys.getsizeof(f), end=" ")' "$T/src/$f" "$T/mnt/$f") ||
    fail "python3 cannot open $f"
set -- $bufs
echo "open() object size: source $1, mount $2 bytes"
[ "$2" -le "$1" ] ||
    fail "open() buffers $2 bytes on the mount against $1 on the source: st_blksize too large"

note "daemon statistics"
"$PYTHON" "$PY/sqc_stats.py" --ctl "$T/ctl.sock" --json "$T/mnt" \
    >"$T/stats.json" || fail "no statistics from the daemon"
# The value at a dotted path of a JSON file.
jget() {
    "$PYTHON" -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[k]
print(v)' "$1" "$2" || fail "no '$2' in $1"
}
# Bytes reach the kernel as read replies, or pushed ahead into its page
# cache: after the listing (page-cache warming), or when Python opens a
# file (its isatty() ioctl).
served=$(jget "$T/stats.json" fuse.bytes_served)
warmed=$(jget "$T/stats.json" warm.bytes)
pushed=$(jget "$T/stats.json" warm.open_bytes)
served=$((served + warmed + pushed))
eio=$(jget "$T/stats.json" fuse.eio)
corrupt=$(jget "$T/stats.json" image_io.corrupt)
rderr=$(jget "$T/stats.json" image_io.read_errors)
want=$(jget "$T/manifest.json" bytes)
echo "served $served bytes ($warmed warmed, $pushed pushed at open; the images hold $want), eio $eio, corrupt $corrupt, read errors $rderr"
[ "$served" -gt 0 ] || fail "no bytes served or warmed"
# Every image was read in full through the mount at least once.
[ "$served" -ge "$want" ] || fail "served $served bytes, less than the $want in the images"
[ "$eio" -eq 0 ] || fail "the daemon answered $eio requests with EIO"
[ "$corrupt" -eq 0 ] || fail "the daemon found $corrupt corrupt blocks in a valid image"
[ "$rderr" -eq 0 ] || fail "the daemon had $rderr errors reading the image"
# ImageFolder's scan got names only (its inodes were not made on its
# path) until a lookup (a symlink followed, or the first sample opened);
# then each such listing was made again with attributes, and readers'
# listings carry them from then on.
names=$(jget "$T/stats.json" statahead.names_dirs)
filled=$(jget "$T/stats.json" statahead.filled_dirs)
echo "listings with names only $names, listed again $filled"
[ "$names" -ge 1 ] || fail "ImageFolder's scan got no listing with names only"
[ "$filled" -eq "$names" ] || fail "$filled of $names listings with names only made again"
[ "$(jget "$T/stats.json" statahead.names_only)" = False ] ||
    fail "readers' listings are still names only after the epochs"

note "unmount"
sqc_umount "$T/mnt"

# Again with no page cache and tiny caches: every read of every epoch
# reaches the daemon from 4 workers at once, and blocks are evicted and
# decoded again all the time.
note "mount with -o direct_io,stage=none,cache=1M,meta=1M"
sqc_mount "$T/img.sqfs" "$T/mnt2" \
    -o "direct_io,stage=none,cache=1M,meta=1M,ctl=$T/ctl2.sock,log=$T/daemon2.log"
"$PYTHON" "$PY/imagefolder_check.py" --src "$T/src" --mnt "$T/mnt2" \
    --manifest "$T/manifest.json" --epochs 3 --workers 4 ||
    fail "torchvision saw different data through the direct_io mount"
"$PYTHON" "$PY/sqc_stats.py" --ctl "$T/ctl2.sock" --json "$T/mnt2" \
    >"$T/stats2.json" || fail "no statistics from the daemon"
served=$(jget "$T/stats2.json" fuse.bytes_served)
eio=$(jget "$T/stats2.json" fuse.eio)
corrupt=$(jget "$T/stats2.json" image_io.corrupt)
evict=$(jget "$T/stats2.json" cache.data.evictions)
echo "served $served bytes, eio $eio, corrupt $corrupt, data cache evictions $evict"
# One pass comparing, then 3 epochs that each read every file in full.
[ "$served" -ge $((4 * want)) ] ||
    fail "served $served bytes: direct_io reads did not all reach the daemon"
[ "$eio" -eq 0 ] || fail "the daemon answered $eio requests with EIO"
[ "$corrupt" -eq 0 ] || fail "the daemon found $corrupt corrupt blocks in a valid image"
sqc_umount "$T/mnt2"

# A sanitizer build (make SANITIZE=...) reports into the daemon's log.
for l in "$T/daemon.log" "$T/daemon2.log"; do
    if grep -qE 'ERROR: (Address|Leak|Thread)Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$l"; then
        cat "$l"
        fail "the daemon's log has a sanitizer report"
    fi
done
echo "ok"

#!/bin/sh
# squashcache.torch's opt-in loader (read_bytes(), pil_loader()) reads a
# mount without CPython's isatty() ioctl per open: the same bytes and the
# same decoded images as the source tree, no TCGETS under strace (where
# CPython's open() makes one per file), and no FUSE_IOCTL at the daemon
# (whose stats count one per file for open()).
#
# Runs with Debian's python3 ($PYTHON) and PIL; needs strace.
# TIMEOUT: 180
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_cmd mksquashfs strace
PY="$TOP/tests/py"
export PYTHONDONTWRITEBYTECODE=1

if ! "$PYTHON" -c 'import PIL, torch' >"$T/import.log" 2>&1; then
    skip "$PYTHON cannot import PIL and torch: $(tail -n 1 "$T/import.log")"
fi

note "generate 3 classes x 10 images"
"$PYTHON" "$PY/sqc_dataset.py" --profile test --classes 3 --per-class 10 \
    --seed 75 --manifest "$T/manifest.json" "$T/src" >/dev/null
mkimg "$T/src" "$T/img.sqfs" -comp zstd -no-xattrs -all-root
sqc_mount "$T/img.sqfs" "$T/mnt" -o "ctl=$T/ctl.sock,log=$T/daemon.log"
nfiles=$(find "$T/src" -type f | wc -l)

ioctls() {
    "$PYTHON" "$PY/sqc_stats.py" --ctl "$T/ctl.sock" "$T/mnt" fuse.ioctl ||
        fail "no statistics from the daemon"
}

note "bytes and images as the source; TCGETS under strace"
"$PYTHON" "$PY/noioctl_check.py" --src "$T/src" --mnt "$T/mnt" ||
    fail "the loader without isatty() failed its check"

note "the daemon's FUSE_IOCTL count: open() against read_bytes()"
a=$(ioctls)
"$PYTHON" - "$TOP/python" "$T/mnt" <<'PYEOF' || fail "open() loop failed"
import os, sys
for dp, _, fns in os.walk(sys.argv[2]):
    for fn in fns:
        with open(os.path.join(dp, fn), "rb") as f:
            f.read()
PYEOF
b=$(ioctls)
"$PYTHON" - "$TOP/python" "$T/mnt" <<'PYEOF' || fail "read_bytes() loop failed"
import os, sys
sys.path.insert(0, sys.argv[1])
from squashcache.torch import read_bytes
for dp, _, fns in os.walk(sys.argv[2]):
    for fn in fns:
        read_bytes(os.path.join(dp, fn))
PYEOF
c=$(ioctls)
echo "$nfiles files: open() $((b - a)) ioctls at the daemon, read_bytes() $((c - b))"
[ $((b - a)) -ge "$nfiles" ] ||
    fail "open() of $nfiles files made $((b - a)) ioctls: the count cannot see them"
[ $((c - b)) -eq 0 ] || fail "read_bytes() made $((c - b)) ioctls at the daemon"
sqc_umount "$T/mnt"
echo "ok"

#!/bin/sh
# offset=N: the image starts N bytes into the file (behind a header, as in
# a SIF file).  With 4096 random bytes in front, the mount's tree equals
# the source, staged or read from the file; the unshifted file is refused
# (no superblock at byte 0), and an offset past the end is a clear error.
# TIMEOUT: 120
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs
need_cmd python3

mkdir -p "$T/src/d"
python3 - "$T/src" <<'PY'
import os, sys
r = os.urandom
for i in range(20):
    open(os.path.join(sys.argv[1], "d", "f%d" % i), "wb").write(r(1000 + 7919 * i))
open(os.path.join(sys.argv[1], "big"), "wb").write(r(3 << 20))
PY
mkimg "$T/src" "$T/plain.sqfs"
head -c 4096 /dev/urandom >"$T/hdr.img"
cat "$T/plain.sqfs" >>"$T/hdr.img"

for stage in full none; do
    sqc_mount "$T/hdr.img" "$T/m" -o offset=4096,stage=$stage
    (cd "$T/src" && find . -type f | sort | xargs sha256sum) >"$T/want"
    (cd "$T/m" && find . -type f | sort | xargs sha256sum) >"$T/got"
    cmp -s "$T/want" "$T/got" || { diff "$T/want" "$T/got" | head; fail "tree differs with offset=4096,stage=$stage"; }
    sqc_umount "$T/m"
done

mkdir -p "$T/m"
if "$SQUASHCACHED" "$T/hdr.img" "$T/m" 2>"$T/err0"; then
    fail "the file with a header mounted without offset="
fi
if "$SQUASHCACHED" -o offset=1G "$T/hdr.img" "$T/m" 2>"$T/err1"; then
    fail "offset past the end of the file mounted"
fi
grep -q 'beyond its end' "$T/err1" || { cat "$T/err1"; fail "no clear error for an offset past the end"; }
echo "offset checks passed"

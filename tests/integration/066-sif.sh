#!/bin/sh
# SIF files: `mountctl mount` finds the SquashFS partition of an Apptainer
# SIF file by its magic ("SIF_MAGIC" at byte 32) or with --sif, and passes
# offset= to the daemon; the tree equals the source.  A SIF file whose
# descriptor points past its end, one without a SquashFS partition, and a
# plain image given --sif are refused with a message, nothing mounted.
# mountctl seal of a SIF file seals its partition (the root of the plain
# image), and the mount checks its reads against it.
# TIMEOUT: 120
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs

mkdir -p "$T/src/d"
"$PYTHON" - "$T/src" <<'PY'
import os, sys
for i in range(10):
    open(os.path.join(sys.argv[1], "d", "f%d" % i), "wb").write(os.urandom(5000 * i + 1))
PY
mkimg "$T/src" "$T/plain.sqfs"

# make_sif OUT PARTITION_FSTYPE BAD: a SIF file of three descriptors
# (definition file, a partition holding plain.sqfs at 32768, an unused
# slot), built as the SIF format lays it out: 128-byte header, packed
# little-endian 585-byte descriptors at 4096.
make_sif() {
    "$PYTHON" - "$T/plain.sqfs" "$1" "$2" "$3" <<'PY'
import struct, sys
sq = open(sys.argv[1], "rb").read()
out, fstype, bad = sys.argv[2], int(sys.argv[3]), sys.argv[4] == "bad"
deffile = b"Bootstrap: scratch\n"
def desc(dtype, used, did, off, length, extra=b""):
    d = struct.pack("<i?IIIqqqqqqq", dtype, used, did, 0xf0000001, 0,
                    off, length, length, 0, 0, 0, 0)
    d += b"name".ljust(128, b"\0") + extra.ljust(384, b"\0")
    assert len(d) == 585
    return d
part_off = 32768
part_len = len(sq) + (1 << 30 if bad else 0)
descs = desc(0x4001, True, 1, 8192, len(deffile))
descs += desc(0x4004, True, 2, part_off, part_len,
              struct.pack("<ii3s", fstype, 2, b"02\0"))
descs += desc(0, False, 0, 0, 0)
hdr = b"#!/usr/bin/env run-singularity\n".ljust(32, b"\0")
hdr += b"SIF_MAGIC\0" + b"01\0" + b"02\0" + bytes(16)
hdr += struct.pack("<qqqqqqqq", 0, 0, 0, 3, 4096, len(descs), 8192,
                   part_off + len(sq) - 8192)
assert len(hdr) == 128
f = bytearray(part_off)
f[:128] = hdr
f[4096:4096 + len(descs)] = descs
f[8192:8192 + len(deffile)] = deffile
open(out, "wb").write(bytes(f) + sq)
PY
}

make_sif "$T/img.sif" 1 good
for how in magic --sif; do
    flag=; [ "$how" = --sif ] && flag=--sif
    # shellcheck disable=SC2086
    "$MOUNTCTL" mount $flag "$T/img.sif" "$T/m" >/dev/null || fail "mountctl mount ($how) of a SIF file failed"
    _mounts="$T/m $_mounts"
    (cd "$T/src" && find . -type f | sort | xargs sha256sum) >"$T/want"
    (cd "$T/m" && find . -type f | sort | xargs sha256sum) >"$T/got"
    cmp -s "$T/want" "$T/got" || fail "SIF mount ($how) differs from the source"
    "$MOUNTCTL" umount "$T/m" || fail "umount failed"
done

# A seal of a SIF file is of its SquashFS partition: the same root as the
# plain image's, beside the SIF file, and the mount checks against it.
sif_root=$("$MOUNTCTL" seal "$T/img.sif" | cut -d' ' -f1) || fail "mountctl seal of a SIF file failed"
[ "$sif_root" = "$("$MOUNTCTL" seal --seal "$T/plain.seal" "$T/plain.sqfs" | cut -d' ' -f1)" ] ||
    fail "the SIF file's seal has another root than its partition's"
"$MOUNTCTL" mount -o "seal_root=$sif_root" "$T/img.sif" "$T/m" >/dev/null || fail "mountctl mount of a sealed SIF file failed"
[ "$(stat_of "$T/m" verify.seal)" = "$T/img.sif.sqcseal" ] || fail "the SIF mount does not check against its seal"
(cd "$T/m" && find . -type f | sort | xargs sha256sum) >"$T/got"
cmp -s "$T/want" "$T/got" || fail "sealed SIF mount differs from the source"
[ "$(stat_of "$T/m" verify.blocks_bad)" = 0 ] || fail "a sound SIF file has bad blocks"
"$MOUNTCTL" umount "$T/m" || fail "umount failed"

make_sif "$T/bad.sif" 1 bad
if "$MOUNTCTL" mount "$T/bad.sif" "$T/m" 2>"$T/err"; then fail "damaged SIF mounted"; fi
grep -q 'past the end' "$T/err" || { cat "$T/err"; fail "no clear message for a damaged SIF"; }
make_sif "$T/ext3.sif" 2 good
if "$MOUNTCTL" mount "$T/ext3.sif" "$T/m" 2>"$T/err"; then fail "SIF without SquashFS mounted"; fi
grep -q 'no SquashFS partition' "$T/err" || { cat "$T/err"; fail "no clear message for a SIF without SquashFS"; }
if "$MOUNTCTL" mount --sif "$T/plain.sqfs" "$T/m" 2>"$T/err"; then fail "--sif mounted a plain image"; fi
grep -q 'not a SIF file' "$T/err" || { cat "$T/err"; fail "no clear message for --sif on a plain image"; }
is_mounted "$T/m" && fail "something is mounted after the refusals"
echo "SIF checks passed"

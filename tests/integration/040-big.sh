#!/bin/sh
# Scale: a directory of 100,000 entries and a sparse file larger than
# 4 GiB with data on both sides of the 4 GiB mark (gzip, 128K blocks).
# Mount with the mounter under test (SQC_MOUNTER, default squashcached),
# compare with the source and (but in the quick run, with sanitizers)
# with the kernel mount, and report
# (informational) the time of 2,000 random lookups by name in the big
# directory and of reading it.  Through the mount, the sparse file's data
# and the bytes around them (where offsets pass 4 GiB) are compared with
# the source, not its 4 GiB of holes: lib/image reads every byte of it,
# and of the same file with 4K blocks (over a million entries in its
# block list), in the "matrix" of tests/unit/test_image.c.
# TIMEOUT: 400
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=trees.sh
. "$(dirname "$0")/trees.sh"

need_mounter

tree=$T/src
image=$T/img.sqfs
start=$(date +%s)
if is_quick; then
    make_tree "$tree" --profile none --with mtimes,varyowner --big-dir
else
    make_tree "$tree" --profile none --with mtimes,varyowner --big-dir --huge-sparse
fi
note "tree: $(($(date +%s) - start)) s"

# lookup_timing LABEL MNT: 2,000 random names (from the source listing,
# so the mount's readdir plays no part), first on a fresh mount, then
# again with the caches warm; then one readdir of the whole directory.
lookup_timing() {
    "$PYTHON" - "$1" "$2/bigdir" "$tree/bigdir" <<'EOF'
import os, random, sys, time
label, mdir, sdir = sys.argv[1:4]
names = sorted(os.listdir(os.fsencode(sdir)))
sample = random.Random(7).sample(names, 2000)
def lookups():
    t = time.perf_counter()
    for n in sample:
        os.lstat(os.path.join(os.fsencode(mdir), n))
    return time.perf_counter() - t
cold = lookups()
warm = lookups()
t = time.perf_counter()
n = len(os.listdir(mdir))
rd = time.perf_counter() - t
print("%s: 2000 lstat by name in %d entries: %.0f ms fresh (%.0f us each), "
      "%.0f ms warm; readdir of all %d: %.0f ms"
      % (label, len(names), cold * 1e3, cold / 2000 * 1e6, warm * 1e3, n,
         rd * 1e3))
if n != len(names):
    sys.exit("%s: readdir returned %d names, the source has %d"
             % (label, n, len(names)))
EOF
}

# sparse_check LABEL SRC MNT: every data range of the sparse file SRC
# (SEEK_DATA) with 64 KiB either side, and 64 KiB at 16 offsets spread
# over its holes, read through MNT and compared with SRC; and its size.
sparse_check() {
    "$PYTHON" - "$@" <<'EOF'
import os, sys
label, src, mnt = sys.argv[1:4]
s, m = os.open(src, os.O_RDONLY), os.open(mnt, os.O_RDONLY)
size = os.fstat(s).st_size
if os.fstat(m).st_size != size:
    sys.exit("%s: size %d through the mount, %d in the source"
             % (label, os.fstat(m).st_size, size))
ranges, off = [], 0
while True:
    try:
        start = os.lseek(s, off, os.SEEK_DATA)
    except OSError:
        break
    end = os.lseek(s, start, os.SEEK_HOLE)
    ranges.append((max(0, start - 65536), min(size, end + 65536)))
    off = end
ndata = len(ranges)
ranges += [(size * i // 16, min(size, size * i // 16 + 65536)) for i in range(16)]
checked = 0
for lo, hi in ranges:
    while lo < hi:
        n = min(hi - lo, 1 << 20)
        a, b = os.pread(s, n, lo), os.pread(m, n, lo)
        if a != b:
            k = min(len(a), len(b))
            i = next((i for i in range(k) if a[i] != b[i]), k)
            sys.exit("%s: first difference at byte %d" % (label, lo + i))
        lo += n
        checked += n
if ndata < 3:
    sys.exit("%s: only %d data ranges in the source" % (label, ndata))
print("%s: %d bytes of %d compared (%d data ranges and 16 hole samples)"
      % (label, checked, size, ndata))
EOF
}

# big_case LABEL DIR "MKSQUASHFS OPTIONS": pack DIR, mount, compare.
big_case() {
    bc_label=$1
    bc_dir=$2
    bc_t0=$(date +%s)
    # shellcheck disable=SC2086
    pack "$bc_dir" "$image" $3
    note "$bc_label: mksquashfs $(($(date +%s) - bc_t0)) s"
    tmount "$image" "$T/mnt"
    if [ -d "$bc_dir/bigdir" ]; then
        lookup_timing "$bc_label: $SQC_MOUNTER" "$T/mnt"
    fi
    if [ -d "$bc_dir/huge" ]; then
        # Attributes of all, content of the big directory, and the sparse
        # file's data through the mount.
        # shellcheck disable=SC2086
        compare "$bc_label: source vs $SQC_MOUNTER (no content)" $SRC_CMP_OPTS \
            --no-content "$bc_dir" "$T/mnt"
        # shellcheck disable=SC2086
        compare "$bc_label: source vs $SQC_MOUNTER (big directory)" $SRC_CMP_OPTS \
            "$bc_dir/bigdir" "$T/mnt/bigdir"
        sparse_check "$bc_label: sparse file" "$bc_dir/huge/sparse_4g_plus" \
            "$T/mnt/huge/sparse_4g_plus" || fail "$bc_label: the sparse file differs"
    else
        # shellcheck disable=SC2086
        compare "$bc_label: source vs $SQC_MOUNTER" $SRC_CMP_OPTS "$bc_dir" "$T/mnt"
    fi
    if is_quick; then
        # The kernel's mount checks values (the plain run's), not memory.
        tumount "$T/mnt"
        rm -f "$image"
        note "$bc_label: ok ($(($(date +%s) - bc_t0)) s, quick run: no kernel mount)"
        return 0
    fi
    kmount_retry "$image" "$T/kmnt"
    if [ -d "$bc_dir/bigdir" ] && [ "$SQC_MOUNTER" != kernel ]; then
        lookup_timing "$bc_label: kernel" "$T/kmnt"
    fi
    # Content was just compared with the source; reading 4 GiB through
    # both mounts again would prove nothing more.
    compare "$bc_label: kernel vs $SQC_MOUNTER" --dir-nlink --all-times --no-content "$T/kmnt" "$T/mnt"
    umount "$T/kmnt"
    tumount "$T/mnt"
    rm -f "$image"
    note "$bc_label: ok ($(($(date +%s) - bc_t0)) s)"
}

# Everything with the defaults (128K blocks: the 4 GiB file has block
# numbers past 32768).
big_case "gzip" "$tree" "-comp gzip"
note "total $(($(date +%s) - start)) s"

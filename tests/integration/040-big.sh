#!/bin/sh
# Scale: a directory of 100,000 entries and a sparse file larger than
# 4 GiB with data on both sides of the 4 GiB mark (gzip, 128K blocks),
# and the sparse file again with 4K blocks (lz4).  Mount with the mounter under test
# (SQC_MOUNTER, default squashcached), compare with the source and with
# the kernel mount, and report (informational) the time of 2,000 random
# lookups by name in the big directory and of reading it.
# TIMEOUT: 900
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
    # shellcheck disable=SC2086
    compare "$bc_label: source vs $SQC_MOUNTER" $SRC_CMP_OPTS "$bc_dir" "$T/mnt"
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
# numbers past 32768), then the huge file alone with 4K blocks: over a
# million entries in its block list (4 MiB of metadata in one inode).
big_case "gzip" "$tree" "-comp gzip"
is_quick || big_case "lz4 -b 4K, huge file only" "$tree/huge" "-comp lz4 -b 4K"
note "total $(($(date +%s) - start)) s"

#!/bin/sh
# mksquashfs options that change the image layout, each with at least one
# compressor: mount with the mounter under test (SQC_MOUNTER, default
# squashcached) and compare with the source and with the kernel mount.
# Options that change metadata on purpose (-no-xattrs, -no-hardlinks,
# -all-root, -force-uid/-force-gid, -all-time) relax only the comparison
# with the source; the comparison with the kernel mount stays strict.
# TIMEOUT: 900
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=trees.sh
. "$(dirname "$0")/trees.sh"

need_mounter

tree=$T/src
make_tree "$tree"
image=$T/img.sqfs
start=$(date +%s)

# opt_case COMP "MKSQUASHFS OPTIONS" [treecmp options for the source]
opt_case() {
    oc_comp=$1
    oc_opts=$2
    shift 2
    # shellcheck disable=SC2086
    pack "$tree" "$image" -comp $oc_comp $oc_opts
    check_image "$oc_comp $oc_opts" "${oc_comp%% *}" "$tree" "$image" "$@"
    rm -f "$image"
}

opt_case gzip "-no-fragments"
opt_case zstd "-always-use-fragments"
if mksquashfs_accepts -tailends; then
    opt_case lz4 "-tailends"
    opt_case gzip "-tailends -b 4K"
else
    note "-tailends: this mksquashfs does not support it, skipped"
fi
opt_case gzip "-noI -noD -noF -noX"
if is_quick; then
    opt_case gzip "-no-xattrs" --no-xattrs
    opt_case xz "-Xbcj x86,arm -Xdict-size 50%"
    note "quick run: $(($(date +%s) - start)) s"
    exit 0
fi
opt_case xz "-noI"
opt_case lzo "-noD"
opt_case zstd "-noF"
opt_case gzip "-noX"
opt_case lz4 "-noId"
opt_case gzip "-no-xattrs" --no-xattrs
opt_case zstd "-no-sparse"
opt_case lz4 "-no-duplicates"
opt_case gzip "-no-hardlinks" --no-hardlinks
opt_case gzip "-all-root" --no-owner
opt_case zstd "-force-uid 12345 -force-gid 4000000001" --no-owner
opt_case lz4 "-all-time 1234567" --no-mtime
opt_case xz "-no-exports"
# The kernel mounts through a loop device, whose size is whole 512-byte
# sectors: the unpadded tail (the tables) is cut off and the mount fails.
# squashcached reads the file itself; unsquashfs is the oracle here.
ORACLE=unsquashfs
opt_case gzip "-nopad"
ORACLE=kernel
opt_case gzip "-b 4K -always-use-fragments"
# Compressor options: the superblock carries a compressor-options block,
# and -Xbcj makes some data blocks (files/x86ish) use the x86 BCJ filter.
opt_case xz "-Xbcj x86,arm -Xdict-size 50%"
opt_case gzip "-Xcompression-level 1 -Xwindow-size 8 -Xstrategy default,filtered"
opt_case lzo "-Xalgorithm lzo1x_1"
opt_case zstd "-Xcompression-level 1"
note "all options: $(($(date +%s) - start)) s"

#!/bin/sh
# Every compressor, one block size each (from 4K to 1M across them): pack
# the standard tree, mount the image with the mounter under test
# (SQC_MOUNTER, default squashcached), and compare the mount with the
# source and with the kernel's mount of the same image (unsquashfs where
# the kernel cannot mount the codec: lzma).  Every compressor at every
# block size, read through lib/image without FUSE, is the "matrix" of
# tests/unit/test_image.c.
# TIMEOUT: 300
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=trees.sh
. "$(dirname "$0")/trees.sh"

need_mounter

tree=$T/src
make_tree "$tree"
image=$T/img.sqfs
start=$(date +%s)

for comp in gzip lz4 "lz4 -Xhc" lzo xz zstd lzma; do
    # shellcheck disable=SC2086
    if ! mksquashfs_accepts -comp $comp; then
        [ "$comp" = lzma ] || fail "mksquashfs cannot build $comp images"
        note "lzma: this mksquashfs cannot build it, skipped"
        continue
    fi
    case $comp in
    gzip | lzo) bs=4K ;;
    lz4) bs=64K ;;
    "lz4 -Xhc" | xz) bs=1M ;;
    *) bs=128K ;;
    esac
    # shellcheck disable=SC2086
    pack "$tree" "$image" -comp $comp -b $bs
    check_image "$comp -b $bs" "${comp%% *}" "$tree" "$image"
    rm -f "$image"
done
note "all compressors: $(($(date +%s) - start)) s"

#!/bin/sh
# Every compressor x block size: pack the standard tree, mount the image
# with the mounter under test (SQC_MOUNTER, default squashcached), and
# compare the mount with the source and with the kernel's mount of the
# same image (unsquashfs where the kernel cannot mount the codec: lzma).
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

for comp in gzip lz4 "lz4 -Xhc" lzo xz zstd lzma; do
    # shellcheck disable=SC2086
    if ! mksquashfs_accepts -comp $comp; then
        [ "$comp" = lzma ] || fail "mksquashfs cannot build $comp images"
        note "lzma: this mksquashfs cannot build it, skipped"
        continue
    fi
    sizes="4K 64K 128K 1M"
    if is_quick; then
        case $comp in
        gzip | lzo) sizes=4K ;;
        lz4) sizes=64K ;;
        "lz4 -Xhc" | xz) sizes=1M ;;
        *) sizes=128K ;;
        esac
    fi
    for bs in $sizes; do
        # shellcheck disable=SC2086
        pack "$tree" "$image" -comp $comp -b $bs
        check_image "$comp -b $bs" "${comp%% *}" "$tree" "$image"
        rm -f "$image"
    done
done
note "all compressors: $(($(date +%s) - start)) s"

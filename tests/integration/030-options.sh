#!/bin/sh
# mksquashfs options the daemon itself sees, through FUSE: an image
# without an xattr table (-no-xattrs: the daemon answers listxattr and
# getxattr without the library), and one whose metadata and data are all
# stored uncompressed (-noI -noD -noF -noX: every read of file data is
# spliced from the image).  Mount with the mounter under test
# (SQC_MOUNTER, default squashcached) and compare with the source and,
# strictly, with the kernel mount.  Every option that changes the layout,
# read through lib/image without FUSE, is the "matrix" of
# tests/unit/test_image.c.
# TIMEOUT: 180
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

opt_case gzip "-no-xattrs" --no-xattrs
opt_case gzip "-noI -noD -noF -noX"
note "options: $(($(date +%s) - start)) s"

#!/bin/sh
# SPDX-License-Identifier: MIT
# Generate small valid SquashFS images: the fuzz seed corpus and the base
# images of the corruption and mutation tests.
#
#   sh tests/images/mkimages.sh DESTDIR [--tree-only]
#
# One tiny tree (a few files, a subdirectory, a symlink, a device, a fifo,
# xattrs, hard links, a file whose tail is a fragment, a sparse block, a
# file of several 4 KiB blocks) is packed once per compressor (gzip lz4
# lz4-hc lzo xz zstd) and once per option set (-noI -noD -noF -noX,
# -no-fragments, -no-xattrs, -always-use-fragments, -exports,
# uncompressed everything) with -b 4K, into DESTDIR/<name>.sqfs, each a
# few KB.  (The tree has a directory whose listing needs an index.)  Names say how they were made: gzip.sqfs, zstd-noI.sqfs, ...
# Compressors that this mksquashfs lacks are skipped with a note.
#
# The tree is a pure function of this script: contents, modes and mtimes
# are fixed, and -all-time/-mkfs-time make the images byte-identical from
# run to run.  Device and fifo come from mksquashfs pseudo definitions, so
# no root is needed; xattrs are skipped (with a note) where the
# filesystem of DESTDIR refuses user.* xattrs.
#
# Exit status: 0 done, 1 error, 2 usage, 77 mksquashfs missing.
set -eu

dest=${1:-}
[ -n "$dest" ] || { echo "usage: $0 DESTDIR [--tree-only]" >&2; exit 2; }
command -v mksquashfs >/dev/null 2>&1 || { echo "mkimages: mksquashfs not installed" >&2; exit 77; }
mkdir -p "$dest"
tree="$dest/.tree"
rm -rf "$tree"
mkdir -p "$tree/sub/deeper"

# Files.  "small" and "tail" end in fragments; "blocks" is three full 4 KiB
# blocks and a tail; "sparse" has an all-zero (sparse) block between data.
printf 'hello, squashcache\n' >"$tree/small"
awk 'BEGIN { for (i = 0; i < 700; i++) printf "line %04d of the multi-block file\n", i }' >"$tree/blocks"
printf 'short tail file\n' >"$tree/sub/tail"
{
    awk 'BEGIN { for (i = 0; i < 128; i++) printf "data-before-hole-%014d\n", i }'
    dd if=/dev/zero bs=4096 count=1 2>/dev/null
    awk 'BEGIN { for (i = 0; i < 100; i++) printf "data-after-hole-%015d\n", i }'
} >"$tree/sparse"
: >"$tree/empty"
printf 'linked\n' >"$tree/sub/linked"
ln "$tree/sub/linked" "$tree/hardlink"
ln "$tree/sub/linked" "$tree/sub/deeper/hardlink2"
ln -s small "$tree/symlink"
ln -s ../../blocks "$tree/sub/deeper/uplink"
printf 'deep file\n' >"$tree/sub/deeper/file"
# A listing longer than one metadata block, so that the directory gets an
# index: 40 long names, all hard links of one empty file.
mkdir "$tree/big"
: >"$tree/big/target"
for i in $(seq 10 49); do
    ln "$tree/big/target" "$tree/big/$(printf "%0240d-%s" 0 "$i")"
done

xattrs=yes
if command -v setfattr >/dev/null 2>&1 &&
    setfattr -n user.comment -v "a small seed image" "$tree/small" 2>/dev/null; then
    setfattr -n user.long -v "$(awk 'BEGIN { for (i = 0; i < 40; i++) printf "xattr-value-%02d ", i }')" "$tree/blocks"
    setfattr -n user.dir -v sub "$tree/sub"
    setfattr -n user.shared -v same "$tree/sub/linked"
    setfattr -n user.shared -v same "$tree/sub/tail"
else
    xattrs=no
    echo "mkimages: no user.* xattrs on $(dirname "$tree"); images have none" >&2
fi

find "$tree" -exec touch -h -d @1700000000 {} +
chmod 0644 "$tree/small" "$tree/blocks" "$tree/sparse" "$tree/empty" "$tree/sub/tail" "$tree/sub/linked" "$tree/sub/deeper/file"
chmod 0755 "$tree" "$tree/sub" "$tree/sub/deeper" "$tree/big"
chmod 0600 "$tree/big/target"
[ "${2:-}" = --tree-only ] && exit 0

pseudo="$dest/.pseudo"
cat >"$pseudo" <<'EOF'
null c 0644 0 0 1 3
sub/loop0 b 0660 0 6 7 0
fifo i 0600 1000 1000 f
EOF

have_comp() {
    mksquashfs -help 2>&1 | grep -qw "$1"
}

pack() {
    name=$1
    shift
    rm -f "$dest/$name.sqfs"
    mksquashfs "$tree" "$dest/$name.sqfs" -noappend -no-progress -quiet \
        -b 4K -all-time 1700000000 -mkfs-time 1700000000 \
        -pf "$pseudo" "$@" >/dev/null
}

for comp in gzip lz4 lz4-hc lzo xz zstd; do
    case $comp in
    lz4-hc) c=lz4; extra="-Xhc" ;;
    *) c=$comp; extra="" ;;
    esac
    if ! have_comp "$c"; then
        echo "mkimages: mksquashfs lacks $c; skipped" >&2
        continue
    fi
    # shellcheck disable=SC2086
    pack "$comp" -comp "$c" $extra
done

pack gzip-noI -noI
pack gzip-noD -noD
pack gzip-noF -noF
pack gzip-noX -noX
pack gzip-noI-noD-noF-noX -noI -noD -noF -noX
pack gzip-no-fragments -no-fragments
pack gzip-always-fragments -always-use-fragments
pack gzip-exports -exports
pack gzip-no-xattrs -no-xattrs
pack zstd-noI-exports -comp zstd -noI -exports
pack xz-noI-noD -comp xz -noI -noD
# Uncompressed inode and directory tables: the corruption tests edit
# decoded metadata in place.
pack plain-noI -noI -noD -noF -noX -exports

rm -rf "$tree" "$pseudo"
[ "$xattrs" = yes ] || echo "mkimages: built without xattrs" >&2
exit 0

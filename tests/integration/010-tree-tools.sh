#!/bin/sh
# Self-test of the round-trip harness (tests/images/mktree.py and
# treecmp.py) against the oracles, the kernel squashfs mount and
# unsquashfs.  It does not use squashcached:
#  - the generated tree is deterministic (same seed: equal trees and
#    byte-identical images);
#  - source, kernel mount and unsquashfs extraction all agree;
#  - treecmp fails, and names each difference, when a copy of the source
#    is mutated in a dozen different ways.
# TIMEOUT: 300
# SANITIZE: no (runs no program of ours: mktree.py, treecmp.py and the kernel)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=trees.sh
. "$(dirname "$0")/trees.sh"

need_root
need_kernel_squashfs
need_cmd mksquashfs unsquashfs setfattr cp
[ -x "$PYTHON" ] || skip "no $PYTHON"

tree=$T/src
make_tree "$tree"

note "determinism"
make_tree -q "$T/src2"
compare "same seed" --dir-nlink "$tree" "$T/src2"
pack "$tree" "$T/a.sqfs" -mkfs-time 0
pack "$T/src2" "$T/b.sqfs" -mkfs-time 0
cmp "$T/a.sqfs" "$T/b.sqfs" || fail "same seed, same options, different images"
rm -rf "$T/src2" "$T/b.sqfs"

note "oracles agree"
kmount "$T/a.sqfs" "$T/kmnt"
# shellcheck disable=SC2086
compare "source vs kernel" $SRC_CMP_OPTS "$tree" "$T/kmnt"
unsquashfs -q -n -d "$T/extracted" "$T/a.sqfs" >/dev/null
# shellcheck disable=SC2086
compare "source vs unsquashfs" $SRC_CMP_OPTS "$tree" "$T/extracted"
compare "kernel vs unsquashfs" --dir-nlink "$T/kmnt" "$T/extracted"
rm -rf "$T/extracted"

# What the accommodations in SRC_CMP_OPTS are for, so that a change in
# mksquashfs or the kernel shows up here (informational, not a failure).
rc=0
"$PYTHON" "$TREECMP" --dir-nlink "$tree" "$T/kmnt" >"$T/strict.out" || rc=$?
if grep -q '^DIFF .*: xattr system\.' "$T/strict.out"; then
    note "mksquashfs drops system.* xattrs (POSIX ACLs)"
fi
if grep -q '^DIFF links/.*sym.*: hard-link group' "$T/strict.out"; then
    note "mksquashfs split a hard-linked symlink in this image"
else
    note "mksquashfs kept hard-linked symlinks intact in this image"
fi
grep '^DIFF' "$T/strict.out" | grep -v -e ': xattr system\.' -e '^DIFF links/[a-z0-9/]*sym[0-9]: ' \
    && fail "strict source vs kernel: unexpected differences (above)"
umount "$T/kmnt"
rm -f "$T/a.sqfs"

note "treecmp must fail on a mutated copy"
rc=0
"$PYTHON" "$TREECMP" "$T/nonexistent" "$tree" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "treecmp on a missing root: exit $rc, want 2"
copy=$T/copy
cp -a "$tree" "$copy"
compare "cp -a copy" --dir-nlink "$tree" "$copy"

# Restore a copied entry's mtime from the source (a mutation of a
# directory's entries changes the directory's mtime).
keep_mtime() {
    touch -h -d "@$(stat -c %Y "$tree/$1")" "$copy/$1"
}
chmod o+x "$copy/files/text_100"
printf '\377' | dd of="$copy/files/text_131073" bs=1 seek=100000 conv=notrunc 2>/dev/null
keep_mtime files/text_131073
setfattr -n user.added -v mutated "$copy/names/x"
setfattr -n user.a -v 2 "$copy/xattrs/plain"
rm "$copy/dupes/small_e"
keep_mtime dupes
chown -h 4242:4343 "$copy/owners/u0_g0"
touch -h -d @12345 "$copy/symlinks/one"
cp -a "$copy/links/a2" "$copy/links/a2.tmp"
mv -f "$copy/links/a2.tmp" "$copy/links/a2"
keep_mtime links
ln -sfn ../files/rand_2 "$copy/symlinks/rel"
chown -h "$(stat -c %u:%g "$tree/symlinks/rel")" "$copy/symlinks/rel"
keep_mtime symlinks/rel
keep_mtime symlinks
rm "$copy/dev/c_null"
mknod "$copy/dev/c_null" c 1 5
chown --reference="$tree/dev/c_null" "$copy/dev/c_null"
chmod --reference="$tree/dev/c_null" "$copy/dev/c_null"
keep_mtime dev/c_null
keep_mtime dev
truncate -s +1 "$copy/sparse/all_hole"
keep_mtime sparse/all_hole

rc=0
"$PYTHON" "$TREECMP" --dir-nlink "$tree" "$copy" >"$T/mut.out" || rc=$?
cat "$T/mut.out"
[ "$rc" -eq 1 ] || fail "treecmp on the mutated copy: exit $rc, want 1"
while IFS= read -r want; do
    grep -qF -- "$want" "$T/mut.out" || fail "treecmp did not report: $want"
done <<'EOF'
DIFF files/text_100: mode: left=0644 right=0645
DIFF files/text_131073: content: left=sha256~
first difference at byte 100000 (left byte 0x
DIFF names/x: xattr user.added: left=(absent) right=mutated
DIFF xattrs/plain: xattr user.a: left=1 right=2
DIFF dupes/small_e: exists: left=yes right=no
DIFF owners/u0_g0: uid: left=0 right=4242
DIFF owners/u0_g0: gid: left=0 right=4343
DIFF symlinks/one: mtime:
right=12345
DIFF links/a2: nlink: left=5 right=1
DIFF links/a1: nlink: left=5 right=4
: hard-link group: left=[links/a1, links/a2, links/a3, links/sub1/a4, links/sub2/deeper/a5] right=
DIFF symlinks/rel: symlink target: left=../files/rand_1 right=../files/rand_2
DIFF dev/c_null: rdev: left=1:3 right=1:5
DIFF sparse/all_hole: size: left=5242880 right=5242881
DIFF sparse/all_hole: content:
EOF
# ... and nothing about entries that were not touched.
sed -n 's/^DIFF \([^:]*\): .*/\1/p' "$T/mut.out" | sort -u >"$T/mut.paths"
cat >"$T/mut.allowed" <<'EOF'
dev/c_null
dupes/small_e
files/text_100
files/text_131073
links/a1
links/a2
links/a3
links/sub1/a4
links/sub2/deeper/a5
names/x
owners/u0_g0
sparse/all_hole
symlinks/one
symlinks/rel
xattrs/plain
EOF
if grep -vxF -f "$T/mut.allowed" "$T/mut.paths"; then
    fail "treecmp reported differences in untouched entries (above)"
fi
note "ok"

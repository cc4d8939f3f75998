# Helpers for the tree round-trip tests (010-040); source after lib.sh.
#
# The mounter under test is chosen by SQC_MOUNTER: "squashcached" (the
# default) or "kernel", which makes the kernel's own squashfs mount stand
# in for the daemon, so the harness can run without it.  The oracles are
# always the kernel mount and unsquashfs.
#
#   need_mounter              skip/fail unless the mounter and oracles exist
#   make_tree DEST [mktree options]          generate a source tree
#   pack SRC IMG [mksquashfs options]        mkimg without the ACL noise
#   tmount IMG MNT / tumount MNT             mounter under test
#   kmount_retry IMG MNT      kmount, waiting for a free loop device
#   kernel_mounts COMP        true if the kernel mounts COMP images (probed)
#   mksquashfs_accepts ARGS.. true if mksquashfs builds an image with ARGS
#   compare LABEL [treecmp options] LEFT RIGHT   fail on any difference
#   check_image LABEL COMP SRC IMG [source treecmp options]
#       mount IMG with the mounter under test, compare it with SRC and
#       with an oracle (kernel mount, or unsquashfs where the kernel lacks
#       COMP), unmount.  The options relax only the source comparison
#       (e.g. --no-owner for -all-root); oracle comparisons stay strict.
#       ORACLE=unsquashfs forces the unsquashfs oracle (images the kernel
#       cannot mount for reasons other than the codec, e.g. -nopad).
#       In the quick run (sanitizers) only the source comparison: the
#       oracles check values, which the plain run does, not memory.
# shellcheck shell=sh

SQC_MOUNTER=${SQC_MOUNTER:-squashcached}
case "$SQC_MOUNTER" in
kernel | squashcached) ;;
*) fail "SQC_MOUNTER must be 'kernel' or 'squashcached', not '$SQC_MOUNTER'" ;;
esac
MKTREE="$TOP/tests/images/mktree.py"
TREECMP="$TOP/tests/images/treecmp.py"
# mksquashfs clamps every timestamp to SOURCE_DATE_EPOCH when it is set;
# the trees hold mtimes up to 2^32-1 on purpose.
unset SOURCE_DATE_EPOCH

# Options for a source tree vs a mount of its image:
#  --dir-nlink: SquashFS and ext4/tmpfs both count 2 + subdirectories;
#  --lax-symlink-links: mksquashfs 4.5.1 gives some names of a hard-linked
#    symlink an inode of their own (the shared inode's nlink drops);
#  --dropped-xattr-prefix system.: SquashFS cannot store system.* (POSIX
#    ACLs); mksquashfs drops them, so they must be absent from the mount;
#  --trust-holes left: skip the source's holes with SEEK_DATA (the 4 GiB
#    sparse file); the mount's side is always read in full.
SRC_CMP_OPTS="--dir-nlink --lax-symlink-links --dropped-xattr-prefix system.
    --trust-holes left"

# SQC_QUICK=1 (the sanitizer run in CI) leaves out the 4 GiB file and
# the comparisons with the oracles (the kernel, unsquashfs): they check
# values, which the plain run covers, not our memory; the plain run
# covers everything.
is_quick() {
    [ "${SQC_QUICK:-0}" = 1 ]
}

need_mounter() {
    need_root
    need_kernel_squashfs
    need_cmd mksquashfs unsquashfs
    [ -x "$PYTHON" ] || skip "no $PYTHON"
    if [ "$SQC_MOUNTER" = squashcached ]; then
        need_fuse
        need_cmd fusermount3
    fi
}

make_tree() {
    rc=0
    "$PYTHON" "$MKTREE" "$@" || rc=$?
    [ "$rc" -eq 77 ] && skip "mktree: the filesystem under ${SQC_TMPDIR:-/tmp} lacks a feature"
    [ "$rc" -eq 0 ] || fail "mktree $* failed ($rc)"
}

# mkimg, with the expected "Unrecognised xattr prefix system.*" warnings
# (the source's POSIX ACLs, which SquashFS cannot store) filtered out.
pack() {
    pk_rc=0
    mkimg "$@" 2>"$T/mksquashfs.err" || pk_rc=$?
    grep -v '^Unrecognised xattr prefix system\.' "$T/mksquashfs.err" >&2 || true
    [ "$pk_rc" -eq 0 ] || fail "mksquashfs $* failed ($pk_rc)"
}

# kmount, retried: loop devices are few (max_loop is often 8), shared
# with anything else running, and released asynchronously after umount.
kmount_retry() {
    kr_i=0
    until kmount "$1" "$2" 2>"$T/kmount.err"; do
        kr_i=$((kr_i + 1))
        if [ "$kr_i" -ge 20 ] || ! grep -q 'loop device' "$T/kmount.err"; then
            cat "$T/kmount.err" >&2
            fail "kernel mount of $1 failed"
        fi
        sleep 0.5
    done
}

tmount() {
    if [ "$SQC_MOUNTER" = kernel ]; then
        kmount_retry "$1" "$2"
    else
        sqc_mount "$1" "$2"
    fi
}

tumount() {
    sqc_umount "$1"
}

kernel_mounts() {
    f="$T/kprobe-$1"
    if [ ! -f "$f" ]; then
        mkdir -p "$T/kprobe-src"
        echo probe >"$T/kprobe-src/f"
        mkimg "$T/kprobe-src" "$f.img" -comp "$1"
        # A codec the kernel lacks fails the mount itself, not the loop.
        km=no
        km_i=0
        while :; do
            if kmount "$f.img" "$f.mnt" 2>"$T/kmount.err"; then
                umount "$f.mnt"
                km=yes
                break
            fi
            grep -q 'loop device' "$T/kmount.err" || break
            km_i=$((km_i + 1))
            [ "$km_i" -lt 20 ] || fail "no free loop device"
            sleep 0.5
        done
        echo "$km" >"$f"
        rm -f "$f.img"
    fi
    [ "$(cat "$f")" = yes ]
}

mksquashfs_accepts() {
    mkdir -p "$T/mprobe-src"
    echo probe >"$T/mprobe-src/f"
    ok=0
    mkimg "$T/mprobe-src" "$T/mprobe.img" "$@" 2>/dev/null || ok=1
    rm -f "$T/mprobe.img"
    return $ok
}

compare() {
    cmp_label=$1
    shift
    cmp_rc=0
    "$PYTHON" "$TREECMP" --max-diffs 40 "$@" || cmp_rc=$?
    [ "$cmp_rc" -eq 0 ] || fail "$cmp_label: trees differ (treecmp exit $cmp_rc)"
}

check_image() {
    ci_label=$1
    ci_comp=$2
    ci_src=$3
    ci_img=$4
    shift 4
    ci_t0=$(date +%s)
    if is_quick && [ "$SQC_MOUNTER" = squashcached ]; then
        tmount "$ci_img" "$T/mnt"
        # shellcheck disable=SC2086
        compare "$ci_label: source vs $SQC_MOUNTER" $SRC_CMP_OPTS "$@" "$ci_src" "$T/mnt"
        tumount "$T/mnt"
        note "$ci_label: ok ($(($(date +%s) - ci_t0)) s, quick run: no oracle)"
        return 0
    fi
    if [ "${ORACLE:-kernel}" = kernel ] && kernel_mounts "$ci_comp"; then
        ci_oracle="$T/kmnt"
        ci_oname=kernel
        kmount_retry "$ci_img" "$ci_oracle"
    else
        ci_oracle="$T/extracted"
        ci_oname=unsquashfs
        rm -rf "$ci_oracle"
        unsquashfs -q -n -d "$ci_oracle" "$ci_img" >/dev/null
    fi
    if [ "$SQC_MOUNTER" = kernel ] && [ "$ci_oname" = unsquashfs ]; then
        # shellcheck disable=SC2086
        compare "$ci_label: source vs unsquashfs" $SRC_CMP_OPTS "$@" "$ci_src" "$ci_oracle"
        rm -rf "$ci_oracle"
        note "$ci_label: the kernel cannot mount this image; only unsquashfs checked"
        return 0
    fi
    tmount "$ci_img" "$T/mnt"
    # shellcheck disable=SC2086
    compare "$ci_label: source vs $SQC_MOUNTER" $SRC_CMP_OPTS "$@" "$ci_src" "$T/mnt"
    if [ "$ci_oname" = kernel ]; then
        # Two mounts of one image: everything must match, directory nlink
        # and atime/ctime (SquashFS has only mtime; the kernel reports it
        # for all three) included.
        compare "$ci_label: kernel vs $SQC_MOUNTER" --dir-nlink --all-times "$ci_oracle" "$T/mnt"
        umount "$ci_oracle"
    else
        compare "$ci_label: unsquashfs vs $SQC_MOUNTER" --dir-nlink "$ci_oracle" "$T/mnt"
        rm -rf "$ci_oracle"
    fi
    tumount "$T/mnt"
    note "$ci_label: ok ($(($(date +%s) - ci_t0)) s, oracle $ci_oname)"
}

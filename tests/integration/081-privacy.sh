#!/bin/sh
# Mounts are private to the user who mounted them: a second, real user
# gets EACCES (root included, as FUSE does without allow_other), and
# allow_other opens the mount only when asked, with the image's own
# permission bits still enforced (default_permissions).
# TIMEOUT: 120
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs
need_test_users

ua=$TU_A
ub=$TU_B
mkdir -p "$T/src/pub"
echo public >"$T/src/pub/file"
echo secret >"$T/src/secret"
chmod 600 "$T/src/secret"
mkimg "$T/src" "$T/img.sqfs" -comp lz4
chmod 644 "$T/img.sqfs"

# readable_by USER PATH -> 0 if USER can read PATH
readable_by() {
    as "$1" cat "$2" >/dev/null 2>"$T/err"
}

note "root's private mount: other users get EACCES"
mkdir -m 755 "$T/m"
sqc_mount "$T/img.sqfs" "$T/m"
cat "$T/m/pub/file" >/dev/null || fail "root cannot read its own mount"
if readable_by $ub "$T/m/pub/file"; then
    fail "$ub read root's private mount"
fi
grep -q "Permission denied" "$T/err" || fail "expected EACCES, got: $(cat "$T/err")"
as $ub ls "$T/m" >/dev/null 2>&1 && fail "$ub listed root's private mount"
sqc_umount "$T/m"

note "a user's private mount: the user reads it, others (and root) do not"
mkdir -m 755 "$T/ma" "$T/home-a"
chown $ua "$T/ma" "$T/home-a"
as $ua "$SQUASHCACHED" -o log="$T/home-a/log" "$T/img.sqfs" "$T/ma" ||
    fail "$ua cannot mount"
_mounts="$T/ma $_mounts"
readable_by $ua "$T/ma/pub/file" || fail "$ua cannot read its own mount: $(cat "$T/err")"
if readable_by $ub "$T/ma/pub/file"; then
    fail "$ub read $ua's private mount"
fi
grep -q "Permission denied" "$T/err" || fail "expected EACCES, got: $(cat "$T/err")"
if cat "$T/ma/pub/file" >/dev/null 2>"$T/err"; then
    fail "root read $ua's private mount without allow_other"
fi
# The owner gets the image's own permission bits too.
if readable_by $ua "$T/ma/secret"; then
    fail "$ua read a root-owned 0600 file"
fi
as $ua fusermount3 -u "$T/ma" || fail "$ua cannot unmount its mount"
i=0
while is_mounted "$T/ma"; do
    i=$((i + 1)); [ $i -lt 250 ] || fail "still mounted"; sleep 0.02
done

note "allow_other: others may read, permission bits still apply"
sqc_mount "$T/img.sqfs" "$T/m" -o allow_other
readable_by $ub "$T/m/pub/file" || fail "$ub cannot read with allow_other: $(cat "$T/err")"
if readable_by $ub "$T/m/secret"; then
    fail "$ub read a 0600 root file through allow_other"
fi
sqc_umount "$T/m"

note "allow_other for a user needs user_allow_other in /etc/fuse.conf"
if ! grep -q '^user_allow_other' /etc/fuse.conf 2>/dev/null; then
    if as $ua "$SQUASHCACHED" -o allow_other "$T/img.sqfs" "$T/ma" 2>"$T/err"; then
        _mounts="$T/ma $_mounts"
        fail "$ua mounted with allow_other although fuse.conf forbids it"
    fi
    grep -q "user_allow_other" "$T/err" || fail "no clear message: $(cat "$T/err")"
    note "$(grep user_allow_other "$T/err" | head -n 1)"
fi
echo "privacy checks passed"

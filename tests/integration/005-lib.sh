#!/bin/sh
# The test library itself (lib.sh):
#   - sqc_pid takes the mount point as a string: with mounts at "m.x[1]+"
#     and at "mAx1" (which that path, read as a pattern, matches) each
#     gives its own daemon;
#   - need_test_users: two users of this run mount and read as
#     themselves, through /dev/fuse's ACL while another user still cannot
#     open it; after the test, no user, process or ACL entry of the run
#     is left and /dev/fuse's base ACL entries and mode are as before
#     (not its group bits, which show the mask of the named entries that
#     other test runs on this host add and remove meanwhile).
# TIMEOUT: 120
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs
mkdir -p "$T/src"
echo hello >"$T/src/f"
mkimg "$T/src" "$T/img.sqfs"
chmod 644 "$T/img.sqfs"

# pid_of MNT: the daemon's pid as it tells it.
pid_of() {
    "$MOUNTCTL" status --json "$1" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)[0]["pid"])'
}

note "sqc_pid: a path with '.', '[' and '+'"
sqc_mount "$T/img.sqfs" "$T/mAx1"
sqc_mount "$T/img.sqfs" "$T/m.x[1]+"
for m in "$T/mAx1" "$T/m.x[1]+"; do
    [ "$(sqc_pid "$m")" = "$(pid_of "$m")" ] ||
        fail "sqc_pid '$m' gave '$(sqc_pid "$m")', the daemon is $(pid_of "$m")"
done
sqc_umount "$T/m.x[1]+"
sqc_umount "$T/mAx1"
[ -z "$(sqc_pid "$T/mAx1")" ] || fail "sqc_pid found a daemon of an unmounted mount"

[ "$(id -u)" -eq 0 ] || skip "the test users need root"
need_cmd getfacl useradd
note "need_test_users: what a run leaves"
mode0=$(stat -c %A /dev/fuse)
acl0=$(getfacl -cp /dev/fuse)
# The child is a test of its own (its own $T and exit), in this folder.
sh -c '. "$(dirname "$0")/lib.sh"
need_fuse
need_test_users
echo "users $TU_A $TU_B"
echo "uids $(id -u "$TU_A") $(id -u "$TU_B")"
mkdir -p "$T/src" "$T/u.x[1]+"
echo hello >"$T/src/f"
mkimg "$T/src" "$T/img.sqfs"
chmod 644 "$T/img.sqfs"
chown "$TU_A" "$T/u.x[1]+"
as "$TU_A" "$SQUASHCACHED" "$T/img.sqfs" "$T/u.x[1]+" || fail "$TU_A cannot mount"
_mounts="$T/u.x[1]+ $_mounts"
[ "$(as "$TU_A" cat "$T/u.x[1]+/f")" = hello ] || fail "$TU_A cannot read its mount"
[ "$(ps -o user= -p "$(sqc_pid "$T/u.x[1]+")")" = "$TU_A" ] || fail "sqc_pid: not $TU_A'"'"'s daemon"
as "$TU_B" sh -c "exec 3<>/dev/fuse" || fail "$TU_B cannot open /dev/fuse"
if setpriv --reuid=65534 --regid=65534 --clear-groups -- sh -c "exec 3<>/dev/fuse" 2>/dev/null &&
    ! echo "$1" | grep -q "^other::rw"; then
    fail "nobody opens /dev/fuse during the run"
fi
# Left running at exit: the exit removes it with its user.
as "$TU_B" sleep 300 >/dev/null 2>&1 &
echo "child ok"' "$TOP/tests/integration/005-lib.sh" "$acl0" >"$T/child.out" 2>&1 ||
    { cat "$T/child.out"; fail "the child test failed"; }
cat "$T/child.out"
users=$(sed -n 's/^users //p' "$T/child.out")
[ -n "$users" ] || fail "the child made no users"
for u in $users; do
    case "$u" in sqct*) ;; *) fail "user '$u' is not of this run's kind" ;; esac
    id "$u" >/dev/null 2>&1 && fail "user $u is left after the test"
    getent group "$u" >/dev/null && fail "group $u is left after the test"
    getfacl -cp /dev/fuse | grep -q "^user:$u:" && fail "$u is left in /dev/fuse's ACL"
done
for uid in $(sed -n 's/^uids //p' "$T/child.out"); do
    pgrep -U "$uid" >/dev/null && fail "processes of uid $uid are left: $(pgrep -a -U "$uid")"
done
# The mode's owner and other bits (its group bits show the ACL's mask
# while the ACL has named entries: see below).
mode_uo() { stat -c %A /dev/fuse | sed 's/^\(....\)...\(...\).*/\1\2/'; }
[ "$(mode_uo)" = "$(echo "$mode0" | sed 's/^\(....\)...\(...\).*/\1\2/')" ] ||
    fail "/dev/fuse is $(stat -c %A /dev/fuse), was $mode0"
# The base entries as before.  Named entries and the mask are not compared:
# another run of these tests on this host (a shared /dev) adds and
# removes users of its own meanwhile; this run's users are checked above.
base_acl() { grep -E '^(user|group|other)::'; }
[ "$(getfacl -cp /dev/fuse | base_acl)" = "$(echo "$acl0" | base_acl)" ] ||
    fail "/dev/fuse's ACL changed: was
$acl0
now
$(getfacl -cp /dev/fuse)"
note "users $users: gone, /dev/fuse $mode0 as before"
exit 0

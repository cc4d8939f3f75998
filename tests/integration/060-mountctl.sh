#!/bin/sh
# mountctl end to end: mount into a directory that does not exist yet,
# status (human and JSON), wait, umount, check, the usual mistakes (a taken
# mountpoint, something that is not a mount, something that is not an
# image) and a stale mount whose daemon was killed.
# TIMEOUT: 120
# shellcheck shell=sh

# shellcheck source-path=SCRIPTDIR source=lib.sh disable=SC1091
. "$(dirname "$0")/lib.sh"

need_fuse
need_cmd mksquashfs
if ! [ -f "$MOUNTCTL" ] || ! [ -x "$MOUNTCTL" ]; then
    fail "$MOUNTCTL not built"
fi

umask 022
# mountctl prints resolved paths; $T may sit behind a symlink.
R=$(cd "$T" && pwd -P)

# Has process $1 exited?  (A zombie waiting to be reaped has.)
gone() {
    ! [ -e "/proc/$1" ] || grep -q ') [ZX] ' "/proc/$1/stat" 2>/dev/null
}

# Run mountctl; leaves its exit status in $rc and its output in $T/out.
mc() {
    rc=0
    "$MOUNTCTL" "$@" >"$T/out" 2>&1 || rc=$?
}

expect_rc() {
    [ "$rc" -eq "$1" ] || { cat "$T/out" >&2; fail "$2: exit $rc, expected $1"; }
}

expect_out() {
    grep -q -- "$1" "$T/out" || { cat "$T/out" >&2; fail "$2: no '$1' in the output"; }
}

json_check() {
    "$PYTHON" -c "$1" <"$T/out" || { cat "$T/out" >&2; fail "$2"; }
}

note "build and pack a small tree"
mkdir -p "$T/src/sub"
head -c 3000000 /dev/urandom >"$T/src/big.bin"
echo hello >"$T/src/sub/a.txt"
ln -s sub/a.txt "$T/src/link"
mkimg "$T/src" "$T/img.sqfs"

note "usage"
mc --version
expect_rc 0 "--version"
expect_out "^mountctl " "--version"
mc --help
expect_rc 0 "--help"
expect_out "status" "--help"
mc status --help
expect_rc 0 "status --help"
mc frobnicate
expect_rc 2 "unknown command"
expect_out "unknown command 'frobnicate'" "unknown command"
mc status --frobnicate
expect_rc 2 "unknown option"
mc
expect_rc 2 "no command"
mc mount
expect_rc 2 "mount without arguments"
mc mount "$T/img.sqfs" "$T/a" "$T/b"
expect_rc 2 "mount with three arguments"
mc mount -o debug "$T/img.sqfs" "$T/dbg"
expect_rc 2 "mount -o debug"

note "mount into a directory that does not exist yet"
mnt="$R/deep/er/mnt"
_mounts="$mnt $_mounts"
mc mount "$T/img.sqfs" "$T/deep/er/mnt"
expect_rc 0 "mountctl mount"
[ "$(cat "$T/out")" = "$mnt" ] || fail "mount printed '$(cat "$T/out")', not '$mnt'"
is_mounted "$mnt" || fail "$mnt is not mounted"
cmp "$T/src/big.bin" "$mnt/big.bin" || fail "big.bin differs"
[ "$(cat "$mnt/link")" = hello ] || fail "link does not read 'hello'"
[ "$(stat -c %a "$R/deep")" = 755 ] || fail "parent $R/deep is not 0755 (umask 022)"
pid=$(sqc_pid "$mnt")
[ -n "$pid" ] || fail "no squashcached process for $mnt"

note "status"
mc status "$mnt"
expect_rc 0 "status MOUNTPOINT"
expect_out "^mountpoint  $mnt\$" "status"
expect_out "^image       $R/img.sqfs\$" "status"
expect_out "^staging     " "status"
expect_out "^data cache  .* of " "status"
expect_out "^served      " "status"
expect_out "^daemon      pid $pid, " "status"
cat "$T/out"
mc status
expect_out "^mountpoint  $mnt\$" "status without arguments"
mc status --json "$mnt"
expect_rc 0 "status --json"
json_check "
import json, sys
d = json.load(sys.stdin)
assert isinstance(d, list) and len(d) == 1, d
s = d[0]
assert s['ok'] is True, s
assert s['mountpoint'] == '$mnt', s['mountpoint']
assert s['image'] == '$R/img.sqfs', s['image']
assert s['stage']['state'] in ('idle', 'running', 'done', 'off'), s['stage']
assert s['cache']['data']['budget'] > 0, s['cache']
assert s['pid'] == $pid, s['pid']
" "status --json is not the expected JSON"

note "wait"
mc wait --timeout 60 "$mnt"
expect_rc 0 "wait"
mc status --json "$mnt"
json_check "
import json, sys
s = json.load(sys.stdin)[0]
assert s['stage']['state'] in ('done', 'off') or s['stage']['in_ram'], s['stage']
" "wait returned before staging was done"

note "mistakes"
mc mount "$T/img.sqfs" "$mnt"
[ "$rc" -ne 0 ] || fail "a second mount on $mnt succeeded"
expect_out "already a squashcache mount" "mount on a mounted directory"
mc umount "$T/src"
expect_rc 1 "umount of a plain directory"
expect_out "is not a squashcache mount" "umount of a plain directory"
mc status "$T/src"
expect_rc 1 "status of a plain directory"
mc wait "$T/src"
expect_rc 2 "wait on a plain directory"
mc check "$T/src/sub/a.txt"
expect_rc 2 "check of a file that is no image"
mc check "$T/nothing.sqfs"
expect_rc 2 "check of a missing file"
mc check "$T/img.sqfs"
expect_rc 0 "check of a good image"
expect_out "^result      sound" "check of a good image"
expect_out "^files       2 " "check of a good image"
mc mount "$T/nothing.sqfs" "$T/new1/mnt"
expect_rc 4 "mount of a missing image"
! [ -e "$T/new1" ] || fail "a failed mount left $T/new1 behind"
mc mount "$T/src/sub/a.txt" "$T/new2/mnt"
expect_rc 4 "mount of a file that is no image"
expect_out "not a SquashFS image" "mount of a file that is no image"
! [ -e "$T/new2" ] || fail "a failed mount left $T/new2 behind"

note "umount"
mc umount "$T/deep/er/mnt"
expect_rc 0 "umount"
! is_mounted "$mnt" || fail "$mnt still mounted after umount"
gone "$pid" || fail "daemon $pid still running after umount"
[ "$(stat -c %a "$mnt")" = 700 ] || fail "$mnt is not mode 0700"
mc umount "$mnt"
expect_rc 1 "second umount"

note "stale mount"
mc mount "$T/img.sqfs" "$mnt"
expect_rc 0 "mount again"
pid=$(sqc_pid "$mnt")
kill -9 "$pid"
# Gone with its last thread (lib.sh): a killed daemon's leader is a
# zombie while its other threads exit, and until the last one has, its
# control socket still takes a connection (and resets it).
wait_gone "$pid" 5 "daemon $pid after kill -9"
is_mounted "$mnt" || fail "the killed daemon's mount vanished by itself"
mc status "$mnt"
expect_rc 1 "status of a stale mount"
expect_out "no daemon answers" "status of a stale mount"
mc status --json "$mnt"
expect_rc 1 "status --json of a stale mount"
json_check "
import json, sys
s = json.load(sys.stdin)[0]
assert s['ok'] is False and s['mountpoint'] == '$mnt', s
assert 'stale' in s['error'], s
" "status --json of a stale mount"
mc mount "$T/img.sqfs" "$mnt"
expect_rc 1 "mount on a stale mount"
expect_out "stale" "mount on a stale mount"
mc umount "$mnt"
expect_rc 0 "umount of a stale mount"
! is_mounted "$mnt" || fail "the stale mount is still there"
mc mount "$T/img.sqfs" "$mnt"
expect_rc 0 "mount after clearing a stale mount"
cmp "$T/src/big.bin" "$mnt/big.bin" || fail "big.bin differs after remount"
mc umount "$mnt"
expect_rc 0 "final umount"
! is_mounted "$mnt" || fail "$mnt still mounted at the end"

echo "PASS"

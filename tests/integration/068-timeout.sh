#!/bin/sh
# -o timeout=S: the daemon unmounts itself after S seconds with no open
# file and no request; not while a process holds a file open (open files
# are counted, so such a mount never uses no_open).
# TIMEOUT: 90
# shellcheck shell=sh

# shellcheck source-path=SCRIPTDIR source=lib.sh disable=SC1091
. "$(dirname "$0")/lib.sh"

need_fuse
need_cmd mksquashfs
[ -x "$MOUNTCTL" ] || fail "$MOUNTCTL not built"

mkdir -p "$T/src/sub"
head -c 1000000 /dev/urandom >"$T/src/a.bin"
echo hello >"$T/src/sub/b.txt"
mkimg "$T/src" "$T/img.sqfs"

note "an idle mount goes away by itself"
m1="$T/idle"
sqc_mount "$T/img.sqfs" "$m1" -o timeout=2
pid=$(sqc_pid "$m1")
[ -n "$pid" ] || fail "no daemon for $m1"
[ "$(stat_of "$m1" idle.timeout)" = 2 ] || fail "idle.timeout is not 2"
[ "$(stat_of "$m1" fuse.no_open)" = False ] || fail "a timeout mount uses no_open"
cmp "$T/src/a.bin" "$m1/a.bin" || fail "a.bin differs"
wait_gone "$pid" 20 "daemon $pid of an idle timeout=2 mount"
! is_mounted "$m1" || fail "$m1 still mounted after its daemon exited"

note "a file held open keeps it"
m2="$T/held"
sqc_mount "$T/img.sqfs" "$m2" -o timeout=1
pid=$(sqc_pid "$m2")
[ -n "$pid" ] || fail "no daemon for $m2"
(exec 3<"$m2/sub/b.txt" && exec sleep 60) &
holder=$!
at_exit "kill $holder 2>/dev/null || true"
# Readiness: the daemon counts the handle.
wait_stat "$m2" idle.open 1 5 "the daemon never counted the open file"
# With no request for 3 s, three timeouts: the idle check looks at least
# once a second (IDLE_TICK_MS), so without the open file it would have
# unmounted at its first or second look.  (Watching sends the mount no
# request: it reads /proc.)
watch_for 3 "a mount with a file open, idle for three timeouts" \
    'kill -0 "$pid" 2>/dev/null && is_mounted "$m2"'
[ "$(cat "$m2/sub/b.txt")" = hello ] || fail "b.txt does not read 'hello'"
kill "$holder"
wait "$holder" 2>/dev/null || true
wait_gone "$pid" 20 "daemon $pid once the file was closed"
! is_mounted "$m2" || fail "$m2 still mounted after its daemon exited"

note "without timeout= a mount stays"
m3="$T/stays"
sqc_mount "$T/img.sqfs" "$m3"
[ "$(stat_of "$m3" idle.timeout)" = 0 ] || fail "idle.timeout is not 0 by default"
sqc_umount "$m3"

note "a bad timeout is refused"
rc=0
"$SQUASHCACHED" -o timeout=soon "$T/img.sqfs" "$T/bad" 2>"$T/err" || rc=$?
[ "$rc" -ne 0 ] || fail "timeout=soon accepted"
grep -q "timeout" "$T/err" || fail "no word of timeout in: $(cat "$T/err")"
note "ok"

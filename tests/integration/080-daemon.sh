#!/bin/sh
# squashcached's command line: clear errors before anything is mounted, a
# detach that returns only once the mount answers (new session, stdio on
# /dev/null), EROFS for every write, and a clean unmount on SIGTERM/SIGINT.
# TIMEOUT: 180
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs setfattr

mkdir -p "$T/src/dir"
head -c 3000000 /dev/urandom >"$T/src/big"
echo hello >"$T/src/dir/hello"
mkimg "$T/src" "$T/img.sqfs" -comp zstd

# expect_fail WHAT PATTERN CMD...: CMD fails (exit != 0) and says PATTERN.
expect_fail() {
    what=$1
    pattern=$2
    shift 2
    if "$@" >"$T/out" 2>&1; then
        fail "$what: succeeded, expected a failure"
    fi
    grep -q -- "$pattern" "$T/out" || {
        cat "$T/out"
        fail "$what: message does not say '$pattern'"
    }
    note "$what: $(head -n 1 "$T/out")"
}

note "usage and option errors"
expect_fail "no arguments" "expected IMAGE and MOUNTPOINT" "$SQUASHCACHED"
expect_fail "unknown option" "unknown option 'bogus'" "$SQUASHCACHED" -o bogus "$T/img.sqfs" "$T/m"
expect_fail "bad size" "bad size 'lots'" "$SQUASHCACHED" -o ram=lots "$T/img.sqfs" "$T/m"
expect_fail "bad number" "bad value '31' for -o prime_wait (0 .. 30)" "$SQUASHCACHED" -o prime,prime_wait=31 "$T/img.sqfs" "$T/m"
expect_fail "rw" "read-only" "$SQUASHCACHED" -o rw "$T/img.sqfs" "$T/m"

note "mountpoint errors"
expect_fail "missing mountpoint" "does not exist" "$SQUASHCACHED" "$T/img.sqfs" "$T/nowhere"
expect_fail "mountpoint is a file" "not a directory" "$SQUASHCACHED" "$T/img.sqfs" "$T/src/big"

note "image errors"
mkdir -p "$T/m"
expect_fail "missing image" "does not exist" "$SQUASHCACHED" "$T/none.sqfs" "$T/m"
expect_fail "not squashfs" "not a SquashFS image" "$SQUASHCACHED" "$T/src/big" "$T/m"
cp "$T/img.sqfs" "$T/c9.sqfs"
printf '\011' | dd of="$T/c9.sqfs" bs=1 seek=20 conv=notrunc status=none
expect_fail "unknown compressor" "compressor unknown (id 9)" "$SQUASHCACHED" "$T/c9.sqfs" "$T/m"
head -c 100000 "$T/img.sqfs" >"$T/trunc.sqfs"
expect_fail "truncated image" "truncated" "$SQUASHCACHED" "$T/trunc.sqfs" "$T/m"
chmod 000 "$T/img.sqfs"
if [ "$(id -u)" -ne 0 ]; then
    expect_fail "unreadable image" "Permission denied" "$SQUASHCACHED" "$T/img.sqfs" "$T/m"
fi
chmod 644 "$T/img.sqfs"
is_mounted "$T/m" && fail "a failed start left a mount behind"

note "detach: returns once the mount answers, in a new session, stdio closed"
# If the daemon kept stdout open, this pipeline would not end.
timeout 20 sh -c '"$1" -o log="$2" "$3" "$4" | cat' sh "$SQUASHCACHED" "$T/daemon.log" "$T/img.sqfs" "$T/m" ||
    fail "squashcached | cat did not finish: stdout left open?"
_mounts="$T/m $_mounts"
is_mounted "$T/m" || fail "not mounted after squashcached returned"
[ "$(cat "$T/m/dir/hello")" = hello ] || fail "cannot read right after mount"
cmp "$T/src/big" "$T/m/big" || fail "content differs"
pid=$(sqc_pid "$T/m")
[ -n "$pid" ] || fail "no daemon process"
sid=$(ps -o sid= -p "$pid" | tr -d ' ')
[ "$sid" = "$pid" ] || fail "daemon is not a session leader (sid $sid, pid $pid)"
for fd in 0 1 2; do
    tgt=$(readlink "/proc/$pid/fd/$fd")
    case $fd in
    2) [ "$tgt" = "$T/daemon.log" ] || fail "stderr of the daemon is $tgt, expected the log file" ;;
    *) [ "$tgt" = /dev/null ] || fail "fd $fd of the daemon is $tgt, expected /dev/null" ;;
    esac
done
grep -q "mounted '$T/img.sqfs'" "$T/daemon.log" || fail "the log does not say it mounted"
expect_fail "mount again" "already a mount point" "$SQUASHCACHED" "$T/img.sqfs" "$T/m"

note "writes get EROFS"
for op in "touch $T/m/new" "mkdir $T/m/newdir" "rm -f $T/m/big" \
    "chmod 600 $T/m/big" "ln -s x $T/m/ln" "mv $T/m/big $T/m/big2" \
    "setfattr -n user.x -v 1 $T/m/big" "truncate -s 0 $T/m/big"; do
    # shellcheck disable=SC2086
    if $op 2>"$T/err"; then
        fail "'$op' succeeded on a read-only mount"
    fi
    grep -q "Read-only file system" "$T/err" || {
        cat "$T/err"
        fail "'$op' did not fail with EROFS"
    }
done
if sh -c "echo x >> '$T/m/dir/hello'" 2>"$T/err"; then
    fail "append succeeded"
fi
grep -q "Read-only file system" "$T/err" || fail "append: $(cat "$T/err")"

note "SIGTERM unmounts cleanly"
kill -TERM "$pid"
wait_gone "$pid" 5 "daemon (SIGTERM)"
is_mounted "$T/m" && fail "mount left behind after SIGTERM"
grep -q "unmounting" "$T/daemon.log" || fail "the log does not say it unmounted"

note "SIGINT in the foreground"
sqc_mount_fg "$T/img.sqfs" "$T/m"
kill -INT "$SQC_PID"
wait "$SQC_PID" || fail "foreground daemon exited with $? after SIGINT"
is_mounted "$T/m" && fail "mount left behind after SIGINT"

note "SIGTERM with reads in flight"
sqc_mount "$T/img.sqfs" "$T/m" -o log="$T/daemon.log"
pid=$(sqc_pid "$T/m")
for _ in 1 2 3 4; do
    (while cat "$T/m/big" >/dev/null 2>&1; do :; done) &
done
# The readers are reading: the daemon has served a whole copy of big.
wait_stat "$T/m" fuse.bytes_served 3000000 10 "the readers read nothing"
kill -TERM "$pid"
wait_gone "$pid" 10 "daemon (SIGTERM under load)"
wait # the readers stop once the mount is gone
is_mounted "$T/m" && fail "mount left behind"
grep -qi "error" "$T/daemon.log" && { cat "$T/daemon.log"; fail "errors logged"; }

note "umount by fusermount3 ends the daemon"
sqc_mount "$T/img.sqfs" "$T/m"
sqc_umount "$T/m"
echo "all daemon CLI checks passed"

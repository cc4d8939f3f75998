#!/bin/sh
# The systemd unit squashcache@.service: systemd-analyze verify accepts it,
# and its helper (systemd/squashcache-dataset) behaves as the unit needs:
# the daemon is the main pid, says READY=1 with its MAINPID on
# $NOTIFY_SOCKET only once the mount answers, STOPPING=1 on SIGTERM and
# unmounts; after a kill -9 the ExecStartPre cleaner clears the stale mount
# and a new start mounts again.
# TIMEOUT: 120
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs "$PYTHON"

# The helper where the unit can name it: a path with spaces (the
# checkout's may have them) cannot be an ExecStart= command.
mkdir -p "$T/libexec"
cp "$TOP/systemd/squashcache-dataset" "$T/libexec/"
WRAPPER="$T/libexec/squashcache-dataset"

note "systemd-analyze verify"
if command -v systemd-analyze >/dev/null 2>&1; then
    mkdir -p "$T/units"
    # The installed paths do not exist here: point them at the copy.
    sed "s|/usr/local/libexec/squashcache/|$T/libexec/|" \
        "$TOP/systemd/squashcache@.service" >"$T/units/squashcache@.service"
    # --man=no: the man page need not be installed for the check.
    systemd-analyze verify --man=no "$T/units/squashcache@.service" >"$T/verify.out" 2>&1 || {
        cat "$T/verify.out"
        fail "systemd-analyze verify rejects the unit"
    }
    if grep -q 'squashcache@' "$T/verify.out"; then
        cat "$T/verify.out"
        fail "systemd-analyze verify warns about the unit"
    fi
else
    echo "systemd-analyze is not installed: unit not verified (the rest runs)"
fi

mkdir -p "$T/src/dir"
head -c 2000000 /dev/urandom >"$T/src/big"
echo hello >"$T/src/dir/hello"
mkimg "$T/src" "$T/img.sqfs" -comp zstd

mkdir -p "$T/datasets"
cat >"$T/datasets/t.conf" <<CONF
# test dataset
IMAGE="$T/img.sqfs"
MOUNTPOINT=$T/mnt/
OPTIONS=cache=32M
CONF

# A notify socket like systemd's: records each datagram, one line per
# field, and on READY=1 checks that the mount answers at that moment.
cat >"$T/notify.py" <<'PY'
import os, socket, sys
sock, log, probe = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sock)
with open(log, "a") as f:
    while True:
        msg = s.recv(4096).decode()
        for line in msg.split("\n"):
            f.write(line + "\n")
        if "READY=1" in msg.split("\n"):
            try:
                os.stat(probe)
                f.write("PROBE=ok\n")
            except OSError as e:
                f.write("PROBE=%s\n" % e)
        f.flush()
PY
"$PYTHON" "$T/notify.py" "$T/notify.sock" "$T/notify.log" "$T/mnt/dir/hello" &
_pids="$! $_pids"
i=0
until [ -S "$T/notify.sock" ]; do
    i=$((i + 1))
    [ $i -lt 250 ] || fail "the notify receiver did not start"
    sleep 0.02
done
: >"$T/notify.log"

# count KEY=VALUE: how many times the daemon sent that line.
count() {
    grep -c -x "$1" "$T/notify.log" || true
}

# start: run the helper as ExecStart= does; sets PID (the main pid).
start() {
    NOTIFY_SOCKET="$T/notify.sock" SQUASHCACHE_DATASETS_DIR="$T/datasets" \
        SQUASHCACHED="$SQUASHCACHED" "$WRAPPER" start t >>"$T/daemon.log" 2>&1 &
    PID=$!
    _pids="$PID $_pids"
    _mounts="$T/mnt $_mounts"
}

# wait_line LINE N: wait until LINE was sent N times, the daemon alive.
wait_line() {
    i=0
    while [ "$(count "$1")" -lt "$2" ]; do
        kill -0 "$PID" 2>/dev/null || {
            cat "$T/daemon.log" >&2
            fail "the daemon exited before sending $1"
        }
        i=$((i + 1))
        [ $i -lt 1000 ] || fail "no $1 within 20 s"
        sleep 0.02
    done
}

clear_stale() {
    SQUASHCACHE_DATASETS_DIR="$T/datasets" "$WRAPPER" clear t
}

note "start: READY=1 once the mount answers, MAINPID is the daemon"
clear_stale
start
wait_line READY=1 1
[ "$(count PROBE=ok)" -eq 1 ] || {
    cat "$T/notify.log"
    fail "the mount did not answer when READY=1 arrived"
}
[ "$(count "MAINPID=$PID")" -eq 1 ] || {
    cat "$T/notify.log"
    fail "MAINPID is not the started pid $PID"
}
# (The daemon parses -o in place: compare the other arguments only.)
tr '\0' ' ' <"/proc/$PID/cmdline" | grep -q "squashcached -f -o .* $T/img.sqfs $T/mnt " ||
    fail "main pid $PID is not squashcached -f: $(tr '\0' ' ' <"/proc/$PID/cmdline")"
cmp "$T/src/big" "$T/mnt/big" || fail "big differs"
cmp "$T/src/dir/hello" "$T/mnt/dir/hello" || fail "dir/hello differs"

note "SIGTERM: STOPPING=1, unmounted, exit 0"
kill -TERM "$PID"
rc=0
wait "$PID" || rc=$?
[ "$rc" -eq 0 ] || fail "the daemon exited $rc after SIGTERM"
# Sent before the daemon exited; the receiver may log it a moment later.
i=0
until [ "$(count STOPPING=1)" -eq 1 ]; do
    i=$((i + 1))
    [ $i -lt 250 ] || fail "no STOPPING=1 after SIGTERM"
    sleep 0.02
done
is_mounted "$T/mnt" && fail "still mounted after SIGTERM"

note "kill -9: a stale mount, refused by start, cleared by ExecStartPre"
start
wait_line READY=1 2
kill -9 "$PID"
wait "$PID" || true
is_mounted "$T/mnt" || fail "no stale mount after kill -9 (test premise)"
if SQUASHCACHE_DATASETS_DIR="$T/datasets" SQUASHCACHED="$SQUASHCACHED" \
    "$WRAPPER" start t >"$T/out" 2>&1; then
    fail "start over a stale mount succeeded"
fi
grep -q "already mounted" "$T/out" || fail "start over a stale mount says: $(cat "$T/out")"
clear_stale
is_mounted "$T/mnt" && fail "the cleaner left the stale mount"
clear_stale

note "restart: mounts again"
start
wait_line READY=1 3
[ "$(count PROBE=ok)" -eq 3 ] || fail "the mount did not answer at the third READY=1"
cmp "$T/src/big" "$T/mnt/big" || fail "big differs after the restart"
kill -TERM "$PID"
wait "$PID" || fail "the restarted daemon did not exit 0"
is_mounted "$T/mnt" && fail "still mounted after the last SIGTERM"

note "USER=: the helper, run as root, starts the daemon as that user"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    # A user of this run (lib.sh: /dev/fuse by ACL, the daemon a copy it
    # can run, removed at exit).
    u=
    add_test_user u
    chmod 711 "$T"
    # systemd's own notify socket is writable by every user, as this one now.
    chmod 666 "$T/notify.sock"
    mkdir -m 755 "$T/pub"
    cp "$T/img.sqfs" "$T/pub/img.sqfs"
    chmod 644 "$T/pub/img.sqfs"
    printf 'IMAGE=%s\nMOUNTPOINT=%s\nUSER=%s\n' "$T/pub/img.sqfs" "$T/pub/mnt" "$u" >"$T/datasets/u.conf"
    NOTIFY_SOCKET="$T/notify.sock" SQUASHCACHE_DATASETS_DIR="$T/datasets" \
        SQUASHCACHED="$SQUASHCACHED" "$WRAPPER" start u >>"$T/daemon.log" 2>&1 &
    PID=$!
    _pids="$PID $_pids"
    _mounts="$T/pub/mnt $_mounts"
    wait_line READY=1 4
    [ "$(count "MAINPID=$PID")" -eq 1 ] || fail "USER=: MAINPID is not the started pid $PID"
    [ "$(stat -c %U "/proc/$PID")" = "$u" ] || fail "USER=$u: the daemon runs as $(stat -c %U "/proc/$PID")"
    grep " $T/pub/mnt " /proc/self/mounts | grep -q "user_id=$(id -u "$u")," ||
        fail "USER=$u: the mount is not $u's: $(grep " $T/pub/mnt " /proc/self/mounts)"
    # Private to its user by default (no allow_other): only it reads it.
    as "$u" cmp "$T/src/dir/hello" "$T/pub/mnt/dir/hello" ||
        fail "USER=$u: the user cannot read its mount"
    kill -TERM "$PID"
    wait "$PID" || fail "USER=$u: the daemon did not exit 0 on SIGTERM"
    is_mounted "$T/pub/mnt" && fail "USER=$u: still mounted after SIGTERM"
    # Root makes MOUNTPOINT and hands it to USER=: never through a path
    # a user could swap (a symlink to /etc, a directory of the user's, one
    # any user may write to), and nothing is made or handed over then.
    mkdir -m 755 "$T/upub"
    chown "$u" "$T/upub"
    mkdir -m 777 "$T/open"
    ln -s /etc "$T/pub/etc"
    for bad in "$T/upub/mnt:$T/upub is not root's" \
        "$T/open/mnt:$T/open may be written to by others" \
        "$T/pub/etc:$T/pub/etc is a symlink" "$T/pub/etc/sqcmnt:$T/pub/etc is a symlink"; do
        mp=${bad%%:*}
        printf 'IMAGE=%s\nMOUNTPOINT=%s\nUSER=%s\n' "$T/pub/img.sqfs" "$mp" "$u" >"$T/datasets/bad.conf"
        SQUASHCACHE_DATASETS_DIR="$T/datasets" SQUASHCACHED="$SQUASHCACHED" \
            "$WRAPPER" start bad >"$T/out" 2>&1 && fail "USER=: MOUNTPOINT=$mp accepted"
        grep -qF "${bad#*:}: root will not" "$T/out" || fail "USER=: MOUNTPOINT=$mp says: $(cat "$T/out")"
        SQUASHCACHE_DATASETS_DIR="$T/datasets" "$WRAPPER" clear bad >"$T/out" 2>&1 &&
            fail "USER=: clear of MOUNTPOINT=$mp accepted"
    done
    for mp in "$T/upub/mnt" "$T/open/mnt" /etc/sqcmnt; do
        [ ! -e "$mp" ] || fail "USER=: MOUNTPOINT=$mp was refused but made all the same"
    done
    [ "$(stat -c %U /etc)" = root ] || fail "USER=: /etc was handed over"
    if ! grep -q '^[[:space:]]*user_allow_other' /etc/fuse.conf 2>/dev/null; then
        echo OPTIONS=allow_other >>"$T/datasets/u.conf"
        SQUASHCACHE_DATASETS_DIR="$T/datasets" SQUASHCACHED="$SQUASHCACHED" \
            "$WRAPPER" start u >"$T/out" 2>&1 && fail "allow_other without user_allow_other accepted"
        grep -q "needs user_allow_other in /etc/fuse.conf" "$T/out" ||
            fail "allow_other without user_allow_other says: $(cat "$T/out")"
    fi
else
    echo "not root or no setpriv: USER= not tested"
fi

note "bad configuration: clear errors"
SQUASHCACHE_DATASETS_DIR="$T/datasets" "$WRAPPER" start nosuch >"$T/out" 2>&1 && fail "missing conf accepted"
grep -q "nosuch.conf: missing" "$T/out" || fail "missing conf says: $(cat "$T/out")"
"$WRAPPER" start ../t >"$T/out" 2>&1 && fail "name with / accepted"
grep -q "bad dataset name" "$T/out" || fail "bad name says: $(cat "$T/out")"
echo "IMAGE=$T/img.sqfs" >"$T/datasets/rel.conf"
echo "MOUNTPOINT=mnt" >>"$T/datasets/rel.conf"
SQUASHCACHE_DATASETS_DIR="$T/datasets" "$WRAPPER" start rel >"$T/out" 2>&1 && fail "relative MOUNTPOINT accepted"
grep -q "must be an absolute path" "$T/out" || fail "relative MOUNTPOINT says: $(cat "$T/out")"
echo PASS

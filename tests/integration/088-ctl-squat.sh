#!/bin/sh
# Nothing to squat (issue #19, item 5): another user who binds a mount's
# default control address (an abstract socket name, which has no
# permissions) first can neither stop the mount nor pose as its daemon.
# The daemon falls back to a random address at once and says so; every
# mountctl verb finds it there (status, stage, wait, umount, acquire,
# release); nothing is ever sent to the squatter; and once the daemon is
# gone the mount reads as stale, squatter or not.  Covers a squatter that
# listens and one that only binds.
# TIMEOUT: 120
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs
need_test_users

owner=$TU_A
squatter=$TU_B
squatter_uid=$(id -u $squatter)
mkdir -p "$T/src/d"
head -c 2000000 /dev/urandom >"$T/src/d/big"
echo small >"$T/src/small"
mkimg "$T/src" "$T/img.sqfs" -comp lz4
chmod 644 "$T/img.sqfs"
mkdir -m 755 "$T/home" "$T/sq"
chown $owner "$T/home"
chown $squatter "$T/sq"
mnt="$T/home/m"
held="$T/home/h"

# mount_as_owner [squashcached args...]: mount the image at $mnt as the
# owner, the daemon's early stderr in $T/mount.err; sets took (seconds).
mount_as_owner() {
    mkdir -p "$mnt"
    chown $owner "$mnt"
    _mounts="$mnt $_mounts"
    _t0=$(date +%s.%N)
    as $owner "$SQUASHCACHED" "$@" "$T/img.sqfs" "$mnt" 2>"$T/mount.err" ||
        fail "the owner cannot mount: $(cat "$T/mount.err")"
    took=$(awk -v a="$_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    is_mounted "$mnt" || fail "squashcached returned 0 but $mnt is not mounted"
}

# daemon_pid: the pid of $mnt's daemon, from mountctl status --json.
daemon_pid() {
    as $owner "$MOUNTCTL" status --json "$mnt" |
        "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)[0]["pid"])'
}

# default_address MOUNTPOINT: "@squashcache-<hash>", as the daemon makes it.
default_address() {
    "$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); import sqc_stats; print(sqc_stats.default_address(sys.argv[2]))' \
        "$TOP/tests/py" "$1"
}

# fallbacks_of MOUNTPOINT: how many listening sockets have its fallback
# names (the default address, '-' and 16 hex digits).
fallbacks_of() {
    "$PYTHON" - "$TOP/tests/py" "$1" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import sqc_stats
prefix = sqc_stats.default_address(sys.argv[2]) + "-"
n = 0
with open("/proc/net/unix") as f:
    next(f)
    for line in f:
        fields = line.split()
        if len(fields) == 8 and int(fields[3], 16) & 0x10000 and fields[7].startswith(prefix):
            n += 1
print(n)
EOF
}

# The squatter: binds each NAME; with "listen", listens and accepts,
# writing whatever a client sends to $T/sq/got.
cat >"$T/squat.py" <<'EOF'
import os, signal, socket, sys, threading
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
mode, ready, log = sys.argv[1:4]
socks = []
for name in sys.argv[4:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + name[1:])
    if mode == "listen":
        s.listen(16)
    socks.append(s)

def serve(s):
    while True:
        c, _ = s.accept()
        c.settimeout(1)
        try:
            data = c.recv(4096)
        except OSError:
            data = b""
        if data:
            with open(log, "ab") as f:
                f.write(data)
        c.close()

if mode == "listen":
    for s in socks:
        threading.Thread(target=serve, args=(s,), daemon=True).start()
with open(ready + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(ready + ".tmp", ready)
threading.Event().wait()
EOF

# start_squatter listen|bind NAME...: the squatter holds the names.
start_squatter() {
    _sq_mode=$1
    shift
    rm -f "$T/sq/pid"
    # In a subshell: the shell need not report its end.
    (as $squatter "$PYTHON" "$T/squat.py" "$_sq_mode" "$T/sq/pid" "$T/sq/got" "$@" &)
    _i=0
    while ! [ -s "$T/sq/pid" ]; do
        _i=$((_i + 1))
        [ $_i -lt 250 ] || fail "the squatter did not start"
        sleep 0.02
    done
    squat_pid=$(cat "$T/sq/pid")
    _pids="$squat_pid $_pids"
}

stop_squatter() {
    kill "$squat_pid"
    wait_gone "$squat_pid" 5 "the squatter"
}

note "the default address, from a first mount's log"
mount_as_owner -o log="$T/home/log"
# A mount with the address taken must not wait on the squatter (whose
# socket gets a connect and nothing more): it may take as long as this
# one plus 1.5 s, and 3 s in any case, so that a machine busy with
# other work slows both alike.
bound=$(awk -v t="$took" 'BEGIN { b = t + 1.5; printf "%.2f", b < 3 ? 3 : b }')
addr=$(sed -n "s/.*control socket \(@squashcache-[0-9a-f]*\)\$/\1/p" "$T/home/log")
[ -n "$addr" ] || fail "no control socket in the log: $(cat "$T/home/log")"
[ "$addr" = "$(default_address "$mnt")" ] || fail "the log's address $addr is not the computed one"
haddr=$(default_address "$held")
as $owner "$MOUNTCTL" umount "$mnt" || fail "umount failed"

note "another user listens at the default address: the mount falls back at once"
: >"$T/sq/got"
chmod 666 "$T/sq/got"
start_squatter listen "$addr" "$haddr"
mount_as_owner -o stage=none
awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t < b) }' ||
    fail "mounting took $took s with the address taken (bound $bound s)"
grep -q "control address '$addr' is taken by uid $squatter_uid: listening on '$addr-[0-9a-f]\{16\}'" "$T/mount.err" ||
    fail "no line says the address is taken: $(cat "$T/mount.err")"
note "$(cat "$T/mount.err")"
[ "$(fallbacks_of "$mnt")" = 1 ] || fail "no daemon listens at a fallback address"
as $owner cmp "$T/src/d/big" "$mnt/d/big" || fail "wrong bytes through the mount"

note "mountctl finds it: status, stage, wait"
as $owner "$MOUNTCTL" status "$mnt" >"$T/status" 2>&1 || fail "status failed: $(cat "$T/status")"
"$MOUNTCTL" status "$mnt" >/dev/null 2>"$T/err" || fail "root's status failed: $(cat "$T/err")"
as $owner "$MOUNTCTL" status --json "$mnt" | "$PYTHON" -c "
import json, sys
s = json.load(sys.stdin)[0]
assert s['healthy'] is True and s['mountpoint'] == '$mnt', s" || fail "status --json is not healthy"
pid=$(daemon_pid)
as $owner "$MOUNTCTL" stage --wait --timeout 30 "$mnt" 2>"$T/err" || fail "stage failed: $(cat "$T/err")"
as $owner "$MOUNTCTL" wait --timeout 30 "$mnt" 2>"$T/err" || fail "wait failed: $(cat "$T/err")"
[ ! -s "$T/sq/got" ] || fail "a client sent the squatter: $(cat "$T/sq/got")"

note "mountctl umount stops it and leaves nothing"
as $owner "$MOUNTCTL" umount "$mnt" 2>"$T/err" || fail "umount failed: $(cat "$T/err")"
is_mounted "$mnt" && fail "still mounted"
wait_gone "$pid" 5 "the daemon"
[ "$(fallbacks_of "$mnt")" = 0 ] || fail "a fallback address is left"

note "acquire and release through the fallback"
mkdir -p "$held"
chown $owner "$held"
_mounts="$held $_mounts"
as $owner sh -c "sleep 600 & echo \$! >'$T/home/hpid'
    '$MOUNTCTL' acquire --pid \$! '$T/img.sqfs' '$held' >/dev/null" 2>"$T/err" ||
    fail "acquire failed: $(cat "$T/err")"
hpid=$(cat "$T/home/hpid")
_pids="$hpid $_pids"
[ "$(fallbacks_of "$held")" = 1 ] || fail "the held mount is not at a fallback address"
as $owner sh -c "sleep 600 & echo \$! >'$T/home/hpid2'
    '$MOUNTCTL' acquire --pid \$! '$T/img.sqfs' '$held' >/dev/null" 2>"$T/err" ||
    fail "joining failed: $(cat "$T/err")"
hpid2=$(cat "$T/home/hpid2")
_pids="$hpid2 $_pids"
[ "$(grep -c " $held fuse" /proc/self/mounts)" = 1 ] || fail "joining mounted again"
as $owner "$MOUNTCTL" release --pid "$hpid" "$held" || fail "release failed"
as $owner "$MOUNTCTL" release --pid "$hpid2" "$held" || fail "the last release failed"
_i=0
while is_mounted "$held"; do
    _i=$((_i + 1))
    [ $_i -lt 250 ] || fail "still mounted after the last release"
    sleep 0.02
done
[ ! -s "$T/sq/got" ] || fail "a client sent the squatter: $(cat "$T/sq/got")"

note "a daemon gone: the mount is stale, though the squatter answers"
mount_as_owner
pid=$(daemon_pid)
kill -9 "$pid"
wait_gone "$pid" 5 "the killed daemon"
rc=0
as $owner "$MOUNTCTL" status "$mnt" >"$T/status" 2>&1 || rc=$?
[ $rc = 1 ] || fail "status of a stale mount exited $rc"
grep -q "stale" "$T/status" || fail "status does not say stale: $(cat "$T/status")"
as $owner "$MOUNTCTL" umount "$mnt" 2>"$T/err" || fail "umount of the stale mount failed: $(cat "$T/err")"
is_mounted "$mnt" && fail "the stale mount is still there"
stop_squatter

note "a squatter that binds and does not listen"
start_squatter bind "$addr"
mount_as_owner
awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t < b) }' ||
    fail "mounting took $took s with the address bound (bound $bound s)"
grep -q "control address '$addr' is taken by a socket that does not answer" "$T/mount.err" ||
    fail "no line says the address is taken: $(cat "$T/mount.err")"
as $owner "$MOUNTCTL" status "$mnt" >/dev/null 2>"$T/err" || fail "status failed: $(cat "$T/err")"
pid=$(daemon_pid)
as $owner "$MOUNTCTL" umount "$mnt" 2>"$T/err" || fail "umount failed: $(cat "$T/err")"
wait_gone "$pid" 5 "the daemon"
stop_squatter
echo "nothing to squat"

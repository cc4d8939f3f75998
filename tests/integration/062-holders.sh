#!/bin/sh
# mountctl acquire/release: processes share one mount, which goes away
# after the last holder released it or died.  Covers the default mount
# point, the status --json contract (healthy and stale), another image at
# the mount point (exit 3), a missing image (exit 4), --grace, a holder
# killed with SIGKILL, the default holder when a wrapper (timeout) forks
# mountctl, a daemon killed with SIGKILL under holders, 64
# processes acquiring and releasing at random at once (every one checking
# bytes; never two mounts; none afterwards), and a second user who may
# neither join nor release another user's mount.
# TIMEOUT: 240
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs

mkdir -p "$T/src/d" "$T/other"
head -c 1000000 /dev/urandom >"$T/src/d/big"
echo small >"$T/src/small"
echo other >"$T/other/file"
mkimg "$T/src" "$T/data.sqfs" -comp lz4
mkimg "$T/other" "$T/other.sqfs"
export SQUASHCACHE_BASE="$T/base"
MC=$MOUNTCTL

# mounts_at PATH -> how many mounts /proc/self/mounts has at PATH
mounts_at() {
    grep -c " $1 fuse" /proc/self/mounts || true
}

# wait_unmounted PATH SECONDS
wait_unmounted() {
    _i=0
    while [ "$(mounts_at "$1")" != 0 ]; do
        _i=$((_i + 1))
        [ $_i -le $(($2 * 10)) ] || fail "$1 still mounted after $2 s"
        sleep 0.1
    done
}

# A holder process that lives until killed.
start_holder() {
    sleep 600 &
    _holder=$!
    _pids="$_pids $_holder"
}

note "default mount point, printed alone on stdout"
start_holder
out=$("$MC" acquire --pid $_holder "$T/data.sqfs") || fail "acquire failed"
mnt="$T/base/data"
[ "$out" = "$mnt" ] || fail "acquire printed '$out', expected '$mnt'"
_mounts="$mnt $_mounts"
[ "$(stat -c %a "$T/base")" = 700 ] || fail "base is not 0700"
cmp "$T/src/d/big" "$mnt/d/big" || fail "wrong bytes through the mount"
h1=$_holder

note "a second holder joins; status shows both"
start_holder
h2=$_holder
out=$("$MC" acquire --pid $h2 "$T/data.sqfs" "$mnt") || fail "join failed"
[ "$out" = "$mnt" ] || fail "join printed '$out'"
[ "$(mounts_at "$mnt")" = 1 ] || fail "join mounted a second time"
"$MC" status "$mnt" >"$T/status" || fail "status failed"
grep -q "^holders .*2: pids .*$h1" "$T/status" || fail "status lacks the holders: $(cat "$T/status")"
"$MC" status --json "$mnt" >"$T/json" || fail "status --json failed"
"$PYTHON" - "$T/json" "$mnt" "$T/data.sqfs" "$h1" "$h2" <<'EOF' || fail "status --json contract (healthy)"
import json, os, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d, list) and len(d) == 1, d
s = d[0]
for k in ("schema", "mountpoint", "image", "pid", "healthy", "image_bytes",
          "staged_bytes", "holders"):
    assert k in s, k
assert s["schema"] == 1 and s["healthy"] is True, s
assert s["mountpoint"] == sys.argv[2] and s["image"] == sys.argv[3], s
assert sorted(s["holders"]) == sorted([int(sys.argv[4]), int(sys.argv[5])]), s["holders"]
assert s["image_bytes"] > 0 and 0 <= s["staged_bytes"] <= s["image_bytes"], s
assert isinstance(s["pid"], int) and os.path.exists("/proc/%d" % s["pid"]), s
assert "cache" in s and "stage" in s, "the detailed objects are gone"
EOF

note "another image at the mount point: exit 3; a missing image: exit 4"
rc=0
"$MC" acquire --pid $h2 "$T/other.sqfs" "$mnt" 2>"$T/err" || rc=$?
[ $rc = 3 ] || fail "another image: exit $rc, expected 3"
grep -q "another image" "$T/err" || fail "no clear message: $(cat "$T/err")"
rc=0
"$MC" acquire "$T/missing.sqfs" "$T/m-missing" 2>"$T/err" || rc=$?
[ $rc = 4 ] || fail "missing image: exit $rc, expected 4"
rc=0
head -c 8192 /dev/urandom >"$T/junk.sqfs"
"$MC" acquire "$T/junk.sqfs" "$T/m-junk" 2>"$T/err" || rc=$?
[ $rc = 4 ] || fail "not an image: exit $rc, expected 4 ($(cat "$T/err"))"

note "release, then a holder killed with SIGKILL: the mount goes"
"$MC" release --pid $h1 "$mnt" || fail "release failed"
rc=0
"$MC" release --pid $h1 "$mnt" 2>"$T/err" || rc=$?
[ $rc = 1 ] && grep -q "not a holder" "$T/err" || fail "a second release: exit $rc, $(cat "$T/err")"
[ "$(mounts_at "$mnt")" = 1 ] || fail "unmounted while a holder lives"
dpid=$(stat_of "$mnt" pid)
kill -9 $h2
wait_unmounted "$mnt" 10
wait_gone "$dpid" 10 "daemon after its last holder died"

note "--grace keeps the mount after the last holder"
start_holder
"$MC" acquire --pid $_holder --grace 2 "$T/data.sqfs" >/dev/null || fail "acquire --grace"
# The daemon counts the grace from when it sees the holder gone, after
# the kill: the mount must outlive t0 by 2 s, however late it goes.
t0=$(now_ms)
kill -9 $_holder
wait_unmounted "$mnt" 15
gone=$(($(now_ms) - t0))
[ "$gone" -ge 2000 ] || fail "unmounted $gone ms after the last holder died, within its grace of 2 s"
note "unmounted $gone ms after the last holder died (grace 2 s)"

note "timeout 60 mountctl acquire: the shell that ran it holds the mount, not timeout"
# A shell that stays alive runs acquire and release through timeout, which
# forks them and exits with them: the holder must outlive timeout.
( timeout 60 "$MC" acquire "$T/data.sqfs" >"$T/out" 2>"$T/err"
  echo $? >"$T/rc"
  while [ ! -f "$T/go" ]; do sleep 0.1; done
  timeout 60 "$MC" release "$mnt" 2>"$T/err2"
  echo $? >"$T/rc2"
  exec sleep 600 ) &
sh_pid=$!
_pids="$_pids $sh_pid"
k=0
until [ -s "$T/rc" ]; do
    k=$((k + 1))
    [ $k -le 600 ] || fail "timeout 60 mountctl acquire did not return"
    sleep 0.1
done
[ "$(cat "$T/rc")" = 0 ] || fail "timeout 60 mountctl acquire: exit $(cat "$T/rc"): $(cat "$T/err")"
[ "$(cat "$T/out")" = "$mnt" ] || fail "timeout 60 mountctl acquire printed '$(cat "$T/out")'"
# timeout has exited (acquire returned through it): the one holder the
# daemon ever had is the shell, so timeout's exit cannot end the mount.
grep -q "held by pid $sh_pid (" "$T/err" || fail "the holder was not named: $(cat "$T/err")"
[ "$(stat_of "$mnt" holders)" = "[$sh_pid]" ] || fail "holders: $(stat_of "$mnt" holders), expected [$sh_pid]"
[ "$(stat_of "$mnt" holder_stats.added)" = 1 ] ||
    fail "$(stat_of "$mnt" holder_stats.added) holders were added, not the shell alone"
[ "$(mounts_at "$mnt")" = 1 ] || fail "the mount went with timeout: $(cat "$T/err")"
touch "$T/go"
k=0
until [ -s "$T/rc2" ]; do
    k=$((k + 1))
    [ $k -le 600 ] || fail "timeout 60 mountctl release did not return"
    sleep 0.1
done
[ "$(cat "$T/rc2")" = 0 ] || fail "timeout 60 mountctl release: exit $(cat "$T/rc2"): $(cat "$T/err2")"
wait_unmounted "$mnt" 10
kill -9 $sh_pid

note "the daemon killed with SIGKILL under holders: the next acquire mounts again"
start_holder
"$MC" acquire --pid $_holder "$T/data.sqfs" >/dev/null || fail "acquire"
dpid=$(stat_of "$mnt" pid)
kill -9 "$dpid"
wait_gone "$dpid" 10 "daemon (SIGKILL)"
"$MC" status --json "$mnt" >"$T/json" && fail "status of a stale mount exited 0"
"$PYTHON" - "$T/json" "$mnt" <<'EOF' || fail "status --json contract (stale)"
import json, sys
s = json.load(open(sys.argv[1]))[0]
for k in ("schema", "mountpoint", "image", "pid", "healthy", "problem",
          "image_bytes", "staged_bytes", "holders"):
    assert k in s, k
assert s["healthy"] is False and s["problem"], s
assert s["mountpoint"] == sys.argv[2], s
EOF
start_holder
"$MC" acquire --pid $_holder "$T/data.sqfs" >/dev/null 2>"$T/err" || fail "acquire after a daemon was killed: $(cat "$T/err")"
grep -q stale "$T/err" || fail "the stale mount was not reported"
cmp "$T/src/d/big" "$mnt/d/big" || fail "wrong bytes after mounting again"
[ "$(mounts_at "$mnt")" = 1 ] || fail "$(mounts_at "$mnt") mounts after clearing the stale one"
kill -9 $_holder
wait_unmounted "$mnt" 10

note "64 processes acquire and release at random at once"
cat >"$T/worker.sh" <<'EOF'
# worker N: acquire, read, release, three times, as its own holder
i=0
while [ $i -lt 3 ]; do
    m=$("$MOUNTCTL" acquire --pid $$ "$IMG") || { echo "acquire $?" >>"$ERRS"; exit 1; }
    cmp -s "$SRC/d/big" "$m/d/big" || { echo "bytes $1" >>"$ERRS"; exit 1; }
    sleep "0.0$(($$ % 10))"
    "$MOUNTCTL" release --pid $$ "$m" || { echo "release $?" >>"$ERRS"; exit 1; }
    echo "$1" >>"$ERRS.ok"
    i=$((i + 1))
done
EOF
export IMG="$T/data.sqfs" SRC="$T/src" ERRS="$T/errors" MOUNTCTL
: >"$T/errors"
: >"$T/errors.ok"
( while [ ! -f "$T/done" ]; do
    n=$(mounts_at "$mnt")
    [ "$n" -le 1 ] || echo "$n mounts at once" >>"$T/errors"
    sleep 0.01
  done ) &
watcher=$!
workers=""
n=0
while [ $n -lt 64 ]; do
    sh "$T/worker.sh" $n &
    workers="$workers $!"
    n=$((n + 1))
done
for w in $workers; do
    wait "$w" || true
done
touch "$T/done"
wait $watcher
[ ! -s "$T/errors" ] || fail "race: $(sort "$T/errors" | uniq -c | head)"
[ "$(wc -l <"$T/errors.ok")" = 192 ] || fail "race: $(wc -l <"$T/errors.ok") of 192 rounds done"
wait_unmounted "$mnt" 10
# The mount goes first; the daemon then frees its caches and exits (slow
# under ASan, which checks for leaks at exit): give it 10 s.
k=0
while pgrep -f "squashcached.*$mnt" >/dev/null; do
    k=$((k + 1))
    [ $k -le 100 ] || fail "a daemon is left after the race"
    sleep 0.1
done

if [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null &&
    command -v setpriv >/dev/null; then
    note "a second user may neither join nor release another user's mount"
    need_test_users
    ua=$TU_A
    ub=$TU_B
    MC=$MOUNTCTL # the copy they can run
    chmod 644 "$T/data.sqfs"
    mkdir -m 755 "$T/shared"
    chown $ua "$T/shared"
    umnt="$T/shared/m"
    as $ua sh -c "sleep 600 & echo \$! >'$T/shared/hpid'
        SQUASHCACHE_BASE='$T/shared' '$MC' acquire --pid \$! '$T/data.sqfs' '$umnt' >/dev/null" ||
        fail "$ua cannot acquire"
    _mounts="$umnt $_mounts"
    ah=$(cat "$T/shared/hpid")
    _pids="$_pids $ah"
    rc=0
    as $ub sh -c "sleep 60 & '$MC' acquire --pid \$! '$T/data.sqfs' '$umnt'" \
        >/dev/null 2>"$T/err" || rc=$?
    [ $rc != 0 ] || fail "$ub joined $ua's mount"
    rc=0
    as $ub "$MC" release --pid "$ah" "$umnt" 2>"$T/err" || rc=$?
    [ $rc != 0 ] || fail "$ub released $ua's holder"
    as $ua cmp "$T/src/d/big" "$umnt/d/big" || fail "$ua's mount was disturbed"
    as $ua "$MC" status --json "$umnt" | "$PYTHON" -c "
import json, sys
s = json.load(sys.stdin)[0]
assert s['holders'] == [$ah], s['holders']" || fail "$ua's holders changed"
    kill -9 "$ah"
    wait_unmounted "$umnt" 10
else
    note "SKIP part: a second user needs root, useradd and setpriv"
fi
echo "ok"

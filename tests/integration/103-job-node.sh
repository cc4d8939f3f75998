#!/bin/sh
# mountctl job without Slurm: prolog, env and epilog by hand for a user,
# the layout's owners and modes, a storage that never answers failing the
# mount within timeout= and leaving nothing, and check-node finding a
# stale mount (daemon killed) and an orphan daemon (mount gone), cleaning
# both with --clean; keep=: the prolog starts the keeper, check-node lists
# kept copies and --clean drops an orphaned one (its uid no user).
# This node has no Slurm: the test runs in a mount namespace of its own
# without the machine's cgroup hierarchies, where mountctl job finds no
# cgroup of Slurm's (a slurm_n1 or slurm of a real or left-over slurmd
# would have it wait for the job's extern step).
# TIMEOUT: 120
# ALONE: a user's process waits in execve() for a while: /proc/PID/stat of it (ps, pgrep, any scan for daemons) waits meanwhile, machine-wide
if [ -z "${SQC_103_NS:-}" ] && [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null 2>&1; then
    SQC_103_NS=1 exec unshare -m --propagation private sh "$0" "$@"
fi
if [ -n "${SQC_103_NS:-}" ]; then
    awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts | sort -r |
        while IFS= read -r m; do umount -l "$m"; done
fi
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs useradd runuser setpriv bash unshare
grep -q ' cgroup2* ' /proc/self/mounts && fail "cgroup hierarchies are still mounted"

u= # add_test_user sets it
add_test_user u
uid=$(id -u $u)
gid=$(id -g $u)
chmod 755 "$T"
mkdir -p "$T/src/d" "$T/base"
chmod 1777 "$T/base"
echo hello >"$T/src/d/f"
mkimg "$T/src" "$T/img.sqfs"
chmod 644 "$T/img.sqfs"
at_exit 'for m in $(grep -o " $T/[^ ]*" /proc/self/mounts); do umount -l "$m" 2>/dev/null; done'

job() {
    "$MOUNTCTL" job --set base="$T/base" --uid "$uid" --gid "$gid" --node n1 "$@"
}
top="$T/base/squashcache"

note "prolog, env, epilog"
job --job 1 --datasets "$T/img.sqfs,$T/img.sqfs:ram=1M" prolog
[ "$(stat -c '%U %a' "$top")" = "root 755" ] || fail "$top: $(stat -c '%U %a' "$top")"
[ "$(stat -c '%U %a' "$top/job1-n1")" = "root 711" ] || fail "job dir: $(stat -c '%U %a' "$top/job1-n1")"
[ "$(stat -c '%U %a' "$top/job1-n1/.daemons")" = "root 600" ] || fail ".daemons is not root's 0600"
[ "$(stat -c '%U %a' "$top/job1-n1/.mounts")" = "$u 400" ] || fail ".mounts is not the user's 0400"
env=$(runuser -u $u -- "$MOUNTCTL" job --set base="$T/base" --job 1 --node n1 env) ||
    fail "env failed: $env"
echo "$env" | grep -qx "SQUASHCACHE_MOUNT=$top/job1-n1/img" || fail "env: $env"
echo "$env" | grep -qx "SQUASHCACHE_MOUNT_IMG_2=$top/job1-n1/img-2" || fail "env: $env"
[ "$(runuser -u $u -- cat "$top/job1-n1/img-2/d/f")" = hello ] || fail "the user cannot read the mount"
job --job 1 check-node >"$T/node.out" || fail "check-node on a healthy node: $(cat "$T/node.out")"
job --job 1 epilog
[ ! -e "$top/job1-n1" ] || fail "the epilog left $(ls -a "$top/job1-n1")"
grep -q " $top/" /proc/self/mounts && fail "the epilog left a mount"

note "a job without a dataset: the epilog has nothing to do"
job --job 2 epilog
[ -z "$(ls "$top")" ] || fail "an epilog of a job without a dataset made $(ls "$top")"

note "storage that never answers: the mount fails within timeout="
# The user's own FUSE mount (root could not read it), whose reads block.
mkdir -p "$T/ff"
chown $u "$T/ff"
runuser -u $u -- env FAULTFS_BLOCK=1 "$TOOLS/faultfs" "$T/img.sqfs" "$T/ff" "$T/nofail" 2>"$T/faultfs.log" &
ff=$!
at_exit "kill $ff 2>/dev/null; sleep 0.2; umount -l $T/ff 2>/dev/null"
i=0
until is_mounted "$T/ff"; do
    i=$((i + 1))
    [ $i -lt 250 ] || fail "faultfs did not mount"
    sleep 0.02
done
t0=$(date +%s)
job --job 3 --set timeout=3 --datasets "$T/ff/image" prolog 2>"$T/slow.err" || true
t1=$(date +%s)
[ $((t1 - t0)) -le 8 ] || fail "the prolog took $((t1 - t0)) s with timeout=3"
msg=$(runuser -u $u -- "$MOUNTCTL" job --set base="$T/base" --job 3 --node n1 env 2>&1) &&
    fail "env succeeded for a mount that timed out"
echo "$msg" | grep -q "not mounted within 3 s" || fail "no timeout message: $msg"
note "timed out in $((t1 - t0)) s: $msg"
job --job 3 epilog
[ ! -e "$top/job3-n1" ] || fail "the epilog left job 3"

note "check-node: a stale mount and an orphan daemon"
job --job 4 --datasets "$T/img.sqfs,$T/img.sqfs" prolog
p1=$(awk '$1 == "img" { print $2 }' "$top/job4-n1/.daemons")
p2=$(awk '$1 == "img-2" { print $2 }' "$top/job4-n1/.daemons")
kill -9 "$p1"
# Stale once it is gone (its threads too: the last closes /dev/fuse).
wait_gone "$p1" 5 "the killed daemon"
kill -STOP "$p2"
at_exit "kill -9 $p2 2>/dev/null"
umount -l "$top/job4-n1/img-2"
if job --min-age 0 check-node >"$T/node.out"; then
    fail "check-node found nothing: $(cat "$T/node.out")"
fi
grep -q "^stale mount $top/job4-n1/img of" "$T/node.out" || fail "no stale mount: $(cat "$T/node.out")"
grep -q "^orphan daemon $p2 of $top/job4-n1/img-2" "$T/node.out" || fail "no orphan: $(cat "$T/node.out")"
# A daemon younger than --min-age is still mounting: not an orphan.
job --min-age 3600 check-node >"$T/node.out" || true
grep -q "^orphan" "$T/node.out" && fail "a young daemon counted as an orphan"
# Any user can give a program of theirs the command line of a daemon:
# check-node looks at the executable, not the name, and never kills it.
setpriv --reuid=$uid --regid=$gid --clear-groups bash -c "exec -a squashcached tail -f /dev/null $top/job4-n1/fake >/dev/null 2>&1" &
fake=$!
at_exit "kill -9 $fake 2>/dev/null"
i=0
until tr '\0' ' ' <"/proc/$fake/cmdline" 2>/dev/null | grep -q "^squashcached "; do
    i=$((i + 1))
    [ $i -lt 250 ] || fail "the fake daemon did not start"
    sleep 0.02
done
job --min-age 0 --clean check-node >"$T/node.out" || fail "check-node --clean left: $(cat "$T/node.out")"
grep "$top/job4-n1/fake" "$T/node.out" && fail "check-node took a program named squashcached for a daemon"
kill -0 "$fake" || fail "check-node --clean killed a user's program named squashcached"
kill -9 "$fake"
job --min-age 0 check-node >"$T/node.out" || fail "after --clean: $(cat "$T/node.out")"
wait_gone "$p2" 5 "the orphan daemon"
grep -q " $top/job4-n1/" /proc/self/mounts && fail "the stale mount is still there"
job --job 4 epilog
[ ! -e "$top/job4-n1" ] || fail "the epilog left job 4"

note "allow= holds for the file mounted: a name swapped after the check"
# The user's directory under an allowed prefix; once the prolog checked
# the image (the test hook pauses there), the user replaces its
# directory with a symlink to an image outside allow=.
mkdir -p "$T/allowed/u/dir" "$T/outside" "$T/src2" "$T/pause"
echo secret >"$T/src2/secret"
mkimg "$T/src2" "$T/outside/img.sqfs"
cp "$T/img.sqfs" "$T/allowed/u/dir/img.sqfs"
chmod 644 "$T/outside/img.sqfs" "$T/allowed/u/dir/img.sqfs"
chown -R $u "$T/allowed/u" "$T/pause"
SQC_TEST_ALLOW_PAUSE="$T/pause/now" job --job 6 --set allow="$T/allowed" \
    --datasets "$T/allowed/u/dir/img.sqfs" prolog 2>"$T/swap.err" &
pro=$!
i=0
until [ -e "$T/pause/now" ]; do
    i=$((i + 1))
    [ $i -lt 500 ] || fail "the prolog did not reach the pause: $(cat "$T/swap.err")"
    sleep 0.02
done
runuser -u $u -- sh -c "mv '$T/allowed/u/dir' '$T/allowed/u/old' && ln -s '$T/outside' '$T/allowed/u/dir'" ||
    fail "cannot swap the directory"
rm "$T/pause/now"
wait $pro || true
runuser -u $u -- test -e "$top/job6-n1/img/secret" && fail "the job mounted an image outside allow="
[ "$(runuser -u $u -- cat "$top/job6-n1/img/d/f")" = hello ] ||
    fail "the image checked is not mounted: $(cat "$T/swap.err")"
job --job 6 epilog
[ ! -e "$top/job6-n1" ] || fail "the epilog left job 6"

# Start a prolog of job $1 that pauses in its mount child (the test hook),
# and kill it there, as slurmd kills a Prolog at PrologEpilogTimeout.
killed_prolog() {
    SQC_TEST_ALLOW_PAUSE="$T/pause/now" "$MOUNTCTL" job --set base="$T/base" --uid "$uid" \
        --gid "$gid" --node n1 --job "$1" --datasets "$T/img.sqfs" prolog 2>/dev/null &
    kp=$!
    i=0
    until [ -e "$T/pause/now" ]; do
        i=$((i + 1))
        [ $i -lt 500 ] || fail "the prolog of job $1 did not reach the pause"
        sleep 0.02
    done
    kill -9 $kp
    wait $kp 2>/dev/null || true
    child=$(pgrep -u "$uid" -f -- "--job $1 ") || fail "no mount child of job $1"
}

note "a prolog killed mid-mount: the epilog kills its mount child"
killed_prolog 7
at_exit "kill -9 $child 2>/dev/null"
job --job 7 epilog
wait_gone "$child" 5 "the mount child of a killed prolog"
rm -f "$T/pause/now"

note "a prolog killed mid-mount: the epilog kills the daemon it never recorded"
killed_prolog 8
rm "$T/pause/now"
i=0
until is_mounted "$top/job8-n1/img"; do
    i=$((i + 1))
    [ $i -lt 500 ] || fail "the mount child of job 8 did not mount"
    sleep 0.02
done
i=0
until d8=$(sqc_pid "$top/job8-n1/img" detached) && [ -n "$d8" ]; do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "no daemon for job 8: $(grep " $top/job8" /proc/self/mounts; ps -ef | grep squashcached)"
    sleep 0.05
done
at_exit "kill -9 $d8 2>/dev/null"
# Stopped: it cannot leave by itself when its mount goes (one stuck on
# its storage does not either).
kill -STOP "$d8"
job --job 8 epilog
wait_gone "$d8" 5 "the daemon of job 8, never recorded"
[ ! -e "$top/job8-n1" ] || fail "the epilog left job 8"

note "a daemon still starting at the deadline is killed, though detached"
# Its own faultfs, slow, on a tree big enough that listing it all takes
# many reads: once the daemon has mounted (it detaches right after), its
# storage stops answering, so it never gets ready (statahead=all waits
# for the listing): the deadline comes while it runs in a session of
# its own, out of reach of its mount child's process group.
mkdir -p "$T/src3" "$T/ff3"
for d in $(seq 1 40); do
    mkdir "$T/src3/d$d"
    for f in $(seq 1 50); do echo "$d $f" >"$T/src3/d$d/f$f"; done
done
mkimg "$T/src3" "$T/img3.sqfs"
chmod 644 "$T/img3.sqfs"
: >"$T/fail3"
chmod 666 "$T/fail3"
chown $u "$T/ff3"
runuser -u $u -- env FAULTFS_DELAY_US=20000 "$TOOLS/faultfs" "$T/img3.sqfs" "$T/ff3" "$T/fail3" 2>"$T/faultfs3.log" &
ff3=$!
at_exit "kill $ff3 2>/dev/null; sleep 0.2; umount -l $T/ff3 2>/dev/null"
i=0
until is_mounted "$T/ff3"; do
    i=$((i + 1))
    [ $i -lt 250 ] || fail "faultfs did not mount"
    sleep 0.02
done
(
    i=0
    until is_mounted "$top/job10-n1/image"; do
        i=$((i + 1))
        [ $i -lt 2000 ] || exit 1
        sleep 0.005
    done
    echo block >"$T/fail3"
) &
blocker=$!
job --job 10 --set timeout=4 --datasets "$T/ff3/image:statahead=all,statahead_wait=30,stage=none" prolog 2>"$T/late.err" || true
wait $blocker || fail "the daemon of job 10 never mounted: $(cat "$T/late.err")"
# The prolog's deadline, or squashcached's own timeout just before it.
grep -q "not mounted within 4 s\|did not mount .* within" "$T/late.err" ||
    fail "the daemon got ready before its storage stopped (too slow a machine?): $(cat "$T/late.err")"
i=0
while d10=$(pgrep -u "$uid" -f "squashcached .*$top/job10-n1/image\$"); do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "the prolog returned with daemon $d10 still running"
    sleep 0.05
done
is_mounted "$top/job10-n1/image" && fail "the prolog returned with the late mount there"
job --job 10 epilog
[ ! -e "$top/job10-n1" ] || fail "the epilog left job 10"
kill $ff3

note "job_container/tmpfs making base= private: a message naming base="
# Such a base is another directory in the job's namespace: the tasks
# would never see the mounts.  The prolog says so, and so does env.
mkdir -p "$T/etc"
printf 'ClusterName=t\njobcontainertype=job_container/tmpfs # private dirs\n' >"$T/etc/slurm.conf"
printf 'BasePath=/var/lib/jc Dirs=/nonexistent,%s\n' "$T/base" >"$T/etc/job_container.conf"
SLURM_CONF="$T/etc/slurm.conf" job --job 9 --datasets "$T/img.sqfs" prolog 2>"$T/jc.err" || true
grep -q "base=$T/base .*under $T/base, which job_container/tmpfs" "$T/jc.err" ||
    fail "the prolog did not name base=: $(cat "$T/jc.err")"
is_mounted "$top/job9-n1/img" && fail "the prolog mounted where the job cannot see it"
job --job 9 epilog
msg=$(runuser -u $u -- env SLURM_CONF="$T/etc/slurm.conf" "$MOUNTCTL" job --set base="$T/base" \
    --job 9 --node n1 --datasets "$T/img.sqfs" env 2>&1) && fail "env succeeded: $msg"
echo "$msg" | grep -q "base=$T/base .*job_container/tmpfs" || fail "env did not name base=: $msg"

note "an epilog that cannot open the job directory says so, for check-node"
# Not root's (as if swapped): the epilog must not take it for "nothing".
mkdir "$top/job5-n1"
chown $u "$top/job5-n1"
job --job 5 epilog 2>"$T/epi.err" || true
grep -q "job 5 on n1: .*job5-n1" "$T/epi.err" || fail "the epilog said nothing: $(cat "$T/epi.err")"
if job --min-age 0 check-node >"$T/node.out"; then
    fail "check-node did not report the failed epilog: $(cat "$T/node.out")"
fi
grep -q "^failed epilog: job 5 on n1" "$T/node.out" || fail "check-node: $(cat "$T/node.out")"
job --min-age 0 --clean check-node >"$T/node.out" || fail "check-node --clean left: $(cat "$T/node.out")"
job --min-age 0 check-node >"$T/node.out" || fail "after --clean: $(cat "$T/node.out")"
rmdir "$top/job5-n1"
note "a user's process stuck in execve(): prolog, epilog and check-node still end"
# The user's own hangfs -s never answers a FLUSH, its owner's too; a
# process of the user's opens its file close-on-exec and execs: the exec
# waits for ever, with the process's exec lock held, and /proc/PID/stat,
# exe and the fd links wait on it (ps and pgrep too: nothing here runs
# them until the exec is let go).  Root's look at each process named
# squashcached has its budget (2 s, in a checker of its own): the hooks
# say so and go on.
mkdir "$T/hx"
chown $u "$T/hx"
runuser -u $u -- "$TOOLS/hangfs" -s "$T/hx" 2>"$T/hx.log" &
hx=$!
hx_end() {
    fuse_abort "$T/hx"
    kill -9 "$hx" 2>/dev/null || true
    umount -l "$T/hx" 2>/dev/null || true
}
at_exit hx_end
i=0
until is_mounted "$T/hx"; do
    i=$((i + 1))
    [ $i -lt 250 ] || fail "hangfs -s did not mount: $(cat "$T/hx.log")"
    sleep 0.02
done
# stuck NAME OUT: a process of the user's, named NAME (comm), that opens
# the hangfs file close-on-exec and execs; it says its pid and start time
# first in OUT (its own /proc/self/stat, read before the exec)
stuck() {
    runuser -u $u -- "$PYTHON" -c 'import ctypes, os, sys
ctypes.CDLL(None).prctl(15, sys.argv[2].encode(), 0, 0, 0)
st = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
print(os.getpid(), st[19], flush=True)
os.open(sys.argv[1], os.O_RDONLY | os.O_CLOEXEC)
os.execv("/bin/true", ["true"])' "$T/hx/file" "$1" >"$2" &
}
# flushes N: until hangfs saw N FLUSHes of the user's
flushes() {
    wait_until 10 "the user's exec did not wait on hangfs" \
        "[ \"\$(grep -c 'FLUSH of uid $uid ' \"\$T/hx.log\")\" -ge $1 ]"
}
# One not named squashcached: the scan reads only the status (its name)
# of a process so named, which waits on nothing: it is not held up.
stuck true "$T/hx0.pid"
flushes 1
rc=0
timeout 30 "$MOUNTCTL" job --set base="$T/base" --node n1 --min-age 0 check-node >"$T/node.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "check-node with a process (not named squashcached) stuck in execve() exits $rc: $(cat "$T/node.out")"
! grep -q "not all looked at" "$T/node.out" || fail "check-node's scan waited on a process not named squashcached: $(cat "$T/node.out")"
# One named squashcached (any user can name a process so): its exe and
# stat wait, so the look at it has its budget (2 s) in a checker of its
# own; the hooks say so, and the scan goes on past it.
stuck squashcached "$T/hx.pid"
flushes 2
read -r hx_pid hx_start <"$T/hx.pid"
t0=$(date +%s)
timeout 30 "$MOUNTCTL" job --set base="$T/base" --uid "$uid" --gid "$gid" --node n1 \
    --job 30 --datasets "$T/img.sqfs" prolog 2>"$T/hx-prolog.err" ||
    fail "the prolog did not end within 30 s, or failed, with a process stuck in execve(): $(cat "$T/hx-prolog.err")"
grep -q "process $hx_pid, named squashcached, could not be looked at within 2000 ms" "$T/hx-prolog.err" ||
    fail "the prolog did not say it skipped the process stuck in execve(): $(cat "$T/hx-prolog.err")"
[ "$(runuser -u $u -- cat "$top/job30-n1/img/d/f")" = hello ] || fail "job 30: the user cannot read the mount"
# The stuck process recorded as one of the job's daemons, as root's
# record says of a daemon the user then makes exec (ptrace, where Yama
# allows it): the epilog's check of who it is (its exe, its stat) waits
# on its exec lock.  Bounded: 2 s, then it is not signalled, said.
echo "img $hx_pid $hx_start" >>"$top/job30-n1/.daemons"
timeout 30 "$MOUNTCTL" job --set base="$T/base" --uid "$uid" --gid "$gid" --node n1 \
    --job 30 epilog 2>"$T/hx-epilog.err" ||
    fail "the epilog did not end within 30 s with a process stuck in execve(): $(cat "$T/hx-epilog.err")"
grep -q "pid $hx_pid: who it is could not be read within 2000 ms" "$T/hx-epilog.err" ||
    fail "the epilog did not say it could not check the recorded process stuck in execve(): $(cat "$T/hx-epilog.err")"
[ ! -e "$top/job30-n1" ] || fail "the epilog left job 30"
# check-node says it skipped the stuck process and exits 0: a user's
# process must not drain the node through its health check.
rc=0
timeout 30 "$MOUNTCTL" job --set base="$T/base" --node n1 --min-age 0 check-node >"$T/node.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "check-node with a process stuck in execve() exits $rc: $(cat "$T/node.out")"
grep -q "process $hx_pid, named squashcached, could not be looked at" "$T/node.out" ||
    fail "check-node did not say it skipped the stuck process: $(cat "$T/node.out")"
# An orphaned daemon started after the stuck process (a higher pid: /proc
# lists it later) is still found: the scan is not cut there.  Job 31's
# daemon, stopped, its mount detached under it.
timeout 30 "$MOUNTCTL" job --set base="$T/base" --uid "$uid" --gid "$gid" --node n1 \
    --job 31 --datasets "$T/img.sqfs" prolog 2>"$T/hx-prolog31.err" ||
    fail "job 31's prolog: $(cat "$T/hx-prolog31.err")"
read -r _ d31 _ <"$top/job31-n1/.daemons"
[ "$d31" -gt "$hx_pid" ] || note "    (pids wrapped: $d31 is below $hx_pid)"
kill -STOP "$d31"
umount -l "$top/job31-n1/img"
rc=0
timeout 30 "$MOUNTCTL" job --set base="$T/base" --node n1 --min-age 0 check-node >"$T/node.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "check-node with an orphaned daemon exits $rc: $(cat "$T/node.out")"
grep -q "^orphan daemon $d31 of $top/job31-n1/img: not mounted any more" "$T/node.out" ||
    fail "check-node did not find the orphaned daemon $d31 past the stuck process $hx_pid: $(cat "$T/node.out")"
! grep -q "not all looked at" "$T/node.out" || fail "check-node's scan was cut: $(cat "$T/node.out")"
timeout 30 "$MOUNTCTL" job --set base="$T/base" --node n1 --min-age 0 --clean check-node >"$T/node.out" 2>&1 || true
grep -q "^orphan daemon $d31 of .*: killed" "$T/node.out" || fail "check-node --clean: $(cat "$T/node.out")"
wait_until 10 "the orphaned daemon $d31 did not end" "[ ! -e /proc/$d31 ]"
timeout 30 "$MOUNTCTL" job --set base="$T/base" --uid "$uid" --gid "$gid" --node n1 \
    --job 31 epilog 2>"$T/hx-epilog31.err" || fail "job 31's epilog: $(cat "$T/hx-epilog31.err")"
note "    prolog, epilog and check-node in $(($(date +%s) - t0)) s; an orphan past the stuck process found"
hx_end

note "keep=: the prolog starts the keeper; check-node lists kept copies, drops an orphaned one"
ks="$T/keep/keeper.sock"
at_exit 'for p in $(pgrep -f "^mountctl keeper --keep 16M --socket $T/keep/"); do kill "$p"; done'
job --set keep=16M --set keep_socket="$ks" --job 20 --datasets "$T/img.sqfs" prolog
[ -S "$ks" ] || fail "no keeper socket after a prolog with keep=16M"
[ "$(stat -c '%U %a' "$T/keep")" = "root 755" ] || fail "$T/keep: $(stat -c '%U %a' "$T/keep")"
job --set keep=16M --set keep_socket="$ks" --job 20 epilog
# A uid that is no user of the node: its copy is orphaned.
orphan=$((3900000 + $$ % 10000))
"$MOUNTCTL" job --set base="$T/base" --uid $orphan --gid 65534 --node n1 --set keep=16M \
    --set keep_socket="$ks" --job 21 --datasets "$T/img.sqfs" prolog
"$MOUNTCTL" job --set base="$T/base" --uid $orphan --gid 65534 --node n1 --set keep=16M \
    --set keep_socket="$ks" --job 21 epilog
i=0
until [ "$("$MOUNTCTL" status --kept --socket "$ks" | grep -c "not in use\|kept")" -ge 2 ] &&
    ! "$MOUNTCTL" status --kept --json --socket "$ks" | grep -q '"connections": *[1-9]'; do
    i=$((i + 1))
    [ $i -lt 250 ] || fail "the keeper holds no two copies: $("$MOUNTCTL" status --kept --socket "$ks")"
    sleep 0.02
done
kc() { job --set keep=16M --set keep_socket="$ks" --min-age 0 "$@" check-node >"$T/node.out"; }
kc && fail "check-node did not report the orphaned copy: $(cat "$T/node.out")"
grep -q "^kept copy of .* for uid $uid ($u): .*not in use, last use 20" "$T/node.out" ||
    fail "check-node did not list the user's copy: $(cat "$T/node.out")"
grep "for uid $uid " "$T/node.out" | grep -q "orphaned\|partial" && fail "the user's copy is not orphaned: $(cat "$T/node.out")"
grep -q "^kept copy of .* for uid $orphan (no such user): .*: orphaned$" "$T/node.out" ||
    fail "check-node: no orphaned copy: $(cat "$T/node.out")"
kc --clean || true
grep -q "for uid $orphan .*: orphaned: dropped$" "$T/node.out" || fail "check-node --clean: $(cat "$T/node.out")"
kc || fail "after --clean: $(cat "$T/node.out")"
grep -q "for uid $orphan " "$T/node.out" && fail "the orphaned copy is still kept: $(cat "$T/node.out")"
grep -q "for uid $uid " "$T/node.out" || fail "--clean dropped the user's copy: $(cat "$T/node.out")"
exit 0

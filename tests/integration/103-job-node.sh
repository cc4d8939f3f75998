#!/bin/sh
# mountctl job without Slurm: prolog, env and epilog by hand for a user,
# the layout's owners and modes, a storage that never answers failing the
# mount within timeout= and leaving nothing, and check-node finding a
# stale mount (daemon killed) and an orphan daemon (mount gone), cleaning
# both with --clean.
# This node has no Slurm: the test runs in a mount namespace of its own
# without the machine's cgroup hierarchies, where mountctl job finds no
# cgroup of Slurm's (a slurm_n1 or slurm of a real or left-over slurmd
# would have it wait for the job's extern step).
# TIMEOUT: 120
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
need_cmd mksquashfs useradd runuser unshare
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
job --min-age 0 --clean check-node >"$T/node.out" || fail "check-node --clean left: $(cat "$T/node.out")"
job --min-age 0 check-node >"$T/node.out" || fail "after --clean: $(cat "$T/node.out")"
wait_gone "$p2" 5 "the orphan daemon"
grep -q " $top/job4-n1/" /proc/self/mounts && fail "the stale mount is still there"
job --job 4 epilog
[ ! -e "$top/job4-n1" ] || fail "the epilog left job 4"
exit 0

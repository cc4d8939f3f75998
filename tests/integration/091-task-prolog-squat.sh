#!/bin/sh
# The user's task prolog (slurm/hooks/task-prolog) mounts under the base,
# /dev/shm by default, where anyone may make directories: another user who
# made BASE/USER first could swap what the prolog writes there (its
# .ready and .failed files) for symlinks to the user's own files.  So the
# prolog takes BASE/USER and BASE/USER/squashcache only if they are the
# user's own directories, leaves them 0700, and otherwise fails the task
# with a message, writing nothing.  Run here as Slurm would run it (as the
# user, with the task's variables), no cluster needed.
# TIMEOUT: 120
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs
need_test_users

owner=$TU_A
squatter=$TU_B
mkdir -p "$T/src"
echo hello >"$T/src/a"
mkimg "$T/src" "$T/ds.sqfs" -comp lz4
chmod 644 "$T/ds.sqfs"
# The base, as /dev/shm is: anyone makes directories, sticky.
mkdir -m 1777 "$T/base"
echo "base=$T/base" >"$T/conf"
chmod 644 "$T/conf"
# A file of the owner's that a squatter would like the prolog to write.
mkdir -m 755 "$T/home"
echo "keep me" >"$T/home/victim"
chown -R $owner "$T/home"

# prolog: run the task prolog as the owner for job 7, local task 0, held
# by a sleep of the owner's; its stdout in $T/out, stderr in $T/err.
prolog() {
    as $owner sleep 60 &
    holder=$!
    at_exit "kill $holder 2>/dev/null"
    as $owner env SQUASHCACHED="$SQUASHCACHED" SQUASHCACHE_MOUNTCTL="$MOUNTCTL" \
        SQUASHCACHE_IMAGE="$T/ds.sqfs" SQUASHCACHE_SLURM_CONF="$T/conf" \
        SQUASHCACHE_GRACE=0 USER=$owner SLURM_JOB_ID=7 SLURM_STEP_ID=0 \
        SLURM_LOCALID=0 SLURMD_NODENAME=n1 SLURM_TASK_PID=$holder \
        "$PTOP/slurm/hooks/task-prolog" >"$T/out" 2>"$T/err"
}

mnt="$T/base/$owner/squashcache/job7.0-n1/ds"

note "the user's own base: mounted, and made private"
mkdir -m 777 "$T/base/$owner"
chown $owner "$T/base/$owner"
_mounts="$mnt $_mounts"
prolog || fail "the task prolog failed: $(cat "$T/out" "$T/err")"
grep -qx "export SQUASHCACHE_MOUNT=$mnt" "$T/out" || fail "the task prolog said: $(cat "$T/out")"
[ "$(as $owner cat "$mnt/a")" = hello ] || fail "the mount does not read"
for d in "$T/base/$owner" "$T/base/$owner/squashcache"; do
    [ "$(stat -c '%U %a' "$d")" = "$owner 700" ] || fail "$d is $(stat -c '%U %a' "$d"), not $owner's 0700"
done
kill $holder
i=0
while is_mounted "$mnt"; do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "the mount outlived its holder by 10 s"
    sleep 0.1
done
rm -rf "${T:?}/base/$owner"

# squatted DIR...: the squatter made them (0777), and put symlinks to
# the victim where the prolog writes its files; the prolog must refuse,
# say why, mount nothing and write nothing.
squatted() {
    prolog && fail "the task prolog ran in a base another user made ($1)"
    grep -q "^print squashcache: $T/ds.sqfs: .* is not a directory of yours" "$T/out" ||
        fail "no message for the task ($1): $(cat "$T/out")"
    [ "$(cat "$T/home/victim")" = "keep me" ] || fail "the prolog wrote through the squatter's symlink ($1)"
    ! is_mounted "$mnt" || fail "mounted in a base another user made ($1)"
    [ -z "$(find "$T/base" -mindepth 2 -user $owner)" ] || fail "the owner wrote in the squatter's base ($1): $(find "$T/base" -mindepth 2 -user $owner)"
    kill $holder 2>/dev/null
    rm -rf "${T:?}/base/$owner" "${T:?}/base/elsewhere"
}

note "a base another user made under the owner's name is refused"
as $squatter mkdir -m 777 "$T/base/$owner" "$T/base/$owner/squashcache"
as $squatter ln -s "$T/home/victim" "$T/base/$owner/squashcache/job7.0-n1.ds.ready"
as $squatter ln -s "$T/home/victim" "$T/base/$owner/squashcache/job7.0-n1.ds.failed"
squatted "the user's directory"

note "the user's directory, but squashcache/ in it the squatter's"
mkdir -m 777 "$T/base/$owner"
chown $owner "$T/base/$owner"
as $squatter mkdir -m 777 "$T/base/$owner/squashcache"
as $squatter ln -s "$T/home/victim" "$T/base/$owner/squashcache/job7.0-n1.ds.failed"
squatted "squashcache/"

note "a symlink under the owner's name is refused"
as $squatter mkdir -m 777 "$T/base/elsewhere"
as $squatter ln -s "$T/base/elsewhere" "$T/base/$owner"
squatted "a symlink"
echo "task prolog squat checks passed"

#!/bin/sh
# TIMEOUT: 300
# ALONE: starts the Slurm test cluster
# SANITIZE: no (keep through Slurm: its C paths run sanitized in 103, 120 and 121)
# keep= on a real 2-node Slurm cluster (tests/slurm/cluster.sh, plain
# mode), jobs of a non-root test user with --comment=dataset=:
#   (a) the first job's Prolog starts the node's keeper: root's, detached
#       (its parent init, stdout /dev/null), still running after the job
#       and the same process for every later job;
#   (b) a job array of 8 tasks, one task per node at a time (--exclusive),
#       on 2 nodes: the image is read from storage (the daemons'
#       image_io.read_bytes, from each task) at most
#       twice in all, plus the superblocks of the tasks that adopt;
#       every task reads the right bytes; each node's keeper lists the
#       copy for the user;
#   (c) keep=0 (the default) starts no keeper and keeps nothing;
#   (d) a job whose memory request (scontrol's MinMemoryNode, here from
#       a stand-in scontrol on the Prolog's PATH) does not fit beside the
#       kept copies has them evicted first: it adopts nothing;
#   (e) the user's task prolog (mountctl acquire) mounts with keep too:
#       it adopts the copy a Prolog's mount left.
# Each node has a config of its own (the hooks pick it by
# SLURMD_NODENAME) with a keeper socket of its own: the test's two nodes
# share one /run, real nodes do not.
case "${SQC_TMPDIR:-/tmp}" in /tmp | /tmp/* | /dev/shm*) SQC_TMPDIR=/var/tmp ;; esac
export SQC_TMPDIR
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: starts munge, slurmctld and two slurmd, adds a test user"
need_cmd mksquashfs
for c in slurmctld slurmd srun sbatch sinfo munged setpriv unshare nsenter; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed (sh tests/deps.sh slurm)"
done
[ -e /dev/fuse ] || skip "no /dev/fuse"
. "$TOP/tests/slurm/cluster.sh"

add_test_user U
mkdir -p "$T/bin" "$T/state" "$T/img" "$T/out" "$T/src"
chmod 1777 "$T/out"
cp "$PTOP/build/mountctl" "$T/bin/mountctl"
cp "$PTOP/build/squashcached" "$T/bin/squashcached"
head -c 3000000 /dev/urandom >"$T/src/big.bin"
mkimg "$T/src" "$T/img/k.sqfs" -comp lz4
chmod 0644 "$T/img/k.sqfs"
size=$(stat -c %s "$T/img/k.sqfs")
sum=$(md5sum <"$T/src/big.bin" | cut -c1-32)

# conf KEEP: each node's config, keep=KEEP, its own keeper socket;
# replaced by a rename, as the Epilog of the job before may be reading it.
conf() {
    for n in "$CL_N1" "$CL_N2"; do
        cat >"$T/conf-$n.new" <<EOC
mountctl=$T/bin/mountctl
state=$T/state
options=cache=64M
keep=$1
keep_socket=$T/keep-$n/keeper.sock
EOC
        mv -f "$T/conf-$n.new" "$T/conf-$n"
    done
}

# What each task runs: once staging is done (a sweep's task reads its
# data staged), the bytes it read, the daemon's storage reads and what
# it adopted.
cat >"$T/bin/readk" <<EOR
#!/bin/sh
m=\$SQUASHCACHE_MOUNT
i=0
until "$T/bin/mountctl" status --json "\$m" | grep -q '"state": *"done"'; do
    i=\$((i + 1)); [ \$i -lt 600 ] || break; sleep 0.1
done
s=\$(md5sum <"\$m/big.bin" | cut -c1-32)
"$T/bin/mountctl" status --json "\$m" | "$PYTHON" -c 'import json, sys
v = json.load(sys.stdin)[0]
print("io", sys.argv[1], sys.argv[2], v["image_io"]["read_bytes"], v.get("keep", {}).get("adopted", 0), v["stage"]["state"])' "\$SLURMD_NODENAME" "\$s"
EOR
chmod 0755 "$T/bin/readk"

mkdir -p "$T/cl/hooks" "$T/cl/etc"
for h in prolog epilog site-task-prolog; do
    f=$h
    [ "$h" = site-task-prolog ] && f=task-prolog
    cat >"$T/cl/hooks/$f" <<EOH
#!/bin/sh
[ -e "$T/fake-scontrol" ] && export PATH=$T/fakebin:\${PATH:-/usr/bin:/bin}
SQUASHCACHE_SLURM_CONF=$T/conf-\$SLURMD_NODENAME SQUASHCACHE_MOUNTCTL=$T/bin/mountctl exec "$PTOP/slurm/hooks/$h" "\$@"
EOH
done
# A stand-in scontrol: the job asks for 512 MiB more than MemAvailable
# (which moves by megabytes on a busy machine between two reads).
mkdir -p "$T/fakebin"
cat >"$T/fakebin/scontrol" <<'EOS'
#!/bin/sh
echo "$*" >>"${0%/*}/../scontrol.log"
kb=$(awk '/^MemAvailable:/ {print $2 + 524288}' /proc/meminfo)
echo "JobId=$4 JobName=x MinCPUsNode=1 MinMemoryNode=${kb}K MinTmpDiskNode=0 Features=(null)"
EOS
chmod 0755 "$T/fakebin/scontrol"
chmod 0755 "$T/cl/hooks"/*
: >"$T/cl/etc/plugstack.conf"

# keeper_pid NODE: the keeper listening on NODE's socket, or nothing.
keeper_pid() {
    keepers "^mountctl keeper --keep [^ ]* --socket $T/keep-$1/keeper.sock"
}
at_exit 'cluster_stop'
at_exit 'for p in $(keeper_pid "$CL_N1") $(keeper_pid "$CL_N2"); do kill "$p"; done'
cluster_start "$T/cl" || { tail -n 30 "$T/cl/log/"*.log; fail "cluster did not start"; }
N1=$CL_N1
conf 0

as_user() {
    (cd "$T/out" && runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@")
}

# --- (c) keep=0: no keeper --------------------------------------------
as_user srun -N1 -w "$N1" --comment="dataset=$T/img/k.sqfs" "$T/bin/readk" >"$T/off.out" 2>&1 ||
    { cat "$T/off.out"; fail "job without keep failed"; }
grep -q "^io $N1 $sum [0-9]* 0 done" "$T/off.out" || { cat "$T/off.out"; fail "keep=0: wrong output"; }
[ -z "$(keeper_pid "$N1")" ] && [ ! -e "$T/keep-$N1" ] || fail "keep=0 started a keeper"
note "(c) keep=0: no keeper"

# --- (a) the Prolog starts the keeper --------------------------------
conf 64M
as_user srun -N1 -w "$N1" --comment="dataset=$T/img/k.sqfs" "$T/bin/readk" >"$T/first.out" 2>&1 ||
    { cat "$T/first.out"; fail "first job with keep failed"; }
grep -q "^io $N1 $sum " "$T/first.out" || { cat "$T/first.out"; fail "first job: wrong bytes"; }
kp=$(keeper_pid "$N1")
[ -n "$kp" ] || fail "no keeper runs on $N1 after a job with keep=64M"
[ "$(echo "$kp" | wc -l)" -eq 1 ] || fail "more than one keeper on $N1: $kp"
[ "$(stat -c %u "/proc/$kp")" = 0 ] || fail "the keeper is not root's"
[ "$(readlink "/proc/$kp/fd/1")" = /dev/null ] || fail "the keeper's stdout is $(readlink "/proc/$kp/fd/1")"
ppid=$(awk '{print $4}' "/proc/$kp/stat")
[ "$ppid" = 1 ] || [ "$(cat "/proc/$ppid/comm")" != slurmd ] || fail "the keeper is slurmd's child"
[ "$(stat -c %u:%a "$T/keep-$N1")" = 0:755 ] || fail "the socket's directory is $(stat -c %u:%a "$T/keep-$N1")"
"$T/bin/mountctl" status --kept --json --socket "$T/keep-$N1/keeper.sock" >"$T/kept1.json" ||
    fail "cannot list the keeper's copies"
grep -q "\"uid\": *$(id -u "$U")" "$T/kept1.json" || { cat "$T/kept1.json"; fail "no kept copy for the job's user"; }
note "(a) the Prolog started a keeper (pid $kp), it outlives the job"

# --- (b) a job array of 8, one task per node at a time ---------------
"$T/bin/mountctl" forget --all --socket "$T/keep-$N1/keeper.sock" >/dev/null ||
    fail "cannot forget the first job's copy"
as_user sbatch -W --array=0-7 -N1 --exclusive -o "$T/out/arr-%a.out" \
    --comment="dataset=$T/img/k.sqfs" --wrap="$T/bin/readk" >/dev/null ||
    { cat "$T/out"/arr-*.out; fail "the job array failed"; }
cat "$T/out"/arr-*.out >"$T/arr.out"
[ "$(grep -c "^io [^ ]* $sum [0-9]* [0-9]* done" "$T/arr.out")" -eq 8 ] ||
    { cat "$T/arr.out"; fail "job array: not 8 tasks that read the right bytes, staged"; }
read_all=$(awk '/^io /{s += $4} END {print s}' "$T/arr.out")
nodes=$(awk '/^io /{print $2}' "$T/arr.out" | sort -u | wc -l)
adopted=$(awk '/^io / && $5 > 0' "$T/arr.out" | wc -l)
note "(b) 8 tasks on $nodes node(s): $read_all bytes from storage in all (image $size), $adopted tasks adopted a kept copy"
[ "$read_all" -le $((2 * size + 8 * 4096)) ] ||
    { cat "$T/arr.out"; fail "job array: read $read_all bytes from storage, more than twice the image ($size)"; }
[ "$adopted" -ge $((8 - nodes)) ] || { cat "$T/arr.out"; fail "job array: only $adopted tasks adopted"; }
[ "$(keeper_pid "$N1")" = "$kp" ] || fail "the keeper on $N1 changed: $kp, now $(keeper_pid "$N1")"

# --- (d) evict for the job's memory ----------------------------------
: >"$T/fake-scontrol"
as_user srun -N1 -w "$N1" --comment="dataset=$T/img/k.sqfs" "$T/bin/readk" >"$T/evict.out" 2>&1 ||
    { cat "$T/evict.out"; fail "the job after an evict failed"; }
grep -q "^io $N1 $sum [0-9]* 0 done" "$T/evict.out" ||
    { cat "$T/evict.out"; fail "(d) a job that needs the memory adopted a kept copy (scontrol: $(cat "$T/scontrol.log" 2>&1))"; }
rm -f "$T/fake-scontrol"
as_user srun -N1 -w "$N1" --comment="dataset=$T/img/k.sqfs" "$T/bin/readk" >"$T/after-evict.out" 2>&1 ||
    { cat "$T/after-evict.out"; fail "the job after that failed"; }
grep -q "^io $N1 $sum [0-9]* [1-9][0-9]* done" "$T/after-evict.out" ||
    { cat "$T/after-evict.out"; fail "(d) the next job, asking for no memory, adopted nothing"; }
note "(d) a job whose memory request does not fit beside the kept copies: evicted, staged afresh"

# --- (e) the user's task prolog -----------------------------------------
as_user env SQUASHCACHE_IMAGE="$T/img/k.sqfs" SQUASHCACHE_SLURM_CONF="$T/conf-$N1" \
    SQUASHCACHE_MOUNTCTL="$T/bin/mountctl" srun -N1 -w "$N1" \
    --task-prolog="$PTOP/slurm/hooks/task-prolog" "$T/bin/readk" >"$T/tp.out" 2>&1 ||
    { cat "$T/tp.out"; fail "the task prolog's job failed"; }
grep -q "^io $N1 $sum [0-9]* [1-9][0-9]* done" "$T/tp.out" ||
    { cat "$T/tp.out"; fail "(e) the task prolog's mount adopted nothing"; }
note "(e) the task prolog's mount adopted the kept copy"
exit 0

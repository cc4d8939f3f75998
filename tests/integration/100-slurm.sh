#!/bin/sh
# TIMEOUT: 300
# ALONE: starts the Slurm test cluster
# SANITIZE: no (Slurm's side of the hooks: their C paths (mountctl job, acquire) run sanitized in 091 and 103)
# Slurm hooks on a real 2-node Slurm cluster (tests/slurm/cluster.sh:
# linuxproc, no cgroups), each node with its own /dev/shm and
# /tmp as real nodes have, jobs run by a non-root test user: the SPANK
# plugin (srun, sbatch),
# Prolog/Epilog with --comment, the user's task prolog (1, 2, 4 tasks per
# node), a bad image (job fails with the message, nodes stay idle), the
# daemon killed mid-job, two images on one node at once, the sbcast
# recipe (and a cancelled sbcast job).  Every task compares a checksum
# with the source; each node mounts once per job (daemon starts are
# logged by a wrapper); nothing stays mounted, running or on a node's
# /dev/shm.
# The test's files must be where every node sees them: not in /tmp.
case "${SQC_TMPDIR:-/tmp}" in /tmp | /tmp/* | /dev/shm*) SQC_TMPDIR=/var/tmp ;; esac
export SQC_TMPDIR
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: starts munge, slurmctld and two slurmd, adds a test user"
need_cmd mksquashfs
for c in slurmctld slurmd srun sbatch sinfo munged sbcast setpriv unshare nsenter; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed (sh tests/deps.sh slurm)"
done
[ -e /dev/fuse ] || skip "no /dev/fuse"
[ -f "$BUILD/squashcache_spank.so" ] || skip "no SPANK plugin built (libslurm-dev missing)"
. "$TOP/tests/slurm/cluster.sh"

# The job's user, of this run; what it and the nodes run is in $PTOP.
add_test_user U

# Binaries: a copy the test user can run; squashcached is a wrapper that
# logs each start (argv names the mount point, hence node and job).
mkdir -p "$T/bin/real" "$T/state" "$T/img" "$T/out"
chmod 1777 "$T/out"
cp "$PTOP/build/mountctl" "$T/bin/mountctl"
cp "$PTOP/build/squashcached" "$T/bin/real/squashcached"
: >"$T/starts.log"
chmod 0666 "$T/starts.log"
cat >"$T/bin/squashcached" <<EOW
#!/bin/sh
echo "\$*" >>"$T/starts.log"
exec "$T/bin/real/squashcached" "\$@"
EOW
chmod 0755 "$T/bin/squashcached"

cat >"$T/squashcache-slurm.conf" <<EOC
# test config (base= is the default, /dev/shm: each node's own)
mountctl=$T/bin/mountctl
state=$T/state
options=cache=64M
EOC

# Images: a few files; the tasks compare an md5 of all of them.
mkdir -p "$T/src/a/sub" "$T/src/b"
head -c 3000000 /dev/urandom >"$T/src/a/big.bin"
echo hello >"$T/src/a/sub/hello.txt"
head -c 70000 /dev/urandom >"$T/src/b/other.bin"
mkimg "$T/src/a" "$T/img/alpha.sqfs"
mkimg "$T/src/b" "$T/img/beta.sqfs"
head -c 8192 /dev/urandom >"$T/img/bad.sqfs"
# corrupt.sqfs passes the quick superblock check at submission but its
# tables (from inode_table_start to bytes_used) are garbage: only the
# node finds out, when it mounts.
cp "$T/img/beta.sqfs" "$T/img/corrupt.sqfs"
"$PYTHON" - "$T/img/corrupt.sqfs" <<'EOP'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    sb = f.read(96)
    used, itab = struct.unpack_from("<Q", sb, 40)[0], struct.unpack_from("<Q", sb, 64)[0]
    f.seek(itab)
    f.write(b"\xff" * (used - itab))
EOP
chmod 0644 "$T/img"/*
sum_a=$(cd "$T/src/a" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
sum_b=$(cd "$T/src/b" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)

# What each task runs: prints node, local id and the checksum it read.
cat >"$T/bin/readit" <<'EOR'
#!/bin/sh
m=${1:-$SQUASHCACHE_MOUNT}
s=$(cd "$m" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
echo "task $SLURMD_NODENAME ${SLURM_LOCALID:-?} $s $m"
EOR
chmod 0755 "$T/bin/readit"

mkdir -p "$T/cl/hooks" "$T/cl/etc"
for h in prolog epilog; do
    cat >"$T/cl/hooks/$h" <<EOH
#!/bin/sh
SQUASHCACHE_SLURM_CONF=$T/squashcache-slurm.conf SQUASHCACHE_MOUNTCTL=$T/bin/mountctl exec "$PTOP/slurm/hooks/$h" "\$@"
EOH
done
cat >"$T/cl/hooks/task-prolog" <<EOH
#!/bin/sh
SQUASHCACHE_SLURM_CONF=$T/squashcache-slurm.conf SQUASHCACHE_MOUNTCTL=$T/bin/mountctl exec "$PTOP/slurm/hooks/site-task-prolog" "\$@"
EOH
chmod 0755 "$T/cl/hooks"/*
echo "required $PTOP/build/squashcache_spank.so conf=$T/squashcache-slurm.conf" >"$T/cl/etc/plugstack.conf"

at_exit 'cluster_stop'
# The nodes' mounts go with their namespaces once their daemons are gone.
at_exit 'for p in $(pgrep -f "^$T/bin/real/squashcached "); do kill -9 "$p"; done'
t0=$(date +%s.%N)
cluster_start "$T/cl" || { tail -n 30 "$T/cl/log/"*.log; fail "cluster did not start"; }
t1=$(date +%s.%N)
note "cluster up in $(echo "$t1 - $t0" | bc 2>/dev/null || echo '?') s"
N1=$CL_N1
N2=$CL_N2

as_user() {
    (cd "$T/out" && runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@")
}

# check_tasks OUTFILE SUM N: N task lines, every one with SUM.
check_tasks() {
    n=$(grep -c '^task ' "$1" || true)
    [ "$n" -eq "$3" ] || { cat "$1"; fail "$1: $n task lines, expected $3"; }
    if grep '^task ' "$1" | grep -v " $2 " >/dev/null; then
        cat "$1"
        fail "$1: a task read wrong bytes"
    fi
}

# starts_for JOBID NODE: daemon starts logged for that job on NODE.
starts_for() {
    grep -c "/job$1[.-][0-9]*-*$2/" "$T/starts.log" || true
}

# on_node NODE CMD...: CMD in NODE's mount namespace.
on_node() {
    cluster_nsenter "$@"
}

# left_on NODE: what jobs left in NODE's /dev/shm (mounts, job
# directories, the sbcast recipe's directories), one line each.  (The
# user-level task prolog keeps its directories, by design.)
left_on() {
    on_node "$1" sh -c 'grep " /dev/shm/" /proc/self/mounts
        ls -A /dev/shm/squashcache 2>/dev/null
        ls -d /dev/shm/$0/sqc-* 2>/dev/null' "$U"
}

# Nothing of ours mounted, running or left in a node's /dev/shm, nodes idle.
check_clean() {
    i=0
    while [ -n "$(left_on "$N1")$(left_on "$N2")" ] || pgrep -f "$T/bin/real/squashcached" >/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 100 ]; then
            left_on "$N1" | sed "s/^/$N1: /"
            left_on "$N2" | sed "s/^/$N2: /"
            pgrep -af "$T/bin/real/squashcached" || true
            fail "$1: mounts, daemons or files left behind"
        fi
        sleep 0.1
    done
    i=0
    until cluster_idle; do
        i=$((i + 1))
        [ "$i" -gt 100 ] && { sinfo; fail "$1: nodes not idle: $(sinfo -h -o '%N %T %E')"; }
        sleep 0.1
    done
}

last_job() {
    squeue -h -o %i >/dev/null 2>&1
    sacct >/dev/null 2>&1 || true
    scontrol show job -o 2>/dev/null | sed -n 's/^JobId=\([0-9]*\) .*/\1/p' | sort -n | tail -n 1
}

# --- 1. SPANK, srun: 2 nodes x 2 tasks -------------------------------
as_user srun -N2 -n4 --dataset="$T/img/alpha.sqfs" "$T/bin/readit" >"$T/spank-srun.out" 2>&1 ||
    { cat "$T/spank-srun.out"; fail "spank srun failed"; }
check_tasks "$T/spank-srun.out" "$sum_a" 4
j=$(last_job)
[ "$(starts_for "$j" "$N1")" -eq 1 ] && [ "$(starts_for "$j" "$N2")" -eq 1 ] ||
    { cat "$T/starts.log"; fail "spank srun: not exactly one mount per node"; }
check_clean "spank srun"
note "spank srun ok (job $j)"

# --- 2. SPANK, sbatch with two images --------------------------------
cat >"$T/out/two.sh" <<EOB
#!/bin/sh
srun -N2 -n2 sh -c '"$T/bin/readit" "\$SQUASHCACHE_MOUNT_ALPHA"; "$T/bin/readit" "\$SQUASHCACHE_MOUNT_BETA"'
EOB
chmod 0755 "$T/out/two.sh"
as_user sbatch -W -N2 -o "$T/out/spank-sbatch.out" --dataset="$T/img/alpha.sqfs:ram=0" --dataset="$T/img/beta.sqfs" "$T/out/two.sh" >/dev/null ||
    { cat "$T/out/spank-sbatch.out"; fail "spank sbatch failed"; }
[ "$(grep -c " $sum_a " "$T/out/spank-sbatch.out")" -eq 2 ] &&
    [ "$(grep -c " $sum_b " "$T/out/spank-sbatch.out")" -eq 2 ] ||
    { cat "$T/out/spank-sbatch.out"; fail "spank sbatch: wrong bytes"; }
j=$(last_job)
[ "$(starts_for "$j" "$N1")" -eq 2 ] && [ "$(starts_for "$j" "$N2")" -eq 2 ] ||
    { cat "$T/starts.log"; fail "spank sbatch: not one mount per image per node"; }
check_clean "spank sbatch"
note "spank sbatch ok"
as_user salloc -N2 --dataset="$T/img/beta.sqfs" srun -N2 -n2 "$T/bin/readit" >"$T/salloc.out" 2>&1 ||
    { cat "$T/salloc.out"; fail "spank salloc failed"; }
check_tasks "$T/salloc.out" "$sum_b" 2
check_clean "spank salloc"
note "spank salloc ok"

# --- 3. Bad image: refused at submission with the message ------------
if as_user srun -N1 --dataset="$T/img/bad.sqfs" true >"$T/bad.out" 2>&1; then
    fail "srun with a bad image succeeded"
fi
grep -q "squashcache: $T/img/bad.sqfs: " "$T/bad.out" || { cat "$T/bad.out"; fail "no message for the bad image"; }
if as_user srun -N1 --dataset="$T/img/missing.sqfs" true >"$T/bad2.out" 2>&1; then
    fail "srun with a missing image succeeded"
fi
grep -q "squashcache: $T/img/missing.sqfs: " "$T/bad2.out" || { cat "$T/bad2.out"; fail "no message for the missing image"; }
if as_user srun -N2 -n2 --dataset="$T/img/corrupt.sqfs" "$T/bin/readit" >"$T/corrupt.out" 2>&1 &&
    grep -q '^task ' "$T/corrupt.out"; then
    cat "$T/corrupt.out"
    fail "a job with a corrupt image ran its tasks"
fi
grep -q "squashcache: $T/img/corrupt.sqfs: .*corrupt" "$T/corrupt.out" || { cat "$T/corrupt.out"; fail "no message for the corrupt image"; }
check_clean "bad image (spank)"
note "corrupt image found on the nodes: $(grep squashcache: "$T/corrupt.out" | head -n 1)"
note "bad image refused: $(grep squashcache: "$T/bad.out" | head -n 1)"

# --- 4. Prolog/Epilog with --comment ---------------------------------
as_user srun -N2 -n4 --comment="dataset=$T/img/beta.sqfs" "$T/bin/readit" >"$T/comment.out" 2>&1 ||
    { cat "$T/comment.out"; fail "comment srun failed"; }
check_tasks "$T/comment.out" "$sum_b" 4
j=$(last_job)
[ "$(starts_for "$j" "$N1")" -eq 1 ] && [ "$(starts_for "$j" "$N2")" -eq 1 ] ||
    { cat "$T/starts.log"; fail "comment: not exactly one mount per node"; }
check_clean "comment"
as_user srun -N1 -n1 --comment="run-42 dataset=$T/img/alpha.sqfs:ram=0,$T/img/beta.sqfs note" \
    sh -c '"$0" "$SQUASHCACHE_MOUNT_ALPHA"; "$0" "$SQUASHCACHE_MOUNT_BETA"; "$0"' "$T/bin/readit" \
    >"$T/comment2.out" 2>&1 || { cat "$T/comment2.out"; fail "comment with two images failed"; }
[ "$(grep -c " $sum_a " "$T/comment2.out")" -eq 2 ] && [ "$(grep -c " $sum_b " "$T/comment2.out")" -eq 1 ] ||
    { cat "$T/comment2.out"; fail "comment with two images: wrong bytes"; }
check_clean "comment, two images"
note "prolog --comment ok (one and two images)"

# Bad image through the Prolog: the job fails with the message, the
# Prolog exits 0 so the nodes are not drained.
if as_user srun -N2 -n2 --comment="dataset=$T/img/bad.sqfs" "$T/bin/readit" >"$T/comment-bad.out" 2>&1 &&
    grep -q '^task ' "$T/comment-bad.out"; then
    cat "$T/comment-bad.out"
    fail "a job with a bad image ran its tasks"
fi
grep -q "squashcache: $T/img/bad.sqfs: " "$T/comment-bad.out" || { cat "$T/comment-bad.out"; fail "no message for a bad image (prolog)"; }
check_clean "bad image (prolog)"
note "bad image via prolog: $(grep squashcache: "$T/comment-bad.out" | head -n 1)"

# --- 5. kill -9 of the daemon mid-job; the next job mounts again -----
cat >"$T/out/kill.sh" <<EOB
#!/bin/sh
"$T/bin/readit"
pkill -9 -f "^$T/bin/real/squashcached .*job\$SLURM_JOB_ID-" && echo killed
i=0
while pgrep -f "^$T/bin/real/squashcached .*job\$SLURM_JOB_ID-" >/dev/null && [ \$i -lt 100 ]; do
    i=\$((i + 1))
    sleep 0.1
done
pgrep -f "^$T/bin/real/squashcached .*job\$SLURM_JOB_ID-" || echo no-daemon
EOB
chmod 0755 "$T/out/kill.sh"
as_user sbatch -W -N1 -w "$N1" -o "$T/out/kill.out" --dataset="$T/img/alpha.sqfs" "$T/out/kill.sh" >/dev/null || true
grep -q '^killed' "$T/out/kill.out" && grep -q '^no-daemon' "$T/out/kill.out" ||
    { cat "$T/out/kill.out"; fail "the job could not kill its daemon"; }
check_clean "kill -9"
as_user srun -N1 -w "$N1" --dataset="$T/img/alpha.sqfs" "$T/bin/readit" >"$T/after-kill.out" 2>&1 ||
    { cat "$T/after-kill.out"; fail "job after kill -9 failed"; }
check_tasks "$T/after-kill.out" "$sum_a" 1
check_clean "after kill -9"
# The same through the Prolog/Epilog scripts.
as_user sbatch -W -N1 -w "$N2" -o "$T/out/kill2.out" --comment="dataset=$T/img/alpha.sqfs" "$T/out/kill.sh" >/dev/null || true
grep -q '^killed' "$T/out/kill2.out" && grep -q '^no-daemon' "$T/out/kill2.out" ||
    { cat "$T/out/kill2.out"; fail "the job could not kill its daemon (prolog)"; }
check_clean "kill -9 (prolog)"
as_user srun -N1 -w "$N2" --comment="dataset=$T/img/alpha.sqfs" "$T/bin/readit" >"$T/after-kill2.out" 2>&1 ||
    { cat "$T/after-kill2.out"; fail "job after kill -9 failed (prolog)"; }
check_tasks "$T/after-kill2.out" "$sum_a" 1
check_clean "after kill -9 (prolog)"
note "kill -9 mid-job cleaned, next job mounted again (plugin and prolog)"

# --- 6. Two jobs, different images, one node, at once ---------------
cat >"$T/out/hold.sh" <<EOB
#!/bin/sh
"$T/bin/readit"
touch "$T/out/\$SLURM_JOB_ID.up"
while [ ! -e "$T/out/go" ]; do sleep 0.1; done
"$T/bin/readit"
EOB
chmod 0755 "$T/out/hold.sh"
as_user sbatch -N1 -n1 -w "$N1" -o "$T/out/two-a.out" --dataset="$T/img/alpha.sqfs" "$T/out/hold.sh" >/dev/null
as_user sbatch -N1 -n1 -w "$N1" -o "$T/out/two-b.out" --dataset="$T/img/beta.sqfs" "$T/out/hold.sh" >/dev/null
i=0
until [ "$(ls "$T/out/"*.up 2>/dev/null | wc -l)" -eq 2 ]; do
    i=$((i + 1))
    [ "$i" -gt 300 ] && { squeue; fail "two jobs did not both start on $N1"; }
    sleep 0.1
done
[ "$(on_node "$N1" grep -c " /dev/shm/squashcache/job[0-9]*-$N1/" /proc/self/mounts)" -eq 2 ] || fail "not two mounts on $N1"
[ "$(grep -c " /dev/shm/squashcache/" /proc/self/mounts)" -eq 0 ] || fail "the host sees a node's mounts"
touch "$T/out/go"
i=0
while [ -n "$(squeue -h)" ]; do
    i=$((i + 1))
    [ "$i" -gt 300 ] && fail "two jobs did not finish"
    sleep 0.1
done
check_tasks "$T/out/two-a.out" "$sum_a" 2
check_tasks "$T/out/two-b.out" "$sum_b" 2
check_clean "two jobs"
note "two images on one node at once ok"

# --- 7. sbcast recipe on both nodes; a cancelled one -----------------
# Each node has its own /dev/shm: the copy, the directory and the mount
# must be made on every node, and nothing may stay on any.
exports="ALL,MOUNTCTL=$T/bin/mountctl,SQUASHCACHED=$T/bin/squashcached,READIT=$T/bin/readit"
: >"$T/starts.log"
as_user sbatch -W -N2 -o "$T/out/sbcast.out" --export="$exports" \
    "$PTOP/slurm/examples/sbcast-job.sh" "$T/img/alpha.sqfs" >/dev/null ||
    { cat "$T/out/sbcast.out"; fail "sbcast job failed"; }
check_tasks "$T/out/sbcast.out" "$sum_a" 2
[ "$(grep '^task ' "$T/out/sbcast.out" | cut -d' ' -f2 | sort -u | wc -l)" -eq 2 ] || fail "sbcast: not both nodes"
[ "$(wc -l <"$T/starts.log")" -eq 2 ] || { cat "$T/starts.log"; fail "sbcast: not one daemon per node"; }
check_clean "sbcast"
cat >"$T/bin/readit-hang" <<EOR
#!/bin/sh
"$T/bin/readit"
touch "$T/out/sbcast-up.\$SLURMD_NODENAME"
exec sleep 300
EOR
chmod 0755 "$T/bin/readit-hang"
j=$(as_user sbatch --parsable -N2 -o "$T/out/sbcast-cancel.out" \
    --export="${exports%,READIT=*},READIT=$T/bin/readit-hang" \
    "$PTOP/slurm/examples/sbcast-job.sh" "$T/img/alpha.sqfs")
i=0
until [ -e "$T/out/sbcast-up.$N1" ] && [ -e "$T/out/sbcast-up.$N2" ]; do
    i=$((i + 1))
    [ "$i" -gt 300 ] && { cat "$T/out/sbcast-cancel.out"; fail "cancelled sbcast job: tasks did not start"; }
    sleep 0.1
done
[ -n "$(left_on "$N1")" ] && [ -n "$(left_on "$N2")" ] || fail "sbcast: no copy on a node while the job runs"
scancel "$j"
check_clean "sbcast, cancelled"
note "sbcast recipe ok, and a cancelled one left nothing on either node"

# --- 8. The user's task prolog (needs mountctl acquire) -------------
if "$T/bin/mountctl" acquire --help >/dev/null 2>&1; then
    for per in 1 2 4; do
        : >"$T/starts.log"
        as_user env SQUASHCACHED="$T/bin/squashcached" SQUASHCACHE_IMAGE="$T/img/alpha.sqfs" SQUASHCACHE_SLURM_CONF="$T/squashcache-slurm.conf" SQUASHCACHE_MOUNTCTL="$T/bin/mountctl" \
            srun -N2 --ntasks-per-node=$per --task-prolog="$PTOP/slurm/hooks/task-prolog" "$T/bin/readit" \
            >"$T/tp$per.out" 2>&1 || { cat "$T/tp$per.out"; fail "task prolog, $per per node, failed"; }
        check_tasks "$T/tp$per.out" "$sum_a" $((2 * per))
        [ "$(grep -c -- "-$N1/" "$T/starts.log")" -eq 1 ] && [ "$(grep -c -- "-$N2/" "$T/starts.log")" -eq 1 ] ||
            { cat "$T/starts.log"; fail "task prolog $per: not one mount per node"; }
        check_clean "task prolog $per"
    done
    note "task prolog with 1, 2, 4 tasks per node ok"
    if as_user env SQUASHCACHED="$T/bin/squashcached" SQUASHCACHE_IMAGE="$T/img/bad.sqfs" SQUASHCACHE_SLURM_CONF="$T/squashcache-slurm.conf" SQUASHCACHE_MOUNTCTL="$T/bin/mountctl" \
        srun -N2 --ntasks-per-node=2 --task-prolog="$PTOP/slurm/hooks/task-prolog" "$T/bin/readit" \
        >"$T/tp-bad.out" 2>&1 && grep -q '^task ' "$T/tp-bad.out"; then
        cat "$T/tp-bad.out"
        fail "task prolog: a bad image ran the tasks"
    fi
    grep -q "squashcache: $T/img/bad.sqfs: " "$T/tp-bad.out" || { cat "$T/tp-bad.out"; fail "task prolog: no message for a bad image"; }
    check_clean "task prolog, bad image"
    note "task prolog, bad image: $(grep squashcache: "$T/tp-bad.out" | head -n 1)"
else
    note "SKIPPED task prolog cases: this mountctl has no 'acquire' (holders not merged)"
fi

# --- 9. Clean stop ---------------------------------------------------
t0=$(date +%s.%N)
cluster_stop
t1=$(date +%s.%N)
note "cluster stopped in $(echo "$t1 - $t0" | bc 2>/dev/null || echo '?') s"
pgrep -af "$T/cl/etc/slurm.conf" && fail "a Slurm daemon survived the stop"
grep -q " $T/" /proc/self/mounts && fail "a mount survived"
exit 0

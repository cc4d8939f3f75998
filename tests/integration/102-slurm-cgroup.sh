#!/bin/sh
# TIMEOUT: 300
# ALONE: starts the Slurm test cluster, with cgroups
# SANITIZE: no (100 under cgroups: the same C paths, sanitized in 091 and 103)
# The Slurm side under a production-like configuration
# (tests/slurm/cluster.sh cgroup mode: proctrack/cgroup, task/cgroup with
# ConstrainRAMSpace, PrologFlags=Contain, each node with its own /dev/shm
# and /tmp), jobs run by a non-root test user:
#   - SPANK --dataset with --mem: a batch job of three steps on two nodes
#     reads the mount in each step; each node's daemon is one process for
#     the whole job, inside the job's extern step (its freezer, memory and
#     cpuset cgroups, from /proc/PID/cgroup), its RAM budget (mountctl
#     status --json, stage.budget) within --mem and taken from the job's
#     limit; afterwards no mount, daemon, job directory or job cgroup;
#   - a job over its memory limit: Slurm kills it (OUT_OF_MEMORY), and no
#     mount or daemon is left;
#   - the sbcast recipe on both nodes, and a cancelled one: nothing left
#     on either node.
# The test's files must be where every node sees them: not in /tmp.
case "${SQC_TMPDIR:-/tmp}" in /tmp | /tmp/* | /dev/shm*) SQC_TMPDIR=/var/tmp ;; esac
export SQC_TMPDIR
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: starts munge, slurmctld and two slurmd, adds a test user"
need_cmd mksquashfs
for c in slurmctld slurmd srun sbatch sinfo munged sbcast scancel unshare nsenter; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed (sh tests/deps.sh slurm)"
done
[ -e /dev/fuse ] || skip "no /dev/fuse"
[ -f "$BUILD/squashcache_spank.so" ] || skip "no SPANK plugin built (libslurm-dev missing)"
. "$TOP/tests/slurm/cluster.sh"

# The job's user, of this run; what it and the nodes run is in $PTOP.
add_test_user U
uid=$(id -u "$U")

# Binaries the test user can run; squashcached logs each start.
mkdir -p "$T/bin/real" "$T/img" "$T/out" "$T/src" "$T/cl/hooks" "$T/cl/etc"
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
options=cache=32M,meta=16M
EOC
head -c 3000000 /dev/urandom >"$T/src/big.bin"
echo hello >"$T/src/hello.txt"
mkimg "$T/src" "$T/img/alpha.sqfs"
chmod 0644 "$T/img"/*
sum=$(cd "$T/src" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)

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
at_exit 'for p in $(pgrep -f "^$T/bin/real/squashcached "); do kill -9 "$p"; done'
t0=$(date +%s.%N)
rc=0
cluster_start "$T/cl" cgroup || rc=$?
[ "$rc" -eq 77 ] && skip "no cgroup freezer and memory controllers (v1) or memory (v2) mounted"
[ "$rc" -eq 0 ] || { tail -n 30 "$T/cl/log/"*.log; fail "cluster did not start"; }
note "cgroup cluster up in $(echo "$(date +%s.%N) - $t0" | bc) s: nodes $CL_N1 $CL_N2"
N1=$CL_N1
N2=$CL_N2

as_user() {
    (cd "$T/out" && runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@")
}

# left_on NODE: what jobs left on NODE (mounts, job directories, the
# sbcast recipe's directories), one line each.
left_on() {
    cluster_nsenter "$1" sh -c 'grep " /dev/shm/" /proc/self/mounts
        ls -A /dev/shm/squashcache 2>/dev/null
        ls -d /dev/shm/$0/sqc-* 2>/dev/null' "$U"
}

# check_clean WHAT [JOB]: no mount, daemon or file of ours on a node, no
# cgroup of JOB, nodes idle.
check_clean() {
    i=0
    while [ -n "$(left_on "$N1")$(left_on "$N2")" ] ||
        pgrep -f "$T/bin/real/squashcached" >/dev/null ||
        ls -d /sys/fs/cgroup/*/slurm_*/uid_"$uid"/job_"${2:-none}" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -gt 150 ]; then
            left_on "$N1" | sed "s/^/$N1: /"
            left_on "$N2" | sed "s/^/$N2: /"
            pgrep -af "$T/bin/real/squashcached" || true
            ls -d /sys/fs/cgroup/*/slurm_*/uid_"$uid"/job_"${2:-none}" 2>/dev/null || true
            fail "$1: mounts, daemons, files or cgroups left behind"
        fi
        sleep 0.1
    done
    i=0
    until cluster_idle; do
        i=$((i + 1))
        [ "$i" -gt 100 ] && fail "$1: nodes not idle: $(sinfo -h -o '%N %T %E')"
        sleep 0.1
    done
}

# --- 1. --dataset with --mem, three steps ----------------------------
# Each task prints: node, step, checksum, the daemon's pid, its RAM
# budget and memory limit, and its cgroups.
cat >"$T/bin/probe" <<EOP
#!/bin/sh
m=\$SQUASHCACHE_MOUNT
s=\$(cd "\$m" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
d=\$("$T/bin/mountctl" status --json "\$m" | "$PYTHON" -c 'import json, sys
v = json.load(sys.stdin)[0]
print(v["pid"], v["stage"]["budget"], v["stage"]["ram_limit"])')
set -- \$d
echo "step \$SLURMD_NODENAME \$SLURM_STEP_ID \$s \$d" \$(grep -E '^[0-9]+:(freezer|memory|cpuset):' /proc/\$1/cgroup)
EOP
cat >"$T/out/three.sh" <<EOB
#!/bin/sh
for i in 1 2 3; do
    srun "$T/bin/probe" || exit 1
done
EOB
chmod 0755 "$T/bin/probe" "$T/out/three.sh"
mem=400
j=$(as_user sbatch --parsable -W -N2 --ntasks-per-node=1 --mem=${mem}M -o "$T/out/three.out" \
    --dataset="$T/img/alpha.sqfs" "$T/out/three.sh") || { cat "$T/out/three.out"; fail "three steps: job failed"; }
[ "$(grep -c "^step .* $sum " "$T/out/three.out")" -eq 6 ] || { cat "$T/out/three.out"; fail "three steps: not 6 good reads"; }
for n in "$N1" "$N2"; do
    [ "$(grep -c "/job$j-$n/" "$T/starts.log")" -eq 1 ] || { cat "$T/starts.log"; fail "$n: not one daemon for the job"; }
    [ "$(grep "^step $n " "$T/out/three.out" | cut -d' ' -f5 | sort -u | wc -l)" -eq 1 ] ||
        { cat "$T/out/three.out"; fail "$n: the daemon changed between steps"; }
    line=$(grep "^step $n 2 " "$T/out/three.out")
    for c in freezer memory cpuset; do
        echo "$line" | grep -q ":$c:/slurm_$n/uid_$uid/job_$j/step_extern\( \|$\)" ||
            { cat "$T/out/three.out"; fail "$n: the daemon is not in the job's extern step ($c)"; }
    done
    set -- $line
    [ "$6" -le $((mem << 20)) ] && [ "$7" -eq $((mem << 20)) ] ||
        { echo "$line"; fail "$n: budget $6 limit $7, the job has --mem=${mem}M"; }
done
note "three steps ok: one daemon per node in job_$j/step_extern, budget $(grep "^step $N1 " "$T/out/three.out" | head -n 1 | cut -d' ' -f6) of --mem=${mem}M"
check_clean "three steps" "$j"

# The Slurm daemons' last lines, for a failure that Slurm reports badly
# ("Zero Bytes were transmitted or received" from a node).
cl_logs() {
    for f in "$T"/cl/log/*.log; do
        echo "=== $f"
        tail -n 25 "$f"
    done
    dmesg 2>/dev/null | tail -n 15
}

# --- 2. Over its memory limit: killed by Slurm, nothing left -------------
cat >"$T/out/oom.sh" <<EOB
#!/bin/sh
srun "$T/bin/probe"
exec "$PYTHON" -c 'x = b"\1" * (600 << 20); print("allocated", len(x))'
EOB
chmod 0755 "$T/out/oom.sh"
j=$(as_user sbatch --parsable -W -N1 -w "$N1" --mem=200M -o "$T/out/oom.out" \
    --dataset="$T/img/alpha.sqfs" "$T/out/oom.sh") && { cat "$T/out/oom.out"; fail "oom: the job succeeded"; }
grep -q "^step $N1 0 $sum " "$T/out/oom.out" || { cat "$T/out/oom.out"; fail "oom: no read before"; }
grep -q "^allocated" "$T/out/oom.out" && fail "oom: 600 MB fit in --mem=200M"
i=0
while st=$(scontrol show job "$j" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p') &&
    [ "$st" = COMPLETING ] && [ "$i" -lt 150 ]; do
    i=$((i + 1))
    sleep 0.1
done
[ "$st" = OUT_OF_MEMORY ] || { cat "$T/out/oom.out"; fail "oom: job state $st"; }
check_clean "oom" "$j"
note "a job over --mem=200M: $st, nothing left"

# --- 3. sbcast recipe on both nodes; a cancelled one -----------------
exports="ALL,MOUNTCTL=$T/bin/mountctl,SQUASHCACHED=$T/bin/squashcached"
: >"$T/starts.log"
cat >"$T/bin/readit" <<EOR
#!/bin/sh
s=\$(cd "\$SQUASHCACHE_MOUNT" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
echo "task \$SLURMD_NODENAME \$s"
[ -z "\${HANG:-}" ] && exit 0
touch "$T/out/sbcast-up.\$SLURMD_NODENAME"
exec sleep 300
EOR
chmod 0755 "$T/bin/readit"
j=$(as_user sbatch --parsable -W -N2 -o "$T/out/sbcast.out" --export="$exports,READIT=$T/bin/readit" \
    "$PTOP/slurm/examples/sbcast-job.sh" "$T/img/alpha.sqfs") ||
    { cat "$T/out/sbcast.out"; fail "sbcast job failed"; }
[ "$(grep -c "^task .* $sum" "$T/out/sbcast.out")" -eq 2 ] &&
    [ "$(grep '^task ' "$T/out/sbcast.out" | cut -d' ' -f2 | sort -u | wc -l)" -eq 2 ] ||
    { cat "$T/out/sbcast.out"; fail "sbcast: not a good read on each node"; }
[ "$(wc -l <"$T/starts.log")" -eq 2 ] || { cat "$T/starts.log"; fail "sbcast: not one daemon per node"; }
check_clean "sbcast" "$j"
j=$(as_user sbatch --parsable -N2 -o "$T/out/sbcast-cancel.out" \
    --export="$exports,READIT=$T/bin/readit,HANG=1" \
    "$PTOP/slurm/examples/sbcast-job.sh" "$T/img/alpha.sqfs")
i=0
until [ -e "$T/out/sbcast-up.$N1" ] && [ -e "$T/out/sbcast-up.$N2" ]; do
    i=$((i + 1))
    [ "$i" -gt 300 ] && { cat "$T/out/sbcast-cancel.out"; cl_logs; fail "cancelled sbcast job: tasks did not start"; }
    sleep 0.1
done
[ -n "$(left_on "$N1")" ] && [ -n "$(left_on "$N2")" ] || fail "sbcast: no copy on a node while the job runs"
scancel "$j"
check_clean "sbcast, cancelled" "$j"
note "sbcast recipe ok, and a cancelled one left nothing on either node"

# --- 4. Clean stop: no daemon, mount or cgroup of the nodes left --------
t0=$(date +%s.%N)
cluster_stop
note "cluster stopped in $(echo "$(date +%s.%N) - $t0" | bc) s"
pgrep -af "$T/cl/etc/slurm.conf" && fail "a Slurm daemon survived the stop"
grep -q " $T/" /proc/self/mounts && fail "a mount survived"
ls -d /sys/fs/cgroup/*/slurm_"$N1" /sys/fs/cgroup/*/slurm_"$N2" 2>/dev/null && fail "the nodes' cgroups are left"
exit 0

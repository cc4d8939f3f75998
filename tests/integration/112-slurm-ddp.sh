#!/bin/sh
# TIMEOUT: 420
# SANITIZE: no (a deployment test on the Slurm cluster; the order's C paths run sanitized in 072, 073 and 078)
# ALONE: starts the Slurm test cluster
# The seeds' job shape on a real 2-node Slurm cluster (issue 38;
# tests/slurm/cluster.sh: each node with its own /dev/shm and /tmp, jobs
# run by a non-root test user): `srun -N2 --ntasks-per-node=4` of a
# DistributedDataParallel job (torch.distributed over gloo on the CPU, a
# linear model) over ImageFolder, each rank a DistributedSampler wrapped in
# squashcache.torch.EpochOrder, 2 persistent DataLoader workers, 2 epochs
# (tests/py/ddp_check.py), on each node's one mount of an image larger
# than its ram= (with direct_io: the data set is tiny, and each epoch's
# reads must reach the daemon):
#   1. through the user's task prolog (local task 0 mounts, the others
#      wait for it: SLURM_LOCALID gating), and
#   2. through the SPANK plugin (--dataset);
# each time every rank's batches, tensors and losses, and the weights,
# equal those of the same job over the source directory; one daemon per
# node; each node's daemon held its 4 ranks' orders and served each
# rank's whole order in each epoch; nothing is left mounted, running or
# on a node's /dev/shm after the job.  Starts the Slurm cluster: run it
# under `flock /run/sqc-dev-slurm.lock` beside other work.
# The test's files must be where every node sees them: not in /tmp.
case "${SQC_TMPDIR:-/tmp}" in /tmp | /tmp/* | /dev/shm*) SQC_TMPDIR=/var/tmp ;; esac
export SQC_TMPDIR
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: starts munge, slurmctld and two slurmd, adds a test user"
need_cmd mksquashfs
for c in slurmctld slurmd srun munged setpriv unshare nsenter; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed (sh tests/deps.sh slurm)"
done
[ -e /dev/fuse ] || skip "no /dev/fuse"
[ -f "$BUILD/squashcache_spank.so" ] || skip "no SPANK plugin built (libslurm-dev missing)"
"$PYTHON" -c 'import torch.distributed, torchvision' >"$T/import.log" 2>&1 ||
    skip "$PYTHON cannot import torch.distributed and torchvision: $(tail -n 1 "$T/import.log")"
. "$TOP/tests/slurm/cluster.sh"

add_test_user U
stage_public
mkdir -p "$T/bin/real" "$T/state" "$T/img" "$T/out"
chmod 1777 "$T/out"
cp "$PTOP/build/mountctl" "$T/bin/mountctl"
cp "$PTOP/build/squashcached" "$T/bin/real/squashcached"
: >"$T/starts.log"
chmod 0666 "$T/starts.log"
# squashcached logs each start: its argv names the mount point (job, node).
cat >"$T/bin/squashcached" <<EOW
#!/bin/sh
echo "\$*" >>"$T/starts.log"
exec "$T/bin/real/squashcached" "\$@"
EOW
chmod 0755 "$T/bin/squashcached"

note "96 small JPEGs in 4 classes, packed; ram= a quarter of the image"
"$PYTHON" "$PTOP/tests/py/ddp_check.py" gen "$T/src" --classes 4 --per-class 24
chmod -R go+rX "$T/src"
mkimg "$T/src" "$T/img/ds.sqfs" -comp zstd -noF -no-xattrs
chmod 0644 "$T/img/ds.sqfs"
cat >"$T/squashcache-slurm.conf" <<EOC
# test config (base= is the default, /dev/shm: each node's own)
mountctl=$T/bin/mountctl
state=$T/state
options=cache=64M,ram=$(($(stat -c %s "$T/img/ds.sqfs") / 4)),direct_io
EOC

# A rank: over its node's mount ($SQUASHCACHE_MOUNT), or over $1.
cat >"$T/bin/rank" <<EOR
#!/bin/sh
root=\${1:-\$SQUASHCACHE_MOUNT}
exec env PYTHONPATH="$PTOP/python" SQUASHCACHE_MOUNTCTL="$T/bin/mountctl" \\
    "$PYTHON" "$PTOP/tests/py/ddp_check.py" run --root "\$root" \\
    --out "$T/out/\$RUN" --init "file://$T/out/init-\$RUN" \$HINT
EOR
chmod 0755 "$T/bin/rank"

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
at_exit 'for p in $(pgrep -f "^$T/bin/real/squashcached "); do kill -9 "$p"; done'
cluster_start "$T/cl" || { tail -n 30 "$T/cl/log/"*.log; fail "cluster did not start"; }
N1=$CL_N1
N2=$CL_N2

# job RUN HINT IMAGE SRUN_ARGS...: the 8 ranks as the test user; IMAGE,
# if not empty, for the user's task prolog.  (The variables go to srun's
# environment: its --export=ALL,VAR= does not replace one set there.)
job() {
    _jr=$1 _jh=$2 _ji=$3
    shift 3
    (cd "$T/out" && runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" \
        RUN="$_jr" HINT="$_jh" SQUASHCACHE_IMAGE="$_ji" SQUASHCACHED="$T/bin/squashcached" \
        SQUASHCACHE_SLURM_CONF="$T/squashcache-slurm.conf" SQUASHCACHE_MOUNTCTL="$T/bin/mountctl" \
        srun -N2 --ntasks-per-node=4 "$@") \
        >"$T/$_jr.out" 2>&1 || { tail -n 40 "$T/$_jr.out"; fail "the $_jr job failed"; }
}

last_job() {
    scontrol show job -o 2>/dev/null | sed -n 's/^JobId=\([0-9]*\) .*/\1/p' | sort -n | tail -n 1
}

# left_on NODE: mounts in the node's /dev/shm, job directories of the
# plugin, daemons: what a job left there.
left_on() {
    cluster_nsenter "$1" sh -c 'grep " /dev/shm/" /proc/self/mounts
        ls -A /dev/shm/squashcache 2>/dev/null'
}

# check_job RUN WHAT: the run's ranks equal the source run's and every
# order was served; one daemon per node; then nothing is left behind.
check_job() {
    "$PYTHON" "$PTOP/tests/py/ddp_check.py" compare --hinted "$T/out/$1" \
        --plain "$T/out/src" --world 8 --nodes 2 >"$T/$1.cmp" 2>&1 ||
        { cat "$T/$1.cmp"; fail "$2: the ranks differ from the source run, or their orders were not served"; }
    sed "s/^/$2: /" "$T/$1.cmp"
    j=$(last_job)
    for n in "$N1" "$N2"; do
        c=$(grep -c "job${j}[.-][0-9]*-*$n/" "$T/starts.log" || true)
        [ "$c" -eq 1 ] || { cat "$T/starts.log"; fail "$2: $c daemons on $n for job $j"; }
    done
    i=0
    while [ -n "$(left_on "$N1")$(left_on "$N2")" ] || pgrep -f "$T/bin/real/squashcached" >/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 100 ]; then
            left_on "$N1" | sed "s/^/$N1: /"
            left_on "$N2" | sed "s/^/$N2: /"
            pgrep -af "$T/bin/real/squashcached" || true
            fail "$2: mounts, daemons or files left behind"
        fi
        sleep 0.1
    done
}

note "the job over the source directory"
job src "" "" "$T/bin/rank" "$T/src"
note "1. the task prolog: local task 0 mounts, the others wait"
job tp --hint "$T/img/ds.sqfs" --task-prolog="$PTOP/slurm/hooks/task-prolog" "$T/bin/rank"
check_job tp "task prolog"
note "2. the SPANK plugin: --dataset"
job spank --hint "" --dataset="$T/img/ds.sqfs" "$T/bin/rank"
check_job spank "spank"
echo "DDP over each node's mount: the source's batches and losses, every rank's order served, nothing left"

#!/bin/sh
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2016 # the scripts in single quotes run on the nodes
# Scale-out recipe: broadcast the image to node-local storage with sbcast
# (Slurm's tree fan-out: the parallel file system serves one copy, not
# one per node), mount it there once per node for the whole job, run,
# and leave nothing on any node, whether the job ends, fails or is
# cancelled.
#
#   sbatch -N 1000 sbcast-job.sh /lustre/datasets/imagenet.sqfs
#
# Under ProctrackType=proctrack/cgroup Slurm kills every process of a
# step when the step ends, a daemon started in it included, and a
# cancelled job can start no step to clean up with.  So each node's
# mount lives in a holder step: one task per node, started first, in the
# background, with --overlap (it takes no CPU or memory away from the
# work steps).  Each holder makes its node's directory, waits for the
# copy, runs the daemon as its child, and when Slurm or this script
# stops it (the job is done or failed: this script says so; it was
# cancelled: Slurm sends SIGTERM) unmounts and removes the directory, copy
# included.
#
# SQC_LOCAL_DIR  node-local directory (default /dev/shm/$USER; a local SSD
#                such as /local/scratch saves RAM, mount with ram=0 then)
# MOUNTCTL       mountctl to use (default: mountctl in PATH)
# SQUASHCACHED   squashcached to use (default: squashcached in PATH)
# READIT         the program each task runs (default: an example ls);
#                it finds the dataset in $SQUASHCACHE_MOUNT
#SBATCH --ntasks-per-node=1
set -eu
img=${1:?usage: sbatch sbcast-job.sh IMAGE}
# On each node: SQC_DIR holds the copy and the mount point mnt-NODE (the
# node's name keeps apart nodes that share one host, whose daemons share
# its abstract control socket names).
SQC_DIR="${SQC_LOCAL_DIR:-/dev/shm/$USER}/sqc-$SLURM_JOB_ID"
SQC_COPY="$SQC_DIR/$(basename "$img")"
SQC_MOUNTCTL=${MOUNTCTL:-mountctl}
SQC_DAEMON=${SQUASHCACHED:-squashcached}
export SQC_DIR SQC_COPY SQC_MOUNTCTL SQC_DAEMON

# 1. The holders (the steps get these variables from srun's environment).
srun --overlap --ntasks-per-node=1 sh -c '
    mnt=$SQC_DIR/mnt-$SLURMD_NODENAME
    bye() {
        fusermount3 -u -z "$mnt" 2>/dev/null || true
        rm -rf "$SQC_DIR"
    }
    trap bye EXIT
    trap "exit 0" TERM INT HUP
    mkdir -p "$mnt"
    until [ -e "$SQC_DIR/go" ]; do sleep 0.2; done
    "$SQC_DAEMON" -f "$SQC_COPY" "$mnt" &
    while [ ! -e "$SQC_DIR/stop" ] && kill -0 $! 2>/dev/null; do
        sleep 0.2
    done
' </dev/null &
holder=$!
# On the way out (done, or a command failed): tell the holders to stop.
# (Not with a signal: srun turns SIGTERM into SIGKILL for its tasks.)
trap 'on_each_node "touch \"\$SQC_DIR/stop\"" || true; wait "$holder" || true' EXIT

# on_each_node SCRIPT: run SCRIPT once on every node (SQC_* and
# mnt=its mount point set); fails if it fails anywhere.
on_each_node() {
    srun --overlap --ntasks-per-node=1 sh -c \
        'mnt=$SQC_DIR/mnt-$SLURMD_NODENAME; i=0; '"$1"
}

# 2. One read of the image from the parallel file system, fanned out to
#    the directories the holders made on every node.
on_each_node 'until [ -d "$mnt" ]; do
        i=$((i + 1)); [ "$i" -le 600 ] || exit 1; sleep 0.1
    done'
sbcast --force "$img" "$SQC_COPY"

# 3. The holders mount; go on once every node's mount answers (a holder
#    whose daemon failed has removed its directory).
on_each_node 'touch "$SQC_DIR/go" || exit 1
    until "$SQC_MOUNTCTL" status "$mnt" >/dev/null 2>&1; do
        i=$((i + 1))
        [ -d "$SQC_DIR" ] && [ "$i" -le 1200 ] ||
            { echo "$SLURMD_NODENAME: no mount at $mnt" >&2; exit 1; }
        sleep 0.1
    done'

# 4. The work: every task of every node reads its node's mount.
srun sh -c "SQUASHCACHE_MOUNT=\$SQC_DIR/mnt-\$SLURMD_NODENAME
    export SQUASHCACHE_MOUNT
    exec ${READIT:-ls -d \"\$SQUASHCACHE_MOUNT\"}"

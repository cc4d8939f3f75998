#!/bin/sh
# SPDX-License-Identifier: MIT
# Scale-out recipe: broadcast the image to node-local storage with sbcast
# (Slurm's tree fan-out: the parallel file system serves one copy, not
# one per node), mount it there once per node, run, unmount.
#
#   sbatch -N 1000 sbcast-job.sh /lustre/datasets/imagenet.sqfs
#
# SQC_LOCAL_DIR  node-local directory (default /dev/shm/$USER; a local SSD
#                such as /local/scratch saves RAM, mount with ram=0 then)
# MOUNTCTL       mountctl to use (default: mountctl in PATH)
# READIT         the program each task runs (default: an example ls);
#                it finds the dataset in $SQUASHCACHE_MOUNT
#SBATCH --ntasks-per-node=1
set -eu
img=${1:?usage: sbatch sbcast-job.sh IMAGE}
mountctl=${MOUNTCTL:-mountctl}
local=${SQC_LOCAL_DIR:-/dev/shm/$USER}
copy="$local/sqc-$SLURM_JOB_ID-$(basename "$img")"

# 1. One read of the image from the parallel file system, fanned out.
mkdir -p "$local"
sbcast --force "$img" "$copy"

# 2. One mount per node (the node name keeps emulated nodes apart), as
#    ourselves; mountctl returns once the mount answers.
mnt_of='$SQC_BASE/job$SLURM_JOB_ID-$SLURMD_NODENAME/data'
export SQC_BASE="$local/sqc-mnt-$SLURM_JOB_ID"
srun --ntasks-per-node=1 sh -c "\"$mountctl\" mount \"$copy\" \"$mnt_of\" >/dev/null"

# 3. The work: every task of every node reads the node's mount.
srun sh -c "SQUASHCACHE_MOUNT=\"$mnt_of\"; export SQUASHCACHE_MOUNT; exec ${READIT:-ls -d \"\$SQUASHCACHE_MOUNT\"}"

# 4. Unmount and remove the copy on every node.
srun --ntasks-per-node=1 sh -c "\"$mountctl\" umount \"$mnt_of\"; rm -f \"$copy\""

#!/bin/sh
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2016 # the script in single quotes runs in each task
# Data-parallel training as most sites run it: several ranks on each node
# (one per GPU), each a process of its own in the site's container, all
# of a node's ranks reading one mount of the data set image, each rank
# telling the mount its own epoch order (ddp-train.py, beside this file).
#
#   sbatch --dataset=/lustre/project/imagenet-train.sqfs ddp-job.sh
#
# or put the --dataset= line below in the #SBATCH lines.  Each line:
#
# Two nodes; the node's mount is made once for the whole job, on each node,
# by the SPANK plugin (--dataset), before this script starts.
#SBATCH --nodes=2
# One rank per GPU: 8 tasks a node (LUMI-G has 8 GCDs a node), 8 GPUs.
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
# A rank's cores: the rank and its DataLoader's workers (4 below).
#SBATCH --cpus-per-task=7
#SBATCH --time=02:00:00
# The image, if not given on sbatch's command line (then its path
# cannot hold a variable: #SBATCH lines are not run by a shell).
##SBATCH --dataset=/lustre/project/imagenet-train.sqfs
set -eu

# The container, and the training script (the one beside this file).
SIF=${SIF:-$HOME/containers/pytorch.sif}
TRAIN=${TRAIN:-$(pwd)/ddp-train.py}
# Where the ranks meet: the first node of the job, a free port.
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
MASTER_PORT=${MASTER_PORT:-29500}
export MASTER_ADDR MASTER_PORT TRAIN

# Inside the container the ranks need squashcache's Python module and
# mountctl (EpochOrder runs `mountctl order`): the squashcache package
# installed in the image, or the host's bound in, as below (mountctl
# needs the compression libraries it links in the image too: see `ldd
# mountctl`).  Where neither is there, EpochOrder warns once and training
# goes on without the order: slower behind slow storage, the same
# batches.
SQC_PY=${SQC_PY:-/usr/lib/python3/dist-packages/squashcache}
SQC_MOUNTCTL=${SQC_MOUNTCTL:-$(command -v mountctl || echo /usr/bin/mountctl)}
export SIF SQC_PY SQC_MOUNTCTL

# One task per rank (srun takes --ntasks-per-node from above); each one
# runs the container.  sh -c, so that $SQUASHCACHE_MOUNT is expanded in
# the task, where the plugin set it (the node's mount point).
#   -B "$SQUASHCACHE_MOUNT"    the node's mount, at the same path inside
#                              (its control socket is found by that path)
#   -B "$SQC_PY":...           the squashcache module, on PYTHONPATH
#   -B "$SQC_MOUNTCTL":...     mountctl, named by SQUASHCACHE_MOUNTCTL
#   --env ...                  where the module and mountctl are inside;
#                              the rest of the environment (MASTER_*,
#                              SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID)
#                              passes into the container as it is
srun sh -c 'exec singularity exec --nv \
    -B "$SQUASHCACHE_MOUNT" \
    -B "$SQC_PY":/opt/squashcache/squashcache \
    -B "$SQC_MOUNTCTL":/opt/squashcache/mountctl \
    --env PYTHONPATH=/opt/squashcache,SQUASHCACHE_MOUNTCTL=/opt/squashcache/mountctl \
    "$SIF" python "$TRAIN" --data "$SQUASHCACHE_MOUNT" --workers 4'
# The job ends here; the plugin unmounts each node's mount after it.

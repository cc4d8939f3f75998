#!/bin/sh
# TIMEOUT: 600
# ALONE: starts the Slurm test cluster, with cgroups
# SANITIZE: no (101's cases under cgroups: the same C paths, sanitized in 101)
# 101-slurm-hostile's cases on a cluster as production sites run Slurm
# (tests/slurm/cluster.sh cgroup mode: proctrack/cgroup, task/cgroup,
# PrologFlags=Contain): there Slurm kills a job's processes by its
# cgroups, and the root side's children (a job_prolog's mount, the
# epilog's cleanup) run outside them.  By default the cases where that
# matters: 1 (the user's files and directories where the hooks make
# theirs), 2 (100,000 directories: the epilog's bound), 3 (symlinks and
# a nested mount of the user's own) and 8 (storage that never answers);
# SQC_HOSTILE_CASES picks others.
SQC_HOSTILE_MODE=cgroup SQC_HOSTILE_CASES=${SQC_HOSTILE_CASES:-1 2 3 8 10} \
    exec sh "$(dirname "$0")/101-slurm-hostile.sh"

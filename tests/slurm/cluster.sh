# SPDX-License-Identifier: MIT
# A real 2-node Slurm cluster on this machine for the hook tests (sourced).
#
#   cluster_start DIR   munged (unless running), slurmctld, slurmd n1 and n2
#                       (CPUs=8 each, config_overrides), all state, logs and
#                       pid files under DIR; Prolog/Epilog/TaskProlog and
#                       PlugStackConfig point at DIR/hooks and DIR/etc.
#   cluster_stop        stops what cluster_start started, by pid file, and
#                       waits until each daemon has exited.
#   cluster_env         prints SLURM_CONF=... for clients.
# Ports: SQC_SLURM_PORT (default 26817) for slurmctld, +1/+2 for the
# slurmd of n1/n2 (well away from Slurm's 6817-6818).
# The caller writes DIR/hooks/{prolog,epilog,task-prolog} and
# DIR/etc/plugstack.conf before cluster_start.
# shellcheck shell=sh

_cl_dir=
_cl_munge=

cluster_start() {
    _cl_dir=$1
    port=${SQC_SLURM_PORT:-26817}
    mkdir -p "$_cl_dir/etc" "$_cl_dir/state/ctld" "$_cl_dir/state/d" \
        "$_cl_dir/run" "$_cl_dir/log"
    if ! pgrep -x munged >/dev/null 2>&1; then
        mkdir -p /run/munge && chown munge:munge /run/munge
        runuser -u munge -- munged || return 1
        _cl_munge=$(cat /run/munge/munged.pid 2>/dev/null || true)
    fi
    cat >"$_cl_dir/etc/slurm.conf" <<EOC
ClusterName=sqctest
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$_cl_dir/state/ctld
SlurmdSpoolDir=$_cl_dir/state/d/%n
SlurmctldPidFile=$_cl_dir/run/slurmctld.pid
SlurmdPidFile=$_cl_dir/run/slurmd-%n.pid
SlurmctldLogFile=$_cl_dir/log/slurmctld.log
SlurmdLogFile=$_cl_dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
InactiveLimit=0
KillWait=5
MinJobAge=30
PrologEpilogTimeout=60
PlugStackConfig=$_cl_dir/etc/plugstack.conf
Prolog=$_cl_dir/hooks/prolog
Epilog=$_cl_dir/hooks/epilog
TaskProlog=$_cl_dir/hooks/task-prolog
PrologFlags=Alloc
NodeName=n1 NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 Port=$((port + 1)) CPUs=8 RealMemory=2000 State=UNKNOWN
NodeName=n2 NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 Port=$((port + 2)) CPUs=8 RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOC
    SLURM_CONF=$_cl_dir/etc/slurm.conf
    export SLURM_CONF
    slurmctld -c -f "$SLURM_CONF" || return 1
    slurmd -f "$SLURM_CONF" -N n1 || return 1
    slurmd -f "$SLURM_CONF" -N n2 || return 1
    i=0
    until [ "$(sinfo -h -o '%T' 2>/dev/null | sort -u)" = idle ]; do
        i=$((i + 1))
        if [ "$i" -gt 300 ]; then
            echo "cluster: nodes not idle after 30 s:" >&2
            sinfo >&2 || true
            return 1
        fi
        sleep 0.1
    done
}

cluster_stop() {
    [ -n "$_cl_dir" ] || return 0
    pids=
    for f in "$_cl_dir"/run/slurmd-n1.pid "$_cl_dir"/run/slurmd-n2.pid \
        "$_cl_dir"/run/slurmctld.pid; do
        [ -s "$f" ] || continue
        p=$(cat "$f")
        kill "$p" 2>/dev/null && pids="$pids $p"
    done
    i=0
    for p in $pids; do
        while kill -0 "$p" 2>/dev/null; do
            i=$((i + 1))
            if [ "$i" -gt 200 ]; then
                kill -9 "$p" 2>/dev/null || true
                break
            fi
            sleep 0.1
        done
    done
    if [ -n "$_cl_munge" ]; then
        kill "$_cl_munge" 2>/dev/null || true
        _cl_munge=
    fi
    _cl_dir=
}

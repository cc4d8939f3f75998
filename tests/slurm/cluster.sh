# SPDX-License-Identifier: MIT
# A real 2-node Slurm cluster on this machine for the hook tests (sourced).
#
#   cluster_start DIR [MODE]
#                       munged (unless running: see below), slurmctld,
#                       slurmd for the nodes $CL_N1 and $CL_N2 (named for
#                       this run:
#                       MNNNNNRRRRn1 and ...n2, M the mode's letter, NNNNN
#                       the port, RRRR random: Slurm names a node's cgroups
#                       slurm_NODE, and mountctl job takes such a cgroup
#                       for the job's, so no cgroup left by another
#                       cluster, or a real one, may have its name), all
#                       config, state, logs and pid files under DIR
#                       (not under /tmp or /dev/shm, with private storage:
#                       the nodes would not see it); Prolog/Epilog/TaskProlog and
#                       PlugStackConfig point at DIR/hooks and DIR/etc.
#                       MODE plain (default): proctrack/linuxproc,
#                       task/none, PrologFlags=Alloc, CPUs=8 per node
#                       (config_overrides).  MODE cgroup, as production
#                       sites run: proctrack/cgroup, task/cgroup with
#                       ConstrainRAMSpace and ConstrainCores,
#                       PrologFlags=Alloc,Contain, CPUs=2 per node; returns
#                       77 where the machine has no cgroup freezer and
#                       memory controllers.
#                       In both modes each slurmd runs in a mount namespace
#                       of its own with a private tmpfs on /dev/shm and on
#                       /tmp, as real nodes have their own local storage:
#                       jobs, Prolog and daemons of a node see its mounts
#                       and files only, the host sees none of them.  With
#                       CL_STORAGE=shared the nodes share the host's
#                       mounts and files instead (for tests that set up,
#                       from the host, what the nodes must find there).
#   cluster_stop        stops what cluster_start started, by pid file,
#                       waits until each daemon has exited, kills what
#                       still runs in a node's mount namespace (its
#                       slurmstepd, jobs and daemons), and removes the
#                       cgroups Slurm made for the nodes.
#   cluster_nsenter NODE CMD...
#                       runs CMD in NODE's mount namespace (to look at its
#                       /proc/self/mounts, /dev/shm, /tmp).
#   cluster_idle        true when every node is idle: "idle", or
#                       "planned", an idle node the backfill scheduler set
#                       aside for a job that has run since (Slurm 22.05
#                       clears it at its next cycle, bf_interval: 30 s).
# munged is one for every cluster on the machine: the cluster that starts
# it marks it (/run/squashcache-test-munged), and the last cluster to
# stop, the one that finds no slurmctld left, stops it; both under one
# lock, so that no cluster's munged is stopped under it.
# Ports: SQC_SLURM_PORT for slurmctld, +1/+2 for the slurmd of the two
# nodes; unset, the first of 26817, 26820, ... (well away from Slurm's
# 6817-6818) whose three ports no socket listens on (a cluster of another
# run, or one a killed test left, keeps its own).  The port taken is in
# CL_PORT.  Job ids start at 10 * port, so that two clusters on one
# machine never share a job id (nor a job's cgroup).
# The caller writes DIR/hooks/{prolog,epilog,task-prolog} and
# DIR/etc/plugstack.conf before cluster_start, naming what the nodes and
# the jobs' users run (hooks, the SPANK plugin, programs) in lib.sh's
# stage_public copy ($PTOP), never in the checkout: that may be where
# the users cannot read (a 0700 home) or the nodes cannot see (/tmp).
# shellcheck shell=sh

_cl_dir=
_cl_lock=/run/squashcache-test-cluster.lock
_cl_mark=/run/squashcache-test-munged
_cl_mode=
CL_N1=
CL_N2=
CL_PORT=

# _cl_free_port: the first port P from 26817 on, in steps of 3, such
# that nothing listens on P, P+1 or P+2 (TCP).
_cl_free_port() {
    _fp=26817
    while [ "$_fp" -lt 26917 ]; do
        if [ -z "$(ss -Hltn "( sport = :$_fp or sport = :$((_fp + 1)) or sport = :$((_fp + 2)) )" 2>/dev/null)" ]; then
            echo "$_fp"
            return 0
        fi
        _fp=$((_fp + 3))
    done
    echo 26817
}

# _cl_has_cgroups: the cgroup controllers the cgroup mode needs (v1
# freezer and memory, or v2 with memory) are mounted.
_cl_has_cgroups() {
    if grep -q '^cgroup2 /sys/fs/cgroup cgroup2 ' /proc/self/mounts; then
        grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null
        return
    fi
    [ -f /sys/fs/cgroup/freezer/tasks ] &&
        [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]
}

# _cl_slurmd NODE: slurmd for NODE in a mount namespace of its own
# (DIR/etc/node-ns.sh runs in it), or in the host's (CL_STORAGE=shared).
_cl_slurmd() {
    if [ "${CL_STORAGE:-private}" = shared ]; then
        slurmd -f "$SLURM_CONF" -N "$1"
        return
    fi
    unshare -m --propagation private sh "$_cl_dir/etc/node-ns.sh" "$1" "$SLURM_CONF"
}

# The namespace starts as a copy of the host's mounts: the copies of FUSE
# and squashfs mounts and of anything under /tmp, /var/tmp and /dev/shm
# are dropped at once, or they would keep other tests' daemons and loop
# devices busy after those tests unmounted them on the host.
_cl_write_node_ns() {
    cat >"$_cl_dir/etc/node-ns.sh" <<'EOS'
# node-ns.sh NODE CONF: slurmd for NODE, in the namespace unshare made.
awk '$3 == "fuse" || $3 == "fuseblk" || $3 ~ /^fuse\./ || $3 == "squashfs" ||
    $2 ~ /^\/(tmp|var\/tmp|dev\/shm)\// { print $2 }' /proc/self/mounts |
    sort -r | while IFS= read -r m; do
        umount -l "$(printf '%b' "$m")" 2>/dev/null || true
    done
mount -t tmpfs -o size=4g,mode=1777 "shm-$1" /dev/shm &&
    mount -t tmpfs -o mode=1777 "tmp-$1" /tmp &&
    exec slurmd -f "$2" -N "$1"
EOS
}

cluster_start() {
    _cl_dir=$1
    _cl_mode=${2:-plain}
    if [ -n "${SQC_SLURM_PORT:-}" ] || ! command -v ss >/dev/null 2>&1; then
        port=${SQC_SLURM_PORT:-26817}
    else
        port=$(_cl_free_port)
    fi
    # shellcheck disable=SC2034 # read by the sourcing test
    CL_PORT=$port
    case "$_cl_dir" in *[[:space:]]*)
        echo "cluster: $_cl_dir: slurm.conf cannot name a path with spaces" >&2
        return 1
        ;;
    esac
    case "${CL_STORAGE:-private}:$_cl_dir" in
    private:/tmp/* | private:/dev/shm/*)
        echo "cluster: $_cl_dir: every node has a /tmp and /dev/shm of its own" >&2
        return 1
        ;;
    esac
    _cl_id=$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')
    CL_N1=p$port${_cl_id}n1
    CL_N2=p$port${_cl_id}n2
    case "$_cl_mode" in
    plain)
        cpus=8
        cg="ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectTypeParameters=CR_CPU
PrologFlags=Alloc"
        ;;
    cgroup)
        _cl_has_cgroups || return 77
        CL_N1=c$port${_cl_id}n1
        CL_N2=c$port${_cl_id}n2
        cpus=2
        cg="ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=200
PrologFlags=Alloc,Contain"
        ;;
    *)
        echo "cluster: unknown mode '$_cl_mode'" >&2
        return 1
        ;;
    esac
    command -v unshare >/dev/null 2>&1 || {
        echo "cluster: needs unshare (util-linux) for private node storage" >&2
        return 1
    }
    mkdir -p "$_cl_dir/etc" "$_cl_dir/state/ctld" "$_cl_dir/state/d/$CL_N1" \
        "$_cl_dir/state/d/$CL_N2" "$_cl_dir/run" "$_cl_dir/log"
    # From here until slurmctld runs, under the lock (fd 9): no other
    # cluster's stop may take munged away meanwhile.
    exec 9>"$_cl_lock"
    flock 9
    if ! pgrep -x munged >/dev/null 2>&1; then
        mkdir -p /run/munge && chown munge:munge /run/munge
        runuser -u munge -- munged 9>&- || { flock -u 9; return 1; }
        cat /run/munge/munged.pid >"$_cl_mark" 2>/dev/null || true
    fi
    cat >"$_cl_dir/etc/cgroup.conf" <<EOC
CgroupPlugin=autodetect
ConstrainCores=yes
ConstrainRAMSpace=yes
EOC
    cat >"$_cl_dir/etc/slurm.conf" <<EOC
ClusterName=sqctest
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
FirstJobId=$((port * 10))
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
$cg
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
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
NodeName=$CL_N1 NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 Port=$((port + 1)) CPUs=$cpus RealMemory=2000 State=UNKNOWN
NodeName=$CL_N2 NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 Port=$((port + 2)) CPUs=$cpus RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOC
    SLURM_CONF=$_cl_dir/etc/slurm.conf
    export SLURM_CONF
    _cl_write_node_ns
    slurmctld -c -f "$SLURM_CONF" 9>&- || { flock -u 9; return 1; }
    flock -u 9
    _cl_slurmd "$CL_N1" || return 1
    _cl_slurmd "$CL_N2" || return 1
    i=0
    until cluster_idle; do
        i=$((i + 1))
        if [ "$i" -gt 300 ]; then
            echo "cluster: nodes not idle after 30 s:" >&2
            sinfo >&2 || true
            return 1
        fi
        sleep 0.1
    done
}

cluster_idle() {
    _ci=$(sinfo -h -N -o '%T' 2>/dev/null) || return 1
    [ -n "$_ci" ] && [ -z "$(echo "$_ci" | grep -Evx 'idle|planned')" ]
}

cluster_nsenter() {
    _cn_pid=$(cat "$_cl_dir/run/slurmd-$1.pid") || return 1
    shift
    nsenter -t "$_cn_pid" -m -- "$@"
}

# _cl_rm_cgroups: the cgroups of this cluster's nodes, deepest first
# (rmdir removes only a cgroup that has no process and no child).
_cl_rm_cgroups() {
    for _rc_m in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts); do
        for _rc_top in "$_rc_m/slurm_$CL_N1" "$_rc_m/slurm_$CL_N2" \
            "$_rc_m/system.slice/${CL_N1}_slurmstepd.scope" \
            "$_rc_m/system.slice/${CL_N2}_slurmstepd.scope"; do
            [ -d "$_rc_top" ] || continue
            find "$_rc_top" -depth -type d -exec rmdir {} + 2>/dev/null || true
        done
    done
}

# _cl_kill_ns NS: kill every process in the mount namespace NS (a node's:
# its slurmstepd, jobs and daemons, which outlive slurmd), wait for them.
_cl_kill_ns() {
    [ -n "$1" ] && [ "$1" != "$(readlink /proc/self/ns/mnt)" ] || return 0
    _kn_i=0
    while :; do
        _kn_left=
        for _kn_p in /proc/[0-9]*; do
            [ "$(readlink "$_kn_p/ns/mnt" 2>/dev/null)" = "$1" ] || continue
            kill -9 "${_kn_p#/proc/}" 2>/dev/null && _kn_left=1
        done
        [ -n "$_kn_left" ] && [ "$_kn_i" -lt 50 ] || break
        _kn_i=$((_kn_i + 1))
        sleep 0.1
    done
}

# _cl_stop_munge: stop the munged a cluster started, if no slurmctld is
# left on the machine (this cluster's has exited), under the lock.
_cl_stop_munge() {
    exec 9>"$_cl_lock"
    flock 9
    _sm_pid=$(cat "$_cl_mark" 2>/dev/null || true)
    if [ "$(cat "/proc/$_sm_pid/comm" 2>/dev/null)" != munged ]; then
        # Gone already (the pid may be another process's by now).
        rm -f "$_cl_mark"
    elif ! pgrep -x slurmctld >/dev/null 2>&1; then
        kill "$_sm_pid" 2>/dev/null || true
        # Wait until it is gone: the next cluster_start must not find it
        # still exiting and leave its cluster without munge.
        _cl_i=0
        while kill -0 "$_sm_pid" 2>/dev/null && [ "$_cl_i" -lt 100 ]; do
            _cl_i=$((_cl_i + 1))
            sleep 0.1
        done
        rm -f "$_cl_mark"
    fi
    flock -u 9
}

cluster_stop() {
    [ -n "$_cl_dir" ] || return 0
    pids=
    nss=
    for f in "$_cl_dir/run/slurmd-$CL_N1.pid" "$_cl_dir/run/slurmd-$CL_N2.pid" \
        "$_cl_dir"/run/slurmctld.pid; do
        [ -s "$f" ] || continue
        p=$(cat "$f")
        case "$f" in */slurmd-*) nss="$nss $(readlink "/proc/$p/ns/mnt" 2>/dev/null)" ;; esac
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
    # What the nodes still run (a failed test's jobs) must not meet the
    # next cluster's jobs, which get the same ids and cgroups.
    for ns in $nss; do
        _cl_kill_ns "$ns"
    done
    if [ "$_cl_mode" = cgroup ]; then
        _cl_rm_cgroups
    fi
    _cl_stop_munge
    _cl_dir=
}

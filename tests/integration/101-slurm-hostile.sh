#!/bin/sh
# TIMEOUT: 600
# ALONE: starts the Slurm test cluster, edits /etc/fuse.conf
# The hostile-user suite of issue #19: the root side of the Slurm hooks
# (slurm.conf Prolog/Epilog/TaskProlog and the SPANK plugin) on a real
# 2-node cluster (tests/slurm/cluster.sh), attacked by the job's own user
# U and by a second user V.  Each case is a function case_N run in a
# subshell; after it, finish_case checks what every case must leave:
# no job left, both nodes idle (a drained one is resumed and the case
# fails), the root-owned decoy directory and its tmpfs mount unchanged,
# no secret (a root-only file name, V's file names) in U's job output,
# no mount or squashcached left.
#
#   SQC_HOSTILE_CASES="1 3 5"   run only these cases (default: all)
#   SQC_HOSTILE_MODE=cgroup     the cluster in cluster.sh's cgroup mode,
#                               as production sites run Slurm (default:
#                               plain; 104-slurm-hostile-cgroup sets it)
#
# The layout is that of the C root side (mountctl job, see
# squashcache_spank(8)): root's BASE/squashcache/jobID-NODE/, mode 0755,
# holding U's mount point NAME; every job that reads checks it.  Cases:
#  1 directories where the hooks expect files: BASE/squashcache a file of
#    U's, its rename-aside name taken, .error/.failed/... in U's mount point
#  2 100,000 empty directories in U's unmounted mount point and in the
#    base: the time from the job's end to an idle node is bounded
#  3 symlinks to a root-owned decoy: BASE/squashcache, and mid-job in U's
#    mount point, with a mount of U's own nested in it
#  4 V squats BASE/squashcache and U's next job directory
#  5 a glob over a root-only directory as the dataset (Prolog and SPANK,
#    and SPANK_DATASET from a client plugin of U's own)
#  6 allow= left by '..', by a symlink, by a directory swapped after the
#    submission was checked
#  7 user options allow_other, log=, ctl= and ones not in user_options=
#    refused; force_options=ram= caps the user's ram=
#  8 an image on storage that never answers (faultfs FAULTFS_BLOCK):
#    the job fails within timeout=, at submission or on the node
#  9 U's control socket name bound first by V
# 10 keep=: V's socket where the site put it, V's job with U's image, U
#    filling the node beyond keep=, kill -9 of the keeper mid-job; the
#    keeper the Prolog starts is in the root cgroups
# The version of this file in commit 35a263a attacks the layout of a4a6893
# (BASE/USER/squashcache, made by the user); there every case failed.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: starts slurmctld and two slurmd, adds test users"
need_cmd mksquashfs python3 runuser useradd
for c in slurmctld slurmd srun sbatch sinfo scontrol squeue scancel munged; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed (sh tests/deps.sh slurm)"
done
[ -c /dev/fuse ] || skip "no /dev/fuse"
[ -f "$BUILD/squashcache_spank.so" ] || skip "no SPANK plugin built (libslurm-dev missing)"
[ -x "$TOOLS/faultfs" ] || fail "$TOOLS/faultfs not built (make tests)"
. "$TOP/tests/slurm/cluster.sh"
# The nodes share the host's /dev/shm and /tmp (cluster.sh): this test
# sets up and looks at their files and mounts from the host.
CL_STORAGE=shared

BASE=$T/shm
DECOY=/var/tmp/sqc-decoy.$$
CASES=${SQC_HOSTILE_CASES:-1 2 3 4 5 6 7 8 9 10}
MODE=${SQC_HOSTILE_MODE:-plain}
EPILOG_BOUND=20   # seconds from a job's end until its node is idle again
TIMEOUT_S=5       # timeout= of the site config: the prolog's budget
chmod 0755 "$T"

# --- users, decoy ------------------------------------------------------
# Users of this run (lib.sh: /dev/fuse by ACL, removed at exit with
# their processes); what they and the nodes run is in $PTOP.
add_test_user U
add_test_user V

make_decoy() {
    mkdir -p "$DECOY/victim" "$DECOY/alpha" "$DECOY/mnt"
    chmod 0755 "$DECOY" "$DECOY/victim" "$DECOY/alpha" "$DECOY/mnt"
    grep -q " $DECOY/mnt " /proc/self/mounts ||
        mount -t tmpfs -o size=1m,mode=0755 sqc-decoy "$DECOY/mnt"
    : >"$DECOY/mnt/keep"
    find "$DECOY" -printf '%p %u %g %m %y %T@\n' | sort >"$T/decoy.snap"
}
# decoy_diff: what changed in the decoy since make_decoy, in words.
decoy_diff() {
    find "$DECOY" -printf '%p %u %g %m %y %T@\n' | sort >"$T/decoy.now"
    cut -d' ' -f1 "$T/decoy.snap" >"$T/decoy.a"
    cut -d' ' -f1 "$T/decoy.now" >"$T/decoy.b"
    echo "removed: $(comm -23 "$T/decoy.a" "$T/decoy.b" | tr '\n' ' ')" \
        "added: $(comm -13 "$T/decoy.a" "$T/decoy.b" | tr '\n' ' ')" \
        "changed: $(comm -23 "$T/decoy.snap" "$T/decoy.now" | cut -d' ' -f1 | grep -xF -f "$T/decoy.b" | tr '\n' ' ')" \
        "mounted: $(grep -c " $DECOY/mnt " /proc/self/mounts)"
}
decoy_intact() {
    grep -q " $DECOY/mnt " /proc/self/mounts &&
        find "$DECOY" -printf '%p %u %g %m %y %T@\n' | sort | cmp -s - "$T/decoy.snap"
}
drop_decoy() {
    umount -l "$DECOY/mnt" 2>/dev/null || true
    rm -rf "$DECOY"
}
at_exit 'drop_decoy'
make_decoy

# --- binaries, images, secrets ----------------------------------------
# The base is a tmpfs of its own, mode 1777, as /dev/shm is: anyone can
# create entries in it, and 100,000 of them come and go in a second.
fresh_base() {
    if grep -q " $BASE " /proc/self/mounts; then
        umount "$BASE" 2>/dev/null || umount -l "$BASE"
    fi
    mkdir -p "$BASE"
    mount -t tmpfs -o size=512m,nr_inodes=1m,mode=1777 sqc-hostile-base "$BASE"
}
at_exit 'umount -l "$BASE" 2>/dev/null; true'
fresh_base
mkdir -p "$T/bin/real" "$T/img" "$T/out" "$T/state" "$T/allowed" \
    "$T/elsewhere" "$T/rootonly" "$T/dead" "$T/jobs"
chmod 1777 "$T/out" "$T/allowed"
chmod 0700 "$T/rootonly"
cp "$PTOP/build/mountctl" "$T/bin/mountctl"
cp "$PTOP/build/squashcached" "$T/bin/real/squashcached"
: >"$T/starts.log"
chmod 0666 "$T/starts.log"
cat >"$T/bin/squashcached" <<EOW
#!/bin/sh
echo "\$(id -un) \$*" >>"$T/starts.log"
exec "$T/bin/real/squashcached" "\$@"
EOW
chmod 0755 "$T/bin/squashcached"

mkdir -p "$T/src/a/sub" "$T/src/x"
head -c 300000 /dev/urandom >"$T/src/a/big.bin"
echo hello >"$T/src/a/sub/hello.txt"
echo OUTSIDE-CONTENT >"$T/src/x/outside.txt"
mkimg "$T/src/a" "$T/img/alpha.sqfs"
mkimg "$T/src/x" "$T/elsewhere/x.sqfs"
chmod 0644 "$T/img/alpha.sqfs" "$T/elsewhere/x.sqfs"
IMG=$T/img/alpha.sqfs
SUM=$(cd "$T/src/a" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
rnd() { od -An -N6 -tx1 /dev/urandom | tr -d ' \n'; }
SECRET=sqcsecret$(rnd)
VSECRET=sqcvprivate$(rnd)
cp "$IMG" "$T/rootonly/$SECRET.sqfs"
echo "$SECRET $VSECRET" >"$T/secrets"
chmod 0600 "$T/secrets"

# What each task runs: the node, job id and checksum of what it read,
# and (for the job's own mount) owner and mode of the two directories
# above the mount point (0:755 in the spec; 0:711 is as good).
cat >"$T/bin/readit" <<'EOR'
#!/bin/sh
m=${1:-$SQUASHCACHE_MOUNT}
s=$(cd "$m" 2>/dev/null && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
echo "task $SLURMD_NODENAME $SLURM_JOB_ID ${s:-none} $m"
if [ $# -eq 0 ]; then
    d=${m%/*}
    echo "layout $SLURMD_NODENAME $SLURM_JOB_ID $(stat -c %u:%a "${d%/*}" "$d" 2>&1 | tr '\n' ' ')"
fi
EOR
chmod 0755 "$T/bin/readit"

# --- site config, hooks, cluster --------------------------------------
# write_conf [KEY=VALUE...]: the site config the hooks read at each run.
# Replaced whole (a rename), never rewritten in place: the Epilog of the
# job a case ran last may read it as the case changes it, and an empty
# file is a config without base= (the Epilog would look for the job's
# directory elsewhere and leave its mount).
write_conf() {
    {
        echo "# written by 101-slurm-hostile.sh"
        echo "base=$BASE"
        echo "mountctl=$T/bin/mountctl"
        echo "state=$T/state"
        echo "options=cache=16M"
        echo "timeout=$TIMEOUT_S"
        for kv in "$@"; do echo "$kv"; done
    } >"$T/conf.new"
    chmod 0644 "$T/conf.new"
    mv -f "$T/conf.new" "$T/conf"
}
write_conf

mkdir -p "$T/cl/hooks" "$T/cl/etc"
: >"$T/hooks.log"
for h in prolog epilog; do
    cat >"$T/cl/hooks/$h" <<EOH
#!/bin/sh
# Runs the project's $h and logs "$h JOB NODE STATUS START END"; what it
# says on stderr goes to hooks.err, each line headed "$h JOB NODE:".
s=\$(date +%s.%N)
e=\$(mktemp)
SQUASHCACHE_SLURM_CONF=$T/conf SQUASHCACHE_MOUNTCTL=$T/bin/mountctl PATH=$T/bin:\$PATH \\
    "$PTOP/slurm/hooks/$h" "\$@" 2>"\$e"
rc=\$?
sed "s|^|$h \${SLURM_JOB_ID:-?} \${SLURMD_NODENAME:-?}: |" "\$e" >>"$T/hooks.err"
rm -f "\$e"
echo "$h \${SLURM_JOB_ID:-?} \${SLURMD_NODENAME:-?} \$rc \$s \$(date +%s.%N)" >>"$T/hooks.log"
exit \$rc
EOH
done
cat >"$T/cl/hooks/task-prolog" <<EOH
#!/bin/sh
SQUASHCACHE_SLURM_CONF=$T/conf SQUASHCACHE_MOUNTCTL=$T/bin/mountctl exec "$PTOP/slurm/hooks/site-task-prolog" "\$@"
EOH
chmod 0755 "$T/cl/hooks"/*
echo "required $PTOP/build/squashcache_spank.so conf=$T/conf" >"$T/cl/etc/plugstack.conf"

at_exit 'cluster_stop'
at_exit 'stop_faultfs; for m in $(awk -v t="$T/" "index(\$2, t) == 1 {print \$2}" /proc/self/mounts); do umount -l "$m" 2>/dev/null; done; for p in $(pgrep -f "squashcached.* $T/"); do kill -9 "$p"; done; true'
at_exit '[ -f "$T/fuse.conf.orig" ] && cat "$T/fuse.conf.orig" >/etc/fuse.conf; true'
rc=0
cluster_start "$T/cl" "$MODE" || rc=$?
[ $rc -ne 77 ] || skip "no cgroup freezer and memory controllers for the cgroup mode"
[ $rc -eq 0 ] || { tail -n 30 "$T/cl/log/"*.log; fail "cluster did not start"; }
note "$MODE cluster up on port $CL_PORT (nodes $CL_N1 $CL_N2); users $U and $V; cases: $CASES"

# --- helpers ------------------------------------------------------------
as_user() {
    _au=$1
    shift
    (cd "$T/out" && runuser -u "$_au" -- env -u SQUASHCACHED -u MOUNTCTL \
        SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@")
}
as_u() { as_user "$U" "$@"; }
as_v() { as_user "$V" "$@"; }

# kill_tree PID: PID and all its descendants, by pid.
kill_tree() {
    for _c in $(pgrep -P "$1"); do kill_tree "$_c"; done
    kill -9 "$1" 2>/dev/null || true
}

# start_job NAME CMD...: run CMD as U in the background, its output in
# $T/out/NAME.out.  wait_job NAME SECONDS: wait for it at most SECONDS;
# sets JOB_RC (124 if it had to be killed) and JOB_SECS.
start_job() {
    _sj=$1
    shift
    as_u "$@" >"$T/out/$_sj.out" 2>&1 </dev/null &
    echo $! >"$T/out/$_sj.pid"
    date +%s.%N >"$T/out/$_sj.t0"
}
wait_job() {
    _wp=$(cat "$T/out/$1.pid")
    _wi=0
    JOB_RC=
    while kill -0 "$_wp" 2>/dev/null; do
        _wi=$((_wi + 1))
        if [ $_wi -gt $(($2 * 10)) ]; then
            echo "(101-slurm-hostile: killed after $2 s)" >>"$T/out/$1.out"
            kill_tree "$_wp"
            JOB_RC=124
            break
        fi
        sleep 0.1
    done
    [ -n "$JOB_RC" ] || { wait "$_wp"; JOB_RC=$?; } || true
    JOB_SECS=$(echo "$(date +%s.%N) - $(cat "$T/out/$1.t0")" | bc)
}
run_job() {
    _rj=$1
    _rs=$2
    shift 2
    start_job "$_rj" "$@"
    wait_job "$_rj" "$_rs"
}

# Batch jobs are not waited for with `sbatch -W`: it asks slurmctld 2, 10
# and 42 s after submission, so a job that needs 11 s would look like one
# that needs 42.  submit_batch NAME ARGS...: as U, sbatch --parsable ARGS
# (output in $T/out/NAME.job); prints the job's id.  wait_batch NAME ID
# SECONDS: from now, wait at most SECONDS for job ID to end (scancel it
# then); sets JOB_RC (the job's exit code, 124 if cancelled) and JOB_SECS,
# and adds the job's output to $T/out/NAME.out.
submit_batch() {
    _sb=$1
    shift
    as_u sbatch --parsable -o "$T/out/$_sb.job" "$@" >"$T/out/$_sb.out" 2>&1 </dev/null ||
        { show "$T/out/$_sb.out"; fail "$_sb: not submitted"; }
    sed -n 's/^\([0-9][0-9]*\).*/\1/p' "$T/out/$_sb.out"
}
wait_batch() {
    _wt0=$(date +%s.%N)
    _wi=0
    JOB_RC=
    if [ -z "$2" ]; then
        JOB_RC=125 JOB_SECS=0
        return
    fi
    while :; do
        _ws=$(scontrol -o show job "$2" 2>/dev/null)
        case $_ws in
        *JobState=COMPLETED* | *JobState=FAILED* | *JobState=CANCELLED* | \
            *JobState=TIMEOUT* | *JobState=NODE_FAIL* | *JobState=BOOT_FAIL* | \
            *JobState=OUT_OF_MEMORY* | *JobState=DEADLINE*)
            _we=$(echo "$_ws" | sed -n 's/.* ExitCode=\([0-9]*\):\([0-9]*\).*/\1 \2/p')
            set -- "$1" "$2" "$3" $_we
            JOB_RC=${4:-255}
            [ "${5:-0}" -eq 0 ] || JOB_RC=$((128 + $5))
            break
            ;;
        esac
        _wi=$((_wi + 1))
        if [ $_wi -gt $(($3 * 10)) ]; then
            echo "(101-slurm-hostile: job $2 cancelled after $3 s: $_ws)" >>"$T/out/$1.out"
            scancel "$2" 2>/dev/null || true
            JOB_RC=124
            break
        fi
        sleep 0.1
    done
    JOB_SECS=$(echo "$(date +%s.%N) - $_wt0" | bc)
    cat "$T/out/$1.job" >>"$T/out/$1.out" 2>/dev/null || true
}

# The id the next job will get (only this test submits here).
next_jobid() {
    _nj=$(sbatch --parsable -H -o /dev/null --wrap true)
    scancel "$_nj"
    echo $((_nj + 1))
}

# read_ok OUT [N]: N (default 1) tasks of OUT read the image, each at
# BASE/squashcache/jobID-NODE/..., both directories root's, not writable
# by group or others.
read_ok() {
    _n=$(grep -c "^task .* $SUM " "$1" || true)
    [ "$_n" -eq "${2:-1}" ] &&
        awk -v b="$BASE/squashcache" '
            # uid:mode of a directory that only root can change
            function root_only(f) { return f ~ /^0:[0-7]*[0145][0145]$/ }
            $1 == "task" && $5 != "" && index($5, b "/job" $3 "-" $2 "/") != 1 { bad = 1 }
            $1 == "layout" && !(root_only($4) && root_only($5)) { bad = 1 }
            END { exit bad }' "$1"
}
# job_of NAME: the job id that job NAME printed.
job_of() {
    sed -n 's/^task [^ ]* \([0-9][0-9]*\) .*/\1/p; s/^ran \([0-9][0-9]*\).*/\1/p' "$T/out/$1.out" | head -n 1
}
show() { sed 's/^/    | /' "$1"; }

# flunk MESSAGE: the case fails, but goes on (to show what else happens).
flunk() {
    echo "FAIL: $*" >&2
    echo "$*" >>"$T/case.bad"
}

# expect_read NAME: the job NAME ran and read the image.
expect_read() {
    [ "$JOB_RC" -eq 0 ] && read_ok "$T/out/$1.out" ||
        { show "$T/out/$1.out"; flunk "$1: the job did not read its image at BASE/squashcache/jobID-NODE/NAME under directories only root can write (exit $JOB_RC)"; }
}

# expect_refused NAME REGEX: the job NAME failed, ran no task that read
# anything, and said why: a "squashcache:" line matching REGEX.
expect_refused() {
    if [ "$JOB_RC" -eq 0 ] || grep -q "^task .* $SUM " "$T/out/$1.out"; then
        show "$T/out/$1.out"
        flunk "$1: the job was not refused (exit $JOB_RC)"
        return 0
    fi
    grep -Eiq "squashcache: .*$2" "$T/out/$1.out" ||
        { show "$T/out/$1.out"; flunk "$1: no clear message (want 'squashcache: ...$2')"; }
}

nodes_idle() { cluster_idle; }
# Is any node busy (a job or a hook still running on it)?
nodes_busy() { sinfo -h -N -o %T | grep -Eq 'alloc|mix|complet|comp'; }
# Is any node drained or down (a hook failed)?
nodes_down() { sinfo -h -N -o %T | grep -Eq 'drain|down|fail'; }
# wait_idle SECONDS: until both nodes are idle; 1 if they are not by then
# or if one has been drained or down with nothing running for a second.
# Any other state (sinfo that failed or timed out on a busy slurmctld, a
# state between two) is waited out.  WAIT_STATES: the states seen.
wait_idle() {
    _wi=0
    WAIT_STATES=
    until nodes_idle; do
        _wst="[$(sinfo -h -N -o '%N %T' 2>&1 | tr '\n' ' ' | sed 's/ $//')]"
        case "$WAIT_STATES" in *"$_wst"*) ;; *) WAIT_STATES="$WAIT_STATES $_wst" ;; esac
        _wi=$((_wi + 1))
        [ $_wi -le $(($1 * 10)) ] || return 1
        if [ $_wi -ge 10 ] && nodes_down && ! nodes_busy; then return 1; fi
        sleep 0.1
    done
}

# epilog_of JOB NODE: "STATUS SECONDS" of that epilog run (hooks.log).
epilog_of() {
    awk -v j="$1" -v n="$2" '$1 == "epilog" && $2 == j && $3 == n {
        printf "%s %.1f\n", $4, $6 - $5 }' "$T/hooks.log" | tail -n 1
}

faultfs_start() {
    : >"$T/dead.fail"
    [ -n "${1:-}" ] && echo "$1" >"$T/dead.fail"
    "$TOOLS/faultfs" "$IMG" "$T/dead" "$T/dead.fail" 2>"$T/faultfs.log" &
    echo $! >"$T/faultfs.pid"
    _fi=0
    until is_mounted "$T/dead"; do
        _fi=$((_fi + 1))
        [ $_fi -lt 250 ] || fail "faultfs did not mount"
        sleep 0.02
    done
}
stop_faultfs() {
    [ -s "$T/faultfs.pid" ] || return 0
    _fp=$(cat "$T/faultfs.pid")
    kill "$_fp" 2>/dev/null || true
    _fi=0
    while kill -0 "$_fp" 2>/dev/null && [ $_fi -lt 50 ]; do
        _fi=$((_fi + 1))
        sleep 0.1
    done
    kill -9 "$_fp" 2>/dev/null || true
    is_mounted "$T/dead" && umount -l "$T/dead" 2>/dev/null
    rm -f "$T/faultfs.pid"
}

# finish_case N RC: what every case must leave behind; repairs what it
# finds so that the next case starts clean.  Records a failure in
# $T/failed.
finish_case() {
    _n=$1
    bad=
    [ "$2" -eq 0 ] || bad="its own checks failed (above)"
    _i=0
    while [ -n "$(squeue -h -o %i -u "$U,$V" 2>/dev/null)" ]; do
        _i=$((_i + 1))
        if [ $_i -gt 200 ]; then
            bad="$bad; jobs left: $(squeue -h -o '%i %T %r' -u "$U,$V" | tr '\n' ' ')"
            scancel -u "$U" 2>/dev/null
            scancel -u "$V" 2>/dev/null
            break
        fi
        sleep 0.1
    done
    if ! wait_idle 30; then
        bad="$bad; nodes not idle after the case: $(sinfo -h -N -o '%N %T %E' | tr '\n' ' ')(seen while waiting:$WAIT_STATES)"
        # Let slurmd finish or kill a hung hook (PrologEpilogTimeout=60).
        _i=0
        while nodes_busy && [ $_i -lt 900 ]; do
            _i=$((_i + 1))
            sleep 0.1
        done
        note "case $_n: nodes then: $(sinfo -h -N -o '%N %T %E' | tr '\n' ' ')"
        scancel -u "$U" 2>/dev/null
    fi
    stop_faultfs
    for _nd in $(sinfo -h -N -o '%N %T' | awk '$2 ~ /drain|down|fail/ {print $1}'); do
        bad="$bad; node $_nd was drained or down (resumed)"
        scontrol update nodename="$_nd" state=resume
    done
    wait_idle 30 || bad="$bad; nodes not idle after resume: $(sinfo -h -N -o '%N %T %E' | tr '\n' ' ')"
    _i=0
    while pgrep -f "squashcached.* $T/" >/dev/null && [ $_i -lt 50 ]; do
        _i=$((_i + 1))
        sleep 0.1
    done
    _left=$(awk -v t="$T/" -v b="$BASE" 'index($2, t) == 1 && $2 != b {print $2}' /proc/self/mounts | tr '\n' ' ')
    if [ -n "$_left" ]; then
        bad="$bad; mounts left: $_left"
        for _m in $_left; do umount -l "$_m" 2>/dev/null || true; done
    fi
    _left=$(find "$BASE/squashcache/" -maxdepth 1 -name 'job*' 2>/dev/null | tr '\n' ' ')
    [ -z "$_left" ] || bad="$bad; job directories left in $BASE/squashcache: $_left"
    [ ! -s "$BASE/squashcache/.epilog-failed" ] ||
        bad="$bad; epilogs noted as failed: $(tr '\n' ' ' <"$BASE/squashcache/.epilog-failed")"
    _left=$(pgrep -f "squashcached.* $T/" | tr '\n' ' ')
    if [ -n "$_left" ]; then
        bad="$bad; daemons left: $(for _p in $_left; do tr '\0' ' ' <"/proc/$_p/cmdline"; echo; done)"
        for _p in $_left; do kill -9 "$_p" 2>/dev/null || true; done
    fi
    if ! decoy_intact; then
        bad="$bad; root's decoy $DECOY changed: $(decoy_diff)"
        drop_decoy
        make_decoy
    fi
    for _s in $SECRET $VSECRET; do
        _f=$(grep -l "$_s" "$T/out/c$_n"* 2>/dev/null | tr '\n' ' ')
        [ -z "$_f" ] || bad="$bad; another user's data ($_s) in U's output: $_f"
    done
    if [ -e /etc/sqc-hostile-x.$$ ]; then
        bad="$bad; /etc/sqc-hostile-x.$$ was created"
        rm -f /etc/sqc-hostile-x.$$
    fi
    [ -f "$T/fuse.conf.orig" ] && cat "$T/fuse.conf.orig" >/etc/fuse.conf && rm -f "$T/fuse.conf.orig"
    for _p in $(cat "$T/vpids" 2>/dev/null); do kill_tree "$_p"; done
    rm -f "$T/vpids"
    for _u in $U $V; do
        for _p in $(pgrep -u "$_u"); do kill -9 "$_p" 2>/dev/null || true; done
    done
    # A fresh base for the next case.
    fresh_base
    rm -rf "$T/state"
    mkdir -p "$T/state"
    write_conf
    if [ -n "$bad" ]; then
        echo "FAIL case $_n:${bad#;}"
        echo "    what the hooks said in case $_n:"
        tail -n "+$((HOOKS_ERR_AT + 1))" "$T/hooks.err" 2>/dev/null | show
        echo "$_n" >>"$T/failed"
    else
        echo "ok   case $_n"
    fi
}

# The layout of docs/slurm.md: root-owned BASE/squashcache and job
# directories, the user's mount point in it.
jobdir() { echo "$BASE/squashcache/job$1-$2"; }

# A job that unmounts its own mount (U may: U's daemon mounted it), so
# that its mount point is a directory of U's to fill.
cat >"$T/bin/own-umount" <<'EOU'
#!/bin/sh
m=$SQUASHCACHE_MOUNT
[ -n "$m" ] || { echo "no SQUASHCACHE_MOUNT"; exit 1; }
i=0
until fusermount3 -u "$m" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 50 ] || { echo "cannot unmount $m"; exit 1; }
    sleep 0.1
done
echo "unmounted $m"
EOU
chmod 0755 "$T/bin/own-umount"

# --- the cases ----------------------------------------------------------

# 1. Directories where the hooks expect files.  Nothing in the job
# directory is U's to write, so U tries BASE/squashcache before root made
# it (a file, and a directory where root would rename it aside), and
# fills its own mount point after unmounting it.
case_1() {
    as_u sh -c "echo junk >$BASE/squashcache &&
        mkdir -p $BASE/squashcache.bad-\$(stat -c %i $BASE/squashcache)/x/y &&
        mkdir -p $BASE/squashcache.bad/x $BASE/squashcache.tmp/x"
    run_job c1a 30 srun -N1 -w "$CL_N1" sh -c 'echo "ran $SLURM_JOB_ID"'
    grep -q '^ran' "$T/out/c1a.out" || { show "$T/out/c1a.out"; flunk "c1a: a job without a dataset did not run"; }
    run_job c1b 30 srun -N1 -w "$CL_N1" --comment="dataset=$IMG" "$T/bin/readit"
    expect_read c1b
    cat >"$T/jobs/c1.sh" <<EOJ
#!/bin/sh
$T/bin/readit
$T/bin/own-umount || exit 0
m=\$SQUASHCACHE_MOUNT
d=\${m%/*}
for n in .error .daemons alpha.failed alpha.err job\$SLURM_JOB_ID-\$SLURMD_NODENAME.alpha.failed; do
    mkdir -p "\$m/\$n/x" "\$d/\$n" "\$d.\$n" 2>/dev/null
done
echo filled
EOJ
    run_job c1c 30 srun -N1 -w "$CL_N2" --dataset="$IMG" sh "$T/jobs/c1.sh"
    expect_read c1c
    grep -q '^filled' "$T/out/c1c.out" || { show "$T/out/c1c.out"; flunk "c1c: the job did not fill its mount point"; }
    run_job c1d 30 srun -N1 -w "$CL_N1" --comment="dataset=$IMG" sh "$T/jobs/c1.sh"
    expect_read c1d
    wait_idle "$EPILOG_BOUND" ||
        flunk "nodes after the .failed/.err tricks: $(sinfo -h -N -o '%N %T %E' | tr '\n' ' ')"
    note "c1 epilogs (status seconds): $(for c in c1a c1b c1d; do epilog_of "$(job_of "$c")" "$CL_N1"; done | tr '\n' ' ')"
}

# 2. 100,000 empty directories in each directory of U's that the hooks
# look at: U's mount point (unmounted by U) and the base itself (1777,
# like /dev/shm).  The time from the job's end until its node is idle
# again is measured and bounded.
case_2() {
    cat >"$T/jobs/c2.sh" <<EOJ
#!/bin/sh
$T/bin/readit
$T/bin/own-umount || exit 0
python3 - "\$SQUASHCACHE_MOUNT" "$BASE" "\$1" <<'EOP'
import os, sys
for i in range(100000):
    os.mkdir("%s/d%06d" % (sys.argv[1], i))
if sys.argv[3] == "base":
    for i in range(100000):
        os.mkdir("%s/junk%06d" % (sys.argv[2], i))
EOP
echo "end \$(date +%s.%N)"
EOJ
    for v in "a $CL_N1 --comment=dataset=$IMG base" "b $CL_N2 --dataset=$IMG -"; do
        set -- $v
        run_job "c2$1" 90 srun -N1 -w "$2" "$3" sh "$T/jobs/c2.sh" "$4"
        expect_read "c2$1"
        end=$(sed -n 's/^end //p' "$T/out/c2$1.out")
        [ -n "$end" ] || { show "$T/out/c2$1.out"; flunk "c2$1: the job did not make its directories"; continue; }
        if wait_idle "$EPILOG_BOUND"; then
            note "c2$1 ($3): $2 idle $(echo "$(date +%s.%N) - $end" | bc) s after the job's end; epilog (status seconds): $(epilog_of "$(job_of "c2$1")" "$2")"
        else
            flunk "c2$1 ($3): $2 not idle $EPILOG_BOUND s after the job: $(sinfo -h -N -o '%N %T %E' | tr '\n' ' ')(seen while waiting:$WAIT_STATES)"
        fi
    done
}

# 3. Symlinks to a root-owned directory where root works: BASE/squashcache
# before root made it, and (mid-job) entries of U's unmounted mount point,
# next to a mount of U's own made inside it.
case_3() {
    as_u ln -s "$DECOY" "$BASE/squashcache"
    run_job c3a 30 srun -N1 -w "$CL_N1" --comment="dataset=$IMG" "$T/bin/readit"
    expect_read c3a
    wait_idle "$EPILOG_BOUND" || true
    if ! decoy_intact; then
        flunk "c3a (BASE/squashcache a symlink to root's directory): the decoy changed: $(decoy_diff)"
        drop_decoy
        make_decoy
    fi
    cat >"$T/jobs/c3.sh" <<EOJ
#!/bin/sh
$T/bin/readit
$T/bin/own-umount || exit 0
m=\$SQUASHCACHE_MOUNT
ln -s "$DECOY/victim" "\$m/victim"
ln -s "$DECOY/alpha" "\$m/alpha"
ln -s "$DECOY" "\$m/decoy"
mkdir "\$m/sub" && ln -s "$DECOY/victim" "\$m/sub/victim"
ln -s "$DECOY" "\${m%/*}/decoy" 2>/dev/null
$T/bin/mountctl mount "$IMG" "\$m/nested" >/dev/null && $T/bin/readit "\$m/nested"
echo swapped
srun -n1 $T/bin/readit "\$m/nested" || true
sleep 1
EOJ
    j=$(submit_batch c3b -N1 -w "$CL_N2" --dataset="$IMG" "$T/jobs/c3.sh")
    wait_batch c3b "$j" 40
    read_ok "$T/out/c3b.out" 2 && grep -q '^swapped' "$T/out/c3b.out" ||
        { show "$T/out/c3b.out"; flunk "c3b: the job did not read, swap and mount"; }
    wait_idle "$EPILOG_BOUND" || true
    decoy_intact || flunk "c3b (symlinks in U's mount point, a nested mount): the decoy changed: $(decoy_diff)"
}

# 4. V squats BASE/squashcache before root made it: a directory of V's
# (0777) holding the job directory U's next job will get, and a symlink
# to such a directory.
case_4() {
    j=$(next_jobid)
    as_v sh -c "mkdir -m 0777 $BASE/squashcache && mkdir -m 0777 -p $(jobdir "$j" "$CL_N1")/alpha &&
        echo private >$(jobdir "$j" "$CL_N1")/alpha/$VSECRET"
    run_job c4a 30 srun -N1 -w "$CL_N1" --dataset="$IMG" "$T/bin/readit"
    expect_read c4a
    wait_idle "$EPILOG_BOUND" || true
    rm -rf "$BASE/squashcache"
    j=$(next_jobid)
    as_v sh -c "mkdir -m 0777 -p $T/out/v4/job$j-$CL_N2/alpha && echo private >$T/out/v4/job$j-$CL_N2/alpha/$VSECRET &&
        ln -s $T/out/v4 $BASE/squashcache"
    run_job c4b 30 srun -N1 -w "$CL_N2" --comment="dataset=$IMG" "$T/bin/readit"
    expect_read c4b
    wait_idle "$EPILOG_BOUND" || true
    [ -f "$T/out/v4/job$j-$CL_N2/alpha/$VSECRET" ] || flunk "c4b: V's file was removed"
}

# 5. A glob over a root-only directory as the dataset list.
case_5() {
    run_job c5a 40 srun -N1 -w "$CL_N1" --comment="dataset=$T/rootonly/*" "$T/bin/readit"
    [ "$JOB_RC" -ne 0 ] || { show "$T/out/c5a.out"; flunk "c5a: the job ran"; }
    grep -q "$SECRET" "$T/out/c5a.out" && { show "$T/out/c5a.out"; flunk "c5a (--comment): the root-only file name is in the job's output"; }
    run_job c5b 40 srun -N1 -w "$CL_N1" --dataset="$T/rootonly/*" "$T/bin/readit"
    [ "$JOB_RC" -ne 0 ] || { show "$T/out/c5b.out"; flunk "c5b: the job ran"; }
    # The submission-side check of the plugin is the user's to skip: a
    # client plugin of U's own passes SPANK_DATASET unchecked, and the
    # site's Prolog reads it (prolog_spank=yes).
    if [ -f "$T/u/pass.so" ]; then
        write_conf prolog_spank=yes
        run_job c5c 40 env SLURM_CONF="$T/u/slurm.conf" HOSTILE_DATASET="$T/rootonly/*" \
            srun -N1 -w "$CL_N2" "$T/bin/readit"
        [ "$JOB_RC" -ne 0 ] || { show "$T/out/c5c.out"; flunk "c5c: the job ran"; }
        grep -q "$SECRET" "$T/out/c5c.out" && { show "$T/out/c5c.out"; flunk "c5c (SPANK_DATASET, prolog_spank=yes): the root-only file name is in the job's output"; }
    fi
    return 0
}

# 6. allow= left by '..' and by symlinks.
case_6() {
    write_conf "allow=$T/allowed"
    cat >"$T/jobs/c6.sh" <<'EOJ'
#!/bin/sh
cat "$SQUASHCACHE_MOUNT/outside.txt" 2>/dev/null && echo "mounted $SQUASHCACHE_MOUNT"
exit 0
EOJ
    run_job c6a 40 srun -N1 -w "$CL_N1" --comment="dataset=$T/allowed/../elsewhere/x.sqfs" sh "$T/jobs/c6.sh"
    as_u ln -s ../elsewhere/x.sqfs "$T/allowed/u-link.sqfs"
    run_job c6b 40 srun -N1 -w "$CL_N2" --comment="dataset=$T/allowed/u-link.sqfs" sh "$T/jobs/c6.sh"
    # SPANK: checked and resolved at submission, then the user swaps a
    # directory of the path for a symlink before the job starts.
    as_u sh -c "mkdir $T/allowed/u-dir && cp $IMG $T/allowed/u-dir/x.sqfs"
    j=$(submit_batch c6c -H -N1 -w "$CL_N1" --dataset="$T/allowed/u-dir/x.sqfs" "$T/jobs/c6.sh")
    as_u sh -c "mv $T/allowed/u-dir $T/allowed/u-dir.old && ln -s ../elsewhere $T/allowed/u-dir"
    as_u scontrol release "$j"
    wait_batch c6c "$j" 40
    bad=
    for c in c6a c6b c6c; do
        if grep -q OUTSIDE-CONTENT "$T/out/$c.out"; then
            show "$T/out/$c.out"
            bad="$bad $c"
        fi
    done
    [ -z "$bad" ] || flunk "an image outside allow= was mounted:$bad (a: '..', b: symlink, c: SPANK, directory swapped after submission)"
    for c in c6a c6b c6c; do
        grep -Eiq "squashcache: .*allow" "$T/out/$c.out" || { show "$T/out/$c.out"; flunk "$c: no clear message"; }
    done
}

# 7. User options that only the site may set.
case_7() {
    cp /etc/fuse.conf "$T/fuse.conf.orig" 2>/dev/null || : >"$T/fuse.conf.orig"
    grep -q '^user_allow_other' /etc/fuse.conf 2>/dev/null || echo user_allow_other >>/etc/fuse.conf
    write_conf force_options=ram=64M user_options=ram,cache,meta,warm,stage,workers,readahead
    bad=
    for v in "a allow_other allow_other" "b log=/etc/sqc-hostile-x.$$ log" \
        "c log=$T/out/u.log log" "d ctl=@sqc-hostile-$$ ctl" "g threads=2 threads"; do
        set -- $v
        run_job "c7$1" 40 srun -N1 -w "$CL_N1" --comment="dataset=$IMG:$2" "$T/bin/readit"
        if [ "$JOB_RC" -eq 0 ] || grep -q "^task .* $SUM " "$T/out/c7$1.out" ||
            ! grep -Eiq "squashcache: .*$3" "$T/out/c7$1.out"; then
            show "$T/out/c7$1.out"
            bad="$bad $2 (job exit $JOB_RC);"
        fi
    done
    [ -e /etc/sqc-hostile-x.$$ ] && bad="$bad /etc/sqc-hostile-x.$$ created;"
    cat >"$T/jobs/c7.sh" <<EOJ
#!/bin/sh
$T/bin/readit
$T/bin/mountctl status --json "\$SQUASHCACHE_MOUNT" | python3 -c 'import json, sys
print("budget", json.load(sys.stdin)[0]["stage"]["budget"])'
EOJ
    run_job c7e 40 srun -N1 -w "$CL_N2" --comment="dataset=$IMG:ram=1G" sh "$T/jobs/c7.sh"
    run_job c7f 40 srun -N1 -w "$CL_N1" --dataset="$IMG:ram=1G" sh "$T/jobs/c7.sh"
    for c in c7e c7f; do
        b=$(sed -n 's/^budget //p' "$T/out/$c.out")
        if ! read_ok "$T/out/$c.out" || [ -z "$b" ] || [ "$b" -gt 67108864 ]; then
            show "$T/out/$c.out"
            bad="$bad ram=1G over force_options=ram=64M: budget ${b:-?} ($c);"
        fi
    done
    [ -z "$bad" ] || flunk "user options not refused or not capped:$bad"
}

# 8. An image on storage that never answers.
case_8() {
    # Prolog: the storage is dead before the job.
    faultfs_start block
    run_job c8a 40 srun -N1 -w "$CL_N1" --comment="dataset=$T/dead/image" "$T/bin/readit"
    note "c8a: job over after $JOB_SECS s (exit $JOB_RC)"
    bad=
    if [ "$JOB_RC" -eq 0 ] || [ "$JOB_RC" -eq 124 ] ||
        [ "$(echo "$JOB_SECS > $TIMEOUT_S + 15" | bc)" = 1 ] ||
        ! grep -q "squashcache: $T/dead/image" "$T/out/c8a.out"; then
        show "$T/out/c8a.out"
        bad="$bad Prolog: exit $JOB_RC after $JOB_SECS s;"
    fi
    # SPANK: the storage dies between submission and the job's start.
    : >"$T/dead.fail"
    j=$(submit_batch c8b -H -N1 -w "$CL_N2" --dataset="$T/dead/image" "$T/bin/readit")
    echo block >"$T/dead.fail"
    as_u scontrol release "$j"
    wait_batch c8b "$j" 40
    note "c8b: job over $JOB_SECS s after its release (exit $JOB_RC)"
    if [ "$JOB_RC" -eq 0 ] || [ "$JOB_RC" -eq 124 ] ||
        [ "$(echo "$JOB_SECS > $TIMEOUT_S + 15" | bc)" = 1 ] ||
        ! grep -q "squashcache: $T/dead/image" "$T/out/c8b.out"; then
        show "$T/out/c8b.out"
        bad="$bad SPANK: exit $JOB_RC after $JOB_SECS s;"
    fi
    # SPANK: the storage is dead at submission (the check there reads).
    echo block >"$T/dead.fail"
    run_job c8c 40 srun -N1 -w "$CL_N1" --dataset="$T/dead/image" "$T/bin/readit"
    note "c8c: submission over after $JOB_SECS s (exit $JOB_RC)"
    if [ "$JOB_RC" -eq 0 ] || [ "$JOB_RC" -eq 124 ] ||
        [ "$(echo "$JOB_SECS > $TIMEOUT_S + 15" | bc)" = 1 ] ||
        ! grep -q "squashcache: $T/dead/image" "$T/out/c8c.out"; then
        show "$T/out/c8c.out"
        bad="$bad SPANK, dead at submission: exit $JOB_RC after $JOB_SECS s;"
    fi
    [ -z "$bad" ] || flunk "dead storage:$bad"
}

# 9. U's control socket name bound first by V.
case_9() {
    for v in "a $CL_N1 --dataset=$IMG" "b $CL_N2 --comment=dataset=$IMG"; do
        set -- $v
        j=$(next_jobid)
        mnt=$(jobdir "$j" "$2")/alpha
        as_v python3 - "$mnt" "$T/out/v9$1.bound" >/dev/null 2>&1 <<'EOP' &
import socket, sys, time
h = 1469598103934665603
for c in sys.argv[1].encode():
    h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0squashcache-%016x" % h)
s.listen(1)
open(sys.argv[2], "w").write("bound\n")
time.sleep(300)
EOP
        echo $! >>"$T/vpids"
        _i=0
        until [ -s "$T/out/v9$1.bound" ]; do
            _i=$((_i + 1))
            [ $_i -lt 100 ] || fail "c9$1: V could not bind the name"
            sleep 0.1
        done
        run_job "c9$1" 40 srun -N1 -w "$2" "$3" "$T/bin/readit"
        grep -q "^task $2 $j " "$T/out/c9$1.out" || [ "$JOB_RC" -ne 0 ] ||
            note "c9$1: job id $j guessed wrong"
        expect_read "c9$1"
    done
}

# 10. keep= (kept staged copies between jobs).  (a) A site that put the
# keeper's socket where V can write: the Prolog starts no keeper there
# and U's daemon never connects to V's listener (root's socket only).
# (b) U's kept copy is U's: V's job with the same image (V can read it)
# adopts nothing; U's next job adopts it.  (c) U's jobs over 5 images
# keep at most keep= in all.  (d) kill -9 of the keeper mid-job: the
# next Prolog starts another, and the next job stages afresh.
sed "s|@T@|$T|g" >"$T/bin/readkeep" <<'EOR'
#!/bin/sh
m=$SQUASHCACHE_MOUNT
i=0
until "@T@/bin/mountctl" status --json "$m" | grep -q '"state": *"done"'; do
    i=$((i + 1)); [ $i -lt 300 ] || break; sleep 0.1
done
s=$(cd "$m" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
a=$("@T@/bin/mountctl" status --json "$m" | python3 -c 'import json, sys
v = json.load(sys.stdin)[0]
print(v.get("keep", {}).get("adopted", 0), v["image_io"]["read_bytes"])')
echo "keep $SLURMD_NODENAME $SLURM_JOB_ID $s $a"
sleep "${1:-0}"
EOR
chmod 0755 "$T/bin/readkeep"
# keeper_pid: the keeper the Prologs started on $T/keep.
keeper_pid() { keepers "^mountctl keeper --keep [^ ]* --socket $T/keep/keeper.sock"; }
case_10() {
    ks=$T/keep/keeper.sock
    # adopted NAME: what job NAME's task adopted ("none" if it read wrong).
    adopted() { sed -n "s/^keep [^ ]* [0-9]* $SUM \([0-9]*\) .*/\1/p" "$T/out/$1.out" | head -n 1; }
    as_v mkdir -m 0755 "$BASE/vkeep"
    as_v python3 - "$BASE/vkeep/keeper.sock" "$T/out/v10.log" >/dev/null 2>&1 <<'EOP' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
s.listen(8)
while True:
    c, _ = s.accept()
    open(sys.argv[2], "a").write("connection\n")
EOP
    echo $! >>"$T/vpids"
    write_conf keep=1M keep_socket="$BASE/vkeep/keeper.sock"
    run_job c10a 40 srun -N1 -w "$CL_N1" --comment="dataset=$IMG" "$T/bin/readkeep"
    [ "$(adopted c10a)" = 0 ] || { show "$T/out/c10a.out"; flunk "(a) U's job with V's socket: $(adopted c10a)"; }
    [ ! -s "$T/out/v10.log" ] || flunk "(a) V's listener was connected to"
    pgrep -f "^mountctl keeper .*$BASE/vkeep" >/dev/null && flunk "(a) a keeper started in V's directory"

    write_conf keep=1M keep_socket="$ks"
    run_job c10b 40 srun -N1 -w "$CL_N1" --comment="dataset=$IMG" "$T/bin/readkeep"
    kp=$(keeper_pid)
    [ -n "$kp" ] || flunk "(b) no keeper after U's job"
    # Outside every job's cgroups and slurmd's: the root of each.
    if grep -v ':/$' "/proc/$kp/cgroup" >"$T/out/c10-cgroup" 2>&1; then
        show "$T/out/c10-cgroup"
        flunk "(b) the keeper is not in the root cgroups"
    fi
    as_v timeout 40 srun -N1 -w "$CL_N1" --comment="dataset=$IMG" "$T/bin/readkeep" \
        >"$T/out/c10c.out" 2>&1 </dev/null || true
    [ "$(adopted c10c)" = 0 ] || { show "$T/out/c10c.out"; flunk "(b) V's job adopted $(adopted c10c) bytes of U's copy"; }
    run_job c10d 40 srun -N1 -w "$CL_N1" --comment="dataset=$IMG" "$T/bin/readkeep"
    [ "$(adopted c10d)" -gt 0 ] 2>/dev/null || { show "$T/out/c10d.out"; flunk "(b) U's next job adopted nothing"; }

    for i in 1 2 3 4 5; do
        cp "$IMG" "$T/img/k$i.sqfs"
        chmod 0644 "$T/img/k$i.sqfs"
        run_job "c10e$i" 40 srun -N1 -w "$CL_N1" --comment="dataset=$T/img/k$i.sqfs" "$T/bin/readkeep"
    done
    # Once the last job's daemon has let go of its copy (in use copies
    # are not the budget's), all kept copies together.
    _i=0
    while "$T/bin/mountctl" status --kept --json --socket "$ks" | grep -q '"connections": *[1-9]' &&
        [ $_i -lt 100 ]; do
        _i=$((_i + 1))
        sleep 0.1
    done
    kept=$("$T/bin/mountctl" status --kept --json --socket "$ks" |
        python3 -c 'import json, sys; print(sum(e["bytes"] for e in json.load(sys.stdin)))')
    note "c10: U's 5 images and V's one: $kept bytes kept, keep=1M"
    [ "$kept" -le 1048576 ] || flunk "(c) $kept bytes kept, over keep=1M"

    start_job c10f srun -N1 -w "$CL_N1" --comment="dataset=$IMG" "$T/bin/readkeep" 3
    _i=0
    until grep -q "^keep " "$T/out/c10f.out" || [ $_i -gt 200 ]; do _i=$((_i + 1)); sleep 0.1; done
    kill -9 "$kp" 2>/dev/null || flunk "(d) no keeper to kill"
    wait_job c10f 40
    run_job c10g 40 srun -N1 -w "$CL_N1" --comment="dataset=$IMG" "$T/bin/readkeep"
    [ "$(adopted c10g)" = 0 ] || { show "$T/out/c10g.out"; flunk "(d) after the keeper's kill: adopted $(adopted c10g)"; }
    kp2=$(keeper_pid)
    [ -n "$kp2" ] && [ "$kp2" != "$kp" ] || flunk "(d) no new keeper after the kill ($kp, now $kp2)"
    for p in $kp2; do kill "$p"; done
    write_conf
}

# U's own client-side SPANK plugin: passes DATASET to the nodes unchecked.
if command -v "${CC:-cc}" >/dev/null 2>&1; then
    mkdir -p "$T/u"
    cat >"$T/u/pass.c" <<'EOC'
#include <stdlib.h>
#include <slurm/spank.h>
SPANK_PLUGIN(hostile_pass, 1);
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	const char *d = getenv("HOSTILE_DATASET");

	(void)ac;
	(void)av;
	if (!spank_remote(sp) && d)
		spank_job_control_setenv(sp, "DATASET", d, 1);
	return 0;
}
EOC
    "${CC:-cc}" -shared -fPIC -o "$T/u/pass.so" "$T/u/pass.c" ||
        fail "cannot build the user's client plugin"
    echo "required $T/u/pass.so" >"$T/u/plugstack.conf"
    sed "s|^PlugStackConfig=.*|PlugStackConfig=$T/u/plugstack.conf|" "$SLURM_CONF" >"$T/u/slurm.conf"
    chmod -R a+rX "$T/u"
fi

# --- run ----------------------------------------------------------------
: >"$T/failed"
for n in $CASES; do
    note "case $n"
    rm -f "$T/case.bad"
    HOOKS_ERR_AT=$(cat "$T/hooks.err" 2>/dev/null | wc -l)
    set +e
    (set -e; "case_$n")
    rc=$?
    set -e
    [ ! -s "$T/case.bad" ] || rc=1
    finish_case "$n" "$rc"
done
note "hooks: $(awk '{printf "%s %s %s rc=%s %.1fs; ", $1, $2, $3, $4, $6 - $5}' "$T/hooks.log")"
if [ -s "$T/failed" ]; then
    fail "cases failed: $(tr '\n' ' ' <"$T/failed")"
fi
exit 0

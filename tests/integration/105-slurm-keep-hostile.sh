#!/bin/sh
# TIMEOUT: 300
# ALONE: starts the Slurm test cluster
# SANITIZE: no (keep through Slurm: the keeper's C paths run sanitized in 120-122)
# keep= on a real 2-node Slurm cluster (tests/slurm/cluster.sh), in its
# plain mode and in its cgroup mode as production sites run it (there the
# Prolog leaves the mounts to a mounter that joins the job's extern
# step), whose keepers stop answering: each node's keeper, started by a
# first job's Prolog, is stopped (SIGSTOP), as one stuck on anything
# would be, and the user fills its backlog of connections not taken yet
# (a connect() then waits); then jobs of that non-root test user with
# --comment=dataset= run on both nodes at once, one after another.
# Checks that:
#   (a) each job starts and ends within 30 s (the Prolog's keeper ping,
#       connect included, has 2 s; the job itself takes a few): no
#       Prolog, mount or task waits on the keeper;
#   (b) every task reads the right bytes, from a mount staged to the end
#       without keep (the daemon's stats: no keep answer of "copy";
#       the Prolog mounts without keep= once its keeper did not answer);
#   (c) no node is drained or down (sinfo);
#   (d) nothing is left on either node: check-node reports the keeper
#       that does not answer, and nothing else; once the keeper goes on
#       (SIGCONT), check-node exits 0 and the next job adopts the copy
#       the first one left.
# Each node has a config of its own (the hooks pick it by
# SLURMD_NODENAME) with a keeper socket of its own: the test's two nodes
# share one /run, real nodes do not.
case "${SQC_TMPDIR:-/tmp}" in /tmp | /tmp/* | /dev/shm*) SQC_TMPDIR=/var/tmp ;; esac
export SQC_TMPDIR
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: starts munge, slurmctld and two slurmd, adds a test user"
need_cmd mksquashfs timeout
for c in slurmctld slurmd srun sinfo munged setpriv unshare nsenter; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed (sh tests/deps.sh slurm)"
done
[ -e /dev/fuse ] || skip "no /dev/fuse"
. "$TOP/tests/slurm/cluster.sh"

add_test_user U
mkdir -p "$T/bin" "$T/state" "$T/img" "$T/out" "$T/src"
chmod 1777 "$T/out"
cp "$PTOP/build/mountctl" "$T/bin/mountctl"
cp "$PTOP/build/squashcached" "$T/bin/squashcached"
head -c 3000000 /dev/urandom >"$T/src/big.bin"
mkimg "$T/src" "$T/img/k.sqfs" -comp lz4
chmod 0644 "$T/img/k.sqfs"
sum=$(md5sum <"$T/src/big.bin" | cut -c1-32)

# Each node's config: keep=64M, its own keeper socket.
mkdir -p "$T/cl/hooks" "$T/cl/etc"
conf() {
    cat >"$T/conf-$1" <<EOC
mountctl=$T/bin/mountctl
state=$T/state
options=cache=64M
keep=64M
keep_socket=$T/keep-$1/keeper.sock
EOC
}

# What each task runs: once staging is done, the bytes it read and what
# came of keeping (the daemon's keep.answer; "off": mounted without keep).
cat >"$T/bin/readk" <<EOR
#!/bin/sh
m=\$SQUASHCACHE_MOUNT
i=0
until "$T/bin/mountctl" status --json "\$m" | grep -q '"state": *"done"'; do
    i=\$((i + 1)); [ \$i -lt 300 ] || break; sleep 0.1
done
s=\$(md5sum <"\$m/big.bin" | cut -c1-32)
"$T/bin/mountctl" status --json "\$m" | "$PYTHON" -c 'import json, sys
v = json.load(sys.stdin)[0]
print("io", sys.argv[1], sys.argv[2], v.get("keep", {}).get("answer", "off"), v["stage"]["state"])' "\$SLURMD_NODENAME" "\$s"
EOR
chmod 0755 "$T/bin/readk"
# The hooks as a site installs them (the task prolog exports the mount).
for h in prolog epilog site-task-prolog; do
    f=$h
    [ "$h" = site-task-prolog ] && f=task-prolog
    cat >"$T/cl/hooks/$f" <<EOH
#!/bin/sh
SQUASHCACHE_SLURM_CONF=$T/conf-\$SLURMD_NODENAME SQUASHCACHE_MOUNTCTL=$T/bin/mountctl exec "$PTOP/slurm/hooks/$h" "\$@"
EOH
done
chmod 0755 "$T/cl/hooks"/*
: >"$T/cl/etc/plugstack.conf"

# keeper_pid NODE: the keeper listening on NODE's socket, or nothing.
keeper_pid() {
    keepers "^mountctl keeper --keep [^ ]* --socket $T/keep-$1/keeper.sock"
}
stop_keepers() {
    for p in $(keeper_pid "$CL_N1") $(keeper_pid "$CL_N2"); do
        kill -CONT "$p"
        kill "$p"
        wait_gone "$p" 10 "the keeper $p"
    done
}
at_exit 'stop_keepers'
at_exit 'cluster_stop'

as_user() {
    (cd "$T/out" && runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@")
}

# job NAME: a job on both nodes, one task each, 30 s at most; its output
# in $T/NAME.out, checked: a task on each node read the right bytes,
# staged to the end.  Sets secs to the time it took.
job() {
    t0=$(date +%s.%N)
    as_user timeout 30 srun -N2 --ntasks-per-node=1 --comment="dataset=$T/img/k.sqfs" \
        "$T/bin/readk" >"$T/$1.out" 2>&1 || {
        cat "$T/$1.out"
        fail "$1: the job did not start and end within 30 s (or failed)"
    }
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    for n in "$N1" "$N2"; do
        grep -q "^io $n $sum [a-z ]* done$" "$T/$1.out" ||
            { cat "$T/$1.out"; fail "$1: no task on $n read the right bytes from a staged mount"; }
    done
}

# nodes_ok: no node drained, down or failing
nodes_ok() {
    ! sinfo -h -N -o '%N %T' | grep -E 'drain|down|fail'
}

# check_node NODE: mountctl job check-node in NODE's namespace, with its
# config; its report in $T/node.out, its status in rc
check_node() {
    rc=0
    cluster_nsenter "$1" env SQUASHCACHE_SLURM_CONF="$T/conf-$1" timeout 30 \
        "$T/bin/mountctl" job --node "$1" --min-age 0 check-node >"$T/node.out" 2>&1 || rc=$?
}

# The user fills each stopped keeper's backlog of connections it does not
# take: a connect() there waits (a client's budget bounds it).
cat >"$T/bin/fill.py" <<'PY'
import socket, sys, time
held, counts = [], []
for path in sys.argv[1:3]:
    n = 0
    while n < 1000:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.setblocking(False)
        try:
            s.connect(path)
        except BlockingIOError:
            s.close()
            break
        held.append(s)
        n += 1
    counts.append(n)
open(sys.argv[3], "w").write(" ".join(map(str, counts)))
time.sleep(600)
PY

run_mode() {
    mode=$1
    rc=0
    cluster_start "$T/cl" "$mode" || rc=$?
    [ $rc -ne 77 ] || { note "$mode mode: no cgroup freezer and memory controllers here: skipped"; return 0; }
    [ $rc -eq 0 ] || { tail -n 30 "$T/cl/log/"*.log; fail "cluster ($mode) did not start"; }
    N1=$CL_N1
    N2=$CL_N2
    conf "$N1"
    conf "$N2"

    note "$mode a first job on both nodes starts their keepers"
    job first
    for n in "$N1" "$N2"; do
        [ -n "$(keeper_pid "$n")" ] || fail "$mode: no keeper runs on $n after a job with keep=64M"
        grep -q "^io $n $sum new done$" "$T/first.out" || { cat "$T/first.out"; fail "$mode: first job: $n did not make a new copy"; }
    done
    k1=$(keeper_pid "$N1")
    k2=$(keeper_pid "$N2")
    note "$mode     in $secs s; keepers $k1 ($N1) and $k2 ($N2)"

    note "$mode (a, b, c) both keepers stopped, their backlogs full: jobs on both nodes"
    kill -STOP "$k1" "$k2"
    # setpriv, not `as` (a function: in the background, a subshell whose pid
    # a kill would leave the program out of), becomes the program.
    setpriv --reuid="$U" --regid="$(id -g "$U")" --init-groups -- \
        "$PYTHON" "$T/bin/fill.py" "$T/keep-$N1/keeper.sock" "$T/keep-$N2/keeper.sock" "$T/out/filled-$mode" &
    filler=$!
    _pids="$filler $_pids"
    i=0
    until [ -s "$T/out/filled-$mode" ]; do
        i=$((i + 1))
        [ "$i" -lt 500 ] || fail "$mode: the user's connections to the stopped keepers did not end"
        sleep 0.02
    done
    note "$mode     the user holds $(cat "$T/out/filled-$mode") connections that the keepers of $N1 and $N2 never took"
    for j in 1 2 3; do
        job "stopped$j"
        note "$mode     job $j started and ended in $secs s"
        grep "^io " "$T/stopped$j.out" | grep -q " copy done$" &&
            { cat "$T/stopped$j.out"; fail "$mode: job $j adopted a copy from a stopped keeper"; }
        nodes_ok || fail "$mode: job $j: a node was drained or down: $(sinfo -h -N -o '%N %T %E' | tr '\n' ' ')"
    done

    note "$mode (d) nothing left on either node"
    for n in "$N1" "$N2"; do
        i=0
        until cluster_idle; do
            i=$((i + 1))
            [ "$i" -lt 300 ] || fail "$mode: nodes not idle 30 s after the jobs: $(sinfo -h -N -o '%N %T %E' | tr '\n' ' ')"
            sleep 0.1
        done
        check_node "$n"
        [ "$rc" = 1 ] || fail "$mode: check-node on $n with its keeper stopped exits $rc: $(cat "$T/node.out")"
        grep -q "^keeper at $T/keep-$n/keeper.sock: does not answer within its budget" "$T/node.out" ||
            fail "$mode: check-node on $n does not report the stopped keeper: $(cat "$T/node.out")"
        [ "$(wc -l <"$T/node.out")" = 1 ] || fail "$mode: check-node on $n reports more than the keeper: $(cat "$T/node.out")"
    done
    kill "$filler"
    wait_gone "$filler" 10 "the user's connections"
    kill -CONT "$k1" "$k2"
    for n in "$N1" "$N2"; do
        check_node "$n"
        [ "$rc" = 0 ] || fail "$mode: check-node on $n once its keeper goes on exits $rc: $(cat "$T/node.out")"
    done
    job after
    for n in "$N1" "$N2"; do
        grep -q "^io $n $sum copy done$" "$T/after.out" ||
            { cat "$T/after.out"; fail "$mode: once the keeper on $n goes on, the job does not adopt its copy"; }
    done
    [ "$(keeper_pid "$N1") $(keeper_pid "$N2")" = "$k1 $k2" ] || fail "$mode: the keepers changed: $k1 $k2, now $(keeper_pid "$N1") $(keeper_pid "$N2")"
    nodes_ok || fail "$mode: a node was drained or down: $(sinfo -h -N -o '%N %T %E' | tr '\n' ' ')"
    stop_keepers
    cluster_stop
}

run_mode plain
run_mode cgroup
exit 0

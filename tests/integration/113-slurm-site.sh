#!/bin/sh
# TIMEOUT: 600
# SANITIZE: no (through Slurm: the keeper's site copies run sanitized in 123)
# ALONE: starts the 2-node Slurm test cluster
# Site images (site= of the site config) on a real 2-node Slurm cluster
# (tests/slurm/cluster.sh), in plain mode and then as production sites
# run it (cgroup mode: proctrack/cgroup, task/cgroup, ConstrainRAMSpace),
# jobs of two non-root users with --comment=dataset=, each on the same
# node:
#   (a) user 1's job: its Prolog starts the node's keeper with --site; the
#       mount gets the site copy (keep.site), staged by root, and reads
#       the image's bytes; in cgroup mode the job's memory cgroup holds
#       none of the copy (root's, the keeper's, charged outside every
#       job: less than half the image in the job's usage once staged);
#   (b) user 2's job after it: the same copy, whole at once: its daemon
#       reads the superblock and nothing else of the image;
#   (c) both users' jobs at once, the copy forgotten first (root): one
#       site copy for both, the daemons' own reads a few KiB;
#   (d) check-node lists the site copy and passes.
case "${SQC_TMPDIR:-/tmp}" in /tmp | /tmp/* | /dev/shm*) SQC_TMPDIR=/var/tmp ;; esac
export SQC_TMPDIR
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: starts munge, slurmctld and two slurmd, adds test users"
need_cmd mksquashfs
for c in slurmctld slurmd srun sbatch sinfo munged setpriv unshare nsenter; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed (sh tests/deps.sh slurm)"
done
[ -e /dev/fuse ] || skip "no /dev/fuse"
. "$TOP/tests/slurm/cluster.sh"

add_test_user U1
add_test_user U2
mkdir -p "$T/bin" "$T/state" "$T/img" "$T/out" "$T/src"
chmod 1777 "$T/out"
cp "$PTOP/build/mountctl" "$T/bin/mountctl"
cp "$PTOP/build/squashcached" "$T/bin/squashcached"
head -c 48000000 /dev/urandom >"$T/src/big.bin"
mkimg "$T/src" "$T/img/s.sqfs" -comp lz4
chmod 0644 "$T/img/s.sqfs"
"$T/bin/mountctl" seal "$T/img/s.sqfs" >/dev/null || fail "mountctl seal failed"
chmod 0644 "$T/img/s.sqfs.sqcseal"
size=$(stat -c %s "$T/img/s.sqfs")
sum=$(md5sum <"$T/src/big.bin" | cut -c1-32)

# conf: each node's config: keep with site copies of $T/img, a seal
# required; replaced by a rename (a job's Epilog may be reading it).
conf() {
    for n in "$CL_N1" "$CL_N2"; do
        cat >"$T/conf-$n.new" <<EOC
mountctl=$T/bin/mountctl
state=$T/state
options=cache=64M
keep=64M
keep_socket=$T/keep-$n/keeper.sock
site=$T/img
site_seal=require
EOC
        mv -f "$T/conf-$n.new" "$T/conf-$n"
    done
}

# What each task runs: once staging is done, what its mount got, the
# bytes it read itself, and its job's memory cgroup's usage ("-" where
# there is none).
cat >"$T/bin/readk" <<EOR
#!/bin/sh
m=\$SQUASHCACHE_MOUNT
i=0
until "$T/bin/mountctl" status --json "\$m" | grep -q '"state": *"done"'; do
    i=\$((i + 1)); [ \$i -lt 900 ] || break; sleep 0.1
done
mem=-
cg=\$(sed -n 's/^[0-9]*:memory:\(.*\)/\1/p' /proc/self/cgroup)
case "\$cg" in */job_*)
    job=\${cg%%/step_*}
    f=/sys/fs/cgroup/memory\$job/memory.usage_in_bytes
    [ -r "\$f" ] && mem=\$(cat "\$f") ;;
esac
s=\$(md5sum <"\$m/big.bin" | cut -c1-32)
"$T/bin/mountctl" status --json "\$m" | "$PYTHON" -c 'import json, sys
v = json.load(sys.stdin)[0]
k = v.get("keep", {})
print("io", sys.argv[1], sys.argv[2], v["image_io"]["read_bytes"], k.get("adopted", 0), v["stage"]["state"], k.get("answer"), k.get("site"), sys.argv[3])' "\$SLURMD_NODENAME" "\$s" "\$mem"
EOR
chmod 0755 "$T/bin/readk"

mkdir -p "$T/cl/hooks" "$T/cl/etc"
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

keeper_pid() {
    keepers "^mountctl keeper --keep [^ ]* --socket $T/keep-$1/keeper.sock"
}
stop_keepers() {
    for n in "$CL_N1" "$CL_N2"; do
        for p in $(keeper_pid "$n"); do
            kill "$p"
            wait_gone "$p" 10 "the keeper on $n"
        done
    done
}
at_exit 'cluster_stop'
at_exit 'for p in $(keeper_pid "$CL_N1") $(keeper_pid "$CL_N2"); do kill "$p"; done'

as_user() {
    _au=$1
    shift
    (cd "$T/out" && runuser -u "$_au" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@")
}

# site_copies NODE: "complete range connections" of each site copy
site_copies() {
    "$T/bin/mountctl" status --kept --json --socket "$T/keep-$1/keeper.sock" |
        "$PYTHON" -c 'import json, sys
for e in json.load(sys.stdin):
    if e["site"]:
        print(e["complete_bytes"], e["range_bytes"], e["connections"])'
}

# field OUT N: the Nth field of the io line in OUT
field() {
    awk -v n="$2" '/^io / { print $n }' "$1"
}

run_mode() {
    mode=$1
    rc=0
    cluster_start "$T/cl" "$mode" || rc=$?
    [ $rc -ne 77 ] || { note "$mode mode: no cgroup freezer and memory controllers here: skipped"; return 0; }
    [ $rc -eq 0 ] || { tail -n 30 "$T/cl/log/"*.log; fail "cluster ($mode) did not start"; }
    N1=$CL_N1
    conf

    note "$mode (a) user 1's job: the site copy, root's, staged by the keeper"
    as_user "$U1" srun -N1 -w "$N1" --comment="dataset=$T/img/s.sqfs" "$T/bin/readk" >"$T/$mode-a.out" 2>&1 ||
        { cat "$T/$mode-a.out"; fail "$mode: user 1's job failed"; }
    grep -q "^io $N1 $sum [0-9]* [0-9]* done site True " "$T/$mode-a.out" ||
        { cat "$T/$mode-a.out"; fail "$mode: user 1's job got no site copy, or wrong bytes"; }
    kp=$(keeper_pid "$N1")
    [ -n "$kp" ] || fail "$mode: no keeper on $N1"
    grep -q -- "--site $T/img --site-seal require" "/proc/$kp/cmdline" 2>/dev/null ||
        tr '\0' ' ' <"/proc/$kp/cmdline" | grep -q -- "--site $T/img --site-seal require" ||
        fail "$mode: the keeper runs without the site's options: $(tr '\0' ' ' <"/proc/$kp/cmdline")"
    mem=$(field "$T/$mode-a.out" 9)
    if [ "$mode" = cgroup ]; then
        note "    user 1's job's memory cgroup: $mem bytes with the copy of $size staged"
        [ "$mem" != - ] || fail "cgroup mode: the task found no memory cgroup of its job"
        [ "$mem" -lt $((size / 2)) ] ||
            fail "cgroup mode: the job's memory cgroup holds $mem bytes: the site copy ($size) is charged to it"
    fi
    note "$mode (b) user 2's job: the same copy, whole at once"
    as_user "$U2" srun -N1 -w "$N1" --comment="dataset=$T/img/s.sqfs" "$T/bin/readk" >"$T/$mode-b.out" 2>&1 ||
        { cat "$T/$mode-b.out"; fail "$mode: user 2's job failed"; }
    grep -q "^io $N1 $sum [0-9]* [0-9]* done site True " "$T/$mode-b.out" ||
        { cat "$T/$mode-b.out"; fail "$mode: user 2's job got no site copy, or wrong bytes"; }
    read_b=$(field "$T/$mode-b.out" 4)
    adopted_b=$(field "$T/$mode-b.out" 5)
    note "    user 2's daemon read $read_b bytes of the image itself, adopted $adopted_b"
    [ "$read_b" -le 4096 ] || fail "$mode: user 2's daemon read $read_b bytes of the image"
    [ "$adopted_b" -ge $((size - 4096)) ] || fail "$mode: user 2 adopted only $adopted_b of $size"
    [ "$(keeper_pid "$N1")" = "$kp" ] || fail "$mode: the keeper changed"

    note "$mode (c) both users at once: one copy"
    "$T/bin/mountctl" forget --all --socket "$T/keep-$N1/keeper.sock" >/dev/null ||
        fail "$mode: root cannot forget the site copy"
    [ -z "$(site_copies "$N1")" ] || fail "$mode: the site copy is still there after root's forget"
    as_user "$U1" sbatch -N1 -w "$N1" -o "$T/out/$mode-c1.out" \
        --comment="dataset=$T/img/s.sqfs" --wrap="$T/bin/readk" >"$T/$mode-c1.id" ||
        fail "$mode: cannot submit user 1's job"
    as_user "$U2" sbatch -N1 -w "$N1" -o "$T/out/$mode-c2.out" \
        --comment="dataset=$T/img/s.sqfs" --wrap="$T/bin/readk" >"$T/$mode-c2.id" ||
        fail "$mode: cannot submit user 2's job"
    # Polled (sbatch -W looks 2, 10 and 42 s after submission).
    for id in "$T/$mode-c1.id" "$T/$mode-c2.id"; do
        j=$(sed -n 's/^Submitted batch job //p' "$id")
        _c_i=0
        while squeue -h -j "$j" 2>/dev/null | grep -q .; do
            _c_i=$((_c_i + 1))
            [ $_c_i -lt 1500 ] || fail "$mode: job $j did not end within 150 s"
            sleep 0.1
        done
    done
    for u in c1 c2; do
        grep -q "^io $N1 $sum [0-9]* [0-9]* done site True " "$T/out/$mode-$u.out" ||
            { cat "$T/out/$mode-$u.out"; fail "$mode: job $u got no site copy, or wrong bytes"; }
    done
    r1=$(field "$T/out/$mode-c1.out" 4)
    r2=$(field "$T/out/$mode-c2.out" 4)
    note "    the daemons read $r1 and $r2 bytes of the image themselves"
    [ $((r1 + r2)) -lt $((size / 20)) ] || fail "$mode: the daemons read $r1 + $r2 bytes themselves"
    [ "$(site_copies "$N1" | wc -l)" = 1 ] || fail "$mode: not one site copy: $(site_copies "$N1")"

    note "$mode (d) check-node lists it and passes"
    # In the node's namespace: its own /dev/shm, where its mounts were.
    out=$(cluster_nsenter "$N1" env SQUASHCACHE_SLURM_CONF="$T/conf-$N1" \
        "$T/bin/mountctl" job check-node 2>&1) || fail "$mode: check-node failed: $out"
    echo "$out" | grep -q "^site copy of $T/img/s.sqfs: " ||
        fail "$mode: check-node does not list the site copy: $out"
    stop_keepers
    cluster_stop
}

run_mode plain
run_mode cgroup
exit 0

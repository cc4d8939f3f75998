#!/bin/sh
# The default RAM budgets come from the memory limit the daemon runs under,
# not from the machine's RAM (Slurm's ConstrainRAMSpace puts a job's daemon
# in the job's memory cgroup).  Checks that:
#   - started in a memory cgroup limited to 512 MiB (v1 or v2), the daemon
#     stages at most 256 MiB by default, warms at most 128 MiB, and its
#     stats (stage.ram_limit, stage.ram_limit_source) and its start log
#     line name the cgroup;
#   - there, mountctl stage on a ram=0 mount takes at most 256 MiB too,
#     and a size in percent (warm=50%) is of the cgroup's limit;
#   - outside that cgroup the budget is what it always was: half of the
#     physical RAM (unless the test itself runs under a lower limit).
# TIMEOUT: 120
# shellcheck shell=sh

# shellcheck source-path=SCRIPTDIR source=lib.sh disable=SC1091
. "$(dirname "$0")/lib.sh"

need_root
need_fuse
need_cmd mksquashfs
[ -x "$MOUNTCTL" ] || fail "$MOUNTCTL not built"

limit=$((512 * 1048576))
half=$((limit / 2))
if [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    version=v1
    cg=/sys/fs/cgroup/memory/sqctest.$$
    limit_file=memory.limit_in_bytes
    procs=tasks
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    version=v2
    grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
        skip "cgroup v2: memory is not enabled in /sys/fs/cgroup/cgroup.subtree_control"
    cg=/sys/fs/cgroup/sqctest.$$
    limit_file=memory.max
    procs=cgroup.procs
else
    skip "no memory cgroup controller mounted (v1 /sys/fs/cgroup/memory or v2 /sys/fs/cgroup)"
fi

# At exit: the daemons in the cgroup go first (unmounted, then killed if
# they linger), then the cgroup, which cannot be removed while it has any.
cg_cleanup() {
    for m in "$T/in" "$T/in0"; do
        if is_mounted "$m"; then
            fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        fi
    done
    [ -d "$cg" ] || return 0
    i=0
    # (cgroup files have no size: read them.)
    while [ -n "$(cat "$cg/cgroup.procs")" ] && [ $i -lt 100 ]; do
        [ $i -eq 50 ] && for p in $(cat "$cg/cgroup.procs"); do kill "$p" 2>/dev/null; done
        i=$((i + 1))
        sleep 0.1
    done
    rmdir "$cg" 2>/dev/null || echo "cannot remove $cg" >&2
}

# wait_log FILE PATTERN WHAT: the daemon tells the mount is ready before
# it logs so; give the line up to 5 s.
wait_log() {
    i=0
    until grep -q "$2" "$1" 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 250 ] || { cat "$1" >&2; fail "$3"; }
        sleep 0.02
    done
}

note "cgroup $version $cg, limit $limit bytes"
mkdir "$cg"
at_exit cg_cleanup
echo "$limit" >"$cg/$limit_file"

# A squashcached that enters the cgroup first, for sqc_mount.
real=$SQUASHCACHED
cat >"$T/in-cgroup" <<EOF
#!/bin/sh
echo \$\$ >'$cg/$procs' || exit 1
exec '$real' "\$@"
EOF
chmod +x "$T/in-cgroup"

mkdir -p "$T/src"
head -c 4000000 /dev/urandom >"$T/src/a.bin"
echo hello >"$T/src/b.txt"
mkimg "$T/src" "$T/img.sqfs"

note "inside the cgroup: the default budgets are halves of its limit"
SQUASHCACHED="$T/in-cgroup"
sqc_mount "$T/img.sqfs" "$T/in" -o "log=$T/in.log"
SQUASHCACHED=$real
pid=$(sqc_pid "$T/in")
grep -qx "$pid" "$cg/cgroup.procs" || fail "daemon $pid is not in $cg"
budget=$(stat_of "$T/in" stage.budget)
[ "$budget" -gt 0 ] && [ "$budget" -le "$half" ] ||
    fail "staging budget $budget bytes in a cgroup of $limit bytes (want at most $half)"
warm=$(stat_of "$T/in" warm.budget)
[ "$warm" -le $((limit / 4)) ] || fail "warming budget $warm bytes in a cgroup of $limit bytes"
[ "$(stat_of "$T/in" stage.ram_limit)" -eq "$limit" ] ||
    fail "stage.ram_limit $(stat_of "$T/in" stage.ram_limit), want $limit"
source=$(stat_of "$T/in" stage.ram_limit_source)
case "$source" in
"cgroup $version "*sqctest.$$) ;;
*) fail "stage.ram_limit_source '$source' does not name $cg" ;;
esac
wait_log "$T/in.log" "memory limit 512.0 MiB (cgroup $version .*sqctest.$$): ram=256.0 MiB, warm=128.0 MiB, meta=64.0 MiB (sized from the image's tables)" \
    "the start log does not say the limit and where it came from"
# A small image's tables get the floor, never more than a sixteenth of the
# limit above it (here the floor is the larger).
meta=$(($(stat_of "$T/in" cache.meta.budget) + $(stat_of "$T/in" cache.bmap.budget)))
[ "$meta" -eq $((64 << 20)) ] || fail "metadata budget $meta bytes, want 64 MiB"
cmp "$T/src/a.bin" "$T/in/a.bin" || fail "a.bin differs"

note "inside the cgroup: mountctl stage on a ram=0 mount, warm=50%"
SQUASHCACHED="$T/in-cgroup"
sqc_mount "$T/img.sqfs" "$T/in0" -o "ram=0,warm=50%,log=$T/in0.log"
SQUASHCACHED=$real
[ "$(stat_of "$T/in0" stage.budget)" -eq 0 ] || fail "ram=0 gave a budget"
warm=$(stat_of "$T/in0" warm.budget)
# (size_parse() takes a percentage of the limit rounded down to 100 bytes.)
[ "$warm" -le "$half" ] && [ "$warm" -gt $((half - 100)) ] ||
    fail "warm=50% is $warm bytes in a cgroup of $limit bytes"
"$MOUNTCTL" stage "$T/in0" || fail "mountctl stage failed"
staged=$(sed -n 's/.*resumed with a budget of \([0-9]*\) bytes.*/\1/p' "$T/in0.log")
[ -n "$staged" ] || { cat "$T/in0.log" >&2; fail "mountctl stage logged no budget"; }
[ "$staged" -le "$half" ] || fail "mountctl stage took a budget of $staged bytes in a cgroup of $limit bytes"
wait_log "$T/in0.log" "staging budget not given: half of 512.0 MiB (cgroup $version .*sqctest.$$)" \
    "mountctl stage did not log where its budget came from"
sqc_umount "$T/in"
sqc_umount "$T/in0"
cg_cleanup
[ ! -d "$cg" ] || fail "$cg left behind"

note "outside: half of the memory this test may use"
ram=$(($(getconf _PHYS_PAGES) * $(getconf PAGESIZE)))
sqc_mount "$T/img.sqfs" "$T/out" -o "log=$T/out.log"
budget=$(stat_of "$T/out" stage.budget)
source=$(stat_of "$T/out" stage.ram_limit_source)
if [ "$source" = "physical RAM" ]; then
    [ "$budget" -eq $((ram / 2)) ] || fail "budget $budget outside any limit, want $((ram / 2))"
else
    note "this test runs under $source: not the old value"
    lim=$(stat_of "$T/out" stage.ram_limit)
    [ "$lim" -lt "$ram" ] && [ "$budget" -eq $((lim / 2)) ] ||
        fail "budget $budget under a limit of $lim ($source)"
fi
sqc_umount "$T/out"
note "ok"

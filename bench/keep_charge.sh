#!/bin/sh
# Whose memory cgroup pays for a kept copy (docs/slurm.md, "Whose memory"):
# job A (a memory cgroup under a parent, as Slurm's job_N under uid_U)
# stages an image with -o keep; A ends (its cgroup removed, as Slurm does);
# job B (a sibling cgroup) mounts the same image, adopts the copy and reads
# every file.  Prints the charges (cgroup v1 memory.usage_in_bytes, or v2
# memory.current) at each step.  Root, a cgroup v1 or v2 memory controller.
# With "site", the image is a site image (mountctl keeper --site): the
# keeper, in the root cgroup as the Prolog starts it, makes the copy, and
# job A's mount follows it.
#
#   sh bench/keep_charge.sh [SIZE_MB] [site]     (default 256)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
mb=${1:-256}
site=${2:-}
[ "$(id -u)" -eq 0 ] || { echo "keep_charge: needs root (cgroups)" >&2; exit 2; }
if [ -d /sys/fs/cgroup/memory ]; then
    root=/sys/fs/cgroup/memory usage=memory.usage_in_bytes
else
    root=/sys/fs/cgroup usage=memory.current
    echo +memory >"$root/cgroup.subtree_control" 2>/dev/null || true
fi
T=$(mktemp -d /var/tmp/sqc-keep-charge.XXXXXX)
P="$root/sqc-charge-$$"
cleanup() {
    for m in "$T/ma" "$T/mb"; do fusermount3 -u -z "$m" 2>/dev/null || true; done
    [ -n "${kpid:-}" ] && kill "$kpid" 2>/dev/null
    sleep 0.5
    for c in "$P/a" "$P/b" "$P"; do rmdir "$c" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/src" "$T/ma" "$T/mb" "$T/k"
head -c $((mb * 1048576)) /dev/urandom >"$T/src/data"
mksquashfs "$T/src" "$T/img.sqfs" -comp lz4 -no-progress -quiet >/dev/null
img=$T/img.sqfs
if [ "$site" = site ]; then
    mkdir -p "$T/site"
    mv "$img" "$T/site/img.sqfs"
    img=$T/site/img.sqfs
fi
if [ "$site" = site ]; then
    "$BUILD/mountctl" keeper --keep 4G --socket "$T/k/k.sock" --site "$T/site" 2>"$T/keeper.log" &
else
    "$BUILD/mountctl" keeper --keep 4G --socket "$T/k/k.sock" 2>"$T/keeper.log" &
fi
kpid=$!
until [ -S "$T/k/k.sock" ]; do sleep 0.05; done
# Where the Prolog puts the keeper it starts: the root cgroup.
echo "$kpid" >"$root/cgroup.procs"
mkdir "$P" "$P/a" "$P/b"
u() { echo $(($(cat "$1/$usage") / 1048576)); }
show() { echo "$1: parent $(u "$P") MiB, a $( [ -d "$P/a" ] && u "$P/a" || echo -) MiB, b $(u "$P/b") MiB"; }
show "start"
# Job A: its daemon in cgroup a (the child inherits it), staged to the end.
sh -c "echo \$\$ >$P/a/cgroup.procs; exec $BUILD/squashcached -o keep=$T/k/k.sock,stage=full $img $T/ma"
"$BUILD/mountctl" wait "$T/ma" >/dev/null 2>&1
show "job a staged ${mb} MiB"
fusermount3 -u "$T/ma"
while pgrep -f "squashcached .*$T/ma" >/dev/null; do sleep 0.05; done
show "job a unmounted (copy kept)"
rmdir "$P/a"
show "job a's cgroup removed"
sh -c "echo \$\$ >$P/b/cgroup.procs; exec $BUILD/squashcached -o keep=$T/k/k.sock,stage=full $img $T/mb"
"$BUILD/mountctl" wait "$T/mb" >/dev/null 2>&1
show "job b adopted the copy"
cat "$T/mb/data" >/dev/null
show "job b read every file"
"$BUILD/mountctl" status --kept --socket "$T/k/k.sock" | sed 's/^/    /'

#!/bin/sh
# TIMEOUT: 180
# ALONE: starts the Slurm test cluster
# SANITIZE: no (the job's container around 100's paths, sanitized in 091 and 103)
# Training inside a container, as `srun --dataset=IMG singularity exec -B
# "$SQUASHCACHE_MOUNT" image.sif python train.py` does: on a 2-node Slurm
# cluster (tests/slurm/cluster.sh) a test user's tasks run in bubblewrap,
# the stand-in for Apptainer that Debian has (a user namespace of their
# own, a fresh /dev, a root of their own with /usr read-only, the mount
# bound in).  The mounts are under /dev/shm, the default base, which the
# fresh /dev hides: only the bind brings them in.  Inside, each task
# finds SQUASHCACHE_MOUNT and reads the same bytes as the source.
# Nothing is left after the job.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: starts munge, slurmctld and two slurmd, adds a test user"
need_cmd mksquashfs bwrap
for c in slurmctld slurmd srun sinfo munged; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed (sh tests/deps.sh slurm)"
done
[ -e /dev/fuse ] || skip "no /dev/fuse"
[ -f "$BUILD/squashcache_spank.so" ] || skip "no SPANK plugin built (libslurm-dev missing)"
. "$TOP/tests/slurm/cluster.sh"
# The nodes share the host's /dev/shm and /tmp (cluster.sh): this test
# sets up and looks at their files and mounts from the host.
CL_STORAGE=shared

# The job's user, of this run; what it and the nodes run is in $PTOP.
add_test_user U
# bwrap is not setuid in Debian: the user namespace must be open to users.
runuser -u "$U" -- bwrap --unshare-user --ro-bind / / true 2>"$T/userns.err" ||
    skip "bwrap cannot make a user namespace here: $(cat "$T/userns.err")"

# The default base, /dev/shm, in a directory of this test's own.
base=$(mktemp -d /dev/shm/sqc-ctr.XXXXXX)
chmod 0755 "$base"
at_exit 'for m in $(grep -o " $base/[^ ]*" /proc/self/mounts); do umount -l "$m" 2>/dev/null || true; done; rm -rf "$base"'
mkdir -p "$T/bin" "$T/src/sub" "$T/img" "$T/out"
chmod 1777 "$T/out"
cp "$PTOP/build/mountctl" "$PTOP/build/squashcached" "$T/bin/"
head -c 2000000 /dev/urandom >"$T/src/big.bin"
echo hello >"$T/src/sub/hello.txt"
mkimg "$T/src" "$T/img/alpha.sqfs"
chmod 0644 "$T/img/alpha.sqfs"
sum=$(cd "$T/src" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
cat >"$T/slurm-sqc.conf" <<EOC
base=$base
mountctl=$T/bin/mountctl
options=cache=64M
EOC
mkdir -p "$T/cl/hooks" "$T/cl/etc"
for h in prolog epilog site-task-prolog; do
    printf '#!/bin/sh\nSQUASHCACHE_SLURM_CONF=%s SQUASHCACHE_MOUNTCTL=%s exec %s "$@"\n' \
        "$T/slurm-sqc.conf" "$T/bin/mountctl" "$PTOP/slurm/hooks/$h" >"$T/cl/hooks/$h"
done
mv "$T/cl/hooks/site-task-prolog" "$T/cl/hooks/task-prolog"
chmod 0755 "$T/cl/hooks"/*
echo "required $PTOP/build/squashcache_spank.so conf=$T/slurm-sqc.conf" >"$T/cl/etc/plugstack.conf"
at_exit 'cluster_stop'
cluster_start "$T/cl" || { tail -n 30 "$T/cl/log/"*.log; fail "cluster did not start"; }

# Each task: fails if a container without the bind sees the mount; prints
# its user namespace outside and, inside bwrap with the bind, the
# namespace, whether /dev/fuse is there (a fresh /dev has none), the
# checksum of what it read and the variable.
cat >"$T/bin/task" <<'EOT'
#!/bin/sh
[ -n "${SQUASHCACHE_MOUNT:-}" ] || { echo "no SQUASHCACHE_MOUNT outside"; exit 1; }
out=$(readlink /proc/self/ns/user)
box() {
    bwrap --unshare-user --unshare-pid --die-with-parent \
        --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
        --symlink usr/lib64 /lib64 --dev /dev --proc /proc --tmpfs /tmp "$@"
}
# Without the bind the container does not see the mount.
box sh -c 'test -e "$SQUASHCACHE_MOUNT"' && { echo "visible without the bind"; exit 1; }
box --bind "$SQUASHCACHE_MOUNT" "$SQUASHCACHE_MOUNT" \
    sh -c 'f=no-fuse; [ -e /dev/fuse ] && f=fuse
s=$(cd "$SQUASHCACHE_MOUNT" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
echo "task $SLURMD_NODENAME $1 $(readlink /proc/self/ns/user) $f $s $SQUASHCACHE_MOUNT"' sh "$out"
EOT
chmod 0755 "$T/bin/task"

t0=$(date +%s)
(cd "$T/out" && runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" \
    srun -N2 -n4 --dataset="$T/img/alpha.sqfs" "$T/bin/task") >"$T/job.out" 2>&1 ||
    { cat "$T/job.out"; fail "srun --dataset with tasks in bwrap failed"; }
cat "$T/job.out"
[ "$(grep -c '^task ' "$T/job.out")" -eq 4 ] || fail "not 4 task lines"
grep '^task ' "$T/job.out" >"$T/tasks"
while read -r _ node outside inside fuse s mnt; do
    [ "$outside" != "$inside" ] || fail "$node: the task did not run in a user namespace of its own"
    [ "$fuse" = no-fuse ] || fail "$node: /dev/fuse inside: not a fresh /dev"
    [ "$s" = "$sum" ] || fail "$node: read wrong bytes inside the container"
    case "$mnt" in "$base/squashcache/job"*"-$node/alpha") ;; *) fail "$node: SQUASHCACHE_MOUNT is $mnt" ;; esac
done <"$T/tasks"
[ "$(grep '^task ' "$T/job.out" | cut -d' ' -f2 | sort -u | wc -l)" -eq 2 ] || fail "the tasks did not run on both nodes"
i=0
while grep -q " $base/" /proc/self/mounts || pgrep -u "$U" squashcached >/dev/null ||
    [ -n "$(ls -A "$base/squashcache" 2>/dev/null)" ]; do
    i=$((i + 1))
    [ "$i" -gt 100 ] && { grep " $base/" /proc/self/mounts; pgrep -af squashcached; fail "the job left mounts, daemons or directories"; }
    sleep 0.1
done
note "4 tasks in bwrap on 2 nodes read the mount in $(($(date +%s) - t0)) s; nothing left"
exit 0

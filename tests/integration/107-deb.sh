#!/bin/sh
# TIMEOUT: 420
# ALONE: installs and purges packages, starts the Slurm test cluster
# SANITIZE: no (builds and installs its own packages, without the sanitizer)
# The Debian packages (make deb, packaging/): built and checked by
# lintian, installed on this machine with apt-get, their files in place
# (dpkg -L, conffiles, mountctl --version, man -w squashcache_spank), then
# one job on a 2-node Slurm cluster (tests/slurm/cluster.sh) that uses the
# installed files only: the plugin from Slurm's plugin directory with its
# compiled-in /usr/bin/mountctl, the installed hooks, a test user's
# srun --dataset reading the mount.  Then purged, also at exit, so the
# machine is as before.  Packages installed by hand beforehand are left
# installed (reinstalled from this tree when of the same version; the
# test skips when another version is installed).  A `make install` in
# /usr/local is left as it was: the checks look at the packages' paths
# only, and the plugin it put where the package puts its own is kept
# aside and put back at exit.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: installs packages, starts a Slurm cluster, adds a test user"
need_cmd mksquashfs apt-get dpkg-deb lintian man
for c in slurmctld slurmd srun sinfo munged; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed (sh tests/deps.sh slurm)"
done
[ -e /dev/fuse ] || skip "no /dev/fuse"
[ -f /usr/include/slurm/spank.h ] || skip "no Slurm headers (libslurm-dev): no plugin to package"
. "$TOP/tests/slurm/cluster.sh"
# The nodes share the host's /dev/shm and /tmp (cluster.sh): this test
# sets up and looks at their files and mounts from the host.
CL_STORAGE=shared

pkgs="squashcache squashcache-slurm"
arch=$(dpkg --print-architecture)
plugindir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm-wlm
ver=$(dpkg-parsechangelog -l "$TOP/packaging/debian/changelog" -SVersion)
installed_before() {
    dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null | sed -n 's/^install ok installed //p'
}
by_hand=
for p in $pkgs; do
    v=$(installed_before "$p")
    [ -z "$v" ] && continue
    [ "$v" = "$ver" ] || skip "$p $v is installed by hand; this test would replace it with $ver"
    by_hand="$by_hand $p"
done

# --- 1. Build, lintian (make deb fails on a lintian error) -------------
t0=$(date +%s)
make -C "$TOP" --no-print-directory deb >"$T/deb.log" 2>&1 || { tail -n 40 "$T/deb.log"; fail "make deb failed"; }
note "make deb (with lintian) in $(($(date +%s) - t0)) s"
grep -E '^[EW]: ' "$T/deb.log" && note "lintian warnings above (no errors)"
debs=
for p in $pkgs; do
    f="$TOP/build/deb/${p}_${ver}_${arch}.deb"
    [ -f "$f" ] || fail "make deb made no $f"
    debs="$debs $f"
done

# --- 2. Install with apt-get; purge at exit unless there before ------
apt_q() {
    DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=120 \
        -o Dpkg::Options::=--force-confold "$@"
}
if [ -z "$by_hand" ]; then
    at_exit 'for p in $pkgs; do [ -n "$(installed_before "$p")" ] && { apt_q purge $pkgs >/dev/null 2>&1; break; }; done'
    reinstall=
else
    note "installed by hand before:$by_hand (left installed)"
    reinstall=--reinstall
fi
# `make install` puts its plugin in Slurm's plugin directory too, where
# the package's goes: dpkg would replace it and the purge remove it
# (put back after the purge: at_exit runs in order).
if [ -e "$plugindir/squashcache_spank.so" ] && ! dpkg -S "$plugindir/squashcache_spank.so" >/dev/null 2>&1; then
    cp -p "$plugindir/squashcache_spank.so" "$T/plugin.make-install"
    at_exit 'cp -p "$T/plugin.make-install" "$plugindir/squashcache_spank.so"'
    note "kept aside the plugin of a make install in $plugindir"
fi
# shellcheck disable=SC2086
(cd "$TOP" && apt_q install $reinstall ./build/deb/*.deb) >"$T/apt.log" 2>&1 ||
    { tail -n 30 "$T/apt.log"; fail "apt-get install ./build/deb/*.deb failed"; }
for p in $pkgs; do
    [ "$(installed_before "$p")" = "$ver" ] || fail "$p $ver is not installed after apt-get install"
done

# --- 3. What was installed --------------------------------------------
dpkg -L squashcache >"$T/files"
dpkg -L squashcache-slurm >>"$T/files"
for f in /usr/bin/squashcached /usr/bin/mountctl \
    /usr/share/man/man1/mountctl.1.gz /usr/share/man/man8/squashcached.8.gz \
    /lib/systemd/system/squashcache@.service /usr/libexec/squashcache/squashcache-dataset \
    /lib/systemd/system/squashcache-keeper.service \
    /usr/share/doc/squashcache/copyright /usr/share/doc/squashcache/slurm.md.gz \
    "$plugindir/squashcache_spank.so" /usr/share/man/man8/squashcache_spank.8.gz \
    /usr/libexec/squashcache/prolog /usr/libexec/squashcache/epilog \
    /usr/libexec/squashcache/site-task-prolog /usr/libexec/squashcache/task-prolog \
    /usr/libexec/squashcache/sqc-common.sh /etc/squashcache/slurm.conf \
    /etc/slurm/plugstack.conf.d/squashcache.conf \
    /usr/share/doc/squashcache-slurm/examples/sbcast-job.sh \
    /usr/lib/python3/dist-packages/squashcache/__init__.py \
    /usr/lib/python3/dist-packages/squashcache/torch.py; do
    grep -qx "$f" "$T/files" || fail "$f is not in the packages (dpkg -L)"
    [ -e "$f" ] || fail "$f is listed but not on disk"
done
grep -E '^/usr/(include|lib/libsquashcache)' "$T/files" && fail "the packages hold the static library or headers"
for f in /etc/squashcache/slurm.conf /etc/slurm/plugstack.conf.d/squashcache.conf; do
    dpkg-query -W -f='${Conffiles}\n' squashcache-slurm | grep -q "^ $f " || fail "$f is not a conffile"
done
# As shipped (an admin may have edited the installed ones): every key
# commented out, so the config is the defaults; the plugstack snippet
# commented out (enabling it is the admin's step).
dpkg-deb -x "$TOP/build/deb/squashcache-slurm_${ver}_${arch}.deb" "$T/x"
conf=$T/x/etc/squashcache/slurm.conf
grep -v '^#' "$conf" | grep -q . && fail "/etc/squashcache/slurm.conf sets a key"
for k in base options force_options user_options allow timeout mountctl prolog_spank; do
    grep -q "^#$k=" "$conf" || fail "/etc/squashcache/slurm.conf does not describe $k="
done
grep -v '^#' "$T/x/etc/slurm/plugstack.conf.d/squashcache.conf" | grep -q . && fail "the plugstack.conf.d snippet is active"
grep -q "ExecStart=/usr/libexec/squashcache/squashcache-dataset start %i" /lib/systemd/system/squashcache@.service ||
    fail "the unit does not run the installed helper"
/usr/bin/mountctl --version | grep -q "^mountctl $ver\$" || fail "mountctl --version: $(/usr/bin/mountctl --version 2>&1)"
/usr/bin/squashcached --version | grep -q "^squashcached $ver " || fail "squashcached --version: $(/usr/bin/squashcached --version 2>&1)"
# The system's manual and Python path, without /usr/local: a make
# install there comes first in both.
sysman() { man -M /usr/share/man "$@"; }
[ "$(sysman -w squashcache_spank)" = /usr/share/man/man8/squashcache_spank.8.gz ] ||
    fail "man -w squashcache_spank: $(sysman -w squashcache_spank 2>&1)"
sysman -w mountctl >/dev/null && sysman -w squashcached >/dev/null || fail "man -w mountctl/squashcached"
(cd / && /usr/bin/python3 -c 'import sys
sys.path = [p for p in sys.path if not p.startswith("/usr/local/")]
import squashcache
print(squashcache.__file__)') |
    grep -qx /usr/lib/python3/dist-packages/squashcache/__init__.py ||
    fail "the packaged Python module squashcache does not import"
grep -q /usr/bin/mountctl "$plugindir/squashcache_spank.so" || fail "the plugin does not default to /usr/bin/mountctl"
dpkg-query -W -f='${Depends}\n' squashcache | grep -q 'libfuse3-3' || fail "squashcache does not depend on libfuse3-3"
note "installed: $(wc -l <"$T/files") paths, mountctl $ver, man page at $(sysman -w squashcache_spank)"

# --- 4. One job on a cluster that uses the installed files only -------
# The job's user, of this run (lib.sh).
add_test_user U
mkdir -p "$T/shm" "$T/src/sub" "$T/img" "$T/out"
chmod 1777 "$T/shm" "$T/out"
head -c 2000000 /dev/urandom >"$T/src/big.bin"
echo hello >"$T/src/sub/hello.txt"
mkimg "$T/src" "$T/img/alpha.sqfs"
chmod 0644 "$T/img/alpha.sqfs"
sum=$(cd "$T/src" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
# The packaged config with every key uncommented (the defaults it shows)
# is one mountctl job takes without a word.
sed -n 's/^#\([a-z_]*=\)/\1/p' "$conf" >"$T/uncommented.conf"
/usr/bin/mountctl job --conf "$T/uncommented.conf" check "$T/img/alpha.sqfs" >"$T/conf-check.out" 2>"$T/conf-check.err" &&
    ! [ -s "$T/conf-check.err" ] ||
    { cat "$T/uncommented.conf" "$T/conf-check.err"; fail "mountctl job does not take the packaged config's defaults"; }
# No mountctl= here: the plugin runs the one compiled into it.
cat >"$T/slurm-sqc.conf" <<EOC
base=$T/shm
options=cache=64M
EOC
mkdir -p "$T/cl/hooks" "$T/cl/etc"
for h in prolog epilog; do
    printf '#!/bin/sh\nSQUASHCACHE_SLURM_CONF=%s exec /usr/libexec/squashcache/%s "$@"\n' \
        "$T/slurm-sqc.conf" "$h" >"$T/cl/hooks/$h"
done
printf '#!/bin/sh\nSQUASHCACHE_SLURM_CONF=%s exec /usr/libexec/squashcache/site-task-prolog "$@"\n' \
    "$T/slurm-sqc.conf" >"$T/cl/hooks/task-prolog"
chmod 0755 "$T/cl/hooks"/*
echo "required $plugindir/squashcache_spank.so conf=$T/slurm-sqc.conf" >"$T/cl/etc/plugstack.conf"
at_exit 'cluster_stop'
at_exit 'for m in $(grep -o " $T/shm/[^ ]*" /proc/self/mounts); do umount -l "$m" 2>/dev/null || true; done'
cluster_start "$T/cl" || { tail -n 30 "$T/cl/log/"*.log; fail "cluster did not start"; }

# Each task: its node, the checksum it read and the daemon's program.
cat >"$T/readit" <<'EOR'
#!/bin/sh
s=$(cd "$SQUASHCACHE_MOUNT" && find . -type f | sort | xargs md5sum | md5sum | cut -c1-32)
p=$(pgrep -u "$(id -u)" -f "squashcached .* $SQUASHCACHE_MOUNT\$" | head -n 1)
echo "task $SLURMD_NODENAME $s $(readlink "/proc/$p/exe") $SQUASHCACHE_MOUNT"
EOR
chmod 0755 "$T/readit"
t0=$(date +%s)
(cd "$T/out" && runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH=/usr/bin:/bin \
    srun -N2 -n2 --dataset="$T/img/alpha.sqfs" "$T/readit") >"$T/job.out" 2>&1 ||
    { cat "$T/job.out"; tail -n 20 "$T/cl/log/"slurmd-*.log; fail "srun --dataset with the installed plugin failed"; }
cat "$T/job.out"
[ "$(grep -c "^task \($CL_N1\|$CL_N2\) $sum /usr/bin/squashcached $T/shm/squashcache/job" "$T/job.out")" -eq 2 ] ||
    fail "not two tasks that read the image through /usr/bin/squashcached"
[ "$(grep '^task ' "$T/job.out" | cut -d' ' -f2 | sort -u | wc -l)" -eq 2 ] || fail "the tasks did not run on both nodes"
i=0
while grep -q " $T/shm/" /proc/self/mounts || pgrep -u "$U" squashcached >/dev/null ||
    [ -n "$(ls -A "$T/shm/squashcache" 2>/dev/null)" ]; do
    i=$((i + 1))
    [ "$i" -gt 100 ] && { grep " $T/shm/" /proc/self/mounts; pgrep -af squashcached; fail "the job left mounts, daemons or directories"; }
    sleep 0.1
done
note "job on 2 nodes with the installed plugin in $(($(date +%s) - t0)) s; nothing left"
cluster_stop

# --- 5. Purge: the machine as before ----------------------------------
if [ -z "$by_hand" ]; then
    # shellcheck disable=SC2086
    apt_q purge $pkgs >"$T/purge.log" 2>&1 || { cat "$T/purge.log"; fail "apt-get purge failed"; }
    for p in $pkgs; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed\|config-files' && fail "$p is still there after purge"
    done
    for f in /usr/bin/mountctl /usr/bin/squashcached "$plugindir/squashcache_spank.so" \
        /etc/squashcache/slurm.conf /etc/slurm/plugstack.conf.d/squashcache.conf /usr/libexec/squashcache; do
        [ -e "$f" ] && fail "$f is still there after purge"
    done
    note "purged"
fi
exit 0

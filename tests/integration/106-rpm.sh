#!/bin/sh
# TIMEOUT: 420
# ALONE: installs packages (tests/deps.sh rpm)
# SANITIZE: no (builds its own packages, without the sanitizer)
# The RPM packages (make rpm, packaging/rpm/): built from a fresh clone of
# this tree (with the work tree's uncommitted changes to tracked files) by
# `rpmbuild -ta` on the `make dist` tarball, rpmlint with no error, and
# their payload checked: the files of the .debs (tests/integration/
# 107-deb.sh), split the same way, at RHEL's places, nothing else; the two
# conffiles %config(noreplace); the version of lib/util/version.h and of
# packaging/debian/changelog; what the files say (plugin directory,
# compiled-in mountctl, the unit's helper).  Installs nothing.
. "$(dirname "$0")/lib.sh"
command -v rpmbuild >/dev/null 2>&1 || skip "rpmbuild is not installed (sh tests/deps.sh rpm)"
need_cmd git rpm rpm2cpio cpio readelf
git -C "$TOP" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
    skip "$TOP is not a git clone: make dist archives the git tree"

ver=$(sed -n 's/^#define SQC_VERSION "\(.*\)"$/\1/p' "$TOP/lib/util/version.h")
deb_ver=$(sed -n '1s/^squashcache (\([^)]*\)).*/\1/p' "$TOP/packaging/debian/changelog")
[ "$ver" = "$deb_ver" ] || fail "lib/util/version.h says $ver, packaging/debian/changelog $deb_ver"

# --- 1. A fresh clone, make rpm (rpmlint: make fails on an error) ------
git clone -q "$TOP" "$T/src" || fail "git clone $TOP"
git -C "$TOP" diff --binary HEAD >"$T/work.diff"
if [ -s "$T/work.diff" ]; then
    git -C "$T/src" apply "$T/work.diff" || fail "the work tree's changes do not apply to a clone"
    note "with the work tree's uncommitted changes"
fi
t0=$(date +%s)
# Without lib.sh's BUILD (this tree's build/), which the clone's make
# would take.
(cd "$T/src" && env -u BUILD make --no-print-directory rpm) >"$T/rpm.log" 2>&1 ||
    { tail -n 40 "$T/rpm.log"; fail "make rpm failed"; }
note "make rpm (dist, rpmbuild -ta, rpmlint) in $(($(date +%s) - t0)) s"
grep -q '^ *[0-9]* packages and [0-9]* specfiles checked; 0 errors,' "$T/rpm.log" ||
    { grep -E ': [EW]: |checked;' "$T/rpm.log"; fail "rpmlint did not report 0 errors"; }
grep -E ': W: ' "$T/rpm.log" | sed 's/^/    /'

tgz=$T/src/build/dist/squashcache-$ver.tar.gz
[ -f "$tgz" ] || fail "make rpm made no $tgz (make dist)"
tar xzf "$tgz" -C "$T" "squashcache-$ver/squashcache.spec" || fail "$tgz has no squashcache-$ver/squashcache.spec"
grep -q "^Version: *$ver\$" "$T/squashcache-$ver/squashcache.spec" || fail "the tarball's spec is not of version $ver"
arch=$(rpm --eval '%{_arch}')
main=$T/src/build/rpm/RPMS/$arch/squashcache-$ver-1.$arch.rpm
slurm=$T/src/build/rpm/RPMS/$arch/squashcache-slurm-$ver-1.$arch.rpm
for f in "$main" "$slurm" "$T/src/build/rpm/SRPMS/squashcache-$ver-1.src.rpm"; do
    [ -f "$f" ] || fail "make rpm made no $f"
done
for f in "$main" "$slurm"; do
    v=$(rpm -qp --qf '%{VERSION}-%{RELEASE}' "$f")
    [ "$v" = "$ver-1" ] || fail "$(basename "$f") is version $v, not $ver-1"
done

# --- 2. The payload: the .debs' files, at RHEL's places ---------------
# What differs from the .debs, on purpose: the plugin in /usr/lib64/slurm
# (RHEL's Slurm), the unit in /usr/lib/systemd/system, the Python module
# in python3's site-packages, the license in /usr/share/licenses/PKG, no
# changelog.gz (rpm has its own), docs not gzipped (RHEL does not), and
# rpm's /usr/lib/.build-id links (not listed here).
# files PKG.rpm: its files and symlinks, no directories, no .build-id.
files() {
    rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" |
        sed -n 's/^[^d][^ ]* //p' | grep -v '^/usr/lib/\.build-id/' | LC_ALL=C sort
}
files "$main" >"$T/main.files"
files "$slurm" >"$T/slurm.files"
sitelib=$(sed -n 's|^\(/usr/lib/python3[.0-9]*/site-packages\)/squashcache/__init__\.py$|\1|p' "$T/main.files")
[ -n "$sitelib" ] || { cat "$T/main.files"; fail "no squashcache/__init__.py in a python3 site-packages"; }
LC_ALL=C sort >"$T/main.want" <<EOF
/usr/bin/mountctl
/usr/bin/squashcached
/usr/share/man/man1/mountctl.1.gz
/usr/share/man/man8/squashcached.8.gz
/usr/lib/systemd/system/squashcache@.service
/usr/lib/systemd/system/squashcache-keeper.service
/usr/libexec/squashcache/squashcache-dataset
$sitelib/squashcache/__init__.py
$sitelib/squashcache/torch.py
$sitelib/squashcache/retar.py
/usr/share/doc/squashcache/README.md
/usr/share/doc/squashcache/admin.md
/usr/share/doc/squashcache/design.md
/usr/share/doc/squashcache/performance.md
/usr/share/doc/squashcache/slurm.md
/usr/share/doc/squashcache/systemd.md
/usr/share/doc/squashcache/examples/datasets/example.conf
/usr/share/licenses/squashcache/copyright
EOF
LC_ALL=C sort >"$T/slurm.want" <<EOF
/usr/lib64/slurm/squashcache_spank.so
/usr/share/man/man8/squashcache_spank.8.gz
/usr/libexec/squashcache/prolog
/usr/libexec/squashcache/epilog
/usr/libexec/squashcache/task-prolog
/usr/libexec/squashcache/site-task-prolog
/usr/libexec/squashcache/sqc-common.sh
/etc/squashcache/slurm.conf
/etc/slurm/plugstack.conf.d/squashcache.conf
/usr/share/doc/squashcache-slurm/examples/sbcast-job.sh
/usr/share/licenses/squashcache-slurm/copyright
EOF
for p in main slurm; do
    diff -u "$T/$p.want" "$T/$p.files" >"$T/$p.diff" ||
        { cat "$T/$p.diff"; fail "the files of the $p package are not the .deb's (- missing, + not wanted)"; }
done
# Directories of their own: /usr/libexec/squashcache, the config's.
rpm -qlp "$main" | grep -qx /usr/libexec/squashcache || fail "squashcache does not own /usr/libexec/squashcache"
for d in /etc/squashcache /etc/slurm/plugstack.conf.d; do
    rpm -qlp "$slurm" | grep -qx "$d" || fail "squashcache-slurm does not own $d"
done

# The conffiles: exactly the two, %config(noreplace) (flags c and n).
[ -z "$(rpm -qcp "$main")" ] || fail "squashcache has config files: $(rpm -qcp "$main")"
rpm -qcp "$slurm" | LC_ALL=C sort >"$T/conf.files"
printf '%s\n' /etc/slurm/plugstack.conf.d/squashcache.conf /etc/squashcache/slurm.conf >"$T/conf.want"
diff -u "$T/conf.want" "$T/conf.files" || fail "squashcache-slurm's config files are not the .deb's conffiles"
for f in /etc/squashcache/slurm.conf /etc/slurm/plugstack.conf.d/squashcache.conf; do
    rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$slurm" | grep -qx "cn $f" ||
        fail "$f is not %config(noreplace)"
done

# --- 3. What the files say ---------------------------------------------
mkdir -p "$T/x"
for f in "$main" "$slurm"; do
    (cd "$T/x" && rpm2cpio "$f" | cpio -idm --quiet) || fail "rpm2cpio $(basename "$f")"
done
x=$T/x
grep -v '^#' "$x/etc/squashcache/slurm.conf" | grep -q . && fail "/etc/squashcache/slurm.conf sets a key"
cmp -s "$x/etc/squashcache/slurm.conf" "$TOP/packaging/slurm.conf" || fail "/etc/squashcache/slurm.conf is not packaging/slurm.conf"
snip=$x/etc/slurm/plugstack.conf.d/squashcache.conf
grep -v '^#' "$snip" | grep -q . && fail "the plugstack.conf.d snippet is active"
grep -qx '#required /usr/lib64/slurm/squashcache_spank.so conf=/etc/squashcache/slurm.conf' "$snip" ||
    { tail -n 2 "$snip"; fail "the plugstack.conf.d snippet does not name /usr/lib64/slurm/squashcache_spank.so"; }
grep -q /usr/bin/mountctl "$x/usr/lib64/slurm/squashcache_spank.so" || fail "the plugin does not default to /usr/bin/mountctl"
grep -q "ExecStart=/usr/libexec/squashcache/squashcache-dataset start %i" "$x/usr/lib/systemd/system/squashcache@.service" ||
    fail "the unit does not run the installed helper"
[ -x "$x/usr/libexec/squashcache/prolog" ] || fail "the prolog is not executable"
[ -x "$x/usr/libexec/squashcache/sqc-common.sh" ] && fail "sqc-common.sh (sourced, not run) is executable"
for f in usr/bin/squashcached usr/bin/mountctl usr/lib64/slurm/squashcache_spank.so; do
    readelf -S "$x/$f" | grep -q '\.debug_info' && fail "/$f has its debug info (not in a -debuginfo package)"
done
# Built here against Debian's libraries: they run here.
"$x/usr/bin/mountctl" --version | grep -q "^mountctl $ver\$" || fail "mountctl --version: $("$x/usr/bin/mountctl" --version 2>&1)"

# --- 4. Dependencies under RHEL's names --------------------------------
rpm -qRp "$main" >"$T/main.req"
rpm -qRp "$slurm" >"$T/slurm.req"
for r in fuse3 python3 'libfuse3.so.3()(64bit)'; do
    grep -qxF "$r" "$T/main.req" || fail "squashcache does not require $r"
done
grep -qx "squashcache(x86-64) = $ver-1" "$T/slurm.req" || fail "squashcache-slurm does not require squashcache $ver-1"
if ! grep -qx 'slurm >= [0-9]*\.[0-9]*' "$T/slurm.req" || ! grep -qx 'slurm < [0-9]*\.[0-9]*' "$T/slurm.req"; then
    cat "$T/slurm.req"
    fail "squashcache-slurm is not tied to one Slurm release"
fi
note "$(wc -l <"$T/main.files") + $(wc -l <"$T/slurm.files") files, $(grep 'slurm >=' "$T/slurm.req")"
exit 0

#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the Debian packages squashcache and squashcache-slurm from this
# tree into build/deb/ (`make deb` runs this, then lintian).
#
#   sh packaging/deb.sh
#
# No debhelper: `make install` with PREFIX=/usr and Debian's hardening
# flags into a staging root, the files split between the two packages by
# path, then dpkg-dev's own tools (dpkg-shlibdeps for the library
# dependencies, dpkg-gencontrol for DEBIAN/control) and dpkg-deb.  The
# metadata is in packaging/debian/ (control, changelog, copyright); the
# version is the changelog's, which must equal lib/util/version.h's.
# Needs no network.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=build/deb
obj=$out/obj
root=$out/root
pkgs="squashcache squashcache-slurm"
# The host's architecture, and Debian's Slurm plugin directory for it.
arch=$(dpkg --print-architecture)
plugindir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm-wlm
MAKE=${MAKE:-make}

die() {
    echo "deb: $*" >&2
    exit 1
}

ver=$(dpkg-parsechangelog -l packaging/debian/changelog -SVersion)
src_ver=$(sed -n 's/^#define SQC_VERSION "\(.*\)"$/\1/p' lib/util/version.h)
[ "$ver" = "$src_ver" ] ||
    die "packaging/debian/changelog says $ver, lib/util/version.h $src_ver: add a changelog entry"
# Reproducible: file times and gzip headers from the changelog's date.
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l packaging/debian/changelog -STimestamp)
export SOURCE_DATE_EPOCH

# 1. Build and install with PREFIX=/usr, so the SPANK plugin's compiled-in
#    mountctl is /usr/bin/mountctl.  Objects of their own (build/deb/obj):
#    the normal build's plugin has PREFIX=/usr/local compiled in.
#    The Makefile appends to CPPFLAGS and LDFLAGS: they come through the
#    environment (on make's command line they would replace its own).
rm -rf "$root" "$out/src" "$out"/*.deb
mkdir -p "$root"
DEB_BUILD_MAINT_OPTIONS=hardening=+all
export DEB_BUILD_MAINT_OPTIONS
CFLAGS=$(dpkg-buildflags --get CFLAGS)
CPPFLAGS=$(dpkg-buildflags --get CPPFLAGS)
LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
export CFLAGS CPPFLAGS LDFLAGS
# DESTDIR relative to the tree (make runs here): the Makefile's install
# recipe does not quote it, and the tree's path may have spaces.
$MAKE --no-print-directory BUILD="$obj" PREFIX=/usr DESTDIR="$root" \
    SYSTEMD_UNITDIR=/lib/systemd/system SLURM_PLUGINDIR="$plugindir" install >"$out/make.log" 2>&1 ||
    { tail -n 30 "$out/make.log" >&2; die "make install failed (log: $out/make.log)"; }
[ -f "$root$plugindir/squashcache_spank.so" ] ||
    die "no SPANK plugin was built: install libslurm-dev (sh tests/deps.sh deb)"

# 2. Split the staging root into the two packages' trees, at
#    build/deb/src/debian/PKG where dpkg-shlibdeps expects them.
# take PKG PATH...: move PATHs (relative to the root) into PKG's tree.
take() {
    _p=$1
    shift
    for _f in "$@"; do
        [ -e "$root/$_f" ] || die "$_f was not installed"
        mkdir -p "$out/src/debian/$_p/$(dirname "$_f")"
        mv "$root/$_f" "$out/src/debian/$_p/$_f"
    done
}
take squashcache usr/bin/squashcached usr/bin/mountctl \
    usr/share/man/man1/mountctl.1 usr/share/man/man8/squashcached.8 \
    lib/systemd/system/squashcache@.service \
    lib/systemd/system/squashcache-keeper.service \
    usr/libexec/squashcache/squashcache-dataset \
    usr/lib/python3/dist-packages/squashcache/__init__.py \
    usr/lib/python3/dist-packages/squashcache/torch.py \
    usr/lib/python3/dist-packages/squashcache/retar.py
take squashcache-slurm "${plugindir#/}/squashcache_spank.so" \
    usr/share/man/man8/squashcache_spank.8 \
    usr/libexec/squashcache/prolog usr/libexec/squashcache/epilog \
    usr/libexec/squashcache/task-prolog usr/libexec/squashcache/site-task-prolog \
    usr/libexec/squashcache/sqc-common.sh
# Not packaged: the static library and its headers (no -dev package yet),
# and the sbcast recipe from libexec (it goes to the examples below).
rm -rf "$root/usr/lib/libsquashcache.a" "$root/usr/include" \
    "$root/usr/libexec/squashcache/sbcast-job.sh"
left=$(cd "$root" && find . ! -type d)
[ -z "$left" ] || die "installed but in no package: $left"

s=$out/src/debian/squashcache
install -d "$s/usr/share/doc/squashcache/examples/datasets"
install -m 0644 README.md docs/admin.md docs/design.md docs/performance.md \
    docs/slurm.md docs/systemd.md "$s/usr/share/doc/squashcache/"
install -m 0644 systemd/datasets/example.conf "$s/usr/share/doc/squashcache/examples/datasets/"
s=$out/src/debian/squashcache-slurm
install -d "$s/etc/squashcache" "$s/etc/slurm/plugstack.conf.d" \
    "$s/usr/share/doc/squashcache-slurm/examples"
install -m 0644 packaging/slurm.conf "$s/etc/squashcache/slurm.conf"
sed "s|@SLURM_PLUGINDIR@|$plugindir|" packaging/plugstack.conf \
    >"$s/etc/slurm/plugstack.conf.d/squashcache.conf"
chmod 0644 "$s/etc/slurm/plugstack.conf.d/squashcache.conf"
install -m 0644 slurm/examples/sbcast-job.sh "$s/usr/share/doc/squashcache-slurm/examples/"
# Sourced by the hooks, not run: no execute bit.
chmod 0644 "$s/usr/libexec/squashcache/sqc-common.sh"
# A plugin is loaded, not run.
chmod 0644 "$s$plugindir/squashcache_spank.so"
printf '%s\n' /etc/squashcache/slurm.conf /etc/slurm/plugstack.conf.d/squashcache.conf \
    >"$out/slurm.conffiles"

# 3. What Debian policy asks of every package: stripped objects, man
#    pages and changelog gzipped, a copyright file; md5sums.
mkdir -p "$out/src/debian"
cp packaging/debian/control packaging/debian/changelog "$out/src/debian/"
# Slurm loads only plugins of its own release (major.minor): tie the
# plugin to the release of the headers it was built with.
slurm_ver=$(dpkg-query -W -f='${Version}' libslurm-dev)
slurm_mm=$(echo "$slurm_ver" | sed -n 's/^\([0-9]*\)\.\([0-9]*\)\..*/\1.\2/p')
[ -n "$slurm_mm" ] || die "cannot read Slurm's release from libslurm-dev $slurm_ver"
slurm_next=$(echo "$slurm_mm" | awk -F. '{ printf "%s.%02d", $1, $2 + 1 }')
for p in $pkgs; do
    s=$out/src/debian/$p
    find "$s" -type f \( -perm -u+x -o -name '*.so' \) -exec sh -c \
        'readelf -h "$1" >/dev/null 2>&1' sh {} \; -print |
        while read -r f; do
            strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f"
        done
    find "$s/usr/share/man" -type f -exec gzip -9n {} +
    install -d "$s/usr/share/doc/$p"
    install -m 0644 packaging/debian/copyright "$s/usr/share/doc/$p/"
    gzip -9nc packaging/debian/changelog >"$s/usr/share/doc/$p/changelog.gz"
    # Documentation over 4 kB is compressed, as dh_compress does.
    find "$s/usr/share/doc/$p" -maxdepth 1 -name '*.md' -size +4k -exec gzip -9n {} +
    elfs=$(find "$s" -type f -exec sh -c 'readelf -h "$1" >/dev/null 2>&1' sh {} \; -print)
    : >"$out/src/debian/$p.substvars"
    install -d -m 0755 "$s/DEBIAN" # how dpkg-shlibdeps finds the package's root
    # shellcheck disable=SC2046 # one word per object
    (cd "$out/src" && dpkg-shlibdeps -T"debian/$p.substvars" $(echo "$elfs" | sed "s|^$out/src/||")) ||
        die "dpkg-shlibdeps failed for $p"
    [ "$p" = squashcache-slurm ] &&
        echo "slurm:Depends=slurm-wlm-basic-plugins (>= $slurm_mm), slurm-wlm-basic-plugins (<< $slurm_next)" \
            >>"$out/src/debian/$p.substvars"
    (cd "$out/src" && dpkg-gencontrol -p"$p" -T"debian/$p.substvars" -P"debian/$p") ||
        die "dpkg-gencontrol failed for $p"
    [ "$p" = squashcache-slurm ] && install -m 0644 "$out/slurm.conffiles" "$s/DEBIAN/conffiles"
    (cd "$s" && find . -type f ! -path './DEBIAN/*' | sed 's|^\./||' | LC_ALL=C sort |
        xargs md5sum) >"$s/DEBIAN/md5sums"
    chmod 0644 "$s/DEBIAN/md5sums"
    find "$s" -type d -exec chmod 0755 {} +
    dpkg-deb --root-owner-group -Zxz --build "$s" "$out/${p}_${ver}_${arch}.deb" >/dev/null
done
rm -rf "$root" "$out/src" "$out/slurm.conffiles"
ls "$out"/*.deb

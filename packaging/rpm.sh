#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the RPM packages squashcache and squashcache-slurm, and the source
# RPM, from the release tarball into build/rpm/ (`make rpm` runs
# packaging/dist.sh first and rpmlint after).
#
#   sh packaging/rpm.sh
#
# This is `rpmbuild -ta` as an admin runs it on RHEL (docs/slurm.md), with
# what Debian needs besides: --nodeps, since Debian's rpm has no database
# of the installed build dependencies (tests/deps.sh rpm installs their
# Debian names), and rpm's own tree in build/rpm/.  The packages are
# linked against Debian's libraries: they check the spec, they are not
# for RHEL nodes.  Needs no network.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=build/rpm

die() {
    echo "rpm: $*" >&2
    exit 1
}

ver=$(sed -n 's/^#define SQC_VERSION "\(.*\)"$/\1/p' lib/util/version.h)
tgz=build/dist/squashcache-$ver.tar.gz
[ -f "$tgz" ] || die "no $tgz: run make dist"
# Without them the spec's %install fails further on, less clearly.
[ -f /usr/include/slurm/spank.h ] || die "no Slurm headers: install libslurm-dev (sh tests/deps.sh rpm)"
command -v rpmbuild >/dev/null 2>&1 || die "no rpmbuild: install rpm (sh tests/deps.sh rpm)"

rm -rf "$out"
mkdir -p "$out"
# The build in the tarball is rpmbuild's alone: nothing from a calling
# make (BUILD from the tests, SANITIZE=, -j and its jobserver) or the
# shell's flags (the spec's %set_build_flags sets them).
unset BUILD SANITIZE DEBUG WERROR MAKEFLAGS MFLAGS MAKELEVEL CFLAGS CPPFLAGS LDFLAGS
# Reproducible: file times from the changelog's last entry.
rpmbuild -ta --nodeps --load packaging/rpm/debian.macros --define "_topdir $top/$out" \
    --define "source_date_epoch_from_changelog 1" --define "clamp_mtime_to_source_date_epoch 1" \
    --define "use_source_date_epoch_as_buildtime 1" \
    "$tgz" >"$out/rpmbuild.log" 2>&1 ||
    { tail -n 30 "$out/rpmbuild.log" >&2; die "rpmbuild failed (log: $out/rpmbuild.log)"; }
ls "$out"/RPMS/*/*.rpm "$out"/SRPMS/*.rpm

#!/bin/sh
# SPDX-License-Identifier: MIT
# The release tarball build/dist/squashcache-VERSION.tar.gz (`make dist`):
# the git tree under squashcache-VERSION/, with squashcache.spec at its top
# so that `rpmbuild -ta` builds the RPM packages from it.
#
#   sh packaging/dist.sh
#
# The version is lib/util/version.h's; the top entry of
# packaging/debian/changelog must be of it (as packaging/deb.sh checks).
# The spec is packaging/rpm/squashcache.spec.in with that version and a
# %changelog made from packaging/debian/changelog: one source for both.
# The tree is HEAD's, with the work tree's changes to tracked files if any
# (so that `make rpm` builds what `make deb` builds); untracked files are
# not in it.  Needs git and POSIX tools only: it runs on RHEL too.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=build/dist

die() {
    echo "dist: $*" >&2
    exit 1
}

ver=$(sed -n 's/^#define SQC_VERSION "\(.*\)"$/\1/p' lib/util/version.h)
[ -n "$ver" ] || die "no SQC_VERSION in lib/util/version.h"
deb_ver=$(sed -n '1s/^squashcache (\([^)]*\)).*/\1/p' packaging/debian/changelog)
[ "$ver" = "$deb_ver" ] ||
    die "packaging/debian/changelog says $deb_ver, lib/util/version.h $ver: add a changelog entry"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "needs a git clone of squashcache"

# debian/changelog to %changelog: "* Wed Nov 25 2026 NAME <MAIL> - VER-1",
# then the entry's lines ("  * text" becomes "- text"), newest first.
rpm_changelog() {
    awk '
    /^[a-z]/ { v = $2; gsub(/[()]/, "", v); n = 0; next }
    /^  \* / { line[++n] = "- " substr($0, 5); next }
    /^    / { line[++n] = "  " substr($0, 5); next }
    /^ -- / {
        s = substr($0, 5)
        i = index(s, ">")
        who = substr(s, 1, i)
        split(substr(s, i + 1), d, /[ ,]+/)
        # d[2]=Wed d[3]=25 d[4]=Nov d[5]=2026
        printf "* %s %s %s %s %s - %s-1\n", d[2], d[4], d[3], d[5], who, v
        for (k = 1; k <= n; k++)
            print line[k]
        print ""
    }' packaging/debian/changelog
}

mkdir -p "$out"
spec=$out/squashcache.spec
{
    sed "s/@VERSION@/$ver/" packaging/rpm/squashcache.spec.in
    rpm_changelog
} >"$spec.tmp"
grep -q '^\* [A-Z][a-z][a-z] [A-Z][a-z][a-z] [0-9]* [0-9]* .* - '"$ver"'-1$' "$spec.tmp" ||
    die "could not make %changelog from packaging/debian/changelog"
mv "$spec.tmp" "$spec"

# A commit of the work tree when it differs from HEAD (it is not stored in
# any branch or in the stash).
tree=$(git stash create)
[ -z "$tree" ] || echo "dist: with the work tree's uncommitted changes" >&2
tgz=$out/squashcache-$ver.tar.gz
git archive --format=tar --prefix="squashcache-$ver/" --add-file="$spec" "${tree:-HEAD}" |
    gzip -9n >"$tgz.tmp"
mv "$tgz.tmp" "$tgz"
echo "$tgz"

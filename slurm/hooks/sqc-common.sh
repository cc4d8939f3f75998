# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Shared by squashcache's Slurm scripts (sourced, POSIX sh).
#
# Finds mountctl: SQUASHCACHE_MOUNTCTL; else the one beside the scripts'
# install place (PREFIX/bin for PREFIX/libexec/squashcache/) or on PATH,
# then the site config's mountctl= if it names one.  The scripts never
# read the site config nor name mounts themselves: they ask
# `mountctl job config KEY` and `mountctl job name IMAGE` (one parser, one
# set of name rules: slurm/dataset.c); which config file reaches mountctl
# through the environment.

sqc_mountctl=${SQUASHCACHE_MOUNTCTL:-}
if [ -z "$sqc_mountctl" ]; then
    sqc_mountctl=$(cd "$(dirname "$0")/../../bin" 2>/dev/null && pwd)/mountctl
    [ -x "$sqc_mountctl" ] || sqc_mountctl=$(command -v mountctl 2>/dev/null || echo /usr/local/bin/mountctl)
    _m=$("$sqc_mountctl" job config mountctl </dev/null 2>/dev/null) || _m=
    [ -n "$_m" ] && sqc_mountctl=$_m
fi

# sqc_tidy: the first line of mountctl's stderr on stdin, without the
# program and module prefixes ("squashcache: IMAGE: " goes in front).
sqc_tidy() {
    sed -n '/./{p;q;}' | sed -E 's/^((mountctl|squashcached|squashcache|error|image): )+//'
}

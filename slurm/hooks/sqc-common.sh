# SPDX-License-Identifier: MIT
# shellcheck shell=sh disable=SC2034
# Shared by squashcache's Slurm scripts (sourced, POSIX sh).
#
# Reads the site config (KEY=VALUE lines; SQUASHCACHE_SLURM_CONF, default
# /etc/squashcache/slurm.conf) for the keys the user-level task-prolog
# needs (base, options) and for mountctl=; SQUASHCACHE_MOUNTCTL overrides
# it.  The root side (Prolog, Epilog) is `mountctl job`: all it takes from
# here is where mountctl is.

sqc_base=/dev/shm
sqc_options=
sqc_mountctl=

sqc_read_conf() {
    _f=${SQUASHCACHE_SLURM_CONF:-/etc/squashcache/slurm.conf}
    [ -r "$_f" ] || return 0
    while IFS= read -r _l || [ -n "$_l" ]; do
        case "$_l" in ''|'#'*) continue ;; esac
        _k=${_l%%=*}
        _v=${_l#*=}
        case "$_k" in
        base) sqc_base=$_v ;;
        options) sqc_options=$_v ;;
        mountctl) sqc_mountctl=$_v ;;
        esac
    done <"$_f"
}
sqc_read_conf
[ -n "${SQUASHCACHE_MOUNTCTL:-}" ] && sqc_mountctl=$SQUASHCACHE_MOUNTCTL
if [ -z "$sqc_mountctl" ]; then
    # Installed layout: PREFIX/libexec/squashcache/ beside PREFIX/bin/.
    sqc_mountctl=$(cd "$(dirname "$0")/../../bin" 2>/dev/null && pwd)/mountctl
    [ -x "$sqc_mountctl" ] || sqc_mountctl=$(command -v mountctl 2>/dev/null || echo /usr/local/bin/mountctl)
fi

# sqc_name IMAGE: the mount name, the file name without its extension.
sqc_name() {
    _n=${1##*/}
    for _e in .sqfs .squashfs .sqsh .img .sif; do
        case "$_n" in *"$_e") _n=${_n%"$_e"}; break ;; esac
    done
    echo "$_n"
}

# sqc_tidy: the first line of mountctl's stderr on stdin, without the
# program and module prefixes ("squashcache: IMAGE: " goes in front).
sqc_tidy() {
    sed -n '/./{p;q;}' | sed -E 's/^((mountctl|squashcached|squashcache|error|image): )+//'
}

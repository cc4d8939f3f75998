# SPDX-License-Identifier: MIT
# shellcheck shell=sh disable=SC2034
# Shared by squashcache's Slurm hooks (sourced, POSIX sh).
#
# Reads the site config (KEY=VALUE lines; SQUASHCACHE_SLURM_CONF, default
# /etc/squashcache/slurm.conf) into sqc_base, sqc_options, sqc_allow,
# sqc_mountctl, sqc_state, and offers the helpers every hook uses.
# SQUASHCACHE_MOUNTCTL overrides mountctl= (tests run from the build dir).

sqc_base=/dev/shm
sqc_options=
sqc_allow=
sqc_mountctl=
sqc_state=/run/squashcache
sqc_prolog_spank=no

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
        allow) sqc_allow=$_v ;;
        mountctl) sqc_mountctl=$_v ;;
        state) sqc_state=$_v ;;
        prolog_spank) sqc_prolog_spank=$_v ;;
        esac
    done <"$_f"
}
sqc_read_conf
[ -n "${SQUASHCACHE_MOUNTCTL:-}" ] && sqc_mountctl=$SQUASHCACHE_MOUNTCTL
if [ -z "$sqc_mountctl" ]; then
    sqc_mountctl=$(command -v mountctl 2>/dev/null || echo /usr/local/bin/mountctl)
fi

# sqc_name IMAGE: the mount name, the file name without its extension.
sqc_name() {
    _n=${1##*/}
    for _e in .sqfs .squashfs .sqsh .img .sif; do
        case "$_n" in *"$_e") _n=${_n%"$_e"}; break ;; esac
    done
    echo "$_n"
}

# sqc_allowed IMAGE: true when IMAGE is under one of allow= (or no allow=).
sqc_allowed() {
    [ -z "$sqc_allow" ] && return 0
    _old=$IFS; IFS=:
    for _p in $sqc_allow; do
        case "$1" in "${_p%/}"/*) IFS=$_old; return 0 ;; esac
    done
    IFS=$_old
    return 1
}

# sqc_mounts_under DIR: mount points below DIR/, from /proc/self/mounts
# (as root, mountpoint -q fails on a user's FUSE mount: stat gets EACCES).
sqc_mounts_under() {
    while read -r _dev _dir _rest; do
        # /proc/self/mounts escapes space as \040; our paths have none.
        case "$_dir" in "$1"/*) echo "$_dir" ;; esac
    done </proc/self/mounts
}

sqc_is_mounted() {
    while read -r _dev _dir _rest; do
        [ "$_dir" = "$1" ] && return 0
    done </proc/self/mounts
    return 1
}

# sqc_daemon_pids MNT: squashcached processes whose arguments name MNT.
sqc_daemon_pids() {
    for _c in /proc/[0-9]*/cmdline; do
        _a=$(tr '\0' '\n' <"$_c" 2>/dev/null) || continue
        case "$_a" in *squashcached*) ;; *) continue ;; esac
        if printf '%s\n' "$_a" | grep -qxF -- "$1"; then
            _p=${_c#/proc/}
            echo "${_p%/cmdline}"
        fi
    done
}

# sqc_tidy: the first line of mountctl's stderr on stdin, without the
# program and module prefixes ("squashcache: IMAGE: " goes in front).
sqc_tidy() {
    sed -n '/./{p;q;}' | sed -E 's/^((mountctl|squashcached|squashcache|error|image): )+//'
}

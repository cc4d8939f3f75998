#!/bin/sh
# Enforce the module boundaries by grepping includes: each module of lib/
# includes only the modules its allowed line below names (util at the
# bottom, nothing below it); lib/ never includes a FUSE header, never calls
# exit() or abort() and never prints but through log.h; the on-disk
# structs of sqfs_fmt.h stay in lib/image; mountctl/ and slurm/ never
# include FUSE, and slurm/ nothing of mountctl/; every header has the one
# include-guard form; nothing points outside the repository.  Then
# run shellcheck over the shell scripts.  Prints each violation; exits 1
# if there is any.
set -u
cd "$(dirname "$0")/.." || exit 2
bad=0

violation() {
    echo "lint: $*"
    bad=1
}

# allowed MODULE DEPS...: files of lib/MODULE include only these modules.
allowed() {
    mod=$1
    shift
    for f in lib/"$mod"/*.[ch]; do
        [ -f "$f" ] || continue
        grep -o '#include "[a-z_]*/' "$f" | sed 's/#include "//; s|/$||' | sort -u |
            while read -r dep; do
                ok=0
                for a in "$mod" "$@"; do
                    [ "$dep" = "$a" ] && ok=1
                done
                [ $ok = 1 ] || echo "lint: $f includes $dep/ (lib/$mod may use: $mod $*)"
            done
    done
}

out=$(
    allowed util
    allowed decompress util
    allowed cache util
    allowed stage util
    allowed seal util
    # order uses image (plan.c: the epoch order as an image's window,
    # plans from its files); image asks its window through struct
    # img_window and includes nothing of order.
    allowed image util decompress cache stage seal
    allowed order util image
    allowed prefetch util image cache stage order
    allowed index util image
    allowed json util
    allowed ctl util json
    allowed keep util stage
)
[ -n "$out" ] && { echo "$out"; bad=1; }

# lib/ never touches FUSE, never exits, never prints but through log.h.
for f in lib/*/*.[ch]; do
    grep -n '#include <fuse' "$f" && violation "$f includes a FUSE header"
    grep -nE '\b(exit|abort|_exit)\s*\(' "$f" && violation "$f calls exit/abort"
    case "$f" in
    lib/util/log.c) ;;
    *) grep -nE '\b(printf|fprintf|puts|perror)\s*\(' "$f" | grep -v snprintf &&
        violation "$f prints directly (use log.h)" ;;
    esac
done

# On-disk structures stay inside lib/image.
for f in $(grep -rl --include='*.[ch]' 'sqfs_fmt.h' lib daemon mountctl tests bench 2>/dev/null); do
    case "$f" in
    lib/image/*) ;;
    *) violation "$f includes sqfs_fmt.h (only lib/image may)" ;;
    esac
done

# The daemon is FUSE glue: no on-disk knowledge; mountctl and the Slurm node
# side never link FUSE.
for f in mountctl/*.[ch] slurm/*.[ch]; do
    [ -f "$f" ] || continue
    grep -n '#include <fuse' "$f" && violation "$f includes a FUSE header"
done

# One include-guard form: SQC_ and the path less lib/ (lib/util/log.h:
# SQC_UTIL_LOG_H, daemon/warm.h: SQC_DAEMON_WARM_H).
for f in $(git ls-files '*.h' 2>/dev/null || find lib daemon mountctl slurm tests bench -name '*.h'); do
    g=SQC_$(echo "${f#lib/}" | tr 'a-z/.' 'A-Z__')
    grep -q "^#ifndef $g\$" "$f" && grep -q "^#define $g\$" "$f" ||
        violation "$f: the include guard is not $g"
done

# Nothing in the repository points outside it: a rule is said where it
# applies, not by reference to a style file or notes kept elsewhere, and
# no path of a particular machine is cited.
if git rev-parse --git-dir >/dev/null 2>&1; then
    git grep -nE "(^|[[:space:]\"'=(:])/work/|HOUSE_STYLE|\.\./shared/" -- . ':!tests/lint.sh' &&
        violation "the lines above point outside the repository"
fi

# The Slurm node side (slurm/README.md).  One parser of the site config:
# only slurm/dataset.[ch] name the file or read it; the plugin links
# dataset.c and nothing else of the project, so dataset.c needs no other
# file; mountctl/cmd_job.c only parses arguments.
for f in $(grep -rlE 'squashcache/slurm\.conf|ds_conf_(line|read)\(' --include='*.[ch]' lib daemon mountctl slurm); do
    case "$f" in
    slurm/dataset.[ch]|slurm/job_cmd.c|slurm/squashcache_spank.c) ;;
    *) violation "$f names or reads the site config (only slurm/dataset.c parses it)" ;;
    esac
done
grep -n '#include "' slurm/squashcache_spank.c | grep -v '"dataset.h"' &&
    violation "slurm/squashcache_spank.c includes more of the project than dataset.h"
grep -n '#include "' slurm/dataset.c | grep -vE '"(dataset\.h|util/compiler\.h)"' &&
    violation "slurm/dataset.c includes what the plugin does not link"
grep -nE '\b(ds_[a-z_]+|job_[a-z_]+(prolog|epilog|env|check)[a-z_]*|fopen|getenv)\(' mountctl/cmd_job.c &&
    violation "mountctl/cmd_job.c does work (it parses arguments; job_run() does the rest)"
# slurm/ stands on lib/ alone, and the calls between it and mountctl go
# one way (mountctl/cmd_job.c and cmd_keeper.c into slurm/): no file of
# slurm/ includes a header of mountctl/ or calls a function of mountctl's
# (mc_*), so that a reviewer of the root side reads slurm/ and lib/ only.
for f in slurm/*.[ch]; do
    grep -nE '#[[:space:]]*include[[:space:]]*[<"][./]*mountctl(/|\.h)' "$f" &&
        violation "$f includes mountctl/ (slurm/ needs lib/ only)"
    grep -nE '\bmc_[a-z_]+[[:space:]]*\(|\bMC_[A-Z_]+\b' "$f" &&
        violation "$f uses mountctl's insides (mc_*, MC_*): take it from lib/ or slurm/"
done
# The hooks only run mountctl: they never read the config, name mounts
# (the image extensions are dataset.c's) or mount, unmount or start a
# daemon themselves.
for f in slurm/hooks/*; do
    grep -nE 'SQUASHCACHE_SLURM_CONF|/etc/squashcache|\.sqsh|\.squashfs' "$f" &&
        violation "$f reads the site config or names mounts (ask mountctl job config/name)"
    grep -v '^ *#' "$f" | grep -nE '(^|;|&&|\|\||\$\(|then|do|else|exec)[[:space:]]*(fusermount3?|umount|mount|squashcached)([[:space:]]|$)' &&
        violation "$f mounts, unmounts or starts a daemon itself (only mountctl does)"
done
for f in slurm/*.c; do
    case "$f" in slurm/dataset.c) continue ;; esac
    grep -n '"\.sqsh"' "$f" && violation "$f has mount name rules of its own (dataset.c has them)"
done

[ $bad = 0 ] && echo "lint: module boundaries hold"

# Shell scripts: shellcheck's warnings and errors.
if command -v shellcheck >/dev/null 2>&1; then
    # shellcheck disable=SC2046
    if shellcheck -S warning $(git ls-files '*.sh' 2>/dev/null || find . -name '*.sh') .ci/run \
        slurm/hooks/prolog slurm/hooks/epilog slurm/hooks/task-prolog slurm/hooks/site-task-prolog \
        systemd/squashcache-dataset; then
        echo "lint: shell scripts pass shellcheck"
    else
        bad=1
    fi
else
    echo "lint: shellcheck not installed, shell scripts not checked (sh tests/deps.sh check)"
fi
exit $bad

#!/bin/sh
# Enforce the module boundaries by grepping includes: each module of lib/
# includes only the modules its allowed line below names (util at the
# bottom, nothing below it); lib/ never includes a FUSE header, never calls
# exit() or abort() and never prints but through log.h; the on-disk
# structs of sqfs_fmt.h stay in lib/image; mountctl/ and slurm/ never
# include FUSE; every header has the one include-guard form; nothing
# points outside the repository.  Then run shellcheck over the shell
# scripts.  Prints each violation; exits 1 if there is any.
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
    # order uses image (plan.c: the epoch order as an image's window,
    # plans from its files); image asks its window through struct
    # img_window and includes nothing of order.
    allowed image util decompress cache stage
    allowed order util image
    allowed prefetch util image cache stage order
    allowed index util image
    allowed json util
    allowed ctl util json
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

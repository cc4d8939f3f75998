#!/bin/sh
# One source of truth for options: the man pages against the programs'
# --help, and --help against what the programs accept.
#
# For mountctl, each command of `mountctl --help`:
#   - every option its --help lists ("  -x, --name" lines) is accepted by
#     the command (run with `--name=1 -Z`, which never gets past the
#     parser: getopt names an unknown option "unrecognized"), and every
#     --option its --help text mentions is one it lists;
#   - the man page's synopsis of the command names exactly the options of
#     its usage line, and its section under COMMANDS describes every
#     option --help lists (short and long forms) and no other.
# Every option the man page names anywhere is one of some command's.
# For squashcached: the synopsis names the usage line's options, the man
# page describes -f, -d, -h/--help, -V/--version, every -o option --help
# lists is an item of its option list, and every item there is one
# squashcached takes and --help lists, but for the spellings kept for old
# command lines.  For squashcache_spank(8): the config keys
# it describes are those the packaged slurm.conf shows, and each is one
# `mountctl job config` knows.
# TIMEOUT: 60
. "$(dirname "$0")/lib.sh"
[ -x "$MOUNTCTL" ] || fail "$MOUNTCTL is not built"
[ -x "$SQUASHCACHED" ] || fail "$SQUASHCACHED is not built"
man1=$TOP/man/mountctl.1
man8=$TOP/man/squashcached.8
spank8=$TOP/man/squashcache_spank.8
bad=0
oops() {
    echo "MISMATCH: $*" >&2
    bad=$((bad + 1))
}

# help_opts: the options a --help text lists, one a line ("-o",
# "--options"), from its option lines: "  -o, --options OPTS ...",
# "      --sif ...", "  -f  ...".
help_opts() {
    awk '/^ +-/ {
        n = split($0, w, /[ ,]+/)
        for (i = 1; i <= n; i++) {
            if (w[i] == "") continue
            if (w[i] !~ /^--?[A-Za-z0-9]/) break
            print w[i]
        }
    }' | sort -u
}
# usage_opts: the options named on a usage line.
usage_opts() {
    sed -n '1s/^usage: //p' | grep -oE '(^|[] [|])--?[A-Za-z0-9][A-Za-z0-9-]*' |
        sed 's/^[] [|]//' | sort -u
}
# man_fl: the options of mdoc "Fl" macros on stdin ("Fl -sif" is --sif).
man_fl() {
    grep -oE '(^|[ .])Fl +[^ ]+' | sed -E 's/^[ .]?Fl +//; s/^/-/; s/[^A-Za-z0-9-].*$//' |
        grep -E '^--?[A-Za-z0-9]' | sort -u
}
# man_synopsis PAGE [COMMAND]: the SYNOPSIS lines of COMMAND (the lines
# from ".Nm" whose first ".Cm" is COMMAND up to the next ".Nm"), or of
# the program itself (the ".Nm" blocks without a ".Cm").
man_synopsis() {
    awk -v want="${2:-}" '
        /^\.Sh / { in_syn = ($2 == "SYNOPSIS"); next }
        !in_syn { next }
        /^\.Nm/ { cmd = ""; first = 1; if (want == "") take = 1; else take = 0
                  if ($0 !~ /^\.Nm$/) { line = $0; sub(/^\.Nm */, "", line); if (take) print line }
                  next }
        first && /^\.Cm / { first = 0; cmd = $2; take = (cmd == want); next }
        { first = 0; if (take) print }' "$1"
}
# man_section PAGE NAME: the lines of ".Ss NAME" up to the next .Ss/.Sh.
man_section() {
    awk -v want="$2" '
        /^\.S[sh] / { line = $0; sub(/^\.S[sh] +/, "", line); take = ($1 == ".Ss" && line == want); next }
        take' "$1"
}
diff_sets() { # WHAT EXPECTED-FILE GOT-FILE
    comm -23 "$2" "$3" | while read -r o; do echo "$1: missing $o"; done
    comm -13 "$2" "$3" | while read -r o; do echo "$1: names $o, which is not there"; done
}

# --- mountctl ----------------------------------------------------------
cmds=$("$MOUNTCTL" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }')
[ "$(echo "$cmds" | wc -w)" -ge 10 ] || fail "found no command list in mountctl --help: $cmds"
: >"$T/all-opts"
for c in $cmds; do
    "$MOUNTCTL" "$c" --help >"$T/help" 2>&1 || fail "mountctl $c --help exited non-zero"
    help_opts <"$T/help" >"$T/listed"
    grep -qx -- --help "$T/listed" || oops "mountctl $c --help does not list -h, --help"
    cat "$T/listed" >>"$T/all-opts"
    # Each listed option is one the command takes.
    for o in $(grep -- '^--' "$T/listed"); do
        err=$(timeout 10 "$MOUNTCTL" "$c" "$o=1" -Z </dev/null 2>&1 >/dev/null) || true
        case $err in *unrecognized*) oops "mountctl $c --help lists $o, which it does not take: $err" ;; esac
    done
    # Every --option its text mentions is one it lists.
    for o in $(grep -oE '(^|[^A-Za-z0-9-])--[a-z][a-z0-9-]*' "$T/help" | sed 's/^[^-]//' | sort -u); do
        grep -qx -- "$o" "$T/listed" || oops "mountctl $c --help mentions $o, which it does not list"
    done
    # The synopsis: the usage line's options, no more, no fewer.
    usage_opts <"$T/help" >"$T/usage"
    man_synopsis "$man1" "$c" | man_fl >"$T/syn"
    [ -s "$T/syn" ] || man_synopsis "$man1" "$c" | grep -q . || oops "mountctl.1 has no synopsis of $c"
    out=$(diff_sets "mountctl.1 synopsis of $c (usage: $(sed -n 1p "$T/help"))" "$T/usage" "$T/syn")
    [ -z "$out" ] || oops "$out"
    # Its section: every listed option but -h/--help, and nothing else.
    man_section "$man1" "mountctl $c" >"$T/sec"
    [ -s "$T/sec" ] || { oops "mountctl.1 has no section .Ss mountctl $c"; continue; }
    man_fl <"$T/sec" >"$T/sec-opts"
    grep -vx -e -h -e --help "$T/listed" >"$T/want"
    out=$(diff_sets "mountctl.1 section of $c" "$T/want" "$T/sec-opts")
    [ -z "$out" ] || oops "$out"
done
# -h/--help once for all; --help and --version of mountctl itself (its
# usage line names these; main.c takes -h and -V too).
for o in --help --version; do
    "$MOUNTCTL" --help | sed -n 1p | grep -q -- "\[$o\]" || fail "mountctl --help's usage line does not name $o"
done
printf '%s\n' -h --help -V --version >>"$T/all-opts"
man_fl <"$man1" >"$T/man-all"
for o in -h --help --version; do
    grep -qx -- "$o" "$T/man-all" || oops "mountctl.1 does not name $o"
done
sort -u "$T/all-opts" -o "$T/all-opts"
for o in $(comm -13 "$T/all-opts" "$T/man-all"); do
    oops "mountctl.1 names $o, which no mountctl command takes"
done

# --- squashcached --------------------------------------------------------
"$SQUASHCACHED" --help >"$T/dhelp" 2>&1 || fail "squashcached --help exited non-zero"
"$SQUASHCACHED" --version >/dev/null 2>&1 || fail "squashcached --version exited non-zero"
help_opts <"$T/dhelp" >"$T/dlisted"
usage_opts <"$T/dhelp" >"$T/dusage"
man_synopsis "$man8" | man_fl >"$T/dsyn"
for o in $(cat "$T/dusage"); do
    grep -qx -- "$o" "$T/dsyn" || oops "squashcached.8's synopsis lacks $o of the usage line"
done
for o in $(cat "$T/dsyn"); do
    grep -qx -- "$o" "$T/dlisted" || oops "squashcached.8's synopsis names $o, which --help does not list"
done
man_fl <"$man8" >"$T/dman"
for o in $(cat "$T/dlisted"); do
    grep -qx -- "$o" "$T/dman" || oops "squashcached --help lists $o; squashcached.8 does not name it"
done
for o in $(comm -13 "$T/dlisted" "$T/dman"); do
    [ "$o" = -o ] && continue
    oops "squashcached.8 names $o, which squashcached --help does not list"
done
# The -o options: --help's list ("  name=..." and "  name" lines after
# "options (-o):"), the man page's items (".It Cm name"), the parser's.
awk '/^options \(-o\):/ { on = 1; next } on && /^  [a-z]/ { o = $1; sub(/[=[].*/, "", o); print o }' \
    "$T/dhelp" | sort -u >"$T/ohelp"
[ "$(wc -l <"$T/ohelp")" -ge 20 ] || fail "found only $(wc -l <"$T/ohelp") -o options in squashcached --help"
# Items such as ".It Cm ro , Cm default_permissions , ...": every name
# the item lists, not the values of ".It Cm stage Ns = Ns Cm auto ...".
grep '^\.It Cm' "$man8" | grep -oE '(^\.It|,) Cm [a-z_]+' | sed 's/.*Cm //' | sort -u >"$T/oman"
# takes_opt NAME: squashcached's parser takes -o NAME or -o NAME=1 (it
# parses the options before it looks at the image).
takes_opt() {
    for _v in "$1" "$1=1"; do
        _e=$("$SQUASHCACHED" -o "$_v" "$T/no-image" "$T/no-mnt" 2>&1) && return 0
        case $_e in *"unknown option"*) ;; *) return 0 ;; esac
    done
    return 1
}
takes_opt no_such_option_zz && fail "squashcached takes -o no_such_option_zz: the probe is broken"
for o in $(cat "$T/ohelp"); do
    grep -qx "$o" "$T/oman" || oops "squashcached --help lists -o $o; squashcached.8 has no item for it"
    takes_opt "$o" || oops "squashcached --help lists -o $o; squashcached does not take it"
done
for o in $(cat "$T/oman"); do
    takes_opt "$o" || oops "squashcached.8 describes -o $o; squashcached does not take it"
    case $o in
    # Accepted for old and fstab-style command lines, described in the
    # man page only: deprecated spellings and options always in effect.
    prime | prime_wait | ro | rw | default_permissions | nodev | nosuid) continue ;;
    esac
    grep -qx "$o" "$T/ohelp" || oops "squashcached.8 describes -o $o; squashcached --help does not list it"
done

# --- squashcache_spank(8): the site config's keys ------------------------
sed -n 's/^\.It Cm \([a-z_]*\)= .*/\1/p' "$spank8" | sort -u >"$T/kman"
sed -n 's/^#\([a-z_]*\)=.*/\1/p' "$TOP/packaging/slurm.conf" | sort -u >"$T/kconf"
[ "$(wc -l <"$T/kconf")" -ge 8 ] || fail "found only $(wc -l <"$T/kconf") keys in packaging/slurm.conf"
out=$(diff_sets "squashcache_spank.8's keys (against packaging/slurm.conf)" "$T/kconf" "$T/kman")
[ -z "$out" ] || oops "$out"
for k in $(cat "$T/kman"); do
    "$MOUNTCTL" job --conf /dev/null config "$k" >/dev/null 2>&1 ||
        oops "squashcache_spank.8 describes $k=, which mountctl job config does not know"
done

[ "$bad" -eq 0 ] || fail "$bad mismatches between the man pages and the programs (above)"
echo "options checked: $(wc -l <"$T/all-opts") of mountctl, $(wc -l <"$T/ohelp") -o options of squashcached, $(wc -l <"$T/kman") config keys"

#!/bin/sh
# The man pages: mandoc lint and man(1) render them without a warning,
# lexgrog finds their NAME section, make install puts them under MANDIR,
# and every -o option squashcached's parser accepts is in squashcached.8.
# TIMEOUT: 120
. "$(dirname "$0")/lib.sh"
need_cmd mandoc
need_cmd man
need_cmd lexgrog

for p in "$TOP/man/mountctl.1" "$TOP/man/squashcached.8" "$TOP/man/squashcache_spank.8"; do
    out=$(mandoc -T lint -W warning "$p" 2>&1) || true
    [ -z "$out" ] || fail "mandoc lint on $p: $out"
    out=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
    [ -z "$out" ] || fail "man -l warns on $p: $out"
    lexgrog "$p" | grep -q ' - ' || fail "lexgrog finds no NAME section in $p"
done

# Options of the daemon's parser: every strcmp(opt, "NAME") in parse_one.
opts=$(sed -n 's/.*strcmp(opt, "\([a-z_]*\)").*/\1/p' "$TOP/daemon/options.c" | sort -u)
[ -n "$opts" ] || fail "found no options in daemon/options.c"
for o in $opts; do
    grep -q "^\.It Cm $o\( \|\$\)\|Cm $o ,\|, Cm $o\( \|\$\)" "$TOP/man/squashcached.8" ||
        fail "option '$o' of daemon/options.c is not described in man/squashcached.8"
done

make -C "$TOP" --no-print-directory BUILD="$MAKE_BUILD" install PREFIX="$T/prefix" \
    MANDIR="$T/man" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "make install failed"; }
[ -f "$T/man/man1/mountctl.1" ] || fail "mountctl.1 not installed under MANDIR"
[ -f "$T/man/man8/squashcached.8" ] || fail "squashcached.8 not installed under MANDIR"
[ -f "$T/man/man8/squashcache_spank.8" ] || fail "squashcache_spank.8 not installed under MANDIR"
# The installed pages name this install's paths, not the sources'
# /usr/local: the hooks the Prolog= lines name are there.
grep -l /usr/local "$T/man/man1/mountctl.1" "$T/man/man8/squashcached.8" "$T/man/man8/squashcache_spank.8" &&
    fail "an installed man page names /usr/local (PREFIX=$T/prefix)"
for kh in Prolog=prolog Epilog=epilog TaskProlog=site-task-prolog; do
    line="${kh%%=*}=$T/prefix/libexec/squashcache/${kh#*=}"
    grep -qxF "$line" "$T/man/man8/squashcache_spank.8" ||
        fail "the installed squashcache_spank.8 does not give $line"
    [ -x "${line#*=}" ] || fail "${line#*=}, which squashcache_spank.8 names, was not installed"
done
echo "man page checks passed"

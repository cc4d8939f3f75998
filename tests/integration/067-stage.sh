#!/bin/sh
# mountctl stage: a mount made with stage=none, stage=meta or a small ram=
# is staged on request (the daemon's "stage" command) until every byte of
# the image is in RAM; files still read right; stage --wait and wait print
# plain progress lines when stderr is not a terminal.
# TIMEOUT: 120
# shellcheck shell=sh

# shellcheck source-path=SCRIPTDIR source=lib.sh disable=SC1091
. "$(dirname "$0")/lib.sh"

need_fuse
need_cmd mksquashfs
[ -x "$MOUNTCTL" ] || fail "$MOUNTCTL not built"

# Run mountctl; leaves its exit status in $rc, stdout in $T/out and
# stderr in $T/err.
mc() {
    rc=0
    "$MOUNTCTL" "$@" >"$T/out" 2>"$T/err" || rc=$?
}

expect_rc() {
    [ "$rc" -eq "$1" ] || { cat "$T/out" "$T/err" >&2; fail "$2: exit $rc, expected $1"; }
}

# staged MNT: set s_st, s_im, s_state (bytes staged, image bytes, state)
# from status --json (the top-level
# staged_bytes/image_bytes when present, else the stats object's own).
staged() {
    "$MOUNTCTL" status --json "$1" | "$PYTHON" -c 'import json, sys
s = json.load(sys.stdin)[0]
st = s.get("staged_bytes", s["stage"]["staged"])
im = s.get("image_bytes", s["image_io"]["bytes"])
print(st, im, s["stage"]["state"])' >"$T/staged"
    read -r s_st s_im s_state <"$T/staged"
}

expect_all_staged() {
    staged "$1"
    [ "$s_st" -gt 0 ] && [ "$s_st" -eq "$s_im" ] && [ "$s_state" = "done" ] ||
        fail "$2: staged $s_st of $s_im bytes, state $s_state"
}

compare() {
    for f in a.bin b.bin sub/c.txt; do
        cmp "$T/src/$f" "$1/$f" || fail "$1/$f differs from the source"
    done
}

note "pack a tree of ~24 MB (a dozen 2 MiB staging chunks)"
mkdir -p "$T/src/sub"
head -c 16000000 /dev/urandom >"$T/src/a.bin"
head -c 8000000 /dev/urandom >"$T/src/b.bin"
echo hello >"$T/src/sub/c.txt"
mkimg "$T/src" "$T/img.sqfs"

note "stage=none: nothing staged, wait says so"
m1="$T/none"
sqc_mount "$T/img.sqfs" "$m1" -o stage=none
staged "$m1"
[ "$s_st" -eq 0 ] && [ "$s_state" = off ] || fail "stage=none staged $s_st bytes, state $s_state"
mc wait "$m1"
expect_rc 0 "wait on stage=none"
grep -q "staging off" "$T/err" || { cat "$T/err" >&2; fail "wait did not say staging is off"; }

note "stage --wait brings in the whole image, with plain progress lines"
mc stage --wait --timeout 60 "$m1"
expect_rc 0 "stage --wait"
cat "$T/err"
grep -q '%' "$T/err" || fail "stage --wait printed no progress line"
grep -q 'done in' "$T/err" || fail "stage --wait did not print how staging ended"
if grep -q "$(printf '\r')" "$T/err"; then fail "progress redrawn with CR on a non-terminal"; fi
expect_all_staged "$m1" "stage=none then stage"
compare "$m1"
mc stage "$m1"
expect_rc 0 "stage again once staged"
mc wait --timeout 60 "$m1"
expect_rc 0 "wait after a second stage"
expect_all_staged "$m1" "stage twice"

note "stage=meta: stage --meta keeps to metadata, stage then brings the rest"
m2="$T/meta"
sqc_mount "$T/img.sqfs" "$m2" -o stage=meta
"$MOUNTCTL" wait --timeout 60 "$m2" 2>/dev/null
staged "$m2"
[ "$s_st" -gt 0 ] && [ "$s_st" -lt "$s_im" ] || fail "stage=meta staged $s_st of $s_im bytes"
meta=$s_st
mc stage --meta --wait --timeout 60 "$m2"
expect_rc 0 "stage --meta --wait"
staged "$m2"
[ "$s_st" -eq "$meta" ] || fail "stage --meta went from $meta to $s_st bytes"
mc stage "$m2"
expect_rc 0 "stage on stage=meta"
[ ! -s "$T/out" ] || fail "stage without --wait printed '$(cat "$T/out")'"
mc wait --timeout 60 "$m2"
expect_rc 0 "wait after stage"
expect_all_staged "$m2" "stage=meta then stage"
compare "$m2"

note "a small ram= grows with stage --ram"
m3="$T/small"
sqc_mount "$T/img.sqfs" "$m3" -o ram=4M
"$MOUNTCTL" wait --timeout 60 "$m3" 2>/dev/null
staged "$m3"
[ "$s_st" -le 4194304 ] && [ "$s_st" -lt "$s_im" ] || fail "ram=4M staged $s_st of $s_im bytes"
mc stage --ram 256M --wait --timeout 60 "$m3"
expect_rc 0 "stage --ram 256M --wait"
expect_all_staged "$m3" "ram=4M then stage --ram 256M"
compare "$m3"

note "on a terminal: a bar redrawn in place"
if command -v script >/dev/null 2>&1; then
    m4="$T/tty"
    sqc_mount "$T/img.sqfs" "$m4" -o stage=none
    script -qec "'$MOUNTCTL' stage --wait --timeout 60 '$m4'" /dev/null >"$T/tty.log" 2>&1 ||
        { cat "$T/tty.log" >&2; fail "stage --wait on a terminal failed"; }
    grep -q "$(printf '\r')\[" "$T/tty.log" || { cat -A "$T/tty.log" >&2; fail "no bar redrawn with CR on a terminal"; }
    grep -q '\[############\] 100%' "$T/tty.log" || { cat -A "$T/tty.log" >&2; fail "no full bar on a terminal"; }
    expect_all_staged "$m4" "stage --wait on a terminal"
    sqc_umount "$m4"
else
    note "script(1) missing: terminal output not checked"
fi

note "mistakes"
mc stage "$T/src"
expect_rc 2 "stage on a plain directory"
grep -q "is not a squashcache mount" "$T/err" || fail "stage on a plain directory: $(cat "$T/err")"
mc stage --ram lots "$m1"
expect_rc 2 "stage --ram lots"
mc stage
expect_rc 2 "stage without a mountpoint"

sqc_umount "$m1"
sqc_umount "$m2"
sqc_umount "$m3"
note "ok"

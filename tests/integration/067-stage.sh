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

# staged MNT: "STAGED IMAGE STATE" from status --json (the top-level
# staged_bytes/image_bytes when present, else the stats object's own).
staged() {
    "$MOUNTCTL" status --json "$1" | "$PYTHON" -c 'import json, sys
s = json.load(sys.stdin)[0]
st = s.get("staged_bytes", s["stage"]["staged"])
im = s.get("image_bytes", s["image_io"]["bytes"])
print(st, im, s["stage"]["state"])'
}

expect_all_staged() {
    set -- "$1" "$2" $(staged "$1")
    [ "$3" -gt 0 ] && [ "$3" -eq "$4" ] && [ "$5" = done ] ||
        fail "$2: staged $3 of $4 bytes, state $5"
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
set -- $(staged "$m1")
[ "$1" -eq 0 ] && [ "$3" = off ] || fail "stage=none staged $1 bytes, state $3"
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
set -- $(staged "$m2")
[ "$1" -gt 0 ] && [ "$1" -lt "$2" ] || fail "stage=meta staged $1 of $2 bytes"
meta=$1
mc stage --meta --wait --timeout 60 "$m2"
expect_rc 0 "stage --meta --wait"
set -- $(staged "$m2")
[ "$1" -eq "$meta" ] || fail "stage --meta went from $meta to $1 bytes"
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
set -- $(staged "$m3")
[ "$1" -le 4194304 ] && [ "$1" -lt "$2" ] || fail "ram=4M staged $1 of $2 bytes"
mc stage --ram 256M --wait --timeout 60 "$m3"
expect_rc 0 "stage --ram 256M --wait"
expect_all_staged "$m3" "ram=4M then stage --ram 256M"
compare "$m3"

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

#!/bin/sh
# bench/slowfs, the benchmark's parallel-file-system stand-in: in striped
# mode (4 servers, 64 KiB stripes) and in single-link mode it serves the
# backing files byte for byte, its read_bytes counter grows by exactly the
# bytes read through it, the stats show the stripe layout, and bad options
# are refused.  Functional only: nothing here is timed.
# TIMEOUT: 60
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd fusermount3 cmp dd

SLOWFS="$BUILD/bench/slowfs"
[ -x "$SLOWFS" ] || fail "$SLOWFS not built (make tests builds it)"

mkdir -p "$T/back" "$T/m1" "$T/m4"
dd if=/dev/urandom of="$T/back/a" bs=65536 count=40 2>/dev/null
dd if=/dev/urandom of="$T/back/b" bs=1000 count=777 2>/dev/null

stat_bytes() {
    sed -n 's/.*"read_bytes":\([0-9]*\).*/\1/p' "$1/.slowfs-stats"
}

for mode in 1 4; do
    m="$T/m$mode"
    "$SLOWFS" -o "stripes=$mode,stripe_size=64K,latency_ms=0.1,bw=0" \
        "$T/back" "$m" || fail "slowfs stripes=$mode did not mount"
    _mounts="$_mounts $m"
    grep -q "\"stripes\":$mode,\"stripe_size\":65536" "$m/.slowfs-stats" ||
        fail "stats do not show stripes=$mode: $(cat "$m/.slowfs-stats")"
    b0=$(stat_bytes "$m")
    cmp "$T/back/a" "$m/a" || fail "stripes=$mode: file a differs"
    cmp "$T/back/b" "$m/b" || fail "stripes=$mode: file b differs"
    # a read across stripe edges, at an odd offset
    dd if="$m/a" of="$T/part" bs=100000 skip=7 count=3 2>/dev/null
    dd if="$T/back/a" of="$T/want" bs=100000 skip=7 count=3 2>/dev/null
    cmp "$T/want" "$T/part" || fail "stripes=$mode: ranged read differs"
    b1=$(stat_bytes "$m")
    want=$((2621440 + 777000 + 300000))
    [ $((b1 - b0)) -eq $want ] ||
        fail "stripes=$mode: read_bytes grew by $((b1 - b0)), want $want"
    fusermount3 -u "$m" || fail "cannot unmount $m"
done

note "bad options are refused"
for bad in stripes=0 stripes=x stripe_size=0 bogus=1; do
    if "$SLOWFS" -o "$bad" "$T/back" "$T/m1" 2>"$T/err"; then
        fusermount3 -u "$T/m1" 2>/dev/null || true
        fail "slowfs accepted -o $bad"
    fi
    grep -q "bad option" "$T/err" || fail "no clear error for -o $bad"
done

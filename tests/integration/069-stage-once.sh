#!/bin/sh
# TIMEOUT: 300
# TSAN: yes
# Staging reads each byte of the image from storage once.  The image sits
# behind tests/tools/faultfs, which logs every read it serves (and can
# make reads slow or fail).  Checks that:
#   - while 16 threads read the mount during staging, no byte of the image
#     is read twice (only the superblock, read before anything is known),
#     all bytes read add up to the image, the stats account for them per
#     reader, and the readers get the source tree's bytes;
#   - once staged, a second epoch reads nothing from storage;
#   - a reader is served while staging runs behind slow storage, long
#     before staging ends;
#   - warming pushes listed files into the page cache as soon as the
#     stager has them, in the image's order whatever the listing order,
#     before staging ends, and never reads storage; while staging runs,
#     4 lookups list a directory, so that its files can be warmed;
#   - the stager sizes how many reads it keeps under way from how long
#     they take: few on storage with one queue, more on storage that
#     serves many reads at once;
#   - ram= at half the image: staging stops at the budget, and a second
#     epoch reads from storage only what is not staged;
#   - storage that fails half-way: staging stops with a logged reason,
#     readers get EIO only for files in the failing range, never wrong
#     bytes, and the daemon keeps serving.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs

note "a tree of ~24 MB of incompressible files, and small ones"
rand_tree "$T/src" 69 6 40 3000 40000 100000 160000
mkimg "$T/src" "$T/img.sqfs" -comp lz4
size=$(stat -c %s "$T/img.sqfs")
"$TOOLS/stress" --manifest "$T/src" >"$T/manifest"

mkdir -p "$T/store"
: >"$T/failfile"
start_store() {
    # start_store [DELAY_US [IMAGE]]: faultfs over the image, logging to
    # reads.log (FAULTFS_PARALLEL from the environment)
    : >"$T/reads.log"
    FAULTFS_LOG="$T/reads.log" FAULTFS_DELAY_US="${1:-0}" \
        start_faultfs "${2:-$T/img.sqfs}" "$T/store" "$T/failfile"
}
stop_store() {
    fusermount3 -u "$T/store"
}

# reads_check LOG: "total overlap" of the reads in LOG (bytes read in all,
# and bytes read more than once, the first 4 KiB apart).
reads_check() {
    "$PYTHON" - "$1" <<'PY'
import sys
rs = sorted(tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip())
total = sum(n for _, n in rs)
over, end = 0, 0
for off, n in rs:
    lo = max(off, 4096)
    if end > lo:
        over += min(end, off + n) - lo
    end = max(end, off + n)
print(total, over)
PY
}

# epoch MNT: read every file once, 16 at a time, then compare them all.
epoch() {
    ( cd "$1" && find . -type f -print0 | xargs -0 -P 16 -n 4 cat >/dev/null ) ||
        fail "readers saw errors"
    ( cd "$T/src" && find . -type f | sort ) | while read -r f; do
        cmp -s "$T/src/$f" "$1/$f" || echo "$f"
    done >"$T/wrong"
    [ ! -s "$T/wrong" ] || fail "wrong bytes in $(head -3 "$T/wrong")"
}

note "16 readers during staging: each byte read from storage once"
start_store 2000 # 2 ms a read: staging takes a while, readers race it
sqc_mount "$T/store/image" "$T/m" -o "log=$T/d1.log"
"$TOOLS/stress" "$T/m" "$T/manifest" 16 2 69 >"$T/stress.out" 2>&1 ||
    { cat "$T/stress.out"; fail "readers saw errors"; }
epoch "$T/m"
"$MOUNTCTL" wait "$T/m" >/dev/null
# shellcheck disable=SC2046 # two numbers
set -- $(reads_check "$T/reads.log")
note "read $1 bytes from storage for an image of $size; $2 read twice"
[ "$2" -eq 0 ] || fail "$2 bytes of the image were read from storage twice"
[ "$1" -le $((size + size / 50)) ] || fail "read $1 bytes for an image of $size"
[ "$(stat_of "$T/m" staged_bytes)" -eq "$(stat_of "$T/m" image_bytes)" ] || fail "not all staged"
st=$(stat_of "$T/m" image_io.stager_bytes)
dm=$(stat_of "$T/m" image_io.demand_bytes)
ra=$(stat_of "$T/m" image_io.readahead_bytes)
[ $((st + dm + ra)) -eq "$(stat_of "$T/m" image_io.read_bytes)" ] ||
    fail "per-reader bytes $st + $dm + $ra do not add up"
[ $((st + dm + ra)) -le "$1" ] || fail "the daemon counts more than faultfs served"
[ "$(stat_of "$T/m" stage.streams)" -ge 2 ] || fail "one stager stream only"
note "stager $st, readers $dm, readahead $ra bytes; at most $(stat_of "$T/m" stage.inflight_max) stager reads at once"

note "second epoch after staging: nothing from storage"
: >"$T/reads.log"
# The mount's and the storage's page cache dropped: every read of the
# epoch reaches the daemon, and every read of the daemon's the storage.
drop_file_cache "$T/m" "$T/store/image"
epoch "$T/m"
[ ! -s "$T/reads.log" ] || fail "the second epoch read $(reads_check "$T/reads.log") from storage"
sqc_umount "$T/m"
stop_store

note "pacing: stager reads under way, by how long they take"
mkdir -p "$T/big"
"$PYTHON" -c 'import os, random, sys
r = random.Random(70)
for i in range(4):
    open(os.path.join(sys.argv[1], "f%d" % i), "wb").write(r.randbytes(16 << 20))' "$T/big"
mkimg "$T/big" "$T/big.sqfs" -comp lz4 -noappend
# stage_max FILE: the most stager reads at once while staging big.sqfs,
# into $T/FILE (run in this shell, not in $(...), so that its mounts are
# this test's to clean up if it fails).  80 ms a read: the storage's
# delay, not the CPU (slow under sanitizers), sets how long a read takes.
stage_max() {
    start_store 80000 "$T/big.sqfs"
    sqc_mount "$T/store/image" "$T/m" -o "log=$T/dpace.log"
    "$MOUNTCTL" wait "$T/m" >/dev/null
    stat_of "$T/m" stage.inflight_max >"$T/$1"
    note "  target $(stat_of "$T/m" stage.inflight_target), reads $(stat_of "$T/m" stage.read_ms) ms, fastest $(stat_of "$T/m" stage.read_ms_min) ms"
    sqc_umount "$T/m"
    stop_store
}
stage_max pace-one
FAULTFS_PARALLEL=1
export FAULTFS_PARALLEL
stage_max pace-many
unset FAULTFS_PARALLEL
one=$(cat "$T/pace-one")
many=$(cat "$T/pace-many")
note "one queue: at most $one at once; many servers: $many"
[ "$one" -le 5 ] || fail "$one stager reads at once on storage with one queue"
[ "$many" -ge 7 ] && [ "$many" -gt $((one + 1)) ] ||
    fail "only $many stager reads at once on storage that serves many ($one on one queue)"

note "slow storage (100 ms a read): a reader is served before staging ends"
start_store 100000
sqc_mount "$T/store/image" "$T/m" -o "log=$T/d2.log"
last=$(cd "$T/src" && find . -type f | sort | tail -n 1)
cmp "$T/src/$last" "$T/m/$last" || fail "wrong bytes under slow storage"
state=$(stat_of "$T/m" stage.state)
staged=$(stat_of "$T/m" staged_bytes)
note "after one file: staging $state, $staged of $size bytes staged"
[ "$state" != "done" ] || fail "staging ended before one file could be read"
"$MOUNTCTL" wait "$T/m" >/dev/null
# shellcheck disable=SC2046 # two numbers
set -- $(reads_check "$T/reads.log")
[ "$2" -eq 0 ] || fail "slow storage: $2 bytes read twice"
sqc_umount "$T/m"
stop_store

note "warming follows the stager: staged files pushed before staging ends"
# The storage holds every read of the data from 30% of the image to 1
# MiB short of the tables (which the mount and the listings need, and
# are read in aligned pieces) until warming has pushed a file: staging
# cannot end first, however slow the machine.  Many reads at once, so
# that the held ones hold up no other.
tables=$("$PYTHON" "$TOP/tests/images/corrupt.py" get "$T/img.sqfs" super.inode_table)
hold_at=$((size * 3 / 10))
hold_end=$((tables / 1048576 * 1048576 - 1048576))
[ "$hold_end" -gt "$hold_at" ] || fail "the data ends at $tables: no room to hold staging"
echo "hold $hold_at $((hold_end - hold_at))" >"$T/failfile"
FAULTFS_PARALLEL=1
export FAULTFS_PARALLEL
start_store 200000
unset FAULTFS_PARALLEL
sqc_mount "$T/store/image" "$T/m" -o "log=$T/d5.log"
# Listed last directory first: warming still goes in the image's order,
# the stager's, so it pushes what the stager has, the first directories.
for d in d5 d4 d3 d2 d1 d0; do
    ls "$T/m/$d" >/dev/null
done
# A read lets warming start.  The listings were names only (ImageFolder's):
# the daemon lists them again, with the inodes warming needs, once a
# reader opens a file of one; the reads after that (an epoch's) start it.
cmp "$T/src/d0/f039" "$T/m/d0/f039" || fail "wrong bytes while warming"
wait_stat "$T/m" statahead.filled_dirs 6 30 "the names-only listings were not listed again"
cmp "$T/src/d0/f038" "$T/m/d0/f038" || fail "wrong bytes while warming"
wait_stat "$T/m" warm.files 1 60 "warming pushed nothing while staging was held"
# shellcheck disable=SC2046 # three words
set -- $("$MOUNTCTL" status --json "$T/m" | "$PYTHON" -c 'import json, sys
v = json.load(sys.stdin)[0]
print(v["stage"]["state"], int(v["stage"]["percent"]), v["warm"]["files"])')
note "pushed $3 files while staging was $1 at $2%"
[ "$1" != "done" ] || fail "staging was done when warming pushed"
: >"$T/failfile"
"$MOUNTCTL" wait "$T/m" >/dev/null
epoch "$T/m"
# shellcheck disable=SC2046 # two numbers
set -- $(reads_check "$T/reads.log")
note "read $1 bytes from storage for an image of $size; $2 read twice"
[ "$2" -eq 0 ] || fail "warming during staging: $2 bytes read twice"
[ "$(stat_of "$T/m" image_io.demand_bytes)" -le "$size" ] ||
    fail "more read on demand than the image holds"
sqc_umount "$T/m"
stop_store

note "while staging runs, 4 lookups list a directory of 320 files"
# Otherwise it takes an eighth of its entries.  Its own image, with a
# large file that keeps the stager busy.
mkdir -p "$T/many/dir"
"$PYTHON" - "$T/many" <<'PY'
import os, random, sys
r = random.Random(690)
for f in range(320):
    with open(f"{sys.argv[1]}/dir/m{f:03d}", "wb") as o:
        o.write(r.randbytes(64))
with open(f"{sys.argv[1]}/big", "wb") as o:
    o.write(r.randbytes(12 << 20))
PY
mkimg "$T/many" "$T/many.sqfs" -comp lz4
start_store 200000 "$T/many.sqfs"
sqc_mount "$T/store/image" "$T/m" -o "log=$T/d6.log"
for f in m000 m001 m002 m003; do
    cmp "$T/many/dir/$f" "$T/m/dir/$f" || fail "wrong bytes in dir/$f"
done
wait_stat "$T/m" statahead.lookup_dirs 1 5 "4 lookups during staging did not list their directory"
[ "$(stat_of "$T/m" stage.state)" != "done" ] || fail "staging ended before the listing was seen"
"$MOUNTCTL" wait "$T/m" >/dev/null
sqc_umount "$T/m"
stop_store

note "ram= half the image: staging stops at the budget; epoch 2 reads the rest"
start_store
half=$((size / 2))
sqc_mount "$T/store/image" "$T/m" -o "ram=$half,log=$T/d3.log"
"$MOUNTCTL" wait "$T/m" >/dev/null
staged=$(stat_of "$T/m" staged_bytes)
[ "$staged" -le "$half" ] || fail "staged $staged bytes over a budget of $half"
[ "$staged" -ge $((half - 2 * 1048576)) ] || fail "staged only $staged of a budget of $half"
epoch "$T/m"
: >"$T/reads.log"
drop_file_cache "$T/m" "$T/store/image"
epoch "$T/m"
# shellcheck disable=SC2046 # two numbers
set -- $(reads_check "$T/reads.log")
rest=$((size - staged))
note "epoch 2 read $1 bytes from storage ($2 of them twice); $rest are not staged; daemon: $(stat_of "$T/m" image_io)"
[ "$1" -le $((rest + rest / 50)) ] || fail "epoch 2 read $1 bytes, more than the $rest not staged"
[ "$(stat_of "$T/m" staged_bytes)" -eq "$staged" ] || fail "staged bytes changed after the budget was reached"
sqc_umount "$T/m"
stop_store

note "storage failing half-way: staging stops, EIO only there"
start_store
fail_at=$((size / 2))
echo "$fail_at 65536" >"$T/failfile"
sqc_mount "$T/store/image" "$T/m" -o "log=$T/d4.log"
"$MOUNTCTL" wait "$T/m" >/dev/null || true
err=$(stat_of "$T/m" stage.error)
[ "$err" != None ] || fail "staging did not stop on a read error"
grep -q "staging of .* stopped" "$T/d4.log" || fail "no logged reason for the stop"
[ "$(grep -c "staging of .* stopped" "$T/d4.log")" -eq 1 ] || fail "the stop was logged more than once"
( cd "$T/src" && find . -type f | sort ) | while read -r f; do
    if cat "$T/m/$f" >"$T/one" 2>"$T/one.err"; then
        cmp -s "$T/src/$f" "$T/one" && echo ok || echo "WRONG $f"
    else
        grep -q "Input/output error" "$T/one.err" && echo EIO || echo "OTHER $f"
    fi
done >"$T/results"
grep -qE '^(WRONG|OTHER)' "$T/results" && fail "$(grep -E '^(WRONG|OTHER)' "$T/results" | head -3)"
n_eio=$(grep -c '^EIO' "$T/results" || true)
n_ok=$(grep -c '^ok' "$T/results" || true)
note "staging stopped ($err); $n_ok files read, $n_eio failed with EIO"
[ "$n_eio" -gt 0 ] || fail "no EIO from the failing range"
[ "$n_eio" -le 3 ] || fail "$n_eio files failed for 64 KiB of failing storage"
stat "$T/m/d0" >/dev/null || fail "the daemon stopped serving"
: >"$T/failfile"
sqc_umount "$T/m"
stop_store

#!/bin/sh
# Faults under a mount: the image truncated, replaced or overwritten while
# mounted; storage that fails chosen reads (tests/tools/faultfs); the
# daemon killed with SIGKILL.  Damaged reads fail with EIO, everything else
# keeps being served with the right bytes, and the daemon stays up.
# TIMEOUT: 240
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs

mkdir -p "$T/src/a" "$T/src/b"
i=0
while [ $i -lt 40 ]; do
    head -c $((20000 + i * 7919)) /dev/urandom >"$T/src/a/f$i"
    head -c $((150000 + i * 3001)) /dev/urandom >"$T/src/b/g$i"
    i=$((i + 1))
done
mkimg "$T/src" "$T/orig.sqfs" -comp gzip -b 64K
mkdir -p "$T/other"
echo "a different image" >"$T/other/x"
mkimg "$T/other" "$T/other.sqfs" -comp gzip

# read_all MNT: cmp every file with the source; print the failing ones.
read_all() {
    (cd "$T/src" && find . -type f) | sort | while read -r f; do
        if ! timeout 10 cat "$1/$f" >"$T/read.out" 2>"$T/read.err"; then
            grep -q "Input/output error" "$T/read.err" ||
                { echo "UNEXPECTED $f: $(cat "$T/read.err")"; continue; }
            echo "EIO $f"
        elif ! cmp -s "$T/read.out" "$T/src/$f"; then
            echo "WRONG $f"
        fi
    done
}

alive() {
    kill -0 "$1" 2>/dev/null || fail "the daemon died ($2)"
}

note "staged, then the image is truncated: everything is still served"
cp "$T/orig.sqfs" "$T/img.sqfs"
sqc_mount "$T/img.sqfs" "$T/m" -o stage=full,log="$T/d1.log"
pid=$(sqc_pid "$T/m")
"$MOUNTCTL" wait --timeout 30 "$T/m" 2>/dev/null || fail "staging did not finish"
truncate -s 4096 "$T/img.sqfs"
out=$(read_all "$T/m")
[ -z "$out" ] || { echo "$out"; fail "a staged image stopped serving after truncation"; }
alive "$pid" "after truncation"
sqc_umount "$T/m"

note "not staged, then truncated: damaged reads fail with EIO, the daemon stays"
cp "$T/orig.sqfs" "$T/img.sqfs"
sqc_mount "$T/img.sqfs" "$T/m" -o stage=none,log="$T/d2.log"
pid=$(sqc_pid "$T/m")
ls -R "$T/m" >/dev/null
size=$(stat -c %s "$T/img.sqfs")
truncate -s $((size / 2)) "$T/img.sqfs"
# The stager's watch looks at the file once a second and logs the change.
wait_until 10 "the truncation was not logged" 'grep -q "changed while mounted" "$T/d2.log"'
out=$(read_all "$T/m")
echo "$out" | grep -q '^EIO' || fail "no EIO after truncation"
echo "$out" | grep -qE '^(WRONG|UNEXPECTED)' && { echo "$out"; fail "wrong bytes or errors other than EIO"; }
alive "$pid" "after reads of a truncated image"
grep -q "changed while mounted" "$T/d2.log" || fail "the change was not logged"
sqc_umount "$T/m"

note "replaced by rename: the mount keeps serving the image it opened"
cp "$T/orig.sqfs" "$T/img.sqfs"
sqc_mount "$T/img.sqfs" "$T/m" -o stage=none,log="$T/d3.log"
cp "$T/other.sqfs" "$T/new.sqfs"
mv "$T/new.sqfs" "$T/img.sqfs"
# Nothing to notice: the file the daemon opened is unchanged.  Watched
# for 2.5 s, in which the stager's watch (once a second) looks at least
# twice.
watch_for 2.5 "a mount whose image was renamed over" '! grep -q "changed" "$T/d3.log"'
out=$(read_all "$T/m")
[ -z "$out" ] || { echo "$out"; fail "rename over the image broke the mount"; }
sqc_umount "$T/m"

note "overwritten in place: no wrong bytes, EIO instead"
cp "$T/orig.sqfs" "$T/img.sqfs"
sqc_mount "$T/img.sqfs" "$T/m" -o stage=none,log="$T/d4.log"
pid=$(sqc_pid "$T/m")
cat "$T/m/a/f0" >/dev/null
cp "$T/other.sqfs" "$T/img.sqfs" # same inode, new bytes
wait_until 10 "the overwrite was not logged" 'grep -q "changed while mounted" "$T/d4.log"'
out=$(read_all "$T/m")
echo "$out" | grep -qE '^(WRONG|UNEXPECTED)' && { echo "$out"; fail "served wrong bytes after an overwrite"; }
echo "$out" | grep -q '^EIO' || fail "no EIO after an overwrite"
alive "$pid" "after an overwrite"
sqc_umount "$T/m"

note "storage read errors (faultfs): EIO for the damaged reads only"
cp "$T/orig.sqfs" "$T/img.sqfs"
start_faultfs "$T/img.sqfs" "$T/store" "$T/failfile"
# Fail 200 KiB in the middle of the data area.
echo "$((size / 3)) 204800" >"$T/failfile"
for stage in none full; do
    sqc_mount "$T/store/image" "$T/m" -o stage=$stage,log="$T/d5-$stage.log"
    pid=$(sqc_pid "$T/m")
    # Staging over (stopped by the failing range, or off): the reads
    # below meet storage that fails, not a stager racing them.
    "$MOUNTCTL" wait --timeout 30 "$T/m" >/dev/null 2>&1 || true
    out=$(read_all "$T/m")
    n_eio=$(echo "$out" | grep -c '^EIO' || true)
    [ "$n_eio" -gt 0 ] || fail "stage=$stage: no EIO from a failing storage range"
    [ "$n_eio" -lt 80 ] || fail "stage=$stage: every file failed ($n_eio)"
    echo "$out" | grep -qE '^(WRONG|UNEXPECTED)' && { echo "$out"; fail "stage=$stage: wrong bytes"; }
    alive "$pid" "storage errors, stage=$stage"
    # The storage recovers: the same files now read, I/O errors are not kept.
    : >"$T/failfile"
    out=$(read_all "$T/m")
    [ -z "$out" ] || { echo "$out"; fail "stage=$stage: reads still fail after the storage recovered"; }
    note "stage=$stage: $n_eio files failed with EIO, all read after recovery"
    echo "$((size / 3)) 204800" >"$T/failfile"
    sqc_umount "$T/m"
done
: >"$T/failfile"
fusermount3 -u "$T/store"

note "SIGKILL: the stale mount is cleared and a new mount works"
cp "$T/orig.sqfs" "$T/img.sqfs"
sqc_mount "$T/img.sqfs" "$T/m"
pid=$(sqc_pid "$T/m")
kill -9 "$pid"
wait_gone "$pid" 10 "daemon (SIGKILL)"
if ls "$T/m" 2>"$T/err"; then
    fail "a killed daemon's mount still answers"
fi
grep -q "Transport endpoint is not connected" "$T/err" || fail "expected ENOTCONN: $(cat "$T/err")"
if "$SQUASHCACHED" "$T/img.sqfs" "$T/m" 2>"$T/err"; then
    fail "mounted over a stale mount"
fi
grep -q "stale FUSE mount" "$T/err" || fail "no hint about the stale mount: $(cat "$T/err")"
fusermount3 -u "$T/m" || umount -l "$T/m"
sqc_mount "$T/img.sqfs" "$T/m"
out=$(read_all "$T/m")
[ -z "$out" ] || { echo "$out"; fail "the new mount does not serve the image"; }
sqc_umount "$T/m"
echo "fault checks passed"

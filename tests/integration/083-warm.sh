#!/bin/sh
# Page-cache warming: once a directory listing has shown the kernel its
# files and something reads the mount, the daemon pushes their bytes into
# the page cache, so reading them afterwards sends no read request at all,
# and the bytes are right.  A listing that nothing reads after (a walk
# that only stats) pushes nothing.  A
# file that Python opens (isatty(): an ioctl) is pushed before the answer,
# and so is the rest of a file larger than its first READ.  The warm=
# budget bounds the warming, and warm=0 turns both off.  With -o prime the
# daemon lists the tree itself, so files opened by path are served from
# the kernel's caches without ever being listed.
# TIMEOUT: 120
# ALONE: pauses DAMON's reclaim and drops the machine's page cache
# TSAN: yes
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs
hold_reclaim

mkdir -p "$T/src"
for d in a b c; do
    mkdir "$T/src/$d"
    i=0
    while [ $i -lt 30 ]; do
        head -c $((1000 + i * 4099)) /dev/urandom >"$T/src/$d/f$i"
        i=$((i + 1))
    done
done
mkimg "$T/src" "$T/img.sqfs" -comp zstd -b 64K
total=$(cat "$T"/src/*/* | wc -c)

# wait_warmed N: wait until N files of $T/m are warmed (up to 60 s: a
# busy machine took over 10 s for 6,000 files).
wait_warmed() {
    _ww_end=$(($(now_ms) + 60000))
    while [ "$(stat_of "$T/m" warm.files)" -lt "$1" ]; do
        [ "$(now_ms)" -lt "$_ww_end" ] ||
            fail "only $(stat_of "$T/m" warm.files) of $1 files warmed after 60 s ($(stat_of "$T/m" warm.dropped) dropped)"
        sleep 0.05
    done
}

# pyread FILE...: read each file in full with Python's open().
pyread() {
    "$PYTHON" -c 'import sys
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        f.read()' "$@"
}

# pyread_src DIR: with pyread, each file of $T/src/DIR by its path under
# $T/m, without listing the mount (a listing would warm them).
pyread_src() {
    (cd "$T/src" && for f in "$1"/*; do echo "$T/m/$f"; done) >"$T/paths"
    # shellcheck disable=SC2046 # the paths have no blanks
    pyread $(cat "$T/paths")
}

# mount_and_list OPTIONS: mount, list every directory (as ImageFolder does).
mount_and_list() {
    sqc_mount "$T/img.sqfs" "$T/m" -o "$1"
    for d in a b c; do
        ls -l "$T/m/$d" >/dev/null
    done
}

note "a listing alone pushes nothing; once a file is read, every listed file ends up in the page cache"
mount_and_list "log=$T/d1.log"
# Were a listing enough, warming would push its files once the listing
# has been quiet 10 ms and 20 ms after it (WARM_QUIET_NS, WARM_DELAY_NS
# in daemon/warm.c): 0.5 s is twenty-five times that.
watch_for 0.5 "nothing warmed after a listing with no read" \
    '[ "$(stat_of "$T/m" warm.files)" -eq 0 ] && [ "$(stat_of "$T/m" warm.bytes)" -eq 0 ]'
# A READ of the whole of a/f0 (1000 bytes) starts the warming, and the
# kernel has that file already: it is not pushed again.
head -c 1 "$T/m/a/f0" >/dev/null
wait_warmed 89
f0=$(stat -c %s "$T/src/a/f0")
[ "$(stat_of "$T/m" warm.bytes)" -eq $((total - f0)) ] || fail "warmed $(stat_of "$T/m" warm.bytes) bytes, the other files hold $((total - f0))"
[ "$(stat_of "$T/m" warm.files)" -eq 89 ] || fail "warmed $(stat_of "$T/m" warm.files) files, not the 89 not read"
reads0=$(stat_of "$T/m" fuse.read)
"$MOUNTCTL" status "$T/m" | grep -Eq "^ *warmed +89 files, " ||
    fail "mountctl status does not show the warming: $("$MOUNTCTL" status "$T/m")"
for d in a b c; do
    for f in "$T/src/$d"/*; do
        cmp -s "$f" "$T/m/$d/${f##*/}" || fail "$d/${f##*/} differs after warming"
    done
done
reads1=$(stat_of "$T/m" fuse.read)
[ "$reads1" -eq "$reads0" ] || fail "reading warmed files sent $((reads1 - reads0)) read requests"
note "89 files warmed after one was read; reading them all sent no request"
# CPython's open() asks isatty() of each file: an ioctl the kernel sends
# every time; the stats count it (one per open) and it gets ENOTTY.
ioctl0=$(stat_of "$T/m" fuse.ioctl)
pyread "$T/m/a"/* || fail "Python cannot read the warmed files"
n=$(ls "$T/m/a" | wc -l)
ioctls=$(($(stat_of "$T/m" fuse.ioctl) - ioctl0))
[ "$ioctls" -eq "$n" ] || fail "$n Python opens counted $ioctls ioctls"
[ "$(stat_of "$T/m" fuse.read)" -eq "$reads1" ] || fail "Python's reads of warmed files sent read requests"
[ "$(stat_of "$T/m" warm.open_files)" -eq 0 ] || fail "warmed files were pushed again when opened"
sqc_umount "$T/m"

note "8 Python readers open the same files at once, 2 workers: right bytes, no hang"
# A push at open waits on pages that another reader's READ has locked;
# that READ needs a free worker, which the daemon keeps.
sqc_mount "$T/img.sqfs" "$T/m" -o "threads=2,log=$T/d5.log"
i=0
while [ $i -lt 8 ]; do
    (cd "$T/src" && timeout 60 "$PYTHON" - "$T/m" $i */* <<'PY') &
import random, sys
mnt, seed, rels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
random.Random(seed).shuffle(rels)
for rel in rels:
    with open(rel, "rb") as a, open(mnt + "/" + rel, "rb") as b:
        if a.read() != b.read():
            sys.exit("%s differs" % rel)
PY
    eval "pid$i=\$!"
    i=$((i + 1))
done
i=0
while [ $i -lt 8 ]; do
    eval "wait \$pid$i" || fail "reader $i failed or hung (exit $?)"
    i=$((i + 1))
done
pushed=$(stat_of "$T/m" warm.open_files)
[ "$pushed" -ge 1 ] && [ "$pushed" -le 90 ] || fail "$pushed of 90 files pushed at open"
note "$pushed of 90 files pushed at open, the rest read"
sqc_umount "$T/m"

note "a file larger than the first READ: the rest is pushed before it is answered"
mkdir -p "$T/rest/d"
for kb in 300 900 2048; do
    head -c $((kb * 1024 + 123)) /dev/urandom >"$T/rest/d/f$kb"
done
mkimg "$T/rest" "$T/rest.sqfs" -comp lz4
sqc_mount "$T/rest.sqfs" "$T/m" -o "log=$T/d6.log"
reads0=$(stat_of "$T/m" fuse.read)
for kb in 300 900; do
    cmp -s "$T/rest/d/f$kb" "$T/m/d/f$kb" || fail "f$kb differs"
done
reads=$(($(stat_of "$T/m" fuse.read) - reads0))
[ "$reads" -eq 2 ] || fail "2 files of 300 and 900 KiB took $reads reads, not one each"
[ "$(stat_of "$T/m" warm.open_files)" -eq 2 ] ||
    fail "the rest of $(stat_of "$T/m" warm.open_files) of 2 files pushed"
# Above 1 MiB the kernel's readahead does the rest, as before.
cmp -s "$T/rest/d/f2048" "$T/m/d/f2048" || fail "f2048 differs"
[ "$(stat_of "$T/m" warm.open_files)" -eq 2 ] || fail "a 2 MiB file was pushed"
sqc_umount "$T/m"

note "warm=0: reads go to the daemon"
mount_and_list "warm=0"
pyread "$T/m/a"/* || fail "Python cannot read the files"
cat "$T"/m/*/* >/dev/null
[ "$(stat_of "$T/m" fuse.read)" -gt 0 ] || fail "no read requests without warming"
# Listed, then read: with warming on, the pushes would follow within the
# 20 ms delay; 0.5 s is twenty-five times that.
watch_for 0.5 "nothing warmed or pushed with warm=0" \
    '[ "$(stat_of "$T/m" warm.bytes)" -eq 0 ] && [ "$(stat_of "$T/m" warm.open_files)" -eq 0 ]'
sqc_umount "$T/m"

note "opened by Python, never listed: each file is pushed at its first open"
# CPython's open() asks isatty() first: the daemon pushes the file into
# the page cache before it answers, so the reads that follow send nothing.
# statahead=0: otherwise the lookups would have the daemon list the
# directories, and warming would push most files before they are opened
# (086-ahead.sh tests that).
sqc_mount "$T/img.sqfs" "$T/m" -o "statahead=0,log=$T/d4.log"
reads0=$(stat_of "$T/m" fuse.read)
(cd "$T/src" && "$PYTHON" - "$T/m" a/* b/* <<'PY') || fail "Python read different bytes through the mount"
import sys
mnt = sys.argv[1]
for rel in sys.argv[2:]:
    with open(rel, "rb") as a, open(mnt + "/" + rel, "rb") as b:
        if a.read() != b.read():
            sys.exit("%s differs" % rel)
PY
ab=$(cat "$T"/src/a/* "$T"/src/b/* | wc -c)
[ "$(stat_of "$T/m" warm.open_files)" -eq 60 ] ||
    fail "$(stat_of "$T/m" warm.open_files) of 60 opened files pushed"
[ "$(stat_of "$T/m" warm.open_bytes)" -eq "$ab" ] ||
    fail "pushed $(stat_of "$T/m" warm.open_bytes) bytes at open, the files hold $ab"
[ "$(stat_of "$T/m" fuse.read)" -eq "$reads0" ] ||
    fail "reading files pushed at open sent $(($(stat_of "$T/m" fuse.read) - reads0)) reads"
"$MOUNTCTL" status "$T/m" | grep -Eq "^ *pushed +60 files as they were opened, " ||
    fail "mountctl status does not show the pushes: $("$MOUNTCTL" status "$T/m")"
pyread_src a || fail "Python cannot read the files again"
[ "$(stat_of "$T/m" warm.open_files)" -eq 60 ] ||
    fail "files opened again were pushed again ($(stat_of "$T/m" warm.open_files) pushes)"
if [ "$(id -u)" -eq 0 ]; then
    # The kernel drops the inodes with their pages and says so (FORGET):
    # the next open pushes again.  The FORGETs are queued when
    # drop_caches returns, and a worker of the daemon takes them while
    # another may already answer the next open; the stats do not count
    # them.  So the round is tried again (up to 5 times, dropping again)
    # until all 30 opens pushed: a daemon that missed the FORGETs fails
    # every round.
    round=0
    while :; do
        round=$((round + 1))
        p0=$(stat_of "$T/m" warm.open_files)
        sync
        echo 3 >/proc/sys/vm/drop_caches
        pyread_src a || fail "Python cannot read the files after drop_caches"
        again=$(($(stat_of "$T/m" warm.open_files) - p0))
        [ "$again" -ne 30 ] || break
        [ "$round" -lt 5 ] || fail "after drop_caches, $again of 30 opened files pushed again ($round rounds)"
        note "round $round: $again of 30 opened files pushed again; once more"
    done
fi
[ "$(stat_of "$T/m" warm.files)" -eq 0 ] || fail "files never listed were warmed"
sqc_umount "$T/m"

note "a budget: warming stops once it is spent"
mount_and_list "warm=100K,log=$T/d3.log"
cat "$T/m/a/f0" >/dev/null
# Wait for warming to reach its budget (a sanitizer build on a busy
# machine may take seconds), then check what it pushed.
wait_until 60 "the budget's end was not logged" 'grep -q "warming stopped at its budget" "$T/d3.log"'
warmed=$(stat_of "$T/m" warm.bytes)
# The budget is checked before each file; the largest file is < 125 KB.
[ "$warmed" -gt 0 ] && [ "$warmed" -le $((100 * 1024 + 125000)) ] ||
    fail "warm=100K pushed $warmed bytes"
cmp -s "$T/src/c/f29" "$T/m/c/f29" || fail "a file not warmed reads wrong"
sqc_umount "$T/m"
note "files listed after the last read do not hold up those listed before it"
# c's files are listed, one is read, then a's are listed: a's come first
# in the image, but no read has followed them yet.  statahead=0: only
# these listings show the kernel the files.
sqc_mount "$T/img.sqfs" "$T/m" -o "statahead=0,log=$T/d7.log"
ls -l "$T/m/c" >/dev/null
cat "$T/m/c/f0" >/dev/null
ls -l "$T/m/a" >/dev/null
wait_warmed 29
# Were the files listed after the read pushed too, they would be within
# the 20 ms delay: watched for twenty-five times that.
watch_for 0.5 "a's files, listed after the last read, not pushed" \
    '[ "$(stat_of "$T/m" warm.files)" -eq 29 ]'
cat "$T/m/b/f0" >/dev/null
wait_warmed 58
cmp -s "$T/src/a/f29" "$T/m/a/f29" || fail "a/f29 reads wrong after warming"
sqc_umount "$T/m"

note "a listing of more files than the queue first holds: none dropped"
# Nothing is pushed while a listing goes on, so the queue grows to hold it.
mkdir -p "$T/many/d"
"$PYTHON" -c 'import sys
for i in range(6000):
    with open("%s/f%05d" % (sys.argv[1], i), "wb") as f:
        f.write(b"%d\n" % i)' "$T/many/d"
mkimg "$T/many" "$T/many.sqfs" -comp lz4
sqc_mount "$T/many.sqfs" "$T/m"
ls -l "$T/m/d" >/dev/null
cat "$T/m/d/f00000" >/dev/null
wait_warmed 5999
[ "$(stat_of "$T/m" warm.dropped)" -eq 0 ] || fail "warming dropped $(stat_of "$T/m" warm.dropped) files"
cmp -s "$T/many/d/f05999" "$T/m/d/f05999" || fail "the last warmed file reads wrong"
sqc_umount "$T/m"

note "listed files kept until a read, across the end of their ring as it grows: none lost"
# 3,000 files listed and pushed move the ring's start; 6,000 more then
# wrap around its end before it grows, and again after.  Directories of
# 30 files and statahead=0: each listing is one READDIRPLUS of the
# reader's, that shows the kernel every file.
"$PYTHON" -c 'import os, sys
for top, dirs in (("c", 100), ("e", 200)):
    for d in range(dirs):
        p = os.path.join(sys.argv[1], top, "%03d" % d)
        os.makedirs(p)
        for i in range(30):
            with open(os.path.join(p, "f%02d" % i), "wb") as f:
                f.write(b"%s %d %d\n" % (top.encode(), d, i))' "$T/ring"
mkimg "$T/ring" "$T/ring.sqfs" -comp lz4
sqc_mount "$T/ring.sqfs" "$T/m" -o "statahead=0,log=$T/d8.log"
ls -lR "$T/m/c" >/dev/null
cat "$T/m/c/000/f00" >/dev/null
wait_warmed 2999
ls -lR "$T/m/e" >/dev/null
[ "$(stat_of "$T/m" warm.files)" -eq 2999 ] || fail "files listed with no read after were pushed"
cat "$T/m/e/000/f00" >/dev/null
wait_warmed 8998
[ "$(stat_of "$T/m" warm.dropped)" -eq 0 ] || fail "warming dropped $(stat_of "$T/m" warm.dropped) files"
reads0=$(stat_of "$T/m" fuse.read)
"$PYTHON" -c 'import os, sys
src, mnt = sys.argv[1:]
for top, _, files in os.walk(src):
    for n in files:
        rel = os.path.relpath(os.path.join(top, n), src)
        with open(os.path.join(src, rel), "rb") as a, \
                open(os.path.join(mnt, rel), "rb") as b:
            if a.read() != b.read():
                sys.exit("%s reads wrong after warming" % rel)' "$T/ring" "$T/m" ||
    fail "warmed files read wrong"
[ "$(stat_of "$T/m" fuse.read)" -eq "$reads0" ] ||
    fail "$(($(stat_of "$T/m" fuse.read) - reads0)) warmed files were read from the daemon"
sqc_umount "$T/m"

note "prime: files opened by path, never listed, need no lookup and no read"
# Priming stands for a reader: what it lists is pushed without a read.
sqc_mount "$T/img.sqfs" "$T/m" -o prime
# The mount command returns once the listing is done (prime_wait).
[ "$(stat_of "$T/m" statahead.all_state)" = "done" ] ||
    fail "the mount command returned while priming was $(stat_of "$T/m" statahead.all_state)"
wait_warmed 90
[ "$(stat_of "$T/m" statahead.all_dirs)" -eq 4 ] || fail "primed $(stat_of "$T/m" statahead.all_dirs) directories, not 4"
[ "$(stat_of "$T/m" statahead.all_entries)" -eq 93 ] || fail "primed $(stat_of "$T/m" statahead.all_entries) entries, not 93"
"$MOUNTCTL" status "$T/m" | grep -Eq "^ *primed +done, 93 entries in 4 directories" ||
    fail "mountctl status does not show the priming: $("$MOUNTCTL" status "$T/m")"
lookups0=$(stat_of "$T/m" fuse.lookup)
reads0=$(stat_of "$T/m" fuse.read)
for d in a b c; do
    i=0
    while [ $i -lt 30 ]; do
        cmp -s "$T/src/$d/f$i" "$T/m/$d/f$i" || fail "$d/f$i differs after priming"
        i=$((i + 1))
    done
done
[ "$(stat_of "$T/m" fuse.lookup)" -eq "$lookups0" ] || fail "opening primed files sent lookups"
[ "$(stat_of "$T/m" fuse.read)" -eq "$reads0" ] || fail "reading primed files sent reads"
sqc_umount "$T/m"

note "prime: SIGTERM while it lists a big tree unmounts cleanly"
mkdir -p "$T/big"
i=0
while [ $i -lt 40 ]; do
    mkdir "$T/big/d$i"
    (cd "$T/big/d$i" && seq 1 500 | xargs touch)
    i=$((i + 1))
done
mkimg "$T/big" "$T/big.sqfs" -comp lz4
sqc_mount "$T/big.sqfs" "$T/m" -o prime,prime_wait=0
pid=$(sqc_pid "$T/m")
kill -TERM "$pid"
wait_gone "$pid" 10 "daemon (SIGTERM while priming)"
! is_mounted "$T/m" || fail "SIGTERM while priming left the mount behind"
echo "warming checks passed"

#!/bin/sh
# Checked bytes: an image's seal (mountctl seal) and the daemon that
# checks every byte it reads against it.  Checks, for real, that:
#   (a) mountctl seal writes IMAGE.sqcseal beside the image file (a
#       symlink's target), leaves no temporary file, prints the root;
#       --check passes the image, fails a flipped byte (exit 1, the block
#       named), a wrong --root, a damaged seal, and a file that is no
#       SquashFS (exit 4);
#   (b) for each compressor (gzip, lzo, lz4, xz, zstd) and for data
#       stored as is (-noD): a byte flipped in a file's data block gives
#       EIO with the seal, staged (stage=full: the chunk is refused) or
#       read on demand (stage=none), logged once with its block and
#       counted, while the other files read back right and the daemon
#       serves on; without the seal (seal=off) the same image gives wrong
#       bytes where the block is stored as is (what today gives);
#   (c) a mount refuses a seal of another image, a damaged seal, a seal
#       whose root is not -o seal_root=, and -o seal=require without one;
#       the right root mounts; without a seal, nothing is checked;
#   (d) readers that fill chunks while staging runs (slow storage,
#       faultfs) get checked bytes: the flipped block gives EIO, the rest
#       is right;
#   (e) with -o keep and a keeper: a daemon killed with SIGKILL while it
#       stages leaves only chunks that matched the seal taken for
#       complete (the next mount adopts them, and none of them fails its
#       check); the chunk that does not match is never marked complete,
#       nor kept, after staging ends.
# TIMEOUT: 300
# TSAN: yes
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs cmp

cp "$TOP/tests/images/corrupt.py" "$T/corrupt.py"
C="$PYTHON $T/corrupt.py"

# A tree whose first file's first data block is the data region's first
# block (mksquashfs writes files in name order): text that compresses.
mkdir -p "$T/src/sub"
"$PYTHON" - "$T/src" <<'PY'
import random, sys
r = random.Random(40)
words = ["".join(r.choice("abcdefghij") for _ in range(r.randint(2, 9)))
         for _ in range(500)]
def text(n):
    return " ".join(r.choice(words) for _ in range(n))
open(sys.argv[1] + "/aaa-target", "w").write(text(100000))
open(sys.argv[1] + "/zzz-other", "w").write(text(60000))
open(sys.argv[1] + "/sub/small", "w").write("hello, seal\n")
PY

note "(a) mountctl seal and --check"
mkimg "$T/src" "$T/a.sqfs" -comp zstd
ln -s "$T/a.sqfs" "$T/link.sqfs"
root=$("$MOUNTCTL" seal "$T/link.sqfs") || fail "mountctl seal failed"
echo "$root" | grep -Eq "^[0-9a-f]{64}  $T/link.sqfs\$" || fail "mountctl seal printed '$root'"
root=${root%% *}
[ -s "$T/a.sqfs.sqcseal" ] || fail "no seal beside the symlink's target"
[ ! -e "$T/link.sqfs.sqcseal" ] || fail "a seal beside the symlink"
[ -z "$(find "$T" -maxdepth 1 -name '*.tmp.*')" ] || fail "a temporary file is left: $(ls "$T")"
out=$("$MOUNTCTL" seal --check "$T/a.sqfs" 2>/dev/null) || fail "--check of the sealed image failed"
[ "${out%% *}" = "$root" ] || fail "--check printed another root: $out"
"$MOUNTCTL" seal --check --root "$root" "$T/a.sqfs" >/dev/null 2>&1 || fail "--check --root with the right root failed"
# The same bytes sealed elsewhere: the same root.
cp "$T/a.sqfs" "$T/a2.sqfs"
[ "$("$MOUNTCTL" seal "$T/a2.sqfs" | cut -d' ' -f1)" = "$root" ] || fail "the same image sealed again has another root"
rc=0
"$MOUNTCTL" seal --check --root "$(echo "$root" | tr 0-9a-f 1-9a-f0)" "$T/a.sqfs" 2>"$T/err" >/dev/null || rc=$?
[ $rc = 1 ] && grep -q "root hash" "$T/err" || fail "--check with another root: exit $rc, $(cat "$T/err")"
$C flip "$T/a.sqfs" "$T/f.sqfs" data 5000
cp "$T/a.sqfs.sqcseal" "$T/f.sqfs.sqcseal"
rc=0
"$MOUNTCTL" seal --check "$T/f.sqfs" 2>"$T/err" >/dev/null || rc=$?
[ $rc = 1 ] && grep -q "1 of .* blocks of 4 KiB differ, the first at byte 4096" "$T/err" ||
    fail "--check of a flipped byte: exit $rc, $(cat "$T/err")"
cp "$T/a.sqfs.sqcseal" "$T/d.sqcseal"
printf 'x' | dd of="$T/d.sqcseal" bs=1 seek=5000 conv=notrunc 2>/dev/null
rc=0
"$MOUNTCTL" seal --check --seal "$T/d.sqcseal" "$T/a.sqfs" 2>"$T/err" >/dev/null || rc=$?
[ $rc = 1 ] && grep -q "damaged" "$T/err" || fail "--check of a damaged seal: exit $rc, $(cat "$T/err")"
rc=0
"$MOUNTCTL" seal "$T/src/zzz-other" 2>"$T/err" >/dev/null || rc=$?
[ $rc = 4 ] && grep -q "not a SquashFS image" "$T/err" || fail "sealing a text file: exit $rc, $(cat "$T/err")"

# read_mount MNT REF OUT: corrupt.py's per-path verdicts
read_mount() {
    rc=0
    timeout 60 $C read "$1" "$2" >"$3" 2>&1 || rc=$?
    [ $rc -ne 124 ] || fail "reading $1 hung"
}

# verdict OUT PATH: ok, eio, diff, ...
verdict() {
    sed -n "s|^\([a-z]*\) $2\$|\1|p" "$1"
}

note "(b) a flipped byte in a data block, per compressor, with and without the seal"
summary=""
for comp in gzip lzo lz4 xz zstd noD; do
    case $comp in
    noD) args="-noD" ;;
    *) args="-comp $comp" ;;
    esac
    # shellcheck disable=SC2086
    mkimg "$T/src" "$T/$comp.sqfs" $args
    "$MOUNTCTL" seal "$T/$comp.sqfs" >/dev/null || fail "$comp: mountctl seal failed"
    # 10000 bytes into the data: inside aaa-target's first block, in
    # the image's block 2 (block 0 holds the superblock too: with it
    # flipped, no mount could trust the image at all).
    $C flip "$T/$comp.sqfs" "$T/bad-$comp.sqfs" data 10000
    cp "$T/$comp.sqfs.sqcseal" "$T/bad-$comp.sqfs.sqcseal"
    for stage in full none; do
        m="$T/m-$comp-$stage"
        log="$T/log-$comp-$stage"
        # What it says before it detaches goes to stderr, the rest to
        # the log.
        sqc_mount "$T/bad-$comp.sqfs" "$m" -o "stage=$stage,log=$log.after" 2>"$log"
        pid=$(sqc_pid "$m")
        [ "$(stat_of "$m" verify.seal)" = "$T/bad-$comp.sqfs.sqcseal" ] ||
            fail "$comp: the seal beside the image was not found ($(stat_of "$m" verify.seal))"
        if [ $stage = full ]; then
            _w=0
            until [ "$(stat_of "$m" stage.state)" = "done" ]; do
                _w=$((_w + 1))
                [ $_w -lt 500 ] || fail "$comp: not staged within 10 s"
                sleep 0.02
            done
            [ "$(stat_of "$m" verify.refused_bytes)" -ge 4096 ] ||
                fail "$comp: the bad chunk was staged (refused $(stat_of "$m" verify.refused_bytes))"
        fi
        read_mount "$m" "$T/src" "$T/read-$comp-$stage"
        [ "$(verdict "$T/read-$comp-$stage" aaa-target)" = eio ] ||
            { cat "$T/read-$comp-$stage"; fail "$comp stage=$stage: aaa-target did not give EIO"; }
        for p in zzz-other sub/small; do
            [ "$(verdict "$T/read-$comp-$stage" $p)" = ok ] ||
                { cat "$T/read-$comp-$stage"; fail "$comp stage=$stage: $p does not read back right"; }
        done
        # Serves on: a second read, and another file.
        ! cat "$m/aaa-target" >/dev/null 2>&1 || fail "$comp: a second read of the bad block passed"
        cmp "$m/zzz-other" "$T/src/zzz-other" || fail "$comp: zzz-other differs after the EIO"
        kill -0 "$pid" || fail "$comp: the daemon died"
        [ "$(stat_of "$m" verify.blocks_bad)" -ge 1 ] || fail "$comp: no bad block counted"
        [ "$(stat_of "$m" fuse.eio)" -ge 1 ] || fail "$comp: no EIO counted"
        sqc_umount "$m"
        cat "$log.after" >>"$log"
        # Logged once, with its block, however often it was read.
        [ "$(grep -c "block 2 (bytes 8192 to 12288, .*) does not match its seal" "$log")" = 1 ] &&
            [ "$(grep -c "does not match its seal" "$log")" = 1 ] ||
            { cat "$log"; fail "$comp stage=$stage: the bad block was not logged once"; }
    done
    # Without the seal: what today gives.
    m="$T/m-$comp-off"
    sqc_mount "$T/bad-$comp.sqfs" "$m" -o seal=off
    [ "$(stat_of "$m" verify.seal)" = None ] || fail "$comp: seal=off checked anyway"
    read_mount "$m" "$T/src" "$T/read-$comp-off"
    v=$(verdict "$T/read-$comp-off" aaa-target)
    sqc_umount "$m"
    [ "$comp" != noD ] || [ "$v" = diff ] ||
        fail "noD without the seal: aaa-target gave '$v', not wrong bytes"
    summary="$summary $comp:$v"
done
echo "without a seal, the flipped byte gave:$summary (with it: EIO everywhere)"

note "(c) seals a mount refuses, and the root pinned"
# refuse NAME REGEX ARGS...: squashcached must fail, say REGEX, mount nothing
refuse() {
    _rn=$1
    _rx=$2
    shift 2
    mkdir -p "$T/mr"
    rc=0
    "$SQUASHCACHED" "$@" "$T/mr" >"$T/err" 2>&1 || rc=$?
    [ $rc -ne 0 ] || { sqc_umount "$T/mr"; fail "$_rn: mounted"; }
    ! is_mounted "$T/mr" || fail "$_rn: left a mount"
    grep -Eq "$_rx" "$T/err" || { cat "$T/err"; fail "$_rn: the refusal does not say /$_rx/"; }
}
refuse "another image's seal" "seals another image" -o "seal=$T/gzip.sqfs.sqcseal" "$T/zstd.sqfs"
refuse "a damaged seal" "damaged" -o "seal=$T/d.sqcseal" "$T/a.sqfs"
refuse "another root" "has root hash" -o "seal_root=$(echo "$root" | tr 0-9a-f 1-9a-f0)" "$T/a.sqfs"
rm -f "$T/a2.sqfs.sqcseal"
refuse "require without a seal" "cannot open the seal" -o seal=require "$T/a2.sqfs"
refuse "a root without a seal" "cannot open the seal" -o "seal_root=$root" "$T/a2.sqfs"
refuse "seal_root with seal=off" "needs a seal" -o "seal=off,seal_root=$root" "$T/a.sqfs"
sqc_mount "$T/a.sqfs" "$T/mc" -o "seal_root=$root"
[ "$(stat_of "$T/mc" verify.root)" = "$root" ] || fail "the pinned root mount shows $(stat_of "$T/mc" verify.root)"
diff -r "$T/src" "$T/mc" || fail "the pinned root mount differs from the source"
[ "$(stat_of "$T/mc" verify.blocks_bad)" = 0 ] || fail "a sound image has bad blocks"
sqc_umount "$T/mc"
sqc_mount "$T/a2.sqfs" "$T/mc"
[ "$(stat_of "$T/mc" verify.seal)" = None ] || fail "no seal, yet verify.seal is $(stat_of "$T/mc" verify.seal)"
diff -r "$T/src" "$T/mc" || fail "the unsealed mount differs"
sqc_umount "$T/mc"

note "(d) readers fill chunks while staging runs on slow storage: checked"
# ~8 MB of incompressible files; the flip in the last one's data, which
# readers reach before the stager does (metadata first, then data in
# order).
mkdir -p "$T/big"
rand_tree "$T/big" 53 4 10 200000
mkimg "$T/big" "$T/big.sqfs" -comp lz4 -no-fragments
"$MOUNTCTL" seal "$T/big.sqfs" >/dev/null || fail "sealing big.sqfs failed"
last=$(find "$T/big" -type f | sort | tail -n 1)
lastrel=${last#"$T/big/"}
dlen=$($C regions "$T/big.sqfs" | awk '$1 == "data" { print $3 }')
# 100000 bytes before the data's end: inside the last file (200000 bytes
# in two blocks, no fragment, stored as is: random bytes do not
# compress).
$C flip "$T/big.sqfs" "$T/bigbad.sqfs" data $((dlen - 100000))
: >"$T/failfile"
FAULTFS_DELAY_US=100000 start_faultfs "$T/bigbad.sqfs" "$T/store" "$T/failfile"
sqc_mount "$T/store/image" "$T/md" -o "seal=$T/big.sqfs.sqcseal,stage=full,threads=4,log=$T/log-d"
[ "$(stat_of "$T/md" stage.state)" != "done" ] || fail "(d) staged before any reader: storage too fast"
rc=0
cat "$T/md/$lastrel" >/dev/null 2>"$T/err" || rc=$?
[ $rc -ne 0 ] && grep -q "Input/output error" "$T/err" || fail "(d) the flipped file read during staging: exit $rc"
for f in $(cd "$T/big" && find . -type f | sort -r); do
    [ "$f" = "./$lastrel" ] && continue
    cmp "$T/md/$f" "$T/big/$f" || fail "(d) $f differs"
done
[ "$(stat_of "$T/md" stage.by_readers)" -gt 0 ] || fail "(d) no chunk was filled by a reader: staging outran them"
[ "$(stat_of "$T/md" verify.refused_bytes)" -ge 4096 ] || fail "(d) the bad chunk was not refused"
grep -q "read for staging) does not match its seal" "$T/log-d" || { cat "$T/log-d"; fail "(d) the refusal was not logged"; }
echo "    $(stat_of "$T/md" stage.by_readers) bytes filled by readers, $(stat_of "$T/md" verify.blocks_ok) blocks checked"
sqc_umount "$T/md"

note "(e) -o keep: SIGKILL mid-stage takes nothing unchecked for complete"
# The keeper runs as root (the rest did not need it).
[ "$(id -u)" -eq 0 ] || skip "(a)-(d) passed; (e) needs root for the keeper"
KDIR="$T/keeper"
K="$KDIR/k.sock"
mkdir -m 0755 "$KDIR"
start_keeper 1G
kept_field() {
    "$MOUNTCTL" status --kept --json --socket "$K" | "$PYTHON" -c 'import json, sys
for e in json.load(sys.stdin):
    if e["image"] == sys.argv[1]:
        print(e[sys.argv[2]])
        break
else:
    print("none")' "$1" "$2"
}
wait_kept() {
    _wk=0
    until [ "$(kept_field "$1" in_use)" = False ]; do
        _wk=$((_wk + 1))
        [ $_wk -lt 250 ] || fail "no kept copy of $1"
        sleep 0.02
    done
}
# The flip early in the data: staging meets it before the kill.
$C flip "$T/big.sqfs" "$T/keepbad.sqfs" data 300000
fusermount3 -u "$T/store"
FAULTFS_DELAY_US=300000 start_faultfs "$T/keepbad.sqfs" "$T/store" "$T/failfile"
sqc_mount "$T/store/image" "$T/mk" -o "keep=$K,seal=$T/big.sqfs.sqcseal,threads=2"
wait_stat "$T/mk" verify.refused_bytes 4096 60 "(e) staging did not reach the bad chunk"
pid=$(sqc_pid "$T/mk")
[ "$(stat_of "$T/mk" stage.state)" != "done" ] || fail "(e) staging ended before the kill: storage too fast"
kill -9 "$pid"
wait_gone "$pid" 10 "the killed daemon"
fusermount3 -u -z "$T/mk" 2>/dev/null || umount -l "$T/mk"
wait_kept "$T/store/image"
part=$(kept_field "$T/store/image" complete_bytes)
total=$(stat -c %s "$T/big.sqfs")
note "    $part bytes complete of about $total"
[ "$part" -gt 0 ] && [ "$part" -lt "$total" ] || fail "(e) killed mid-stage: $part bytes complete"
sqc_mount "$T/store/image" "$T/mk" -o "keep=$K,seal=$T/big.sqfs.sqcseal"
[ "$(stat_of "$T/mk" keep.adopted)" = "$part" ] || fail "(e) adopted $(stat_of "$T/mk" keep.adopted), not $part"
_w=0
until [ "$(stat_of "$T/mk" stage.state)" = "done" ]; do
    _w=$((_w + 1))
    [ $_w -lt 3000 ] || fail "(e) the second mount did not finish staging"
    sleep 0.02
done
read_mount "$T/mk" "$T/big" "$T/read-e"
neio=$(grep -c '^eio ' "$T/read-e" || true)
nok=$(grep -c '^ok ' "$T/read-e" || true)
[ "$neio" = 1 ] && [ "$nok" = $(($(find "$T/big" -type f | wc -l) - 1)) ] ||
    { cat "$T/read-e"; fail "(e) after the kill: $neio EIO, $nok right"; }
[ "$(stat_of "$T/mk" verify.bad_staged)" = 0 ] ||
    fail "(e) an adopted chunk did not match the seal: taken for complete unchecked"
imgbytes=$(stat_of "$T/mk" image_bytes)
sqc_umount "$T/mk"
wait_kept "$T/store/image"
done_bytes=$(kept_field "$T/store/image" complete_bytes)
[ "$done_bytes" = $((imgbytes - 131072)) ] ||
    fail "(e) the kept copy holds $done_bytes complete bytes of $imgbytes: the bad chunk alone should be missing"
echo "seal ok"

#!/bin/sh
# Mutation smoke test: whatever bytes an image holds, the library and the
# daemon answer with an error or success, never a signal, a sanitizer
# report, a hang or memory beyond their budgets.  Flip 1-2 bytes of valid
# images and require that.
#
#   1. Every image of tests/images/mkimages.sh, SQC_MUTATIONS (300)
#      mutations each, through the library walk of the fuzz target
#      (fuzz_replay --mutate: img_check plus the mount access pattern).
#      A failing input is kept in $T (printed; SQC_KEEP=1 keeps $T).
#   2. SQC_MUTATE_MOUNTS (20) mutated images through squashcached -f,
#      reading everything: the daemon must refuse with a message or serve,
#      stay alive, not hang, keep its peak RSS within its budgets (14 MiB)
#      plus 48 MiB, and exit 0 on unmount.
#   3. For comparison only (never a failure; not in a sanitizer run): the
#      same images, plus more up to SQC_MUTATE_PEER (100), through
#      Debian's squashfuse_ll, counting its crashes (a signal) and hangs.
#
# The seed is printed; SQC_MUTATE_SEED=N repeats a run.  It is 1 unless
# set, so that every run of make check tries the same mutations and a
# failure repeats; SQC_MUTATE_SEED=random draws one (to explore more).
# TIMEOUT: 400
. "$(dirname "$0")/lib.sh"

need_cmd mksquashfs timeout
[ -x "$TOOLS/fuzz_replay" ] || fail "$TOOLS/fuzz_replay not built (make tests)"

# $C is split into words where it is used: its script is a copy in $T,
# whose path has no spaces (the tree's may).
cp "$TOP/tests/images/corrupt.py" "$T/corrupt.py"
C="$PYTHON $T/corrupt.py"
SEED=${SQC_MUTATE_SEED:-1}
if [ "$SEED" = random ]; then
    SEED=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
fi
case "$SEED" in '' | *[!0-9]*) fail "SQC_MUTATE_SEED must be a number or 'random', not '$SEED'" ;; esac
N=${SQC_MUTATIONS:-300}
MOUNTS=${SQC_MUTATE_MOUNTS:-20}
PEER=${SQC_MUTATE_PEER:-100}
echo "mutation seed $SEED (repeat with SQC_MUTATE_SEED=$SEED)"

sh "$TOP/tests/images/mkimages.sh" "$T/img" >"$T/mkimages.log" 2>&1 ||
    { cat "$T/mkimages.log"; fail "mkimages.sh failed"; }
mkdir -p "$T/kept" "$T/mut" "$T/log" "$T/mnt"
# run_daemon works in a subshell: register its mountpoint here, so that the
# EXIT trap unmounts it if the test is cut short.
_mounts="$T/mnt $_mounts"

note "library walk: $N mutations of each of $(ls "$T/img" | wc -l) images"
start=$(date +%s)
rc=0
"$TOOLS/fuzz_replay" -q --mutate "$N" --seed "$SEED" --keep "$T/kept" \
    "$T"/img/*.sqfs >"$T/replay.out" 2>&1 || rc=$?
tail -n 1 "$T/replay.out"
if [ $rc -ne 0 ]; then
    SQC_KEEP=1 # read by the cleanup trap in lib.sh
    export SQC_KEEP
    grep -E '^FAIL|killed|exit status' "$T/replay.out" | head -n 20
    fail "mutated images crashed the library walk (inputs kept in $T/kept; SQC_MUTATE_SEED=$SEED repeats it)"
fi
echo "library walk: $(($(date +%s) - start))s"

# Images for the mounts: round-robin over the base images.
for img in "$T"/img/*.sqfs; do
    $C mutate "$img" "$T/mut" $(((PEER + 17) / 18)) "$SEED" >/dev/null
done
ls "$T/mut" | sort >"$T/mut.list"
total=$(wc -l <"$T/mut.list")

# The shell's status for a child killed by a signal (exit(255) is not one).
is_signal() {
    [ "$1" -gt 128 ] && [ "$1" -le 192 ]
}

# run_daemon KIND IMG: mount IMG with squashcached or squashfuse_ll in the
# foreground, read everything, unmount.  Prints one word: refused, ok,
# crash:SIG, hang, or stuck (did not exit after unmount).
run_daemon() {
    kind=$1
    img=$2
    mnt="$T/mnt"
    mkdir -p "$mnt"
    case $kind in
    sqc) "$SQUASHCACHED" -f -o ram=8M,cache=4M,meta=2M "$img" "$mnt" >"$T/log/d.err" 2>&1 & ;;
    peer) squashfuse_ll -f "$img" "$mnt" >"$T/log/d.err" 2>&1 & ;;
    esac
    pid=$!
    _pids="$pid $_pids"
    n=0
    while ! is_mounted "$mnt"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            rc=0
            wait "$pid" || rc=$?
            if is_signal $rc; then echo "crash:$((rc - 128))"; else echo refused; fi
            return 0
        fi
        n=$((n + 1))
        if [ $n -gt 500 ]; then
            kill -9 "$pid" 2>/dev/null
            echo hang
            return 0
        fi
        sleep 0.01
    done
    rc=0
    timeout 30 $C read "$mnt" >/dev/null 2>&1 || rc=$?
    alive=yes
    kill -0 "$pid" 2>/dev/null || alive=no
    hwm=$(sed -n 's/^VmHWM: *\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null || true)
    fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null || true
    n=0
    while kill -0 "$pid" 2>/dev/null; do
        n=$((n + 1))
        if [ $n -gt 500 ]; then
            kill -9 "$pid" 2>/dev/null
            echo stuck
            return 0
        fi
        sleep 0.01
    done
    drc=0
    wait "$pid" || drc=$?
    if is_signal $drc; then
        echo "crash:$((drc - 128))"
    elif [ $rc -eq 124 ]; then
        echo hang
    elif [ $alive = no ]; then
        echo "died"
    elif [ $kind = sqc ] && [ -z "${SQC_SANITIZE:-}" ] && [ -n "$hwm" ] &&
        [ "$hwm" -gt $(((14 + 48) * 1024)) ]; then
        echo "peak RSS ${hwm} kB over the budgets (14 MiB) + 48 MiB"
    else
        echo ok
    fi
}

if [ -c /dev/fuse ] && [ -x "$SQUASHCACHED" ]; then
    note "squashcached: $MOUNTS mutated images, reading everything"
    start=$(date +%s)
    served=0
    refused=0
    head -n "$MOUNTS" "$T/mut.list" >"$T/mount.list"
    while read -r m; do
        r=$(run_daemon sqc "$T/mut/$m")
        case $r in
        ok) served=$((served + 1)) ;;
        refused)
            refused=$((refused + 1))
            [ -s "$T/log/d.err" ] || fail "$m: refused to mount without a message"
            ;;
        *)
            SQC_KEEP=1 # read by the cleanup trap in lib.sh
            export SQC_KEEP
            cp "$T/mut/$m" "$T/kept/"
            cat "$T/log/d.err" | tail -n 20
            fail "squashcached on mutated image $m: $r (kept in $T/kept; SQC_MUTATE_SEED=$SEED repeats it)"
            ;;
        esac
    done <"$T/mount.list"
    echo "squashcached: $served served, $refused refused, 0 crashes ($(($(date +%s) - start))s)"

    # Informational, and the same in every build: the plain run's.
    if [ -n "${SQC_SANITIZE:-}" ]; then
        note "sanitizer build: the squashfuse_ll comparison is the plain run's"
    elif command -v squashfuse_ll >/dev/null 2>&1; then
        note "for comparison: squashfuse_ll on $PEER mutated images (informational)"
        start=$(date +%s)
        head -n "$PEER" "$T/mut.list" >"$T/peer.list"
        pok=0
        pref=0
        pcrash=0
        phang=0
        while read -r m; do
            r=$(run_daemon peer "$T/mut/$m")
            case $r in
            ok) pok=$((pok + 1)) ;;
            refused) pref=$((pref + 1)) ;;
            crash:*) pcrash=$((pcrash + 1)); echo "  squashfuse_ll: $m: signal ${r#crash:}" ;;
            *) phang=$((phang + 1)); echo "  squashfuse_ll: $m: $r" ;;
            esac
        done <"$T/peer.list"
        echo "squashfuse_ll: $(wc -l <"$T/peer.list") images: $pok served, $pref refused, $pcrash crashed, $phang hung or died ($(($(date +%s) - start))s)"
    fi
else
    note "no usable /dev/fuse: mount half skipped"
fi
echo "$total mutated images on disk, $N x $(ls "$T/img" | wc -l) through the walk"
exit 0

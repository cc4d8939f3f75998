#!/bin/sh
# Run squashcache's tests and print one closing line:
#   "N passed, N failed, N skipped"
#
#   sh tests/run.sh unit|integration|all|tsan|soak
#
# Unit tests are Check suites in $BUILD/tests/unit; each case counts.
# Integration tests are tests/integration/NNN-name.sh; each script counts.
# A script's "# TIMEOUT: seconds" header bounds it, exit 77 means skipped
# (it prints why), and its output goes to $BUILD/tests/logs/NAME.log.
# SQC_TESTS="pattern..." runs only the scripts and suites whose name
# holds one of the patterns.
# A sanitizer build (SQC_SANITIZE) leaves out the scripts headed
# "# SANITIZE: no": they run programs it does not build (packages) or
# deploy code whose sanitized paths other scripts run; the plain run
# has them.
#
# Side by side: up to SQC_JOBS (default 3) suites and scripts run at
# once, each in a work directory of its own; they share nothing.  A
# script headed "# ALONE: reason" changes or asserts state of the whole
# machine (drop_caches, a cgroup, a kernel module's parameter, DAMON,
# /dev/fuse's ACL, packages, the Slurm test cluster): it runs after the
# others, one at a time, with nothing else running.  The others start
# longest first (by the last run's times in $BUILD/tests/logs, else by
# their TIMEOUT), and each one's lines print when it ends.  SQC_JOBS=1
# runs one at a time, in name order.  On a machine that others share:
# with SQC_SLURM_LOCK=FILE, a script whose ALONE reason names the Slurm
# test cluster runs under flock FILE (one cluster at a time); with
# SQC_CACHE_LOCK=FILE, one whose reason names the page cache (it drops
# it, and asserts what the kernel keeps) runs under flock FILE, the lock
# of whatever else drops it (benchmarks).
#
# TSan (tsan): the suites headed "TSAN: yes" with their cases tagged
# "threads" (CK_INCLUDE_TAGS), and the scripts headed "# TSAN: yes".
set -u

BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
export BUILD PYTHON
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
logs="$BUILD/tests/logs"
mkdir -p "$logs"
pattern=${SQC_TESTS:-}
jobs=${SQC_JOBS:-3}
case "$jobs" in '' | *[!0-9]* | 0) echo "SQC_JOBS must be a number >= 1" >&2; exit 2 ;; esac
passed=0
failed=0
skipped=0
failures=""
unsanitized=""

selected() {
    [ -z "$pattern" ] && return 0
    for _p in $pattern; do
        case "$1" in *$_p*) return 0 ;; esac
    done
    return 1
}

# count P F S: add to this job's counts (in the job's own process; the
# runner adds them up from $res when the job ends).
count() {
    echo "$1 $2 $3" >>"$res"
}

# unit_one BINARY [tsan]: one Check suite.
unit_one() {
    t=$1
    name=$(basename "$t")
    log="$logs/$name.log"
    if [ "${2:-}" = tsan ]; then
        # The cases that run threads; single-threaded cases are the
        # plain and ASan runs' (a race needs two threads).
        CK_INCLUDE_TAGS=threads
        export CK_INCLUDE_TAGS
    fi
    CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60} "$t" >"$log" 2>&1
    rc=$?
    line=$(grep -E '^[0-9]+%: Checks: ' "$log" | tail -n 1)
    n=$(echo "$line" | sed -n 's/.*Checks: \([0-9]*\).*/\1/p')
    f=$(echo "$line" | sed -n 's/.*Failures: \([0-9]*\).*/\1/p')
    e=$(echo "$line" | sed -n 's/.*Errors: \([0-9]*\).*/\1/p')
    if [ "$rc" -eq 77 ]; then
        count 0 0 1
        echo "SKIP unit/$name: $(tail -n 1 "$log")"
        return
    fi
    if [ -z "$n" ]; then
        count 0 1 0
        echo "FAIL unit/$name (exit $rc, no Check summary)"
        tail -n 20 "$log" | sed 's/^/    /'
        return
    fi
    bad=$((f + e))
    if [ "$bad" -gt 0 ] || [ "$rc" -ne 0 ]; then
        [ "$bad" -gt 0 ] || bad=1
        count $((n - f - e)) "$bad" 0
        echo "FAIL unit/$name: $line"
        grep -E ':[EF]:' "$log" | head -n 20 | sed 's/^/    /'
    else
        count "$n" 0 0
        echo "ok   unit/$name: $n checks"
    fi
}

# script_one SCRIPT: one integration script.
script_one() {
    s=$1
    name=$(basename "$s" .sh)
    log="$logs/$name.log"
    tmo=$(sed -n 's/^# TIMEOUT: *\([0-9]*\).*/\1/p' "$s" | head -n 1)
    tmo=${tmo:-300}
    lock=
    if [ -n "${SQC_SLURM_LOCK:-}" ] && grep -q '^# ALONE:.*Slurm test cluster' "$s"; then
        lock=$SQC_SLURM_LOCK
    elif [ -n "${SQC_CACHE_LOCK:-}" ] && grep -q '^# ALONE:.*page cache' "$s"; then
        lock=$SQC_CACHE_LOCK
    fi
    start=$(date +%s)
    if [ -n "$lock" ]; then
        flock "$lock" timeout -k 10 "$tmo" sh "$s" >"$log" 2>&1 </dev/null
    else
        timeout -k 10 "$tmo" sh "$s" >"$log" 2>&1 </dev/null
    fi
    rc=$?
    secs=$(($(date +%s) - start))
    case $rc in
    0)
        count 1 0 0
        echo "$secs" >"$logs/$name.secs"
        echo "ok   $name (${secs}s)"
        ;;
    77)
        count 0 0 1
        echo "SKIP $name: $(grep '^SKIP' "$log" | tail -n 1 | sed 's/^SKIP: *//')"
        ;;
    124 | 137)
        count 0 1 0
        echo "FAIL $name: timed out after ${tmo}s"
        tail -n 30 "$log" | sed 's/^/    /'
        ;;
    *)
        count 0 1 0
        echo "FAIL $name (exit $rc, ${secs}s)"
        tail -n 30 "$log" | sed 's/^/    /'
        ;;
    esac
}

# The jobs: "KIND COST NAME PATH" lines, KIND unit, par or alone.
queue=$(mktemp "${TMPDIR:-/tmp}/sqc-run-queue.XXXXXX")
trap 'rm -f "$queue"' EXIT
trap 'exit 130' INT TERM
mode=${1:-all}

# cost NAME DEFAULT: the last run's seconds, else DEFAULT.
cost() {
    c=$(cat "$logs/$1.secs" 2>/dev/null || true)
    case "$c" in '' | *[!0-9]*) echo "$2" ;; *) echo "$c" ;; esac
}

queue_unit() {
    for t in "$BUILD"/tests/unit/test_*; do
        [ -x "$t" ] || continue
        case "$t" in *.o | *.d) continue ;; esac
        name=$(basename "$t")
        selected "$name" || continue
        if [ "$mode" = tsan ] && ! grep -q 'TSAN: yes' "tests/unit/$name.c" 2>/dev/null; then
            continue
        fi
        echo "unit $(cost "$name" 100) $name $t" >>"$queue"
    done
}

queue_integration() {
    for s in tests/integration/[0-9][0-9][0-9]-*.sh; do
        [ -f "$s" ] || continue
        name=$(basename "$s" .sh)
        selected "$name.sh" || continue
        case "$mode" in
        tsan) grep -q '^# TSAN: yes' "$s" || continue ;;
        soak) grep -q '^# SOAK: yes' "$s" || continue ;;
        *)
            if [ -n "${SQC_SANITIZE:-}" ] && grep -q '^# SANITIZE: no' "$s"; then
                unsanitized="$unsanitized $name"
                continue
            fi
            ;;
        esac
        kind=par
        grep -q '^# ALONE:' "$s" && kind=alone
        tmo=$(sed -n 's/^# TIMEOUT: *\([0-9]*\).*/\1/p' "$s" | head -n 1)
        echo "$kind $(cost "$name" $((${tmo:-300} / 4))) $name $s" >>"$queue"
    done
}

case "$mode" in
unit) queue_unit ;;
integration | soak) queue_integration ;;
all | tsan) queue_unit; queue_integration ;;
*) echo "usage: $0 unit|integration|all|tsan|soak" >&2; exit 2 ;;
esac

# A job ends by writing its name into the runner's pipe (fd 3), so the
# runner waits for whichever ends first.
fifo=$(mktemp -u "${TMPDIR:-/tmp}/sqc-run-fifo.XXXXXX")
mkfifo "$fifo" || exit 2
exec 3<>"$fifo"
rm -f "$fifo"
running=0

start_job() {
    _kind=$1
    _name=$2
    _path=$3
    res="$logs/.$_name.res"
    : >"$res"
    (
        if [ "$_kind" = unit ]; then
            unit_one "$_path" "$([ "$mode" = tsan ] && echo tsan)"
        else
            script_one "$_path"
        fi >"$logs/.$_name.out" 2>&1 3>&-
        echo "$_name" >&3
    ) &
    running=$((running + 1))
}

# Wait for one job to end: print its lines, add up its counts.
reap_one() {
    read -r _done <&3 || exit 2
    running=$((running - 1))
    cat "$logs/.$_done.out"
    while read -r p f k; do
        passed=$((passed + p))
        failed=$((failed + f))
        skipped=$((skipped + k))
        if [ "$f" -gt 0 ]; then
            case "$_done" in test_*) failures="$failures unit/$_done" ;; *) failures="$failures $_done" ;; esac
        fi
    done <"$logs/.$_done.res"
    rm -f "$logs/.$_done.out" "$logs/.$_done.res"
}

# Units and side-by-side scripts, longest first (in name order with one
# job at a time), then the scripts that run alone, in name order.
if [ "$jobs" -gt 1 ]; then
    order=$(grep -v '^alone ' "$queue" | sort -s -k2,2nr)
else
    order=$(grep -v '^alone ' "$queue")
fi
order="$order
$(grep '^alone ' "$queue")"
while read -r kind _cost name path; do
    [ -n "$kind" ] || continue
    if [ "$kind" = alone ]; then
        while [ "$running" -gt 0 ]; do reap_one; done
        start_job "$kind" "$name" "$path"
        reap_one
        continue
    fi
    while [ "$running" -ge "$jobs" ]; do reap_one; done
    start_job "$kind" "$name" "$path"
done <<EOF
$order
EOF
while [ "$running" -gt 0 ]; do reap_one; done

if [ -n "$unsanitized" ]; then
    echo "left to the plain run (# SANITIZE: no):$unsanitized"
fi
if [ -n "$failures" ]; then
    echo "failed:$failures (logs in $logs/)"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

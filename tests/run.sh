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
# SQC_TESTS=pattern runs only the scripts and suites whose name matches.
# A sanitizer build (SQC_SANITIZE) leaves out the scripts headed
# "# SANITIZE: no": they run programs it does not build (packages) or
# deploy code whose sanitized paths other scripts run; the plain run
# has them.
set -u

BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
export BUILD PYTHON
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
logs="$BUILD/tests/logs"
mkdir -p "$logs"
pattern=${SQC_TESTS:-}
passed=0
failed=0
skipped=0
failures=""
unsanitized=""

selected() {
    [ -z "$pattern" ] && return 0
    case "$1" in *$pattern*) return 0 ;; esac
    return 1
}

run_unit() {
    for t in "$BUILD"/tests/unit/test_*; do
        [ -x "$t" ] || continue
        case "$t" in *.o|*.d) continue ;; esac
        name=$(basename "$t")
        selected "$name" || continue
        if [ "${1:-}" = tsan ] && ! grep -q 'TSAN: yes' "tests/unit/$name.c" 2>/dev/null; then
            continue
        fi
        log="$logs/$name.log"
        CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60} "$t" >"$log" 2>&1
        rc=$?
        line=$(grep -E '^[0-9]+%: Checks: ' "$log" | tail -n 1)
        n=$(echo "$line" | sed -n 's/.*Checks: \([0-9]*\).*/\1/p')
        f=$(echo "$line" | sed -n 's/.*Failures: \([0-9]*\).*/\1/p')
        e=$(echo "$line" | sed -n 's/.*Errors: \([0-9]*\).*/\1/p')
        if [ "$rc" -eq 77 ]; then
            skipped=$((skipped + 1))
            echo "SKIP unit/$name: $(tail -n 1 "$log")"
            continue
        fi
        if [ -z "$n" ]; then
            failed=$((failed + 1))
            failures="$failures unit/$name"
            echo "FAIL unit/$name (exit $rc, no Check summary)"
            tail -n 20 "$log" | sed 's/^/    /'
            continue
        fi
        bad=$((f + e))
        passed=$((passed + n - bad))
        failed=$((failed + bad))
        if [ "$bad" -gt 0 ] || [ "$rc" -ne 0 ]; then
            [ "$bad" -eq 0 ] && failed=$((failed + 1))
            failures="$failures unit/$name"
            echo "FAIL unit/$name: $line"
            grep -E ':[EF]:' "$log" | head -n 20 | sed 's/^/    /'
        else
            echo "ok   unit/$name: $n checks"
        fi
    done
}

run_script() {
    s=$1
    name=$(basename "$s" .sh)
    log="$logs/$name.log"
    tmo=$(sed -n 's/^# TIMEOUT: *\([0-9]*\).*/\1/p' "$s" | head -n 1)
    tmo=${tmo:-300}
    start=$(date +%s)
    timeout -k 10 "$tmo" sh "$s" >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(($(date +%s) - start))
    case $rc in
    0)
        passed=$((passed + 1))
        echo "ok   $name (${secs}s)"
        ;;
    77)
        skipped=$((skipped + 1))
        echo "SKIP $name: $(grep '^SKIP' "$log" | tail -n 1 | sed 's/^SKIP: *//')"
        ;;
    124|137)
        failed=$((failed + 1))
        failures="$failures $name"
        echo "FAIL $name: timed out after ${tmo}s"
        tail -n 30 "$log" | sed 's/^/    /'
        ;;
    *)
        failed=$((failed + 1))
        failures="$failures $name"
        echo "FAIL $name (exit $rc, ${secs}s)"
        tail -n 30 "$log" | sed 's/^/    /'
        ;;
    esac
}

run_integration() {
    for s in tests/integration/[0-9][0-9][0-9]-*.sh; do
        [ -f "$s" ] || continue
        selected "$(basename "$s")" || continue
        case "${1:-}" in
        tsan) grep -q '^# TSAN: yes' "$s" || continue ;;
        soak) grep -q '^# SOAK: yes' "$s" || continue ;;
        *)
            if [ -n "${SQC_SANITIZE:-}" ] && grep -q '^# SANITIZE: no' "$s"; then
                unsanitized="$unsanitized $(basename "$s" .sh)"
                continue
            fi
            ;;
        esac
        run_script "$s"
    done
}

case "${1:-all}" in
unit) run_unit ;;
integration) run_integration ;;
all) run_unit; run_integration ;;
tsan) run_unit tsan; run_integration tsan ;;
soak) run_integration soak ;;
*) echo "usage: $0 unit|integration|all|tsan|soak" >&2; exit 2 ;;
esac

if [ -n "$unsanitized" ]; then
    echo "left to the plain run (# SANITIZE: no):$unsanitized"
fi
if [ -n "$failures" ]; then
    echo "failed:$failures (logs in $logs/)"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

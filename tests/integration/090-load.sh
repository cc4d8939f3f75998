#!/bin/sh
# Load: 64 concurrent readers of random files for a bounded time (60 s
# here, 10 s under a sanitizer, 10 minutes in `make soak`), every byte
# checked against CRCs of the source; the daemon's peak RSS stays within
# its budgets, inside a memory cgroup that allows little more, and no fd
# or thread leaks.  The mount's page cache is dropped every second (by
# the readers' tool, for the mount's files only), so that the kernel does
# not answer every read.
# TIMEOUT: 400
# TSAN: yes
# SOAK: yes
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs

secs=${SQC_SOAK_SECONDS:-60}
# A sanitizer build is several times slower per request, and checks no
# bound that depends on the length (a sanitizer's shadow memory says
# nothing of the budgets; fds and threads are counted once idle): its run
# is shorter, tens of thousands of requests, a plain run's first seconds.
[ -n "${SQC_SANITIZE:-}" ] && [ -z "${SQC_SOAK_SECONDS:-}" ] && secs=10
half=$((secs / 2))
cache_mb=16
meta_mb=4
ram_mb=32
# What the daemon may hold beyond its budgets: libfuse's request buffers,
# thread stacks in use, per-thread decompression scratch, the binary.
slack_mb=48

note "making a tree of ~1200 files"
"$PYTHON" - "$T/src" <<'PY'
import os, random, sys
root = sys.argv[1]
rnd = random.Random(1234)
words = [b"alpha", b"beta", b"gamma", b"delta", b"epsilon", b"zeta"]
for d in range(30):
    os.makedirs(os.path.join(root, "d%02d" % d))
    for i in range(40):
        size = int(rnd.choice([600, 3000, 20000, 90000, 150000, 400000]) * rnd.uniform(0.5, 1.5))
        if i % 2:
            data = rnd.randbytes(size)
        else:
            data = b" ".join(rnd.choice(words) for _ in range(size // 5))[:size]
        with open(os.path.join(root, "d%02d" % d, "f%03d" % i), "wb") as f:
            f.write(data)
PY
mkimg "$T/src" "$T/img.sqfs" -comp zstd -b 64K
"$TOOLS/stress" --manifest "$T/src" >"$T/manifest"
note "$(wc -l <"$T/manifest") files, image $(du -m "$T/img.sqfs" | cut -f1) MiB"

budget_kb=$(((cache_mb + meta_mb + ram_mb) * 1024))
limit_kb=$((budget_kb + slack_mb * 1024))
# A sanitizer's shadow memory says nothing about the daemon's budgets.
if [ -n "${SQC_SANITIZE:-}" ]; then
    note "built with -fsanitize=$SQC_SANITIZE: memory bounds not checked"
    limit_kb=$((limit_kb * 1000))
fi
cg=""
if [ -z "${SQC_SANITIZE:-}" ] && [ "$(id -u)" -eq 0 ] && [ -d /sys/fs/cgroup/memory ]; then
    cg=/sys/fs/cgroup/memory/sqc-load-$$
    mkdir "$cg"
    at_exit "rmdir $cg 2>/dev/null || true"
    echo $((limit_kb * 1024)) >"$cg/memory.limit_in_bytes"
fi

# peak_kb PID: the most the daemon ever held resident (VmHWM).
peak_kb() {
    sed -n 's/^VmHWM:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$1/status"
}

# run_phase NAME MOUNT-OPTIONS SECONDS
run_phase() {
    name=$1
    mkdir -p "$T/m"
    sqc_mount "$T/img.sqfs" "$T/m" -o "cache=${cache_mb}M,meta=${meta_mb}M,ram=${ram_mb}M,stage=full,threads=16,log=$T/daemon-$name.log${2:+,$2}"
    pid=$(sqc_pid "$T/m")
    [ -n "$cg" ] && echo "$pid" >"$cg/cgroup.procs"
    # Staging done: the daemon's threads and files of a mount at rest.
    "$MOUNTCTL" wait --timeout 60 "$T/m" >/dev/null 2>&1 || fail "$name: staging did not end"
    fds0=$(ls "/proc/$pid/fd" | wc -l)
    # shellcheck disable=SC2086 # no option, or two words
    "$TOOLS/stress" $drop "$T/m" "$T/manifest" 64 "$3" 42 >"$T/stress-$name.out" 2>&1 ||
        { cat "$T/stress-$name.out"; fail "$name: readers saw errors"; }
    kill -0 "$pid" 2>/dev/null || fail "$name: the daemon died"
    peak=$(peak_kb "$pid")
    note "$name: $(cat "$T/stress-$name.out")"
    threads=$(sed -n 's/^Threads:[^0-9]*//p' "/proc/$pid/status")
    fds_end=$(ls "/proc/$pid/fd" | wc -l)
    # Nothing may change once the readers are gone: watched for 2 s, in
    # which every thread of the daemon that wakes by itself (the stager's
    # watch and the idle check, once a second) runs at least once.
    watch_for 2 "fds and threads of an idle daemon" \
        '[ "$(ls "/proc/$pid/fd" | wc -l)" -eq "$fds_end" ] &&
         [ "$(sed -n "s/^Threads:[^0-9]*//p" "/proc/$pid/status")" -le "$threads" ]'
    fds1=$(ls "/proc/$pid/fd" | wc -l)
    threads1=$(sed -n 's/^Threads:[^0-9]*//p' "/proc/$pid/status")
    note "$name: peak RSS $((peak / 1024)) MiB (budgets $(((budget_kb) / 1024)) MiB + slack $slack_mb), fds $fds0 -> $fds_end -> $fds1, threads $threads -> $threads1"
    [ "$peak" -le "$limit_kb" ] || fail "$name: RSS $((peak / 1024)) MiB exceeds the budgets + $slack_mb MiB"
    # Each worker thread may hold two splice pipes (ours and libfuse's):
    # bounded by the thread count, never growing with the work done.
    [ "$fds1" -le $((fds0 + 4 * threads)) ] ||
        { ls -l "/proc/$pid/fd"; fail "$name: $fds1 fds for $threads threads"; }
    [ "$fds1" -eq "$fds_end" ] || fail "$name: fds changed while idle ($fds_end -> $fds1)"
    # 16 FUSE workers, main, ready, 8 daemon threads at most and 15 more
    # stager threads (16 in all); the ThreadSanitizer runtime adds two.
    tmax=$((16 + 2 + 8 + 15))
    [ -n "${SQC_TSAN:-}" ] && tmax=$((tmax + 2))
    [ "$threads1" -le "$tmax" ] || fail "$name: $threads1 threads (at most $tmax)"
    [ "$threads1" -le "$threads" ] || fail "$name: threads grew while idle ($threads -> $threads1)"
    if [ -n "$cg" ]; then
        oom=$(sed -n 's/^oom_kill //p' "$cg/memory.oom_control")
        [ "${oom:-0}" -eq 0 ] || fail "$name: the OOM killer ran in the daemon's cgroup"
        note "$name: cgroup peak $(($(cat "$cg/memory.max_usage_in_bytes") / 1048576)) MiB of $((limit_kb / 1024)) MiB allowed"
    fi
    grep -qi error "$T/daemon-$name.log" && { cat "$T/daemon-$name.log"; fail "$name: errors in the log"; }
    sqc_umount "$T/m"
}

drop="--drop-every 1"
run_phase page-cache "" "$half"
drop=
run_phase direct-io "direct_io" "$((secs - half))"
echo "load checks passed"

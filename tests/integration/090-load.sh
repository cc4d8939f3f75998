#!/bin/sh
# Load: 64 concurrent readers of random files for a bounded time (60 s
# here, 30 s under ASan, 20 s under TSan, 10 minutes in `make soak`),
# every byte checked against CRCs of the source; the daemon's RSS stays
# within its budgets, inside a memory cgroup that allows little more, and
# no fd or thread leaks.
# TIMEOUT: 400
# TSAN: yes
# SOAK: yes
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs

secs=${SQC_SOAK_SECONDS:-60}
# A sanitizer build is several times slower per request: its run is
# shorter, for as many requests as a plain run's first seconds.
[ -n "${SQC_SANITIZE:-}" ] && [ -z "${SQC_SOAK_SECONDS:-}" ] && secs=30
[ "${SQC_TSAN:-0}" = 1 ] && secs=20
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

rss_kb() {
    sed -n 's/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$1/status"
}

# run_phase NAME MOUNT-OPTIONS SECONDS
run_phase() {
    name=$1
    mkdir -p "$T/m"
    sqc_mount "$T/img.sqfs" "$T/m" -o "cache=${cache_mb}M,meta=${meta_mb}M,ram=${ram_mb}M,stage=full,threads=16,log=$T/daemon-$name.log${2:+,$2}"
    pid=$(sqc_pid "$T/m")
    [ -n "$cg" ] && echo "$pid" >"$cg/cgroup.procs"
    sleep 1
    fds0=$(ls "/proc/$pid/fd" | wc -l)
    "$TOOLS/stress" "$T/m" "$T/manifest" 64 "$3" 42 >"$T/stress-$name.out" 2>&1 &
    spid=$!
    peak=0
    while kill -0 $spid 2>/dev/null; do
        r=$(rss_kb "$pid" || echo 0)
        [ "${r:-0}" -gt "$peak" ] && peak=$r
        # Keep the kernel's page cache from answering everything.
        [ "$(id -u)" -eq 0 ] && echo 1 >/proc/sys/vm/drop_caches
        sleep 1
    done
    wait $spid || { cat "$T/stress-$name.out"; fail "$name: readers saw errors"; }
    kill -0 "$pid" 2>/dev/null || fail "$name: the daemon died"
    note "$name: $(cat "$T/stress-$name.out")"
    threads=$(sed -n 's/^Threads:[^0-9]*//p' "/proc/$pid/status")
    fds_end=$(ls "/proc/$pid/fd" | wc -l)
    sleep 2
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

run_phase page-cache "" "$half"
run_phase direct-io "direct_io" "$((secs - half))"
echo "load checks passed"

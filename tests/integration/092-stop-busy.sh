#!/bin/sh
# TIMEOUT: 600
# TSAN: yes
# SIGTERM while warming pushes files that readers are reading (daemon/stop.c).
# Checks that:
#   - the daemon ends within 10 s every time, unmounted, with status 0: its
#     warming thread is stopped while the FUSE workers still answer, so a
#     push never waits for ever on a page that a reader's queued READ holds
#     locked.  Before, such a push could wait for ever: by hand under
#     ASan 5 runs of 90 hung in the kernel, the daemon unkillable, its
#     readers with it (this test's 40 runs catch that only sometimes);
#   - the log says which signal stopped it, and nothing went wrong.
# SQC_STOP_RUNS sets the number of runs (default 40).
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs

note "a tree of 12 directories of files up to 2 MB"
rand_tree "$T/src" 92 12 30 500 9000 70000 300000 2000000
mkimg "$T/src" "$T/img.sqfs" -comp zstd

# A hung daemon cannot be killed: at exit, the connection of each of this
# test's mount points still mounted is aborted (lib.sh's abort_at_exit),
# so that nothing is left behind when this test fails.

runs=${SQC_STOP_RUNS:-40}
pushed=0
i=0
while [ $i -lt "$runs" ]; do
    i=$((i + 1))
    m="$T/m$i"
    sqc_mount_fg "$T/img.sqfs" "$m" -o "warm=256M,statahead=0,no_uring"
    pid=$SQC_PID
    abort_at_exit "$m"
    # The listing makes the inodes warming pushes to; a read starts it.
    ls -R "$m" >/dev/null
    cat "$m/d3/f000" >/dev/null
    # Walks reading every file, in two orders, while warming pushes.
    ( find "$m" -type f -exec cat {} + >/dev/null 2>&1 ) &
    w1=$!
    ( find "$m" -type f | sort -r | xargs cat >/dev/null 2>&1 ) &
    w2=$!
    sleep "0.0$((i % 10))"
    n=$(stat_of "$m" warm.files)
    pushed=$((pushed + n))
    kill -TERM "$pid"
    wait_gone "$pid" 10 "run $i: the daemon after SIGTERM (warming had pushed $n files)"
    st=0
    wait "$pid" || st=$?
    kill "$w1" "$w2" 2>/dev/null || true
    wait "$w1" "$w2" 2>/dev/null || true
    [ "$st" -eq 0 ] || { cat "$T/daemon-fg.log" >&2; fail "run $i: exit status $st after SIGTERM"; }
    ! is_mounted "$m" || fail "run $i: still mounted after SIGTERM"
    grep -q "unmounting '$m' on Terminated" "$T/daemon-fg.log" ||
        fail "run $i: the log does not say SIGTERM stopped it: $(cat "$T/daemon-fg.log")"
    ! grep -Ei "error|cannot|fail|warn" "$T/daemon-fg.log" ||
        fail "run $i: errors logged"
done
note "$runs runs ended on SIGTERM; warming had pushed $pushed files by the signals"
[ "$pushed" -gt 0 ] || fail "warming pushed nothing before any signal: the test shows nothing"
echo "stop checks passed"

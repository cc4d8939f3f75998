#!/bin/sh
# TIMEOUT: 300
# ALONE: sets the fuse module's enable_uring
# TSAN: yes
# The daemon's features (daemon/main.c, features[]) started and stopped
# alone and all together: warming, listing ahead (and statahead=all),
# io_uring, the idle timeout.  For each set, the daemon runs in the
# foreground and checks that:
#   - the stats say which features run, and the files read back right;
#   - SIGTERM, with a reader holding a file open and a walk under way,
#     stops every feature in the documented order: the daemon exits with
#     status 0 within 10 s, unmounted, with nothing logged as an error;
#   - under ASan/LSan and TSan (the sanitizer runs of make check), a leak,
#     a thread left running or a race on the way out fails the test.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs

note "a tree of 12 directories of files"
mkdir -p "$T/src"
"$PYTHON" - "$T/src" <<'PY'
import os, random, sys
r = random.Random(87)
for d in range(12):
    os.makedirs(f"{sys.argv[1]}/d{d:02d}")
    for f in range(30):
        with open(f"{sys.argv[1]}/d{d:02d}/f{f:02d}", "wb") as o:
            o.write(r.randbytes(r.choice([500, 9000, 70000, 300000])))
PY
mkimg "$T/src" "$T/img.sqfs" -comp zstd

# io_uring needs the fuse module's enable_uring: on for this test where
# the kernel has it, back as it was at exit.
P=/sys/module/fuse/parameters/enable_uring
uring=no
if [ -w "$P" ]; then
    old=$(cat "$P")
    at_exit "echo '$old' >'$P'"
    echo Y >"$P"
    uring=yes
else
    note "this kernel's fuse module has no io_uring: that feature runs off"
fi

off="warm=0,statahead=0,no_uring"
# run NAME OPTIONS CHECK...: mount with OPTIONS, check "KEY OP VALUE"
# triples against the stats, read and walk, then stop with SIGTERM.
run() {
    name=$1
    opts=$2
    shift 2
    note "$name ($opts)"
    sqc_mount_fg "$T/img.sqfs" "$T/m" -o "$opts"
    pid=$SQC_PID
    # In the foreground nobody waits for statahead=all: wait here.
    case $opts in
    *statahead=all*)
        i=0
        while [ "$(stat_of "$T/m" statahead.all_state)" = running ]; do
            i=$((i + 1))
            [ $i -lt 200 ] || fail "$name: statahead=all still running after 10 s"
            sleep 0.05
        done
        ;;
    esac
    while [ $# -ge 3 ]; do
        v=$(stat_of "$T/m" "$1")
        case $2 in
        eq) [ "$v" = "$3" ] || fail "$name: $1 is $v, not $3" ;;
        ge) [ "$v" -ge "$3" ] || fail "$name: $1 is $v, below $3" ;;
        esac
        shift 3
    done
    for d in d00 d05 d11; do
        for f in "$T/src/$d"/*; do
            cmp -s "$f" "$T/m/$d/${f##*/}" || fail "$name: $d/${f##*/} differs"
        done
    done
    # A reader holding a file open, and a walk, while SIGTERM comes.
    ( exec 3<"$T/m/d03/f00" && exec sleep 30 ) &
    holder=$!
    rm -f "$T/walking"
    ( find "$T/m" -type f | while read -r f; do
        cat "$f" >/dev/null 2>&1 || exit 0
        [ -e "$T/walking" ] || : >"$T/walking"
    done ) &
    walker=$!
    # The file held open, and the walk under way (a file read).
    wait_until 10 "$name: the holder did not open its file" \
        'readlink "/proc/$holder/fd/3" 2>/dev/null | grep -q "/m/d03/f00\$"'
    wait_until 10 "$name: the walk did not start" '[ -e "$T/walking" ]'
    kill -TERM "$pid"
    wait_gone "$pid" 10 "$name: daemon after SIGTERM"
    st=0
    wait "$pid" || st=$?
    kill "$holder" 2>/dev/null || true
    wait "$walker" 2>/dev/null || true
    [ "$st" -eq 0 ] || { cat "$T/daemon-fg.log" >&2; fail "$name: exit status $st after SIGTERM"; }
    ! is_mounted "$T/m" || fail "$name: still mounted after SIGTERM"
    # In the foreground the daemon logs to stderr (daemon-fg.log).
    [ -s "$T/daemon-fg.log" ] || fail "$name: the daemon logged nothing"
    ! grep -Ei "error|cannot|fail|warn" "$T/daemon-fg.log" ||
        fail "$name: errors logged"
}

run none "$off" \
    warm.budget eq 0 statahead.window eq 0 fuse.uring_threads eq 0 \
    idle.timeout eq 0
run warming "warm=64M,statahead=0,no_uring" \
    warm.budget ge 1 statahead.window eq 0 fuse.uring_threads eq 0
run listing-ahead "warm=0,statahead=4096,no_uring" \
    warm.budget eq 0 statahead.window eq 4096 fuse.uring_threads eq 0
run statahead-all "warm=0,statahead=all,statahead_wait=10,no_uring" \
    statahead.all_state eq "done" statahead.all_dirs ge 13
run idle-timeout "$off,timeout=60" \
    idle.timeout eq 60 warm.budget eq 0
if [ "$uring" = yes ]; then
    run io_uring "warm=0,statahead=0" \
        fuse.uring_threads ge 2 warm.budget eq 0 statahead.window eq 0
    run all "timeout=60" \
        fuse.uring_threads ge 2 warm.budget ge 1 statahead.window ge 1 \
        idle.timeout eq 60
else
    run all "timeout=60" \
        warm.budget ge 1 statahead.window ge 1 idle.timeout eq 60
fi
note "each feature alone and all together start, serve and stop cleanly"

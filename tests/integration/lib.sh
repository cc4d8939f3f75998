# Shared helpers for tests/integration/NNN-name.sh; source it first.
#
# Each test gets a private work directory ($T) and an EXIT trap that
# unmounts whatever the test mounted and kills the daemons it started, so
# a failing test leaves nothing behind.  Readiness comes from the daemon
# itself: squashcached without -f returns only once the mount answers.
#
#   skip "reason"        exit 77 (the runner prints the reason)
#   fail "reason"        exit 1
#   need_root / need_fuse / need_cmd CMD / need_kernel_squashfs
#   sqc_mount IMG MNT [squashcached args...]   mount, register cleanup
#   sqc_umount MNT       unmount and wait for the daemon to exit
#   wait_gone PID SECONDS WHAT                  wait for a process to exit
#   kmount IMG MNT       kernel squashfs loop mount (root), registered
#   mkimg SRC IMG [mksquashfs args...]          pack quietly, no progress
#   at_exit 'COMMANDS'   run COMMANDS at exit, before the unmounts
#   hold_reclaim         pause proactive reclaim (DAMON) until exit
#   drop_file_cache PATH...  drop the page cache of these files only
#   abort_at_exit MNT    at exit, abort MNT's FUSE connection if still there
#   fuse_abort MNT       abort MNT's FUSE connection now, if there
#   stat_of MNT KEY      one value of the daemon's stats (KEY like fuse.read)
#   wait_stat MNT KEY MIN SECONDS WHAT         wait for a stat to reach MIN
#   wait_until SECONDS WHAT CONDITION           wait for shell code to hold
#   watch_for SECONDS WHAT CONDITION            assert it holds that long
#   need_test_users      two users for this run, $TU_A and $TU_B (root)
#   add_test_user VAR    one more, its name in $VAR (root)
#   as USER CMD...       CMD run as one of them
#   stage_public         what test users and nodes run, copied to $PTOP
# shellcheck shell=sh

set -eu

TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
PYTHON=${PYTHON:-/usr/bin/python3}
SQUASHCACHED="$BUILD/squashcached"
MOUNTCTL="$BUILD/mountctl"
TOOLS="$BUILD/tests/tools"
export SQUASHCACHED MOUNTCTL TOOLS PYTHON BUILD TOP
# BUILD for `make -C "$TOP" BUILD=...`: relative to the tree where it is
# in it, as make cannot take a path with spaces (the tree's may have).
MAKE_BUILD=${BUILD#"$TOP"/}
export MAKE_BUILD

T=$(mktemp -d "${SQC_TMPDIR:-/tmp}/sqc-test.XXXXXX")
# stage_public's copy is this test's own, not one a parent test made.
unset PTOP

# A detached daemon's stderr is /dev/null: sanitizer reports go to files
# under $T instead, and any report fails the test (see _cleanup).
if [ -n "${SQC_SANITIZE:-}" ]; then
    _san="log_path=$T/sanitizer-report"
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}$_san"
    UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}$_san"
    TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}$_san"
    export ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS
fi
_mounts=""
_pids=""
_hooks=""

at_exit() {
    _hooks="$_hooks
$1"
}

_cleanup() {
    rc=$?
    if [ -n "$_hooks" ]; then
        eval "$_hooks" || true
    fi
    for m in $_mounts; do
        if is_mounted "$m"; then
            fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        fi
    done
    for p in $_pids; do
        kill "$p" 2>/dev/null || true
    done
    for u in $_users; do
        _tu_remove "$u" || rc=1
    done
    for r in "$T"/sanitizer-report.*; do
        [ -s "$r" ] || continue
        echo "FAIL: sanitizer report from ${r##*.}:" >&2
        head -n 40 "$r" >&2
        rc=1
    done
    if [ "${SQC_KEEP:-0}" = 1 ]; then
        echo "kept work directory $T"
    else
        rm -rf "$T" 2>/dev/null || true
    fi
    exit $rc
}
trap _cleanup EXIT
trap 'exit 130' INT TERM

# A test that asserts the page cache keeps what was put there needs a
# machine that does not take it away behind the test's back.  DAMON's
# proactive reclaim (kdamond, seen on this project's VMs) ages physical
# regions, not pages: a page stored into an old region is paged out within
# seconds if nobody has read it yet.  Pause every running kdamond (root
# only) and start it again at exit with the parameters it had.
hold_reclaim() {
    for _hr in /sys/kernel/mm/damon/admin/kdamonds/*/state; do
        [ -w "$_hr" ] && [ "$(cat "$_hr")" = on ] || continue
        echo off >"$_hr" || continue
        echo "paused proactive reclaim (${_hr%/state}) for this test"
        at_exit "echo on >'$_hr'"
    done
}

# drop_file_cache PATH...: drop the kernel's page cache of each file
# PATH, and of every file under each directory PATH (posix_fadvise
# DONTNEED): what drop_caches does to their pages, without dropping
# everyone else's (the dentries and inodes stay).
drop_file_cache() {
    "$PYTHON" - "$@" <<'PY' || fail "drop_file_cache $*"
import os, sys
for top in sys.argv[1:]:
    if os.path.isdir(top):
        files = [os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs]
    else:
        files = [top]
    for p in files:
        if os.path.islink(p) or not os.path.isfile(p):
            continue
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
PY
}

skip() {
    echo "SKIP: $*"
    exit 77
}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

note() {
    echo "--- $*"
}

need_root() {
    [ "$(id -u)" -eq 0 ] || skip "needs root"
}

need_cmd() {
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || skip "needs '$c' (not installed)"
    done
}

# stage_public: a copy of what test users and a cluster's nodes run or
# read, in $PTOP (under $T, root's, mode 0755), laid out as the checkout
# is: build/ (squashcached, mountctl, squashcache_spank.so, tests/tools/),
# slurm/hooks, slurm/examples, tests/py, python.  SQUASHCACHED, MOUNTCTL
# and TOOLS name the copies from then on.  The checkout may be where they
# cannot go (a 0700 home) or what a node does not see (/tmp, which the
# cluster's nodes have a private one of), and its path may hold spaces.
stage_public() {
    [ -z "${PTOP:-}" ] || return 0
    PTOP=$T/for-users
    mkdir -p "$PTOP/build/tests/tools" "$PTOP/slurm" "$PTOP/tests"
    cp "$BUILD/squashcached" "$BUILD/mountctl" "$PTOP/build/"
    [ ! -f "$BUILD/squashcache_spank.so" ] || cp "$BUILD/squashcache_spank.so" "$PTOP/build/"
    for _sp in "$BUILD"/tests/tools/*; do
        [ -f "$_sp" ] && [ -x "$_sp" ] && cp "$_sp" "$PTOP/build/tests/tools/"
    done
    cp -R "$TOP/slurm/hooks" "$TOP/slurm/examples" "$PTOP/slurm/"
    cp -R "$TOP/tests/py" "$PTOP/tests/"
    cp -R "$TOP/python" "$PTOP/"
    chmod -R u+rwX,go+rX,go-w "$PTOP"
    chmod 755 "$T"
    SQUASHCACHED=$PTOP/build/squashcached
    MOUNTCTL=$PTOP/build/mountctl
    TOOLS=$PTOP/build/tests/tools
    export SQUASHCACHED MOUNTCTL TOOLS PTOP
    # Every directory above $T must let others through.
    setpriv --reuid=65534 --regid=65534 --clear-groups -- test -x "$MOUNTCTL" ||
        fail "other users cannot reach $T: set SQC_TMPDIR to a directory they can (e.g. /var/tmp)"
}

# Users made for this run: "sqct<pid>u<n>", the pid this test's shell.
# Each is removed at exit, after the unmounts, with its processes, and
# its entry in /dev/fuse's ACL (the users' access to it: the device's
# mode is never changed, as other tests run at the same time).  Changes
# to the user database and to the ACL are made under one lock; a user
# whose test is gone without its exit (SIGKILL) is removed by the next
# run that makes one.
_users=""
_tu_n=0
_tu_lock=/run/squashcache-test-users.lock

_tu_remove() {
    _tr_i=0
    while pkill -9 -u "$1" 2>/dev/null; do
        _tr_i=$((_tr_i + 1))
        [ $_tr_i -lt 100 ] || break
        sleep 0.05
    done
    flock "$_tu_lock" sh -c '
        setfacl -x "u:$1" /dev/fuse 2>/dev/null
        # No other named entry left: the ACL as it was, mode included.
        getfacl -cp /dev/fuse 2>/dev/null | grep -q "^\(user\|group\):[^:]" ||
            setfacl -b /dev/fuse
        i=0
        until userdel "$1" 2>/dev/null || ! id "$1" >/dev/null 2>&1; do
            i=$((i + 1))
            [ $i -lt 50 ] || { echo "cannot remove user $1" >&2; exit 1; }
            sleep 0.1
        done' sh "$1"
}

# _tu_sweep: users of this kind whose test shell is gone.
_tu_sweep() {
    for _ts in $(getent passwd | sed -n 's/^\(sqct\([0-9]*\)u[0-9]*\):.*/\1 \2/p' | tr ' ' ':'); do
        [ -d "/proc/${_ts#*:}" ] || _tu_remove "${_ts%:*}"
    done
}

add_test_user() {
    need_root
    need_cmd useradd userdel setpriv setfacl getfacl flock pkill
    _tu_sweep
    _tu_n=$((_tu_n + 1))
    _tu=sqct$$u$_tu_n
    flock "$_tu_lock" useradd --system --no-create-home --home-dir /nonexistent \
        --shell /bin/sh "$_tu" || fail "cannot add test user $_tu"
    _users="$_users $_tu"
    flock "$_tu_lock" setfacl -m "u:$_tu:rw" /dev/fuse ||
        fail "cannot give $_tu /dev/fuse (setfacl)"
    eval "$1=\$_tu"
    stage_public
}

# need_test_users: two users of this run, $TU_A and $TU_B, for tests of
# what one user may do to another's mount (needs root); their programs
# from stage_public.  $T is readable by them (and writable with
# SQC_SANITIZE, whose reports of their processes go there).
need_test_users() {
    add_test_user TU_A
    add_test_user TU_B
    chmod 755 "$T"
    [ -z "${SQC_SANITIZE:-}" ] || chmod 1777 "$T"
}

# as USER CMD...: run CMD as USER with USER's groups (no PAM session: the
# environment is this shell's).
as() {
    _as_u=$1
    shift
    setpriv --reuid="$_as_u" --regid="$(id -g "$_as_u")" --init-groups -- "$@"
}

need_fuse() {
    [ -c /dev/fuse ] || skip "no /dev/fuse on this machine"
    [ -x "$SQUASHCACHED" ] || fail "$SQUASHCACHED not built"
    if [ "$(id -u)" -ne 0 ] && ! [ -r /dev/fuse ] && ! [ -w /dev/fuse ]; then
        skip "/dev/fuse is not accessible to uid $(id -u)"
    fi
}

need_kernel_squashfs() {
    need_root
    grep -qw squashfs /proc/filesystems || modprobe squashfs 2>/dev/null || true
    grep -qw squashfs /proc/filesystems || skip "kernel has no squashfs"
}

# Is MNT a mount point right now?  (/proc, not stat: stat on another
# user's FUSE mount fails even for root.)  MNT is compared as a string
# with each mount point, unescaped as /proc writes it.
is_mounted() {
    _im=$1 awk 'BEGIN { m = ENVIRON["_im"] }
        { p = $2; gsub(/\\040/, " ", p); gsub(/\\011/, "\t", p)
          gsub(/\\012/, "\n", p); gsub(/\\134/, "\\", p)
          if (p == m) { found = 1; exit } }
        END { exit !found }' /proc/self/mounts
}

sqc_mount() {
    _sm_img=$1
    _sm_mnt=$2
    shift 2
    mkdir -p "$_sm_mnt"
    _mounts="$_sm_mnt $_mounts"
    "$SQUASHCACHED" "$@" "$_sm_img" "$_sm_mnt" || return $?
    is_mounted "$_sm_mnt" || fail "squashcached returned 0 but $_sm_mnt is not mounted"
}

# start_faultfs FILE MOUNTPOINT FAILFILE: serve FILE through
# tests/tools/faultfs (FAULTFS_LOG, FAULTFS_DELAY_US from the environment)
# in the background, its stderr in $T/faultfs.log, and wait for the mount.
start_faultfs() {
    mkdir -p "$2"
    _mounts="$2 $_mounts"
    "$TOOLS/faultfs" "$1" "$2" "$3" 2>"$T/faultfs.log" &
    _pids="$! $_pids"
    _ff_i=0
    while ! is_mounted "$2"; do
        _ff_i=$((_ff_i + 1))
        [ $_ff_i -lt 250 ] || fail "faultfs did not mount"
        sleep 0.02
    done
}

# Run the daemon in the foreground (-f) in the background of this shell,
# and wait until the mount answers.  Sets SQC_PID.
sqc_mount_fg() {
    _sf_img=$1
    _sf_mnt=$2
    shift 2
    mkdir -p "$_sf_mnt"
    _mounts="$_sf_mnt $_mounts"
    "$SQUASHCACHED" -f "$@" "$_sf_img" "$_sf_mnt" >"$T/daemon-fg.log" 2>&1 &
    SQC_PID=$!
    _pids="$SQC_PID $_pids"
    _sf_i=0
    while ! is_mounted "$_sf_mnt"; do
        kill -0 "$SQC_PID" 2>/dev/null || { cat "$T/daemon-fg.log" >&2; fail "squashcached -f exited"; }
        _sf_i=$((_sf_i + 1))
        [ $_sf_i -lt 500 ] || fail "mount did not appear within 10 s"
        sleep 0.02
    done
    stat "$_sf_mnt" >/dev/null
}

# The pid of the daemon serving MNT: a squashcached whose last argument
# is MNT, compared as a string (a path may hold '.', '[', '+').  With a
# second argument, "detached", only the daemon that has detached: the
# process that mounts forks it and exits once the mount answers, so
# until then the one found may be about to exit.
sqc_pid() {
    for _sp in $(pgrep -f squashcached); do
        [ "$(tr '\0' '\n' <"/proc/$_sp/cmdline" 2>/dev/null | tail -n 1)" = "$1" ] || continue
        if [ "${2:-}" = detached ]; then
            [ "$(ps -o sid= -p "$_sp" | tr -d ' ')" = "$_sp" ] || continue
        fi
        echo "$_sp"
        return 0
    done
}

# keepers PATTERN: the pids of the keepers whose command line matches
# PATTERN (pgrep -f), not their reaper and its closers (children that
# run with the same command line)
keepers() {
    _kp=$(pgrep -f "$1" || true)
    _kl=" $(echo "$_kp" | tr '\n' ' ')"
    for _p in $_kp; do
        _st=$(cat "/proc/$_p/status" 2>/dev/null || true)
        _pp=$(echo "$_st" | sed -n 's/^PPid:[[:space:]]*//p')
        # Gone since pgrep saw it (a closer of the reaper's ends at once),
        # or the reaper or a closer by name (either outlives the keeper
        # while it hands out what it holds): not a keeper.
        case "$(echo "$_st" | sed -n 's/^Name:[[:space:]]*//p')" in
        '' | keeper-reaper | keeper-closer) continue ;;
        esac
        case "$_kl" in *" $_pp "*) ;; *) echo "$_p" ;; esac
    done
}

# wait_gone PID SECONDS WHAT: wait for process PID to exit; fail with
# "WHAT still running after SECONDS s" if it has not by then.
wait_gone() {
    _wg_i=0
    # A zombie has exited (init may reap it late), but only once no other
    # thread is left: a killed process's leader is a zombie while its
    # other threads still exit, and its files (a daemon's /dev/fuse) are
    # closed by the last one.
    while kill -0 "$1" 2>/dev/null &&
        { [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ] ||
            [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -gt 1 ]; }; do
        _wg_i=$((_wg_i + 1))
        [ $_wg_i -lt $(($2 * 50)) ] || fail "$3 still running after $2 s"
        sleep 0.02
    done
}

sqc_umount() {
    _su_mnt=$1
    _su_pid=$(sqc_pid "$_su_mnt" || true)
    # The daemon may be listing a directory ahead of a reader (statahead):
    # while it is, a plain unmount finds the mount busy, as with any open
    # directory.  Such a listing takes milliseconds: try again for 2 s.
    _su_i=0
    until fusermount3 -u "$_su_mnt" 2>/dev/null || umount "$_su_mnt" 2>/dev/null; do
        _su_i=$((_su_i + 1))
        [ $_su_i -lt 40 ] || fail "cannot unmount $_su_mnt: $(fusermount3 -u "$_su_mnt" 2>&1)"
        sleep 0.05
    done
    if [ -n "$_su_pid" ]; then
        # It frees its caches and exits (seconds under ASan); 60 s: a
        # machine at a load of 27 took over 10.
        wait_gone "$_su_pid" 60 "daemon $_su_pid (unmounted)"
    fi
    ! is_mounted "$_su_mnt" || fail "$_su_mnt still mounted"
}

stat_of() {
    "$MOUNTCTL" status --json "$1" | "$PYTHON" -c 'import json, sys
v = json.load(sys.stdin)[0]
for k in sys.argv[1].split("."):
    v = v[k]
print(v)' "$2"
}

# wait_stat MNT KEY MIN SECONDS WHAT: wait until the daemon's stat KEY
# (see stat_of) is at least MIN; fail with WHAT if it is not within
# SECONDS.
wait_stat() {
    _ws_i=0
    until [ "$(stat_of "$1" "$2")" -ge "$3" ]; do
        _ws_i=$((_ws_i + 1))
        [ $_ws_i -lt $(($4 * 20)) ] || fail "$5 ($2: $(stat_of "$1" "$2") after $4 s)"
        sleep 0.05
    done
}

# wait_done MNT SECONDS: wait until the daemon of MNT has staged all it
# will (stage.state "done"); fail, with the bytes staged, if it has not
# within SECONDS.
wait_done() {
    _wd_i=0
    until [ "$(stat_of "$1" stage.state)" = "done" ]; do
        _wd_i=$((_wd_i + 1))
        [ $_wd_i -lt $(($2 * 50)) ] || fail "$1 not staged within $2 s ($(stat_of "$1" stage.staged) bytes)"
        sleep 0.02
    done
}

# now_ms: the wall clock in milliseconds.
now_ms() {
    echo $(($(date +%s%N) / 1000000))
}

# wait_until SECONDS WHAT CONDITION: wait until CONDITION (shell code)
# holds, looking every 20 ms; fail with WHAT if it does not within
# SECONDS (fractions allowed).  The bound is generous: it only ends a
# wait for something that is not coming.
wait_until() {
    _wu_end=$(($(now_ms) + $(awk -v s="$1" 'BEGIN { printf "%d", s * 1000 }')))
    until eval "$3"; do
        [ "$(now_ms)" -lt "$_wu_end" ] || fail "$2 (not within $1 s)"
        sleep 0.02
    done
}

# watch_for SECONDS WHAT CONDITION: assert that nothing happens, that
# CONDITION (shell code) holds from now for SECONDS (fractions allowed),
# looking every 50 ms; fail naming WHAT at the first look where it does
# not.  The caller says why SECONDS is long enough for it to show.
watch_for() {
    _wf_end=$(($(now_ms) + $(awk -v s="$1" 'BEGIN { printf "%d", s * 1000 }')))
    while :; do
        eval "$3" || fail "$2: changed within $1 s"
        [ "$(now_ms)" -lt "$_wf_end" ] || break
        sleep 0.05
    done
    note "$2: unchanged for $1 s"
}

# fuse_conn MNT: the FUSE connection (its number in
# /sys/fs/fuse/connections) of what is mounted at MNT now, or nothing.
fuse_conn() {
    awk -v m="$1" '$5 == m { split($3, d, ":"); c = d[2] } END { if (c != "") print c }' \
        /proc/self/mountinfo
}

# abort_at_exit MNT: if the test fails with a mount at MNT whose daemon
# hangs, abort its connection at exit, so that nothing stays behind.  The
# number is looked up then: once MNT is unmounted, the number it had may
# be another test's mount.
abort_at_exit() {
    at_exit "fuse_abort '$1'"
}

# fuse_abort MNT: abort the FUSE connection of what is mounted at MNT now
# (its requests fail at once, whatever its server does), if anything is.
fuse_abort() {
    _fa_c=$(fuse_conn "$1")
    if [ -n "$_fa_c" ]; then
        [ -e "/sys/fs/fuse/connections/$_fa_c" ] || mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null
        echo 1 >"/sys/fs/fuse/connections/$_fa_c/abort" 2>/dev/null
    fi
    return 0
}

# Loop devices are few (max_loop) and shared: retry while none is free.
kmount() {
    mkdir -p "$2"
    _mounts="$2 $_mounts"
    _km_i=0
    until mount -t squashfs -o loop,ro "$1" "$2" 2>"$T/kmount.err"; do
        _km_i=$((_km_i + 1))
        if [ $_km_i -ge 100 ] || ! grep -qi "loop" "$T/kmount.err"; then
            cat "$T/kmount.err" >&2
            return 1
        fi
        sleep 0.1
    done
}

# rand_tree DIR SEED DIRS FILES SIZE...: DIRS folders d0, d1, ... of
# FILES files f000, f001, ... each of random bytes and of one of the
# SIZEs, all drawn from SEED (the same tree for the same arguments).
rand_tree() {
    "$PYTHON" - "$@" <<'PY'
import os, random, sys
top, seed, ndirs, nfiles = sys.argv[1], *map(int, sys.argv[2:5])
sizes = [int(s) for s in sys.argv[5:]]
r = random.Random(seed)
for d in range(ndirs):
    os.makedirs(f"{top}/d{d}", exist_ok=True)
    for f in range(nfiles):
        with open(f"{top}/d{d}/f{f:03d}", "wb") as o:
            o.write(r.randbytes(r.choice(sizes)))
PY
}

# mksquashfs clamps every timestamp to SOURCE_DATE_EPOCH when it is set.
mkimg() {
    _mk_src=$1
    _mk_img=$2
    shift 2
    env -u SOURCE_DATE_EPOCH mksquashfs "$_mk_src" "$_mk_img" -noappend -no-progress -quiet "$@" >/dev/null
}

# start_keeper BUDGET: a keeper (mountctl keeper) on the socket $K with
# that budget, its log in $T/keeper.log, its pid in KPID (killed at exit);
# returns once it answers.
start_keeper() {
    "$MOUNTCTL" keeper --socket "$K" --keep "$1" --min-available 0 \
        2>>"$T/keeper.log" &
    KPID=$!
    _pids="$KPID $_pids"
    _sk_i=0
    until [ -S "$K" ] && "$MOUNTCTL" status --kept --socket "$K" >/dev/null 2>&1; do
        _sk_i=$((_sk_i + 1))
        [ $_sk_i -lt 250 ] || fail "the keeper did not start: $(cat "$T/keeper.log")"
        sleep 0.02
    done
}

#!/bin/sh
# TIMEOUT: 120
# ALONE: a user's process waits in execve() for a while (case h): /proc/PID/stat of it (ps, pgrep, any scan for daemons) waits meanwhile, machine-wide
# The keeper (mountctl keeper, root's, on a private socket) against what
# a hostile user may send it: one user's requests never stop its service
# for root or for other users, and what it holds is bounded.  The user's
# side is tests/tools/keepc (a client of the keeper's protocol) and
# tests/tools/hangfs (the user's own FUSE file, whose FLUSH from root is
# never answered).  Checks, for real, that:
#   (a) a descriptor of a hangfs file sent as a GET's image, as a PUT's
#       copy and beside a LIST leaves three of the keeper's closes
#       waiting on hangfs, and 16 more sent at once one more (the user
#       has 4 jobs); yet root's status --kept answers within 5 s,
#       another user's -o keep mount gets a new copy, keeps it, and the
#       next one adopts it; the GET is given up within its budget, and
#       once hangfs's connection is aborted no thread of the keeper's
#       waits on it;
#   (b) 1,100 copies of 8 KiB from one user, the keeper started with
#       systemd's soft limit of 1024 descriptors: every one is taken, at
#       most 64 are kept, and with one more connection of that user's
#       held, the keeper does not spin and root connects and lists;
#   (c) a connection that put a copy of 4 MiB of bytes, closed its own
#       descriptor of it and holds on with no mount behind it: its copy is
#       not in use (connections 1) once the keeper looked at it, when a
#       real daemon's copy is; and a budget below it drops it while the
#       connection lasts;
#   (d) a sparse copy of 63 MiB under keep=64M: its bytes are the few it
#       holds, and another user's kept copy of 4 MiB stays;
#   (e) 200 copies (64 of user a, 64 of user b, 72 of root's): all are in
#       status --kept and in check-node's report, which exits 0;
#   (f) a mount with stage=meta leaves a partial copy: check-node exits 0
#       and says it is partial; a copy its user wrote over is said to be
#       inconsistent, not counted, and dropped by --clean (that user's
#       alone, not user b's of the same name);
#   (g) an O_PATH image descriptor is refused, so is a copy sealed without
#       F_SEAL_SEAL, and an image name with a raw 0x9B and a UTF-8 U+009B
#       is shown with '?' for each, by the keeper and by status --kept;
#   (h) a process that holds its copy, names it and stays in execve() of
#       the daemon's program (its close-on-exec hangfs file, tests/tools/
#       hangfs -s, never flushes: its exec lock stays held): the keeper's
#       look at it waits on a thread of its own; root's status --kept and
#       user b's requests are served; user a's copy is not in use;
#   (i) a TCP socket lingering in its close (keepc linger) sent as a
#       message's second descriptor, or queued behind a refused message
#       when the keeper closes the connection: root is still served;
#   (j) the same socket queued on a connection the keeper refuses at
#       accept (its user already has 64): root is still served, and the
#       reaper's closer releases it by its exit, which does not linger:
#       no closer is killed, and the next refusal (a later batch) is
#       closed as well;
#   (k) user a's refused connections with a written file of a hangfs -w
#       queued on each (its last release waits for a writeback that never
#       ends): four closers of user a's that never end, a fifth batch of
#       theirs waits (said), and user b's refusals are still closed, root
#       served;
#   (l) the reaper stopped while user b's refused connections pile up: the
#       keeper takes no connection on its public socket (said), and root
#       is still served, on root's own socket.
# Every call that could wait on a stuck keeper runs under timeout.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs fusermount3 timeout
need_test_users

KDIR="$T/keeper"
K="$KDIR/k.sock"
mkdir -m 0755 "$KDIR" "$T/base"
A=$TU_A
B=$TU_B
uid_a=$(id -u $A)
uid_b=$(id -u $B)
KEEPC="$TOOLS/keepc"

# as_bg USER CMD...: CMD as USER in the background (killed at exit), its
# pid in bg: setpriv's, which becomes CMD (a background `as` would be a
# subshell's, which a kill would leave CMD out of)
as_bg() {
    _ab_u=$1
    shift
    setpriv --reuid="$_ab_u" --regid="$(id -g "$_ab_u")" --init-groups -- "$@" &
    bg=$!
    _pids="$bg $_pids"
}

# keeper BUDGET: a new keeper on $K (the one before stopped), its pid in
# KPID.  Started with a soft limit of 1024 descriptors, systemd's default
# for a service: the keeper raises it itself.
KPID=
keeper() {
    if [ -n "$KPID" ]; then
        kill "$KPID"
        wait_gone "$KPID" 10 "the keeper"
    fi
    sh -c 'ulimit -S -n 1024 && exec "$@"' sh "$MOUNTCTL" keeper --socket "$K" \
        --keep "$1" --min-available 0 2>>"$T/keeper.log" &
    KPID=$!
    _pids="$KPID $_pids"
    _k_i=0
    until [ -S "$K" ] && timeout 10 "$MOUNTCTL" status --kept --socket "$K" >/dev/null 2>&1; do
        _k_i=$((_k_i + 1))
        [ $_k_i -lt 250 ] || fail "the keeper did not start: $(cat "$T/keeper.log")"
        sleep 0.02
    done
}

# kept EXPR: the Python expression EXPR over v, the copies root's
# status --kept --json lists (e["uid"], e["image"], e["bytes"], ...)
kept() {
    timeout 10 "$MOUNTCTL" status --kept --json --socket "$K" >"$T/kept.json" ||
        { echo "status --kept failed or got no answer within 10 s"; return 0; }
    "$PYTHON" -c 'import json, sys
v = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))' "$T/kept.json" "$1"
}

# wait_kept EXPR VALUE SECONDS WHAT: until kept EXPR prints VALUE
wait_kept() {
    _wk_i=0
    until [ "$(kept "$1")" = "$2" ]; do
        _wk_i=$((_wk_i + 1))
        [ $_wk_i -lt $(($3 * 20)) ] || fail "$4 ($1: $(kept "$1") after $3 s; copies: $(cat "$T/kept.json"))"
        sleep 0.05
    done
}

# copies UID [NAME]: how many copies UID has (named NAME)
copies() {
    kept "sum(1 for e in v if e['uid'] == $1 and '${2:-}' in ('', e['image']))"
}

# field UID NAME KEY: KEY of UID's copy of NAME, or none
field() {
    kept "next((e['$3'] for e in v if e['uid'] == $1 and e['image'] == '$2'), 'none')"
}

# wait_line FILE REGEX SECONDS WHAT: until FILE has a line matching REGEX
wait_line() {
    _wl_i=0
    until grep -q "$2" "$1" 2>/dev/null; do
        _wl_i=$((_wl_i + 1))
        [ $_wl_i -lt $(($3 * 50)) ] || fail "$4 (after $3 s: $(cat "$1" 2>&1))"
        sleep 0.02
    done
}

# mount_keep USER IMG MNT [ARGS]: mount as USER with -o keep; bounded, as
# a daemon whose keeper does not answer may wait on it
mount_keep() {
    _mk_u=$1
    _mk_img=$2
    _mk_mnt=$3
    shift 3
    mkdir -p "$_mk_mnt"
    chown "$_mk_u" "$_mk_mnt"
    _mounts="$_mk_mnt $_mounts"
    as "$_mk_u" timeout 30 "$SQUASHCACHED" -o "keep=$K" "$@" "$_mk_img" "$_mk_mnt" ||
        fail "$_mk_u could not mount $_mk_img with -o keep=$K within 30 s"
}

# check_node: mountctl job check-node for this keeper; its report in
# $T/node.out, its status in rc
check_node() {
    rc=0
    timeout 30 "$MOUNTCTL" job --set base="$T/base" --set keep=64M --set keep_socket="$K" \
        --node n1 --min-age 0 check-node >"$T/node.out" 2>&1 || rc=$?
}

note "an image of ~2 MB of incompressible files; plain files for copies"
rand_tree "$T/src" 1 2 8 250000
mkimg "$T/src" "$T/img.sqfs" -comp lz4
head -c 4194304 /dev/urandom >"$T/four"
: >"$T/tiny"
truncate -s $((1100 * 8192)) "$T/tiny"
: >"$T/sparse"
truncate -s 64M "$T/sparse"
chmod 0644 "$T/img.sqfs" "$T/four" "$T/tiny" "$T/sparse"
IMG="$T/img.sqfs"

note "(a) a user's FUSE file whose FLUSH never comes, sent three ways"
keeper 1G
mkdir "$T/hang"
chown $A "$T/hang"
as_bg $A "$TOOLS/hangfs" "$T/hang" 2>"$T/hangfs.log"
hpid=$bg
_mounts="$T/hang $_mounts"
_h_i=0
until is_mounted "$T/hang"; do
    _h_i=$((_h_i + 1))
    [ $_h_i -lt 250 ] || fail "hangfs did not mount: $(cat "$T/hangfs.log")"
    sleep 0.02
done
[ -n "$(fuse_conn "$T/hang")" ] || fail "no FUSE connection for $T/hang"
# Abort its connection, looked up from the mount when it is done: once
# unmounted, the number it had may be another test's mount by now.
# hang_end MNT PID: the hangfs at MNT, served by PID, ended.
hang_end() {
    fuse_abort "$1"
    kill -9 "$2" 2>/dev/null || true
}
at_exit "hang_end '$T/hang' $hpid"
as_bg $A timeout 30 "$KEEPC" "$K" get "$T/hang/file" 0 >"$T/a-get.out" 2>&1
as_bg $A timeout 30 "$KEEPC" "$K" get "$T/four" 0 sendfd "$T/hang/file" put >"$T/a-put.out" 2>&1
as_bg $A timeout 30 "$KEEPC" "$K" sendfd "$T/hang/file" list >"$T/a-list.out" 2>&1
_h_i=0
until [ "$(grep -c "FLUSH of uid 0 " "$T/hangfs.log")" -ge 3 ]; do
    _h_i=$((_h_i + 1))
    [ $_h_i -lt 500 ] || fail "the keeper did not close the three descriptors within 10 s: $(cat "$T/hangfs.log")"
    sleep 0.02
done
note "    three closes of the keeper's wait on hangfs"
timeout 5 "$MOUNTCTL" status --kept --socket "$K" >/dev/null ||
    fail "(a) root's status --kept got no answer within 5 s while the keeper's closes wait on a user's FUSE file"
# Sixteen more such GETs that the keeper finds readable in one round (it
# is stopped while they are sent): the user has KEEP_SRV_USER_JOBS (4)
# jobs at most, so one more close waits, not sixteen.
at_exit "kill -CONT $KPID 2>/dev/null"
kill -STOP "$KPID"
as_bg $A "$KEEPC" "$K" burst 16 "$T/hang/file" >"$T/a-burst.out" 2>&1
burst=$bg
wait_line "$T/a-burst.out" "^burst: 16 sent" 10 "(a) user a's 16 GETs were not sent"
kill -CONT "$KPID"
# Root's connections come after the user's: once both are answered, the
# keeper has been around its loop with the sixteen readable.
for _i in 1 2; do
    timeout 5 "$MOUNTCTL" status --kept --socket "$K" >/dev/null ||
        fail "(a) root's status --kept got no answer within 5 s after user a's burst"
done
_h_i=0
until [ "$(grep -c "FLUSH of uid 0 " "$T/hangfs.log")" -ge 4 ]; do
    _h_i=$((_h_i + 1))
    [ $_h_i -lt 500 ] || fail "(a) the keeper did not take up user a's burst within 10 s: $(cat "$T/hangfs.log")"
    sleep 0.02
done
# A job starts on the round that reads its request, and its thread goes
# straight to close(): the keeper has had those rounds (root was answered
# twice since), so 1 s is ample for any close still to come.
_h_i=0
while [ $_h_i -lt 50 ]; do
    _n=$(grep -c "FLUSH of uid 0 " "$T/hangfs.log")
    [ "$_n" -le 4 ] || fail "(a) user a has $_n closes of the keeper's waiting on hangfs: more than its 4 jobs"
    _h_i=$((_h_i + 1))
    sleep 0.02
done
note "    16 more at once: 4 closes wait in all (watched for 1 s)"
kill "$burst"
wait_line "$T/a-put.out" "^DONE status=-9 " 5 "(a) a PUT of the hangfs descriptor was not refused (EBADF)"
wait_line "$T/a-list.out" "^DONE status=0 " 5 "(a) a LIST beside the hangfs descriptor was not answered"
mount_keep $B "$IMG" "$T/mb"
[ "$(stat_of "$T/mb" keep.answer)" = new ] || fail "(a) user b: keep.answer $(stat_of "$T/mb" keep.answer), not new"
wait_done "$T/mb" 30
sqc_umount "$T/mb"
wait_kept "next((e['connections'] for e in v if e['uid'] == $uid_b), None)" 0 10 \
    "(a) user b's copy is not kept once the mount ended"
mount_keep $B "$IMG" "$T/mb"
[ "$(stat_of "$T/mb" keep.answer)" = copy ] || fail "(a) user b's next mount: keep.answer $(stat_of "$T/mb" keep.answer), not copy"
as $B diff -r "$T/src" "$T/mb" || fail "(a) user b's mount: files differ"
sqc_umount "$T/mb"
# The GET's look at the image gives up within its budget (5 s).
wait_line "$T/a-get.out" "^DONE status=-110 \|^closed" 15 "(a) the GET of the hangfs file was not given up"
grep -q "a descriptor uid $uid_a sent did not answer within" "$T/keeper.log" ||
    fail "(a) the keeper did not say it gave up user a's descriptor"
hang_end "$T/hang" "$hpid"
umount -l "$T/hang"
_h_i=0
until [ "$(ls "/proc/$KPID/task" | wc -l)" -eq 1 ]; do
    _h_i=$((_h_i + 1))
    [ $_h_i -lt 500 ] || fail "(a) threads of the keeper still wait once hangfs is aborted: $(ls "/proc/$KPID/task")"
    sleep 0.02
done
timeout 5 "$MOUNTCTL" status --kept --socket "$K" >/dev/null || fail "(a) the keeper does not answer after the abort"

note "(b) 1,100 copies of 8 KiB of one user"
keeper 1G
as $A timeout 60 "$KEEPC" "$K" many 1100 "$T/tiny" >"$T/b.out" 2>&1 ||
    fail "(b) user a's 1,100 copies: $(tail -n 3 "$T/b.out")"
grep -q "^many: 1100 put, 0 given, 0 refused" "$T/b.out" || fail "(b) $(cat "$T/b.out")"
n=$(copies "$uid_a")
note "    the keeper holds $n of them"
[ "$n" -ge 1 ] && [ "$n" -le 64 ] || fail "(b) the keeper holds $n copies of user a, not 1 to 64"
# One more connection of the user's, held: the descriptor the keeper
# would be out of, were the copies not capped.
as_bg $A "$KEEPC" "$K" ping hold >"$T/b-hold.out" 2>&1
wait_line "$T/b-hold.out" "^holding" 10 "(b) user a's connection after the flood was not served"
# Root lists meanwhile, and the keeper does not spin: its CPU time
# (utime + stime, in clock ticks) over 2 s from root's connect.  A loop
# that spins (a connection waiting that it cannot take) takes a core: 2 s
# of ticks, or half of that with a CPU hog on the same core; a keeper at
# rest wakes once a second (two wakes in the window), each measuring 64
# copies, well under 0.1 s.
hz=$(getconf CLK_TCK)
cpu() { awk '{ print $14 + $15 }' "/proc/$KPID/stat"; }
c0=$(cpu)
timeout 5 "$MOUNTCTL" status --kept --socket "$K" >"$T/b-root.out" 2>&1 &
root_list=$!
sleep 2
c1=$(cpu)
note "    the keeper used $((c1 - c0)) of $((2 * hz)) clock ticks in 2 s after the flood"
[ $((c1 - c0)) -le $((hz / 5)) ] || fail "(b) the keeper spins: $((c1 - c0)) clock ticks of CPU in 2 s"
wait $root_list || fail "(b) root cannot list after the flood: $(cat "$T/b-root.out")"

note "(c) a connection that holds a copy with no mount behind it"
keeper 1G
as_bg $A "$KEEPC" "$K" get "$T/four" 0 put -f hold -d >"$T/c.out" 2>&1
cpid=$bg
wait_line "$T/c.out" "^holding" 10 "(c) keepc did not put its copy"
grep -q "^DONE status=0 " "$T/c.out" || fail "(c) the copy was refused: $(cat "$T/c.out")"
# A real daemon's mount meanwhile: its copy is in use once the keeper
# looked at its peer, on a tick after its GET, which came after keepc's
# PUT: keepc's peer was looked at by then too.
mount_keep $B "$IMG" "$T/mc"
wait_kept "sum(1 for e in v if e['uid'] == $uid_b and e['in_use'])" 1 10 \
    "(c) the keeper never found user b's daemon holding its copy"
[ "$(field "$uid_a" "$T/four" connections)" = 1 ] || fail "(c) keepc's copy: connections $(field "$uid_a" "$T/four" connections), not 1"
[ "$(field "$uid_a" "$T/four" in_use)" = False ] || fail "(c) keepc's copy, with no mount behind it, is in use"
[ "$(field "$uid_a" "$T/four" bytes)" -ge 4194304 ] || fail "(c) keepc's copy holds $(field "$uid_a" "$T/four" bytes) bytes"
sqc_umount "$T/mc"
kill "$cpid"
keeper 1M
as_bg $A "$KEEPC" "$K" get "$T/four" 0 put -f hold -d >"$T/c2.out" 2>&1
cpid=$bg
wait_line "$T/c2.out" "^holding" 10 "(c) keepc did not put its copy"
grep -q "^DONE status=0 " "$T/c2.out" || fail "(c) the copy was refused: $(cat "$T/c2.out")"
wait_kept "sum(1 for e in v if e['uid'] == $uid_a)" 0 5 \
    "(c) a copy of 4 MiB held by a connection with no mount stays under a budget of 1 MiB"
kill -0 "$cpid" || fail "(c) keepc ended: its connection did not last"
kill "$cpid"

note "(d) a sparse copy just under keep="
keeper 64M
as $B timeout 30 "$KEEPC" "$K" get "$T/four" 0 put -f >"$T/d-b.out" 2>&1 ||
    fail "(d) user b's copy: $(cat "$T/d-b.out")"
wait_kept "next((e['connections'] for e in v if e['uid'] == $uid_b), None)" 0 10 "(d) user b's copy not kept"
as $A timeout 30 "$KEEPC" "$K" get "$T/sparse" 0 $((63 << 20)) put >"$T/d-a.out" 2>&1 ||
    fail "(d) user a's copy: $(cat "$T/d-a.out")"
grep -q "^DONE status=0 " "$T/d-a.out" || fail "(d) the sparse copy was refused: $(cat "$T/d-a.out")"
wait_kept "next((e['connections'] for e in v if e['uid'] == $uid_a), None)" 0 10 "(d) user a's sparse copy not kept"
sb=$(field "$uid_a" "$T/sparse" bytes)
note "    the sparse copy of $(field "$uid_a" "$T/sparse" range_bytes) bytes holds $sb"
[ "$(field "$uid_b" "$T/four" bytes)" != none ] ||
    fail "(d) user a's sparse copy pushed user b's copy out: $(cat "$T/kept.json")"
[ "$sb" -lt 1048576 ] || fail "(d) a sparse copy counts $sb bytes"

note "(e) 200 copies of three users"
keeper 64M
as $A timeout 60 "$KEEPC" "$K" many 64 "$T/tiny" >"$T/e.out" 2>&1 &&
    as $B timeout 60 "$KEEPC" "$K" many 64 "$T/tiny" >>"$T/e.out" 2>&1 &&
    timeout 60 "$KEEPC" "$K" many 72 "$T/tiny" >>"$T/e.out" 2>&1 ||
    fail "(e) $(cat "$T/e.out")"
[ "$(grep -c "^many: [0-9]* put, 0 given, 0 refused" "$T/e.out")" = 3 ] || fail "(e) $(cat "$T/e.out")"
[ "$(kept "len(v)")" = 200 ] || fail "(e) root's status --kept lists $(kept "len(v)") copies, not 200"
check_node
[ "$rc" = 0 ] || fail "(e) check-node exits $rc: $(tail -n 5 "$T/node.out")"
[ "$(grep -c "^kept copy of " "$T/node.out")" = 200 ] ||
    fail "(e) check-node lists $(grep -c "^kept copy of " "$T/node.out") copies, not 200: $(tail -n 3 "$T/node.out")"

note "(f) an ordinary partial copy, then check-node"
keeper 64M
mount_keep $A "$IMG" "$T/mf" -o stage=meta
as $A diff -r "$T/src" "$T/mf" || fail "(f) stage=meta: files differ"
sqc_umount "$T/mf"
wait_kept "next((e['connections'] for e in v if e['uid'] == $uid_a), None)" 0 10 "(f) the copy is not kept"
[ "$(field "$uid_a" "$IMG" partial)" = True ] || fail "(f) the copy of a stage=meta mount is not partial: $(cat "$T/kept.json")"
check_node
[ "$rc" = 0 ] || fail "(f) check-node exits $rc after an ordinary partial copy: $(cat "$T/node.out")"
grep -q "^kept copy of $IMG for uid $uid_a ($A): .*, partial$" "$T/node.out" ||
    fail "(f) check-node does not say the copy is partial: $(cat "$T/node.out")"
# A copy its user wrote over once it was kept (its trailer): said, not a
# failure of the node (any user can make one); --clean drops it, as root,
# that user's copy of that name alone.
as $A timeout 30 "$KEEPC" "$K" get "$T/tiny" 0 8192 put scribble >"$T/f2.out" 2>&1 ||
    fail "(f) $(cat "$T/f2.out")"
as $B timeout 30 "$KEEPC" "$K" get "$T/tiny" 0 8192 put >"$T/f3.out" 2>&1 || fail "(f) $(cat "$T/f3.out")"
wait_kept "[e['inconsistent'] for e in v if e['image'] == '$T/tiny' and e['uid'] == $uid_a]" "[True]" 10 \
    "(f) the written-over copy is not inconsistent"
[ "$(kept "[e['inconsistent'] for e in v if e['image'] == '$T/tiny' and e['uid'] == $uid_b]")" = "[False]" ] ||
    fail "(f) user b's copy is not kept, or inconsistent: $(cat "$T/kept.json")"
check_node
[ "$rc" = 0 ] || fail "(f) check-node exits $rc for a user's inconsistent copy: $(cat "$T/node.out")"
grep -q "^kept copy of $T/tiny for uid $uid_a ($A): .*: inconsistent$" "$T/node.out" ||
    fail "(f) check-node does not say the copy is inconsistent: $(cat "$T/node.out")"
rc=0
timeout 30 "$MOUNTCTL" job --set base="$T/base" --set keep=64M --set keep_socket="$K" \
    --node n1 --min-age 0 --clean check-node >"$T/node.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "(f) check-node --clean exits $rc: $(cat "$T/node.out")"
grep -q "^kept copy of $T/tiny for uid $uid_a ($A): inconsistent: dropped$" "$T/node.out" ||
    fail "(f) check-node --clean did not drop the inconsistent copy: $(cat "$T/node.out")"
[ "$(kept "[e['uid'] for e in v if e['image'] == '$T/tiny']")" = "[$uid_b]" ] ||
    fail "(f) --clean dropped more than user a's copy: $(cat "$T/kept.json")"

note "(g) O_PATH, F_SEAL_SEAL, names"
keeper 64M
as $A timeout 30 "$KEEPC" "$K" get -p "$T/four" 0 >"$T/g.out" 2>&1 || fail "(g) $(cat "$T/g.out")"
grep -q "^DONE status=-9 " "$T/g.out" || fail "(g) an O_PATH image descriptor was not refused: $(cat "$T/g.out")"
as $A timeout 30 "$KEEPC" "$K" get "$T/four" 0 put -u >"$T/g.out" 2>&1 || fail "(g) $(cat "$T/g.out")"
grep -q "^DONE status=-22 " "$T/g.out" || fail "(g) a copy without F_SEAL_SEAL was not refused: $(cat "$T/g.out")"
name=$(printf 'n\233a\302\233me')
as $A timeout 30 "$KEEPC" "$K" get -n "$name" "$T/tiny" 0 8192 put list >"$T/g.out" 2>&1 ||
    fail "(g) $(cat "$T/g.out")"
grep -q "^ENTRY uid=$uid_a .* name=n?a?me$" "$T/g.out" || fail "(g) the keeper lists the name as $(grep ENTRY "$T/g.out")"
[ "$(kept "[e['image'] for e in v]")" = "['n?a?me']" ] || fail "(g) status --kept shows $(kept "[e['image'] for e in v]")"
note "(h) a process that holds its copy and stays in execve() on a user's FUSE file"
keeper 64M
mkdir "$T/hang2"
chown $A "$T/hang2"
as_bg $A "$TOOLS/hangfs" -s "$T/hang2" 2>"$T/hangfs2.log"
hpid=$bg
_mounts="$T/hang2 $_mounts"
_h_i=0
until is_mounted "$T/hang2"; do
    _h_i=$((_h_i + 1))
    [ $_h_i -lt 250 ] || fail "hangfs -s did not mount: $(cat "$T/hangfs2.log")"
    sleep 0.02
done
at_exit "hang_end '$T/hang2' $hpid"
# It puts a copy, names it in a PING (a daemon's way) and execs the
# daemon's program: the exec's close of the hangfs file (close-on-exec)
# never returns, with the process's exec lock held, on which much of
# /proc/PID waits (its exe, stat, fd links).  The keeper looks at it on
# its next tick: that look waits, on a thread of its own, and the keeper
# goes on serving root and user b; a look that does not answer within
# its budget (5 s) leaves user a's copy not in use.
as_bg $A "$KEEPC" "$K" get "$T/four" 0 put -f exec "$T/hang2/file" "$SQUASHCACHED" >"$T/h.out" 2>&1
wait_line "$T/h.out" "^exec " 10 "(h) keepc did not put its copy and exec"
wait_line "$T/hangfs2.log" "FLUSH of uid $uid_a " 10 "(h) the exec did not close the hangfs file"
# Root asks meanwhile, until the look is under way (a thread of the
# keeper's waits) and once more after: each within 5 s.
_h_i=0
until [ "$(ls "/proc/$KPID/task" | wc -l)" -ge 2 ]; do
    timeout 5 "$MOUNTCTL" status --kept --socket "$K" >/dev/null ||
        fail "(h) root's status --kept got no answer within 5 s while the keeper looks at a process in execve()"
    _h_i=$((_h_i + 1))
    [ $_h_i -lt 200 ] || fail "(h) the keeper did not look at the process in execve() within 10 s"
    sleep 0.05
done
timeout 5 "$MOUNTCTL" status --kept --socket "$K" >/dev/null ||
    fail "(h) root's status --kept got no answer within 5 s while the keeper's look waits on a process in execve()"
# User b's requests are served meanwhile (a copy of its own, put and
# listed; not a mount: while a process waits in execve(), much of /proc
# hangs, ps and pgrep too, and so would the test's own tools).
as $B timeout 10 "$KEEPC" "$K" get "$T/four" 0 put -f list >"$T/h-b.out" 2>&1 ||
    fail "(h) user b was not served while the keeper's look waits: $(cat "$T/h-b.out")"
grep -q "^ENTRY uid=$uid_b " "$T/h-b.out" || fail "(h) user b's copy is not listed: $(cat "$T/h-b.out")"
wait_kept "next((e['in_use'] for e in v if e['uid'] == $uid_a), None)" False 15 \
    "(h) user a's copy stays in use though the look at its process does not answer"
note "    the look waits on its own thread; root and user b served; user a's copy not in use"
hang_end "$T/hang2" "$hpid"
umount -l "$T/hang2"

note "(i) a TCP socket that lingers in its close, sent as a message's second descriptor, and queued at a close"
keeper 64M
# Its close waits (SO_LINGER 600 s, a full window: keepc never accepts
# its peer).  Sent beside a PING's memfd, then (-q) behind a message the
# keeper refuses (it closes the connection with this one still queued):
# either way the keeper's last reference releases it, which must not be
# on its loop.
# The keeper is stopped while keepc sends and closes its own descriptor
# of the socket, so that the keeper's is the last.
# linger_served CASE ARGS...: with the keeper stopped, user a's keepc
# sends its lingering socket (keepc linger ARGS ping); once the keeper
# goes on, root's status --kept is answered 3 times within 5 s each.
# keepc's pid in lpid.
linger_served() {
    _ls_case=$1
    shift
    kill -STOP "$KPID"
    as_bg $A "$KEEPC" "$K" linger "$@" ping >"$T/$_ls_case.out" 2>&1
    lpid=$bg
    wait_line "$T/$_ls_case.out" "^lingering" 10 "($_ls_case) keepc did not send its lingering socket"
    kill -CONT "$KPID"
    for _i in 1 2 3; do
        timeout 5 "$MOUNTCTL" status --kept --socket "$K" >/dev/null ||
            fail "($_ls_case) root's status --kept got no answer within 5 s after a lingering socket came to the keeper"
    done
}
linger_served i
kill "$lpid"
linger_served i-q -q
kill "$lpid"
note "    root served both ways"

note "(j) a lingering TCP socket queued on a connection refused at accept (its user at 64 connections)"
# All 66 connections of keepc's (its first, 64 held, the lingering one)
# wait unaccepted while the keeper is stopped: the last two are refused.
closers_killed() { grep -c "their closer (pid [0-9]*) is killed" "$T/keeper.log" || true; }
killed0=$(closers_killed)
linger_served j -r 64
# Another refusal of user a's (still at 64) is closed as well: keepc's
# connection ends, it sees "closed".  Its socket goes to the reaper in a
# later batch than the lingering one (one batch is out at a time), so by
# then that batch's closer has ended, and it must not have been killed:
# its exit released the lingering socket without the linger's wait (the
# old closer closed it, waited, and was killed after 1 s).
as $A timeout 10 "$KEEPC" "$K" ping >"$T/j2.out" 2>&1 || true
grep -q "^closed" "$T/j2.out" || fail "(j) user a's 66th connection was not refused: $(cat "$T/j2.out")"
[ "$(closers_killed)" = "$killed0" ] ||
    fail "(j) a closer had to be killed: $(grep "closer" "$T/keeper.log")"
timeout 5 "$MOUNTCTL" status --kept --socket "$K" >/dev/null ||
    fail "(j) root's status --kept got no answer after the refusals"
kill "$lpid"
note "    root served; the lingering refusal released with no closer killed; the next refusal closed"

note "(k) user a's closers that never end hold up none of user b's"
# A file of a hangfs -w, written to, queued on a refused connection: its
# last release, at the closer's exit, waits for ever for the writeback
# of what was written (hangfs answers no WRITE), and no signal reaches an
# exiting process.
mkdir "$T/hw"
chown $A "$T/hw"
as_bg $A "$TOOLS/hangfs" -w "$T/hw" 2>"$T/hangfs-w.log"
hwpid=$bg
_mounts="$T/hw $_mounts"
wait_until 5 "hangfs -w did not mount: $(cat "$T/hangfs-w.log")" "is_mounted '$T/hw'"
at_exit "hang_end '$T/hw' $hwpid"
stuck_a() { grep -c "of sockets of uid $uid_a has not ended" "$T/keeper.log" || true; }
# written N ARGS...: with the keeper stopped (so that the message is
# queued before the keeper refuses the connection), user a's keepc sends
# hangfs file N, then writes to it (keepc linger ARGS -f FILE ping).
written() {
    _wr_n=$1
    shift
    kill -STOP "$KPID"
    as_bg $A "$KEEPC" "$K" linger "$@" -f "$T/hw/file$_wr_n" ping >"$T/k$_wr_n.out" 2>&1
    kpids="$kpids $bg"
    wait_line "$T/k$_wr_n.out" "^lingering" 10 "(k) keepc did not send its written file ($_wr_n)"
    kill -CONT "$KPID"
}
kpids=
written 1 -r 64
for n in 1 2 3 4; do
    [ "$n" = 1 ] || written "$n"
    wait_until 15 "(k) closer $n of user a's did not stay: $(grep closer "$T/keeper.log")" \
        "[ \"\$(stuck_a)\" -ge $n ]"
done
# A fifth batch of user a's waits in the reaper: their 4 closers are out.
written 5
wait_line "$T/keeper.log" "closers of uid $uid_a do not end" 10 "(k) the keeper did not say user a's sockets wait"
[ "$(pgrep -u "$uid_a" -x keeper-closer | wc -l)" = 4 ] ||
    fail "(k) user a has $(pgrep -u "$uid_a" -x keeper-closer | wc -l) closers: not 4"
# User b: 64 connections held and a 65th refused, then one more refused:
# each closed by a closer of user b's, at once.
kill -STOP "$KPID"
as_bg $B "$KEEPC" "$K" linger -r 64 ping >"$T/kb.out" 2>&1
kbpid=$bg
wait_line "$T/kb.out" "^lingering" 10 "(k) user b's keepc did not send"
kill -CONT "$KPID"
as $B timeout 10 "$KEEPC" "$K" ping >"$T/kb2.out" 2>&1 || true
grep -q "^closed" "$T/kb2.out" ||
    fail "(k) user b's refused connection was not closed while user a's closers wait: $(cat "$T/kb2.out")"
timeout 5 "$MOUNTCTL" status --kept --socket "$K" >/dev/null ||
    fail "(k) root's status --kept got no answer while user a's closers wait"
# Once hangfs is gone, user a's closers end, and their waiting batch's.
hang_end "$T/hw" "$hwpid"
wait_until 15 "(k) user a's closers did not end once hangfs was aborted" \
    "! pgrep -u $uid_a -x keeper-closer >/dev/null"
# shellcheck disable=SC2086 # pids
kill "$kbpid" $kpids 2>/dev/null || true
note "    4 of user a's closers stay, its fifth batch waits; user b's refusals closed, root served"

note "(l) the public socket paused by a pile of refused connections: root still served"
rpid=$(pgrep -P "$KPID" -x keeper-reaper) || fail "(l) no reaper of keeper $KPID"
[ -S "$K.root" ] && [ "$(stat -c '%U %a' "$K.root")" = "root 600" ] ||
    fail "(l) no root's socket beside $K: $(ls -l "$KDIR")"
kill -STOP "$rpid"
at_exit "kill -CONT $rpid 2>/dev/null"
# 64 held, then refused ones: with the reaper stopped they wait in the
# keeper (but for the batch it sent before it saw it stopped: up to 253),
# and past 256 it takes no connection on the public socket.
as_bg $B timeout 60 "$KEEPC" -t 2000 "$K" linger -r 640 ping >"$T/l.out" 2>&1
wait_line "$T/keeper.log" "sockets wait for the reaper: no connection is taken" 20 \
    "(l) the keeper did not stop taking connections: $(cat "$T/l.out")"
for _i in 1 2 3; do
    timeout 5 "$MOUNTCTL" status --kept --socket "$K" >/dev/null ||
        fail "(l) root's status --kept got no answer while the public socket is paused"
done
kill -CONT "$rpid"
wait_line "$T/keeper.log" "connections are taken again" 20 "(l) the keeper did not take connections again"
as $A timeout 10 "$KEEPC" "$K" ping >"$T/l2.out" 2>&1 ||
    fail "(l) user a was not served once the reaper went on: $(cat "$T/l2.out")"
note "    root served on its own socket while the public one was paused"

echo "keep hostile ok"

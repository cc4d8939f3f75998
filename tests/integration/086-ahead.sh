#!/bin/sh
# Listing ahead (statahead=): once a reader has listed a directory, the
# daemon lists on from there, in the order a walk takes, so that a walk
# (find, os.walk) finds every directory listed and every entry known to the
# kernel, and sends nothing.  The window bounds how far ahead it goes.  A
# reader that opens files by path makes the daemon list their directory
# once enough of it was looked up, so that the other files need no lookup.
# Whatever the daemon lists, the reader sees the same tree as the source,
# and SIGTERM in the middle of it unmounts cleanly.
# TIMEOUT: 180
# ALONE: drops the machine's page cache (drop_caches)
# TSAN: yes
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs

# 8 directories of 4 subdirectories of 50 files: 1,640 entries below the
# root, 41 directories with it.
mkdir -p "$T/src"
for i in 0 1 2 3 4 5 6 7; do
    for j in 0 1 2 3; do
        mkdir -p "$T/src/d$i/s$j"
        (cd "$T/src/d$i/s$j" && seq -w 0 49 | sed 's/^/f/' | xargs touch)
        echo "$i$j" >"$T/src/d$i/s$j/f00"
    done
done
mkimg "$T/src" "$T/img.sqfs" -comp lz4

# listing DIR: the tree as find sees it (names, types, file sizes), sorted.
listing() {
    (cd "$1" && find . \( -type f -printf '%p f %s\n' \) -o -printf '%p %y\n' | sort)
}
listing "$T/src" >"$T/src.list"

# settled_entries MNT: the entries listed ahead once that number has not
# changed for 0.2 s (up to 20 s).
settled_entries() {
    _se=0
    _se_last=-1
    while :; do
        _se_now=$(stat_of "$1" statahead.entries)
        [ "$_se_now" -eq "$_se_last" ] && break
        _se_last=$_se_now
        _se=$((_se + 1))
        [ $_se -lt 100 ] || break
        sleep 0.2
    done
    echo "$_se_now"
}

# wait_listed MNT N: wait up to 20 s until the daemon has listed N
# entries ahead and then nothing more for 0.2 s.
wait_listed() {
    _wl=0
    _wl_last=-1
    while :; do
        _wl_now=$(stat_of "$1" statahead.entries)
        [ "$_wl_now" -ge "$2" ] && [ "$_wl_now" -eq "$_wl_last" ] && return 0
        _wl_last=$_wl_now
        _wl=$((_wl + 1))
        [ $_wl -lt 100 ] || fail "listed $_wl_now entries ahead after 20 s, expected $2"
        sleep 0.2
    done
}

note "readers' listings carry names only until a reader stats what it listed"
sqc_mount "$T/img.sqfs" "$T/m" -o "log=$T/d0.log"
ls "$T/m" >/dev/null
ls "$T/m/d0/s0" >/dev/null
[ "$(stat_of "$T/m" statahead.names_only)" = True ] || fail "readers' listings are not names only"
# A listing that calls for listing ahead wakes the lister at once, and
# it lists within milliseconds: 0.5 s of nothing is no walk.
watch_for 0.5 "nothing listed ahead of a reader that stats nothing" \
    '[ "$(stat_of "$T/m" statahead.entries)" -eq 0 ]'
[ "$(stat_of "$T/m" statahead.names_dirs)" -eq 2 ] || fail "$(stat_of "$T/m" statahead.names_dirs) listings with names only, not 2"
# An entry of such a listing is wanted after all: the daemon lists again
# the root (8 entries) and d0/s0 (50), then walks the rest of the tree:
# d0 (4 entries), and 7 + 31 directories, 28 + 1,550 entries.
stat "$T/m/d0/s0/f01" >/dev/null
wait_listed "$T/m" 1640
[ "$(stat_of "$T/m" statahead.dirs)" -eq 41 ] || fail "listed $(stat_of "$T/m" statahead.dirs) directories ahead, not 41"
[ "$(stat_of "$T/m" statahead.filled_dirs)" -eq 2 ] || fail "listed again $(stat_of "$T/m" statahead.filled_dirs) directories, not 2"
[ "$(stat_of "$T/m" statahead.names_only)" = False ] || fail "readers' listings are still names only"
lk0=$(stat_of "$T/m" fuse.lookup)
listing "$T/m" >"$T/m.list"
cmp -s "$T/src.list" "$T/m.list" || fail "names only: the walk saw another tree"
[ "$(stat_of "$T/m" fuse.lookup)" -eq "$lk0" ] ||
    fail "after listing again, the walk sent $(($(stat_of "$T/m" fuse.lookup) - lk0)) lookups"
sqc_umount "$T/m"

# ImageFolder lists every folder and stats nothing: after three listings
# of names, the daemon lists the rest ahead of it, names only too, and the
# kernel answers the reader's listings from what it keeps.
note "a reader that lists names and stats nothing gets names listed ahead"
sqc_mount "$T/img.sqfs" "$T/m" -o "log=$T/d2.log"
ls "$T/m" >/dev/null
ls "$T/m/d0" >/dev/null
ls "$T/m/d0/s0" >/dev/null
# From d0/s0 on, as a walk goes: d0's s1-s3, then d1-d7 and their four
# each: 38 directories, 3 x 50 + 7 x (4 + 200) = 1,578 entries.
wait_listed "$T/m" 1578
[ "$(stat_of "$T/m" statahead.dirs)" -eq 38 ] || fail "listed $(stat_of "$T/m" statahead.dirs) directories ahead of a names reader, not 38"
[ "$(stat_of "$T/m" statahead.names_only)" = True ] || fail "listing ahead of a names reader ended names only"
[ "$(stat_of "$T/m" statahead.names_dirs)" -eq 41 ] || fail "$(stat_of "$T/m" statahead.names_dirs) listings with names only, not 41"
rd0=$(($(stat_of "$T/m" fuse.readdir) + $(stat_of "$T/m" fuse.readdirplus)))
(cd "$T/src" && ls -R) >"$T/src.names"
(cd "$T/m" && ls -R) >"$T/m.names"
cmp -s "$T/src.names" "$T/m.names" || fail "names listed ahead: ls -R saw another tree: $(diff "$T/src.names" "$T/m.names" | head -5)"
rd1=$(($(stat_of "$T/m" fuse.readdir) + $(stat_of "$T/m" fuse.readdirplus)))
[ "$rd1" -eq "$rd0" ] || fail "ls -R after names were listed ahead sent $((rd1 - rd0)) listings"
# Then a file is wanted after all: all 41 are listed again, with
# attributes, and a walk that stats sends nothing.
stat "$T/m/d6/s1/f07" >/dev/null
i=0
until [ "$(stat_of "$T/m" statahead.filled_dirs)" -eq 41 ]; do
    i=$((i + 1))
    [ $i -lt 200 ] || fail "listed again $(stat_of "$T/m" statahead.filled_dirs) directories of names, not 41"
    sleep 0.1
done
lk0=$(stat_of "$T/m" fuse.lookup)
listing "$T/m" >"$T/m.list"
cmp -s "$T/src.list" "$T/m.list" || fail "after names ahead: the walk saw another tree"
[ "$(stat_of "$T/m" fuse.lookup)" -eq "$lk0" ] ||
    fail "after names ahead were listed again, the walk sent $(($(stat_of "$T/m" fuse.lookup) - lk0)) lookups"
sqc_umount "$T/m"

# The rest lists with attributes from the start (list_attrs), as a walk
# that stats gets once it has.
note "a reader lists the root: the daemon lists the rest, and a walk sends nothing"
sqc_mount "$T/img.sqfs" "$T/m" -o "list_attrs,log=$T/d1.log"
[ "$(stat_of "$T/m" statahead.window)" -eq 65536 ] || fail "the default window is $(stat_of "$T/m" statahead.window)"
ls "$T/m" >/dev/null
# The reader listed the root: the daemon pulls the 8 + 32 directories
# below it, 32 + 1,600 entries.
wait_listed "$T/m" 1632
[ "$(stat_of "$T/m" statahead.dirs)" -eq 40 ] || fail "listed $(stat_of "$T/m" statahead.dirs) directories ahead, not 40"
[ "$(stat_of "$T/m" statahead.walks)" -ge 1 ] || fail "no walk counted"
# The table of directories the kernel was shown: the root and all 40.
[ "$(stat_of "$T/m" statahead.table_dirs)" -eq 41 ] || fail "the table holds $(stat_of "$T/m" statahead.table_dirs) directories, not 41"
[ "$(stat_of "$T/m" statahead.table_budget)" -eq 134217728 ] || fail "table budget $(stat_of "$T/m" statahead.table_budget)"
[ "$(stat_of "$T/m" statahead.table_bytes)" -gt 0 ] &&
    [ "$(stat_of "$T/m" statahead.table_bytes)" -le 134217728 ] || fail "table bytes $(stat_of "$T/m" statahead.table_bytes)"
rdp0=$(stat_of "$T/m" fuse.readdirplus)
lk0=$(stat_of "$T/m" fuse.lookup)
ga0=$(stat_of "$T/m" fuse.getattr)
listing "$T/m" >"$T/m.list"
cmp -s "$T/src.list" "$T/m.list" || fail "the walk saw another tree: $(diff "$T/src.list" "$T/m.list" | head -5)"
[ "$(stat_of "$T/m" fuse.readdirplus)" -eq "$rdp0" ] ||
    fail "the walk sent $(($(stat_of "$T/m" fuse.readdirplus) - rdp0)) listings"
[ "$(stat_of "$T/m" fuse.lookup)" -eq "$lk0" ] ||
    fail "the walk sent $(($(stat_of "$T/m" fuse.lookup) - lk0)) lookups"
[ "$(stat_of "$T/m" fuse.getattr)" -eq "$ga0" ] ||
    fail "the walk sent $(($(stat_of "$T/m" fuse.getattr) - ga0)) getattrs"
[ "$(cat "$T/m/d5/s2/f00")" = 52 ] || fail "d5/s2/f00 reads wrong"
"$MOUNTCTL" status "$T/m" | grep -Eq "^ *listed +40 directories, 1632 entries ahead" ||
    fail "mountctl status does not show listing ahead: $("$MOUNTCTL" status "$T/m")"
sqc_umount "$T/m"

note "a walk and the daemon's listing at once: the same tree, every time"
for opts in "" "threads=2"; do
    sqc_mount "$T/img.sqfs" "$T/m" -o "list_attrs,log=$T/d2.log${opts:+,$opts}"
    listing "$T/m" >"$T/m.list"
    cmp -s "$T/src.list" "$T/m.list" || fail "$opts: a walk racing the daemon saw another tree"
    sqc_umount "$T/m"
done

note "the window bounds how far ahead the daemon lists"
sqc_mount "$T/img.sqfs" "$T/m" -o "list_attrs,statahead=100,log=$T/d3.log"
ls "$T/m" >/dev/null
wait_listed "$T/m" 1
n=$(stat_of "$T/m" statahead.entries)
# The window counts every entry gone past (the root's 8, then 4 and 50
# and 50), checked between directories: at most one directory more.
[ "$n" -ge 100 ] && [ "$n" -le 150 ] || fail "statahead=100 listed $n entries ahead"
listing "$T/m" >"$T/m.list"
cmp -s "$T/src.list" "$T/m.list" || fail "statahead=100: another tree"
sqc_umount "$T/m"

note "statahead=0: nothing is listed ahead"
sqc_mount "$T/img.sqfs" "$T/m" -o "statahead=0,log=$T/d4.log"
ls "$T/m" >/dev/null
# As above: a walk would start within milliseconds of the listing.
watch_for 0.5 "nothing listed ahead with statahead=0" \
    '[ "$(stat_of "$T/m" statahead.entries)" -eq 0 ]'
rdp0=$(stat_of "$T/m" fuse.readdirplus)
listing "$T/m" >"$T/m.list"
cmp -s "$T/src.list" "$T/m.list" || fail "statahead=0: another tree"
[ "$(stat_of "$T/m" fuse.readdirplus)" -gt "$rdp0" ] || fail "statahead=0: the walk sent no listing"
[ "$(stat_of "$T/m" statahead.entries)" -eq 0 ] || fail "statahead=0 listed ahead"
[ "$(stat_of "$T/m" statahead.window)" -eq 0 ] || fail "statahead=0 shows a window"
sqc_umount "$T/m"

note "files opened by path: after 4 lookups the daemon lists their directory"
sqc_mount "$T/img.sqfs" "$T/m" -o "log=$T/d5.log"
for f in 10 11 12; do
    cat "$T/m/d3/s1/f$f" >/dev/null
done
# The lookup that makes the directory listed wakes the lister at once.
watch_for 0.5 "3 lookups: their directory not listed" \
    '[ "$(stat_of "$T/m" statahead.lookup_dirs)" -eq 0 ]'
cat "$T/m/d3/s1/f13" >/dev/null
i=0
until [ "$(stat_of "$T/m" statahead.lookup_dirs)" -eq 1 ] && [ "$(stat_of "$T/m" statahead.entries)" -eq 50 ]; do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "4 lookups: $(stat_of "$T/m" statahead.lookup_dirs) directories, $(stat_of "$T/m" statahead.entries) entries listed"
    sleep 0.1
done
lk0=$(stat_of "$T/m" fuse.lookup)
for f in $(seq 14 49); do
    cmp -s "$T/src/d3/s1/f$f" "$T/m/d3/s1/f$f" || fail "d3/s1/f$f differs"
done
[ "$(stat_of "$T/m" fuse.lookup)" -eq "$lk0" ] ||
    fail "36 files of a listed directory cost $(($(stat_of "$T/m" fuse.lookup) - lk0)) lookups"
[ "$(stat_of "$T/m" statahead.walks)" -eq 0 ] || fail "opening by path started a walk"
sqc_umount "$T/m"

if [ "$(id -u)" -eq 0 ]; then
    note "after drop_caches the kernel's entries are gone: a walk is listed ahead again"
    sqc_mount "$T/img.sqfs" "$T/m" -o "list_attrs,log=$T/d6.log"
    ls "$T/m" >/dev/null
    wait_listed "$T/m" 1632
    # drop_caches queues a FORGET for each directory, which a worker of
    # the daemon takes while another may already answer the next ls; the
    # stats do not count them.  So a round that lists less than the
    # whole tree again is tried again (up to 5 times, dropping again): a
    # daemon that missed the FORGETs falls short every round.
    round=0
    while :; do
        round=$((round + 1))
        e0=$(stat_of "$T/m" statahead.entries)
        sync
        echo 3 >/proc/sys/vm/drop_caches
        ls "$T/m" >/dev/null
        again=$(($(settled_entries "$T/m") - e0))
        [ "$again" -lt 1632 ] || break
        [ "$round" -lt 5 ] || fail "after drop_caches, $again of 1632 entries listed again ($round rounds)"
        note "round $round: $again of 1632 entries listed again; once more"
    done
    [ "$again" -eq 1632 ] || fail "after drop_caches, $again entries listed again, not 1632"
    rdp0=$(stat_of "$T/m" fuse.readdirplus)
    listing "$T/m" >"$T/m.list"
    cmp -s "$T/src.list" "$T/m.list" || fail "after drop_caches: another tree"
    [ "$(stat_of "$T/m" fuse.readdirplus)" -eq "$rdp0" ] ||
        fail "after drop_caches the walk sent $(($(stat_of "$T/m" fuse.readdirplus) - rdp0)) listings"
    sqc_umount "$T/m"
fi

note "SIGTERM while the daemon lists a big tree ahead unmounts cleanly"
mkdir -p "$T/big"
for i in $(seq 0 39); do
    mkdir "$T/big/d$i"
    (cd "$T/big/d$i" && seq 1 500 | xargs touch)
done
mkimg "$T/big" "$T/big.sqfs" -comp lz4

note "a big directory: plain listings past the first batch, then all plus from the daemon"
sqc_mount "$T/big.sqfs" "$T/m" -o "log=$T/d9.log"
ls "$T/m/d3" >/dev/null
# The kernel asked readdirplus for the first batch, plain listings for
# the rest (FUSE_CAP_READDIRPLUS_AUTO): names are all a listing needs.
[ "$(stat_of "$T/m" fuse.readdir)" -gt 0 ] || fail "500 entries were listed with readdirplus only"
[ "$(stat_of "$T/m" statahead.entries)" -eq 0 ] || fail "a listing alone had the daemon list ahead"
stat "$T/m/d3/7" >/dev/null
wait_stat "$T/m" statahead.filled_dirs 1 10 "d3 was not listed again after a lookup in it"
# Listed again by the daemon, every batch readdirplus: the kernel holds
# an inode for each of the 500 files, and stat'ing them sends nothing.
lk0=$(stat_of "$T/m" fuse.lookup)
find "$T/m/d3" -type f -printf '%s\n' | wc -l | grep -qx 500 || fail "find does not see the 500 files of d3"
[ "$(stat_of "$T/m" fuse.lookup)" -eq "$lk0" ] ||
    fail "stat'ing d3's files after it was listed again sent $(($(stat_of "$T/m" fuse.lookup) - lk0)) lookups"
sqc_umount "$T/m"
# list_attrs: the root's listing starts the walk at once.
sqc_mount "$T/big.sqfs" "$T/m" -o "list_attrs,log=$T/d7.log"
pid=$(sqc_pid "$T/m")
ls "$T/m" >/dev/null
wait_stat "$T/m" statahead.walks 1 10 "no walk ahead after a listing of the root"
note "SIGTERM after $(stat_of "$T/m" statahead.entries) of 20,040 entries listed ahead"
kill -TERM "$pid"
wait_gone "$pid" 10 "daemon (SIGTERM while listing ahead)"
! is_mounted "$T/m" || fail "SIGTERM while listing ahead left the mount behind"

note "SIGTERM while statahead=all lists the mount unmounts cleanly"
sqc_mount "$T/big.sqfs" "$T/m" -o "statahead=all,statahead_wait=0,log=$T/d8.log"
pid=$(sqc_pid "$T/m")
state=$(stat_of "$T/m" statahead.all_state)
case $state in running | done) ;; *) fail "statahead=all is $state after the mount" ;; esac
kill -TERM "$pid"
wait_gone "$pid" 10 "daemon (SIGTERM while listing the mount)"
! is_mounted "$T/m" || fail "SIGTERM during statahead=all left the mount behind"
! grep -q "listing the mount stopped" "$T/d8.log" || fail "stopping was logged as an error: $(cat "$T/d8.log")"

# The daemon's own requests of its mount come from a process of its own
# (the lister), never from one of its threads: a killed daemon whose thread
# waited on its own mount could never exit (a thread of it in the kernel
# held the FUSE device open), and every reader of the mount would hang.
note "SIGKILL while the daemon lists ahead on slow storage: daemon, lister and mount go"
: >"$T/failfile"
FAULTFS_DELAY_US=100000 start_faultfs "$T/big.sqfs" "$T/store" "$T/failfile"
sqc_mount "$T/store/image" "$T/m" -o "stage=none,list_attrs,log=$T/d10.log"
pid=$(sqc_pid "$T/m")
# If the test fails, end the hung connection so that nothing stays behind.
abort_at_exit "$T/m"
ls "$T/m" >/dev/null
# Every storage read takes 0.1 s: the lister is soon waiting for a
# listing that a worker reads from storage.
wait_stat "$T/m" statahead.walks 1 10 "no walk ahead after a listing of the root"
lister= # set by the condition below
wait_until 10 "no lister process waiting on the mount" \
    'lister=$(pgrep -P "$pid" -x sqc-lister) &&
     [ "$(cat "/proc/$lister/wchan" 2>/dev/null)" = request_wait_answer ]'
kill -KILL "$pid"
wait_gone "$lister" 10 "the lister process (daemon killed)"
i=0
while [ "$(grep -l '^State:.*[RSD]' /proc/"$pid"/task/*/status 2>/dev/null | wc -l)" -gt 0 ]; do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "a thread of the killed daemon is still there: $(cat /proc/"$pid"/task/*/wchan)"
    sleep 0.1
done
if timeout -s KILL 5 stat "$T/m" >/dev/null 2>"$T/err"; then
    fail "a killed daemon's mount still answers"
fi
grep -q "not connected" "$T/err" || fail "a killed daemon's mount: expected ENOTCONN, got: $(cat "$T/err")"
fusermount3 -u -z "$T/m"
fusermount3 -u "$T/store"
echo "listing ahead checks passed"

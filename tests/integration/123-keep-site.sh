#!/bin/sh
# TIMEOUT: 420
# TSAN: yes
# Site images (mountctl keeper --site): one copy per node, made by root
# from the image's own bytes, for every user who can open the image.
# The image sits on slow storage (faultfs, 150 ms a read, many at once,
# each read logged) under the site's prefix.  Checks, for real, that:
#   (a) two users' mounts at once get the one site copy (keep.answer
#       "site"), serve at once (a file read while root still stages),
#       both see the source's bytes, and the storage read in all is the
#       image once (1.00x, the mounts' own reads of the superblock and
#       tables aside); status --kept shows it as the site's with both
#       users, a user seeing only themselves;
#   (b) no user can change a byte of it: the descriptor the keeper hands
#       out is read-only (write, a shared writable mapping, mprotect, a
#       reopen through /proc/self/fd for writing, fchmod, F_ADD_SEALS,
#       ftruncate all fail); a user's own PUT after a GET of the site
#       image is refused; a user's FORGET leaves it; the other user's
#       mount still reads the source's bytes;
#   (c) a third user's later mount takes it whole at once: nothing of
#       the image is read again;
#   (d) a user who cannot open the image (mode 0600) gets no site copy:
#       an O_PATH descriptor is refused;
#   (e) an image that is not the site's (outside the prefix, or on a
#       user's own FUSE mount under it) gets a copy per user, as today:
#       root opens nothing of it; one whose path a user mounted their own
#       FUSE file system over after opening it, or whose seal is a
#       user's symlink to a file only root may read: root stops there,
#       no site copy;
#   (f) the image changed (rewritten in place, mtime set back): staged
#       afresh, the mounts read the new bytes;
#   (g) with a seal, a corrupt byte in a block stored as is: the chunk is
#       never marked complete (status --kept: partial), a read of it gets
#       EIO, every other file reads right; --site-seal root with a root
#       hash that is not the seal's: no site copy (a copy per user);
#   (h) kill -9 of a mount while root stages: the other mount and the
#       copy complete; kill -9 of the keeper while it stages: the mounts
#       serve on with the right bytes, the copy's complete chunks (read
#       from a mount's descriptor) are all the image's, and a new keeper
#       stages afresh.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
need_cmd mksquashfs setpriv
need_test_users

KDIR="$T/keeper"
K="$KDIR/k.sock"
mkdir -m 0755 "$KDIR"
A=$TU_A
B=$TU_B
add_test_user C
uid_a=$(id -u "$A")
uid_b=$(id -u "$B")

# start_site_keeper ARGS...: a keeper on $K with site copies of what is
# under $T/store and $T/site2, and ARGS; KPID its pid.  While $T/pause
# exists, a site copy handed out waits before it is staged (120 s at most:
# SQC_TEST_SITE_PAUSE, the keeper's own environment only).
start_site_keeper() {
    SQC_TEST_SITE_PAUSE="$T/pause" "$MOUNTCTL" keeper --socket "$K" \
        --keep 1G --min-available 0 --site "$T/store:$T/site2" "$@" \
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

stop_keeper() {
    kill "$KPID"
    wait_gone "$KPID" 10 "the keeper"
}

# mount_keep USER IMG MNT [OPTS]: mount as USER with -o keep
mount_keep() {
    mkdir -p "$3"
    _mounts="$3 $_mounts"
    chown "$1" "$3"
    as "$1" "$SQUASHCACHED" -o "keep=$K${4:+,$4}" "$2" "$3"
}

# storage_bytes: bytes served by faultfs so far (its read log)
storage_bytes() {
    awk '{ s += $2 } END { print s + 0 }' "$T/reads.log"
}

# kept_site [USER]: the site copies as USER (default root) lists them:
# "image complete range users..." a line, users as uid:connections
kept_site() {
    if [ -n "${1:-}" ]; then
        as "$1" "$MOUNTCTL" status --kept --json --socket "$K"
    else
        "$MOUNTCTL" status --kept --json --socket "$K"
    fi | "$PYTHON" -c 'import json, sys
for e in json.load(sys.stdin):
    if e.get("site"):
        print(e["image"], e["complete_bytes"], e["range_bytes"],
              " ".join("%d:%d" % (u["uid"], u["connections"])
                       for u in e.get("users", [])))'
}

note "an incompressible tree, ~8 MB, on slow storage under the site's prefix"
"$PYTHON" - "$T" <<'PY'
import os, random, sys
r = random.Random(2)
for d in range(4):
    os.makedirs(f"{sys.argv[1]}/src/d{d}", exist_ok=True)
    for f in range(10):
        with open(f"{sys.argv[1]}/src/d{d}/f{f}", "wb") as o:
            o.write(r.randbytes(200000 + f))
PY
mkimg "$T/src" "$T/src.sqfs" -comp lz4 -all-time 0 -mkfs-time 0 -all-root
chmod 0644 "$T/src.sqfs"
: >"$T/failfile"
: >"$T/reads.log"
FAULTFS_PARALLEL=1 FAULTFS_DELAY_US=150000 FAULTFS_LOG="$T/reads.log" \
    start_faultfs "$T/src.sqfs" "$T/store" "$T/failfile"
IMG="$T/store/image"
mkdir -m 0755 "$T/site2" "$T/own"

# The keeper's wire format, by hand (a hostile user's client): struct
# keep_msg, 312 bytes, and one descriptor beside it.
cat >"$T/kw.py" <<'PY'
import ctypes, errno, fcntl, mmap, os, socket, struct, sys
FMT = "<IIiIQQQQII256s"
MAGIC = 0x4b505153
GET, PUT, LIST, FORGET, EVICT, COPY, NONE, ENTRY, DONE = range(1, 10)
F_SITE = 8
F_ADD_SEALS = 1033
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def conn(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(path)
    return s


def ask(s, op, fd=None, a=0, name=b""):
    m = struct.pack(FMT, MAGIC, op, 0, 0, a, 0, 0, 0, 0, 0, name)
    socket.send_fds(s, [m], [fd] if fd is not None else [])
    data, fds, _, _ = socket.recv_fds(s, 312, 1)
    v = struct.unpack(FMT, data)
    return {"op": v[1], "status": v[2], "a": v[4], "b": v[5],
            "flags": v[9], "name": v[10].rstrip(b"\0")}, fds


def refused(what, fn):
    try:
        fn()
    except OSError as e:
        print("refused", what, errno.errorcode[e.errno])
        return
    print("ALLOWED", what)


def get_site(sock, image):
    fd = os.open(image, os.O_RDONLY)
    r, fds = ask(sock, GET, fd)
    if r["op"] != COPY or not r["flags"] & F_SITE:
        print("no site copy", r["op"], r["status"])
        sys.exit(3)
    return fds[0]


def hostile(sock, image):
    s = conn(sock)
    fd = get_site(s, image)
    print("mode", oct(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE))
    refused("write", lambda: os.pwrite(fd, b"x", 4096))
    refused("shared writable map", lambda: mmap.mmap(
        fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))
    p = libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if p in (None, ctypes.c_void_p(-1).value):
        print("ALLOWED? cannot even map it for reading")
    else:
        def mprotect():
            if libc.mprotect(p, 4096, mmap.PROT_READ | mmap.PROT_WRITE):
                raise OSError(ctypes.get_errno(), "mprotect")
        refused("mprotect to write", mprotect)
    for fl in (os.O_RDWR, os.O_WRONLY):
        refused("reopen %o" % fl,
                lambda: os.open("/proc/self/fd/%d" % fd, fl))
    refused("fchmod", lambda: os.fchmod(fd, 0o666))
    refused("F_ADD_SEALS", lambda: fcntl.fcntl(fd, F_ADD_SEALS, 0))
    refused("ftruncate", lambda: os.ftruncate(fd, 0))
    refused("fallocate", lambda: os.posix_fallocate(fd, 0, 1 << 30))
    # A PUT of their own after the site copy came.
    m = os.memfd_create("mine", os.MFD_ALLOW_SEALING)
    os.ftruncate(m, 1 << 20)
    fcntl.fcntl(m, F_ADD_SEALS, 1 | 2 | 4)
    r, _ = ask(s, PUT, m)
    print("put", r["op"], r["status"])
    # Forget all of theirs: the site copy is not theirs.
    r, _ = ask(conn(sock), FORGET, None, 0, b"")
    print("forget", r["op"], r["a"])


def opath(sock, image):
    fd = os.open(image, os.O_PATH)
    r, fds = ask(conn(sock), GET, fd)
    print("opath", r["op"], r["status"], len(fds))


def hold(sock, image):
    # GET and hold the connection until stdin closes.
    s = conn(sock)
    fd = os.open(image, os.O_RDONLY)
    socket.send_fds(s, [struct.pack(FMT, MAGIC, GET, 0, 0, 0, 0, 0, 0, 0,
                                    0, b"hold")], [fd])
    s.settimeout(30)
    data, fds, _, _ = socket.recv_fds(s, 312, 1)
    v = struct.unpack(FMT, data)
    print("answer", v[1], v[2], flush=True)
    sys.stdin.read()


def swap(sock, image):
    # Open the image, wait for the test to mount over its directory,
    # then GET with the descriptor opened before.
    fd = os.open(image, os.O_RDONLY)
    print("opened", flush=True)
    sys.stdin.readline()
    r, fds = ask(conn(sock), GET, fd)
    print("swap", r["op"], r["flags"] & F_SITE, flush=True)


{"hostile": hostile, "opath": opath, "hold": hold,
 "swap": swap}[sys.argv[1]](*sys.argv[2:])
PY
chmod 0644 "$T/kw.py"

# copy_words PID FD IMAGE OFFSET: the chunks the copy open at FD in process
# PID marks complete, each compared with the image's bytes: prints
# "complete N bad M" (root reads it through /proc).
cat >"$T/words.py" <<'PY'
import os, sys
pid, fd, image, off = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
c = open("/proc/%s/fd/%d" % (pid, fd), "rb").read()
size = int.from_bytes(c[-112 + 16:-112 + 24], "little")
page = 4096
words = (size + page - 1) // page * page
n = (size + (128 << 10) - 1) // (128 << 10)
img = open(image, "rb")
good = bad = 0
for i in range(n):
    w = int.from_bytes(c[words + 4 * i:words + 4 * i + 4], "little")
    if w != 1:
        continue
    img.seek(off + i * (128 << 10))
    want = img.read(min(128 << 10, size - i * (128 << 10)))
    got = c[i * (128 << 10):i * (128 << 10) + len(want)]
    good += got == want
    bad += got != want
print("complete", good, "bad", bad, "of", n)
PY

# copy_fd PID: the descriptor of the site copy a daemon holds
copy_fd() {
    for f in /proc/$1/fd/*; do
        case "$(readlink "$f")" in
        /memfd:squashcache-site*) echo "${f##*/}"; return 0 ;;
        esac
    done
    return 1
}

start_site_keeper

note "(a) two users at once: one site copy, read from storage once"
: >"$T/pause"
mount_keep "$A" "$IMG" "$T/ma"
[ "$(stat_of "$T/ma" keep.answer)" = site ] ||
    fail "user a: keep.answer $(stat_of "$T/ma" keep.answer), not site: $(tail -5 "$T/keeper.log")"
# Root has not staged a byte (paused): the mount serves at once, from its
# own descriptor.
[ "$(stat_of "$T/ma" stage.staged)" = 0 ] || fail "staged before root staged"
before=$(storage_bytes)
ra0=$(stat_of "$T/ma" image_io.read_bytes)
as "$A" cmp "$T/src/d3/f9" "$T/ma/d3/f9" || fail "a file read while root stages differs"
during=$(($(storage_bytes) - before))
# Still paused (its bound not run out): what the storage gave meanwhile
# was the mount's.
[ "$(kept_site | awk '{ print $2 }')" = 0 ] ||
    fail "root staged the site copy while paused: $(kept_site)"
[ "$during" -ge 200000 ] || fail "the file was not read from the storage by the mount itself"
# Of those, what the daemon's counters miss (spliced from the file).
spliced=$((during - ($(stat_of "$T/ma" image_io.read_bytes) - ra0)))
mount_keep "$B" "$IMG" "$T/mb"
[ "$(stat_of "$T/mb" keep.answer)" = site ] || fail "user b: keep.answer $(stat_of "$T/mb" keep.answer), not site"
rm "$T/pause"
wait_done "$T/ma" 120
wait_done "$T/mb" 120
as "$A" diff -r "$T/src" "$T/ma" >"$T/diffa" 2>&1 || fail "user a: files differ: $(head -5 "$T/diffa")"
as "$B" diff -r "$T/src" "$T/mb" >"$T/diffb" 2>&1 || fail "user b: files differ: $(head -5 "$T/diffb")"
for m in ma mb; do
    [ "$(stat_of "$T/$m" stage.staged)" = "$(stat_of "$T/$m" image_bytes)" ] ||
        fail "$m: staged $(stat_of "$T/$m" stage.staged) of $(stat_of "$T/$m" image_bytes)"
    [ "$(stat_of "$T/$m" stage.by_readers)" = 0 ] || fail "$m staged chunks itself"
done
total=$(storage_bytes)
ra=$(stat_of "$T/ma" image_io.read_bytes)
rb=$(stat_of "$T/mb" image_io.read_bytes)
range=$(stat_of "$T/ma" image_bytes)
"$PYTHON" -c 'import sys
total, spliced, ra, rb, rng = map(int, sys.argv[1:])
root = total - spliced - ra - rb
print("    storage: root read %d bytes for the copy (%.3fx the image: its superblock, then every chunk once); the mounts %d and %d themselves (the file read while root was paused among them), and %d spliced from the file"
      % (root, root / rng, ra, rb, spliced))
print("    in all %.3fx the image" % (total / rng))
sys.exit(0 if abs(root - rng) <= 4096 else 1)' "$total" "$spliced" "$ra" "$rb" "$range" ||
    fail "root did not read the image once for its copy"
# What the mounts read themselves: their superblock and tables, and the
# file read while root was paused.
[ "$((ra + rb))" -lt $((200009 + 2 * 65536)) ] || fail "the mounts read $ra + $rb bytes themselves"
kept_site >"$T/kept-root"
[ "$(wc -l <"$T/kept-root")" -eq 1 ] || fail "not one site copy: $(cat "$T/kept-root")"
grep -q " $uid_a:1" "$T/kept-root" && grep -q " $uid_b:1" "$T/kept-root" ||
    grep -q " $uid_b:1 $uid_a:1\|$uid_a:1 $uid_b:1" "$T/kept-root" ||
    fail "root does not see both users of the site copy: $(cat "$T/kept-root")"
kept_site "$B" >"$T/kept-b"
grep -q "$uid_b:1" "$T/kept-b" && ! grep -q "$uid_a:" "$T/kept-b" ||
    fail "user b sees other users of the site copy: $(cat "$T/kept-b")"
"$MOUNTCTL" status --kept --socket "$K" | grep -q "the site's, for all its readers" ||
    fail "status --kept does not say the copy is the site's"

note "(b) no user can change a byte of it"
as "$B" "$PYTHON" "$T/kw.py" hostile "$K" "$IMG" >"$T/hostile.out" 2>&1 ||
    fail "the hostile client failed: $(cat "$T/hostile.out")"
cat "$T/hostile.out" | sed 's/^/    /'
grep -q "^mode 0o0$" "$T/hostile.out" || fail "the copy is not handed out read-only"
! grep -q ALLOWED "$T/hostile.out" || fail "a user could write to the site copy"
[ "$(grep -c '^refused' "$T/hostile.out")" -ge 9 ] || fail "not every attempt was made"
grep -q "^put 9 -71$" "$T/hostile.out" || fail "a user's own PUT after the site copy was not refused (EPROTO)"
grep -q "^forget 9 0$" "$T/hostile.out" || fail "a user's FORGET dropped something"
[ "$(wc -l <"$T/kept-root")" -eq "$(kept_site | wc -l)" ] || fail "the site copy is gone"
# The other user's mount reads the source's bytes (the page cache dropped
# first: from the copy again).
sync
echo 3 >/proc/sys/vm/drop_caches
as "$A" diff -r "$T/src" "$T/ma" >"$T/diffa" 2>&1 || fail "user a: files differ after b's attempts: $(head -5 "$T/diffa")"
kpid_copy=$(copy_fd "$(sqc_pid "$T/ma")") || fail "user a's daemon holds no site copy"
"$PYTHON" "$T/words.py" "$(sqc_pid "$T/ma")" "$kpid_copy" "$T/src.sqfs" 0 >"$T/words.out"
grep -q " bad 0 " "$T/words.out" || fail "the copy's complete chunks are not the image's: $(cat "$T/words.out")"
note "    $(cat "$T/words.out")"

note "(c) a third user later: the copy whole at once, nothing read again"
before=$(storage_bytes)
mount_keep "$C" "$IMG" "$T/mc"
[ "$(stat_of "$T/mc" keep.answer)" = site ] || fail "user c: keep.answer $(stat_of "$T/mc" keep.answer)"
[ "$(stat_of "$T/mc" keep.adopted)" = "$range" ] || fail "user c adopted $(stat_of "$T/mc" keep.adopted) of $range"
as "$C" diff -r "$T/src" "$T/mc" >"$T/diffc" 2>&1 || fail "user c: files differ: $(head -5 "$T/diffc")"
after=$(storage_bytes)
note "    storage read for user c's mount: $((after - before)) bytes"
[ $((after - before)) -le 4096 ] || fail "user c's mount read $((after - before)) bytes of the image again"
for m in ma mb mc; do
    sqc_umount "$T/$m"
done

note "(d) a user who cannot open the image gets no site copy"
cp "$T/src.sqfs" "$T/site2/secret.sqfs"
chmod 0600 "$T/site2/secret.sqfs"
! as "$B" cat "$T/site2/secret.sqfs" >/dev/null 2>&1 || fail "user b can read the secret image"
as "$B" "$PYTHON" "$T/kw.py" opath "$K" "$T/site2/secret.sqfs" >"$T/opath.out" 2>&1 ||
    fail "the O_PATH client failed: $(cat "$T/opath.out")"
grep -q "^opath 9 -9 0$" "$T/opath.out" || fail "an O_PATH descriptor was not refused (EBADF): $(cat "$T/opath.out")"
! grep -q "secret" "$T/keeper.log" || fail "root looked at the secret image: $(grep secret "$T/keeper.log")"

note "(e) not the site's: a copy per user, root opens nothing of it"
cp "$T/src.sqfs" "$T/own/own.sqfs"
chmod 0644 "$T/own/own.sqfs"
mount_keep "$A" "$T/own/own.sqfs" "$T/mo" stage=full
[ "$(stat_of "$T/mo" keep.answer)" = new ] || fail "an image outside the prefix: keep.answer $(stat_of "$T/mo" keep.answer), not new"
[ "$(stat_of "$T/mo" keep.site)" = False ] || fail "an image outside the prefix got a site copy"
sqc_umount "$T/mo"
# A user's own FUSE mount under the prefix: never a site image.
mkdir -m 0755 "$T/site2/b"
chown "$B" "$T/site2/b"
as "$B" mkdir "$T/site2/b/fs"
: >"$T/failfile-b"
chmod 0644 "$T/failfile-b"
as "$B" "$TOOLS/faultfs" "$T/src.sqfs" "$T/site2/b/fs" "$T/failfile-b" 2>"$T/faultfs-b.log" &
_pids="$! $_pids"
_mounts="$T/site2/b/fs $_mounts"
_b_i=0
until is_mounted "$T/site2/b/fs"; do
    _b_i=$((_b_i + 1))
    [ $_b_i -lt 250 ] || fail "user b's faultfs did not mount"
    sleep 0.02
done
mount_keep "$B" "$T/site2/b/fs/image" "$T/mbf"
# (Root cannot even fstat() it: FUSE lets no other user in without
# allow_other, so the keeper answers an error and the mount stages as
# without keep; a copy of b's own would do as well.)
case "$(stat_of "$T/mbf" keep.answer)" in
new | error) ;;
*) fail "an image on user b's own FUSE mount: keep.answer $(stat_of "$T/mbf" keep.answer)" ;;
esac
[ "$(stat_of "$T/mbf" keep.site)" = False ] || fail "an image on user b's own FUSE mount got a site copy"
sqc_umount "$T/mbf"
as "$B" fusermount3 -u "$T/site2/b/fs"
# Its path swapped: b opens a file of theirs under the prefix, mounts
# their own FUSE file system over its directory, then asks.  Root walks
# the path a component at a time and stops at b's mount.
cp "$T/src.sqfs" "$T/site2/b/image"
chown "$B" "$T/site2/b/image"
mkfifo "$T/go"
chmod 0666 "$T/go"
( as "$B" "$PYTHON" "$T/kw.py" swap "$K" "$T/site2/b/image" <"$T/go" >"$T/swap.out" 2>&1 ) &
swap=$!
exec 8>"$T/go"
_s_i=0
until grep -q opened "$T/swap.out" 2>/dev/null; do
    _s_i=$((_s_i + 1))
    [ $_s_i -lt 500 ] || fail "the swap client did not open the image: $(cat "$T/swap.out")"
    sleep 0.02
done
as "$B" "$TOOLS/faultfs" "$T/src.sqfs" "$T/site2/b" "$T/failfile-b" 2>>"$T/faultfs-b.log" &
_pids="$! $_pids"
_mounts="$T/site2/b $_mounts"
_b_i=0
until is_mounted "$T/site2/b"; do
    _b_i=$((_b_i + 1))
    [ $_b_i -lt 250 ] || fail "user b's faultfs did not mount over its directory"
    sleep 0.02
done
echo go >&8
exec 8>&-
wait $swap || fail "the swap client failed: $(cat "$T/swap.out")"
grep -q "^swap 7 0$" "$T/swap.out" ||
    fail "a GET whose path b mounted over was not answered NONE: $(cat "$T/swap.out")"
grep -q "'$T/site2/b/image'.*a user's own file system" "$T/keeper.log" ||
    fail "the keeper did not stop at user b's file system: $(tail -5 "$T/keeper.log")"
as "$B" fusermount3 -u "$T/site2/b"
# A seal that is b's symlink to a file only root may read: root does not
# follow it (nor read the file), and the image gets no site copy.
echo "root's secret" >"$T/site2/secret.txt"
chmod 0600 "$T/site2/secret.txt"
as "$B" cp "$T/src.sqfs" "$T/site2/b/image2"
as "$B" ln -s "$T/site2/secret.txt" "$T/site2/b/image2.sqcseal"
mount_keep "$B" "$T/site2/b/image2" "$T/mbs" stage=full,seal=off
[ "$(stat_of "$T/mbs" keep.site)" = False ] || fail "an image whose seal is a symlink got a site copy"
grep -q "cannot open the seal '$T/site2/b/image2.sqcseal' (Too many levels of symbolic links)" "$T/keeper.log" ||
    fail "the keeper did not refuse the symlinked seal: $(tail -3 "$T/keeper.log")"
sqc_umount "$T/mbs"

note "(f) the image changed: staged afresh"
cp "$T/src.sqfs" "$T/site2/pub.sqfs"
chmod 0644 "$T/site2/pub.sqfs"
mount_keep "$A" "$T/site2/pub.sqfs" "$T/mf" stage=full
[ "$(stat_of "$T/mf" keep.answer)" = site ] || fail "(f): keep.answer $(stat_of "$T/mf" keep.answer)"
wait_done "$T/mf" 60
sqc_umount "$T/mf"
# Rewritten in place, its size and mtime as they were.
cp -r "$T/src" "$T/src2"
echo "changed" >"$T/src2/d0/f0"
mkimg "$T/src2" "$T/src2.sqfs" -comp lz4 -all-time 0 -mkfs-time 0 -all-root
mt=$(stat -c %y "$T/site2/pub.sqfs")
truncate -s "$(stat -c %s "$T/site2/pub.sqfs")" "$T/src2.sqfs"
dd if="$T/src2.sqfs" of="$T/site2/pub.sqfs" conv=notrunc status=none
touch -d "$mt" "$T/site2/pub.sqfs"
mount_keep "$B" "$T/site2/pub.sqfs" "$T/mf2" stage=full
[ "$(stat_of "$T/mf2" keep.answer)" = site ] || fail "(f) changed: keep.answer $(stat_of "$T/mf2" keep.answer)"
[ "$(stat_of "$T/mf2" keep.adopted)" -lt "$(stat_of "$T/mf2" image_bytes)" ] ||
    fail "the changed image's old copy was given"
wait_done "$T/mf2" 60
as "$B" diff -r "$T/src2" "$T/mf2" >"$T/difff" 2>&1 || fail "the changed image: files differ: $(head -5 "$T/difff")"
sqc_umount "$T/mf2"
n=$("$MOUNTCTL" status --kept --json --socket "$K" | "$PYTHON" -c 'import json, sys
print(sum(1 for e in json.load(sys.stdin) if e["site"] and e["image"].endswith("/pub.sqfs")))')
[ "$n" = 1 ] || fail "$n site copies of the changed image, not 1"

note "(g) a corrupt byte with a seal: never complete, EIO; a root not the site's: no site copy"
cp "$TOP/tests/images/corrupt.py" "$T/corrupt.py"
mkdir -p "$T/gsrc/sub"
"$PYTHON" - "$T/gsrc" <<'PY'
import random, sys
r = random.Random(41)
open(sys.argv[1] + "/aaa-target", "wb").write(r.randbytes(300000))
open(sys.argv[1] + "/zzz-other", "wb").write(r.randbytes(200000))
open(sys.argv[1] + "/sub/small", "w").write("hello, site\n")
PY
mkimg "$T/gsrc" "$T/g.sqfs" -noD -all-root
groot=$("$MOUNTCTL" seal "$T/g.sqfs" | cut -d' ' -f1)
# 10000 bytes into the data: aaa-target's first block, the image's block 2.
"$PYTHON" "$T/corrupt.py" flip "$T/g.sqfs" "$T/site2/g.sqfs" data 10000
cp "$T/g.sqfs.sqcseal" "$T/site2/g.sqfs.sqcseal"
chmod 0644 "$T/site2/g.sqfs" "$T/site2/g.sqfs.sqcseal"
mount_keep "$A" "$T/site2/g.sqfs" "$T/mg" stage=full
[ "$(stat_of "$T/mg" keep.answer)" = site ] || fail "(g): keep.answer $(stat_of "$T/mg" keep.answer)"
wait_done "$T/mg" 60
gline=$(kept_site | grep "/g.sqfs ")
grange=$(echo "$gline" | cut -d' ' -f3)
[ "$(echo "$gline" | cut -d' ' -f2)" -eq $((grange - 131072)) ] ||
    fail "the corrupt chunk was marked complete (or more left out): $gline"
grep -q "site copy of '$T/site2/g.sqfs': block 2 .* does not match its seal; its chunk is never marked complete" "$T/keeper.log" ||
    fail "the keeper did not say which block is corrupt: $(grep g.sqfs "$T/keeper.log")"
! as "$A" cat "$T/mg/aaa-target" >/dev/null 2>&1 || fail "the corrupt block read without EIO"
as "$A" cmp "$T/gsrc/zzz-other" "$T/mg/zzz-other" || fail "zzz-other differs"
as "$A" cmp "$T/gsrc/sub/small" "$T/mg/sub/small" || fail "sub/small differs"
[ "$(stat_of "$T/mg" verify.blocks_bad)" -ge 1 ] || fail "the mount counted no bad block"
# The mount trusts root's check of the staged chunks (the same root): it
# hashed what it read from the file only.
[ "$(stat_of "$T/mg" verify.bytes_hashed)" -lt "$grange" ] ||
    fail "the mount hashed the staged copy again ($(stat_of "$T/mg" verify.bytes_hashed) bytes)"
sqc_umount "$T/mg"
# --site-seal root: a root hash the roots file names, not the seal's.
stop_keeper
printf '%s  %s\n' "$(echo "$groot" | tr 0-9a-f 1-9a-f0)" "$T/site2/g.sqfs" >"$T/roots"
chmod 0644 "$T/roots"
start_site_keeper --site-seal root --site-roots "$T/roots"
mount_keep "$A" "$T/site2/g.sqfs" "$T/mg2" stage=full,seal=off
[ "$(stat_of "$T/mg2" keep.answer)" = new ] ||
    fail "a seal whose root the site does not name: keep.answer $(stat_of "$T/mg2" keep.answer), not new"
grep -q "the seal '$T/site2/g.sqfs.sqcseal' is refused (not the root the site names)" "$T/keeper.log" ||
    fail "the keeper did not say why: $(tail -3 "$T/keeper.log")"
sqc_umount "$T/mg2"
# The root it names (the image sealed before it was damaged): a site copy.
printf '%s  %s\n' "$groot" "$T/site2/g.sqfs" >"$T/roots"
printf '%s  %s\n' "$("$MOUNTCTL" seal --check "$T/src.sqfs" 2>/dev/null | cut -d' ' -f1)" "$T/nothing" >>"$T/roots"
stop_keeper
start_site_keeper --site-seal root --site-roots "$T/roots"
mount_keep "$B" "$T/site2/g.sqfs" "$T/mg3" stage=full
[ "$(stat_of "$T/mg3" keep.answer)" = site ] || fail "the root the site names: keep.answer $(stat_of "$T/mg3" keep.answer)"
sqc_umount "$T/mg3"
# And an image without a seal: none under --site-seal root.
mount_keep "$B" "$T/site2/pub.sqfs" "$T/mg4" stage=full
[ "$(stat_of "$T/mg4" keep.answer)" = new ] || fail "an image without a seal under --site-seal root: $(stat_of "$T/mg4" keep.answer)"
sqc_umount "$T/mg4"
stop_keeper

note "(h) kill -9 of a mount, then of the keeper, while it stages"
start_site_keeper
# A mount killed while root stages: root's staging and the other mount
# go on, the copy complete.
: >"$T/pause"
mount_keep "$A" "$IMG" "$T/mk1"
mount_keep "$B" "$IMG" "$T/mk2"
[ "$(stat_of "$T/mk1" keep.answer)" = site ] && [ "$(stat_of "$T/mk2" keep.answer)" = site ] ||
    fail "(h): the mounts got no site copy"
kpid1=$(sqc_pid "$T/mk1")
kill -9 "$kpid1"
wait_gone "$kpid1" 10 "the killed daemon"
fusermount3 -u -z "$T/mk1" 2>/dev/null || true
rm "$T/pause"
wait_done "$T/mk2" 60
as "$B" diff -r "$T/src" "$T/mk2" >"$T/diffk" 2>&1 || fail "the other mount after a kill -9: files differ"
[ "$(kept_site | awk '{print $2 == $3}')" = 1 ] || fail "the copy is not complete after a mount's kill -9: $(kept_site)"
sqc_umount "$T/mk2"
stop_keeper
start_site_keeper
mount_keep "$A" "$IMG" "$T/mh"
[ "$(stat_of "$T/mh" keep.answer)" = site ] || fail "(h): keep.answer $(stat_of "$T/mh" keep.answer)"
_h_i=0
until [ "$(stat_of "$T/mh" stage.staged)" -gt 0 ]; do
    _h_i=$((_h_i + 1))
    [ $_h_i -lt 1000 ] || fail "root staged nothing within 20 s"
    sleep 0.02
done
kill -9 "$KPID"
wait_gone "$KPID" 10 "the keeper"
hpid=$(sqc_pid "$T/mh")
hfd=$(copy_fd "$hpid") || fail "the mount holds no site copy"
"$PYTHON" "$T/words.py" "$hpid" "$hfd" "$T/src.sqfs" 0 >"$T/words-h.out"
note "    after kill -9 at $(stat_of "$T/mh" stage.staged) bytes: $(cat "$T/words-h.out")"
grep -q " bad 0 " "$T/words-h.out" || fail "a chunk marked complete is not the image's: $(cat "$T/words-h.out")"
! grep -q "^complete 62 " "$T/words-h.out" || fail "root finished before the kill: storage too fast to test it"
wait_done "$T/mh" 30
[ "$(stat_of "$T/mh" stage.staged)" -lt "$range" ] || fail "the mount counts the copy whole"
as "$A" diff -r "$T/src" "$T/mh" >"$T/diffh" 2>&1 || fail "after the keeper's kill -9: files differ: $(head -5 "$T/diffh")"
start_site_keeper
mount_keep "$B" "$IMG" "$T/mh2"
[ "$(stat_of "$T/mh2" keep.answer)" = site ] || fail "(h) new keeper: keep.answer $(stat_of "$T/mh2" keep.answer)"
[ "$(stat_of "$T/mh2" keep.adopted)" = 0 ] || fail "the new keeper's copy started with $(stat_of "$T/mh2" keep.adopted) bytes"
wait_done "$T/mh2" 60
as "$B" diff -r "$T/src" "$T/mh2" >"$T/diffh2" 2>&1 || fail "the new keeper's copy: files differ"
sqc_umount "$T/mh"
sqc_umount "$T/mh2"

echo "keep site ok"

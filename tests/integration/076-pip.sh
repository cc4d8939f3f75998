#!/bin/sh
# The Python module squashcache installed with pip, without root and
# offline, as README.md's "Install" gives it (python/pyproject.toml):
#   - into a venv that sees the system's packages (Debian's setuptools,
#     wheel and torch): `pip install --no-index --no-build-isolation`
#     of python/ and of python/[torch]; the version is the programs';
#   - the wheel that builds into a venv of its own, which has no torch:
#     it pulls in no package, squashcache imports, squashcache.torch
#     says it needs PyTorch;
#   - mountctl found on PATH, or through SQUASHCACHE_MOUNTCTL, or a
#     clear error when neither: squashcache.order() on a real mount, and
#     EpochOrder sending each epoch's order (the daemon's order stats);
#   - `python3 -m squashcache.retar --nested` of a tar of class tars (as
#     ImageNet's) into sqfstar gives the tree, every file readable.
# TIMEOUT: 300
. "$(dirname "$0")/lib.sh"
need_cmd mksquashfs
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null ||
    skip "$PYTHON has no venv/ensurepip (Debian: python3-venv; sh tests/deps.sh check)"
"$PYTHON" -c 'import setuptools, wheel' 2>/dev/null ||
    skip "$PYTHON has no setuptools or wheel (Debian: python3-setuptools python3-wheel)"
"$PYTHON" -c 'import torch' 2>/dev/null || skip "$PYTHON has no torch (Debian: python3-torch)"
# Offline, and whatever pip configuration this machine has.
PIP_CONFIG_FILE=/dev/null
PIP_NO_INDEX=1
PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_CONFIG_FILE PIP_NO_INDEX PIP_DISABLE_PIP_VERSION_CHECK
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PYTHONPATH 2>/dev/null || true

# pip builds in the source tree: a copy, so the checkout stays as it is.
cp -R "$TOP/python" "$T/python"
ver=$(sed -n 's/^#define SQC_VERSION "\(.*\)"$/\1/p' "$TOP/lib/util/version.h")
[ -n "$ver" ] || fail "no SQC_VERSION in lib/util/version.h"

# --- 1. A venv with the system's packages: pip install ./python ---------
"$PYTHON" -m venv --system-site-packages "$T/venv" || fail "python3 -m venv failed"
V=$T/venv/bin
(cd "$T" && "$V/pip" install --no-build-isolation ./python) >"$T/pip1.log" 2>&1 ||
    { cat "$T/pip1.log"; fail "pip install --no-build-isolation ./python failed"; }
where=$("$V/python" -c 'import squashcache; print(squashcache.__file__)')
case $where in "$T/venv/"*) ;; *) fail "squashcache imports from $where, not from the venv" ;; esac
got=$("$V/pip" show squashcache | sed -n 's/^Version: //p')
[ "$got" = "$ver" ] || fail "python/pyproject.toml's version is $got, the programs' $ver (lib/util/version.h)"
req=$("$V/pip" show squashcache | sed -n 's/^Requires: *//p')
[ -z "$req" ] || fail "squashcache requires $req; it must need nothing (torch only with [torch])"
(cd "$T" && "$V/pip" install --no-build-isolation './python[torch]') >"$T/pip2.log" 2>&1 ||
    { cat "$T/pip2.log"; fail "pip install './python[torch]' failed (torch is the system's)"; }
"$V/python" -c 'import squashcache.torch' || fail "squashcache.torch does not import in the venv"
note "installed $ver into a venv ($where)"

# --- 2. Its wheel in a venv without torch: no dependency ---------------
(cd "$T" && "$V/pip" wheel --no-deps --no-build-isolation -w "$T/wheels" ./python) >"$T/wheel.log" 2>&1 ||
    { cat "$T/wheel.log"; fail "pip wheel ./python failed"; }
"$PYTHON" -m venv "$T/bare" || fail "python3 -m venv (without system packages) failed"
B=$T/bare/bin
"$B/python" -c 'import torch' 2>/dev/null && fail "the bare venv sees a torch: this part proves nothing"
"$B/pip" install "$T"/wheels/squashcache-*.whl >"$T/pip3.log" 2>&1 ||
    { cat "$T/pip3.log"; fail "installing the wheel into a venv without torch failed (a dependency?)"; }
"$B/python" -c 'import squashcache; assert squashcache.mountpoint_of("/") is None' ||
    fail "squashcache does not import without torch"
err=$("$B/python" -c 'import squashcache.torch' 2>&1) && fail "squashcache.torch imported without torch"
echo "$err" | grep -q "squashcache.torch needs PyTorch" || fail "squashcache.torch without torch says: $err"
note "without torch: squashcache imports, squashcache.torch says it needs PyTorch"

# --- 3. mountctl: on PATH, SQUASHCACHE_MOUNTCTL, neither ---------------
need_fuse
mkdir -p "$T/src/a" "$T/src/b" "$T/nobin"
for i in 1 2 3 4 5 6; do head -c $((i * 5000)) /dev/urandom >"$T/src/a/f$i"; done
echo b >"$T/src/b/g"
mkimg "$T/src" "$T/img.sqfs"
# Nothing staged: each epoch's order has files to read ahead, and counts.
sqc_mount "$T/img.sqfs" "$T/mnt" -o stage=none
bindir=$(dirname "$MOUNTCTL")
cat >"$T/order.py" <<'PY'
import os, sys, squashcache
mnt = sys.argv[1]
paths = [os.path.join(mnt, "a", "f%d" % i) for i in (3, 1, 2)]
try:
    print(squashcache.order(paths))
except squashcache.OrderError as e:
    print("OrderError:", e)
    sys.exit(3)
PY
# PATH without mountctl: only the system's directories.
out=$(env -u SQUASHCACHE_MOUNTCTL PATH=/usr/bin:/bin "$V/python" "$T/order.py" "$T/mnt") && rc=0 || rc=$?
command -v mountctl >/dev/null 2>&1 && [ "$(command -v mountctl)" != "$MOUNTCTL" ] &&
    note "a mountctl is installed on this machine ($(command -v mountctl)); the PATH case below uses the build's"
if ! PATH=/usr/bin:/bin command -v mountctl >/dev/null 2>&1; then
    [ "$rc" -eq 3 ] || fail "order() without mountctl on PATH: exit $rc, $out"
    echo "$out" | grep -q "mountctl is not on PATH.*SQUASHCACHE_MOUNTCTL" ||
        fail "order() without mountctl says: $out"
fi
out=$(env -u SQUASHCACHE_MOUNTCTL PATH="$bindir:/usr/bin:/bin" "$V/python" "$T/order.py" "$T/mnt") ||
    fail "order() with mountctl on PATH: $out"
echo "$out" | grep -q "^order: 3 files" || fail "order() with mountctl on PATH: $out"
out=$(env SQUASHCACHE_MOUNTCTL="$MOUNTCTL" PATH=/usr/bin:/bin "$V/python" "$T/order.py" "$T/mnt") ||
    fail "order() with SQUASHCACHE_MOUNTCTL: $out"
echo "$out" | grep -q "^order: 3 files" || fail "order() with SQUASHCACHE_MOUNTCTL: $out"
out=$(env SQUASHCACHE_MOUNTCTL="$T/nobin/mountctl" PATH="$bindir:/usr/bin:/bin" "$V/python" "$T/order.py" "$T/mnt") &&
    fail "order() ran a SQUASHCACHE_MOUNTCTL that does not exist: $out"
echo "$out" | grep -q "cannot run $T/nobin/mountctl" || fail "order() with a missing SQUASHCACHE_MOUNTCTL says: $out"
note "mountctl found on PATH and through SQUASHCACHE_MOUNTCTL"

# EpochOrder, installed, strict: each epoch's order reaches the daemon.
orders0=$(stat_of "$T/mnt" order.orders)
cat >"$T/epochs.py" <<'PY'
import os, sys
from torch.utils.data import RandomSampler
from squashcache.torch import EpochOrder
mnt = sys.argv[1]
paths = sorted(os.path.join(mnt, "a", f) for f in os.listdir(os.path.join(mnt, "a")))
s = EpochOrder(RandomSampler(paths), paths, strict=True)
for epoch in range(2):
    seen = sorted(paths[i] for i in s)
    assert seen == paths, seen
    print("epoch", epoch, s.last)
PY
out=$(PATH="$bindir:/usr/bin:/bin" "$V/python" "$T/epochs.py" "$T/mnt" 2>&1) || fail "EpochOrder in the venv: $out"
echo "$out"
[ "$(echo "$out" | grep -c '^epoch [01] order: 6 files')" -eq 2 ] || fail "EpochOrder did not give two orders of 6 files"
orders1=$(stat_of "$T/mnt" order.orders)
[ "$orders1" -eq $((orders0 + 2)) ] || fail "the daemon counted $((orders1 - orders0)) orders from EpochOrder's two epochs"
sqc_umount "$T/mnt"

# --- 4. squashcache.retar: a tar of class tars packed by sqfstar --------
# As ImageNet's ILSVRC2012_img_train.tar: one tar per class, its files
# at its top; one of them mode 0600, as a tar may carry.
need_cmd sqfstar
mkdir -p "$T/tree/train/n001" "$T/tree/train/n002" "$T/classes"
for c in n001 n002; do
    for i in 1 2 3; do head -c $((i * 3000 + 7)) /dev/urandom >"$T/tree/train/$c/${c}_$i.JPEG"; done
done
chmod 0600 "$T/tree/train/n001/n001_2.JPEG"
for c in n001 n002; do (cd "$T/tree/train/$c" && tar -cf "$T/classes/$c.tar" ./*.JPEG); done
(cd "$T/classes" && tar -cf "$T/outer.tar" n001.tar n002.tar)
"$V/python" -m squashcache.retar --nested "$T/outer.tar" 2>"$T/retar.err" |
    sqfstar -comp zstd -all-root -no-xattrs -quiet -no-progress "$T/train.sqfs" >/dev/null ||
    { cat "$T/retar.err"; fail "squashcache.retar --nested | sqfstar failed"; }
[ -s "$T/retar.err" ] && { cat "$T/retar.err"; fail "squashcache.retar said something"; }
sqc_mount "$T/train.sqfs" "$T/mnt2"
diff -r "$T/tree/train" "$T/mnt2" || fail "the image packed from the class tars differs from the tree"
left=$(find "$T/mnt2" ! -perm -0444)
[ -z "$left" ] || fail "not readable by all in the image: $left"
[ "$(find "$T/mnt2" -type f | wc -l)" -eq 6 ] || fail "the image does not hold the 6 files"
sqc_umount "$T/mnt2"
note "retar --nested | sqfstar: the tree of the class tars, every file a+r"
echo "pip install checks passed"

#!/bin/sh
# A node's ranks share one mount, each with its own epoch order (issue
# 38): 4 processes, torch.distributed over gloo, each rank a
# DistributedSampler wrapped in squashcache.torch.EpochOrder, a DataLoader
# of 2 persistent workers, DistributedDataParallel of a tiny model for 2
# epochs with set_epoch(), over ImageFolder on a mount that stages a
# quarter of the image (direct_io, so that each epoch's reads reach the
# daemon; tests/py/ddp_check.py):
#   1. every rank's batches, tensors and losses, and the weights, equal
#      those of the same run over the source tree;
#   2. in each epoch the daemon holds the 4 ranks' orders at once (one per
#      rank, named by its pid, with its files and one order per epoch),
#      every byte of each was taken by its rank's readers, and the window
#      served at least what the 4 orders were to read ahead (where each
#      order replaced the one before, as before issue 38, it serves about
#      one rank's);
#   3. once the ranks have exited, their orders are gone.
# TIMEOUT: 300
# TSAN: yes
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"

need_fuse
need_cmd mksquashfs
PY="$TOP/tests/py"
export PYTHONDONTWRITEBYTECODE=1
if ! "$PYTHON" -c 'import torch.distributed, torchvision' >"$T/import.log" 2>&1; then
    skip "$PYTHON cannot import torch.distributed and torchvision: $(tail -n 1 "$T/import.log")"
fi
WORLD=4

note "96 small JPEGs in 4 classes; fragments stored as they are (JPEG data)"
"$PYTHON" "$PY/ddp_check.py" gen "$T/src" --classes 4 --per-class 24
mkimg "$T/src" "$T/img.sqfs" -comp zstd -noF -no-xattrs
ram=$(($(stat -c %s "$T/img.sqfs") / 4))
sqc_mount "$T/img.sqfs" "$T/mnt" -o "stage=full,ram=$ram,direct_io,log=$T/daemon.log"

# ranks NAME ROOT [ARGS...]: the $WORLD ranks of one run, at once.
ranks() {
    _rn=$1 _rr=$2
    shift 2
    _rp=""
    _k=0
    while [ $_k -lt $WORLD ]; do
        PYTHONPATH="$TOP/python" SQUASHCACHE_MOUNTCTL="$MOUNTCTL" \
            "$PYTHON" "$PY/ddp_check.py" run --root "$_rr" --out "$T/$_rn" \
            --init "file://$T/init-$_rn" --rank $_k --world $WORLD \
            --local $_k "$@" >"$T/$_rn-$_k.log" 2>&1 &
        _rp="$_rp $!"
        _k=$((_k + 1))
    done
    _k=0
    for _p in $_rp; do
        wait "$_p" || { cat "$T/$_rn-$_k.log"; fail "rank $_k of the $_rn run failed"; }
        _k=$((_k + 1))
    done
}

note "1, 2. $WORLD ranks over the mount with EpochOrder, then over the source"
ranks hinted "$T/mnt" --hint
ranks plain "$T/src"
"$PYTHON" "$PY/ddp_check.py" compare --hinted "$T/hinted" --plain "$T/plain" \
    --world $WORLD >"$T/compare.out" 2>&1 || { cat "$T/compare.out"; fail "the ranks' runs differ, or their orders were not served"; }
cat "$T/compare.out"

note "3. the ranks' orders went with them"
i=0
until [ "$(stat_of "$T/mnt" order.clients)" -eq 0 ]; do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "the ranks' orders outlived them by 10 s"
    sleep 0.1
done
[ "$(stat_of "$T/mnt" order.errors)" -eq 0 ] || fail "order reads failed"
[ "$(stat_of "$T/mnt" fuse.eio)" -eq 0 ] || fail "EIO replies"
echo "the ranks' orders were served, and went with the ranks"

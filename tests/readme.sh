#!/bin/sh
# README.md's commands, in order, as a newcomer runs them.
#
#   sh tests/readme.sh            (or as test 077 runs it, as a user of its own)
#
# In a work directory of its own (under $SQC_WALK_DIR, default $TMPDIR or
# /tmp), with HOME there and a copy of the source tree in
# $HOME/squashcache (the git tree's files, or the tree $SQC_WALK_SRC
# names), this runs every ```sh block of README.md in one bash, in
# order, from that copy: the build and `make install` into ~/.local, a
# venv with `pip install ./python`, packing a sample from a tree and
# from a tar of class tars, the mount, one epoch of the README's
# train.py, the checks and the clean-up.  Its own part is small:
#   - it sets DATA and IMAGES to a sample: 3 classes x 8 JPEGs
#     (tests/py/sqc_dataset.py) in $DATA/train, and the same as
#     $DATA/ILSVRC2012_img_train.tar, a tar of one tar per class;
#   - a ```python block whose first line is "# NAME.py" is saved as NAME.py;
#   - a block after "<!-- walk: skip (why) -->" is not run;
#   - "<!-- walk: also (why): COMMAND -->" runs COMMAND after the next block;
#   - pip is offline (PIP_NO_INDEX=1, PIP_NO_BUILD_ISOLATION=0: the
#     README's own offline variant), and PATH starts with the directory of
#     $PYTHON (default /usr/bin/python3: Debian's torch).
# It then checks that an epoch was trained and that nothing is left
# mounted, and removes what it made, also on failure.  The log of every
# command (bash -x) is in $SQC_WALK_LOG, default the work directory's
# walk.log, printed on failure.  Exit 0 when the walk got through.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
README=${1:-$TOP/README.md}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || { echo "readme.sh: $PYTHON is not there: set PYTHON=" >&2; exit 2; }
[ -f "$README" ] || { echo "readme.sh: no $README" >&2; exit 2; }
parent=${SQC_WALK_DIR:-${TMPDIR:-/tmp}}
W=$(mktemp -d "$parent/sqc-walk.XXXXXX")
user=$(id -un)
base=/dev/shm/$user/squashcache
LOG=${SQC_WALK_LOG:-$W/walk.log}

cleanup() {
    rc=$?
    trap - EXIT INT TERM
    # Whatever the README mounted, under the default base or the walk.
    for m in $(awk -v b="$base/" -v w="$W/" 'index($2, b) == 1 || index($2, w) == 1 { print $2 }' /proc/self/mounts); do
        echo "readme.sh: $m was left mounted; unmounting" >&2
        fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        rc=1
    done
    rmdir "$base/imagenet-train" "$base" "/dev/shm/$user" 2>/dev/null || true
    if [ "$rc" -ne 0 ] && [ -f "$LOG" ]; then
        echo "readme.sh: the walk failed; its last commands:" >&2
        tail -n 40 "$LOG" >&2
    fi
    if [ -n "${SQC_WALK_KEEP:-}" ]; then
        echo "readme.sh: kept $W" >&2
    else
        chmod -R u+w "$W" 2>/dev/null || true
        rm -rf "$W"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- The newcomer's account: HOME, the sources, the data ----------------
HOME=$W/home
mkdir -p "$HOME"
src=$HOME/squashcache
if [ -n "${SQC_WALK_SRC:-}" ]; then
    cp -R "$SQC_WALK_SRC" "$src"
    rm -rf "$src/build" "$src"/build-*
else
    mkdir -p "$src"
    (cd "$TOP" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$src" -xf -
fi
[ -f "$src/Makefile" ] || { echo "readme.sh: no sources copied to $src" >&2; exit 1; }
DATA=$W/data
IMAGES=$W/images
"$PYTHON" "$TOP/tests/py/sqc_dataset.py" --profile demo --classes 3 --per-class 8 \
    --seed 41 --jobs 2 "$DATA/train" >/dev/null
mkdir -p "$W/classes"
for c in "$DATA"/train/*/; do
    c=$(basename "$c")
    (cd "$DATA/train/$c" && tar -cf "$W/classes/$c.tar" ./*)
done
(cd "$W/classes" && tar -cf "$DATA/ILSVRC2012_img_train.tar" ./*.tar)

# --- README.md's blocks, as one script ----------------------------------
"$PYTHON" - "$README" "$W/walk.sh" "$src" <<'PY'
import re, sys
readme, script, src = sys.argv[1:4]
lines = open(readme, encoding="utf-8").read().split("\n")
out = ["# README.md's ```sh blocks, in order (tests/readme.sh)"]
skip, also, i, n = None, [], 0, 0
while i < len(lines):
    line = lines[i]
    m = re.match(r"<!-- walk: skip \((.+)\) -->$", line)
    if m:
        skip = m.group(1)
        i += 1
        continue
    m = re.match(r"<!-- walk: also \((.+)\): (.+) -->$", line)
    if m:
        also.append(m.groups())
        i += 1
        continue
    m = re.match(r"```(\w*)$", line)
    if not m or not m.group(1):
        i += 1
        continue
    lang, start = m.group(1), i + 1
    i += 1
    while i < len(lines) and lines[i] != "```":
        i += 1
    body = lines[start:i]
    i += 1
    if skip is not None:
        out.append("echo '== README.md line %d: not run (%s)'" % (start, skip.replace("'", "")))
        skip = None
        continue
    if lang == "python":
        m = re.match(r"# (\w+\.py)\b", body[0]) if body else None
        if m:
            open("%s/%s" % (src, m.group(1)), "w").write("\n".join(body) + "\n")
            out.append("echo '== README.md line %d: saved %s'" % (start, m.group(1)))
        continue
    if lang != "sh":
        continue
    n += 1
    out.append("echo '== README.md line %d'" % start)
    out.extend(body)
    for why, cmd in also:
        out.append("echo '== walk, after line %d: %s'" % (start, why.replace("'", "")))
        out.append(cmd)
    also = []
if n < 5:
    sys.exit("readme.sh: only %d ```sh blocks in %s" % (n, readme))
open(script, "w").write("\n".join(out) + "\n")
PY

pydir=$(dirname "$PYTHON")
echo "readme.sh: walking $README in $W (log: $LOG)"
set +e
(
    cd "$src" &&
        env -i HOME="$HOME" USER="$user" LOGNAME="$user" LANG=C.UTF-8 TERM=dumb \
            PATH="$pydir:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" TMPDIR="$W" \
            DATA="$DATA" IMAGES="$IMAGES" PYTHONDONTWRITEBYTECODE=1 \
            PIP_NO_INDEX=1 PIP_NO_BUILD_ISOLATION=0 PIP_CONFIG_FILE=/dev/null \
            PIP_DISABLE_PIP_VERSION_CHECK=1 \
            bash -e -x "$W/walk.sh"
) >"$LOG" 2>&1 </dev/null
rc=$?
set -e
[ "$rc" -eq 0 ] || { echo "readme.sh: a README command failed (exit $rc)" >&2; exit 1; }

# --- What the newcomer should have got ----------------------------------
grep -q '^epoch 0: 24 images, last loss [0-9.]*$' "$LOG" ||
    { echo "readme.sh: train.py trained no epoch over the 24 images" >&2; exit 1; }
grep -q '^result  *sound' "$LOG" || { echo "readme.sh: mountctl check did not say sound" >&2; exit 1; }
# (root's mountctl status lists every user's mounts: the exit trap's look
# at the default base is the check then.)
[ "$(id -u)" -eq 0 ] || grep -q '^no squashcache mounts$' "$LOG" ||
    { echo "readme.sh: mounts were left after the clean-up" >&2; exit 1; }
grep -q '^epoch 1: 24 images' "$LOG" || { echo "readme.sh: train.py with EpochOrder trained no second epoch" >&2; exit 1; }
echo "readme.sh: README.md walked: $(grep -c '^== README.md line [0-9]*$' "$LOG") blocks run, $(grep -c '^== README.md line [0-9]*: not run' "$LOG") not run, an epoch trained"

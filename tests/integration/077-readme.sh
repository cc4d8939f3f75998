#!/bin/sh
# README.md followed to the end as a newcomer would: tests/readme.sh runs
# its commands in order (build without root, make install into ~/.local,
# pip install ./python into a venv, pack a sample from a tree and from a
# tar of class tars, mount, one epoch of its train.py and one with
# EpochOrder, check, clean up) in a fresh HOME.  As root it runs as a test
# user of its own (no root, /dev/fuse through an ACL entry, as on a
# cluster), from a copy of the tree that user can read; otherwise as the
# caller.
# TIMEOUT: 900
# SANITIZE: no (the walk makes its own plain build, as a newcomer does)
. "$(dirname "$0")/lib.sh"
need_cmd mksquashfs sqfstar make cc bash tar
[ -c /dev/fuse ] || skip "no /dev/fuse on this machine"
"$PYTHON" -c 'import torch, torchvision, venv, ensurepip, setuptools, wheel' 2>/dev/null ||
    skip "$PYTHON lacks torch, torchvision, venv, setuptools or wheel (sh tests/deps.sh check)"

# The tree as it is (a fresh clone's files, uncommitted changes included).
mkdir -p "$T/src"
if git -C "$TOP" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$TOP" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$T/src" -xf -
else
    (cd "$TOP" && tar --exclude='./build' --exclude='./build-*' -cf - .) | tar -C "$T/src" -xf -
fi
mkdir -p "$T/walk"
if [ "$(id -u)" -eq 0 ]; then
    add_test_user WU
    chmod -R a+rX "$T/src"
    chmod 755 "$T"
    chown "$WU" "$T/walk"
    as "$WU" env SQC_WALK_SRC="$T/src" SQC_WALK_DIR="$T/walk" PYTHON="$PYTHON" \
        sh "$T/src/tests/readme.sh" "$T/src/README.md" || fail "README.md's walk failed as $WU (above)"
else
    [ -r /dev/fuse ] && [ -w /dev/fuse ] || skip "/dev/fuse is not accessible to uid $(id -u)"
    SQC_WALK_SRC="$T/src" SQC_WALK_DIR="$T/walk" sh "$T/src/tests/readme.sh" "$T/src/README.md" ||
        fail "README.md's walk failed (above)"
fi
[ -z "$(ls -A "$T/walk")" ] || fail "the walk left $(ls -A "$T/walk") behind"

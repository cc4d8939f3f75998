#!/bin/sh
# Replay every input that ever crashed a fuzz target (tests/fuzz/regress/:
# image-* through the image walk, decompress-*, index-* and ctl-* through
# their targets), the seed images of every compressor, the control
# messages of tests/fuzz/seeds/fuzz_ctl/ and the seals of
# tests/fuzz/seeds/fuzz_seal/, with the normal build
# (tests/tools/fuzz_replay shares the fuzz targets' code).  Each input runs
# in its own child; a signal, a non-zero exit or a hang fails the test.
# Then the same under valgrind (memcheck, errors and definite leaks fatal)
# when valgrind is installed and the build is not a sanitizer build (the
# two cannot share a process); SQC_VALGRIND=0 skips that half.
# TIMEOUT: 300
. "$(dirname "$0")/lib.sh"

replay="$TOOLS/fuzz_replay"
[ -x "$replay" ] || fail "$replay not built (make tests)"
regress="$TOP/tests/fuzz/regress"
n=$(ls "$regress" 2>/dev/null | wc -l)

set -- "$regress" "$TOP/tests/fuzz/seeds/fuzz_ctl" "$TOP/tests/fuzz/seeds/fuzz_seal"
if command -v mksquashfs >/dev/null 2>&1; then
    sh "$TOP/tests/images/mkimages.sh" "$T/seeds" >"$T/mkimages.log" 2>&1 ||
        { cat "$T/mkimages.log"; fail "mkimages.sh failed"; }
    set -- "$@" "$T/seeds"
else
    note "mksquashfs not installed: regress inputs only"
fi

note "replaying $n regress inputs, the control message seeds and the seed images"
"$replay" -q "$@" >"$T/replay.out" 2>&1 ||
    { grep -Ev '^ok ' "$T/replay.out" | tail -n 30; fail "fuzz_replay failed"; }
tail -n 1 "$T/replay.out"

if [ -n "${SQC_SANITIZE:-}" ]; then
    note "sanitizer build: the valgrind half is left to the plain build"
elif [ "${SQC_VALGRIND:-1}" = 1 ] && command -v valgrind >/dev/null 2>&1; then
    note "again under valgrind"
    valgrind -q --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite --show-leak-kinds=definite \
        "$replay" -q "$@" >"$T/vg.out" 2>&1 ||
        { grep -Ev '^ok ' "$T/vg.out" | tail -n 40; fail "fuzz_replay under valgrind failed"; }
    tail -n 1 "$T/vg.out"
fi
exit 0

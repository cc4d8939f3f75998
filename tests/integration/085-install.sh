#!/bin/sh
# make install PREFIX=...: the programs, the library and its public headers
# (not the private ones), the Python module squashcache, an installed
# squashcached that mounts, the
# systemd unit and its helper, and make uninstall.  The SPANK plugin goes
# under the prefix too, never into the system's Slurm plugin directory.
# TIMEOUT: 120
. "$(dirname "$0")/lib.sh"
need_cmd mksquashfs

make -C "$TOP" --no-print-directory BUILD="$MAKE_BUILD" install PREFIX="$T/prefix" SLURM_PLUGINDIR="$T/prefix/lib/slurm" >"$T/install.log" 2>&1 ||
    { cat "$T/install.log"; fail "make install failed"; }
for f in bin/squashcached bin/mountctl lib/libsquashcache.a \
    include/squashcache/image/image.h include/squashcache/cache/cache.h \
    include/squashcache/ctl/ctl.h include/squashcache/util/log.h; do
    [ -f "$T/prefix/$f" ] || fail "$f was not installed"
done
for f in image/image_i.h image/sqfs_fmt.h decompress/decompress_i.h; do
    [ -e "$T/prefix/include/squashcache/$f" ] && fail "private header $f was installed"
done
# The systemd unit, its helper beside the Slurm hooks, paths rewritten.
unit="$T/prefix/lib/systemd/system/squashcache@.service"
[ -x "$T/prefix/libexec/squashcache/squashcache-dataset" ] || fail "squashcache-dataset was not installed"
[ -f "$unit" ] || fail "squashcache@.service was not installed"
grep -q "^ExecStart=$T/prefix/bin/mountctl keeper " "$T/prefix/lib/systemd/system/squashcache-keeper.service" ||
    fail "squashcache-keeper.service was not installed with the installed mountctl"
grep -q "^ExecStart=$T/prefix/libexec/squashcache/squashcache-dataset start %i\$" "$unit" ||
    fail "the installed unit does not run the installed helper: $(grep ExecStart= "$unit")"
"$T/prefix/bin/squashcached" --version | grep -q '^squashcached ' || fail "installed squashcached does not run"
"$T/prefix/bin/mountctl" --version >/dev/null || fail "installed mountctl does not run"
# The Python helper, where that prefix's python3 looks.
pyver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pydir="$T/prefix/lib/python$pyver/dist-packages"
[ -f "$pydir/squashcache/__init__.py" ] && [ -f "$pydir/squashcache/torch.py" ] &&
    [ -f "$pydir/squashcache/retar.py" ] ||
    fail "the Python module squashcache was not installed in $pydir"
PYTHONPATH="$pydir" "$PYTHON" -c 'import squashcache; assert squashcache.mountpoint_of("/") is None' ||
    fail "the installed Python module squashcache does not import"

# A program built against the installed library and headers.
cat >"$T/use.c" <<'C'
#include <stdio.h>
#include "image/image.h"
int main(int argc, char **argv)
{
	struct img *img;

	if (argc < 2 || img_open(argv[1], NULL, &img))
		return 1;
	printf("%s %u\n", img_compressor(img), img_get_super(img)->inode_count);
	img_close(img);
	return 0;
}
C
# A sanitizer build installs instrumented code: link its runtime too.
san=
[ -n "${SQC_SANITIZE:-}" ] && san="-fsanitize=$SQC_SANITIZE"
# shellcheck disable=SC2086
cc $san -I"$T/prefix/include/squashcache" -o "$T/use" "$T/use.c" \
    "$T/prefix/lib/libsquashcache.a" -llz4 -lzstd -lz -llzma -llzo2 -lcrypto -lpthread ||
    fail "cannot build against the installed library"
mkdir -p "$T/src"
echo data >"$T/src/f"
mkimg "$T/src" "$T/img.sqfs" -comp xz
[ "$("$T/use" "$T/img.sqfs")" = "xz 2" ] || fail "the installed library misreads the image"

if [ -c /dev/fuse ]; then
    SQUASHCACHED="$T/prefix/bin/squashcached" # used by sqc_mount
    export SQUASHCACHED
    sqc_mount "$T/img.sqfs" "$T/m"
    [ "$(cat "$T/m/f")" = data ] || fail "installed daemon serves wrong data"
    sqc_umount "$T/m"
fi
make -C "$TOP" --no-print-directory BUILD="$MAKE_BUILD" uninstall PREFIX="$T/prefix" SLURM_PLUGINDIR="$T/prefix/lib/slurm" >"$T/uninstall.log" 2>&1 ||
    { cat "$T/uninstall.log"; fail "make uninstall failed"; }
[ -e "$unit" ] && fail "make uninstall left squashcache@.service"
[ -e "$T/prefix/lib/systemd/system/squashcache-keeper.service" ] && fail "make uninstall left squashcache-keeper.service"
[ -e "$T/prefix/bin/squashcached" ] && fail "make uninstall left squashcached"
[ -e "$pydir/squashcache" ] && fail "make uninstall left the Python module"
echo "install checks passed"

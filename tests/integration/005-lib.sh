#!/bin/sh
# The test library itself (lib.sh):
#   - sqc_pid and is_mounted take the mount point as a string: with
#     mounts at "m.x[1]+" and at "mAx1" (which that path, read as a
#     pattern, matches) each gives its own daemon.
# TIMEOUT: 120
. "$(dirname "$0")/lib.sh"
need_fuse
need_cmd mksquashfs
mkdir -p "$T/src"
echo hello >"$T/src/f"
mkimg "$T/src" "$T/img.sqfs"
chmod 644 "$T/img.sqfs"

# pid_of MNT: the daemon's pid as it tells it.
pid_of() {
    "$MOUNTCTL" status --json "$1" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)[0]["pid"])'
}

note "sqc_pid: a path with '.', '[' and '+'"
sqc_mount "$T/img.sqfs" "$T/mAx1"
sqc_mount "$T/img.sqfs" "$T/m.x[1]+"
for m in "$T/mAx1" "$T/m.x[1]+"; do
    [ "$(sqc_pid "$m")" = "$(pid_of "$m")" ] ||
        fail "sqc_pid '$m' gave '$(sqc_pid "$m")', the daemon is $(pid_of "$m")"
done
sqc_umount "$T/m.x[1]+"
sqc_umount "$T/mAx1"
[ -z "$(sqc_pid "$T/mAx1")" ] || fail "sqc_pid found a daemon of an unmounted mount"

exit 0

#!/bin/sh
# Install the Debian packages a make target needs.
#
#   sh tests/deps.sh build|check|demo|bench|fuzz|slurm|deb|rpm
#
# As root, missing packages are installed with apt-get.  Otherwise the
# exact apt-get line is printed and the script fails, so that nothing
# starts half-equipped.
set -eu

build="gcc make pkg-config libc6-dev fuse3 libfuse3-dev liburing-dev liblz4-dev libzstd-dev zlib1g-dev liblzma-dev liblzo2-dev libssl-dev"
run="squashfs-tools util-linux procps attr acl"
python="python3 python3-pil python3-torchvision"
# pip install of python/ into a venv, offline (tests/integration/076-pip.sh
# and the README's walk): venv with ensurepip, the build backend and wheel.
pip="python3-venv python3-setuptools python3-wheel"

slurm="slurmd slurmctld slurm-client munge libslurm-dev"
deb="dpkg-dev lintian"
# rpmbuild; find-debuginfo and its eu-strip for the -debuginfo packages;
# python3 says where the spec puts the Python module.
rpm="rpm rpmlint debugedit elfutils python3"
# bubblewrap: the container stand-in of tests/integration/108-container.sh
container="bubblewrap"

case "${1:-build}" in
build) want="$build" ;;
check) want="$build $run $python $pip check psmisc strace clang clang-format valgrind shellcheck mandoc man-db groff-base systemd $slurm $deb $rpm $container" ;;
demo) want="$build $run $python" ;;
bench) want="$build $run $python check squashfuse erofs-utils time python3-h5py strace" ;;
fuzz) want="$build clang libclang-rt-14-dev" ;;
slurm) want="$slurm" ;;
deb) want="$build libslurm-dev $deb" ;;
rpm) want="$build libslurm-dev $rpm" ;;
*) echo "usage: $0 build|check|demo|bench|fuzz|slurm|deb|rpm" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
    if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

line="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
    echo "squashcache: missing Debian packages:$missing" >&2
    echo "squashcache: install them with:" >&2
    echo "    sudo apt-get update && sudo $line" >&2
    exit 1
fi
echo "squashcache: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# An old or empty package index is the usual reason an install fails.
apt-get update -qq || true
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
    { apt-get update && apt-get install -y --no-install-recommends $missing; }

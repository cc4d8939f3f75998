#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The benchmark: tmpfs vs the kernel's squashfs vs squashfuse_ll vs
# squashcached on ML-training access patterns, plus a slow-storage case.
#
#   sh bench/run.sh            the full run (see bench/README.md for how long)
#   sh bench/run.sh --quick    small sets, 2 repetitions: a smoke test
#   sh bench/run.sh scale      ImageNet's shape: 1,281,167 files in 1,000
#                              folders (4.8 GB, lz4), and 320,291 beside it
#   sh bench/run.sh scale --quick   the same shape at 20,000 and 5,000 files
#   sh bench/run.sh ram        larger than RAM: 6,000 images (~600 MB) on
#                              slow storage, squashcached with ram= a
#                              quarter of the image against the kernel's
#                              squashfs and squashfuse_ll on the same storage
#   sh bench/run.sh ram --quick     the same with 400 images
#   sh bench/run.sh decode     decode-bound epochs: ImageFolder + the
#                              training transform, a worker per core, on
#                              squashcached against tmpfs, image in RAM
#                              and on slow storage (20,000 images)
#   sh bench/run.sh decode --quick  the same with 400 images
#   sh bench/run.sh hdf5       the HDF5 recipe HPC courses teach against
#                              ImageFolder over squashcached and over the
#                              untarred tree, in RAM and on slow storage
#   sh bench/run.sh hdf5 --quick    the same with 400 images
#   sh bench/run.sh sweep      jobs on one node with and without a kept
#                              staged copy (issue 28): 8 in a row and 2 at
#                              once, the images set (20,000) on slowfs
#   sh bench/run.sh sweep --quick   the same with 400 images, 1 repetition
#   sh bench/run.sh seal       checked bytes (issue 40): staging and a first
#                              epoch with and without the image's seal, in
#                              /dev/shm and on slowfs (20,000 images)
#   sh bench/run.sh seal --quick    the same with 400 images, 1 repetition
#   sh bench/run.sh ranks      a node's ranks sharing a mount (issue 38):
#                              N ranks (1, 4, 8) x W workers, each rank a
#                              DistributedSampler + EpochOrder, the
#                              6,000 images (~600 MB) on slow storage,
#                              ram= a quarter of the image (bench/ranks.py)
#   sh bench/run.sh ranks --quick   the same with 400 images, 1x1 and 4x1
#   sh bench/run.sh site       site images (issue 40): 2 users x 4 jobs in a
#                              row on one image on slowfs, with a site copy,
#                              a copy per user, and without keeping
#   sh bench/run.sh site --quick    the same with 400 images, 1 repetition
#
# Steps: generate the seeded data sets (cached under $BENCH_WORK), build
# their SquashFS images and tars (cached too, with the time each took),
# copy images and tars into /dev/shm, run bench/bench.py (every pass,
# interleaved), write the raw results and the report to
# $SQC_BENCH_OUT/<date>-<host>[-quick].json and .md, outside the
# repository (default /var/tmp/squashcache-bench/results).
# Needs root: mounts, loop devices and drop_caches.
#
# Every parameter can be set from the environment; the defaults are below.
set -eu

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
QUICK=0
SCALE=0
RAM=0
DECODE=0
HDF5=0
SWEEP=0
SEAL=0
RANKS=0
SITE=0
for a in "$@"; do
	case $a in
	--quick) QUICK=1 ;;
	-h | --help)
		sed -n '3,53p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	scale) SCALE=1 ;;
	ram) RAM=1 ;;
	decode) DECODE=1 ;;
	hdf5) HDF5=1 ;;
	sweep) SWEEP=1 ;;
	seal) SEAL=1 ;;
	ranks) RANKS=1 ;;
	site) SITE=1 ;;
	*)
		echo "bench: unknown argument '$a' (try --help)" >&2
		exit 2
		;;
	esac
done

if [ "$(id -u)" -ne 0 ]; then
	echo "bench: must run as root (mounts, loop devices, drop_caches)" >&2
	exit 1
fi

# FUSE_URING=on|off: the fuse module's enable_uring for this run, set
# back as it was by the trap (the report's machine table says which
# transport each contender used).  Unset: as the machine has it.
URING_PARAM=/sys/module/fuse/parameters/enable_uring
case ${FUSE_URING:-} in
'' | on | off) ;;
*)
	echo "bench: FUSE_URING is 'on', 'off' or unset, not '$FUSE_URING'" >&2
	exit 2
	;;
esac
if [ -n "${FUSE_URING:-}" ] && [ ! -w "$URING_PARAM" ]; then
	echo "bench: FUSE_URING=$FUSE_URING, but $URING_PARAM is not there or not writable (a kernel without FUSE over io_uring?)" >&2
	exit 1
fi

if [ $((SCALE + RAM + DECODE + HDF5 + SWEEP + SEAL + RANKS + SITE)) -gt 1 ]; then
	echo "bench: 'scale', 'ram', 'decode', 'hdf5', 'sweep', 'seal', 'ranks' and 'site' are separate runs; give one" >&2
	exit 2
fi

if [ $RAM = 1 ]; then
	# Larger than RAM (issue #20 item 2): one images set behind slowfs,
	# squashcached staging a quarter of it.  No main part, no slow case.
	if [ $QUICK = 1 ]; then
		: "${RAM_CLASSES:=4}" "${RAM_PER_CLASS:=100}"
		: "${RAM_REPS:=2}" "${RAM_PEER_REPS:=1}" "${RAM_PEER_FIRST:=1}"
		: "${SLOW_TIMEOUT:=300}" "${PASS_TIMEOUT:=300}"
		SUFFIX=-ram-quick
	else
		: "${RAM_CLASSES:=6}" "${RAM_PER_CLASS:=1000}"
		: "${RAM_REPS:=3}" "${RAM_PEER_REPS:=3}" "${RAM_PEER_FIRST:=0}"
		: "${SLOW_TIMEOUT:=900}" "${PASS_TIMEOUT:=1200}"
		SUFFIX=-ram
	fi
	: "${SLOW_PROFILES:=pfs,pfs_slow}"
	: "${REPS:=1}" "${SLOW_REPS:=1}" "${PIL_SUBSET:=100}"
	SLOW=0
	export SLOW RAM RAM_REPS RAM_PEER_REPS RAM_PEER_FIRST SLOW_PROFILES
elif [ $RANKS = 1 ]; then
	# A node's ranks sharing a mount (issue 38 item 3): the larger-than-RAM
	# set behind slowfs, read by N rank processes (bench/ranks.py).
	if [ $QUICK = 1 ]; then
		: "${RAM_CLASSES:=4}" "${RAM_PER_CLASS:=100}" "${RANKS_REPS:=1}"
		: "${RANKS_SHAPES:=1x1,4x1}" "${SLOW_TIMEOUT:=300}"
		SUFFIX=-ranks-quick
	else
		: "${RAM_CLASSES:=6}" "${RAM_PER_CLASS:=1000}" "${RANKS_REPS:=3}"
		: "${SLOW_TIMEOUT:=900}"
		SUFFIX=-ranks
	fi
	: "${SLOW_PROFILES:=pfs,pfs_slow}"
	: "${REPS:=1}" "${SLOW_REPS:=1}" "${PIL_SUBSET:=100}"
	: "${PASS_TIMEOUT:=1200}"
	SLOW=0
	export SLOW SLOW_PROFILES RANKS_REPS
	[ -z "${RANKS_SHAPES:-}" ] || export RANKS_SHAPES
elif [ $SCALE = 1 ]; then
	# ImageNet-1k's tree, bytes scaled down (bench/gen.py imagenet), and
	# a quarter of it for the growth check.  lz4, as issue #20 measured.
	if [ $QUICK = 1 ]; then
		: "${SCALE_FILES:=20000}" "${SCALE_Q_FILES:=5000}"
		: "${SCALE_CLASSES:=100}" "${REPS:=2}"
		: "${PASS_TIMEOUT:=300}"
		SUFFIX=-scale-quick
	else
		: "${SCALE_FILES:=1281167}" "${SCALE_Q_FILES:=320291}"
		: "${SCALE_CLASSES:=1000}" "${REPS:=3}"
		: "${PASS_TIMEOUT:=3600}"
		SUFFIX=-scale
	fi
	: "${SCALE_MEDIAN:=3300}" "${SEED_SCALE:=3}"
	: "${MKSQ_OPTS:=-comp lz4 -no-xattrs}"
	: "${SLOW_REPS:=1}" "${PIL_SUBSET:=100}" "${SLOW_TIMEOUT:=300}"
	SLOW=0
	export SLOW
elif [ $DECODE = 1 ]; then
	# Decode-bound epochs (issue #31 item 3): train_dec on the images set
	# in RAM, and the same transform's epochs with the image (or the tar)
	# on slow storage.  The small set is not used.
	if [ $QUICK = 1 ]; then
		: "${IMG_CLASSES:=4}" "${IMG_PER_CLASS:=100}" "${REPS:=2}"
		: "${SLOW_REPS:=1}" "${PASS_TIMEOUT:=300}" "${SLOW_TIMEOUT:=300}"
		SUFFIX=-decode-quick
	else
		: "${IMG_CLASSES:=20}" "${IMG_PER_CLASS:=1000}" "${REPS:=5}"
		: "${SLOW_REPS:=3}" "${PASS_TIMEOUT:=1200}" "${SLOW_TIMEOUT:=900}"
		SUFFIX=-decode
	fi
	: "${MEASURES:=train_dec,train_decfd}" "${CONTENDERS:=tmpfs,squashcached}"
	: "${SLOW_PROFILES:=pfs,pfs_slow}" "${SLOW_READERS:=dl_dec/images}"
	: "${SLOW_CONTENDERS:=sqc_stage,untar_tmpfs}" "${PIL_SUBSET:=100}"
	export MEASURES CONTENDERS SLOW_PROFILES SLOW_READERS SLOW_CONTENDERS
elif [ $HDF5 = 1 ]; then
	# The HDF5 recipe side by side (issue #31 item 2): the images set as
	# an HDF5 file, an image and a tar, each read in RAM and through
	# slowfs.  No main part, no slow case.
	if [ $QUICK = 1 ]; then
		: "${IMG_CLASSES:=4}" "${IMG_PER_CLASS:=100}" "${H5_REPS:=1}"
		: "${SLOW_TIMEOUT:=300}"
		SUFFIX=-hdf5-quick
	else
		: "${IMG_CLASSES:=20}" "${IMG_PER_CLASS:=1000}" "${H5_REPS:=3}"
		: "${SLOW_TIMEOUT:=1800}"
		SUFFIX=-hdf5
	fi
	: "${REPS:=1}" "${SLOW_REPS:=1}" "${PIL_SUBSET:=100}"
	: "${PASS_TIMEOUT:=300}"
	SLOW=0
	export SLOW HDF5 H5_REPS
elif [ $SWEEP = 1 ]; then
	# Jobs with and without a kept staged copy (issue 28 item 8): the
	# images set behind slowfs, read by bench/sweep.py.  No main part.
	if [ $QUICK = 1 ]; then
		: "${IMG_CLASSES:=4}" "${IMG_PER_CLASS:=100}" "${REPS:=1}"
		: "${SLOW_TIMEOUT:=300}"
		SUFFIX=-sweep-quick
	else
		: "${IMG_CLASSES:=20}" "${IMG_PER_CLASS:=1000}" "${REPS:=3}"
		: "${SLOW_TIMEOUT:=900}"
		SUFFIX=-sweep
	fi
	: "${SLOW_PROFILES:=pfs,pfs_slow}" "${SWEEP_READER:=cread_t16}"
	: "${SLOW_REPS:=1}" "${PIL_SUBSET:=100}" "${PASS_TIMEOUT:=300}"
	SLOW=0
	export SLOW SLOW_PROFILES SWEEP_READER
elif [ $SEAL = 1 ]; then
	# Checked bytes (issue 40 item 5): the images set in /dev/shm and
	# behind slowfs, read by bench/sealbench.py.  No main part.
	if [ $QUICK = 1 ]; then
		: "${IMG_CLASSES:=4}" "${IMG_PER_CLASS:=100}" "${REPS:=1}"
		: "${SLOW_TIMEOUT:=300}"
		SUFFIX=-seal-quick
	else
		: "${IMG_CLASSES:=20}" "${IMG_PER_CLASS:=1000}" "${REPS:=3}"
		: "${SLOW_TIMEOUT:=900}"
		SUFFIX=-seal
	fi
	: "${SLOW_PROFILES:=pfs,pfs_slow}" "${SEAL_READER:=cread_t16}"
	: "${SLOW_REPS:=1}" "${PIL_SUBSET:=100}" "${PASS_TIMEOUT:=300}"
	SLOW=0
	export SLOW SLOW_PROFILES SEAL_READER
elif [ $SITE = 1 ]; then
	# Site images (issue 40 item 5): the images set behind slowfs, users'
	# jobs in a row, read by bench/sitebench.py.  No main part.
	if [ $QUICK = 1 ]; then
		: "${IMG_CLASSES:=4}" "${IMG_PER_CLASS:=100}" "${REPS:=1}"
		: "${SLOW_TIMEOUT:=300}"
		SUFFIX=-site-quick
	else
		: "${IMG_CLASSES:=20}" "${IMG_PER_CLASS:=1000}" "${REPS:=3}"
		: "${SLOW_TIMEOUT:=900}"
		SUFFIX=-site
	fi
	: "${SLOW_PROFILES:=pfs,pfs_slow}"
	: "${SLOW_REPS:=1}" "${PIL_SUBSET:=100}" "${PASS_TIMEOUT:=300}"
	SLOW=0
	export SLOW SLOW_PROFILES
elif [ $QUICK = 1 ]; then
	: "${IMG_CLASSES:=4}" "${IMG_PER_CLASS:=100}"
	: "${SMALL_FILES:=10000}" "${SMALL_DIRS:=64}"
	: "${REPS:=2}" "${SLOW_REPS:=1}" "${PIL_SUBSET:=100}"
	: "${PASS_TIMEOUT:=300}" "${SLOW_TIMEOUT:=300}"
	SUFFIX=-quick
else
	: "${IMG_CLASSES:=20}" "${IMG_PER_CLASS:=1000}"
	: "${SMALL_FILES:=300000}" "${SMALL_DIRS:=1024}"
	: "${REPS:=3}" "${SLOW_REPS:=3}" "${PIL_SUBSET:=1000}"
	: "${PASS_TIMEOUT:=1200}" "${SLOW_TIMEOUT:=900}"
	SUFFIX=
fi
: "${SEED_IMAGES:=1}" "${SEED_SMALL:=2}"
# zstd level 3 rather than the default 15: the images build several times
# faster and decompress at the same speed (the JPEG data barely compresses).
: "${MKSQ_OPTS:=-comp zstd -Xcompression-level 3 -no-xattrs}"
: "${TAR_BLOCKING:=2048}"
: "${BENCH_WORK:=/var/tmp/squashcache-bench}"
: "${SQC_BENCH_OUT:=$BENCH_WORK/results}"
: "${RESULTS:=$SQC_BENCH_OUT}"
: "${RAW_RESULTS:=$SQC_BENCH_OUT}"
export BUILD PYTHON REPS SLOW_REPS PIL_SUBSET PASS_TIMEOUT SLOW_TIMEOUT \
	TAR_BLOCKING

for t in mksquashfs tar fusermount3 mount losetup; do
	command -v $t >/dev/null || {
		echo "bench: '$t' is missing (sh tests/deps.sh bench)" >&2
		exit 1
	}
done
make -s --no-print-directory BUILD="$BUILD" "$BUILD/squashcached" \
	"$BUILD/mountctl" "$BUILD/bench/preader" "$BUILD/bench/slowfs" "$BUILD/bench/zerofs" \
	"$BUILD/bench/hashspeed"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
say() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# -- data sets, images, tars (cached by parameters) -------------------------
mkdir -p "$BENCH_WORK"
comp_key=$(echo "$MKSQ_OPTS" | tr -c 'a-zA-Z0-9\n' '_' | tr -s _)

# build_set KIND KEY GEN_ARGS...: source tree, list, image and tar of a set
# (KIND is bench/gen.py's; KEY names every parameter of the tree)
build_set() {
	name=$1 key=$2
	shift 2
	src=$BENCH_WORK/$key
	if [ ! -f "$src.json" ]; then
		rm -rf "$src" "$src.list" "$src.json"
		say "generating $name: $*"
		"$PYTHON" bench/gen.py "$name" "$src" "$@" >/dev/null
	fi
	img=$src-$comp_key.sqfs
	bj=$img.build.json
	if [ ! -f "$bj" ]; then
		rm -f "$img" "$src.tar"
		say "mksquashfs $name"
		t0=$(now)
		# shellcheck disable=SC2086
		mksquashfs "$src" "$img" $MKSQ_OPTS -quiet -no-progress >/dev/null
		mksq_s=$(since "$t0")
		say "tar $name"
		t0=$(now)
		tar -C "$src" -b "$TAR_BLOCKING" -cf "$src.tar.tmp" .
		tar_s=$(since "$t0")
		mv "$src.tar.tmp" "$src.tar"
		cat >"$bj" <<EOF
{"mksquashfs_s": $mksq_s, "mksquashfs_cmd": "mksquashfs SRC IMG $MKSQ_OPTS",
 "image_bytes": $(stat -c %s "$img"), "tar_s": $tar_s,
 "tar_cmd": "tar -C SRC -b $TAR_BLOCKING -cf TAR .",
 "tar_bytes": $(stat -c %s "$src.tar"),
 "built_at": "$(date '+%Y-%m-%d %H:%M:%S')", "host": "$(hostname)"}
EOF
	fi
}

if [ $SCALE = 1 ]; then
	set1=scale set2=scale_q
	med=$([ "$SCALE_MEDIAN" = 3300 ] || echo "-m$SCALE_MEDIAN")
	key1=imagenet-$SCALE_FILES-$SCALE_CLASSES-s$SEED_SCALE$med
	key2=imagenet-$SCALE_Q_FILES-$SCALE_CLASSES-s$SEED_SCALE$med
	build_set imagenet "$key1" --files "$SCALE_FILES" \
		--classes "$SCALE_CLASSES" --median "$SCALE_MEDIAN" \
		--seed "$SEED_SCALE"
	build_set imagenet "$key2" --files "$SCALE_Q_FILES" \
		--classes "$SCALE_CLASSES" --median "$SCALE_MEDIAN" \
		--seed "$SEED_SCALE"
elif [ $RAM = 1 ] || [ $RANKS = 1 ]; then
	set1=images set2=
	key1=images-${RAM_CLASSES}x${RAM_PER_CLASS}-s$SEED_IMAGES
	key2=
	build_set images "$key1" --classes "$RAM_CLASSES" \
		--per-class "$RAM_PER_CLASS" --seed "$SEED_IMAGES"
elif [ $DECODE = 1 ] || [ $HDF5 = 1 ] || [ $SWEEP = 1 ] || [ $SEAL = 1 ] ||
	[ $SITE = 1 ]; then
	set1=images set2=
	key1=images-${IMG_CLASSES}x${IMG_PER_CLASS}-s$SEED_IMAGES
	key2=
	build_set images "$key1" --classes "$IMG_CLASSES" \
		--per-class "$IMG_PER_CLASS" --seed "$SEED_IMAGES"
else
	set1=images set2=small
	key1=images-${IMG_CLASSES}x${IMG_PER_CLASS}-s$SEED_IMAGES
	key2=small-${SMALL_FILES}-${SMALL_DIRS}-s$SEED_SMALL
	build_set images "$key1" --classes "$IMG_CLASSES" \
		--per-class "$IMG_PER_CLASS" --seed "$SEED_IMAGES"
	build_set small "$key2" --files "$SMALL_FILES" --dirs "$SMALL_DIRS" \
		--seed "$SEED_SMALL"
fi

# The HDF5 file of the images set, as the course converts it (timed,
# cached like the image and the tar).
if [ $HDF5 = 1 ]; then
	"$PYTHON" -c 'import h5py' 2>/dev/null || {
		echo "bench: $PYTHON cannot import h5py (sh tests/deps.sh bench)" >&2
		exit 1
	}
	h5=$BENCH_WORK/$key1.h5
	if [ ! -f "$h5.build.json" ]; then
		rm -f "$h5"
		say "h5build images"
		"$PYTHON" bench/h5build.py "$BENCH_WORK/$key1" "$h5" >"$h5.tmp.json"
		mv "$h5.tmp.json" "$h5.build.json"
	fi
fi

# -- scratch in /dev/shm, and the trap that always cleans it ----------------
SCRATCH=/dev/shm/squashcache-bench.$$
STORE=$SCRATCH/store
export SCRATCH STORE

URING_WAS= # enable_uring before FUSE_URING set it
cleanup() {
	set +e
	[ -z "$URING_WAS" ] || echo "$URING_WAS" >"$URING_PARAM"
	if [ -f "$SCRATCH/mounts.txt" ]; then
		# newest first: slowfs goes last, after what was mounted from it
		tac "$SCRATCH/mounts.txt" | while read -r m; do
			grep -qs " $m " /proc/mounts || continue
			fusermount3 -u "$m" 2>/dev/null || umount "$m" 2>/dev/null ||
				umount -l "$m"
		done
	fi
	if [ -f "$SCRATCH/pids.txt" ]; then
		while read -r p; do
			# only our daemons: their command line names the scratch dir
			[ -r "/proc/$p/cmdline" ] || continue
			tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null |
				grep -q "$SCRATCH" && kill "$p" 2>/dev/null
		done <"$SCRATCH/pids.txt"
	fi
	rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if [ -n "${FUSE_URING:-}" ]; then
	URING_WAS=$(cat "$URING_PARAM")
	[ "$FUSE_URING" = on ] && want=Y || want=N
	echo "$want" >"$URING_PARAM"
	say "fuse enable_uring=$want for this run (was $URING_WAS)"
fi

mkdir -p "$STORE" "$SCRATCH/tmpfs" "$SCRATCH/build/bench"
# A private copy of the binaries: others may rebuild build/ during a long run.
cp "$BUILD/squashcached" "$BUILD/bench/preader" "$BUILD/bench/slowfs" \
	"$SCRATCH/build/"
mv "$SCRATCH/build/preader" "$SCRATCH/build/slowfs" "$SCRATCH/build/bench/"
cp "$BUILD/bench/zerofs" "$BUILD/bench/hashspeed" "$SCRATCH/build/bench/"
[ -x "$BUILD/mountctl" ] && cp "$BUILD/mountctl" "$SCRATCH/build/"
SQC_BINARY="$BUILD/squashcached, built $(date -r "$BUILD/squashcached" \
	'+%Y-%m-%d %H:%M:%S'), sha256 $(sha256sum <"$BUILD/squashcached" |
	cut -c1-16)"
export SQC_BINARY
BUILD=$SCRATCH/build
say "copying images and tars into $STORE"
for key in $key1 $key2; do
	cp "$BENCH_WORK/$key-$comp_key.sqfs" "$STORE/"
	# At scale the tars stay on disk: /dev/shm holds the images and the
	# extracted trees (about 14 GB at 1.28M files).  The larger-than-RAM
	# case reads the image only.
	if [ $SCALE = 1 ]; then
		ln -s "$BENCH_WORK/$key.tar" "$STORE/$key.tar"
	elif [ $RAM = 0 ] && [ $SWEEP = 0 ] && [ $SEAL = 0 ] && [ $RANKS = 0 ] && [ $SITE = 0 ]; then
		cp "$BENCH_WORK/$key.tar" "$STORE/"
	fi
done
[ $HDF5 = 0 ] || cp "$BENCH_WORK/$key1.h5" "$STORE/"

# set_json SET KEY TAR: one data set's entry of datasets.json
set_json() {
	cat <<EOF
 "$1": {"name": "$1", "src": "$BENCH_WORK/$2",
  "list": "$BENCH_WORK/$2.list",
  "gen_json": "$BENCH_WORK/$2.json",
  "build_json": "$BENCH_WORK/$2-$comp_key.sqfs.build.json",
  "image": "$STORE/$2-$comp_key.sqfs",
  "tar": "$3",
  "h5": "$STORE/$2.h5", "h5_build_json": "$BENCH_WORK/$2.h5.build.json",
  "tmpfs_root": "$SCRATCH/tmpfs/$1"}
EOF
}
{
	echo "{"
	if [ $RAM = 1 ] || [ $SWEEP = 1 ] || [ $SEAL = 1 ] || [ $RANKS = 1 ] || [ $SITE = 1 ]; then
		# the tar is not read: it stays on disk
		set_json "$set1" "$key1" "$BENCH_WORK/$key1.tar"
	elif [ -z "$key2" ]; then
		set_json "$set1" "$key1" "$STORE/$key1.tar"
	else
		set_json "$set1" "$key1" "$STORE/$key1.tar"
		echo ","
		set_json "$set2" "$key2" "$STORE/$key2.tar"
	fi
	echo "}"
} >"$SCRATCH/datasets.json"
DATASETS_JSON=$SCRATCH/datasets.json
WARMUP_FILE=$BENCH_WORK/$key1/$(head -n 1 "$BENCH_WORK/$key1.list")
BENCH_CMDLINE="sh bench/run.sh $*"
export DATASETS_JSON WARMUP_FILE BENCH_CMDLINE SCALE

mkdir -p "$RESULTS" "$RAW_RESULTS"
name=$(date +%Y-%m-%d-%H%M)-$(hostname -s)$SUFFIX
raw=$RAW_RESULTS/$name.json
t0=$(now)
if [ $SWEEP = 1 ]; then
	"$PYTHON" bench/sweep.py "$raw"
elif [ $SEAL = 1 ]; then
	"$PYTHON" bench/sealbench.py "$raw"
elif [ $RANKS = 1 ]; then
	"$PYTHON" bench/ranks.py "$raw"
elif [ $SITE = 1 ]; then
	"$PYTHON" bench/sitebench.py "$raw"
else
	"$PYTHON" bench/bench.py "$raw"
fi
say "measured in $(since "$t0") s"
if [ $RANKS = 1 ]; then
	"$PYTHON" bench/ranks.py report "$raw" >"$RESULTS/$name.md"
else
	"$PYTHON" bench/report.py "$raw" >"$RESULTS/$name.md"
fi
say "wrote the report $RESULTS/$name.md (raw results: $raw)"

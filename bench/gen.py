# SPDX-License-Identifier: MIT
"""Seeded data set generators for the benchmark.

This file implements the two data sets bench/run.sh measures:

  images  CLASSES class folders of PER_CLASS JPEG files of 60-140 KB, the
          shape of an ImageFolder training set.  A pool of real JPEGs is
          encoded by PIL from smooth random images with grain (so that PIL
          decode and RandomResizedCrop work on them); every file is one pool
          JPEG plus COM (comment) segments of random bytes, which makes every
          file unique (mksquashfs deduplicates identical files) and spreads
          the sizes uniformly over 60-140 KB.  A COM segment is ignored by
          decoders, so the files stay valid JPEGs.
  small   FILES files of 512-4096 bytes (uniform) spread over DIRS
          directories two levels deep (TOP/SUB/).  The content is hex text of
          random bytes: 4 bits of entropy per byte, so zstd halves it and
          the readers pay for decompression.
  imagenet  FILES files in CLASSES class folders, ImageNet-1k's shape
          (1,281,167 files in 1,000 folders n00000000/ ... with names like
          n00000000_12345.JPEG), bytes scaled down, file count not.  Sizes
          are drawn from a log-normal of median MEDIAN bytes (sigma 0.5,
          clipped to 256 B-64 KiB: ImageNet's spread, about 30 times
          smaller), mean about 1.13 x MEDIAN; the content is random bytes,
          so mksquashfs cannot compress it and the image is about the sum
          of the sizes (4.8 GB at the defaults).  The files are not JPEGs:
          ImageFolder only looks at the extension, and the raw readers do
          not decode.

Same arguments, same seed -> byte-identical trees.  Next to OUT it writes
OUT.list (relative paths, sorted, one per line) and OUT.json (counts, bytes,
sizes, generation seconds).

    gen.py images OUT [--classes 20] [--per-class 1000] [--seed 1]
    gen.py small OUT [--files 300000] [--dirs 1024] [--seed 2]
    gen.py imagenet OUT [--files 1281167] [--classes 1000] [--median 3300]
                        [--seed 3]
"""
import argparse
import io
import json
import os
import random
import sys
import time


def jpeg_pool(n, seed):
    """Return n JPEG byte strings of about 50-95 KB."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    pool = []
    for i in range(n):
        w, h = (500, 375) if i % 4 else (375, 500)
        low = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)
        img = Image.fromarray(low).resize((w, h), Image.BICUBIC)
        a = np.asarray(img).astype(np.int16)
        a = a + rng.normal(0, rng.uniform(6, 20), a.shape).astype(np.int16)
        a = np.clip(a, 0, 255).astype(np.uint8)
        b = io.BytesIO()
        Image.fromarray(a).save(b, "JPEG", quality=90)
        pool.append(b.getvalue())
    pool.sort(key=len)
    return pool


def com_segments(rnd, nbytes):
    """JPEG COM segments holding nbytes (>= 4) of random payload in total."""
    out = []
    while nbytes > 0:
        n = min(nbytes, 65533)
        if 0 < nbytes - n < 4:  # keep the last segment non-empty
            n -= 4
        out.append(b"\xff\xfe" + (n + 2).to_bytes(2, "big") + rnd.randbytes(n))
        nbytes -= n
    return b"".join(out)


def gen_images(out, classes, per_class, seed, pool_size):
    rnd = random.Random(seed)
    pool = jpeg_pool(pool_size, seed)
    sizes = [len(p) for p in pool]
    paths = []
    total = 0
    for c in range(classes):
        d = os.path.join(out, "class%03d" % c)
        os.makedirs(d, exist_ok=True)
        for k in range(per_class):
            target = rnd.randint(60 * 1024, 140 * 1024)
            # any pool image that leaves room for a segment header and
            # 16 random bytes
            fit = [i for i, s in enumerate(sizes) if s + 4 + 16 <= target]
            base = pool[rnd.choice(fit)] if fit else pool[0]
            pad = max(16, target - len(base))
            segs = b""
            while pad > 0:
                n = min(pad, 65533)
                segs += com_segments(rnd, n)
                pad -= n
            data = base[:2] + segs + base[2:]  # right after SOI
            rel = "class%03d/img%06d.jpg" % (c, c * per_class + k)
            with open(os.path.join(out, rel), "wb") as f:
                f.write(data)
            paths.append(rel)
            total += len(data)
    return paths, total


def gen_small(out, files, dirs, seed):
    rnd = random.Random(seed)
    top = max(1, int(round(dirs ** 0.5)))
    sub = max(1, -(-dirs // top))
    dlist = []
    for t in range(top):
        for s in range(sub):
            if len(dlist) < dirs:
                dlist.append("t%03d/s%03d" % (t, s))
    for d in dlist:
        os.makedirs(os.path.join(out, d), exist_ok=True)
    paths = []
    total = 0
    for i in range(files):
        d = dlist[i % len(dlist)]
        n = rnd.randint(512, 4096)
        data = rnd.randbytes((n + 1) // 2).hex().encode()[:n]
        rel = "%s/f%07d.bin" % (d, i)
        with open(os.path.join(out, rel), "wb") as f:
            f.write(data)
        paths.append(rel)
        total += n
    return paths, total


def gen_imagenet(out, files, classes, median, seed):
    """ImageNet's tree shape with small random files; see the header."""
    import math
    rnd = random.Random(seed)
    mu = math.log(median)
    paths = []
    total = 0
    for c in range(classes):
        wnid = "n%08d" % (1000000 + c * 7919)
        os.makedirs(os.path.join(out, wnid), exist_ok=True)
        # the files spread evenly: the first (files % classes) get one more
        n = files // classes + (1 if c < files % classes else 0)
        for k in range(n):
            size = int(rnd.lognormvariate(mu, 0.5))
            size = min(65536, max(256, size))
            rel = "%s/%s_%d.JPEG" % (wnid, wnid, k)
            with open(os.path.join(out, rel), "wb") as f:
                f.write(rnd.randbytes(size))
            paths.append(rel)
            total += size
    return paths, total


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["images", "small", "imagenet"])
    ap.add_argument("out")
    ap.add_argument("--classes", type=int, default=None,
                    help="images: 20; imagenet: 1000")
    ap.add_argument("--per-class", type=int, default=1000)
    ap.add_argument("--pool", type=int, default=0,
                    help="distinct base JPEGs (default: min(1000, files/8))")
    ap.add_argument("--files", type=int, default=None,
                    help="small: 300000; imagenet: 1281167")
    ap.add_argument("--dirs", type=int, default=1024)
    ap.add_argument("--median", type=int, default=3300,
                    help="imagenet: median file size in bytes")
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()

    if os.path.exists(a.out):
        sys.exit("gen.py: '%s' exists; remove it first" % a.out)
    os.makedirs(a.out)
    t0 = time.monotonic()
    if a.kind == "images":
        seed = 1 if a.seed is None else a.seed
        a.classes = a.classes or 20
        n = a.classes * a.per_class
        pool = a.pool or max(16, min(1000, n // 8))
        paths, total = gen_images(a.out, a.classes, a.per_class, seed, pool)
        params = {"classes": a.classes, "per_class": a.per_class,
                  "pool": pool, "seed": seed}
    elif a.kind == "imagenet":
        seed = 3 if a.seed is None else a.seed
        files = a.files or 1281167
        classes = a.classes or 1000
        paths, total = gen_imagenet(a.out, files, classes, a.median, seed)
        params = {"files": files, "classes": classes, "median": a.median,
                  "seed": seed}
    else:
        seed = 2 if a.seed is None else a.seed
        a.files = a.files or 300000
        paths, total = gen_small(a.out, a.files, a.dirs, seed)
        params = {"files": a.files, "dirs": a.dirs, "seed": seed}
    secs = time.monotonic() - t0
    paths.sort()
    with open(a.out + ".list", "w") as f:
        f.write("\n".join(paths) + "\n")
    sizes = [os.path.getsize(os.path.join(a.out, p)) for p in paths]
    info = {"kind": a.kind, "params": params, "files": len(paths),
            "bytes": total, "min_size": min(sizes), "max_size": max(sizes),
            "mean_size": total / len(paths), "gen_seconds": round(secs, 2)}
    with open(a.out + ".json", "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info))


if __name__ == "__main__":
    main()

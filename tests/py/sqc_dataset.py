#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Generate an image-classification tree in ImageFolder layout.

    /usr/bin/python3 tests/py/sqc_dataset.py [options] DEST

DEST/<class>/<image> with real image files made by PIL.  The result is a
pure function of --profile, --seed, --classes and --per-class: every
image has its own PRNG seeded from (seed, class, index), so --jobs does
not change a byte.

Profiles:
  demo   uniform RGB JPEGs of 400-560 x 300-420 pixels, about 50-100 KB
         each, like a photo dataset (the `make demo` sample)
  test   what an ImageFolder must cope with: sizes from 1x1 to 400x400
         and thin strips, RGB/grayscale/CMYK/progressive JPEG, RGB/RGBA/
         palette PNG, images in nested subdirectories, class names with a
         space and UTF-8, a relative symlink to an image of another class,
         and a non-image file per class that ImageFolder must skip

--manifest FILE writes a JSON object {"classes": [...], "samples":
[[relpath, class], ...], "bytes": N} listing the images ImageFolder is
expected to find (symlinks included, other files not); N is the size of
the image files (an image reached through a symlink counts once).

Exit status: 0 done, 1 error, 2 usage.
"""
import argparse
import io
import json
import multiprocessing
import os
import random
import signal
import sys

from PIL import Image, ImageChops, ImageDraw

DEMO_CLASSES = ["airplane", "bird", "boat", "car", "cat", "dog", "flower",
                "horse", "house", "tree"]
TEST_CLASSES = ["c0_plain", "c1 with space", "c2_\u00fcn\u00efc\u00f8de",
                "c3_more", "c4_last"]


def class_names(profile, n):
    base = DEMO_CLASSES if profile == "demo" else TEST_CLASSES
    return [base[i] if i < len(base) else "class_%03d" % i for i in range(n)]


def picture(rng, w, h, tint):
    """A photo-like RGB image: smooth colour fields, texture, shapes."""
    bw, bh = max(1, w // 16), max(1, h // 16)
    img = Image.frombytes("RGB", (bw, bh), rng.randbytes(3 * bw * bh))
    img = img.resize((w, h), Image.BICUBIC)
    tw, th = max(1, w // 2), max(1, h // 2)
    tex = Image.frombytes("RGB", (tw, th), rng.randbytes(3 * tw * th))
    img = Image.blend(img, tex.resize((w, h), Image.NEAREST), 0.25)
    img = ImageChops.multiply(img, Image.new("RGB", (w, h), tint))
    d = ImageDraw.Draw(img)
    for _ in range(rng.randrange(2, 7)):
        x0, y0 = rng.randrange(w), rng.randrange(h)
        x1 = x0 + rng.randrange(1, max(2, w // 2))
        y1 = y0 + rng.randrange(1, max(2, h // 2))
        fill = tuple(rng.randrange(256) for _ in range(3))
        if rng.random() < 0.5:
            d.ellipse([x0, y0, x1, y1], fill=fill)
        else:
            d.rectangle([x0, y0, x1, y1], fill=fill)
    return img


def tint_of(ci):
    r = random.Random("tint:%d" % ci)
    return tuple(r.randrange(150, 256) for _ in range(3))


def demo_image(rng, ci):
    w, h = rng.randrange(400, 560), rng.randrange(300, 420)
    img = picture(rng, w, h, tint_of(ci))
    return "img_%04d.jpg", img, dict(format="JPEG", quality=90)


def test_image(rng, ci, i):
    """Image i of class ci in the test profile: kind rotates with i."""
    kind = i % 10
    if i % 13 == 5:
        w, h = rng.choice([(1, 1), (3, 300), (300, 3), (2, 2), (17, 1)])
    else:
        w, h = rng.randrange(16, 400), rng.randrange(16, 400)
    img = picture(rng, w, h, tint_of(ci))
    name = "img_%04d"
    if kind <= 4:
        return name + ".jpg", img, dict(format="JPEG",
                                        quality=rng.randrange(60, 96))
    if kind == 5:
        return name + ".jpeg", img, dict(format="JPEG", quality=85,
                                         progressive=True, optimize=True)
    if kind == 6:
        return name + ".jpg", img.convert("L"), dict(format="JPEG",
                                                      quality=85)
    if kind == 7:
        return name + ".JPG", img.convert("CMYK"), dict(format="JPEG",
                                                         quality=85)
    if kind == 8:
        return name + ".png", img, dict(format="PNG")
    rgba = img.convert("RGBA")
    rgba.putalpha(Image.linear_gradient("L").resize((w, h)))
    if i % 20 == 9:
        return name + ".png", rgba, dict(format="PNG")
    return name + ".png", img.convert("P", palette=Image.ADAPTIVE,
                                      colors=64), dict(format="PNG")


def make_one(job):
    """Worker: write one image, return (relpath, class index, size)."""
    dest, profile, seed, ci, cls, i = job
    rng = random.Random("%s:%d:%d:%d" % (profile, seed, ci, i))
    if profile == "demo":
        pattern, img, save = demo_image(rng, ci)
        sub = ""
    else:
        pattern, img, save = test_image(rng, ci, i)
        sub = ("sub", "sub/deeper", "")[i % 3] if i % 7 == 3 else ""
    rel = os.path.join(cls, sub, pattern % i)
    buf = io.BytesIO()
    img.save(buf, **save)
    path = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return rel, ci, len(buf.getvalue())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", choices=("demo", "test"), default="demo")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--per-class", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--manifest", help="write the expected samples here")
    ap.add_argument("dest")
    a = ap.parse_args()
    if a.classes < 1 or a.per_class < 1 or a.jobs < 1:
        ap.error("--classes, --per-class and --jobs must be at least 1")
    if os.path.exists(a.dest) and os.listdir(a.dest):
        print("sqc_dataset: '%s' is not empty" % a.dest, file=sys.stderr)
        return 1
    classes = class_names(a.profile, a.classes)
    for cls in classes:
        os.makedirs(os.path.join(a.dest, cls), exist_ok=True)
    jobs = [(a.dest, a.profile, a.seed, ci, cls, i)
            for ci, cls in enumerate(classes) for i in range(a.per_class)]
    if a.jobs > 1:
        # Ctrl-C: only this process raises, the pool is terminated.
        with multiprocessing.Pool(a.jobs, initializer=signal.signal,
                                  initargs=(signal.SIGINT,
                                            signal.SIG_IGN)) as pool:
            made = pool.map(make_one, jobs, chunksize=16)
    else:
        made = [make_one(j) for j in jobs]
    samples = [[rel, ci] for rel, ci, _ in made]
    total = sum(n for _, _, n in made)
    if a.profile == "test":
        for cls in classes:
            with open(os.path.join(a.dest, cls, "notes.txt"), "w") as f:
                f.write("not an image: ImageFolder must skip this\n")
        if len(classes) > 1 and a.per_class > 1:
            # A relative symlink to an image of the next class.
            target = next(rel for rel, ci, _ in made if ci == 1)
            link = os.path.join(classes[0], "link_to_next.jpg")
            os.symlink(os.path.relpath(target, os.path.dirname(link)),
                       os.path.join(a.dest, link))
            samples.append([link, 0])
    if a.manifest:
        with open(a.manifest, "w") as f:
            json.dump({"classes": classes, "samples": samples,
                       "bytes": total}, f, indent=1)
    print("%d images in %d classes, %.1f MiB"
          % (len(samples), len(classes), total / 1048576))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)

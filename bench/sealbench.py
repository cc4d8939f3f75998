# SPDX-License-Identifier: MIT
"""The checked-bytes benchmark (issue 40 item 5): what checking every byte
against the image's seal costs, side by side with the same daemon not
checking, on the images set.

    sealbench.py OUT.json     measure (bench/run.sh seal calls it)

Storages (SEAL_STORAGES, default shm,pfs,pfs_slow): the image in /dev/shm
(the scratch store itself) and behind bench/slowfs with the profiles pfs
(1 ms, 500 MB/s) and pfs_slow (5 ms, 200 MB/s); the seal is beside the
image there, so that its tree is read through the same storage.

Contenders, interleaved (the order turns each repetition):
  plain   squashcached -o seal=off
  sealed  squashcached -o seal=require (the image's IMAGE.sqcseal)

Per storage, repetition and contender, two runs, each after the page cache
is dropped:
  staging   mount with stage=full, its stats polled every 20 ms until
            stage.state is done: stage.seconds (the daemon's own count)
            and the time from the mount command to done
  epoch     mount with the storage's default (on /dev/shm stage=auto:
            nothing is staged, every read goes to the file and, sealed,
            is checked each time; on slowfs staging runs during the
            epoch, as in a job), then at once one epoch: the C reader,
            16 threads, over the shuffled file list (SEAL_READER=cread_t16)
            or DataLoader raw bytes, 4 workers (dl_raw_w4)
and the daemon's CPU for each.  Before the runs: bench/hashspeed (this
CPU's SHA-256 speed) and `mountctl seal` of the image, timed.  The report
is render() below (bench/report.py calls it): medians [min-max] and the
ratio sealed / plain of the medians.
"""
import json
import os
import statistics
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
from bench import log  # noqa: E402

CONTENDERS = ("plain", "sealed")


def cfg_from_env():
    cfg = bench.config_from_env()
    env = bench.env
    cfg["seal"] = {
        "storages": env("SEAL_STORAGES", "shm,pfs,pfs_slow").split(","),
        "reps": env("REPS", 3),
        "reader": env("SEAL_READER", "cread_t16"),
        "timeout": env("SLOW_TIMEOUT", 900),
        "seed": env("SEED", 42),
    }
    if cfg["seal"]["reader"] not in ("cread_t16", "dl_raw_w4"):
        raise SystemExit("sealbench: SEAL_READER is cread_t16 or dl_raw_w4")
    return cfg


class SealBench:
    def __init__(self, cfg):
        self.cfg = cfg
        self.sc = cfg["seal"]
        self.reg = bench.Registry(cfg["scratch"])
        self.b = types.SimpleNamespace(cfg=cfg, reg=self.reg)
        self.ds = cfg["datasets"]["images"]
        with open(self.ds["list"]) as f:
            self.files = [x.rstrip("\n") for x in f if x.strip()]
        self.loaders = None
        if self.sc["reader"] == "dl_raw_w4":
            self.loaders = bench.Loaders(cfg)
            self.loaders.get("raw", 4)
        self.mountctl = os.path.join(cfg["build"], "mountctl")
        self.nmnt = 0
        self.own_drops = 0

    def drop(self):
        bench.drop_caches()
        self.own_drops += 1

    def prepare(self, res):
        """This CPU's hashing speed, and the seal made (timed)."""
        hs = os.path.join(self.cfg["build"], "bench", "hashspeed")
        r = bench.run([hs, "-m", "256", "-r", "5"], check=False, timeout=600)
        res["hashspeed"] = (r.stdout or "") + (r.stderr or "")
        log("hashspeed:\n" + res["hashspeed"])
        image = self.ds["image"]
        self.drop()
        t0 = time.monotonic()
        r = bench.run([self.mountctl, "seal", image], timeout=3600)
        res["seal"] = {"seconds": time.monotonic() - t0,
                       "root": r.stdout.split()[0],
                       "image_bytes": os.path.getsize(image),
                       "seal_bytes": os.path.getsize(image + ".sqcseal")}
        log("sealed %s in %.2f s: %s" % (image, res["seal"]["seconds"],
                                         res["seal"]["root"]))

    def mount(self, image, name, extra):
        self.nmnt += 1
        c = bench.Squashcached(self.cfg, self.reg)
        mnt = os.path.join(self.cfg["scratch"], "mnt", "seal-%d" % self.nmnt)
        opts = "seal=off" if name == "plain" else "seal=require"
        if extra:
            opts += "," + extra
        t0 = time.monotonic()
        mount_s = c.mount(self.ds, image=image, mnt=mnt, extra=opts)
        return c, t0, mount_s

    def stats(self, c, rec):
        st = c.stats() or {}
        stage = st.get("stage") or {}
        rec["stage"] = {k: stage.get(k) for k in
                        ("state", "staged", "planned", "seconds",
                         "mb_per_s", "by_readers")}
        rec["read_bytes"] = (st.get("image_io") or {}).get("read_bytes")
        rec["verify"] = st.get("verify")
        rec["daemon"] = c.daemon_sample()

    def staging(self, image, name, storage):
        """Mount with stage=full, wait until staged."""
        self.drop()
        rec = {}
        c, t0, rec["mount_s"] = self.mount(image, name, "stage=full")
        try:
            deadline = t0 + self.sc["timeout"]
            while time.monotonic() < deadline:
                st = c.stats() or {}
                if (st.get("stage") or {}).get("state") == "done":
                    break
                time.sleep(0.02)
            else:
                raise RuntimeError("not staged within %d s" %
                                   self.sc["timeout"])
            rec["to_staged_s"] = time.monotonic() - t0
            self.stats(c, rec)
            rec["staging_s"] = rec["stage"]["seconds"]
        finally:
            c.umount()
        return rec

    def epoch(self, image, name, storage, seed):
        """Mount as a job would, and read one epoch at once."""
        self.drop()
        rec = {}
        c, t0, rec["mount_s"] = self.mount(image, name, None)
        try:
            cpu0 = bench.proc_cpu(c.pid) if c.pid else None
            t1 = time.monotonic()
            if self.sc["reader"] == "cread_t16":
                r = bench.pass_preader(self.cfg, c.mnt, self.ds, 16, seed,
                                       timeout=self.sc["timeout"])
                if r.get("errors") or r.get("files") != len(self.files):
                    raise RuntimeError("preader: %s" % json.dumps(r))
            else:
                paths = [os.path.join(c.mnt, p) for p in
                         bench.shuffled(self.files, seed)]
                bench.pass_dl(self.loaders, "raw", 4, paths)
            rec["epoch_s"] = time.monotonic() - t1
            if cpu0 is not None:
                rec["daemon_cpu_s"] = bench.proc_cpu(c.pid) - cpu0
            self.stats(c, rec)
        finally:
            c.umount()
        return rec

    def storage(self, name, out):
        image = self.ds["image"]
        pfs = None
        if name != "shm":
            profs = {p["name"]: p for p in self.cfg["slow"]["profiles"]}
            if name not in profs:
                raise RuntimeError("unknown storage %s" % name)
            pfs = bench.Bench._start_slowfs(self.b, profs[name], out)
            image = os.path.join(pfs, os.path.basename(image))
        try:
            for rep in range(self.sc["reps"]):
                order = CONTENDERS if rep % 2 == 0 else CONTENDERS[::-1]
                r = {"rep": rep}
                out["reps"].append(r)
                for kind in ("staging", "epoch"):
                    for c in order:
                        try:
                            if kind == "staging":
                                rec = self.staging(image, c, name)
                                log("%s rep %d staging %-6s %.2f s (to "
                                    "staged %.2f s)" % (
                                        name, rep, c, rec["staging_s"],
                                        rec["to_staged_s"]))
                            else:
                                rec = self.epoch(image, c, name,
                                                 self.sc["seed"] + rep)
                                log("%s rep %d epoch   %-6s %.2f s" % (
                                    name, rep, c, rec["epoch_s"]))
                        except Exception as e:  # noqa: BLE001 - recorded
                            rec = {"error": "%s: %s" % (type(e).__name__,
                                                        e)}
                            log("%s rep %d %s %s failed: %s" % (
                                name, rep, kind, c, rec["error"]))
                        r.setdefault(kind, {})[c] = rec
        finally:
            if pfs:
                bench.Bench._stop_slowfs(self.b, pfs)

    def run(self):
        res = {"mode": "seal", "storages": []}
        self.prepare(res)
        for name in self.sc["storages"]:
            out = {"storage": name, "reps": []}
            res["storages"].append(out)
            self.storage(name, out)
        return res


# -- the report -----------------------------------------------------------

def _med(v):
    return statistics.median(v) if v else None


def _cell(v, unit="s"):
    if not v:
        return "–"
    return "%.2f %s [%.2f–%.2f]" % (_med(v), unit, min(v), max(v))


def _vals(st, kind, c, key):
    out = []
    for r in st["reps"]:
        x = (r.get(kind) or {}).get(c) or {}
        if x.get(key) is not None:
            out.append(x[key])
    return out


def render(res):
    cfg, mi = res["config"], res["machine"]
    sc = cfg["seal"]
    out = []
    w = out.append
    quick = "--quick" in (res.get("command") or "")
    w("# squashcache checked-bytes benchmark%s: %s, commit %s, machine %s" % (
        " (quick smoke run)" if quick else "", res["started"],
        mi.get("squashcache_commit") or "?", mi["host"]))
    w("")
    w("Command: `%s`, run %s to %s: %.0f s measuring." % (
        res.get("command") or "sh bench/run.sh seal", res["started"],
        res["finished"], res["bench_seconds"]))
    w("")
    w("Machine: %s, %d logical CPUs; load average (1/5/15 min) %s at the "
      "start, %s at the end; page cache drops by others during the run: "
      "%d." % (mi.get("cpu"), mi["cpus"],
               "/".join(mi.get("loadavg_start", [])),
               "/".join(mi.get("loadavg_end", [])),
               mi.get("drop_pagecache_end", 0) -
               mi.get("drop_pagecache_start", 0) - res.get("own_drops", 0)))
    w("")
    if quick:
        w("**Quick run**: the set is too small for the figures to mean "
          "anything; a smoke test of the harness.")
        w("")
    s = res.get("seal") or {}
    w("The image: %.1f MB, its seal %.1f MB (%.2f%%), made by `mountctl "
      "seal` in %.2f s from /dev/shm (root %s)." % (
          s.get("image_bytes", 0) / 1e6, s.get("seal_bytes", 0) / 1e6,
          100.0 * s.get("seal_bytes", 0) / max(1, s.get("image_bytes", 1)),
          s.get("seconds", 0), s.get("root", "?")))
    w("")
    w("SHA-256 on this machine (`bench/hashspeed -m 256 -r 5`):")
    w("")
    w("```")
    w((res.get("hashspeed") or "").rstrip())
    w("```")
    w("")
    rd = {"cread_t16": "the C reader (bench/preader), 16 threads",
          "dl_raw_w4": "DataLoader raw bytes, 4 workers"}
    w("plain: `squashcached -o seal=off`; sealed: `-o seal=require`.  "
      "Staging: `stage=full`, from the mount command until stage.state is "
      "done (the daemon's stage.seconds beside it).  Epoch: the storage's "
      "default staging (none for an image in /dev/shm), %s, started "
      "right after the mount.  %d repetition(s), interleaved; medians "
      "[min–max]; ratio = sealed / plain of the medians." % (
          rd[sc["reader"]], sc["reps"]))
    w("")
    w("| storage | measure | plain | sealed | sealed / plain |")
    w("|---|---|---|---|---|")
    for st in res["storages"]:
        rows = [("staging (stage.seconds)", "staging", "staging_s"),
                ("mount to staged", "staging", "to_staged_s"),
                ("first epoch", "epoch", "epoch_s"),
                ("daemon CPU in the epoch", "epoch", "daemon_cpu_s"),
                ("mount command (epoch run)", "epoch", "mount_s")]
        for label, kind, key in rows:
            p = _vals(st, kind, "plain", key)
            q = _vals(st, kind, "sealed", key)
            ratio = "%.3f" % (_med(q) / _med(p)) if p and q and _med(p) \
                else "–"
            w("| %s | %s | %s | %s | %s |" % (st["storage"], label,
                                              _cell(p), _cell(q), ratio))
    w("")
    errs = []
    for st in res["storages"]:
        for r in st["reps"]:
            for kind in ("staging", "epoch"):
                for c, x in (r.get(kind) or {}).items():
                    if x.get("error"):
                        errs.append("%s rep %d %s %s: %s" % (
                            st["storage"], r["rep"], kind, c, x["error"]))
                    v = x.get("verify") or {}
                    if c == "sealed" and not x.get("error") and \
                            (v.get("seal") is None or v.get("blocks_bad")):
                        errs.append("%s rep %d %s sealed: verify %s" % (
                            st["storage"], r["rep"], kind, json.dumps(v)))
    if errs:
        w("Failures:")
        w("")
        for e in errs:
            w("- " + e)
        w("")
    return "\n".join(out) + "\n"


def main():
    bench.side_main(cfg_from_env, SealBench)


if __name__ == "__main__":
    main()

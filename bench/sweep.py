# SPDX-License-Identifier: MIT
"""The sweep benchmark (issue 28 item 8): jobs on one node, with and
without a kept staged copy, the image on slow storage.

    sweep.py OUT.json         measure (bench/run.sh sweep calls it)

A job: page cache dropped, squashcached mounts the image from slowfs (with
-o keep=SOCKET or without), the stats polled until staging is done, and
at least SWEEP_START (2.0 s) after the mount command started (the job's
own start-up), one
epoch (the C reader, 16 threads, or DataLoader raw bytes, 4 workers:
SWEEP_READER), the daemon's stats taken, unmount.  Per storage profile and
repetition, interleaved (the order flips each repetition):
  seq   SWEEP_JOBS (8) jobs one after the other; the last one runs a second
        epoch in the same mount (the warm epoch)
  conc  2 jobs at once: two mounts of the image, staged and read together
for keep (a fresh keeper on a private socket, budget SWEEP_KEEP, default
twice the image) and nokeep.  slowfs's own count of bytes read is taken
around each row.  The report is bench/report.py's (render_sweep below).
"""
import json
import os
import subprocess
import sys
import threading
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
from bench import log  # noqa: E402


def cfg_from_env():
    cfg = bench.config_from_env()
    env = bench.env
    img = cfg["datasets"]["images"]["image"]
    cfg["sweep"] = {
        "jobs": env("SWEEP_JOBS", 8),
        "conc_jobs": 2,
        "reps": env("REPS", 3),
        "reader": env("SWEEP_READER", "cread_t16"),
        "keep_budget": env("SWEEP_KEEP", str(2 * os.path.getsize(img))),
        "timeout": env("SLOW_TIMEOUT", 900),
        "seed": env("SEED", 42),
        # A job's start-up before its first epoch (Python, torch, the
        # model): the epoch starts once staged and this long after the
        # mount command started, with keep and without.
        "start": float(env("SWEEP_START", "2.0")),
    }
    if cfg["sweep"]["reader"] not in ("cread_t16", "dl_raw_w4"):
        raise SystemExit("sweep: SWEEP_READER is cread_t16 or dl_raw_w4")
    return cfg


class Sweep:
    def __init__(self, cfg):
        self.cfg = cfg
        self.sc = cfg["sweep"]
        self.reg = bench.Registry(cfg["scratch"])
        # bench.Bench's slowfs helpers need only cfg and reg
        self.b = types.SimpleNamespace(cfg=cfg, reg=self.reg)
        self.ds = cfg["datasets"]["images"]
        with open(self.ds["list"]) as f:
            self.files = [x.rstrip("\n") for x in f if x.strip()]
        # DataLoader: one set of workers per concurrent job (a loader's
        # sampler is its epoch's list), started here, before any mount
        self.loaders = []
        if self.sc["reader"].startswith("dl_"):
            for _ in range(self.sc["conc_jobs"]):
                self.loaders.append(bench.Loaders(cfg))
                self.loaders[-1].get("raw", 4)
        self.keeper = None
        self.sock = os.path.join(cfg["scratch"], "keeper", "keeper.sock")
        self.mountctl = os.path.join(cfg["build"], "mountctl")
        self.nmnt = 0
        self.own_drops = 0  # the report counts the others' apart

    # -- the keeper --

    def keeper_start(self):
        """A fresh keeper (no kept copy) on the private socket."""
        self.keeper_stop()
        logf = open(os.path.join(self.cfg["scratch"], "logs",
                                 "keeper.log"), "a")
        self.keeper = subprocess.Popen(
            [self.mountctl, "keeper", "--socket", self.sock, "--keep",
             self.sc["keep_budget"], "--min-available", "0"],
            stdout=logf, stderr=logf)
        logf.close()
        with open(self.reg.pids_file, "a") as f:
            f.write("%d\n" % self.keeper.pid)
        for _ in range(500):
            if self.kept() is not None:
                return
            time.sleep(0.02)
        raise RuntimeError("the keeper did not start (logs/keeper.log)")

    def stop(self):
        self.keeper_stop()

    def keeper_stop(self):
        if self.keeper:
            self.keeper.terminate()
            try:
                self.keeper.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.keeper.kill()
                self.keeper.wait()
            self.keeper = None

    def kept(self):
        r = bench.run([self.mountctl, "status", "--kept", "--json",
                       "--socket", self.sock], check=False, timeout=10)
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout or "[]")
        except ValueError:
            return None

    def wait_kept(self):
        """Until the keeper holds a copy no mount uses (the daemon's
        connection closed): the next job must find it."""
        for _ in range(500):
            k = self.kept() or []
            if k and not any(e.get("in_use") for e in k):
                return True
            time.sleep(0.02)
        return False

    # -- a job --

    def drop(self):
        bench.drop_caches()
        self.own_drops += 1

    def mount(self, image, keep):
        self.nmnt += 1
        c = bench.Squashcached(self.cfg, self.reg)
        mnt = os.path.join(self.cfg["scratch"], "mnt", "sweep-%d" %
                           self.nmnt)
        t0 = time.monotonic()
        c.mount(self.ds, image=image, mnt=mnt,
                extra=("keep=" + self.sock) if keep else None)
        return c, t0

    def wait_staged(self, c, t0):
        deadline = t0 + self.sc["timeout"]
        while time.monotonic() < deadline:
            st = c.stats() or {}
            stage = st.get("stage") or {}
            if stage.get("state") == "done" or stage.get("percent") == 100:
                return time.monotonic() - t0
            time.sleep(0.05)
        raise RuntimeError("not staged within %d s" % self.sc["timeout"])

    def start_up(self, t0):
        """The rest of the job's start-up (SWEEP_START) after staging."""
        left = t0 + self.sc["start"] - time.monotonic()
        if left > 0:
            time.sleep(left)

    def epoch(self, root, seed, slot=0):
        """One epoch; slot: the concurrent job's own DataLoader."""
        if self.sc["reader"] == "cread_t16":
            r = bench.pass_preader(self.cfg, root, self.ds, 16, seed,
                                   timeout=self.sc["timeout"])
            if r.get("errors") or r.get("files") != len(self.files):
                raise RuntimeError("preader: %s" % json.dumps(r))
            return r["seconds"]
        paths = [os.path.join(root, p) for p in
                 bench.shuffled(self.files, seed)]
        return bench.pass_dl(self.loaders[slot], "raw", 4,
                             paths)["seconds"]

    def record(self, c, rec):
        st = c.stats() or {}
        io = st.get("image_io") or {}
        rec["read_bytes"] = io.get("read_bytes")
        rec["stager_bytes"] = io.get("stager_bytes")
        rec["keep"] = st.get("keep")
        rec["stage"] = {k: (st.get("stage") or {}).get(k) for k in
                        ("state", "percent", "staged", "bytes")}

    def job(self, image, keep, seed, warm=False):
        self.drop()
        rec = {}
        c, t0 = self.mount(image, keep)
        try:
            rec["staged_s"] = self.wait_staged(c, t0)
            self.start_up(t0)
            rec["epoch_s"] = self.epoch(c.mnt, seed)
            if warm:
                rec["warm_s"] = self.epoch(c.mnt, seed + 1)
            self.record(c, rec)
        finally:
            c.umount()
        if keep:
            rec["kept_after"] = self.wait_kept()
        return rec

    # -- rows --

    def seq(self, pfs, image, keep, rep):
        out = {"jobs": []}
        if keep:
            self.keeper_start()
        s0 = bench.Bench._pfs_stats(self.b, pfs)
        try:
            for j in range(self.sc["jobs"]):
                last = j == self.sc["jobs"] - 1
                rec = self.job(image, keep, self.sc["seed"] + 100 * rep + j,
                               warm=last)
                log("  job %d: staged %.2f s, epoch %.2f s, %.0f MB read%s"
                    % (j + 1, rec["staged_s"], rec["epoch_s"],
                       (rec["read_bytes"] or 0) / 1e6,
                       ", warm %.2f s" % rec["warm_s"] if last else ""))
                out["jobs"].append(rec)
        finally:
            out["pfs_read_bytes"] = bench.Bench._pfs_stats(
                self.b, pfs).get("read_bytes", 0) - s0.get("read_bytes", 0)
            self.keeper_stop()
        return out

    def conc(self, pfs, image, keep, rep):
        n = self.sc["conc_jobs"]
        out = {"jobs": [{} for _ in range(n)]}
        if keep:
            self.keeper_start()
        self.drop()
        s0 = bench.Bench._pfs_stats(self.b, pfs)
        cs = [None] * n
        errs = []

        def one(i):
            rec = out["jobs"][i]
            try:
                cs[i], t0 = self.mount(image, keep)
                rec["staged_s"] = self.wait_staged(cs[i], t0)
                self.start_up(t0)
                rec["epoch_s"] = self.epoch(cs[i].mnt, self.sc["seed"] +
                                            100 * rep + i, slot=i)
                self.record(cs[i], rec)
            except Exception as e:  # noqa: BLE001 - recorded, re-raised
                errs.append(e)

        try:
            ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        finally:
            for c in cs:
                if c:
                    c.umount()
            out["pfs_read_bytes"] = bench.Bench._pfs_stats(
                self.b, pfs).get("read_bytes", 0) - s0.get("read_bytes", 0)
            self.keeper_stop()
        if errs:
            raise errs[0]
        log("  %d at once: %.0f MB from storage" % (
            n, out["pfs_read_bytes"] / 1e6))
        return out

    def run(self):
        res = {"mode": "sweep", "profiles": [], "errors": []}
        image = self.ds["image"]
        for prof in self.cfg["slow"]["profiles"]:
            out = {"profile": prof["name"], "reps": []}
            res["profiles"].append(out)
            pfs = bench.Bench._start_slowfs(self.b, prof, out)
            img = os.path.join(pfs, os.path.basename(image))
            try:
                for rep in range(self.sc["reps"]):
                    r = {"rep": rep}
                    out["reps"].append(r)
                    order = ("keep", "nokeep") if rep % 2 == 0 else \
                        ("nokeep", "keep")
                    for row in ("seq", "conc"):
                        for k in order:
                            log("%s rep %d: %s %s" % (prof["name"], rep, row,
                                                      k))
                            try:
                                r.setdefault(row, {})[k] = getattr(
                                    self, row)(pfs, img, k == "keep", rep)
                            except Exception as e:  # noqa: BLE001
                                err = "%s: %s" % (type(e).__name__, e)
                                log("  failed: " + err)
                                res["errors"].append({
                                    "profile": prof["name"], "rep": rep,
                                    "row": row, "keep": k, "error": err})
            finally:
                bench.Bench._stop_slowfs(self.b, pfs)
        return res


def main():
    bench.side_main(cfg_from_env, Sweep)


if __name__ == "__main__":
    main()

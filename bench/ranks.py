# SPDX-License-Identifier: MIT
"""The ranks benchmark (issue 38): the job shape of a node's ranks.

    ranks.py OUT.json          measure (bench/run.sh ranks calls it)
    ranks.py report OUT.json   the report, markdown, on stdout
    ranks.py rank ARGS         one rank (the driver starts them)

Several ranks on one node share one squashcached mount of an image four
times its RAM budget (ram= a quarter of it, stage=full), the image behind
bench/slowfs (profiles pfs and pfs_slow).  Each rank is a process of its
own, as torchrun or srun starts them: torch.distributed over gloo, a
DistributedSampler of the data set (its shard, reshuffled each epoch by
set_epoch()) wrapped in squashcache.torch.EpochOrder (strict: an order
that is not taken fails the run), a DataLoader of W persistent workers
reading raw bytes (squashcache.torch.read_bytes), and an all_reduce of
one number after each batch, as a DistributedDataParallel step does (so
the ranks go in step).  Shapes N x W (RANKS_SHAPES, default 1x1, 4x1,
8x1, 1x4, 4x4, 8x4): a 1 x W row is one process with the whole order.

A run of one shape: page cache dropped, mount, a first epoch, staging
waited for (stats' stage.state done), page cache dropped, the measured
epoch: from the moment all ranks left a barrier to the last rank's last
batch, the orders' sending included.  slowfs's count of bytes read is
taken around it.  Every shape's ranks start once, before the first
mount, each with its own mount point, so repetitions rotate the shapes
(RANKS_REPS, default 3) without paying for torch's import again.

The floor is the unstaged bytes (image - stage.staged) at slowfs's
configured bandwidth.  The goal (issue 38): 4 and 8 ranks within 1.10x of
one process with the whole order (the 1 x W row of the same W) and
within 1.2x of the floor, and the storage reading the unstaged part once
(0.75x the image).
"""
import json
import os
import select
import statistics
import subprocess
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def log(msg):
    sys.stderr.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


# --- a rank ------------------------------------------------------------

def rank_main(argv):
    """One rank: reads "epoch E" lines, answers "done ..." with JSON."""
    import argparse
    import datetime

    ap = argparse.ArgumentParser(prog="ranks.py rank")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--mnt", required=True)
    ap.add_argument("--list", required=True)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--init", required=True)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--sync", type=int, default=1)
    ap.add_argument("--hint", type=int, default=1)
    ap.add_argument("--strict", type=int, default=1)
    a = ap.parse_args(argv)

    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, Dataset
    from torch.utils.data.distributed import DistributedSampler

    from squashcache.torch import EpochOrder, read_bytes

    with open(a.list) as f:
        paths = [os.path.join(a.mnt, x.rstrip("\n")) for x in f if x.strip()]

    class Raw(Dataset):
        def __len__(self):
            return len(paths)

        def __getitem__(self, i):
            return len(read_bytes(paths[i]))

    def total(batch):
        return sum(batch)

    dist.init_process_group("gloo", init_method=a.init, rank=a.rank,
                            world_size=a.world,
                            timeout=datetime.timedelta(seconds=1800))
    torch.set_num_threads(1)
    ds = Raw()
    dsamp = DistributedSampler(ds, num_replicas=a.world, rank=a.rank,
                               shuffle=True, seed=a.seed)
    sampler = EpochOrder(dsamp, paths, mountpoint=a.mnt,
                         strict=bool(a.strict)) if a.hint else dsamp
    loader = DataLoader(ds, batch_size=a.batch, sampler=sampler,
                        num_workers=a.workers, persistent_workers=True,
                        collate_fn=total, timeout=1800)
    one = torch.zeros(1)
    print("ready %d" % os.getpid(), flush=True)
    for line in sys.stdin:
        w = line.split()
        if not w or w[0] == "quit":
            break
        epoch = int(w[1])
        out = {"epoch": epoch, "rank": a.rank, "pid": os.getpid()}
        try:
            loader.sampler.set_epoch(epoch)
            dist.barrier()
            out["t0"] = time.monotonic()
            nbytes = files = 0
            for b in loader:
                nbytes += b
                files += a.batch
                if a.sync:
                    dist.all_reduce(one)
            out["t1"] = time.monotonic()
            out["bytes"] = nbytes
            out["files"] = min(files, len(dsamp))
            if a.hint:
                out["order"] = sampler.last
            dist.barrier()
        except Exception as e:  # noqa: BLE001 - reported to the driver
            out["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        print("done " + json.dumps(out), flush=True)
    dist.destroy_process_group()


# --- the driver ----------------------------------------------------------

def cfg_from_env():
    import bench
    cfg = bench.config_from_env()
    env = bench.env
    shapes = []
    for s in env("RANKS_SHAPES", "1x1,4x1,8x1,1x4,4x4,8x4").split(","):
        n, w = s.split("x")
        shapes.append((int(n), int(w)))
    cfg["ranks"] = {
        "shapes": shapes,
        "reps": env("RANKS_REPS", 3),
        "batch": env("RANKS_BATCH", 16),
        "sync": env("RANKS_SYNC", 1),
        "hint": env("RANKS_HINT", 1),
        "strict": env("RANKS_STRICT", 1),
        "timeout": env("SLOW_TIMEOUT", 900),
        "seed": env("SEED", 42),
        "sqc_opts": env("RANKS_SQC_OPTS", ""),
        "ram": "image bytes / 4",
    }
    return cfg


class Shape:
    """The rank processes of one shape, alive for the whole benchmark."""

    def __init__(self, drv, n, w):
        self.n, self.w = n, w
        self.name = "%dx%d" % (n, w)
        self.mnt = os.path.join(drv.cfg["scratch"], "mnt", "ranks-" +
                                self.name)
        os.makedirs(self.mnt, exist_ok=True)
        rc = drv.rc
        init = "file://" + os.path.join(drv.cfg["scratch"],
                                        "init-" + self.name)
        env = dict(os.environ, PYTHONPATH=drv.pydir,
                   SQUASHCACHE_MOUNTCTL=drv.mountctl,
                   PYTHONDONTWRITEBYTECODE="1")
        self.procs = []
        for r in range(n):
            logf = open(os.path.join(drv.cfg["scratch"], "logs",
                                     "rank-%s-%d.log" % (self.name, r)), "w")
            p = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "rank",
                 "--rank", str(r), "--world", str(n), "--workers", str(w),
                 "--mnt", self.mnt, "--list", drv.ds["list"],
                 "--batch", str(rc["batch"]), "--init", init,
                 "--seed", str(rc["seed"]), "--sync", str(rc["sync"]),
                 "--hint", str(rc["hint"]), "--strict", str(rc["strict"])],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=logf,
                env=env, text=True, bufsize=1)
            logf.close()
            drv.reg_pid(p.pid)
            self.procs.append(p)
        self.pids = [int(self.expect(p, "ready", 600)[1]) for p in
                     self.procs]

    def expect(self, p, word, timeout):
        r, _, _ = select.select([p.stdout], [], [], timeout)
        line = p.stdout.readline() if r else ""
        w = line.split(None, 1)
        if not w or w[0] != word:
            raise RuntimeError("rank of %s: %r instead of %r (logs/rank-%s-"
                               "*.log)" % (self.name, line[:200], word,
                                           self.name))
        return w

    def epoch(self, epoch, timeout):
        """One epoch of every rank: (seconds, per-rank results)."""
        for p in self.procs:
            p.stdin.write("epoch %d\n" % epoch)
            p.stdin.flush()
        outs = [json.loads(self.expect(p, "done", timeout)[1])
                for p in self.procs]
        errs = [o["error"] for o in outs if "error" in o]
        if errs:
            raise RuntimeError("rank: " + errs[0])
        secs = max(o["t1"] for o in outs) - min(o["t0"] for o in outs)
        return secs, outs

    def stop(self):
        for p in self.procs:
            try:
                p.stdin.write("quit\n")
                p.stdin.close()
            except OSError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class Ranks:
    def __init__(self, cfg):
        import bench
        self.bench = bench
        self.cfg = cfg
        self.rc = cfg["ranks"]
        self.reg = bench.Registry(cfg["scratch"])
        self.b = types.SimpleNamespace(cfg=cfg, reg=self.reg)
        self.ds = cfg["datasets"]["images"]
        self.pydir = os.path.join(os.path.dirname(os.path.abspath(
            __file__)), "..", "python")
        self.mountctl = os.path.join(cfg["build"], "mountctl")
        self.shapes = []
        self.own_drops = 0

    def reg_pid(self, pid):
        with open(self.reg.pids_file, "a") as f:
            f.write("%d\n" % pid)

    def drop(self):
        self.bench.drop_caches()
        self.own_drops += 1

    def wait_staged(self, c):
        t0 = time.monotonic()
        while time.monotonic() - t0 < self.rc["timeout"]:
            st = c.stats() or {}
            stage = st.get("stage") or {}
            if stage.get("state") in ("done", "off"):
                return time.monotonic() - t0, st
            time.sleep(0.1)
        raise RuntimeError("staging not done after %d s" % self.rc["timeout"])

    def one(self, pfs, shape, rep):
        bench = self.bench
        img = os.path.join(pfs, os.path.basename(self.ds["image"]))
        img_bytes = os.path.getsize(self.ds["image"])
        rec = {"shape": shape.name, "ranks": shape.n, "workers": shape.w,
               "rep": rep, "image_bytes": img_bytes,
               "ram_budget": img_bytes // 4, "load1": bench.load1()}
        c = bench.Squashcached(self.cfg, self.reg)
        extra = "stage=full,ram=%d" % rec["ram_budget"]
        if self.rc["sqc_opts"]:
            extra += "," + self.rc["sqc_opts"]
        rec["sqc_options"] = extra
        self.drop()
        try:
            c.mount(self.ds, image=img, mnt=shape.mnt, extra=extra)
            base = 1000 * rep
            rec["first_s"], _ = shape.epoch(base, self.rc["timeout"])
            rec["stage_wait_s"], st = self.wait_staged(c)
            rec["staged"] = st["stage"]["staged"]
            rec["unstaged"] = img_bytes - rec["staged"]
            self.drop()
            before = c.stats() or {}
            s0 = bench.Bench._pfs_stats(self.b, pfs)
            rec["epoch_s"], outs = shape.epoch(base + 1, self.rc["timeout"])
            s1 = bench.Bench._pfs_stats(self.b, pfs)
            rec["pfs_read_bytes"] = s1.get("read_bytes", 0) - \
                s0.get("read_bytes", 0)
            rec["bw_bytes_per_s"] = s1.get("bw")
            rec["ranks_out"] = outs
            rec["bytes"] = sum(o["bytes"] for o in outs)
            after = c.stats() or {}
            o0, o1 = before.get("order") or {}, after.get("order") or {}
            rec["order"] = {k: o1.get(k, 0) - o0.get(k, 0) if k in (
                "read", "served", "skipped", "by_readers", "dropped_unread",
                "errors", "waits", "orders") else o1.get(k)
                for k in ("read", "served", "skipped", "by_readers",
                          "dropped_unread", "errors", "waits", "orders",
                          "clients", "held_max", "plans_max",
                          "plans_budget", "window", "planned")}
            rec["by_client"] = o1.get("by_client")
            if c.pid:
                rec["daemon"] = c.daemon_sample()
        except Exception as e:  # noqa: BLE001 - recorded
            rec["error"] = str(e)[:500]
        finally:
            c.umount()
        return rec

    def run(self):
        bench = self.bench
        res = {"mode": "ranks", "profiles": [], "errors": []}
        for n, w in self.rc["shapes"]:
            log("starting the %d rank(s) of %dx%d" % (n, n, w))
            self.shapes.append(Shape(self, n, w))
        for prof in self.cfg["slow"]["profiles"]:
            out = {"profile": prof["name"], "runs": []}
            res["profiles"].append(out)
            pfs = bench.Bench._start_slowfs(self.b, prof, out)
            try:
                out["bw_bytes_per_s"] = bench.Bench._pfs_stats(
                    self.b, pfs).get("bw")
                for rep in range(self.rc["reps"]):
                    k = rep % len(self.shapes)
                    for shape in self.shapes[k:] + self.shapes[:k]:
                        rec = self.one(pfs, shape, rep)
                        rec["profile"] = prof["name"]
                        out["runs"].append(rec)
                        if "error" in rec:
                            log("%s rep %d %s: %s" % (prof["name"], rep,
                                                      shape.name,
                                                      rec["error"]))
                            res["errors"].append(rec)
                            continue
                        log("%s rep %d %s: epoch %.2f s (floor %.2f s), "
                            "%.0f MB from storage (image %.0f MB)" % (
                                prof["name"], rep, shape.name,
                                rec["epoch_s"], floor_s(rec),
                                rec["pfs_read_bytes"] / 1e6,
                                rec["image_bytes"] / 1e6))
            finally:
                bench.Bench._stop_slowfs(self.b, pfs)
        return res

    def stop(self):
        for s in self.shapes:
            s.stop()


def floor_s(rec):
    bw = rec.get("bw_bytes_per_s")
    return rec["unstaged"] / bw if bw else float("nan")


def measure(out_path):
    import bench
    cfg = cfg_from_env()
    os.makedirs(os.path.join(cfg["scratch"], "logs"), exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M:%S %z")
    machine = bench.machine_info()
    t0 = time.monotonic()
    r = Ranks(cfg)
    try:
        res = r.run()
    finally:
        r.stop()
    res["own_drops"] = r.own_drops
    res["bench_seconds"] = time.monotonic() - t0
    res["config"] = cfg
    res["machine"] = machine
    with open("/proc/loadavg") as f:
        machine["loadavg_end"] = f.read().split()[:3]
    machine["drop_pagecache_end"] = bench.drops()
    res["started"] = started
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    res["command"] = os.environ.get("BENCH_CMDLINE", "")
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    log("wrote " + out_path)


# --- the report ----------------------------------------------------------

def med(xs):
    return statistics.median(xs) if xs else None


def fmt(x, spec="%.2f"):
    return spec % x if x is not None else "-"


def report(path):
    with open(path) as f:
        res = json.load(f)
    m = res["machine"]
    rc = res["config"]["ranks"]
    out = []
    p = out.append
    p("# Ranks sharing a mount (issue 38): %s" % os.path.basename(path))
    p("")
    p("Command: `%s`; commit %s; binary %s." % (
        res.get("command", ""), m.get("squashcache_commit"),
        m.get("squashcached_binary")))
    p("Machine: %s, %s CPUs, %.1f GiB RAM, %s, %s; load average at the "
      "start %s, at the end %s; started %s, finished %s." % (
          m.get("cpu"), m.get("cpus"), m.get("mem_bytes", 0) / 2**30,
          m.get("kernel"), m.get("virt"), " ".join(m.get("loadavg_start",
                                                         [])),
          " ".join(m.get("loadavg_end", [])), res.get("started"),
          res.get("finished")))
    p("")
    p("Each rank: DistributedSampler + EpochOrder%s, a DataLoader of W "
      "persistent workers reading raw bytes, batch %d, an all_reduce per "
      "batch%s.  squashcached `-o stage=full,ram=<image / 4>`; the "
      "measured epoch follows a first epoch, staging and drop_caches.  "
      "Median of %d repetitions [min-max]; ratios of medians." % (
          "" if rc["hint"] else " (hint off: RANKS_HINT=0)", rc["batch"],
          "" if rc["sync"] else " (off: RANKS_SYNC=0)", rc["reps"]))
    for prof in res["profiles"]:
        runs = [r for r in prof["runs"] if "error" not in r]
        p("")
        p("## %s (%s)" % (prof["profile"], ", ".join(
            "%s=%s" % (k, prof["params"][k]) for k in ("latency_ms", "bw")
            if k in prof.get("params", {}))))
        p("")
        p("| ranks x workers | epoch s | / 1 process, same W | / floor | "
          "floor s | storage read / image | / unstaged | read by readers "
          "| load1 |")
        p("|---|---|---|---|---|---|---|---|---|")
        shapes = []
        for r in prof["runs"]:
            if (r["ranks"], r["workers"]) not in shapes:
                shapes.append((r["ranks"], r["workers"]))
        shapes.sort(key=lambda s: (s[1], s[0]))
        base = {}
        for n, w in shapes:
            rs = [r for r in runs if (r["ranks"], r["workers"]) == (n, w)]
            if n == 1 and rs:
                base[w] = med([r["epoch_s"] for r in rs])
        for n, w in shapes:
            rs = [r for r in runs if (r["ranks"], r["workers"]) == (n, w)]
            nerr = len([r for r in prof["runs"] if "error" in r and
                        (r["ranks"], r["workers"]) == (n, w)])
            if not rs:
                p("| %d x %d | failed (%d) | | | | | | | |" % (n, w, nerr))
                continue
            e = [r["epoch_s"] for r in rs]
            em = med(e)
            fl = med([floor_s(r) for r in rs])
            rd = med([r["pfs_read_bytes"] / r["image_bytes"] for r in rs])
            ru = med([r["pfs_read_bytes"] / r["unstaged"] for r in rs])
            br = med([r["order"]["by_readers"] / max(1, r["order"]["read"])
                      for r in rs])
            p("| %d x %d%s | %.2f [%.2f-%.2f] | %s | %.2f | %.2f | %.2f | "
              "%.2f | %.0f%% | %s |" % (
                  n, w, " (one process)" if n == 1 else "", em, min(e),
                  max(e), fmt(em / base[w]) if w in base else "-", em / fl,
                  fl, rd, ru, 100 * br,
                  "/".join("%.1f" % r["load1"] for r in rs)))
        errs = [r for r in prof["runs"] if "error" in r]
        if errs:
            p("")
            for r in errs:
                p("- %s rep %d: %s" % (r["shape"], r["rep"], r["error"]))
        if runs:
            r = runs[-1]
            p("")
            p("Last run (%s): %d orders held at the end of the epoch, "
              "window %s bytes at most %s held, plans %s of %s bytes; "
              "read %s, served %s, read by readers first %s, dropped "
              "unread %s." % (
                  r["shape"], r["order"].get("clients") or 0,
                  r["order"].get("window"), r["order"].get("held_max"),
                  r["order"].get("plans_max"), r["order"].get("plans_budget"),
                  r["order"].get("read"), r["order"].get("served"),
                  r["order"].get("by_readers"),
                  r["order"].get("dropped_unread")))
    p("")
    p("Goal (issue 38): 4 and 8 ranks within 1.10x of one process with the "
      "whole order and within 1.2x of the floor; storage read 0.75x the "
      "image (the unstaged part once).")
    print("\n".join(out))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "rank":
        rank_main(sys.argv[2:])
    elif len(sys.argv) > 2 and sys.argv[1] == "report":
        report(sys.argv[2])
    elif len(sys.argv) == 2:
        measure(sys.argv[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: MIT
"""Turn one bench.py result file into the markdown report.

    report.py RESULTS.json > RESULTS.md

Every number printed comes from RESULTS.json, i.e. from that run; what did
not run or failed is said, never filled in.  Ratios are throughput ratios
to tmpfs: tmpfs seconds / contender seconds for the same pass in the same
repetition, and the median over the repetitions (>1 = faster than tmpfs).
"""
import json
import statistics
import sys

PHASES = ("first", "cold", "warm")
MEASURE_NAMES = {
    "imagefolder": "ImageFolder construction",
    "dl_raw_w2": "DataLoader raw bytes, 2 workers",
    "dl_raw_w4": "DataLoader raw bytes, 4 workers",
    "dl_raw_w8": "DataLoader raw bytes, 8 workers",
    "dl_rawfd_w4": "DataLoader raw bytes via squashcache.torch.read_bytes "
                   "(no isatty ioctl), 4 workers",
    "train_w4": "ImageFolder, then DataLoader raw bytes, 4 workers",
    "train_dec": "ImageFolder, then DataLoader decode + augment, "
                 "a worker per core",
    "train_decfd": "ImageFolder with squashcache.torch.pil_loader (no "
                   "isatty ioctl), then DataLoader decode + augment, "
                   "a worker per core",
    "dl_dec": "DataLoader decode + augment, a worker per core",
    "dl_pil_w2": "DataLoader PIL+RandomResizedCrop, 2 workers",
    "dl_pil_w4": "DataLoader PIL+RandomResizedCrop, 4 workers",
    "cread_t4": "C reader, 4 threads",
    "cread_t16": "C reader, 16 threads",
    "walk_py": "os.walk + lstat (Python)",
    "walk_c_t1": "readdir + lstat (C, 1 thread)",
}
SLOW_NAMES = {
    "sqc_stage": "squashcached on the PFS image (staging)",
    "sqc_demand": "squashcached on the PFS image, stage=none",
    "sqc_stage_base": "squashcached before this change (BASE_BUILD), "
                      "staging",
    "sqc_stage_no_uring": "squashcached on the PFS image (staging), "
                          "-o no_uring",
    "cp_squashfuse_ll": "cp image to /dev/shm + squashfuse_ll",
    "cp_kernel": "cp image to /dev/shm + kernel squashfs",
    "untar_tmpfs": "untar into /dev/shm + tmpfs",
    "direct_squashfuse_ll": "squashfuse_ll on the PFS image",
}


def med(v):
    return statistics.median(v) if v else None


def fmt(x, digits=2):
    if x is None:
        return "–"
    if abs(x) >= 100:
        return "%.0f" % x
    return ("%." + str(digits) + "f") % x


def mrange(v, digits=2, scale=1.0):
    if not v:
        return "–"
    v = [x * scale for x in v]
    if len(v) == 1:
        return fmt(v[0], digits)
    return "%s [%s–%s]" % (fmt(med(v), digits), fmt(min(v), digits),
                           fmt(max(v), digits))


def mb(x):
    return "–" if x is None else "%.0f MB" % (x / 1e6)


def table(head, rows):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


class Report:
    def __init__(self, res):
        self.r = res
        self.cfg = res["config"]
        self.ram_mode = (self.cfg.get("ram") or {}).get("enabled", False)
        self.h5_mode = (self.cfg.get("hdf5") or {}).get("enabled", False)
        self.contenders = [c for c in self.cfg["contenders"]
                           if c not in res.get("skipped", {})]
        self.others = [c for c in self.contenders if c != "tmpfs"]
        self.keys = []  # (measure id, set) in run order
        for m in self.cfg["measures"]:
            k = (m["id"], m["set"])
            if k not in self.keys:
                self.keys.append(k)
        self.p = {}
        for p in res["passes"]:
            self.p[(p["measure"], p["set"], p["contender"], p["phase"],
                    p["rep"])] = p
        self.reps = sorted({p["rep"] for p in res["passes"]})
        self.out = []

    def w(self, s=""):
        self.out.append(s)

    def secs(self, m, s, c, ph):
        return [self.p[(m, s, c, ph, r)]["seconds"] for r in self.reps
                if "seconds" in self.p.get((m, s, c, ph, r), {})]

    def fails(self, m, s, c, ph):
        return [self.p[(m, s, c, ph, r)].get("error") for r in self.reps
                if (m, s, c, ph, r) in self.p and
                "error" in self.p[(m, s, c, ph, r)]]

    def ratios(self, m, s, c, ph):
        out = []
        for r in self.reps:
            a = self.p.get((m, s, "tmpfs", ph, r), {})
            b = self.p.get((m, s, c, ph, r), {})
            if "seconds" in a and "seconds" in b and b["seconds"] > 0:
                out.append(a["seconds"] / b["seconds"])
        return out

    def disturbed(self, m, s, c, ph):
        """Passes of c (or tmpfs) during which another process dropped
        the page cache."""
        return [r for r in self.reps for cc in (c, "tmpfs")
                if self.p.get((m, s, cc, ph, r), {}).get("foreign_drops")]

    def ratio(self, m, s, c, ph):
        v = self.ratios(m, s, c, ph)
        if not v:
            return "FAIL" if self.fails(m, s, c, ph) else "–"
        t = fmt(med(v))
        if self.fails(m, s, c, ph):
            t += " (%d failed)" % len(self.fails(m, s, c, ph))
        if ph == "warm" and self.disturbed(m, s, c, ph):
            t += " †"
        return t

    # -- sections --

    def header(self):
        r, mi = self.r, self.r["machine"]
        quick = "-quick" in (r.get("command") or "") or \
            "--quick" in (r.get("command") or "")
        self.w("# squashcache benchmark%s: %s, commit %s, machine %s" % (
            " (quick smoke run)" if quick else "", r["started"],
            mi.get("squashcache_commit") or "?", mi["host"]))
        self.w()
        if self.h5_mode:
            self.w("Command: `%s` (from `make bench-hdf5` or directly), run "
                   "%s to %s: %.0f s measuring (the HDF5 comparison "
                   "alone)." % (r.get("command") or "bench/run.sh hdf5",
                                r["started"], r["finished"],
                                r["bench_seconds"]))
        elif self.ram_mode:
            self.w("Command: `%s` (from `make bench-ram` or directly), run "
                   "%s to %s: %.0f s measuring (the larger-than-RAM case "
                   "alone)." % (r.get("command") or "bench/run.sh ram",
                                r["started"], r["finished"],
                                r["bench_seconds"]))
        else:
            self.w("Command: `%s` (from `make bench` or directly), run %s to "
                   "%s: %.0f s measuring (%.0f s main part, %.0f s slow "
                   "storage)." % (
                       r.get("command") or "bench/run.sh", r["started"],
                       r["finished"], r["bench_seconds"], r["main_seconds"],
                       r.get("slow_seconds", 0)))
        self.w()
        pk = mi["packages"]
        rows = [
            ["CPU", "%s, %d logical CPUs (%s)" % (mi.get("cpu"), mi["cpus"],
                                                  mi.get("virt"))],
            ["RAM", "%.1f GiB; /dev/shm %.1f GiB" % (
                mi["mem_bytes"] / 2**30, mi["dev_shm_bytes"] / 2**30)],
            ["OS, kernel", "%s; %s" % (mi.get("os"), mi["kernel"])],
            ["libfuse", "fuse3 %s, libfuse3-3 %s" % (pk.get("fuse3"),
                                                    pk.get("libfuse3-3"))],
            ["FUSE over io_uring", "fuse module enable_uring=%s%s" % (
                mi.get("fuse_enable_uring"),
                " (squashcached serves its queues; squashcached_no_uring "
                "and squashfuse_ll use /dev/fuse)"
                if mi.get("fuse_enable_uring") == "Y" else
                " (every FUSE contender uses /dev/fuse)")],
            ["squashfs-tools", str(pk.get("squashfs-tools"))],
            ["squashfuse", str(pk.get("squashfuse"))],
            ["Python, torch, torchvision, PIL", "%s, %s, %s, %s" % (
                mi["python"], pk.get("python3-torch"),
                pk.get("python3-torchvision"), pk.get("python3-pil"))],
            ["GNU tar, coreutils", "%s, %s" % (pk.get("tar"),
                                               pk.get("coreutils"))],
            ["squashcached", "commit %s; %s" % (
                mi["squashcache_commit"], mi.get("squashcached_binary"))],
            ["load", "1/5/15-min load average %s at the start, %s at the "
             "end; 1-min load at pass starts: median %s, max %s" % (
                 "/".join(mi.get("loadavg_start", [])),
                 "/".join(mi.get("loadavg_end", [])),
                 fmt(med(self.loads())), fmt(max(self.loads() or [0])))],
        ]
        for d in mi.get("damon") or []:
            if d.get("action") == "pageout":
                rows.append([
                    "proactive reclaim", "DAMON kdamond %s (%s) pages out "
                    "memory idle for %.0f s or more, up to %.0f MB per %s ms: "
                    "page cache a pass touched more than ~%.0f s before is "
                    "gone by the next pass (tmpfs and squashcached's own "
                    "RAM are not page cache and stay)" % (
                        d["kdamond"], d["operations"], d["min_age_s"],
                        int(d["quota_bytes_per_reset"] or 0) / 1e6,
                        d["quota_reset_ms"], d["min_age_s"])])
        self.w(table(["machine", ""], rows))
        self.w()
        loads = self.loads()
        if loads and med(loads) > 0.75 * mi["cpus"]:
            self.w("**Note: other jobs were running on this machine during "
                   "the run** (median 1-min load %.1f on %d CPUs); all "
                   "contenders shared that, interleaved, but expect noise."
                   % (med(loads), mi["cpus"]))
            self.w()
        if quick:
            self.w("**Quick run**: sets this small finish most passes in "
                   "milliseconds, so the ratios below are a smoke test of "
                   "the harness, not a measurement.")
            self.w()
        if self.ram_mode:
            self.ram_params()
            return
        if self.h5_mode:
            self.h5_params()
            return
        c = self.cfg
        self.w("Parameters: %d repetitions, contenders interleaved and rotated "
               "per repetition (%s); shuffle seed %d + repetition; "
               "DataLoader batch %d (raw) / %d (PIL), PIL measures on a "
               "seeded subset of %d images; tar blocking factor %d; "
               "squashcached extra options: `%s`; pass time limit %d s." % (
                   c["reps"], ", ".join(self.contenders), c["seed"],
                   c["dl_batch"], c["pil_batch"], c["pil_subset"],
                   c["tar_blocking"], c["sqc_opts"] or "none",
                   c["pass_timeout"]))
        self.w()
        self.w("Measures run (`MEASURES`): %s.  Slow-storage readers "
               "(`SLOW_READERS`): %s." % (
                   ", ".join("%s/%s" % (m["id"], m["set"])
                             for m in c["measures"]),
                   ", ".join("%s/%s" % (m["id"], m["set"])
                             for m in c["slow"]["readers"]) or "none"))
        self.w()
        if self.r.get("skipped"):
            for k, v in self.r["skipped"].items():
                self.w("**%s did not run**: %s." % (k, v))
            self.w()

    def loads(self):
        """1-min load at the start of every pass and larger-than-RAM run."""
        runs = [x for p in self.ram_profiles() for x in p["runs"]]
        runs += [x for p in self.h5_storages() for x in p["runs"]]
        return [p["load1"] for p in self.r["passes"] + runs if "load1" in p]

    def datasets(self):
        self.w("## Data sets")
        self.w()
        rows = []
        for name, ds in self.cfg["datasets"].items():
            g, b = ds.get("gen") or {}, ds.get("build") or {}
            untar = [u["seconds"] for u in self.r["untar"]
                     if u["set"] == name]
            rows.append([
                name, g.get("files"), mb(g.get("bytes")),
                "%d–%d B, mean %.0f" % (g.get("min_size", 0),
                                        g.get("max_size", 0),
                                        g.get("mean_size", 0)),
                fmt(g.get("gen_seconds")), mb(b.get("image_bytes")),
                fmt(b.get("mksquashfs_s")), mb(b.get("tar_bytes")),
                fmt(b.get("tar_s")), mrange(untar)])
        self.w(table(["set", "files", "bytes", "file sizes", "generate s",
                      "image", "mksquashfs s", "tar", "tar -c s",
                      "untar into /dev/shm s (this run)"], rows))
        self.w()
        b = (next(iter(self.cfg["datasets"].values())).get("build") or {})
        self.w("Images: `%s`; tars: `%s`.  Generation, mksquashfs and tar -c "
               "times were measured when the files were built (%s on %s; "
               "bench/run.sh caches them by parameters in $BENCH_WORK); the "
               "untar times are from this run (page cache dropped, %s)."
               % (b.get("mksquashfs_cmd"), b.get("tar_cmd"),
                  b.get("built_at"), b.get("host"),
                  "tar on disk, the tree extracted before tmpfs's passes of "
                  "each measure and removed after them" if
                  self.cfg.get("scale") else "tar not used: only the image "
                  "is read, through slowfs" if self.ram_mode else
                  "tar in /dev/shm"))
        self.w()

    def ratio_table(self):
        self.w("## Ratios to tmpfs")
        self.w()
        if self.cfg.get("first_drop") == "before_mount":
            first = ("page cache dropped, then a fresh mount, then the "
                     "pass (tmpfs: the extracted tree)")
        else:
            first = ("first pass after a fresh mount (tmpfs: after "
                     "drop_caches), page cache dropped after the mount")
        self.w("Throughput ratio = tmpfs seconds / contender seconds, same "
               "pass, same repetition; median over %d repetitions.  "
               "**first** = %s, **cold** = after `echo 3 > drop_caches` on a "
               "mount that already served the pass once (squashcached's own "
               "RAM cache survives this by design, so *first* is its honest "
               "cold number), **warm** = the same pass again at once."
               % (len(self.reps), first))
        self.w()
        head = ["measure", "set", "tmpfs s (first/cold/warm)"]
        for c in self.others:
            head += ["%s %s" % (c, ph) for ph in PHASES]
        rows = []
        for m, s in self.keys:
            row = [MEASURE_NAMES.get(m, m), s,
                   " / ".join(fmt(med(self.secs(m, s, "tmpfs", ph)), 3)
                              for ph in PHASES)]
            for c in self.others:
                row += [self.ratio(m, s, c, ph) for ph in PHASES]
            rows.append(row)
        self.w(table(head, rows))
        self.w()
        self.drops_note()

    def drops_note(self):
        passes = self.r["passes"]
        mi = self.r["machine"]
        total = mi.get("drop_pagecache_end", 0) - \
            mi.get("drop_pagecache_start", 0)
        ours = len([p for p in passes if p["phase"] in ("first", "cold")]) \
            + 2 * len(self.reps) + len(self.r.get("mount_first_byte", [])) \
            + 2 * sum(len(p["runs"]) for p in self.slow_profiles())
        dist = [p for p in passes if p.get("foreign_drops")]
        retried = [p for p in passes if p["phase"] == "warm-disturbed"]
        left = [p for p in passes if p["phase"] == "warm" and
                p.get("foreign_drops")]
        if not total and not dist:
            return
        self.w("Page-cache drops during the run: %d in all (about %d of them "
               "this benchmark's own).  %d passes saw another process drop "
               "the page cache while they ran (first/cold: harmless, they "
               "were cold already); %d warm passes were disturbed that way "
               "and run again (up to %d tries), %d warm passes stayed "
               "disturbed and are marked †." % (
                   total, ours, len(dist), len(retried),
                   self.cfg.get("warm_tries", 1), len(left)))
        self.w()

    def abs_table(self):
        self.w("## Times and throughput")
        self.w()
        self.w("Seconds per pass, median [min–max] over the repetitions, and "
               "the median throughput.")
        self.w()
        rows = []
        for m, s in self.keys:
            for c in self.contenders:
                row = [MEASURE_NAMES.get(m, m), s, c]
                for ph in PHASES:
                    v = self.secs(m, s, c, ph)
                    cell = mrange(v, 3)
                    f = self.fails(m, s, c, ph)
                    if f:
                        cell += " (%d failed)" % len(f)
                    recs = [self.p[(m, s, c, ph, r)] for r in self.reps
                            if "seconds" in self.p.get((m, s, c, ph, r), {})]
                    if recs and recs[0].get("bytes") and m.startswith(
                            ("cread", "dl_raw")):
                        cell += "; %.0f MB/s" % med(
                            [x["bytes"] / x["seconds"] / 1e6 for x in recs])
                    if recs and recs[0].get("files"):
                        cell += "; %.0f files/s" % med(
                            [x["files"] / x["seconds"] for x in recs])
                    row.append(cell)
                rows.append(row)
        self.w(table(["measure", "set", "contender"] + list(PHASES), rows))
        self.w()

    def mount_table(self):
        self.w("## Mount to first byte")
        self.w()
        self.w("From starting the mount command (page cache dropped) until "
               "one byte of a file in the middle of the list was read; "
               "median [min–max] ms.  tmpfs has no mount: its row is the "
               "time to untar the set into /dev/shm first.")
        self.w()
        sets = list(self.cfg["datasets"])
        rows = []
        # zerofs's mount is its load of the set: not measured here
        for c in [c for c in self.contenders if c != "zerofs"]:
            row = [c]
            for s in sets:
                if c == "tmpfs":
                    v = [u["seconds"] for u in self.r["untar"]
                         if u["set"] == s]
                    row.append("untar: " + mrange(v, 1, 1e3))
                    continue
                recs = [x for x in self.r["mount_first_byte"]
                        if x["contender"] == c and x["set"] == s]
                v = [x["total_s"] for x in recs if "total_s" in x]
                mv = [x["mount_s"] for x in recs if "mount_s" in x]
                cell = mrange(v, 1, 1e3)
                if mv:
                    cell += " (mount command %s)" % mrange(mv, 1, 1e3)
                nf = len([x for x in recs if "error" in x])
                if nf:
                    cell += " %d failed" % nf
                row.append(cell)
            rows.append(row)
        self.w(table(["contender"] + ["%s (%d files)" % (
            s, (self.cfg["datasets"][s].get("gen") or {}).get("files", 0))
            for s in sets], rows))
        self.w()

    def decode_table(self):
        """Decode-bound epochs (sh bench/run.sh decode): the training
        transform's epoch on each contender, and the daemon's CPU per
        1,000 files, first (cold) and warm."""
        s = "images"
        ms = [m for m in ("train_dec", "train_decfd") if (m, s) in self.keys]
        slow = [(p, [x for x in p["runs"] if x["reader"] == "dl_dec"])
                for p in self.slow_profiles()]
        slow = [(p, runs) for p, runs in slow if runs]
        if not ms and not slow:
            return
        self.w("## Decode-bound epochs")
        self.w()
        self.w("`ImageFolder(root)`, then one shuffled epoch of a DataLoader "
               "with a worker per core whose samples are decoded by PIL and "
               "go through RandomResizedCrop(224), RandomHorizontalFlip and "
               "ToTensor.  Seconds median [min–max]; ratio = tmpfs s / "
               "contender s, same repetition, median; daemon CPU = its "
               "utime+stime during the pass, per 1,000 files read.")
        self.w()
        for m in ms:
            rows = []
            for c in self.contenders:
                for ph in ("first", "warm"):
                    recs = [self.p[(m, s, c, ph, r)] for r in self.reps
                            if "seconds" in self.p.get((m, s, c, ph, r), {})]
                    cpu = [x["daemon"]["cpu_s"] * 1000 / x["files"]
                           for x in recs if (x.get("daemon") or {}).get(
                               "cpu_s") is not None and x.get("files")]
                    rows.append([c, ph, mrange(self.secs(m, s, c, ph), 3),
                                 "–" if c == "tmpfs" else
                                 self.ratio(m, s, c, ph),
                                 fmt(med(cpu), 3) if cpu else "–"])
            self.w("%s.  Image in RAM (/dev/shm); **first** = page cache "
                   "dropped, fresh mount (tmpfs: the extracted tree), then "
                   "the pass." % MEASURE_NAMES[m])
            self.w()
            self.w(table(["contender", "phase", "seconds", "ratio to tmpfs",
                          "daemon CPU s / 1,000 files"], rows))
            self.w()
        for p, runs in slow:
            rows = []
            names = []
            for x in runs:
                if x["contender"] not in names:
                    names.append(x["contender"])
            for n in names:
                ok = [x for x in runs if x["contender"] == n and
                      "total_s" in x]
                c1 = [x["daemon_cpu_epoch_s"] * 1000 / x["files"] for x in ok
                      if x.get("daemon_cpu_epoch_s") is not None and
                      x.get("files")]
                c2 = [x["daemon_cpu_epoch2_s"] * 1000 / x["files"]
                      for x in ok if x.get("daemon_cpu_epoch2_s") is not None
                      and x.get("files")]
                rows.append([SLOW_NAMES.get(n, n),
                             mrange([x["total_s"] for x in ok]),
                             mrange([x["prep_s"] for x in ok
                                     if x.get("prep_s")]),
                             mrange([x["epoch_s"] for x in ok]),
                             mrange([x["epoch2_s"] for x in ok
                                     if x.get("epoch2_s") is not None]),
                             fmt(med(c1), 3) if c1 else "–",
                             fmt(med(c2), 3) if c2 else "–"])
            lim = self.slow_limit(p, "images")
            self.w("Image (or tar) on the slow storage `%s`: cold = page "
                   "cache dropped, then copy/untar or a fresh mount and the "
                   "first epoch; epoch 2 after the page cache is dropped "
                   "again.  The storage's transfer time for the image "
                   "(its bytes / the 8-stream aggregate measured): %s s." %
                   (p["profile"], fmt(lim)))
            self.w()
            self.w(table(["contender", "total s", "copy/untar s",
                          "epoch 1 s", "epoch 2 s",
                          "daemon CPU s / 1,000 files, epoch 1",
                          "epoch 2"], rows))
            self.w()

    def daemon_table(self):
        dm = [c for c in self.others if c in ("squashfuse_ll", "zerofs")
              or c.startswith("squashcached")]
        if not dm:
            return
        self.w("## Daemon CPU and memory")
        self.w()
        self.w("CPU = utime+stime of the daemon during the pass "
               "(/proc/PID/stat), median seconds first / cold / warm; "
               "RSS = the largest VmHWM seen after any pass (/proc/PID/"
               "status).  The kernel and tmpfs work in the kernel and are "
               "not counted.")
        self.w()
        head = ["measure", "set"]
        for c in dm:
            head += ["%s CPU s" % c, "%s peak RSS" % c]
        rows = []
        for m, s in self.keys:
            row = [MEASURE_NAMES.get(m, m), s]
            for c in dm:
                cpu = []
                hwm = []
                for ph in PHASES:
                    v = [self.p[(m, s, c, ph, r)]["daemon"]["cpu_s"]
                         for r in self.reps
                         if (self.p.get((m, s, c, ph, r), {}).get("daemon")
                             or {}).get("cpu_s") is not None]
                    cpu.append(fmt(med(v)))
                    hwm += [self.p[(m, s, c, ph, r)]["daemon"]["hwm"]
                            for r in self.reps
                            if (self.p.get((m, s, c, ph, r), {}).get("daemon")
                                or {}).get("hwm")]
                row += [" / ".join(cpu),
                        "%.0f MB" % (max(hwm) / 1e6) if hwm else "–"]
            rows.append(row)
        self.w(table(head, rows))
        self.w()

    def sqc_table(self):
        for c in self.others:
            if c.startswith("squashcached"):
                self.sqc_table_of(c)

    def sqc_table_of(self, c):
        self.w("## %s: FUSE requests per file" % c)
        self.w()
        self.w("From its stats (control socket), delta over the pass, "
               "divided by the files the pass read; median over the "
               "repetitions.  data hit% = data cache hits / (hits + "
               "misses).")
        self.w()
        ops = ("lookup", "getattr", "open", "read", "readdirplus",
               "readdir", "opendir", "ioctl")
        rows = []
        for m, s in self.keys:
            for ph in PHASES:
                recs = [self.p[(m, s, c, ph, r)]
                        for r in self.reps
                        if "sqc" in self.p.get((m, s, c, ph, r), {})]
                recs = [x for x in recs if x.get("files")]
                if not recs:
                    continue
                row = [MEASURE_NAMES.get(m, m), s, ph]
                for op in ops:
                    # a daemon too old to count this request: no number
                    v = [x["sqc"]["delta"]["fuse"][op] / x["files"]
                         for x in recs
                         if op in x["sqc"]["delta"].get("fuse", {})]
                    row.append(fmt(med(v), 3) if v else "–")
                hit = []
                dec = []
                for x in recs:
                    d = x["sqc"]["delta"].get("cache", {}).get("data", {})
                    h, mi = d.get("hits", 0), d.get("misses", 0)
                    if h + mi:
                        hit.append(100.0 * h / (h + mi))
                    dec.append(x["sqc"]["delta"].get("image_io", {}).get(
                        "decompressions", 0) / x["files"])
                row.append(fmt(med(hit), 1) if hit else "–")
                row.append(fmt(med(dec), 3))
                rows.append(row)
        self.w(table(["measure", "set", "phase"] + list(ops) +
                     ["data hit%", "decompressions"], rows))
        self.w()

    def slow_profiles(self):
        """The slow-storage profiles measured (older results: one)."""
        if self.r.get("slow_profiles"):
            return [p for p in self.r["slow_profiles"] if p.get("runs")]
        sl = self.r.get("slow") or {}
        return [dict(sl, profile="pfs")] if sl.get("runs") else []

    @staticmethod
    def slow_limit(p, dset):
        """Storage limit: image bytes / measured aggregate bandwidth."""
        agg = (p.get("aggregate") or {}).get("mb_per_s")
        size = (p.get("image_bytes") or {}).get(dset)
        return size / (agg * 1e6) if agg and size else None

    def slow_table(self):
        profs = self.slow_profiles()
        if not profs:
            if not self.cfg["slow"]["enabled"]:
                self.w("## Slow storage\n\nNot run (SLOW=0).\n")
            return
        self.w("## Slow storage: first and second epoch from a "
               "parallel-file-system stand-in")
        self.w()
        cached = [p for p in profs if (p.get("params") or {}).get("cached")]
        self.w("The images and tars sit behind `bench/slowfs` (a FUSE "
               "passthrough: %s), once per storage profile.  "
               "Each contender starts from nothing local (page cache "
               "dropped) and is timed until one shuffled epoch is done: "
               "total = copy or untar + mount + epoch.  Then the page cache "
               "is dropped and a second epoch (another order) runs.  "
               "Median [min–max] over %d repetitions; *vs* = this total / "
               "squashcached's (staging) total, per repetition; bytes read "
               "from storage are slowfs's own count, as a multiple of the "
               "image (or tar) size.  **Storage limit** = image bytes / the "
               "aggregate bandwidth measured with 8 parallel 1 MiB streams."
               % ("here a PFS client with a page cache and %s KiB of "
                  "readahead, `SLOW_CACHED=1`" %
                  cached[0]["params"].get("read_ahead_kb", "the kernel's")
                  if cached else "direct_io, no page cache",
                  self.cfg["slow_reps"]))
        self.w()
        for p in profs:
            self.slow_profile(p)

    def slow_profile(self, sl):
        p = sl["params"]
        self.w("### Profile `%s`: %s ms a request, %s B/s%s" % (
            sl["profile"], p["latency_ms"], p["bw"],
            (", %s servers, %s stripes" % (p["stripes"], p["stripe_size"])
             if int(p.get("stripes") or 1) > 1 else ", one link")))
        self.w()
        agg = sl.get("aggregate") or {}
        self.w("`%s`.  Measured single-stream reads: %s; %s parallel "
               "streams: %.0f MB/s." % (
                   sl.get("command"),
                   ", ".join("dd %s %.0f MB/s" % (
                       k.replace("dd_bs_", "bs="), v["mb_per_s"])
                       for k, v in (sl.get("calibration") or {}).items()),
                   agg.get("streams", "–"), agg.get("mb_per_s", 0)))
        self.w()
        for k, v in (sl.get("skipped") or {}).items():
            self.w("**%s did not run**: %s." % (k, v))
        readers = []
        for x in sl["runs"]:
            k = (x["reader"], x["set"])
            if k not in readers:
                readers.append(k)
        for rd, s in readers:
            lim = self.slow_limit(sl, s)
            size = (sl.get("image_bytes") or {}).get(s)
            self.w("**%s, %s set** (storage limit %s s)" % (
                MEASURE_NAMES.get(rd, rd), s, fmt(lim)))
            self.w()
            rows = []
            names = []
            for x in sl["runs"]:
                if (x["reader"], x["set"]) == (rd, s) and \
                        x["contender"] not in names:
                    names.append(x["contender"])
            ref = {x["rep"]: x["total_s"] for x in sl["runs"]
                   if (x["reader"], x["set"], x["contender"]) ==
                   (rd, s, "sqc_stage") and "total_s" in x}
            for n in names:
                recs = [x for x in sl["runs"] if (x["reader"], x["set"],
                                                   x["contender"]) ==
                        (rd, s, n)]
                ok = [x for x in recs if "total_s" in x]
                bad = [x for x in recs if "error" in x]
                vs = [x["total_s"] / ref[x["rep"]] for x in ok
                      if ref.get(x["rep"])]
                stage = ""
                st = [x["sqc"]["stage"] for x in ok
                      if (x.get("sqc") or {}).get("stage")]
                if st:
                    stage = "%s, %.0f%% staged at epoch end" % (
                        st[-1].get("state"), med([y.get("percent", 0)
                                                  for y in st]))

                def rd_bytes(key):
                    v = med([x.get(key, {}).get("read_bytes", 0)
                             for x in ok])
                    if v is None:
                        return "–"
                    return "%s (%.2f×)" % (mb(v), v / size) if size \
                        else mb(v)
                rows.append([
                    SLOW_NAMES.get(n, n),
                    mrange([x["total_s"] for x in ok]) +
                    (" (%d failed: %s)" % (len(bad), bad[0]["error"][:80])
                     if bad else ""),
                    mrange([x["prep_s"] for x in ok if x.get("prep_s")]),
                    mrange([x["mount_s"] for x in ok
                            if x.get("mount_s") is not None], 3),
                    mrange([x["epoch_s"] for x in ok]),
                    rd_bytes("pfs"),
                    mrange([x["epoch2_s"] for x in ok
                            if x.get("epoch2_s") is not None]),
                    rd_bytes("pfs2"),
                    fmt(med(vs)) if vs else "–", stage])
            self.w(table(["contender", "total s", "copy/untar s", "mount s",
                          "epoch s", "read from storage", "epoch 2 s",
                          "epoch 2 from storage", "vs squashcached",
                          "staging"], rows))
            self.w()

    def targets(self):
        if "squashcached" not in self.others:
            return
        self.w("## Targets (squashcached, ratios to tmpfs, this run)")
        self.w()
        rows = []

        def chk(label, val, goal, ok):
            rows.append([label, val, goal,
                         "–" if ok is None else ("met" if ok else "NOT met")])

        def r(m, s, ph):
            v = self.ratios(m, s, "squashcached", ph)
            return med(v) if v else None

        for m, s, ph, goal in (("cread_t16", "images", "warm", 0.90),
                               ("cread_t16", "images", "first", 0.40),
                               ("cread_t16", "small", "warm", 0.90),
                               ("cread_t16", "small", "first", 0.40),
                               ("dl_raw_w4", "images", "warm", 0.95),
                               ("dl_raw_w4", "images", "first", 0.70),
                               ("walk_py", "small", "warm", 0.90),
                               ("walk_py", "small", "first", 0.50)):
            if (m, s) not in self.keys:
                continue
            v = r(m, s, ph)
            chk("%s, %s, %s" % (MEASURE_NAMES[m], s,
                                "cold (first epoch after mount)"
                                if ph == "first" else ph),
                fmt(v), ">= %.2f" % goal, None if v is None else v >= goal)
        recs = [x for x in self.r["mount_first_byte"]
                if x["contender"] == "squashcached" and x["set"] == "small"
                and "total_s" in x]
        if recs:
            v = med([x["total_s"] for x in recs]) * 1e3
            n = (self.cfg["datasets"]["small"].get("gen") or {}).get("files")
            chk("mount to first byte, %s files" % n, "%.1f ms" % v,
                "<= 20 ms", v <= 20)
        # RSS: budgets (stage in RAM + cache budgets) + 100 B per file
        worst = None
        for p in self.r["passes"]:
            if p["contender"] != "squashcached" or "sqc" not in p:
                continue
            hwm = (p.get("daemon") or {}).get("hwm")
            a = p["sqc"]["after"]
            if not hwm or not a.get("cache"):
                continue
            budget = sum((a["cache"].get(k) or {}).get("budget", 0)
                         for k in ("data", "meta", "bmap"))
            # the staged copy lives in the daemon's own memory
            budget += (a.get("stage") or {}).get("staged", 0)
            budget += 100 * (a.get("inodes") or 0)
            if worst is None or hwm - budget > worst[0] - worst[1]:
                worst = (hwm, budget, p["measure"], p["set"])
        if worst:
            chk("daemon RSS <= budgets + 100 B/file (worst pass: %s, %s)"
                % (worst[2], worst[3]), "%.0f MB" % (worst[0] / 1e6),
                "<= %.0f MB" % (worst[1] / 1e6), worst[0] <= worst[1])
        for sl in self.slow_profiles():
            pn = sl["profile"]
            for rd, s in sorted({(x["reader"], x["set"])
                                 for x in sl["runs"]}):
                def runs(n, sl=sl, rd=rd, s=s):
                    return [x for x in sl["runs"] if
                            (x["reader"], x["set"], x["contender"]) ==
                            (rd, s, n) and "total_s" in x]

                def tot(n):
                    v = [x["total_s"] for x in runs(n)]
                    return med(v) if v else None
                a = tot("sqc_stage")
                lim = self.slow_limit(sl, s)
                size = (sl.get("image_bytes") or {}).get(s)
                name = "%s, %s, %s" % (pn, MEASURE_NAMES.get(rd, rd), s)
                if a is not None and lim:
                    chk("slow storage %s: first epoch vs storage limit" %
                        name, "%s s vs %s s (%.2f×)" % (
                            fmt(a), fmt(lim), a / lim), "<= 1.10×",
                        a <= 1.10 * lim)
                byt = [x["pfs"].get("read_bytes", 0)
                       for x in runs("sqc_stage")]
                if byt and size:
                    chk("slow storage %s: bytes read from storage, first "
                        "epoch" % name, "%.3f× image" % (med(byt) / size),
                        "<= 1.02×", max(byt) <= 1.02 * size)
                b2 = [x.get("pfs2", {}).get("read_bytes", 0)
                      for x in runs("sqc_stage") if "pfs2" in x]
                if b2:
                    chk("slow storage %s: bytes read from storage, second "
                        "epoch" % name, mb(max(b2)), "0", max(b2) == 0)
                for other in ("cp_squashfuse_ll", "cp_kernel",
                              "untar_tmpfs"):
                    b = tot(other)
                    if a is None or b is None:
                        continue
                    chk("slow storage %s: first epoch vs %s" % (
                        name, SLOW_NAMES[other]),
                        "%s s vs %s s" % (fmt(a), fmt(b)), "sooner", a < b)
        self.w(table(["target", "measured", "goal", ""], rows))
        self.w()

    def failures(self):
        errs = [p for p in self.r["passes"] if "error" in p]
        errs += [dict(x, measure="mount to first byte", phase="-")
                 for x in self.r["mount_first_byte"] if "error" in x]
        if not errs:
            self.w("No pass failed.")
            self.w()
            return
        self.w("## Failures")
        self.w()
        seen = {}
        for p in errs:
            k = (p["contender"], p["measure"], p["set"], p["error"][:160])
            seen[k] = seen.get(k, 0) + 1
        self.w(table(["contender", "measure", "set", "passes", "error"],
                     [[k[0], k[1], k[2], n, k[3].replace("|", "/")]
                      for k, n in seen.items()]))
        self.w()

    def notes(self):
        self.w("## How the passes were made")
        self.w()
        self.w("- tmpfs: the set's tar extracted into /dev/shm (timed apart, "
               "above); kernel: `mount -t squashfs -o loop,ro IMG`; "
               "squashfuse_ll: `squashfuse_ll IMG MNT` (defaults); "
               "squashcached: `squashcached -o log=FILE IMG MNT` (defaults: "
               "the image is on tmpfs, so stage=auto means no staging). All "
               "images and tars are in /dev/shm.")
        if "zerofs" in self.contenders:
            self.w("- zerofs (the FUSE floor): `bench/zerofs%s IMG MNT` "
                   "loads the image's tree%s into memory before it mounts, "
                   "then answers every request from memory and does nothing "
                   "else: squashcached's mount options and timeouts, open "
                   "and opendir answered ENOSYS, READDIRPLUS, /dev/fuse "
                   "(no io_uring).  It is left out of mount to first byte "
                   "(its mount is the load)." % (
                       " -o " + self.cfg["zerofs_opts"]
                       if self.cfg.get("zerofs_opts") else "",
                       " (names and sizes; the bytes a fixed pattern)"
                       if "pattern" in (self.cfg.get("zerofs_opts") or "")
                       else " and every file's bytes"))
        self.w("- C reader: `preader read ROOT LIST THREADS SEED`: the list "
               "shuffled with the seed, each thread open/read(1 MiB buffer, to "
               "EOF)/close per file.  Walks: Python `os.walk` + `os.lstat` "
               "per file, single thread; C: readdir + fstatat per entry.")
        self.w("- DataLoader: a Dataset whose sampler yields the shuffled "
               "paths; raw = `open(p,'rb').read()` in the worker, the batch "
               "collated to a byte count; PIL = `Image.open` + `convert('RGB')`"
               " + RandomResizedCrop(224) + ToTensor, default collate.  "
               "Workers are persistent (started once, before any mount), so "
               "worker start-up is not in the times.")
        self.w("- ImageFolder: `torchvision.datasets.ImageFolder(root)` "
               "(small set: `is_valid_file=lambda p: True`, its files are "
               "not images; its top directories are the classes).")
        self.w("- Cold: `sync; echo 3 > /proc/sys/vm/drop_caches` before the "
               "pass.  For FUSE mounts this also drops dentries and inodes, "
               "so lookups go to the daemon again.")
        self.w()

    # -- larger than RAM (sh bench/run.sh ram) --

    def ram_profiles(self):
        return [p for p in (self.r.get("ram") or {}).get("profiles", [])
                if p.get("runs")]

    def ram_params(self):
        rc = self.cfg["ram"]
        ds = self.cfg["datasets"].get("images") or {}
        g = ds.get("gen") or {}
        self.w("Larger than RAM: the images set (%s files) behind "
               "`bench/slowfs`, profiles %s; readers %s; squashcached runs: "
               "%d repetitions each, the kernel's squashfs and squashfuse_ll: "
               "%d (`RAM_REPS`, `RAM_PEER_REPS`); contenders rotated per "
               "repetition; shuffle seed %d + repetition (first epoch), "
               "+ 1000 (measured epoch); DataLoader batch %d; epoch time "
               "limit %d s (`SLOW_TIMEOUT`); the peers' first epoch %s "
               "(`RAM_PEER_FIRST`); extra squashcached options: `%s`." % (
                   g.get("files", "?"),
                   ", ".join(p["name"] for p in rc["profiles"]),
                   ", ".join("%s/%s" % (m["id"], m["set"])
                             for m in rc["readers"]) or "none",
                   rc["reps"], rc["peer_reps"], self.cfg["seed"],
                   self.cfg["dl_batch"], rc["timeout"],
                   "run" if rc["peer_first"] else "skipped",
                   " ".join(x for x in (self.cfg.get("sqc_opts"),
                                        rc.get("sqc_opts")) if x) or
                   "none"))
        self.w()
        for k, v in ((self.r.get("ram") or {}).get("skipped") or {}).items():
            self.w("**%s did not run**: %s." % (k, v))
            self.w()

    @staticmethod
    def ram_runs(p, rd, n):
        return [x for x in p["runs"] if (x["reader"], x["contender"]) ==
                (rd, n)]

    @staticmethod
    def ram_floor(p, x):
        """unstaged bytes / the configured bandwidth, in seconds."""
        bw = p.get("bw_bytes_per_s")
        return x["unstaged"] / bw if bw and "unstaged" in x else None

    @staticmethod
    def ram_dd(p):
        """Single-stream MB/s at 4 MiB reads, measured."""
        return ((p.get("calibration") or {}).get("dd_bs_4M") or {}).get(
            "mb_per_s")

    def ram_targets(self):
        rows = []
        for p in self.ram_profiles():
            readers = []
            for x in p["runs"]:
                if x["reader"] not in readers:
                    readers.append(x["reader"])
            for rd in readers:
                for n in ("sqc_quarter", "sqc_quarter_order"):
                    ok = [x for x in self.ram_runs(p, rd, n)
                          if "epoch_s" in x and x.get("unstaged")]
                    if not ok:
                        continue
                    name = "%s, %s, %s" % (p["profile"], rd, n)
                    by = [x["pfs"].get("read_bytes", 0) / x["unstaged"]
                          for x in ok]
                    rows.append([
                        "%s: bytes from storage in the epoch / unstaged "
                        "bytes" % name,
                        "%s× (worst %s×)" % (fmt(med(by), 3),
                                             fmt(max(by), 3)),
                        "<= 1.05×", "met" if max(by) <= 1.05 else
                        "NOT met"])
                    fl = [x["epoch_s"] / self.ram_floor(p, x) for x in ok
                          if self.ram_floor(p, x)]
                    if fl:
                        goal = n == "sqc_quarter_order" and \
                            p["profile"] == "pfs_slow"
                        rows.append([
                            "%s: epoch / floor" % name,
                            "%s×" % fmt(med(fl)),
                            "<= 1.15× (issue #20 item 3)" if goal else
                            "close to 1 (no set figure)",
                            ("met" if med(fl) <= 1.15 else "NOT met")
                            if goal else "–"])
        if not rows:
            return
        self.w("## Targets (larger than RAM, squashcached, this run)")
        self.w()
        self.w(table(["target", "measured (median)", "goal", ""], rows))
        self.w()

    def ram_section(self):
        profs = self.ram_profiles()
        self.w("## Larger than RAM: the image on slow storage, "
               "squashcached with ram= a quarter of it")
        self.w()
        if not profs:
            self.w("Nothing was measured.")
            self.w()
            return
        self.w(
            "Every contender reads the image straight from `bench/slowfs` "
            "(nothing copied locally): **direct_kernel** = `mount -t "
            "squashfs -o loop,ro` of the image on slowfs, "
            "**direct_squashfuse_ll** = `squashfuse_ll` on it, "
            "**sqc_quarter** = `squashcached -o stage=full,ram=<image "
            "bytes / 4>`, **sqc_quarter_order** = the same, with the "
            "epoch's order sent before each epoch (`mountctl order -0 MNT`, "
            "the paths the epoch reads, in its order; the call's time is "
            "part of the epoch's).  Per run: page cache dropped, mount, a "
            "first shuffled epoch (squashcached; the peers' only with "
            "`RAM_PEER_FIRST=1`: nothing of it survives drop_caches), "
            "staging waited for (squashcached: its time apart), page cache "
            "dropped, then the **measured epoch** in another order.")
        self.w()
        self.w(
            "**unstaged** = image bytes - bytes staged in RAM when the "
            "measured epoch starts (the daemon's `stage.staged`; the peers "
            "stage nothing: the whole image).  **from storage / unstaged** "
            "= slowfs's `read_bytes` during the measured epoch / unstaged "
            "bytes (goal <= 1.05).  **floor** = unstaged bytes / the "
            "profile's configured bandwidth (slowfs's `bw`), the least "
            "time reading them can take; *floor dd* = the same at the "
            "measured single-stream 4 MiB `dd` speed.  **epoch / floor** "
            "uses the configured bandwidth, per run, median.  **kernel ÷ "
            "this**, **squashfuse_ll ÷ this** = the peer's median epoch / "
            "this median epoch (> 1: this one is faster).  Epoch seconds "
            "are median [min–max], then every run.")
        self.w()
        for p in profs:
            self.ram_profile(p)

    def ram_profile(self, p):
        pa = p["params"]
        bw = p.get("bw_bytes_per_s")
        dd = self.ram_dd(p)
        agg = p.get("aggregate") or {}
        size = (p.get("image_bytes") or {}).get("images")
        self.w("### Profile `%s`: %s ms a request, %s B/s%s" % (
            p["profile"], pa["latency_ms"], pa["bw"],
            (", %s servers, %s stripes" % (pa["stripes"], pa["stripe_size"])
             if int(pa.get("stripes") or 1) > 1 else ", one link")))
        self.w()
        self.w("`%s`.  Configured bandwidth %s MB/s; measured single-stream "
               "reads: %s; %s parallel 1 MiB streams: %s MB/s.  Image %s; "
               "ram= budget %s." % (
                   p.get("command"), fmt(bw / 1e6 if bw else None, 1),
                   ", ".join("dd %s %.0f MB/s" % (
                       k.replace("dd_bs_", "bs="), v["mb_per_s"])
                       for k, v in (p.get("calibration") or {}).items()),
                   agg.get("streams", "–"), fmt(agg.get("mb_per_s"), 0),
                   mb(size), mb(size // 4 if size else None)))
        self.w()
        readers, names = [], []
        for x in p["runs"]:
            if x["reader"] not in readers:
                readers.append(x["reader"])
            if x["contender"] not in names:
                names.append(x["contender"])

        def epochs(rd, n):
            return [x["epoch_s"] for x in self.ram_runs(p, rd, n)
                    if "epoch_s" in x]

        for rd in readers:
            self.w("**%s**" % MEASURE_NAMES.get(rd, rd))
            self.w()
            peers = {n: med(epochs(rd, n)) for n in
                     ("direct_kernel", "direct_squashfuse_ll")}
            # a peer whose measured epochs all timed out: at least the limit
            slow = {n: self.cfg["ram"]["timeout"] for n in peers
                    if not peers[n] and any(
                        x.get("timed_out") == "epoch"
                        for x in self.ram_runs(p, rd, n))}
            rows = []
            notes = []
            for n in names:
                recs = self.ram_runs(p, rd, n)
                ok = [x for x in recs if "epoch_s" in x]
                bad = [x for x in recs if "error" in x]
                ep = [x["epoch_s"] for x in ok]
                cell = mrange(ep)
                if len(ep) > 1:
                    cell += "; " + ", ".join(fmt(v) for v in ep)
                if bad:
                    tout = [x for x in bad if x.get("timed_out")]
                    if tout:
                        cell += "; %d timed out (> %d s)" % (
                            len(tout), self.cfg["ram"]["timeout"])
                    if len(bad) > len(tout):
                        why = [x["error"] for x in bad
                               if not x.get("timed_out")][0]
                        cell += "; %d failed (%s)" % (
                            len(bad) - len(tout),
                            why.split(":")[0][:60].replace("|", "/"))
                    for x in bad:
                        notes.append("%s rep %d: %s" % (n, x["rep"],
                                                        x["error"]))
                uns = [x["unstaged"] for x in ok if "unstaged" in x]
                by = [x["pfs"].get("read_bytes", 0) / x["unstaged"]
                      for x in ok if x.get("unstaged")]
                fl = [self.ram_floor(p, x) for x in ok]
                fl = [f for f in fl if f]
                ratio = [x["epoch_s"] / self.ram_floor(p, x) for x in ok
                         if self.ram_floor(p, x)]
                first = [x["first"]["seconds"] for x in ok
                         if "seconds" in (x.get("first") or {})]
                wait = [x["stage_wait_s"] for x in ok
                        if "stage_wait_s" in x]
                hwm = [(x.get("daemon") or {}).get("hwm") for x in ok]
                hwm = [h for h in hwm if h]
                me = med(ep)

                def vs(peer):
                    if not me:
                        return "–"
                    if n == peer:
                        return "1"
                    if peers.get(peer):
                        return "%s×" % fmt(peers[peer] / me)
                    if slow.get(peer):
                        # every measured epoch of the peer timed out
                        return "> %s× (timed out)" % fmt(slow[peer] / me)
                    return "–"
                rows.append([
                    n, cell,
                    "%s× [%s–%s] (%s)" % (fmt(med(by), 3), fmt(min(by), 3),
                                          fmt(max(by), 3),
                                          mb(med([x["pfs"].get(
                                              "read_bytes", 0)
                                              for x in ok])))
                    if by else "–",
                    mb(med(uns)) if uns else "–",
                    fmt(med(fl)) if fl else "–",
                    fmt(med(uns) / (dd * 1e6)) if uns and dd else "–",
                    "%s×" % fmt(med(ratio)) if ratio else "–",
                    vs("direct_kernel"), vs("direct_squashfuse_ll"),
                    mrange(first) if first else "–",
                    mrange(wait) if wait else "–",
                    "%.0f MB" % (max(hwm) / 1e6) if hwm else "–"])
            self.w(table(["contender", "epoch s", "from storage / unstaged",
                          "unstaged", "floor s", "floor dd s",
                          "epoch / floor", "kernel ÷ this",
                          "squashfuse_ll ÷ this", "first epoch s",
                          "staging wait s", "daemon peak RSS"], rows))
            self.w()
            self.ram_detail(p, rd)
            for t in notes:
                self.w("- %s" % t.replace("|", "/"))
            if notes:
                self.w()

    def ram_detail(self, p, rd):
        """What squashcached held and what the hint said."""
        for n in ("sqc_quarter", "sqc_quarter_order"):
            ok = [x for x in self.ram_runs(p, rd, n) if "epoch_s" in x]
            if not ok:
                continue
            staged = [x["staged"] for x in ok]
            peak = [((x.get("sqc") or {}).get("after", {}).get("cache") or
                     {}).get("data", {}).get("peak") for x in ok]
            peak = [v for v in peak if v is not None]
            line = "%s: staged %s of a %s budget; data cache peak %s" % (
                n, mb(med(staged)), mb(med([x.get("ram_budget", 0)
                                           for x in ok])),
                mb(max(peak)) if peak else "–")
            o = [x for x in ok if x.get("order_out")]
            if o:
                line += "; hint: `%s`, %s s to send (median)" % (
                    o[-1]["order_out"].splitlines()[-1],
                    fmt(med([x["order_s"] for x in o]), 3))
            ost = [x["sqc"]["after"]["order"] for x in ok
                   if n == "sqc_quarter_order" and
                   "order" in (x.get("sqc") or {}).get("after", {})]
            if ost:
                line += "; daemon's order stats (last run): `%s`" % \
                    json.dumps(ost[-1], separators=(",", ":"))[:400]
            self.w("- " + line + ".")
        self.w()

    def ram_notes(self):
        self.w("## How the runs were made")
        self.w()
        self.w("- DataLoader: persistent workers (started once, before any "
               "mount); the sampler yields absolute paths; raw = "
               "`open(p,'rb').read()` in the worker.  C reader: `preader "
               "read ROOT LIST THREADS 0` on the epoch's shuffled list "
               "(seed 0 keeps its order, the hint's).")
        self.w("- An epoch past the time limit is stopped after its batch at "
               "hand (the C reader is killed) and reported as timed out, "
               "without a figure.")
        self.w("- Bytes from storage are slowfs's own count "
               "(`.slowfs-stats` read_bytes), from the start of the measured "
               "epoch (before the hint) to its end.")
        self.w()

    # -- the HDF5 recipe (sh bench/run.sh hdf5) --

    def h5_storages(self):
        return [p for p in (self.r.get("hdf5") or {}).get("storages", [])
                if p.get("runs")]

    def h5_params(self):
        hc = self.cfg["hdf5"]
        self.w("Parameters: %d repetitions per storage and mode, the ways "
               "rotated each repetition (%s); modes %s; DataLoader with %d "
               "workers (persistent within a run), batch %d raw / %d "
               "decoded, RandomSampler seeded with %d + repetition; slowfs "
               "%s; epoch time limit %d s." % (
                   hc["reps"], ", ".join(hc["contenders"]),
                   ", ".join(hc["modes"]), hc["workers"], hc["batch_raw"],
                   hc["batch_decoded"], self.cfg["seed"],
                   "with the page cache (`cached`) and %d KiB of "
                   "readahead" % hc.get("read_ahead_kb", 128)
                   if hc.get("cached") else "with direct_io (no client "
                   "page cache: every epoch reads the storage)",
                   hc["timeout"]))
        self.w()

    H5_NAMES = {"hdf5": "HDF5 file (h5py, lazily opened per worker)",
                "squashcached": "ImageFolder over squashcached",
                "untar_tmpfs": "untar into /dev/shm, ImageFolder"}

    def h5_section(self):
        self.w("## The HDF5 recipe side by side")
        self.w()
        self.w("Each run: page cache dropped; the way's preparation (untar "
               "from the storage into /dev/shm, or the mount: "
               "`squashcached -o stage=full` on slow storage, defaults in "
               "RAM; nothing for the HDF5 file); then the Dataset made "
               "(ImageFolder's scan, or the HDF5 file's length read in "
               "`__init__`), a DataLoader, and **epoch 1** timed from the "
               "Dataset's creation to its last batch (worker start-up "
               "included, the same for every way); **epoch 2** at once, on "
               "the same workers (the HDF5 file stays open in each).  "
               "**total** = preparation + epoch 1.  Median [min–max] "
               "seconds; *vs HDF5* = the HDF5 file's time / this way's, per "
               "repetition, median (> 1: faster than HDF5).")
        self.w()
        for st in self.h5_storages():
            where = ("files in RAM (/dev/shm)" if st["profile"] == "ram"
                     else "slowfs profile `%s`: %s" % (
                         st["profile"], st.get("command")))
            self.w("### Storage: %s" % where)
            self.w()
            for mode in self.cfg["hdf5"]["modes"]:
                runs = [x for x in st["runs"] if x["mode"] == mode]
                if not runs:
                    continue
                self.w("**%s**" % ("raw bytes (no decoding)" if mode == "raw"
                                   else "decoded: PIL + RandomResizedCrop"
                                   "(224) + RandomHorizontalFlip + ToTensor"))
                self.w()
                rows = []
                for n in self.cfg["hdf5"]["contenders"]:
                    ok = [x for x in runs if x["contender"] == n and
                          "epoch1_s" in x]
                    bad = [x for x in runs if x["contender"] == n and
                           "error" in x]
                    ref = {(x["rep"]): x for x in runs
                           if x["contender"] == "hdf5" and "epoch1_s" in x}

                    def vs(key, ok=ok, ref=ref):
                        v = [ref[x["rep"]][key] / x[key] for x in ok
                             if x["rep"] in ref and x.get(key)]
                        return fmt(med(v)) if v else "–"
                    rd = [x["pfs"].get("read_bytes", 0) for x in ok
                          if "pfs" in x]
                    rd2 = [x["pfs2"].get("read_bytes", 0) for x in ok
                           if "pfs2" in x]
                    cpu = [x["daemon_cpu_epoch_s"] * 1000 / x["files"]
                           for x in ok if x.get("daemon_cpu_epoch_s")
                           is not None and x.get("files")]
                    rows.append([
                        self.H5_NAMES.get(n, n),
                        mrange([x["total_s"] for x in ok]) +
                        (" (%d failed: %s)" % (len(bad), bad[0]["error"][:80])
                         if bad else ""),
                        mrange([x["prep_s"] for x in ok]),
                        mrange([x["epoch1_s"] for x in ok]),
                        vs("total_s"), vs("epoch1_s"),
                        mrange([x["epoch2_s"] for x in ok]), vs("epoch2_s"),
                        mb(med(rd)) if rd else "–",
                        mb(med(rd2)) if rd2 else "–",
                        fmt(med(cpu), 3) if cpu else "–"])
                self.w(table(["way", "total s", "prep s", "epoch 1 s",
                              "total vs HDF5", "epoch 1 vs HDF5",
                              "epoch 2 s", "epoch 2 vs HDF5",
                              "read from storage, epoch 1",
                              "epoch 2", "daemon CPU s / 1,000 files, "
                              "epoch 1"], rows))
                self.w()
        self.h5_convert()

    def h5_convert(self):
        ds = self.cfg["datasets"].get("images") or {}
        g, b, h = ds.get("gen") or {}, ds.get("build") or {}, \
            ds.get("h5_build") or {}
        self.w("### Converting the set")
        self.w()
        self.w("Timed once when the files were built (cached in "
               "$BENCH_WORK; built %s on %s): the HDF5 file by "
               "`bench/h5build.py` (h5py %s, HDF5 %s: per file, its bytes "
               "into a variable-length uint8 dataset and its class into "
               "the targets dataset), the image by `%s`, the tar by `%s`."
               % (b.get("built_at"), b.get("host"), h.get("h5py"),
                  h.get("hdf5"), b.get("mksquashfs_cmd"), b.get("tar_cmd")))
        self.w()
        self.w(table(["", "seconds", "size", "size / the files' bytes"], [
            ["the files (%s)" % g.get("files"), "–", mb(g.get("bytes")),
             "1.00"],
            ["HDF5 file", fmt(h.get("seconds")), mb(h.get("h5_bytes")),
             fmt(h["h5_bytes"] / g["bytes"], 3)
             if h.get("h5_bytes") and g.get("bytes") else "–"],
            ["SquashFS image", fmt(b.get("mksquashfs_s")),
             mb(b.get("image_bytes")),
             fmt(b["image_bytes"] / g["bytes"], 3)
             if b.get("image_bytes") and g.get("bytes") else "–"],
            ["tar", fmt(b.get("tar_s")), mb(b.get("tar_bytes")),
             fmt(b["tar_bytes"] / g["bytes"], 3)
             if b.get("tar_bytes") and g.get("bytes") else "–"]]))
        self.w()

    def render(self):
        if self.h5_mode:
            self.header()
            self.h5_section()
            self.datasets()
            return "\n".join(self.out) + "\n"
        if self.ram_mode:
            self.header()
            self.ram_targets()
            self.ram_section()
            self.datasets()
            self.ram_notes()
            return "\n".join(self.out) + "\n"
        self.header()
        self.targets()
        self.ratio_table()
        self.mount_table()
        self.slow_table()
        self.decode_table()
        self.daemon_table()
        self.sqc_table()
        self.abs_table()
        self.datasets()
        self.failures()
        self.notes()
        return "\n".join(self.out) + "\n"


class SweepReport:
    """bench/sweep.py's results: jobs with and without a kept copy."""

    def __init__(self, res):
        self.r = res
        self.cfg = res["config"]
        self.sc = self.cfg["sweep"]
        ds = self.cfg["datasets"]["images"]
        self.image = (ds.get("build") or {}).get("image_bytes")
        self.nfiles = (ds.get("gen") or {}).get("files")
        self.out = []

    def w(self, s=""):
        self.out.append(s)

    def x_image(self, v):
        """Bytes as a multiple of the image, median [range] over reps."""
        if not v:
            return "–"
        if not self.image:
            return mrange([b / 1e6 for b in v], 0) + " MB"
        return mrange([b / self.image for b in v]) + "×"

    def header(self):
        r, mi = self.r, self.r["machine"]
        quick = "--quick" in (r.get("command") or "")
        self.w("# squashcache sweep benchmark%s: %s, commit %s, machine %s" % (
            " (quick smoke run)" if quick else "", r["started"],
            mi.get("squashcache_commit") or "?", mi["host"]))
        self.w()
        self.w("Command: `%s` (from `make bench-sweep` or directly), run %s "
               "to %s: %.0f s measuring." % (
                   r.get("command") or "bench/run.sh sweep", r["started"],
                   r["finished"], r["bench_seconds"]))
        self.w()
        pk = mi["packages"]
        rows = [
            ["CPU", "%s, %d logical CPUs (%s)" % (mi.get("cpu"), mi["cpus"],
                                                  mi.get("virt"))],
            ["RAM", "%.1f GiB; /dev/shm %.1f GiB" % (
                mi["mem_bytes"] / 2**30, mi["dev_shm_bytes"] / 2**30)],
            ["OS, kernel", "%s; %s" % (mi.get("os"), mi["kernel"])],
            ["libfuse", "fuse3 %s, libfuse3-3 %s; enable_uring=%s" % (
                pk.get("fuse3"), pk.get("libfuse3-3"),
                mi.get("fuse_enable_uring"))],
            ["squashcached", "commit %s; %s" % (
                mi["squashcache_commit"], mi.get("squashcached_binary"))],
            ["load", "1/5/15-min load average %s at the start, %s at the "
             "end" % ("/".join(mi.get("loadavg_start", [])),
                      "/".join(mi.get("loadavg_end", [])))],
        ]
        foreign = mi.get("drop_pagecache_end", 0) - \
            mi.get("drop_pagecache_start", 0) - r.get("own_drops", 0)
        rows.append(["page cache drops", "%d by the sweep, %d by others "
                     "during the run" % (r.get("own_drops", 0), foreign)])
        for when, key in (("start", "damon"), ("end", "damon_end")):
            ds = [d for d in mi.get(key) or [] if d.get("action") == "pageout"]
            if not ds:
                rows.append(["proactive reclaim (%s)" % when,
                             "no DAMON kdamond paging out"])
            for d in ds:
                rows.append([
                    "proactive reclaim (%s)" % when,
                    "DAMON kdamond %s (%s) pages out memory idle for %.0f s "
                    "or more, up to %.0f MB per %s ms (%s bytes applied "
                    "so far)" % (d["kdamond"], d["operations"],
                                 d["min_age_s"],
                                 int(d["quota_bytes_per_reset"] or 0) / 1e6,
                                 d["quota_reset_ms"], d["applied_bytes"])])
        self.w(table(["machine", ""], rows))
        self.w()
        if quick:
            self.w("**Quick run**: a set this small stages in a moment; the "
                   "numbers are a smoke test of the harness, not a "
                   "measurement.")
            self.w()
        rd = {"cread_t16": "the C reader (bench/preader), 16 threads",
              "dl_raw_w4": "DataLoader raw bytes, 4 workers"}
        self.w("Parameters: the images set, %s files, image %s; %d "
               "repetition(s), keep and no keep interleaved (the order flips "
               "each repetition); an epoch is %s over the file list, "
               "shuffled (seed %d + 100 × repetition + job); keeper budget "
               "%s bytes, a fresh keeper (`mountctl keeper`, root, a private "
               "socket) for each keep row; a job is: page cache dropped, "
               "`squashcached -o log=FILE[,keep=SOCKET] IMG MNT` on the "
               "image behind slowfs, its stats polled every 50 ms until "
               "stage.state is done and at least %.1f s after the mount "
               "command's start (a job's own start-up: Python, torch, its "
               "model), one epoch, stats, unmount.  Times are "
               "medians [min–max] over the repetitions." % (
                   self.nfiles if self.nfiles is not None else "?",
                   mb(self.image), self.sc["reps"], rd[self.sc["reader"]],
                   self.sc["seed"], self.sc["keep_budget"],
                   self.sc.get("start", 0)))
        self.w()

    def vals(self, prof, row, keep, f):
        out = []
        for r in prof["reps"]:
            x = ((r.get(row) or {}).get(keep))
            if x is not None:
                v = f(x)
                if v is not None:
                    out.append(v)
        return out

    def job_vals(self, prof, row, keep, j, key):
        return self.vals(prof, row, keep, lambda x: x["jobs"][j].get(key)
                         if j < len(x["jobs"]) else None)

    def seq_table(self, prof):
        n = self.sc["jobs"]
        self.w("%d jobs in a row, with keep and without:" % n)
        self.w()
        total = {k: self.vals(prof, "seq", k, lambda x: x["pfs_read_bytes"])
                 for k in ("keep", "nokeep")}
        dmn = {k: self.vals(prof, "seq", k, lambda x: sum(
            j.get("read_bytes") or 0 for j in x["jobs"]))
            for k in ("keep", "nokeep")}
        warm = {k: self.job_vals(prof, "seq", k, n - 1, "warm_s")
                for k in ("keep", "nokeep")}
        self.w(table(["", "keep", "no keep"], [
            ["storage read in all (slowfs), × the image (goal with keep: "
             "1.00×)"] + [self.x_image(total[k]) for k in ("keep", "nokeep")],
            ["the daemons' image_io.read_bytes in all, × the image"] +
            [self.x_image(dmn[k]) for k in ("keep", "nokeep")],
            ["warm epoch (s): job %d's second epoch" % n] +
            [mrange(warm[k]) for k in ("keep", "nokeep")]]))
        self.w()
        rows = []
        hits = 0
        for j in range(n):
            row = [str(j + 1)]
            for k in ("keep", "nokeep"):
                st = self.job_vals(prof, "seq", k, j, "staged_s")
                ep = self.job_vals(prof, "seq", k, j, "epoch_s")
                rb = self.job_vals(prof, "seq", k, j, "read_bytes")
                ratio = "–"
                if ep and warm[k]:
                    q = med(ep) / med(warm[k])
                    ratio = fmt(q)
                    if k == "keep" and j > 0 and q <= 1.05:
                        hits += 1
                row += [mrange(st), mrange(ep), ratio,
                        mb(med(rb)) if rb else "–"]
            rows.append(row)
        self.w(table(["job", "keep: to staged (s)", "keep: epoch (s)",
                      "keep: epoch / warm", "keep: read",
                      "no keep: to staged (s)", "no keep: epoch (s)",
                      "no keep: epoch / warm", "no keep: read"], rows))
        self.w()
        self.w("With keep, jobs 2–%d whose first epoch (median) is within 5%% "
               "of the warm epoch: %d of %d.  \"to staged\" runs from the "
               "mount command's start to stage.state done; \"read\" is "
               "the daemon's image_io.read_bytes (median)." % (n, hits,
                                                                n - 1))
        self.w()

    def conc_table(self, prof):
        n = self.sc["conc_jobs"]
        self.w("%d jobs at once (two mounts of the image, staged and read "
               "together):" % n)
        self.w()
        rows = [["storage read in all (slowfs), × the image (goal with "
                 "keep: 1.00×)"] + [self.x_image(self.vals(
                     prof, "conc", k, lambda x: x["pfs_read_bytes"]))
                     for k in ("keep", "nokeep")]]
        for j in range(n):
            rows.append(["job %d: to staged (s)" % (j + 1)] + [mrange(
                self.job_vals(prof, "conc", k, j, "staged_s"))
                for k in ("keep", "nokeep")])
            rows.append(["job %d: epoch (s)" % (j + 1)] + [mrange(
                self.job_vals(prof, "conc", k, j, "epoch_s"))
                for k in ("keep", "nokeep")])
            rows.append(["job %d: image_io.read_bytes" % (j + 1)] + [
                mb(med(self.job_vals(prof, "conc", k, j, "read_bytes")))
                for k in ("keep", "nokeep")])
        answers = self.vals(prof, "conc", "keep", lambda x: ", ".join(
            str((j.get("keep") or {}).get("answer")) for j in x["jobs"]))
        self.w(table(["", "keep", "no keep"], rows))
        self.w()
        if answers:
            apart = [a for a in answers if a.split(", ").count("new") > 1]
            self.w("The keeper's answers to the keep mounts, per repetition: "
                   "%s.%s" % ("; ".join(answers), "" if not apart else
                              "  `new` more than once: those mounts asked "
                              "the keeper before another had put its copy, "
                              "so they staged apart."))
            self.w()

    def render(self):
        self.header()
        self.w("## Jobs on one node with and without a kept staged copy")
        self.w()
        for prof in self.r["profiles"]:
            p = prof.get("params") or {}
            self.w("### Storage profile %s (slowfs: %s ms a request, %s "
                   "ms metadata, %s/s)" % (prof["profile"],
                                           p.get("latency_ms"),
                                           p.get("meta_latency_ms"),
                                           p.get("bw")))
            self.w()
            self.w("`%s`" % prof.get("command", "?"))
            self.w()
            self.seq_table(prof)
            self.conc_table(prof)
        if self.r["errors"]:
            self.w("## Failures")
            self.w()
            for e in self.r["errors"]:
                self.w("- %s, repetition %d, %s %s: %s" % (
                    e["profile"], e["rep"], e["row"], e["keep"], e["error"]))
            self.w()
        else:
            self.w("No job failed.")
            self.w()
        return "\n".join(self.out) + "\n"


def main():
    with open(sys.argv[1]) as f:
        res = json.load(f)
    if res.get("mode") == "sweep":
        sys.stdout.write(SweepReport(res).render())
        return
    if res.get("mode") == "site":
        import sitebench
        sys.stdout.write(sitebench.render(res))
        return
    if res.get("mode") == "seal":
        import sealbench
        sys.stdout.write(sealbench.render(res))
        return
    sys.stdout.write(Report(res).render())


if __name__ == "__main__":
    main()

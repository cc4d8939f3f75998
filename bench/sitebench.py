# SPDX-License-Identifier: MIT
"""The site-image benchmark (issue 40 item 5): users' jobs in a row on one
node, all on one image behind slow storage, with a site copy, with a
copy per user and without keeping.

    sitebench.py OUT.json     measure (bench/run.sh site calls it)

Two users (made for the run, removed after: SITE_USERS) run SITE_JOBS (4)
jobs each, one after the other, the users taking turns (user 1's first
job, user 2's first, user 1's second, ...).  A job: page cache dropped,
squashcached mounts the image from slowfs as its user, the stats polled
until staging is done, and at least SITE_START (2.0 s) after the mount
command started (the job's own start-up), one epoch as the user (the C
reader, 16 threads, shuffled), the stats taken, unmount.

Contenders (SITE_CONTENDERS), interleaved (the order turns each
repetition), each with a fresh keeper (no copy kept) where it keeps:
  nokeep       squashcached without -o keep
  user         -o keep=SOCKET, mountctl keeper without --site: a copy per
               user
  site         -o keep=SOCKET, mountctl keeper --site (the store): one copy
               for all, made by the keeper; no seal (the daemons seal=off)
  site_sealed  the same image under a second name (a hard link) with its
               seal beside it: the keeper checks every chunk against it,
               each daemon reads the tree too (seal=auto) and trusts the
               keeper's check of the copy
slowfs's own count of bytes read is taken around each row: the storage
read in all, in images.  The report is render() below.
"""
import json
import os
import pwd
import subprocess
import statistics
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
from bench import log  # noqa: E402

CONTENDERS = ("nokeep", "user", "site", "site_sealed")


def cfg_from_env():
    cfg = bench.config_from_env()
    env = bench.env
    img = cfg["datasets"]["images"]["image"]
    cfg["site"] = {
        "users": env("SITE_USERS", 2),
        "jobs": env("SITE_JOBS", 4),
        "reps": env("REPS", 3),
        "contenders": env("SITE_CONTENDERS", ",".join(CONTENDERS)).split(","),
        "keep_budget": env("SITE_KEEP", str(3 * os.path.getsize(img))),
        "timeout": env("SLOW_TIMEOUT", 900),
        "seed": env("SEED", 42),
        "start": float(env("SITE_START", "2.0")),
    }
    for c in cfg["site"]["contenders"]:
        if c not in CONTENDERS:
            raise SystemExit("sitebench: unknown contender %s" % c)
    return cfg


class Users:
    """Users made for the run, each with /dev/fuse (an ACL entry), and
    removed with their processes at the end."""

    def __init__(self, n):
        self.names = []
        try:
            for i in range(n):
                name = "sqcb%du%d" % (os.getpid(), i + 1)
                bench.run(["useradd", "--system", "--no-create-home",
                           "--home-dir", "/nonexistent", "--shell",
                           "/bin/sh", name], timeout=60)
                self.names.append(name)
                bench.run(["setfacl", "-m", "u:%s:rw" % name, "/dev/fuse"],
                          timeout=60)
        except Exception:
            self.remove()
            raise
        self.ids = [(pwd.getpwnam(n).pw_uid, pwd.getpwnam(n).pw_gid)
                    for n in self.names]

    def prefix(self, i):
        uid, gid = self.ids[i]
        return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid,
                "--clear-groups", "--"]

    def remove(self):
        for name in self.names:
            bench.run(["pkill", "-9", "-u", name], check=False, timeout=30)
            bench.run(["setfacl", "-x", "u:%s" % name, "/dev/fuse"],
                      check=False, timeout=30)
            for _ in range(50):
                if bench.run(["userdel", name], check=False,
                             timeout=30).returncode == 0:
                    break
                time.sleep(0.1)
        self.names = []


class Job:
    """One user's mount of the image."""

    def __init__(self, sb, user, image, opts):
        sb.nmnt += 1
        self.sb = sb
        uid, gid = sb.users.ids[user]
        self.mnt = os.path.join(sb.cfg["scratch"], "mnt",
                                "site-%d" % sb.nmnt)
        os.makedirs(self.mnt, exist_ok=True)
        os.chown(self.mnt, uid, gid)
        logd = os.path.join(sb.cfg["scratch"], "logs", "site-u%d" % user)
        os.makedirs(logd, exist_ok=True)
        os.chown(logd, uid, gid)
        self.log = os.path.join(logd, "squashcached-%03d.log" % sb.nmnt)
        o = ["log=" + self.log] + opts
        cmd = sb.users.prefix(user) + [
            os.path.join(sb.cfg["build"], "squashcached"), "-o", ",".join(o),
            image, self.mnt]
        self.t0 = time.monotonic()
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError("mount failed (%d): %s" % (
                r.returncode, (r.stderr or r.stdout).strip()))
        self.pid = bench.find_daemon("squashcached", self.mnt)
        sb.reg.add(self.mnt, self.pid)

    def stats(self):
        return bench.sqc_stats(self.sb.cfg["build"], self.mnt) or {}

    def umount(self):
        bench.run(["fusermount3", "-u", "-z", self.mnt], check=False,
                  timeout=60)
        for _ in range(200):
            if not self.pid or not os.path.exists("/proc/%d" % self.pid):
                break
            time.sleep(0.05)


class SiteBench:
    def __init__(self, cfg):
        self.cfg = cfg
        self.sc = cfg["site"]
        self.reg = bench.Registry(cfg["scratch"])
        self.b = types.SimpleNamespace(cfg=cfg, reg=self.reg)
        self.ds = cfg["datasets"]["images"]
        with open(self.ds["list"]) as f:
            self.nfiles = sum(1 for x in f if x.strip())
        self.mountctl = os.path.join(cfg["build"], "mountctl")
        self.sock = os.path.join(cfg["scratch"], "keeper", "keeper.sock")
        self.keeper = None
        self.users = None
        self.nmnt = 0
        self.own_drops = 0

    def drop(self):
        bench.drop_caches()
        self.own_drops += 1

    # -- the keeper --

    def keeper_start(self, site):
        self.keeper_stop()
        os.makedirs(os.path.dirname(self.sock), mode=0o755, exist_ok=True)
        logf = open(os.path.join(self.cfg["scratch"], "logs",
                                 "keeper.log"), "a")
        cmd = [self.mountctl, "keeper", "--socket", self.sock, "--keep",
               self.sc["keep_budget"], "--min-available", "0"]
        if site:
            cmd += ["--site", site]
        self.keeper = subprocess.Popen(cmd, stdout=logf, stderr=logf)
        logf.close()
        with open(self.reg.pids_file, "a") as f:
            f.write("%d\n" % self.keeper.pid)
        for _ in range(500):
            r = bench.run([self.mountctl, "status", "--kept", "--socket",
                           self.sock], check=False, timeout=10)
            if r.returncode == 0:
                return
            time.sleep(0.02)
        raise RuntimeError("the keeper did not start (logs/keeper.log)")

    def keeper_stop(self):
        if self.keeper:
            self.keeper.terminate()
            try:
                self.keeper.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.keeper.kill()
                self.keeper.wait()
            self.keeper = None

    # -- a job --

    def wait_staged(self, job):
        deadline = job.t0 + self.sc["timeout"]
        while time.monotonic() < deadline:
            if (job.stats().get("stage") or {}).get("state") == "done":
                return time.monotonic() - job.t0
            time.sleep(0.05)
        raise RuntimeError("not staged within %d s" % self.sc["timeout"])

    def epoch(self, user, root, seed):
        cmd = self.users.prefix(user) + [
            os.path.join(self.cfg["build"], "bench", "preader"), "read",
            root, self.ds["list"], "16", str(seed)]
        r = bench.run(cmd, check=False, timeout=self.sc["timeout"] + 60)
        if r.returncode != 0 or not r.stdout.strip():
            raise RuntimeError("preader: rc %d %s %s" % (
                r.returncode, r.stdout.strip(), r.stderr.strip()))
        v = json.loads(r.stdout)
        if v.get("errors") or v.get("files") != self.nfiles:
            raise RuntimeError("preader: %s" % json.dumps(v))
        return v["seconds"]

    def job(self, user, image, opts, seed):
        self.drop()
        rec = {"user": user + 1}
        j = Job(self, user, image, opts)
        try:
            rec["staged_s"] = self.wait_staged(j)
            left = j.t0 + self.sc["start"] - time.monotonic()
            if left > 0:
                time.sleep(left)
            rec["epoch_s"] = self.epoch(user, j.mnt, seed)
            st = j.stats()
            rec["read_bytes"] = (st.get("image_io") or {}).get("read_bytes")
            rec["keep"] = st.get("keep")
            rec["verify"] = {k: (st.get("verify") or {}).get(k) for k in
                             ("seal", "bytes_hashed", "blocks_bad")}
        except Exception as e:
            # The daemon's last words, for the report.
            try:
                with open(j.log) as f:
                    tail = f.read().splitlines()[-10:]
            except OSError:
                tail = ["(no log)"]
            alive = bool(j.pid) and os.path.exists("/proc/%d" % j.pid)
            raise RuntimeError("%s; daemon %s; its log ends: %s" % (
                e, "alive" if alive else "gone", " | ".join(tail))) from e
        finally:
            j.umount()
        return rec

    # -- a row --

    def row(self, pfs, image, c, rep):
        out = {"jobs": []}
        opts = []
        if c != "nokeep":
            opts.append("keep=" + self.sock)
            self.keeper_start(pfs if c.startswith("site") else None)
        if c == "site_sealed":
            image = self.sealed_of(image)
        else:
            opts.append("seal=off")
        s0 = bench.Bench._pfs_stats(self.b, pfs)
        try:
            for j in range(self.sc["jobs"]):
                for u in range(self.sc["users"]):
                    rec = self.job(u, image, opts,
                                   self.sc["seed"] + 100 * rep + 10 * j + u)
                    rec["job"] = j + 1
                    log("  user %d job %d: staged %.2f s, epoch %.2f s, "
                        "%.0f MB read by it, keep %s" % (
                            u + 1, j + 1, rec["staged_s"], rec["epoch_s"],
                            (rec["read_bytes"] or 0) / 1e6,
                            (rec["keep"] or {}).get("answer", "-")))
                    out["jobs"].append(rec)
        finally:
            out["pfs_read_bytes"] = bench.Bench._pfs_stats(
                self.b, pfs).get("read_bytes", 0) - s0.get("read_bytes", 0)
            self.keeper_stop()
        log("  %s: %.0f MB from storage (%.2fx the image)" % (
            c, out["pfs_read_bytes"] / 1e6,
            out["pfs_read_bytes"] / os.path.getsize(self.ds["image"])))
        return out

    @staticmethod
    def sealed_of(image):
        """The sealed name of the image: a hard link, its seal beside it
        (a seal beside the other name would be found by the keeper)."""
        return image[:-len(".sqfs")] + "-sealed.sqfs"

    def run(self):
        res = {"mode": "site", "profiles": [], "errors": []}
        image = self.ds["image"]
        if not image.endswith(".sqfs"):
            raise RuntimeError("sitebench: the image is not a .sqfs")
        sealed = self.sealed_of(image)
        if not os.path.exists(sealed):
            os.link(image, sealed)
        if os.path.exists(image + ".sqcseal"):
            os.unlink(image + ".sqcseal")
        r = bench.run([self.mountctl, "seal", sealed], timeout=3600)
        res["seal_root"] = r.stdout.split()[0]
        res["image_bytes"] = os.path.getsize(image)
        self.users = Users(self.sc["users"])
        try:
            for prof in self.cfg["slow"]["profiles"]:
                out = {"profile": prof["name"], "reps": []}
                res["profiles"].append(out)
                pfs = bench.Bench._start_slowfs(self.b, prof, out,
                                                allow_other=True)
                img = os.path.join(pfs, os.path.basename(image))
                try:
                    for rep in range(self.sc["reps"]):
                        r = {"rep": rep}
                        out["reps"].append(r)
                        order = list(self.sc["contenders"])
                        if rep % 2:
                            order.reverse()
                        for c in order:
                            log("%s rep %d: %s" % (prof["name"], rep, c))
                            try:
                                r[c] = self.row(pfs, img, c, rep)
                            except Exception as e:  # noqa: BLE001
                                err = "%s: %s" % (type(e).__name__, e)
                                log("  failed: " + err)
                                res["errors"].append({
                                    "profile": prof["name"], "rep": rep,
                                    "contender": c, "error": err})
                finally:
                    bench.Bench._stop_slowfs(self.b, pfs)
        finally:
            self.keeper_stop()
            self.users.remove()
        return res


# -- the report -----------------------------------------------------------

def _med(v):
    return statistics.median(v) if v else None


def _cell(v, fmt="%.2f s"):
    if not v:
        return "–"
    return (fmt + " [" + fmt + "–" + fmt + "]") % (_med(v), min(v), max(v))


def _rows(prof, c):
    return [r[c] for r in prof["reps"] if c in r]


def render(res):
    cfg, mi = res["config"], res["machine"]
    sc = cfg["site"]
    out = []
    w = out.append
    quick = "--quick" in (res.get("command") or "")
    size = res["image_bytes"]
    w("# squashcache site-image benchmark%s: %s, commit %s, machine %s" % (
        " (quick smoke run)" if quick else "", res["started"],
        mi.get("squashcache_commit") or "?", mi["host"]))
    w("")
    w("Command: `%s` (from `make bench-site` or directly), run %s to %s: "
      "%.0f s measuring." % (res.get("command") or "sh bench/run.sh site",
                             res["started"], res["finished"],
                             res["bench_seconds"]))
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
    w("%d users × %d jobs in a row on one node (the users taking turns), "
      "one image of %.1f MB behind bench/slowfs; each job mounts as its "
      "user, waits until staged and at least %.1f s, then one epoch (the C "
      "reader, 16 threads).  nokeep: no -o keep; user: a keeper, a copy "
      "per user; site: a keeper with --site, one copy made by the keeper; "
      "site_sealed: the same, checked against the image's seal.  %d "
      "repetition(s), interleaved; medians [min–max]." % (
          sc["users"], sc["jobs"], size / 1e6, sc["start"], sc["reps"]))
    w("")
    w("| storage | contender | storage read (× image) | job 1: to staged | "
      "job 1: epoch | jobs 2–%d: to staged | jobs 2–%d: epoch |" % (
          sc["users"] * sc["jobs"], sc["users"] * sc["jobs"]))
    w("|---|---|---|---|---|---|---|")
    for prof in res["profiles"]:
        for c in sc["contenders"]:
            rows = _rows(prof, c)
            if not rows:
                continue
            ratio = [r["pfs_read_bytes"] / size for r in rows]
            first = [r["jobs"][0] for r in rows if r["jobs"]]
            rest = [j for r in rows for j in r["jobs"][1:]]
            w("| %s | %s | %s | %s | %s | %s | %s |" % (
                prof["profile"], c, _cell(ratio, "%.2f×"),
                _cell([j["staged_s"] for j in first]),
                _cell([j["epoch_s"] for j in first]),
                _cell([j["staged_s"] for j in rest]),
                _cell([j["epoch_s"] for j in rest])))
    w("")
    w("Each job (medians over the repetitions): time to staged / first "
      "epoch, seconds.")
    w("")
    n = sc["users"] * sc["jobs"]
    w("| storage | contender | " + " | ".join(
        "u%d j%d" % (i % sc["users"] + 1, i // sc["users"] + 1)
        for i in range(n)) + " |")
    w("|---|---|" + "---|" * n)
    for prof in res["profiles"]:
        for c in sc["contenders"]:
            rows = _rows(prof, c)
            if not rows:
                continue
            cells = []
            for i in range(n):
                js = [r["jobs"][i] for r in rows if len(r["jobs"]) > i]
                cells.append("%.1f / %.1f" % (
                    _med([j["staged_s"] for j in js]),
                    _med([j["epoch_s"] for j in js])) if js else "–")
            w("| %s | %s | %s |" % (prof["profile"], c, " | ".join(cells)))
    w("")
    errs = ["%s rep %d %s: %s" % (e["profile"], e["rep"], e["contender"],
                                  e["error"]) for e in res.get("errors", [])]
    for prof in res["profiles"]:
        for r in prof["reps"]:
            for c in sc["contenders"]:
                for j in (r.get(c) or {}).get("jobs", []):
                    a = (j.get("keep") or {}).get("answer")
                    want = {"nokeep": None, "user": None, "site": "site",
                            "site_sealed": "site"}[c]
                    if want and j["job"] > 0 and a != want:
                        errs.append("%s rep %d %s user %d job %d: keep "
                                    "answer %s" % (prof["profile"], r["rep"],
                                                   c, j["user"], j["job"],
                                                   a))
    if errs:
        w("Failures and surprises:")
        w("")
        for e in errs:
            w("- " + e)
        w("")
    return "\n".join(out) + "\n"


def main():
    bench.side_main(cfg_from_env, SiteBench)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A rank of a tiny DistributedDataParallel job, and the check of its runs.

    ddp_check.py run --root DIR --out DIR --init URL [--rank R --world N
        --local L] [--hint] [--workers 2] [--batch 4] [--epochs 2]
        [--seed 7]
    ddp_check.py compare --hinted DIR --plain DIR --world N [--nodes K]
    ddp_check.py gen DEST [--classes 4] [--per-class 24] [--seed 38]

run: one rank (rank, world size and local rank default to Slurm's
SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID).  torch.distributed over
gloo on the CPU; torchvision's ImageFolder over --root (Resize 8,
ToTensor); each rank a DistributedSampler (shuffled, --seed) wrapped, with
--hint, in squashcache.torch.EpochOrder (strict: an order that is not
taken fails the rank); a DataLoader with --workers persistent workers; a
linear model, SGD, one step per batch, for --epochs epochs with
set_epoch().  Each rank writes OUT/rank-R.json: per epoch the sample
indices, labels and a hash of each batch's tensor, each step's loss
(float.hex, exact), mountctl's summary of its order; the final weights'
hash; its pid and node.  With --hint, once every rank has finished an
epoch (a barrier), local rank 0 of each node writes the daemon's stats
(mountctl status --json) of its node's mount into its record, before any
rank sends the next epoch's order.

compare: the records of a run over the mount with --hint against those
of the same run over the source tree: every rank's batches, labels,
tensors and losses equal, the weights equal; each node's stats show one
order per rank of that node (by_client, named by the rank's pid), with
its files and one order per epoch so far, and every byte of it taken by
its readers (taken == planned: read ahead, or by the reader itself, from
the window); and in each epoch the window served at least the bytes all
the node's ranks' orders were to read ahead (order.served + skipped),
which holds only if every rank's order was read ahead.  Prints what it
checked; exit status 1 on a difference.

gen: a tiny ImageFolder tree of random RGB JPEGs (24 x 24), a pure
function of its arguments.
"""
import argparse
import datetime
import hashlib
import json
import os
import socket
import subprocess
import sys
import warnings

sys.dont_write_bytecode = True
warnings.filterwarnings("ignore", message="This DataLoader will create")


def env_int(name, default=None):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else default


def gen(a):
    import random

    from PIL import Image

    rng = random.Random(a.seed)
    print("ddp_check gen: seed %d, %d classes x %d images" %
          (a.seed, a.classes, a.per_class))
    for c in range(a.classes):
        d = os.path.join(a.dest, "class%02d" % c)
        os.makedirs(d, exist_ok=True)
        for i in range(a.per_class):
            px = bytes(rng.getrandbits(8) for _ in range(24 * 24 * 3))
            Image.frombytes("RGB", (24, 24), px).save(
                os.path.join(d, "img%03d.jpg" % i), quality=90)


def mount_stats(root):
    """The daemon's stats of the mount holding @root."""
    mountctl = os.environ.get("SQUASHCACHE_MOUNTCTL", "mountctl")
    r = subprocess.run([mountctl, "status", "--json", root],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=False)
    if r.returncode:
        raise SystemExit("ddp_check: mountctl status %s: %s" %
                         (root, r.stderr.decode(errors="replace")))
    d = json.loads(r.stdout)
    return d[0] if isinstance(d, list) else d


def run(a):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, Dataset
    from torch.utils.data.distributed import DistributedSampler
    from torchvision import datasets, transforms

    rank = a.rank if a.rank is not None else env_int("SLURM_PROCID")
    world = a.world if a.world is not None else env_int("SLURM_NTASKS")
    local = a.local if a.local is not None else env_int("SLURM_LOCALID", 0)
    if rank is None or world is None:
        raise SystemExit("ddp_check: no --rank/--world, nor SLURM_PROCID/"
                         "SLURM_NTASKS")
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    # A rank that fails must not leave the others waiting for good.
    dist.init_process_group("gloo", init_method=a.init, rank=rank,
                            world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    torch.manual_seed(0)
    torch.set_num_threads(1)

    class Indexed(Dataset):
        """ImageFolder's sample with its index; .samples for EpochOrder."""

        def __init__(self, ds):
            self.ds = ds
            self.samples = ds.samples

        def __len__(self):
            return len(self.ds)

        def __getitem__(self, i):
            x, y = self.ds[i]
            return i, y, x

    tf = transforms.Compose([transforms.Resize((8, 8)),
                             transforms.ToTensor()])
    ds = Indexed(datasets.ImageFolder(a.root, transform=tf))
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank,
                                 shuffle=True, seed=a.seed)
    if a.hint:
        from squashcache.torch import EpochOrder
        sampler = EpochOrder(sampler, ds, strict=True)
    loader = DataLoader(ds, batch_size=a.batch, sampler=sampler,
                        num_workers=a.workers,
                        persistent_workers=a.workers > 0, timeout=120)
    model = torch.nn.Sequential(torch.nn.Flatten(),
                                torch.nn.Linear(3 * 8 * 8,
                                                len(ds.ds.classes)))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
    rec = {"rank": rank, "world": world, "local": local, "node": node,
           "pid": os.getpid(), "root": a.root, "hint": a.hint,
           "epochs": []}
    for epoch in range(a.epochs):
        loader.sampler.set_epoch(epoch)
        ep = {"indices": [], "labels": [], "batches": [], "losses": []}
        for idx, y, x in loader:
            opt.zero_grad()
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()
            opt.step()
            ep["indices"] += idx.tolist()
            ep["labels"] += y.tolist()
            ep["batches"].append(hashlib.sha256(
                x.numpy().tobytes()).hexdigest()[:16])
            ep["losses"].append(loss.item().hex())
        if a.hint:
            ep["order"] = sampler.last
        # Every rank is done with the epoch's reads; no next order yet.
        dist.barrier()
        if a.hint and local == 0:
            ep["stats"] = mount_stats(a.root)["order"]
        dist.barrier()
        rec["epochs"].append(ep)
    rec["weights"] = hashlib.sha256(b"".join(
        p.detach().numpy().tobytes() for p in model.parameters())
    ).hexdigest()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "rank-%d.json" % rank), "w") as f:
        json.dump(rec, f)
    dist.destroy_process_group()


def size_bytes(num, unit):
    """mountctl's size ("40.1", "KiB") in bytes, rounded down by its
    last digit: a lower bound."""
    mult = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[
        unit.rstrip(",")]
    return int(float(num) * mult) - (0 if mult == 1 else mult // 20)


def load(d, world):
    recs = []
    for r in range(world):
        p = os.path.join(d, "rank-%d.json" % r)
        if not os.path.exists(p):
            raise SystemExit("ddp_check: no record of rank %d in %s" % (r, d))
        with open(p) as f:
            recs.append(json.load(f))
    return recs


def compare(a):
    hinted, plain = load(a.hinted, a.world), load(a.plain, a.world)
    bad = []
    for h, p in zip(hinted, plain):
        r = h["rank"]
        if len(h["epochs"]) != len(p["epochs"]):
            bad.append("rank %d: %d epochs against %d" %
                       (r, len(h["epochs"]), len(p["epochs"])))
            continue
        for e, (he, pe) in enumerate(zip(h["epochs"], p["epochs"])):
            for k in ("indices", "labels", "batches", "losses"):
                if he[k] != pe[k]:
                    bad.append("rank %d epoch %d: %s differ from the source "
                               "run's" % (r, e, k))
        if h["weights"] != p["weights"]:
            bad.append("rank %d: weights differ from the source run's" % r)
    if len({h["weights"] for h in hinted}) != 1:
        bad.append("the ranks' weights differ (DDP did not average)")
    nodes = sorted({h["node"] for h in hinted})
    if a.nodes and len(nodes) != a.nodes:
        bad.append("ranks ran on %d nodes (%s), not %d" %
                   (len(nodes), " ".join(nodes), a.nodes))
    # Each node's stats: its ranks' orders, each served.
    for node in nodes:
        ranks = [h for h in hinted if h["node"] == node]
        leader = [h for h in ranks if h["local"] == 0]
        if len(leader) != 1:
            bad.append("node %s: %d ranks with local rank 0" %
                       (node, len(leader)))
            continue
        served_before = 0
        for e, ep in enumerate(leader[0]["epochs"]):
            st = ep.get("stats")
            if st is None:
                bad.append("node %s epoch %d: no stats" % (node, e))
                continue
            # What each rank's order was to read ahead, as mountctl said
            # ("order: N files, 40.1 KiB to read ahead ..."), and that
            # the window served at least that much in the epoch: every
            # rank's order was read ahead, not only the last one's.
            announced = 0
            for h in ranks:
                n = len(h["epochs"][e]["indices"])
                m = (h["epochs"][e].get("order") or "").split()
                if len(m) < 5 or m[1] != str(n):
                    bad.append("rank %d epoch %d: its order was not given "
                               "for its %d samples: %r" % (
                                   h["rank"], e, n,
                                   h["epochs"][e].get("order")))
                    continue
                announced += size_bytes(m[3], m[4])
            served = st["served"] + st["skipped"] - served_before
            served_before += served
            if served < announced:
                bad.append("node %s epoch %d: the window served %d bytes; "
                           "the ranks' orders were to read ahead %d" % (
                               node, e, served, announced))
            by = {c["pid"]: c for c in st.get("by_client", [])}
            for h in ranks:
                c = by.get(h["pid"])
                n = len(h["epochs"][e]["indices"])
                if c is None:
                    bad.append("node %s epoch %d: no order of rank %d "
                               "(pid %d) in the stats: %s" % (
                                   node, e, h["rank"], h["pid"],
                                   json.dumps(st)[:300]))
                elif (c["files"], c["orders"]) != (n, e + 1):
                    bad.append("node %s epoch %d: rank %d's order holds "
                               "%d files, %d orders (want %d, %d)" % (
                                   node, e, h["rank"], c["files"],
                                   c["orders"], n, e + 1))
                elif not c["planned"] or c["taken"] < c["planned"]:
                    bad.append("node %s epoch %d: rank %d's readers took "
                               "%d of the %d bytes of its order" % (
                                   node, e, h["rank"], c["taken"],
                                   c["planned"]))
            if st.get("clients") != len(ranks):
                bad.append("node %s epoch %d: %s orders held, %d ranks" % (
                    node, e, st.get("clients"), len(ranks)))
            print("node %s epoch %d: %d ranks' orders held, to read ahead "
                  "%d bytes, %d served from the window (%d read by readers "
                  "first)" % (node, e, len(by), announced, served,
                              st["by_readers"]))
    for b in bad:
        print("ddp_check: " + b)
    if bad:
        sys.exit(1)
    n = sum(len(ep["losses"]) for ep in hinted[0]["epochs"])
    print("ddp_check: ok: %d ranks on %d node(s), %d epochs, the same "
          "batches and losses (%d steps each) as over the source" %
          (len(hinted), len(nodes), len(hinted[0]["epochs"]), n))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--root", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--init", required=True)
    r.add_argument("--rank", type=int)
    r.add_argument("--world", type=int)
    r.add_argument("--local", type=int)
    r.add_argument("--hint", action="store_true")
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--batch", type=int, default=4)
    r.add_argument("--epochs", type=int, default=2)
    r.add_argument("--seed", type=int, default=7)
    c = sub.add_parser("compare")
    c.add_argument("--hinted", required=True)
    c.add_argument("--plain", required=True)
    c.add_argument("--world", type=int, required=True)
    c.add_argument("--nodes", type=int, default=0)
    g = sub.add_parser("gen")
    g.add_argument("dest")
    g.add_argument("--classes", type=int, default=4)
    g.add_argument("--per-class", type=int, default=24)
    g.add_argument("--seed", type=int, default=38)
    a = ap.parse_args()
    {"run": run, "compare": compare, "gen": gen}[a.cmd](a)


if __name__ == "__main__":
    main()

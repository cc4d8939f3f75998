# SPDX-License-Identifier: MIT
"""Data-parallel training of an ImageFolder data set, one rank per task.

    srun python ddp-train.py --data "$SQUASHCACHE_MOUNT"   (ddp-job.sh)

Each rank reads its own shard (DistributedSampler) of the node's mount
and, at the start of each epoch, tells the mount that shard's files in
the order it will read them (squashcache.torch.EpochOrder): the daemon
reads every rank's order ahead at once, from the storage the image is
on, and drops a rank's order when the rank ends.  Without squashcache
(or on another file system) the same script runs unchanged, without the
order.
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, models, transforms

try:
    from squashcache.torch import EpochOrder
except ImportError:  # not installed: train without the order
    EpochOrder = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=90)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--workers", type=int, default=4)
    a = ap.parse_args()

    # The rank and its place, from Slurm (srun); the first node hosts the
    # rendezvous (MASTER_ADDR, MASTER_PORT from ddp-job.sh).
    rank = int(os.environ["SLURM_PROCID"])
    world = int(os.environ["SLURM_NTASKS"])
    local = int(os.environ["SLURM_LOCALID"])
    gpu = torch.cuda.is_available()
    dist.init_process_group("nccl" if gpu else "gloo", rank=rank,
                            world_size=world)
    device = torch.device("cuda", local) if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(device)

    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    ds = datasets.ImageFolder(a.data, transform=tf)
    # This rank's shard, reshuffled each epoch by set_epoch() below.
    sampler = DistributedSampler(ds)
    if EpochOrder is not None:
        # The same indices; at each epoch's start their files go to the
        # mount as this rank's order (ds.samples gives the paths).
        sampler = EpochOrder(sampler, ds)
    # Persistent workers: the order is given by this process, which draws
    # the indices, whatever the workers' lifetime.
    loader = DataLoader(ds, batch_size=a.batch, sampler=sampler,
                        num_workers=a.workers, persistent_workers=True,
                        pin_memory=gpu)

    model = DDP(models.resnet50().to(device),
                device_ids=[local] if gpu else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * world / 8,
                          momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    for epoch in range(a.epochs):
        loader.sampler.set_epoch(epoch)  # EpochOrder passes it on
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device,
                                                         non_blocking=True)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        if rank == 0:
            print("epoch %d: loss %.4f" % (epoch, loss.item()), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

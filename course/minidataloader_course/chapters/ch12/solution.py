"""Chapter 12 (distributed sampling): model solutions."""

import torch
import torch.distributed as dist
import torch.multiprocessing
from torch.utils.data import (
    DataLoader,
    DistributedSampler,
    IterableDataset,
    Sampler,
    get_worker_info,
)

from minidataloader_course.shared.ranks import free_port


def shard_sizes(dataset_size, num_replicas, drop_last=False):
    if drop_last:
        num_samples = dataset_size // num_replicas  # the tail that does not divide is cut
    else:
        num_samples = -(-dataset_size // num_replicas)  # ceil: the shortfall is padded
    return num_samples, num_samples * num_replicas


def rank_indices(order, num_replicas, rank, drop_last=False):
    num_samples, total_size = shard_sizes(len(order), num_replicas, drop_last)
    indices = list(order)  # a copy: the caller's list stays as it was
    while len(indices) < total_size:  # pad by cycling through the order from its start
        indices += indices[:total_size - len(indices)]
    indices = indices[:total_size]  # with drop_last: cut the tail
    return indices[rank::num_replicas]  # deal the positions out like cards


class ShardedEpochSampler(Sampler):
    def __init__(self, dataset, num_replicas, rank, seed=0, drop_last=False):
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.seed = seed
        self.drop_last = drop_last
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        # every rank draws the same order (same seed, same epoch), then keeps its own share
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.dataset), generator=generator).tolist()
        return iter(rank_indices(order, self.num_replicas, self.rank, self.drop_last))

    def __len__(self):
        return shard_sizes(len(self.dataset), self.num_replicas, self.drop_last)[0]


def unpadded_accuracy(correct_by_rank, dataset_size):
    num_replicas = len(correct_by_rank)
    correct = 0
    for rank, flags in enumerate(correct_by_rank):
        for position, flag in enumerate(flags):
            # this rank's j-th sample sat at position rank + j * num_replicas of the padded
            # list; positions from dataset_size on are repeats added as padding
            if rank + position * num_replicas < dataset_size:
                correct += flag
    return correct / dataset_size


def stream_shard(dataset_size, rank, world_size, worker_id, num_workers):
    reader = rank * num_workers + worker_id  # this worker's number among all the readers
    readers = world_size * num_workers
    return list(range(reader, dataset_size, readers))


class EvenStream(IterableDataset):
    def __init__(self, items, rank, world_size, drop_last=False):
        self.items = items
        self.rank = rank  # read in the rank's own process: a worker may have no process group
        self.world_size = world_size
        self.drop_last = drop_last

    def __iter__(self):
        # first even out the ranks, as DistributedSampler does: every share as long
        share = rank_indices(self.items, self.world_size, self.rank, self.drop_last)
        info = get_worker_info()
        if info is None:  # no workers: the rank's own process reads its whole share
            return iter(share)
        # then the rank's workers split its share; worker w of every rank reads as many
        return iter(share[info.id::info.num_workers])

    def __len__(self):
        return shard_sizes(len(self.items), self.world_size, self.drop_last)[0]


def run_in_a_group(job, world_size=2):
    port = free_port()
    results = torch.multiprocessing.get_context("fork").SimpleQueue()

    def rank_main(rank):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world_size)
        try:
            everyone = [None] * world_size
            dist.all_gather_object(everyone, job())  # everyone[r]: rank r's result
            results.put((rank, everyone))
        finally:
            dist.destroy_process_group()  # leave the group before the process ends

    # start_processes calls rank_main(i) in process i; when one fails, it stops the others
    # and raises here (a rank left alone would wait for the failed one forever)
    torch.multiprocessing.start_processes(rank_main, nprocs=world_size, start_method="fork")
    gathered = dict(results.get() for _ in range(world_size))
    return [gathered[rank] for rank in range(world_size)]


def rank_epochs(dataset_size, rank, world_size, epochs):
    dataset = list(range(dataset_size))  # sample i is i
    # the same seed on every rank (the default, 0), and padding: every sample read
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    loader = DataLoader(dataset, batch_size=2, sampler=sampler)  # the sampler, used
    seen = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)  # a new order every epoch, the same on every rank
        seen.append([batch.tolist() for batch in loader])
    return seen

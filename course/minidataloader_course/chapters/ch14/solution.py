"""Chapter 14 (checkpoint and resume mid-epoch): model solutions."""

import torch
from torch.utils.data import Sampler


def remaining_batches(generator_state, n, batch_size, drop_last, consumed):
    generator = torch.Generator()
    generator.set_state(generator_state)
    # iter(loader) draws the base seed first, from the same generator (chapter 5)
    torch.empty((), dtype=torch.int64).random_(generator=generator)
    # then the first next() draws the RandomSampler's permutation
    order = torch.randperm(n, generator=generator).tolist()
    batches = [order[start:start + batch_size] for start in range(0, n, batch_size)]
    if drop_last and batches and len(batches[-1]) < batch_size:
        batches.pop()
    return batches[consumed:]  # indices only: nothing is read


class WarmupShuffleSampler(Sampler):
    """The first epoch in order (a warm-up), then a new permutation every epoch."""

    def __init__(self, data_source, seed=0):
        self.data_source = data_source
        self.generator = torch.Generator().manual_seed(seed)
        self.epoch = 0  # epochs begun

    def __iter__(self):
        n = len(self.data_source)
        if self.epoch == 0:
            order = list(range(n))
        else:
            order = torch.randperm(n, generator=self.generator).tolist()
        self.epoch += 1
        return iter(order)

    def __len__(self):
        return len(self.data_source)

    def state_dict(self):
        # what the next iteration depends on, as plain data (get_state() is a copy)
        return {"epoch": self.epoch, "generator": self.generator.get_state()}

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.generator.set_state(state_dict["generator"])


def batches_in_flight(yielded, num_batches, num_workers, prefetch_factor):
    # iter() sends prefetch_factor * num_workers batches; each batch yielded sends one more
    pulled = min(num_batches, prefetch_factor * num_workers + yielded)
    in_flight = [(batch, batch % num_workers) for batch in range(yielded, pulled)]
    return {"pulled": pulled, "in_flight": in_flight, "next_worker": pulled % num_workers}


def worker_states(received, yielded, num_workers):
    states = [None] * num_workers
    for batch, worker, report in received:  # one worker's results arrive in order
        if batch < yielded:  # consumed; a batch waiting in the reorder buffer is not
            states[worker] = {**(states[worker] or {}), **report}
    return states

"""Your loader, resumable in the middle of an epoch (chapter 14): ``StatefulDataLoader``
takes your ``DataLoader``'s arguments and adds ``state_dict()`` and ``load_state_dict()``.

    loader = StatefulDataLoader(dataset, batch_size=8, shuffle=True, num_workers=2)
    ...                                    # k batches, then a checkpoint
    saved = loader.state_dict()            # plain data: torch.save writes it
    resumed = StatefulDataLoader(dataset, batch_size=8, shuffle=True, num_workers=2)
    resumed.load_state_dict(saved)         # the next iter() yields the rest of that epoch

It is built around your loader, through what your loader already takes: the batch sampler
(the index stream), ``collate_fn`` and ``worker_init_fn`` (what runs in the workers). The
two helpers below carry a process's random states as plain data; the pieces are yours.
"""

import random

import numpy as np
import torch

from .dataloader import DataLoader


def random_states():
    """This process's global random states (torch's, Python's ``random``, numpy's) as plain
    data, which ``torch.save`` writes and ``torch.load`` reads back."""
    name, keys, position, has_gauss, cached = np.random.get_state()
    return {"torch": torch.get_rng_state(), "random": random.getstate(),
            "numpy": (name, keys.tolist(), position, has_gauss, cached)}


def set_random_states(states):
    """Put back what ``random_states()`` returned."""
    torch.set_rng_state(states["torch"])
    version, internal, gauss = states["random"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, position, has_gauss, cached = states["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), position, has_gauss, cached))


# >>> piece: ResumedBatches (chapter 14)
class ResumedBatches:
    def __init__(self, batch_sampler, skip=0, empty=0, then=None):
        raise NotImplementedError  # keep them

    def __iter__(self):
        raise NotImplementedError  # empty batches, then batch_sampler's from batch `skip` on

    def __len__(self):
        raise NotImplementedError  # how many batches an iteration yields
# <<< piece: ResumedBatches


# >>> piece: InTheWorkers (chapter 14)
class InTheWorkers:
    def __init__(self, collate_fn, worker_init_fn, states):
        raise NotImplementedError  # keep them

    def init(self, worker_id):
        raise NotImplementedError  # a worker_init_fn: restore a resumed worker's states

    def collate(self, samples):
        raise NotImplementedError  # a collate_fn: (the batch, the states after making it)
# <<< piece: InTheWorkers


# >>> piece: track_position (chapter 14)
def track_position(batches, position, num_workers):
    raise NotImplementedError  # yield the batches, keeping position up to date
# <<< piece: track_position


# >>> piece: ResumableEpochs (chapter 14)
class ResumableEpochs(DataLoader):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError  # a DataLoader, with no epoch in progress yet

    def __iter__(self):
        raise NotImplementedError  # an epoch, from `resume` if set, keeping `position`
# <<< piece: ResumableEpochs


# >>> piece: StatefulDataLoader (chapter 14)
class StatefulDataLoader(ResumableEpochs):
    def state_dict(self):
        raise NotImplementedError  # where the loader is, as plain data

    def load_state_dict(self, state_dict):
        raise NotImplementedError  # refuse a state that does not fit; else resume from it
# <<< piece: StatefulDataLoader

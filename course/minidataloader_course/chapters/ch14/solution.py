"""Chapter 14 (checkpoint and resume mid-epoch): model solutions.

``ResumedBatches``, ``InTheWorkers``, ``track_position``, ``ResumableEpochs`` and
``StatefulDataLoader`` are pieces of the learner's loader (``myloader/resumable.py``): the
learner's ``DataLoader`` made resumable through what it already takes, its batch sampler,
``collate_fn`` and ``worker_init_fn``. The helpers ``random_states`` and
``set_random_states`` come with the learner's ``resumable.py``.
"""

import torch
from torch.utils.data import Sampler

from minidataloader_course.chapters.ch08.solution import DataLoader
from minidataloader_course.learner.stubs.resumable import random_states, set_random_states


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


class ResumedBatches:
    def __init__(self, batch_sampler, skip=0, empty=0, then=None):
        self.batch_sampler, self.skip, self.empty, self.then = batch_sampler, skip, empty, then

    def __iter__(self):
        batches = iter(self.batch_sampler)
        for _ in range(self.skip):  # indices only: no sample is read
            next(batches, None)
        if self.then is not None:
            self.then()  # the skipped batches' random draws are done
        for _ in range(self.empty):
            yield []
        yield from batches

    def __len__(self):
        return self.empty + max(len(self.batch_sampler) - self.skip, 0)


class InTheWorkers:
    def __init__(self, collate_fn, worker_init_fn, states):
        self.collate_fn, self.worker_init_fn, self.states = collate_fn, worker_init_fn, states

    def init(self, worker_id):
        if self.worker_init_fn is not None:
            self.worker_init_fn(worker_id)
        if self.states[worker_id] is not None:  # as of its last batch the loop consumed
            set_random_states(self.states[worker_id])

    def collate(self, samples):
        if not samples:  # an empty task: it only keeps the round robin's turn
            return None, None
        return self.collate_fn(samples), random_states()


def track_position(batches, position, num_workers):
    for number, batch in enumerate(batches):
        if num_workers:
            batch, states = batch
            if states is None:
                continue  # an empty task
            position["workers"][number % num_workers] = states  # round robin
        position["yielded"] += 1  # before the loop has it: a state taken now counts it
        yield batch
    position["ended"] = True  # the loop saw the end: what follows is a new epoch


class ResumableEpochs(DataLoader):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.position = None  # the epoch in progress, as of what the loop consumed
        self.resume = None  # a position the next epoch goes on from

    def __iter__(self):
        resume, self.resume = self.resume, None
        if resume is not None and resume.get("ended"):
            resume = None  # that epoch was over: a new one starts
        generator = self.generator  # None: the epoch draws from torch's global generator
        get = torch.get_rng_state if generator is None else generator.get_state
        put = torch.set_rng_state if generator is None else generator.set_state
        script = torch.get_rng_state()  # the training script's, to give back after a replay
        if resume is not None:
            put(resume["rng"])  # the epoch's start again: the replay draws what it drew
        self.position = resume or {"yielded": 0, "workers": [None] * self.num_workers}
        self.position = dict(self.position, rng=get(), workers=list(self.position["workers"]))
        skip, workers = self.position["yielded"], self.num_workers
        # the training script's random state comes back once the replay has drawn what was
        # drawn before the checkpoint: with workers, all of it in iter(); without, by the
        # skipped batches (the next batch's draws come after the checkpoint)
        restore = (lambda: torch.set_rng_state(script)) if resume and generator is None else None
        parts = self.batch_sampler, self.collate_fn, self.worker_init_fn
        self.batch_sampler = ResumedBatches(parts[0], skip, skip % workers if workers else 0,
                                            None if workers else restore)
        if workers:
            side = InTheWorkers(parts[1], parts[2], list(self.position["workers"]))
            self.collate_fn, self.worker_init_fn = side.collate, side.init
        try:
            batches = super().__iter__()  # draws the base seed, starts the workers
        finally:
            self.batch_sampler, self.collate_fn, self.worker_init_fn = parts
        if workers and restore:
            restore()
        return track_position(batches, self.position, workers)


class StatefulDataLoader(ResumableEpochs):
    def settings(self):  # a state fits only a loader that has these
        return {"batch_size": self.batch_size, "drop_last": self.drop_last,
                "num_workers": self.num_workers, "dataset length": len(self.dataset)}

    def state_dict(self):
        position = self.position
        if position is not None:  # a snapshot: the loop goes on, the state stays
            position = dict(position, workers=list(position["workers"]))
        generator = None if self.generator is None else self.generator.get_state()
        return {"settings": self.settings(), "generator": generator, "epoch": position}

    def load_state_dict(self, state_dict):
        keys = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict)
        if keys != ["epoch", "generator", "settings"]:
            raise ValueError(f"not a state of this loader: it holds {keys}, not epoch, "
                             "generator and settings")
        for name, value in self.settings().items():
            saved = state_dict["settings"].get(name)
            if saved != value:
                raise ValueError(f"{name}: {saved!r} in the state, {value!r} here")
        if self.generator is not None:
            self.generator.set_state(state_dict["generator"])
        self.position = self.resume = state_dict["epoch"]

"""Chapter 13 (capstone): model solutions.

``AssembledLoader`` is written from the learner's own pieces: the names below come from the
reference pieces here, from ``myloader`` in the workbook (its first cell imports them).
"""

import torch
from torch.utils.data import DataLoader, TensorDataset, random_split

import minidataloader as mdl
from minidataloader_course.chapters.ch03.solution import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
)
from minidataloader_course.chapters.ch04.solution import default_collate
from minidataloader_course.chapters.ch05.solution import SingleProcessIterator
from minidataloader_course.chapters.ch10.solution import MultiProcessIterator


def build_pipeline(features, labels, seed):
    split_generator = torch.Generator().manual_seed(seed)
    train_rows, val_rows = random_split(range(len(labels)), [0.8, 0.2],
                                        generator=split_generator)
    train_rows, val_rows = list(train_rows), list(val_rows)
    training = features[train_rows]  # statistics from the training rows only
    scaled = (features - training.mean(dim=0)) / training.std(dim=0)
    train_set = TensorDataset(scaled[train_rows], labels[train_rows])
    val_set = TensorDataset(scaled[val_rows], labels[val_rows])
    train_loader = DataLoader(train_set, batch_size=16, shuffle=True,
                              drop_last=True,
                              generator=torch.Generator().manual_seed(seed))
    val_loader = DataLoader(val_set, batch_size=64)  # in order, nothing dropped
    return train_loader, val_loader


def choose_loader_settings(scenario):
    training = scenario["phase"] == "train"
    one_left_over = scenario["samples"] % scenario["batch_size"] == 1
    workers = 4 if scenario["reading"] == "from disk" else 0
    return {
        "shuffle": training,  # evaluation keeps the order of the samples
        "drop_last": training and scenario["batch_norm"] and one_left_over,
        "num_workers": workers,  # decoding pays for processes; slicing does not
        "pin_memory": scenario["device"] == "cuda",  # page-locked, for copies
        "persistent_workers": workers > 0 and scenario["epochs"] > 1,
    }


class WorkerSafeNoise:
    def __init__(self, seed):
        self.seed = seed
        self.generator = None
        self.generator_seed = None  # the seed self.generator was made from

    def __call__(self, image):
        info = mdl.get_worker_info()
        seed = self.seed if info is None else info.seed  # this process's own seed
        if self.generator is None or self.generator_seed != seed:
            self.generator = torch.Generator().manual_seed(seed)
            self.generator_seed = seed
        noise = torch.randn(image.shape, generator=self.generator)
        return image + 0.1 * noise  # a new tensor: the dataset's image is kept


class AssembledLoader:
    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False,
                 generator=None, num_workers=0, persistent_workers=False, pin_fn=None,
                 multiprocessing_context=None):
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.generator = generator
        # the parts, as a DataLoader chooses them
        self.sampler = (RandomSampler(dataset, generator=generator) if shuffle
                        else SequentialSampler(dataset))
        self.batch_sampler = BatchSampler(self.sampler, batch_size, drop_last)
        self.collate_fn = default_collate
        # everything else the iterators read, at a DataLoader's defaults
        self.num_workers = num_workers
        self.prefetch_factor = 2 if num_workers > 0 else None
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self.worker_init_fn = None
        self.timeout = 0
        self.in_order = True
        self.pin_memory = pin_fn is not None
        self._pin_memory_fn = pin_fn  # the pin thread calls it (chapter 9)
        self._iterator = None  # the one iterator of persistent workers

    def __len__(self):
        return len(self.batch_sampler)

    def __iter__(self):
        if self.num_workers == 0:  # no pin thread: pinned in this process, batch by batch
            batches = SingleProcessIterator(self)
            pin_fn = self._pin_memory_fn
            return batches if pin_fn is None else map(pin_fn, batches)
        if not self.persistent_workers:
            return MultiProcessIterator(self)
        if self._iterator is None:
            self._iterator = MultiProcessIterator(self)
        else:  # the same workers, a new epoch: no new base seed
            self._iterator._reset(self)
        return self._iterator

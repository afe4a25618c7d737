"""What a user's dataset receives: every index, key or list of them handed on by a dataset
wrapper, a sampler, a batch sampler or the fetcher reaches it as the same object torch hands
on, of the same type and value (a bool stays a bool, an IntEnum member stays one, a 0-d
tensor stays a tensor), and the calls come in the same order."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support.differential import same
from tests.support.mp_datasets import KEYS, Color, as_received

# What a sampler or a user may index with: ints and the types that behave like one (bool,
# IntEnum, numpy scalars, 0-d tensors), positive and negative. Each must reach the dataset
# as torch hands it on.
INDEXES = {
    "int": 1, "bool True": True, "bool False": False, "IntEnum": Color.GREEN,
    "numpy int64": np.int64(2), "numpy int32": np.int32(0), "numpy bool": np.bool_(True),
    "0-d tensor": torch.tensor(1), "0-d bool tensor": torch.tensor(True),
    "negative int": -1, "negative numpy": np.int64(-3), "negative tensor": torch.tensor(-2),
}


def seen(key):
    """A received key as plain data: its exact type and value (lists element by element)."""
    if isinstance(key, (list, tuple)):
        return type(key), [seen(part) for part in key]
    return type(key), key.clone() if isinstance(key, torch.Tensor) else key


def attempt(action):
    """What ``action()`` returned, or the name of the exception it raised: one failing
    access does not hide the others."""
    try:
        return action()
    except Exception as error:  # noqa: BLE001 - compared between the libraries
        return "raised", type(error).__name__


class Recorder:
    """A map-style dataset of ``n`` samples (no base class: both loaders take it) that
    notes, in ``log``, every key it is asked for, in order. Its sample for a key is the
    dataset's name and the key as received."""

    def __init__(self, n, log, name="data", batched=False):
        self.n, self.log, self.name = n, log, name
        if batched:
            self.__getitems__ = self._getitems

    def __len__(self):
        return self.n

    def __getitem__(self, key):
        self.log.append((self.name, "getitem", seen(key)))
        return self.name, seen(key)

    def _getitems(self, keys):
        self.log.append((self.name, "getitems", seen(keys)))
        return [(self.name, seen(key)) for key in keys]


class RecordedIndices(list):
    """Subset indices that note every lookup in ``log`` (to compare the order of calls)."""

    def __init__(self, values, log):
        super().__init__(values)
        self.log = log

    def __getitem__(self, position):
        self.log.append(("indices", "lookup", seen(position)))
        return super().__getitem__(position)


@pytest.mark.parametrize("name", INDEXES)
def test_concat_dataset_hands_each_member_the_index_as_torch_does(name):
    def scenario(lib):
        log = []
        concat = lib.ConcatDataset([Recorder(3, log, "first"), Recorder(3, log, "second")])
        index = INDEXES[name]
        return attempt(lambda: concat[index]), attempt(lambda: concat[index + 3]), log

    same(scenario)


@pytest.mark.parametrize("name", INDEXES)
def test_concat_dataset_of_a_single_dataset_and_of_three(name):
    def scenario(lib):
        log = []
        alone = lib.ConcatDataset([Recorder(5, log, "alone")])
        three = lib.ConcatDataset([Recorder(1, log, "a"), Recorder(0, log, "b"),
                                   Recorder(4, log, "c")])
        return attempt(lambda: alone[INDEXES[name]]), attempt(lambda: three[INDEXES[name]]), log

    same(scenario)


@pytest.mark.parametrize("name", INDEXES)
@pytest.mark.parametrize("batched", [False, True])
def test_subset_and_random_split(name, batched):
    def scenario(lib):
        log = []
        data = Recorder(8, log, batched=batched)
        subset = lib.Subset(data, RecordedIndices([5, 7, 0, 2], log))
        tensor_subset = lib.Subset(data, torch.tensor([4, 6, 1]))
        numpy_subset = lib.Subset(data, np.array([3, 2, 1], dtype=np.int16))
        splits = lib.random_split(data, [0.5, 0.5], generator=torch.Generator().manual_seed(3))
        index = INDEXES[name]
        accesses = [
            lambda: subset[index], lambda: tensor_subset[index], lambda: numpy_subset[index],
            lambda: splits[1][index], lambda: subset[[index, 0]],
            lambda: subset.__getitems__([index, 1]), lambda: tensor_subset.__getitems__([index]),
            lambda: splits[0].__getitems__([0, index]),
            lambda: lib.Subset(subset, [1, 0]).__getitems__([index]),
        ]
        return [attempt(access) for access in accesses], log

    same(scenario)


def test_subset_looks_up_and_fetches_in_turn():
    def scenario(lib):
        log = []
        subset = lib.Subset(Recorder(8, log), RecordedIndices([5, 7, 0], log))
        return subset.__getitems__([2, 0, 1]), log

    same(scenario)


@pytest.mark.parametrize("name", INDEXES)
@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("batched", [False, True])
def test_stack_dataset(name, named, batched):
    def scenario(lib):
        log = []
        parts = [Recorder(4, log, "a", batched=batched), Recorder(4, log, "b"),
                 Recorder(4, log, "c", batched=True)]
        stack = lib.StackDataset(**dict(zip("abc", parts))) if named else lib.StackDataset(*parts)
        keys = [INDEXES[name], 0]
        return attempt(lambda: stack[INDEXES[name]]), stack.__getitems__(keys), log

    same(scenario)


def test_stack_dataset_hands_on_the_callers_list_itself():
    def scenario(lib):
        received = []

        class Keeps:
            def __len__(self):
                return 3

            def __getitems__(self, keys):
                received.append(keys)
                return [0] * len(keys)

        keys = [2, 0]
        lib.StackDataset(Keeps(), Keeps()).__getitems__(keys)
        lib.StackDataset(a=Keeps()).__getitems__(keys)
        return [entry is keys for entry in received]

    same(scenario)


def test_tensor_dataset():
    def scenario(lib):
        data = lib.TensorDataset(torch.arange(6).reshape(3, 2), torch.tensor([7, 8, 9]))
        return [attempt(lambda index=index: data[index])
                for index in (True, False, Color.BLUE, np.int64(-1), np.bool_(True),
                              torch.tensor(0), torch.tensor(True), torch.tensor([2, 0]),
                              [1, 1], slice(0, 2))]

    same(scenario)


class KeySampler:
    """A sampler yielding the given keys as they are (no base class: both loaders take it)."""

    def __init__(self, keys):
        self.keys = keys

    def __iter__(self):
        return iter(self.keys)

    def __len__(self):
        return len(self.keys)


@pytest.mark.parametrize("batch_size", [None, 1, 3])
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("wrapper", ["plain", "concat", "subset", "stack", "split"])
def test_keys_from_a_sampler_reach_the_dataset_unchanged(batch_size, batched, wrapper):
    def scenario(lib):
        log = []
        data = Recorder(4, log, batched=batched)
        dataset = {
            "plain": lambda: data,
            "concat": lambda: lib.ConcatDataset([data, Recorder(2, log, "second")]),
            "subset": lambda: lib.Subset(data, [3, 2, 1, 0]),
            "stack": lambda: lib.StackDataset(data, Recorder(4, log, "other", batched=True)),
            "split": lambda: lib.random_split(data, [4])[0],
        }[wrapper]()
        loader = lib.DataLoader(dataset, batch_size=batch_size, sampler=KeySampler(KEYS),
                                collate_fn=lambda samples: samples)
        return list(loader), log

    same(scenario)


def test_batch_samplers_lists_and_tuples_reach_the_dataset_unchanged():
    def scenario(lib):
        log, handed = [], []

        class BatchKeys:
            def __iter__(self):
                for batch in ([Color.RED, True], (np.int64(2), torch.tensor(1)), [-1]):
                    handed.append(batch)
                    yield batch

            def __len__(self):
                return 3

        data = Recorder(4, log, batched=True)
        received = []
        data.__getitems__ = lambda keys: received.append(keys) or [0] * len(keys)
        loaders = [lib.DataLoader(data, batch_sampler=BatchKeys()),
                   lib.DataLoader(Recorder(4, log), batch_sampler=BatchKeys(),
                                  collate_fn=lambda samples: samples)]
        batches = [list(loader) for loader in loaders]
        return batches, log, [got is sent for got, sent in zip(received, handed)]

    same(scenario)


def test_builtin_samplers_yield_what_torch_yields():
    def scenario(lib):
        weights = [0.1, 0.5, 0.4]
        samplers = [
            lib.SequentialSampler(range(3)), lib.RandomSampler(range(3)),
            lib.RandomSampler(range(3), replacement=True, num_samples=5),
            lib.SubsetRandomSampler([Color.BLUE, np.int64(1), torch.tensor(0), True]),
            lib.SubsetRandomSampler(torch.tensor([4, 5])),
            lib.SubsetRandomSampler(np.array([7, 8])),
            lib.WeightedRandomSampler(weights, 4),
            lib.DistributedSampler(range(5), num_replicas=2, rank=1),
            lib.DistributedSampler(range(5), num_replicas=2, rank=0, shuffle=False),
            lib.BatchSampler(KeySampler(KEYS), 3, drop_last=False),
            lib.BatchSampler(KeySampler(KEYS), 3, drop_last=True),
        ]
        return [[seen(key) for key in sampler] for sampler in samplers]

    same(scenario)


def test_a_dict_is_a_map_style_dataset_keyed_by_anything():
    def scenario(lib):
        table = {"a": 1, ("b", 2): 2, Color.RED: 3, 4: 4}
        loaders = [lib.DataLoader(table, batch_size=None, sampler=KeySampler(list(table))),
                   lib.DataLoader(table, batch_size=2, sampler=KeySampler(list(table)))]
        return [list(loader) for loader in loaders]

    same(scenario)


def test_what_collate_fn_receives():
    def scenario(lib):
        received = []

        class TupleBatches:
            def __len__(self):
                return 4

            def __getitem__(self, key):
                return key

            def __getitems__(self, keys):
                return tuple(keys)  # not a list: collate_fn must get it as it is

        def collate(samples):
            received.append(seen(samples))
            return samples

        for batch_size in (None, 2):
            list(lib.DataLoader(TupleBatches(), batch_size=batch_size, collate_fn=collate))
        return received

    same(scenario)


def test_streams_hand_on_what_they_yield():
    def scenario(lib):
        class Keys(lib.IterableDataset):  # a stream of the keys themselves
            def __iter__(self):
                return iter(KEYS)

        chain = lib.ChainDataset([Keys(), Keys()])
        loaders = [lib.DataLoader(chain, batch_size=None, collate_fn=as_received),
                   lib.DataLoader(Keys(), batch_size=3, collate_fn=as_received)]
        return [seen(item) for item in chain], [[seen(batch) for batch in loader]
                                                for loader in loaders]

    same(scenario)

"""default_collate, default_convert and the collate registry against torch's."""

import warnings
from collections import OrderedDict, UserDict, UserList, defaultdict
from collections.abc import Sequence

import numpy as np
import pytest
import torch
import torch.utils.data._utils.collate as torch_collate

import minidataloader as mdl
import minidataloader.collate as our_collate
import minidataloader.worker as our_worker
from tests.support.differential import Frozen, Point, same

COLLATE_MODULE = {torch.utils.data: torch_collate, mdl: our_collate}


class Tagged(dict):
    """A dict subclass with state of its own, and a __setitem__ that update() bypasses."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tag = "kept"

    def __setitem__(self, key, value):
        super().__setitem__(key, ("set", value))


class Unbuildable(Frozen):
    """A mapping whose constructor takes something else: collate falls back to a dict."""

    def __init__(self, data, extra):
        super().__init__(data)


class Row(Sequence):
    """An immutable sequence, built from a list."""

    def __init__(self, items):
        self._items = list(items)

    def __getitem__(self, i):
        return self._items[i]

    def __len__(self):
        return len(self._items)

    def __eq__(self, other):
        return type(other) is Row and self._items == other._items


SENTINEL = object()
with warnings.catch_warnings():  # torch warns once per process that nested tensors are new
    warnings.simplefilter("ignore")
    NESTED = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])


def batch_of(make, n=3):
    return [make(i) for i in range(n)]


SAMPLES = {
    "int": lambda i: i,
    "float": lambda i: i / 7,
    "bool": lambda i: i % 2 == 0,
    "mixed numbers": lambda i: [1, 2.5, True][i % 3],
    "str": lambda i: f"s{i}",
    "bytes": lambda i: b"b" * i,
    "np.str_": lambda i: np.str_(f"s{i}"),
    "np.bytes_": lambda i: np.bytes_(b"x"),
    "tensor f32": lambda i: torch.full((2, 3), float(i)),
    "tensor i64 0-d": lambda i: torch.tensor(i),
    "tensor bool": lambda i: torch.tensor([i > 0, True]),
    "tensor f16": lambda i: torch.ones(4, dtype=torch.float16) * i,
    "np int16": lambda i: np.arange(3, dtype=np.int16) * i,
    "np float64 2-d": lambda i: np.ones((2, 2)) / (i + 1),
    "np bool": lambda i: np.array([True, i > 1]),
    "np complex": lambda i: np.array([1j * i]),
    "np uint8": lambda i: np.full(2, i, dtype=np.uint8),
    "np 0-d": lambda i: np.array(i * 1.5),
    "np scalar int8": lambda i: np.int8(i),
    "np scalar float32": lambda i: np.float32(i) / 3,
    "np scalar bool": lambda i: np.bool_(i % 2),
    "np str array": lambda i: np.array(["a", "b"]),
    "np bytes array": lambda i: np.array([b"a"]),
    "np object array": lambda i: np.array([SENTINEL, i], dtype=object),
    "memmap-like subclass": lambda i: np.arange(2).view(np.matrix),
    "dict": lambda i: {"a": i, "b": torch.tensor([i])},
    "OrderedDict": lambda i: OrderedDict([("z", i), ("a", float(i))]),
    "defaultdict": lambda i: defaultdict(list, {"k": i}),
    "UserDict": lambda i: UserDict({"k": np.int64(i)}),
    "dict subclass": lambda i: Tagged(a=i),
    "immutable mapping": lambda i: Frozen({"a": i}),
    "unbuildable mapping": lambda i: Unbuildable({"a": i}, None),
    "namedtuple": lambda i: Point(i, torch.tensor(float(i))),
    "tuple": lambda i: (i, f"s{i}", (b"x", i / 2)),
    "list": lambda i: [i, [i, i + 1], {"deep": [np.float32(i)]}],
    "UserList": lambda i: UserList([i, 2 * i]),
    "immutable sequence": lambda i: Row([i, i]),
    "range": lambda i: range(i, i + 2),
    "nested": lambda i: {"x": Point([i, (i, "s")], {"t": torch.zeros(2, 0) + i}),
                         "y": [np.arange(i, i + 2), (True, b"b")]},
    "unequal lists": lambda i: [0] * (i + 1),
    "unequal tuples": lambda i: (0,) * (2 - i % 2),
    "None": lambda i: None,
    "object": lambda i: SENTINEL,
    "set": lambda i: {i},
    "unequal tensors": lambda i: torch.zeros(i),
    "sparse tensor": lambda i: torch.eye(2).to_sparse(),
    "nested tensor": lambda i: NESTED,
    "unsupported inside dict": lambda i: {"a": SENTINEL},
}


@pytest.mark.parametrize("kind", SAMPLES)
def test_default_collate(kind):
    same(lambda lib: lib.default_collate(batch_of(SAMPLES[kind])))


@pytest.mark.parametrize("kind", SAMPLES)
def test_default_convert(kind):
    same(lambda lib: [lib.default_convert(sample) for sample in batch_of(SAMPLES[kind])])


def test_collate_edge_cases():
    same(lambda lib: lib.default_collate([]))  # IndexError
    same(lambda lib: lib.default_collate([7]))
    same(lambda lib: lib.default_collate(("a", "b")))  # a tuple batch of strings
    same(lambda lib: lib.default_collate([torch.zeros(2), np.zeros(2)]))  # first one decides
    same(lambda lib: lib.default_collate([1, "x"]))


def test_collate_without_a_map_and_with_a_custom_one():
    def scenario(lib):
        module = COLLATE_MODULE[lib]
        plain = [module.collate([[1, 2], [3, 4]]), module.collate([{"a": [1]}, {"a": [2]}])]

        def add_tensors(batch, *, collate_fn_map):
            return sum(batch)

        custom = {torch.Tensor: add_tensors, str: lambda b, *, collate_fn_map: "".join(b)}
        mixed = [{"t": torch.ones(2), "s": "x"}, {"t": torch.ones(2), "s": "y"}]
        return plain, module.collate(mixed, collate_fn_map=custom)

    same(scenario)
    same(lambda lib: COLLATE_MODULE[lib].collate([1, 2]))  # TypeError: no map, no rule


def test_registering_a_type_in_the_default_map():
    class Money:
        def __init__(self, cents):
            self.cents = cents

    def collate_money(batch, *, collate_fn_map):
        return torch.tensor([m.cents for m in batch]) / 100

    def scenario(lib):
        registry = COLLATE_MODULE[lib].default_collate_fn_map
        registry[Money] = collate_money
        try:
            batch = [{"price": Money(150), "n": 1}, {"price": Money(99), "n": 2}]
            return lib.default_collate(batch), list(lib.DataLoader(batch, batch_size=2))
        finally:
            del registry[Money]

    same(scenario)
    same(lambda lib: lib.default_collate([Money(1)]))  # unregistered again: TypeError


def test_map_keys_in_the_same_order():
    # the first isinstance() match wins, so the order is part of the behaviour
    assert list(our_collate.default_collate_fn_map) == list(torch_collate.default_collate_fn_map)


@pytest.fixture
def inside_a_worker(monkeypatch):
    """Both libraries believe they run inside worker 1 of 2."""
    monkeypatch.setattr(our_worker, "_worker_info", our_worker.WorkerInfo(1, 2, 123, None))
    import torch.utils.data._utils.worker as torch_worker

    monkeypatch.setattr(torch_worker, "_worker_info",
                        torch_worker.WorkerInfo(id=1, num_workers=2, seed=123, dataset=None))


@pytest.mark.parametrize("make", [lambda i: torch.full((2, 3), float(i)),
                                  lambda i: torch.tensor(i, dtype=torch.int8),
                                  lambda i: {"x": np.ones(2) * i}])
def test_inside_a_worker_batches_land_in_shared_memory(inside_a_worker, make):
    def scenario(lib):
        batch = lib.default_collate(batch_of(make, 4))
        tensor = batch["x"] if isinstance(batch, dict) else batch
        return batch, tensor.is_shared()

    ref = same(scenario)
    assert ref.value[1] is True
    assert mdl.get_worker_info().id == 1


def test_in_the_main_process_batches_are_ordinary_memory():
    assert mdl.get_worker_info() is None
    assert not mdl.default_collate([torch.zeros(2), torch.ones(2)]).is_shared()

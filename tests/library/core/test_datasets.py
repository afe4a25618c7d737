"""Datasets against torch.utils.data: same samples, same errors, same RNG use."""

import pytest
import torch

import minidataloader as mdl
from tests.support.differential import datasets, same, same_error


def test_base_classes():
    assert same_error(lambda lib: lib.Dataset()[0]) is NotImplementedError
    assert same_error(lambda lib: lib.IterableDataset()) is TypeError  # __iter__ is abstract
    assert same_error(lambda lib: iter(lib.Sampler())) is NotImplementedError
    same(lambda lib: [type(lib.Dataset() + lib.Dataset()).__name__,
                      type(datasets(lib)[2](3) + datasets(lib)[2](2)).__name__,
                      list(datasets(lib)[2](3) + datasets(lib)[2](2))])


def test_generic_typing():
    assert mdl.Dataset[int] is not None and mdl.DataLoader[int] is not None
    assert mdl.Sampler[int] is not None and mdl.IterableDataset[str] is not None


@pytest.mark.parametrize("sizes", [(5, 5), (0, 0), (3, 4), (4,)])
def test_tensor_dataset(sizes):
    def scenario(lib):
        tensors = [torch.arange(n * 2).reshape(n, 2) * (k + 1) for k, n in enumerate(sizes)]
        ds = lib.TensorDataset(*tensors)
        return len(ds), [ds[i] for i in range(len(ds))], ds[-1] if len(ds) else None

    same(scenario)


def test_tensor_dataset_errors():
    assert same_error(lambda lib: len(lib.TensorDataset())) is IndexError
    assert issubclass(same_error(lambda lib: lib.TensorDataset(torch.zeros(3), torch.zeros(4))),
                      AssertionError)
    with pytest.raises(ValueError, match="same first dimension"):
        mdl.TensorDataset(torch.zeros(3), torch.zeros(4))


@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("batched", [False, True])
def test_stack_dataset(named, batched):
    def scenario(lib):
        squares, batched_squares, _ = datasets(lib)
        second = batched_squares(5, "tensor") if batched else squares(5, "tensor")
        parts = (squares(5, "numpy"), second, lib.TensorDataset(torch.arange(5.0)))
        ds = lib.StackDataset(**dict(zip("abc", parts))) if named else lib.StackDataset(*parts)
        loader = lib.DataLoader(ds, batch_size=2)
        return len(ds), ds[3], ds.__getitems__([4, 0, 2]), list(loader), ds.__getitems__([])

    same(scenario)


def test_stack_dataset_errors():
    assert same_error(lambda lib: lib.StackDataset()) is ValueError
    assert same_error(lambda lib: lib.StackDataset(range(3), b=range(3))) is ValueError
    assert same_error(lambda lib: lib.StackDataset(range(3), range(4))) is ValueError
    assert same_error(lambda lib: lib.StackDataset(a=range(3), b=range(2))) is ValueError

    class Short:
        def __len__(self):
            return 3

        def __getitems__(self, indices):
            return indices[:-1]

    assert same_error(lambda lib: lib.StackDataset(range(3), Short()).__getitems__([0, 1])) \
        is ValueError


def test_concat_dataset():
    def scenario(lib):
        squares = datasets(lib)[0]
        ds = lib.ConcatDataset([squares(3), squares(0), range(10, 14), squares(2)])
        both = squares(2) + squares(3)
        return (len(ds), ds.cumulative_sizes, [ds[i] for i in range(-len(ds), len(ds))],
                type(both).__name__, [both[i] for i in range(5)],
                lib.ConcatDataset.cumsum([range(2), range(5)]))

    same(scenario)


@pytest.mark.parametrize("index", [9, 10, 100, -10, -11])
def test_concat_dataset_out_of_range(index):
    same(lambda lib: lib.ConcatDataset([range(4), range(0), range(5)])[index])


def test_concat_dataset_errors():
    assert issubclass(same_error(lambda lib: lib.ConcatDataset([])), AssertionError)
    assert issubclass(same_error(lambda lib: lib.ConcatDataset([datasets(lib)[2](3)])),
                      AssertionError)
    # a dataset built on torch's IterableDataset is refused by ours too
    with pytest.raises(TypeError, match="ChainDataset"):
        mdl.ConcatDataset([range(3), datasets(torch.utils.data)[2](3)])
    same(lambda lib: lib.ConcatDataset([range(3)]).cummulative_sizes)  # FutureWarning


def test_chain_dataset():
    def scenario(lib):
        stream = datasets(lib)[2]
        chain = lib.ChainDataset([stream(3, "float"), stream(0), stream(2, "str", 2)])
        return list(chain), list(chain), list(lib.DataLoader(chain, batch_size=2))

    same(scenario)
    same(lambda lib: len(lib.ChainDataset([datasets(lib)[2](3, reported_len=3)] * 2)))
    assert same_error(lambda lib: len(lib.ChainDataset([datasets(lib)[2](3)]))) is TypeError
    assert issubclass(same_error(lambda lib: list(lib.ChainDataset([range(3)]))), AssertionError)
    assert issubclass(same_error(lambda lib: len(lib.ChainDataset([range(3)]))), AssertionError)


def test_subset():
    def scenario(lib):
        squares, batched_squares, _ = datasets(lib)
        plain = lib.Subset(squares(10, "tensor"), [9, 0, 3, 3])
        batched = lib.Subset(batched_squares(10), [1, 2, 8])
        nested = lib.Subset(batched, [2, 0])
        tensor_subset = lib.Subset(lib.TensorDataset(torch.arange(8)), range(2, 6))
        return (len(plain), plain[1], plain.__getitems__([3, 0]), batched.__getitems__([2, 1]),
                nested.__getitems__([0, 1]), list(lib.DataLoader(batched, batch_size=2)),
                list(lib.DataLoader(nested, batch_size=None)), tensor_subset[[0, 3]],
                list(lib.DataLoader(plain, batch_size=3)))

    same(scenario)


def test_subset_subclass_overriding_getitem():
    def make(lib, with_getitems):
        class Doubled(lib.Subset):
            def __getitem__(self, idx):
                return 2 * super().__getitem__(idx)

        if with_getitems:
            Doubled.__getitems__ = lambda self, indices: [self[i] for i in indices]
        return Doubled(range(10), [4, 5, 6])

    assert same_error(lambda lib: make(lib, False)) is NotImplementedError
    same(lambda lib: list(lib.DataLoader(make(lib, True), batch_size=2)))


@pytest.mark.parametrize("lengths", [
    [3, 7], [10], [0, 10], [5, 5, 0], [0.3, 0.3, 0.4], [0.5, 0.5], [0.34, 0.33, 0.33],
    [1.0], [0.1] * 10, [0.05, 0.95], [0.7, 0.2, 0.1], [1 / 3] * 3,
])
@pytest.mark.parametrize("n", [10, 7, 1, 0])
@pytest.mark.parametrize("use_generator", [False, True])
def test_random_split(lengths, n, use_generator):
    def scenario(lib):
        generator = torch.Generator().manual_seed(5) if use_generator else None
        kwargs = {"generator": generator} if use_generator else {}
        splits = lib.random_split(range(100, 100 + n), lengths, **kwargs)
        return [type(s).__name__ for s in splits], [list(s) for s in splits], generator

    same(scenario)


@pytest.mark.parametrize("lengths", [[3, 8], [1.2, -0.2], [0.5, 0.6], [-1, 11], [0.5], [2.0, 8.0]])
def test_random_split_errors(lengths):
    same(lambda lib: [list(s) for s in lib.random_split(range(10), lengths)])


def test_random_split_needs_len():
    assert same_error(lambda lib: lib.random_split(datasets(lib)[2](3), [0.5, 0.5])) is TypeError
    # len() is asked for before a later fraction is checked
    assert same_error(lambda lib: lib.random_split(datasets(lib)[2](3), [0.5, 1.5, -1])) \
        is TypeError

"""Chapter 4 (collate): the exercises and their hidden cases."""

from __future__ import annotations

import copy
import dataclasses
from collections import OrderedDict, defaultdict, namedtuple
from collections.abc import Mapping

import numpy as np
import torch
from torch.utils.data import DataLoader, default_collate, default_convert

from minidataloader.collate import collate, default_collate_fn_map
from minidataloader_course.chapters.ch04 import solution as solutions
from minidataloader_course.checker.framework import Case, Exercise, Rule, register
from minidataloader_course.checker.questions import Choice, Prediction

# What the reader rebuilds: the package's and torch's general collate, not only the
# default_collate / default_convert that every exercise forbids already.
COLLATE_ITSELF = ("minidataloader.collate.collate", "torch.utils.data._utils.collate.collate")

Point = namedtuple("Point", ["x", "y"])


@dataclasses.dataclass(eq=False)  # compared field by field (tensors have no single ==)
class DigitSample:
    """A sample as a dataclass: default_collate does not know it (it is no dict or tuple)."""

    image: torch.Tensor
    label: int
    file: str


@dataclasses.dataclass(eq=False)  # compared field by field (tensors have no single ==)
class DigitPair:
    """Two samples in one: a dataclass whose fields are dataclasses."""

    left: DigitSample
    right: DigitSample


def _images(count: int, generator: torch.Generator) -> list[torch.Tensor]:
    return [torch.randint(0, 17, (1, 2, 2), generator=generator, dtype=torch.uint8)
            for _ in range(count)]


def _as_lists(value, zipped=False):
    """Strings of a field of a sequence or a namedtuple as a list: there torch gives back the
    tuple that zip(*batch) made, and a list of them is just as right (``zipped``). Elsewhere
    (the batch itself, a mapping's values: lists in torch) the type is compared as it is."""
    if zipped and isinstance(value, (list, tuple)) and value and all(
            isinstance(v, (str, bytes)) for v in value) and not hasattr(value, "_fields"):
        return list(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_as_lists(v, zipped=True) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_as_lists(v, zipped=True) for v in value)
    if isinstance(value, Mapping):
        try:
            clone = copy.copy(value)  # the same mapping type: an OrderedDict stays one
            for key in value:
                clone[key] = _as_lists(value[key])
            return clone
        except TypeError:  # a mapping that cannot be changed: compared as it is
            return value
    return value


def _mapping(kind, **items):
    """A sample as a mapping of the given kind (a defaultdict of lists for ``defaultdict``)."""
    mapping = defaultdict(list) if kind is defaultdict else kind()
    mapping.update(items)
    return mapping


def _collate_cases() -> list[Case]:
    g = torch.Generator().manual_seed(4)
    images = _images(3, g)
    features = [torch.randn(4, generator=g) for _ in range(3)]
    arrays = [np.arange(3, dtype=np.float64) * i for i in range(2)]
    return [
        Case({"batch": features}, description="3 tensors of shape (4,)",
             hint="tensors are stacked along a new first dimension: torch.stack(batch)"),
        Case({"batch": arrays}, description="2 numpy float64 arrays of shape (3,)",
             hint="a numpy array becomes a tensor of the same dtype (torch.as_tensor), then "
                  "the tensors are stacked"),
        Case({"batch": [0.5, 1.0, 2.5]}, description="batch = [0.5, 1.0, 2.5]",
             hint="Python floats become ONE tensor, and its dtype is float64, not torch's "
                  "default float32"),
        Case({"batch": [3, 1, 4, 1]}, description="batch = [3, 1, 4, 1]",
             hint="Python ints become one tensor: torch.tensor(batch) (dtype int64)"),
        Case({"batch": [True, False, True]}, description="batch = [True, False, True]",
             hint="bool is a subclass of int: torch.tensor(batch) gives a bool tensor"),
        Case({"batch": ["0000.png", "0001.png"]}, description="batch = ['0000.png', '0001.png']",
             hint="strings cannot go into a tensor: return the batch's strings as they are"),
        Case({"batch": list(zip(features, [1, 0, 1]))},
             description="3 samples (features tensor of shape (4,), int label)",
             hint="a tuple sample gives a LIST with one collated entry per field: "
                  "[stacked features, tensor of labels]. zip(*batch) groups the fields"),
        Case({"batch": [[1, 2], [3, 4], [5, 6]]}, description="batch = [[1, 2], [3, 4], [5, 6]]",
             hint="a list sample is transposed like a tuple: field 0 of every sample "
                  "(1, 3, 5), then field 1 (2, 4, 6)"),
        Case({"batch": [{"image": im, "label": lb, "file": f"{lb:04}.png"}
                        for im, lb in zip(images, [7, 2, 9])]},
             description="3 dicts {'image': uint8 tensor (1, 2, 2), 'label': int, "
                         "'file': str}",
             hint="a dict sample gives a dict with the same keys, each value collated from "
                  "that key of every sample"),
        Case({"batch": [Point(1.5, 2), Point(0.5, 4)]},
             description="batch = [Point(x=1.5, y=2), Point(x=0.5, y=4)] (a namedtuple)",
             hint="a namedtuple keeps its type: type(elem)(*collated_fields)"),
        Case({"batch": [{"image": im, "meta": {"size": (2, 2), "file": f"{i:04}.png"}}
                        for i, im in enumerate(images[:2])]},
             description="2 nested dicts {'image': tensor, 'meta': {'size': (2, 2), "
                         "'file': str}}",
             hint="call your function on each field again (recursion): a dict inside a dict, "
                  "a tuple inside that"),
        Case({"batch": [_mapping(OrderedDict, label=lb, weight=w)
                        for lb, w in [(1, 0.5), (0, 2.0)]]},
             description="2 OrderedDicts {'label': int, 'weight': float}",
             hint="a mapping keeps its type: an OrderedDict gives an OrderedDict (copy the first "
                  "sample with copy.copy and update it with the collated values)"),
        Case({"batch": [_mapping(defaultdict, x=features[i]) for i in range(2)]},
             description="2 defaultdict(list) samples {'x': tensor of shape (4,)}",
             hint="a defaultdict gives a defaultdict (with the same default_factory): copy the "
                  "first sample with copy.copy and update it"),
        Case({"batch": [np.float32(0.5), np.float32(1.5)]},
             description="batch = [np.float32(0.5), np.float32(1.5)] (numpy numbers)",
             hint="numpy numbers become one tensor of their own dtype: "
                  "torch.as_tensor(batch) (float32 here)"),
        Case({"batch": [(np.int64(3), "a"), (np.int64(4), "b")]},
             description="batch = [(np.int64(3), 'a'), (np.int64(4), 'b')]",
             hint="numpy integers (np.int64) become one int64 tensor: torch.as_tensor(batch)"),
        Case({"batch": [[1, 2], [3]]}, description="batch = [[1, 2], [3]]",
             hint="samples of different lengths cannot be transposed: zip would silently drop "
                  "the 2, so raise RuntimeError, as default_collate does"),
        Case({"batch": [None, None]}, description="batch = [None, None]",
             hint="a type your function does not know should raise TypeError, as "
                  "default_collate does"),
        Case({"batch": [{"word": "cat", "tag": "NOUN"}, {"word": "runs", "tag": "VERB"}]},
             description="batch = [{'word': 'cat', 'tag': 'NOUN'}, {'word': 'runs', 'tag': "
                         "'VERB'}]",
             hint="a mapping's field of strings is the LIST of that key's strings, as torch "
                  "gives it: a tuple is another type"),
    ]


register(Exercise(
    reference=solutions.default_collate,
    oracle=default_collate,
    cases=_collate_cases,
    run=lambda implementation, case: _as_lists(implementation(**case.inputs)),
    hint="look at batch[0] to decide what to do; containers call the function again on each "
         "field",
    forbidden=COLLATE_ITSELF,
    time_limit=3.0,
    piece="collate.default_collate",
    expected_from="torch: `default_collate`",
    rules=(
        Rule("tensors stacked; numpy arrays as tensors of their dtype",
             (1, 2)),
        Rule("numpy numbers: one tensor of their dtype",
             (14, 15)),
        Rule("floats float64, ints int64, bools bool",
             (3, 4, 5)),
        Rule("strings as they are: the list of them where torch gives a list",
             (6, 15, 18)),
        Rule("tuples and lists: transposed, a list of collated fields",
             (7, 8)),
        Rule("dicts and other mappings keep their keys and type (`OrderedDict`, `defaultdict`)",
             (9, 12, 13)),
        Rule("namedtuples keep their type; nesting",
             (10, 11)),
        Rule("any other type: `TypeError`",
             (17,)),
        Rule("samples with different numbers of fields: `RuntimeError`",
             (16,), parity="RuntimeError for unequal samples"),
    ),
    goals=(1, 2),
))


def _convert_cases() -> list[Case]:
    array = np.array([[1, 2], [3, 4]], dtype=np.int32)
    return [
        Case({"data": np.array([0.5, 1.5], dtype=np.float32)},
             description="data = np.array([0.5, 1.5], dtype=np.float32)",
             hint="a numpy array becomes a tensor with the same dtype and shape"),
        Case({"data": np.float64(2.5)}, description="data = np.float64(2.5) (a numpy number)",
             hint="numpy numbers (np.float64, np.int64, ...) become 0-d tensors too; "
                  "isinstance(data, (np.bool_, np.number)) finds them"),
        Case({"data": np.int64(3)}, description="data = np.int64(3)",
             hint="a numpy integer becomes a 0-d int64 tensor (it is no Python int)"),
        Case({"data": np.array(["a", "b"])}, description="data = np.array(['a', 'b'])",
             hint="a numpy array of strings (dtype kind 'U', 'S' or 'O') cannot become a "
                  "tensor: it is returned unchanged"),
        Case({"data": 7}, description="data = 7",
             hint="Python numbers are left as they are: there is no batch to put them in"),
        Case({"data": "0007.png"}, description="data = '0007.png'",
             hint="strings are left as they are"),
        Case({"data": torch.arange(3)}, description="data = torch.arange(3)",
             hint="a tensor is returned as it is"),
        Case({"data": (array, 3)}, description="data = (int32 array of shape (2, 2), 3)",
             hint="a tuple becomes a LIST of converted items, as default_collate does"),
        Case({"data": [array, "a"]}, description="data = [int32 array, 'a']",
             hint="a list gives a list of converted items"),
        Case({"data": {"image": array, "label": 3}},
             description="data = {'image': int32 array, 'label': 3}",
             hint="a dict keeps its keys; each value is converted"),
        Case({"data": _mapping(OrderedDict, b=np.float32(1.0), a=array)},
             description="data = OrderedDict(b=np.float32(1.0), a=int32 array)",
             hint="a mapping keeps its type: an OrderedDict stays an OrderedDict (copy it with "
                  "copy.copy and update it with the converted values)"),
        Case({"data": _mapping(defaultdict, x=array)},
             description="data = a defaultdict(list) {'x': int32 array}",
             hint="a defaultdict stays a defaultdict: copy it with copy.copy and update it"),
        Case({"data": Point(np.float32(1.0), np.arange(2))},
             description="data = Point(x=np.float32(1.0), y=np.arange(2)) (a namedtuple)",
             hint="a namedtuple keeps its type"),
        Case({"data": {"pair": [array, {"scale": np.float64(0.5)}]}},  # a list: the tuple's
             description="data = {'pair': [int32 array, {'scale': np.float64(0.5)}]}",  # case is 8
             hint="convert inside containers inside containers: call your function on each "
                  "item again"),
    ]


register(Exercise(
    reference=solutions.default_convert,
    oracle=default_convert,
    cases=_convert_cases,
    hint="only numpy values change (into tensors); containers are rebuilt around converted "
         "items (mappings keep their type), tuples as lists",
    time_limit=2.0,
    piece="collate.default_convert",
    expected_from="torch: `default_convert`",
    rules=(
        Rule("numpy arrays and numbers to tensors",
             (1, 2, 3)),
        Rule("arrays of strings unchanged",
             (4,)),
        Rule("numbers, strings, tensors unchanged",
             (5, 6, 7)),
        Rule("a list: a list of converted items",
             (9,)),
        Rule("mappings keep keys and type; namedtuples keep their type; nesting",
             (10, 11, 12, 13, 14)),
        Rule("a tuple becomes a list",
             (8,), parity="tuples become lists"),
    ),
    goals=(3,),
))


def _sequences(lengths, features, generator, integer=False):
    if integer:
        return [torch.randint(1, 50, (n,), generator=generator) for n in lengths]
    return [torch.randn(n, features, generator=generator) for n in lengths]


def _pad_cases() -> list[Case]:
    g = torch.Generator().manual_seed(5)

    def case(lengths, labels, features=3, integer=False, hint=""):
        sequences = _sequences(lengths, features, g, integer)
        kind = "int64 token ids" if integer else f"float32 tensors of shape (length, {features})"
        return Case({"batch": list(zip(sequences, labels))},
                    description=f"{len(lengths)} samples (sequence, label): sequences are "
                                f"{kind} of lengths {lengths}",
                    hint=hint or None)

    return [
        case([4, 2, 3], [1, 0, 1], hint="pad every sequence with zeros to the longest one (4 "
                                        "here): padded has shape (3, 4, 3)"),
        case([5, 5], [2, 2], hint="equal lengths: nothing to pad, but still return the lengths"),
        case([1], [7], hint="a batch of one sample"),
        case([3, 6, 1, 2], [0, 1, 2, 3], integer=True,
             hint="1-D sequences (token ids, int64): padded has shape (batch, longest) and "
                  "keeps the int64 dtype"),
        case([2, 0, 3], [1, 1, 0], features=2,
             hint="an empty sequence (length 0) is all padding: its row stays zeros"),
    ]


register(Exercise(
    reference=solutions.pad_collate,
    cases=_pad_cases,
    hint="return a tuple (padded, lengths, labels): padded of shape (batch, longest, ...) "
         "filled with zeros, lengths an int64 tensor of the true lengths, labels an int64 "
         "tensor",
    time_limit=2.0,
    rules=(
        # a sequence of length 0 is no rule of its own: code that pads every sequence to the
        # longest pads an empty one too, and no plausible mistake fails it alone
        Rule("`(padded, lengths, labels)`: zeros to the longest (an empty sequence all zeros), the sequences' dtype, int64 lengths and labels",
             (1, 2, 3, 5)),
        Rule("1-D int64 sequences",
             (4,)),
    ),
    goals=(5,),
))


def _plain(value):
    """Dataclasses as (class name, fields), so that results compare as plain data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,
                {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)})
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_plain(v) for v in value)
    return value


def _collate_with_registered(implementation, case: Case):
    """What a DataLoader would return with `implementation` registered for the dataclasses."""
    collate_fn_map = {**default_collate_fn_map, DigitSample: implementation,
                      DigitPair: implementation}
    return _plain(collate(case.inputs["batch"], collate_fn_map=collate_fn_map))


def _dataclass_cases() -> list[Case]:
    g = torch.Generator().manual_seed(6)
    images = _images(4, g)
    samples = [DigitSample(image, label, f"{label:04}.png")
               for image, label in zip(images, [3, 8, 5, 0])]
    return [
        Case({"batch": samples[:3]},
             description="3 DigitSample(image=uint8 tensor (1, 2, 2), label=int, file=str)",
             hint="return a DigitSample whose image is the stacked images, label a tensor of "
                  "labels and file the list of files: hand each field's values back to "
                  "collate, passing the registry on"),
        Case({"batch": [{"sample": s, "weight": w} for s, w in zip(samples, [0.5, 2.0])]},
             description="2 dicts {'sample': DigitSample, 'weight': float}",
             hint="collate reaches your function through the dict: it must work for a batch "
                  "of DigitSamples wherever they sit"),
        Case({"batch": [DigitPair(samples[0], samples[1]), DigitPair(samples[2], samples[3])]},
             description="2 DigitPair(left=DigitSample, right=DigitSample)",
             hint="a field can hold a dataclass too: pass collate_fn_map on when you collate "
                  "a field, so that collate finds your function again"),
        Case({"batch": [(s, i) for i, s in enumerate(samples)]},
             description="4 tuples (DigitSample, int)",
             hint="inside a tuple sample: the batch is a list [collated DigitSample, tensor]"),
    ]


register(Exercise(
    reference=solutions.collate_dataclass,
    cases=_dataclass_cases,
    run=_collate_with_registered,
    hint="for each field of the dataclass (dataclasses.fields), collate that field's values "
         "across the batch with collate and the registry you were given; then build one "
         "instance of the sample's own type from the collated fields",
    time_limit=3.0,
    rules=(
        Rule("the same dataclass, each field collated with the map",
             (1,)),
        Rule("reached through a dict, a tuple, another dataclass (the map passed on)",
             (2, 3, 4)),
    ),
    goals=(4,),
))


def _table(rows: int, columns: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, columns, generator=g),
            torch.randint(0, 2, (rows, 1), generator=g).float())


def _use_fast_table(implementation, case: Case) -> dict:
    """What the loader sees of the dataset, and whether it fetched batches at once."""
    calls = {"__getitem__": 0, "__getitems__": 0}

    class Counted(implementation):
        def __getitem__(self, index):
            calls["__getitem__"] += 1
            return super().__getitem__(index)

        def __getitems__(self, indices):
            calls["__getitems__"] += 1
            return super().__getitems__(indices)

    dataset = Counted(*case.inputs["table"])
    seen = {"len(dataset)": len(dataset), "dataset[1]": dataset[1],
            "dataset.__getitems__([3, 0, 2])": dataset.__getitems__([3, 0, 2])}
    calls["__getitem__"] = calls["__getitems__"] = 0
    loader = DataLoader(dataset, batch_size=4, shuffle=True,
                        generator=torch.Generator().manual_seed(0))
    seen["the first batch of a shuffled DataLoader(dataset, batch_size=4)"] = next(iter(loader))
    seen["calls while the loader made that batch"] = dict(calls)
    return seen


register(Exercise(
    reference=solutions.FastTableDataset,
    cases=lambda: [
        Case({"table": _table(rows, columns, seed)},
             description=f"features = a {rows}×{columns} float32 tensor, labels = a {rows}×1 "
                         "float32 tensor")
        for rows, columns, seed in [(6, 3, 1), (10, 2, 2), (4, 5, 3)]],
    run=_use_fast_table,
    hint="__getitems__(indices) indexes each tensor ONCE with the whole list "
         "(self.features[indices]) and returns a list of (features, label) tuples, one per "
         "index; the loader then calls __getitems__ once per batch and never __getitem__",
    time_limit=3.0,
    rules=(
        Rule("`dataset[i]`, `len`, `__getitems__` a list of pairs",
             (1, 2, 3)),
        Rule("the loader calls `__getitems__` once per batch and never `__getitem__`",
             (1, 2, 3)),
    ),
    goals=(6,),
))


# ---------------------------------------------------------------------------------------
# Check yourself


def _dtype_name(expected: str, got) -> str | None:
    """A dtype is right by its name: "float64", "torch.float64" or torch.float64 itself."""
    name = str(got).strip().lower().removeprefix("torch.")
    return None if name == expected else f"expected {expected}, got {name}"


register(Prediction(
    "ch04-float-dtype",
    measure=lambda: str(default_collate([1.62, 1.75, 1.80]).dtype).removeprefix("torch."),
    compare=_dtype_name, prompt_text='a dtype\'s name, e.g. "int32"',
    why="a Python float is a double: default_collate keeps its precision and makes a float64 "
        "tensor",
    mistakes={"float32": "float32 is torch's default for layers and for torch.rand, but "
                         "default_collate keeps Python's own precision: a float is a double",
              "float": "a Python float, yes, but collated it becomes a tensor: of which dtype?"},
    goals=(2,),
))

register(Choice(
    "ch04-collate-pairs", answer="b", why={
        "a": "the two fields come back in a list, not a tuple: zip(*batch) transposes, and "
             "default_collate has always returned a list for a tuple",
        "c": "the batch is transposed: one field of images and one of labels, not four pairs; "
             "and a stacked uint8 image stays uint8",
        "d": "default_collate decides by type, field by field: the ints become one int64 "
             "tensor, and only the images are stacked",
    }, goals=(1,)))


def _items_without_batching() -> int:
    return len(list(DataLoader(range(10), batch_size=None)))


register(Prediction(
    "ch04-no-batching", measure=_items_without_batching,
    why="batch_size=None turns batching off: each index gives one sample, and the loader "
        "yields it on its own",
    mistakes={1: "batch_size=None is not one batch of everything: it turns batching off, so "
                 "each sample comes out on its own",
              0: "without batching the loader still reads every index of the sampler"},
    goals=(3,),
))

register(Choice(
    "ch04-own-registry", answer="b", why={
        "a": "it is a plain dict: you can add entries, and that is the trouble, since every "
             "loader of the process shares it",
        "c": "the lookup is the same for any map: a dict by type, then isinstance in order",
        "d": "default_collate reads the map at every call, so an entry added later counts, "
             "for every loader of the process",
    }, goals=(4,)))

register(Choice(
    "ch04-why-lengths", answer="b", why={
        "a": "the model needs them during the forward pass, not only after: a recurrent "
             "network would otherwise run over the zeros and end in the wrong state",
        "c": "the padded sequences all have the same length: stacking needs nothing more",
        "d": "a bucket sampler sorts by length before batching; the lengths returned with a "
             "batch tell the model where each sequence ends",
    }, goals=(5,)))

register(Choice(
    "ch04-getitems-in-memory", answer="b", why={
        "a": "the calls are cheap here: indexing costs about the same per row, one by one or "
             "together, and collating still stacks every sample",
        "c": "one indexing per batch does not cost more than one per sample",
        "d": "the fetcher calls __getitems__ with or without workers, whenever the dataset "
             "has it and the loader batches",
    }, goals=(6,)))

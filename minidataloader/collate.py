"""Collation: turning a list of samples into one batch.

``collate`` walks the structure of the first sample: containers (dicts, namedtuples, lists,
tuples) are rebuilt with each field collated across the batch, and leaves are handed to
the function registered for their type in ``collate_fn_map``. ``default_collate`` uses
``default_collate_fn_map``; add your own types to it, or pass your own map.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, MutableMapping, MutableSequence, Sequence

import numpy as np
import torch

from .worker import get_worker_info

CollateFnMap = dict[type | tuple[type, ...], Callable]

# numpy dtypes holding bytes (S, a), unicode (U) or Python objects (O): no tensor can hold them
_NOT_TENSOR_DTYPE = re.compile(r"[SaUO]")
_SPARSE_LAYOUTS = (torch.sparse_coo, torch.sparse_csr, torch.sparse_bsr, torch.sparse_csc,
                   torch.sparse_bsc)


def _cannot_collate(what) -> TypeError:
    return TypeError(f"default_collate cannot batch {what}: samples may hold tensors, numpy "
                     "arrays, numbers, str/bytes, and dicts, lists or tuples of those. Convert "
                     "it in the dataset, pass a collate_fn, or register the type in "
                     "default_collate_fn_map")


def _same_container(like, values):
    """``values`` (a dict or a list) in a container of ``like``'s type, when that type allows.

    A mutable container is copied and refilled rather than rebuilt, because it may carry
    state a constructor call would lose (a defaultdict's factory, attributes of a subclass).
    A type that can be neither copied nor built from ``values`` gives a plain dict or list.
    """
    try:
        if isinstance(like, MutableMapping):
            clone = copy.copy(like)
            clone.update(values)
            return clone
        if isinstance(like, MutableSequence):
            clone = copy.copy(like)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(like)(values)
    except TypeError:
        return values


def default_convert(data):
    """What the loader does to each sample when it does not batch (``batch_size=None``):
    numpy arrays and scalars become tensors, inside any containers; the rest is unchanged."""
    data_type = type(data)
    if isinstance(data, torch.Tensor):
        return data
    if data_type.__module__ == "numpy" and data_type.__name__ not in ("str_", "string_"):
        if data_type.__name__ == "ndarray" and _NOT_TENSOR_DTYPE.search(data.dtype.str):
            return data
        return torch.as_tensor(data)
    if isinstance(data, Mapping):
        return _same_container(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return data_type(*(default_convert(item) for item in data))
    if isinstance(data, tuple):
        return [default_convert(item) for item in data]  # a list, as torch has always done
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _same_container(data, [default_convert(item) for item in data])
    return data


def collate(batch, *, collate_fn_map: CollateFnMap | None = None):
    """Collate ``batch`` (a list of samples of the same structure) into one batch."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:  # in insertion order: bool finds int's entry
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, Mapping):
        return _same_container(elem, {
            key: collate([sample[key] for sample in batch], collate_fn_map=collate_fn_map)
            for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return elem_type(*(collate(field, collate_fn_map=collate_fn_map)
                           for field in zip(*batch)))
    if isinstance(elem, Sequence):
        for sample in batch:
            if len(sample) != len(elem):
                raise RuntimeError(f"default_collate needs the samples of a batch to be "
                                   f"sequences of one length, got {len(elem)} and "
                                   f"{len(sample)}; pad them, or pass a collate_fn")
        # each field is a tuple, as torch passes it: a field of strings stays a tuple
        fields = [collate(field, collate_fn_map=collate_fn_map) for field in zip(*batch)]
        return fields if isinstance(elem, tuple) else _same_container(elem, fields)
    raise _cannot_collate(elem_type)


def collate_tensor_fn(batch, *, collate_fn_map: CollateFnMap | None = None):
    elem = batch[0]
    if elem.is_nested or elem.layout in _SPARSE_LAYOUTS:
        raise RuntimeError("default_collate cannot stack nested or sparse tensors; pass a "
                           "collate_fn that batches them")
    out = None
    if get_worker_info() is not None:
        # NOTE [ Collating into shared memory ]
        # A worker's batch travels to the main process. A tensor in shared memory travels
        # as a handle to its memory, any other tensor is first copied into shared memory.
        # Stacking straight into a shared block skips that extra copy of every batch.
        numel = sum(x.numel() for x in batch)
        storage = elem._typed_storage()._new_shared(numel, device=elem.device)
        out = elem.new(storage).resize_(len(batch), *list(elem.size()))
    return torch.stack(batch, 0, out=out)


def collate_numpy_array_fn(batch, *, collate_fn_map: CollateFnMap | None = None):
    if _NOT_TENSOR_DTYPE.search(batch[0].dtype.str) is not None:
        raise _cannot_collate(f"numpy arrays of dtype {batch[0].dtype}")
    return collate([torch.as_tensor(array) for array in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map: CollateFnMap | None = None):
    return torch.as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map: CollateFnMap | None = None):
    return torch.tensor(batch, dtype=torch.float64)


def collate_int_fn(batch, *, collate_fn_map: CollateFnMap | None = None):
    return torch.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map: CollateFnMap | None = None):
    return batch


default_collate_fn_map: CollateFnMap = {
    torch.Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,  # and its subclasses, such as np.memmap
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,  # numpy's string scalars: no
    float: collate_float_fn, int: collate_int_fn, str: collate_str_fn, bytes: collate_str_fn,
}


def default_collate(batch):
    """What the loader does to each list of samples by default: tensors, numpy arrays and
    numbers are stacked into tensors with a new first dimension, strings are kept as lists,
    and containers keep their structure, each field collated across the batch."""
    return collate(batch, collate_fn_map=default_collate_fn_map)

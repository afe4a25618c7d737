"""The saved state: its format, the random states it holds, the checks a state must pass
before a loader resumes from it, and its JSON form.

A state is plain data -- dicts, lists, strings, numbers, None -- so ``torch.save`` writes it,
``torch.load`` (with its default ``weights_only=True``) reads it back, and ``json.dumps``
writes it too, as long as what a dataset or sampler of yours saved in it is plain as well
(:func:`to_json` and :func:`from_json` carry tensors, bytes and tuples through JSON). Random
states, which are bytes, are kept as base64 text. A state carries a fingerprint of the
loader that made it: a state from another loader or another version, or one cut short, is
refused with a message that says what differs, instead of resuming with batches that belong
to no run.
"""

from __future__ import annotations

import base64
import json
import random
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from ..fetch import _DatasetKind

FORMAT = "minidataloader.StatefulDataLoader"
VERSION = 2  # 1 held bytes and a checksum
# Every state has these keys; a state lacking one was cut short (or is not ours).
KEYS = ("format", "version", "loader", "epochs_started", "generators", "sampler_epochs",
        "sampler", "dataset", "base_seed", "epoch", "workers")


@runtime_checkable
class Stateful(Protocol):
    """An object that can save and restore its state: plain data from ``state_dict()``,
    given back to ``load_state_dict()`` of an object built the same way. (torchdata's
    protocol: the same two methods.)

    A dataset -- or the iterator its ``__iter__`` returns, which may be the dataset itself
    -- saves its position: how far its stream has got (update it *before* yielding a
    sample: the state is taken between samples). ``load_state_dict`` is called on a dataset
    before ``iter(dataset)``, on the iterator after it (so a dataset that is its own
    iterator is restored after its ``__iter__`` ran). Each worker's copy saves its own; with
    ``num_workers=0`` the dataset in this process does.

    A sampler saves what its next iteration depends on (an epoch count, a seed...): its
    state is taken before each epoch's ``iter(sampler)``, and the position inside the
    epoch is the loader's to restore (it counts the indices taken, and takes them again).
    The iterator a sampler's ``__iter__`` returns may be Stateful instead: then it saves
    its position, and is restored after ``iter(sampler)``, as torchdata does."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...


class StateDictError(ValueError):
    """A state this loader cannot resume from; the message says what differs."""


# ---------------------------------------------------------------------------------------
# Random states as plain values

def _text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _bytes(text: str) -> bytes:
    return base64.b64decode(text)


def raw_rng_states() -> tuple:
    """The global random states of this process, as cheap to compare as possible (bytes and
    tuples): a worker compares them after every result, and encodes them only when they
    changed (:func:`encode_rng_states`)."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return (torch.get_rng_state().numpy().tobytes(), random.getstate(),
            (name, keys.tobytes(), pos, has_gauss, cached))


def encode_rng_states(raw: tuple) -> dict:
    """:func:`raw_rng_states`'s value as plain data (text, numbers, lists)."""
    torch_state, (version, internal, gauss), (name, keys, pos, has_gauss, cached) = raw
    return {"torch": _text(torch_state),
            "random": [version, _text(np.array(internal, dtype=np.uint32).tobytes()), gauss],
            "numpy": [name, _text(keys), pos, has_gauss, cached]}


def rng_states() -> dict:
    """The global random states of this process -- torch's CPU generator, ``random`` and
    numpy's -- as plain data, ready to be saved (``torch.save``, JSON) or compared."""
    return encode_rng_states(raw_rng_states())


def set_rng_states(states: dict) -> None:
    """Put back what :func:`rng_states` returned (also after a save/load round trip)."""
    torch.set_rng_state(_bytes_to_tensor(_bytes(states["torch"])))
    version, internal, gauss = states["random"]
    words = np.frombuffer(_bytes(internal), dtype=np.uint32)
    random.setstate((version, tuple(int(word) for word in words), gauss))
    name, keys, pos, has_gauss, cached = states["numpy"]
    np.random.set_state((name, np.frombuffer(_bytes(keys), dtype=np.uint32).copy(), pos,
                         has_gauss, cached))


def torch_rng_state() -> str:
    return _text(torch.get_rng_state().numpy().tobytes())


def set_torch_rng_state(state: str) -> None:
    torch.set_rng_state(_bytes_to_tensor(_bytes(state)))


def generator_state(generator: torch.Generator) -> str:
    return _text(generator.get_state().numpy().tobytes())


def set_generator_state(generator: torch.Generator, state: str) -> None:
    generator.set_state(_bytes_to_tensor(_bytes(state)))


def _bytes_to_tensor(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


# ---------------------------------------------------------------------------------------
# JSON

def to_json(state: dict, **dumps_options) -> str:
    """``state`` as JSON text, whatever a dataset or sampler saved in it: tensors, numpy
    arrays, bytes, tuples and dicts with keys that are not strings travel tagged, and
    :func:`from_json` rebuilds them. (A state whose every part is plain JSON data needs
    neither: ``json.dumps(state)`` writes it and ``json.loads`` reads it back.)"""
    return json.dumps(_tagged(state), **dumps_options)


def from_json(text: str) -> dict:
    """The state :func:`to_json` wrote, rebuilt: give it to ``load_state_dict``."""
    return json.loads(text, object_hook=_untagged)


def _tagged(obj):
    if isinstance(obj, dict):
        if all(isinstance(key, str) for key in obj):
            return {key: _tagged(value) for key, value in obj.items()}
        return {"__dict__": [[_tagged(key), _tagged(value)] for key, value in obj.items()]}
    if isinstance(obj, list):
        return [_tagged(item) for item in obj]
    if isinstance(obj, tuple):
        return {"__tuple__": [_tagged(item) for item in obj]}
    if isinstance(obj, (bytes, bytearray)):
        return {"__bytes__": _text(bytes(obj))}
    if isinstance(obj, torch.Tensor):
        tensor = obj.detach().cpu().contiguous()
        return {"__tensor__": [str(tensor.dtype).removeprefix("torch."), list(tensor.shape),
                               _text(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())]}
    if isinstance(obj, np.ndarray):
        array = np.ascontiguousarray(obj)
        return {"__ndarray__": [array.dtype.str, list(array.shape), _text(array.tobytes())]}
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _untagged(obj: dict):
    if len(obj) != 1:
        return obj
    (tag, value), = obj.items()
    if tag == "__dict__":
        return {_hashable(key): item for key, item in value}
    if tag == "__tuple__":
        return tuple(value)
    if tag == "__bytes__":
        return _bytes(value)
    if tag == "__tensor__":
        dtype, shape, data = value
        flat = _bytes_to_tensor(_bytes(data)).view(getattr(torch, dtype))
        return flat.reshape(shape).clone()
    if tag == "__ndarray__":
        dtype, shape, data = value
        return np.frombuffer(_bytes(data), dtype=np.dtype(dtype)).reshape(shape).copy()
    return obj


def _hashable(key):
    return tuple(_hashable(item) for item in key) if isinstance(key, list) else key


# ---------------------------------------------------------------------------------------
# What a state must match

def fingerprint(loader, chain: list) -> dict:
    """What determines the batches of an epoch, besides the random states: a state made by
    a loader with another fingerprint would resume with batches of neither run."""
    iterable = loader._dataset_kind == _DatasetKind.Iterable
    batch_size = loader.batch_size if loader.batch_size is not None else getattr(
        loader.batch_sampler, "batch_size", None)
    found = {
        "dataset": f"{type(loader.dataset).__name__} ({'iterable' if iterable else 'map-style'})",
        "len(dataset)": None if iterable else _len_or_none(loader.dataset),
        "batch_size": batch_size,
        "drop_last": loader.drop_last,
        "num_workers": loader.num_workers,
        "persistent_workers": loader.persistent_workers,
        "prefetch_factor": loader.prefetch_factor,  # the batches in flight, dispatched again
        "sampler": " > ".join(describe(sampler) for sampler in chain),
        "generators": len(loader._generators()),
    }
    return {key: value for key, value in found.items() if value is not None}


_DESCRIBED = ("batch_size", "drop_last", "replacement", "num_samples", "num_replicas", "rank",
              "shuffle", "seed")


def describe(sampler) -> str:
    """A sampler's class and the settings that shape its stream, e.g.
    ``RandomSampler(replacement=False, num_samples=20)``."""
    settings = [f"{name}={getattr(sampler, name)!r}" for name in _DESCRIBED
                if isinstance(getattr(type(sampler), name, None), property)
                or name in getattr(sampler, "__dict__", {})]
    length = _len_or_none(sampler)
    if length is not None:
        settings.append(f"len={length}")
    return f"{type(sampler).__name__}({', '.join(settings)})"


def _len_or_none(obj) -> int | None:
    try:
        return len(obj)
    except (TypeError, NotImplementedError):  # no __len__, or one that refuses
        return None


def check(state, loader, chain: list) -> None:
    """Raise StateDictError unless ``state`` is a complete state of this version, made by a
    loader like ``loader``."""
    if not isinstance(state, dict):
        raise StateDictError(f"a StatefulDataLoader state is a dict made by state_dict(), got "
                             f"{type(state).__name__}")
    if state.get("format") != FORMAT:
        if {"_snapshot", "_num_yielded", "_sampler_iter_state"} & set(state):
            raise StateDictError("this state was made by torchdata's StatefulDataLoader; the "
                                 "two loaders save different things, so load it with torchdata")
        if not state:
            raise StateDictError("the state is empty: pass what state_dict() returned (to "
                                 "start from scratch, do not call load_state_dict)")
        raise StateDictError(f"this is not a state made by minidataloader's "
                             f"StatefulDataLoader.state_dict() (its 'format' is "
                             f"{state.get('format')!r}, not {FORMAT!r})")
    if state.get("version") != VERSION:
        raise StateDictError(f"this state has format version {state.get('version')!r}, made by "
                             f"another version of minidataloader; this one reads version "
                             f"{VERSION}. Resume with the version that saved it")
    missing = [key for key in KEYS if key not in state]
    if missing:
        raise StateDictError(f"the state lacks {', '.join(map(repr, missing))}: it was cut short "
                             "or assembled by hand. Save and load the whole dict state_dict() "
                             "returns")
    here = fingerprint(loader, chain)
    saved = state["loader"]
    differences = [f"{key}: {saved.get(key, 'absent')!r} in the state, {here.get(key, 'absent')!r} "
                   "here" for key in dict.fromkeys([*saved, *here]) if saved.get(key) != here.get(key)]
    if differences:
        raise StateDictError("this state was saved by a loader built differently, so resuming "
                             "it here would give batches of neither run. Differences: "
                             + "; ".join(differences) + ". Build the loader as it was built "
                             "when the state was saved")
    workers = state["workers"]
    if workers is not None and len(workers) != loader.num_workers:
        raise StateDictError(f"the state holds {len(workers)} workers' states for a loader "
                             f"with num_workers={loader.num_workers}: it was edited or "
                             "assembled by hand. Resume from what state_dict() returned")

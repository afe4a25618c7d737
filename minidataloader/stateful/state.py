"""The saved state: its format, the random states it holds, and the checks a state must pass
before a loader resumes from it.

A state is plain data -- dicts, lists, ints, strings, bytes -- so ``torch.save`` writes it
and ``torch.load`` (with its default ``weights_only=True``) reads it back. It carries a
fingerprint of the loader that made it and a checksum of its own contents: a state from
another loader, another version, or one cut short or edited, is refused with a message
that says what differs, instead of resuming with batches that belong to no run.
"""

from __future__ import annotations

import hashlib
import pickle
import random
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from ..fetch import _DatasetKind

FORMAT = "minidataloader.StatefulDataLoader"
VERSION = 1
# Every state has these keys; a state lacking one was cut short (or is not ours).
KEYS = ("format", "version", "loader", "epochs_started", "generators", "sampler_epochs",
        "sampler", "dataset", "base_seed", "epoch", "workers", "checksum")


@runtime_checkable
class Stateful(Protocol):
    """An object that can save and restore its state: plain data from ``state_dict()``,
    given back to ``load_state_dict()`` of an object built the same way. (torchdata's
    protocol: the same two methods.)

    A dataset -- or the iterator its ``__iter__`` returns -- saves its position: how far
    its stream has got (update it *before* yielding a sample: the state is taken between
    samples). ``load_state_dict`` is called on the dataset before ``iter(dataset)``, on the
    iterator after. Each worker's copy saves its own; with ``num_workers=0`` the dataset in
    this process does.

    A sampler saves what its next iteration depends on (an epoch count, a seed...): its
    state is taken before each epoch's ``iter(sampler)``, and the position inside the
    epoch is the loader's to restore (it counts the indices taken, and takes them again)."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...


class StateDictError(ValueError):
    """A state this loader cannot resume from; the message says what differs."""


# ---------------------------------------------------------------------------------------
# Random states as plain values

def rng_states() -> dict:
    """The global random states of this process -- torch's CPU generator, ``random`` and
    numpy's -- as plain values (bytes, tuples, ints), ready to be saved or compared."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {"torch": torch.get_rng_state().numpy().tobytes(), "random": random.getstate(),
            "numpy": (name, keys.tobytes(), pos, has_gauss, cached)}


def set_rng_states(states: dict) -> None:
    """Put back what :func:`rng_states` returned (also after a save/load round trip)."""
    torch.set_rng_state(_bytes_to_tensor(states["torch"]))
    version, internal, gauss = states["random"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = states["numpy"]
    np.random.set_state((name, np.frombuffer(keys, dtype=np.uint32).copy(), pos, has_gauss,
                         cached))


def generator_state(generator: torch.Generator) -> bytes:
    return generator.get_state().numpy().tobytes()


def set_generator_state(generator: torch.Generator, state: bytes) -> None:
    generator.set_state(_bytes_to_tensor(state))


def _bytes_to_tensor(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


# ---------------------------------------------------------------------------------------
# The checksum

def checksum(state: dict) -> str:
    """SHA-256 of every entry but the checksum, in a canonical encoding: the same contents
    give the same checksum after any save/load round trip (tuples may come back as lists)."""
    digest = hashlib.sha256()
    _feed(digest, {key: value for key, value in state.items() if key != "checksum"})
    return digest.hexdigest()


def _feed(digest, obj) -> None:
    """Feed ``obj`` to ``digest``: each value tagged with its kind, sizes before contents,
    so that no two different states feed the same bytes."""
    if obj is None or isinstance(obj, bool):
        digest.update(b"N" if obj is None else b"T" if obj else b"F")
    elif isinstance(obj, int):
        digest.update(b"i%d;" % obj)
    elif isinstance(obj, float):
        digest.update(b"f%s;" % obj.hex().encode())
    elif isinstance(obj, str):
        _feed_bytes(digest, b"s", obj.encode())
    elif isinstance(obj, (bytes, bytearray)):
        _feed_bytes(digest, b"b", bytes(obj))
    elif isinstance(obj, (list, tuple)):
        if all(type(item) is int for item in obj):  # a random module's state: 625 of them
            _feed_bytes(digest, b"I", ",".join(map(str, obj)).encode())
        else:
            digest.update(b"l%d:" % len(obj))
            for item in obj:
                _feed(digest, item)
    elif isinstance(obj, dict):
        digest.update(b"d%d:" % len(obj))
        for key, value in obj.items():
            _feed(digest, key)
            _feed(digest, value)
    elif isinstance(obj, torch.Tensor):
        tensor = obj.detach().cpu().contiguous()
        digest.update(f"t{tensor.dtype}{tuple(tensor.shape)}".encode())
        _feed_bytes(digest, b":", tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(obj, np.ndarray):
        digest.update(f"a{obj.dtype.str}{obj.shape}".encode())
        _feed_bytes(digest, b":", np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, np.generic):
        _feed(digest, obj.item())
    else:  # something a dataset chose to save
        _feed_bytes(digest, b"p", pickle.dumps(obj))


def _feed_bytes(digest, tag: bytes, data: bytes) -> None:
    digest.update(b"%s%d:" % (tag, len(data)))
    digest.update(data)


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
        "len(dataset)": None if iterable else _length(loader.dataset),
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
    length = _length(sampler)
    if length is not None:
        settings.append(f"len={length}")
    return f"{type(sampler).__name__}({', '.join(settings)})"


def _length(obj) -> int | None:
    try:
        return len(obj)
    except (TypeError, NotImplementedError):  # no __len__, or one that refuses
        return None


def check(state, loader, chain: list) -> None:
    """Raise StateDictError unless ``state`` is a complete, unedited state of this version,
    made by a loader like ``loader``."""
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
    if checksum(state) != state["checksum"]:
        raise StateDictError("the state's contents do not match its checksum: it was edited or "
                             "damaged after state_dict() made it (a value changed, or an entry "
                             "or a list item was removed). Resume from an unmodified state")
    here = fingerprint(loader, chain)
    saved = state["loader"]
    differences = [f"{key}: {saved.get(key, 'absent')!r} in the state, {here.get(key, 'absent')!r} "
                   "here" for key in dict.fromkeys([*saved, *here]) if saved.get(key) != here.get(key)]
    if differences:
        raise StateDictError("this state was saved by a loader built differently, so resuming "
                             "it here would give batches of neither run. Differences: "
                             + "; ".join(differences) + ". Build the loader as it was built "
                             "when the state was saved")

"""Checkpoint and resume in the middle of an epoch, exactly: an extra, imported only when
used (``import minidataloader`` does not import it).

    from minidataloader.stateful import StatefulDataLoader, rng_states, set_rng_states

``StatefulDataLoader`` is a DataLoader with ``state_dict()`` and ``load_state_dict()``. For
the same seeds, a run checkpointed after any batch -- in the loop, after ``break``, after
``del`` of the iterator -- and resumed in a new process gives the same remaining batches,
worker seeds and random states (inside the workers too) as a run never interrupted; and
until a state is loaded, its batches are torch's. What is saved, by whom, and how workers
resume without reading again what was delivered: NOTE [ What a checkpoint holds, and who
holds it ] in ``loader.py``. The state's format and its checks: ``state.py``; what runs
inside each worker: ``worker.py``.

Differences from torchdata 0.11's ``StatefulDataLoader`` (same names: ``state_dict``,
``load_state_dict``, the ``Stateful`` protocol, restored in the same order: a dataset before
``iter()``, its iterator after; ``snapshot_every_n_steps`` is accepted and ignored), and why:

* Its batches are torch's. torchdata's loader builds its own RandomSampler and
  BatchSampler, which draw differently, so with ``shuffle=True`` its epochs differ from
  torch's for the same seed. Here the samplers are untouched: the built-in ones (ours and
  torch's) need no protocol, because their indices are replayed -- from the random states
  saved at the epoch's first pull -- which reads no data.
* Random numbers drawn inside workers (augmentations) are restored: each worker reports its
  torch, random and numpy states with its results. torchdata does not restore them.
* ``in_order=False`` resumes exactly too (no batch lost or repeated); torchdata warns that
  it gives no guarantee.
* The loader keeps the epoch's position, not its iterator: after ``break`` the workers of a
  non-persistent loader end, as torch's do (torchdata keeps them running until the next
  ``iter()``), and ``state_dict()`` still says where the loop stopped.
* A state from a loader built differently (another dataset length, batch size, sampler,
  number of workers...), from another version, or cut short, raises ``StateDictError``
  saying what differs, in ``load_state_dict()``; torchdata resumes most of these silently
  (and refuses another ``num_workers`` only in ``iter()``).
* Nothing is fast-forwarded silently. A sampler that is neither built in nor Stateful (nor
  has a Stateful iterator), and an IterableDataset without the protocol, are refused when a
  state is taken in the middle of an epoch -- at its start or end nothing would be lost --
  unless ``fast_forward=True`` says to re-run them from the start of the epoch (a worker's
  stream is then re-read from the random states it had when the epoch began, and its
  random states must come out as saved, or the resume fails). torchdata fast-forwards
  both: the dataset with a logged warning, the sampler silently.
* A Stateful sampler saves what its next iteration depends on (its state before
  ``iter()``); the position inside the epoch is the loader's business (pulls counted and
  replayed). A sampler whose *iterator* is Stateful saves that iterator's position, as in
  torchdata (and the batches in flight as indices).
* ``state_dict()`` before ``iter()`` starts nothing (torchdata starts the workers to ask
  them), and ``load_state_dict({})`` is refused (torchdata ignores it). The state is plain
  data: ``torch.load`` reads it with ``weights_only=True``, and ``json.dumps`` writes it when
  what the datasets and samplers save is plain too (``to_json``/``from_json`` carry tensors).
* Costs: the state is kept current as batches are consumed -- a few small dicts per batch;
  a worker adds its random states to a result only when they changed -- so
  ``state_dict()`` hands over what is there (without workers, what a Stateful dataset or
  sampler iterator of the main process says is asked then, as torchdata does). See
  ``bench/stateful_workloads.py``.

The global random states of the main process belong to the training script, as in
torchdata: save ``rng_states()`` next to the model, ``set_rng_states()`` before resuming.
Without workers the loader undoes what ``iter(dataset)`` or a fast-forward draws from them,
and nothing else: a restore that the dataset's (or its iterator's) own ``load_state_dict``
makes stands.
"""

from .loader import StatefulDataLoader
from .state import StateDictError, Stateful, from_json, rng_states, set_rng_states, to_json

__all__ = ["StateDictError", "Stateful", "StatefulDataLoader", "from_json", "rng_states",
           "set_rng_states", "to_json"]

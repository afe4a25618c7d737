"""Checkpoint and resume in the middle of an epoch, exactly: an extra, imported only when
used (``import minidataloader`` does not import it).

    from minidataloader.stateful import StatefulDataLoader, rng_states, set_rng_states

``StatefulDataLoader`` is a DataLoader with ``state_dict()`` and ``load_state_dict()``. For
the same seeds, a run checkpointed after any batch and resumed in a new process gives the
same remaining batches, worker seeds and random states (inside the workers too) as a run
never interrupted -- and until a state is loaded, its batches are torch's. What is saved,
by whom, and how workers resume without reading again what was delivered: NOTE [ What a
checkpoint holds, and who holds it ] in ``loader.py``. The state's format and its checks:
``state.py``; what runs inside each worker: ``worker.py``.

Differences from torchdata 0.11's ``StatefulDataLoader`` (same names: ``state_dict``,
``load_state_dict``, the ``Stateful`` protocol; ``snapshot_every_n_steps`` is accepted and
ignored), and why:

* Its batches are torch's. torchdata's loader builds its own RandomSampler and
  BatchSampler, which draw differently, so with ``shuffle=True`` its epochs differ from
  torch's for the same seed. Here the samplers are untouched: the built-in ones (ours and
  torch's) need no protocol, because their indices are replayed -- from the random states
  saved at the epoch's first pull -- which reads no data.
* Random numbers drawn inside workers (augmentations) are restored: each worker reports its
  torch, random and numpy states with its results. torchdata does not restore them.
* ``in_order=False`` resumes exactly too (no batch lost or repeated); torchdata warns that
  it gives no guarantee.
* A state from a loader built differently (another dataset length, batch size, sampler,
  number of workers...), from another version, or edited or cut short, raises
  ``StateDictError`` saying what differs; torchdata resumes such a state silently.
* Nothing is fast-forwarded silently. A sampler that is neither built in nor Stateful is
  refused when the loader is built, an IterableDataset without the protocol when the state
  is taken -- unless ``fast_forward=True`` says to re-run them from the start of the epoch
  (a worker's stream is then re-read from the random states it had when the epoch began,
  and its random states must come out as saved, or the resume fails). torchdata
  fast-forwards both: the dataset with a logged warning, the sampler silently (iterating
  it anew, with new random numbers for a random one).
* A Stateful sampler saves what its next iteration depends on (its state before
  ``iter()``); the position inside an epoch is the loader's business (pulls counted and
  replayed). torchdata asks samplers for their position after every batch. A Stateful
  dataset, or the iterator its ``__iter__`` returns, saves its position, as in torchdata.
* ``state_dict()`` before ``iter()`` starts nothing (torchdata starts the workers to ask
  them), ``load_state_dict({})`` is refused (torchdata ignores it), and the state is plain
  data -- ``torch.load`` reads it with ``weights_only=True``.
* Costs: no snapshot per batch (a worker adds its random states to a result only when they
  changed); ``state_dict()`` builds the state when asked (about 0.1 ms), where torchdata's
  returns one it keeps up to date at every batch. See ``bench/stateful_workloads.py``.

The global random states of the main process belong to the training script, as in
torchdata: save ``rng_states()`` next to the model, ``set_rng_states()`` before resuming.
"""

from .loader import StatefulDataLoader
from .state import StateDictError, Stateful, rng_states, set_rng_states

__all__ = ["StateDictError", "Stateful", "StatefulDataLoader", "rng_states", "set_rng_states"]

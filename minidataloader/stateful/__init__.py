"""Checkpoint and resume in the middle of an epoch, exactly: an extra, imported only when
used (``import minidataloader`` does not import it).

    from minidataloader.stateful import StatefulDataLoader, rng_states, set_rng_states

See NOTE [ What a checkpoint holds, and who holds it ] in ``loader.py``.
"""

from .loader import StatefulDataLoader
from .state import StateDictError, Stateful, rng_states, set_rng_states

__all__ = ["StateDictError", "Stateful", "StatefulDataLoader", "rng_states", "set_rng_states"]

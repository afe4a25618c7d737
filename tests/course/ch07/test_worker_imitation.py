"""Chapter 7's imitation of a worker (``multiprocess_cases.as_in_a_torch_worker``), which
calls a learner's ``worker_init_fn`` in the checker's own process, against a real worker of
torch's DataLoader: the same seeds, worker info and random states. And a ``seed_worker``
that reads the worker's seed as ``torch.initial_seed()`` (what torch seeded) is accepted."""

from __future__ import annotations

import contextlib
import hashlib
import io
import random
import textwrap

import numpy as np
import pytest
import torch
import torch.utils.data as tud

from minidataloader_course import check
from minidataloader_course.chapters.multiprocess_cases import HAS_FORK, as_in_a_torch_worker
from tests.course.checker.answers import learner_module

pytestmark = pytest.mark.timeout(120)


class WhatSeeds(tud.Dataset):
    """Sample i: what code in a worker sees of its seeds and of itself."""

    def __len__(self):
        return 2

    def __getitem__(self, index):
        info = tud.get_worker_info()
        numpy_state = np.random.get_state()
        return {
            "torch.initial_seed()": torch.initial_seed(),
            "random's state": hashlib.sha256(repr(random.getstate()).encode()).hexdigest(),
            "numpy's state": hashlib.sha256(repr(numpy_state[0]).encode()
                                            + numpy_state[1].tobytes()
                                            + repr(numpy_state[2:]).encode()).hexdigest(),
            "torch's state": hashlib.sha256(torch.get_rng_state().numpy().tobytes()).hexdigest(),
            "worker info": None if info is None else (info.id, info.num_workers, info.seed,
                                                      info.dataset is self),
        }


@pytest.mark.skipif(not HAS_FORK, reason="torch's workers are forked here")
def test_the_imitation_sees_what_a_real_torch_worker_sees():
    generator = torch.Generator().manual_seed(0)
    loader = tud.DataLoader(WhatSeeds(), batch_size=None, sampler=[0, 1], num_workers=2,
                            multiprocessing_context="fork", generator=generator,
                            collate_fn=lambda sample: sample)
    real = list(loader)  # sample w goes to worker w (round robin)
    # the base seed the epoch drew, drawn again from the same generator state
    base_seed = torch.empty((), dtype=torch.int64).random_(
        generator=torch.Generator().manual_seed(0)).item()
    imitated = []
    for worker_id in range(2):
        dataset = WhatSeeds()
        with as_in_a_torch_worker(worker_id, 2, base_seed, dataset):
            imitated.append(dataset[worker_id])
    assert imitated == real
    assert real[0]["worker info"] == (0, 2, base_seed, True)
    assert real[0]["torch.initial_seed()"] != real[1]["torch.initial_seed()"]


def test_the_imitation_leaves_the_checkers_own_random_states_and_info_as_they_were():
    before = WhatSeeds()[0]
    with as_in_a_torch_worker(1, 3, 2**40 + 5, WhatSeeds()):
        inside = WhatSeeds()[0]
    assert inside["torch.initial_seed()"] == 2**40 + 6
    assert inside != before
    assert WhatSeeds()[0] == before


SEED_FROM_TORCH = textwrap.dedent("""
    import numpy as np
    import torch
    from torch.utils.data import get_worker_info


    def seed_worker(worker_id):
        get_worker_info().dataset.rng = np.random.default_rng(torch.initial_seed())
""")


def test_seed_worker_reading_torch_initial_seed_is_accepted(tmp_path):
    """torch seeds each worker with base_seed + worker_id, the seed get_worker_info() gives."""
    with contextlib.redirect_stdout(io.StringIO()):
        verdict = check(learner_module(tmp_path, SEED_FROM_TORCH).seed_worker)
    assert verdict.passed, str(verdict)

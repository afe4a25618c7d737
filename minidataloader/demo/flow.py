"""The dataset the queue-flow view (:mod:`minidataloader.viz.queueflow`) loads: samples of a
chosen size that take a chosen time, and some of them longer.

It is :class:`~minidataloader.demo.synthetic.SlowDataset` (sample ``i`` is
``torch.full(shape, i)``, made in ``seconds``) plus a few slow samples: the one slow sample
that holds up every batch behind it when the loader keeps sampler order (``in_order=True``).
Importable, so that workers started with spawn or forkserver find it.
"""

from __future__ import annotations

import time

from minidataloader.demo.synthetic import SlowDataset


class FlowDataset(SlowDataset):
    """``n`` samples of ``sample_kb`` KiB each (float32); each takes ``seconds`` to load,
    asleep as while reading a file, and sample ``i`` in ``slow`` takes ``slow[i]`` seconds
    more."""

    def __init__(self, n: int = 64, seconds: float = 0.005, sample_kb: int = 16,
                 slow: dict[int, float] | None = None):
        if sample_kb < 1:
            raise ValueError(f"sample_kb should be at least 1 (KiB per sample), got {sample_kb}")
        super().__init__(n, seconds, busy=False, shape=(sample_kb * 256,))
        self.slow = dict(slow or {})

    def __getitem__(self, i):
        extra = self.slow.get(i, 0.0)
        if extra > 0 and 0 <= i < self.n:
            time.sleep(extra)
        return super().__getitem__(i)

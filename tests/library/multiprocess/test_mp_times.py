"""The worst-case times to notice a dead worker and to shut down, measured (see
measure_times.py, which prints them) and held to generous bounds."""

import pytest

from tests.support.measure_times import measure

BOUNDS = {  # seconds; the expected values are about 1, 0.05, 0.5 and 5 (the stuck worker
    "notice": 5.0,  # is given _SHUTDOWN_TIMEOUT to finish its sample, then terminated)
    "idle": 3.0,
    "mid-sample": 4.0,
    "persistent": 3.0,
    "stuck": 12.0,
}


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_dead_workers_are_noticed_and_shutdowns_end_promptly():
    times = measure(trials=3)
    print("\n" + "\n".join(f"{name:48s} {seconds:6.2f} s" for name, seconds in times.items()))
    for name, seconds in times.items():
        bound = next(bound for key, bound in BOUNDS.items() if key in name)
        assert seconds < bound, f"{name}: {seconds:.2f} s (bound {bound} s)"

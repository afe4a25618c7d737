"""Leaks: after a warm-up, 200 short epochs (some cut short with `break`) leave the number
of child processes and open file descriptors where they were, and, under the file_system
sharing strategy, no shared-memory files behind in /dev/shm."""

from __future__ import annotations

import gc
import json
import textwrap

import pytest

import minidataloader as mdl
from tests.support.mp_datasets import Squares
from tests.support.mp_procs import children, open_fds, python

EPOCHS = 200


def run_epochs(loader, count):
    for epoch in range(count):
        for i, _ in enumerate(loader):
            if epoch % 3 == 0 and i == 1:
                break  # a third of the epochs end early


def resources():
    gc.collect()
    return {"children": len(children()), "open fds": open_fds()}


@pytest.mark.slow
@pytest.mark.timeout(420)  # 200 epochs of fresh workers: minutes on a busy machine
@pytest.mark.parametrize("persistent", [False, True])
def test_200_epochs_leave_no_processes_or_file_descriptors(persistent):
    loader = mdl.DataLoader(Squares(6), batch_size=2, shuffle=True, num_workers=2,
                            persistent_workers=persistent)
    run_epochs(loader, 5)  # warm-up: lazily created things (resource sharer, ...) exist now
    before = resources()
    run_epochs(loader, EPOCHS)
    assert resources() == before
    if persistent:
        assert before["children"] >= 2  # the persistent workers are alive...
        del loader
        assert resources()["children"] == before["children"] - 2  # ...until the loader goes


@pytest.mark.slow
@pytest.mark.timeout(420)  # 200 epochs of fresh workers: minutes on a busy machine
def test_no_shared_memory_files_left_under_the_file_system_strategy():
    code = textwrap.dedent(f"""
        import gc, json, os
        import torch.multiprocessing
        import minidataloader as mdl
        from tests.support.mp_datasets import Squares
        from tests.support.mp_procs import children, open_fds

        torch.multiprocessing.set_sharing_strategy("file_system")
        pids = set()

        def ours():  # shared-memory files our workers made: torch_<pid>_<random>_<n>
            return sorted(name for name in os.listdir("/dev/shm")
                          if any(name.startswith(f"torch_{{pid}}_") for pid in pids))

        def state():
            gc.collect()
            return [len(children()), open_fds(), ours()]

        for persistent in (False, True):
            loader = mdl.DataLoader(Squares(6), batch_size=2, shuffle=True, num_workers=1,
                                    persistent_workers=persistent)
            seen = 0
            for epoch in range({EPOCHS} + 5):
                if epoch == 5:
                    before = state()
                it = iter(loader)
                pids.update(worker.pid for worker in it._group.workers)
                for i, batch in enumerate(it):
                    seen = max(seen, len(ours()))  # while we hold a batch, its file exists
                    if epoch % 3 == 0 and i == 1:
                        break
                del it, batch
            for batch in loader:  # a last, whole epoch: persistent workers keep nothing back
                del batch
            after = state()
            del loader
            print(json.dumps({{"before": before, "after": after, "seen": seen,
                               "gone": state()}}), flush=True)
    """)
    out = python(code, timeout=400)
    results = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(results) == 2, out
    for result in results:
        assert result["seen"] > 0, "no shared-memory file ever seen: the check sees nothing"
        assert result["after"] == result["before"], result
        assert result["gone"][2] == [], result  # and with the loader gone, nothing at all

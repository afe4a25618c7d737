"""The guarantee with a real restart: configurations of the grid are checkpointed here,
and resumed in a new Python process that knows only the saved files (two processes, each
resuming several configurations one after another)."""

import pathlib
import pickle
import subprocess
import sys

import pytest

from tests.library.stateful.compare import check_resumed
from tests.library.stateful.scenarios import GRID, run

CHILD = ["-m", "tests.library.stateful.resume_child"]  # run from the repository root, where tests is a package
ROOT = pathlib.Path(__file__).resolve().parents[3]
SAMPLE = GRID[::10]  # 24 configurations
GROUPS = 2


@pytest.mark.timeout(240)
@pytest.mark.parametrize("group", range(GROUPS))
def test_resuming_in_a_new_process_continues_the_run(group, tmp_path):
    configs = SAMPLE[group::GROUPS]
    wholes = [run(c) for c in configs]
    checkpoints = [next(iter(whole["checkpoints"].values())) for whole in wholes]
    inputs, outputs = tmp_path / "checkpoints.pickle", tmp_path / "resumed.pickle"
    inputs.write_bytes(pickle.dumps(list(zip(configs, checkpoints))))
    child = subprocess.run([sys.executable, *CHILD, str(inputs), str(outputs)],
                           cwd=ROOT, capture_output=True, text=True, timeout=200)
    assert child.returncode == 0, child.stderr[-3000:]
    resumed = pickle.loads(outputs.read_bytes())
    assert len(resumed) == len(configs) >= 12
    for c, whole, checkpoint, result in zip(configs, wholes, checkpoints, resumed):
        check_resumed(c, whole, checkpoint, result)


def test_the_sample_spans_the_grid():
    assert {c["num_workers"] for c in SAMPLE} == {0, 1, 2, 3}
    assert {c["dataset"] for c in SAMPLE} >= {"numbers", "counting", "stateful_stream"}
    assert any(c["persistent_workers"] for c in SAMPLE)

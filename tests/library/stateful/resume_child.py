"""Run in a fresh process by test_restart.py: resume each configuration from its checkpoint
(read from a file) and write what the resumed runs saw. This process never ran the part
before the checkpoint: everything comes from the files."""

import pathlib
import pickle
import sys
import warnings

from tests.library.stateful.scenarios import run


def main(inputs: str, outputs: str) -> None:
    warnings.filterwarnings("ignore", message=".*worker process", category=UserWarning)
    jobs = pickle.loads(pathlib.Path(inputs).read_bytes())
    results = [run(config, resume=checkpoint) for config, checkpoint in jobs]
    pathlib.Path(outputs).write_bytes(pickle.dumps(results))


if __name__ == "__main__":  # spawned workers import this module: they must not run it
    main(*sys.argv[1:])

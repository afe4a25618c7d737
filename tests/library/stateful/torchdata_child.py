"""Each case: take some batches, save the state through torch.save, build everything
afresh, load it, take the rest of the epoch and one more epoch. test_torchdata.py plays
the cases with our loader in its own process, and runs this module as a program to play
them with torchdata's (importing torchdata.stateful_dataloader patches torch's samplers,
so it never shares a process with other comparisons); it prints the batches as JSON."""

import io
import json
import sys
import warnings

import torch

from tests.library.stateful.scenarios import RangeStream, ResumableSampler


def build(loader_class, case):
    n, workers = case["n"], case["num_workers"]
    kwargs = {"batch_size": 3, "num_workers": workers}
    if case["scenario"] == "sequential":
        return loader_class(list(range(n)), **kwargs)
    if case["scenario"] == "stateful_stream":
        return loader_class(RangeStream(n), **kwargs)
    if case["scenario"] == "stateful_sampler":
        return loader_class(list(range(n)), sampler=ResumableSampler(n), **kwargs)
    if case["scenario"] == "shuffled":
        return loader_class(list(range(n)), shuffle=True,
                            generator=torch.Generator().manual_seed(0), **kwargs)
    raise ValueError(case["scenario"])


def play(loader_class, case) -> dict:
    torch.manual_seed(0)
    loader = build(loader_class, case)
    iterator = iter(loader)
    before = [next(iterator).tolist() for _ in range(case["k"])]
    buffer = io.BytesIO()
    torch.save(loader.state_dict(), buffer)
    del iterator, loader
    buffer.seek(0)
    loader = build(loader_class, case)
    loader.load_state_dict(torch.load(buffer))
    after = [batch.tolist() for batch in loader] + [batch.tolist() for batch in loader]
    return {"before": before, "after": after}


def main(cases: str) -> None:
    warnings.simplefilter("ignore")  # torchdata's deprecation warnings on torch 2.13
    from torchdata.stateful_dataloader import StatefulDataLoader

    print(json.dumps([play(StatefulDataLoader, case) for case in json.loads(cases)]))


if __name__ == "__main__":  # spawned workers import this module: they must not run it
    main(*sys.argv[1:])

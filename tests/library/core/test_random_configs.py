"""240 random valid DataLoader configurations, drawn from a fixed seed, each run with both
libraries: every batch of every epoch, len(), and the RNG states afterwards must agree."""

import random

import pytest
import torch
import torch.utils.data as tud

from tests.support.differential import SAMPLE_KINDS, datasets, epochs, same

CONFIG_COUNT = 240
DATASETS = ("map", "batched", "iterable", "iterable_len", "tensor", "torch_map", "subset",
            "concat")
SAMPLERS = ("sequential", "random", "random_replacement", "random_num_samples",
            "subset_random", "weighted", "list", "distributed")


def draw_config(rng: random.Random) -> dict:
    """One valid configuration: invalid combinations are never drawn."""
    c = {"dataset": rng.choice(DATASETS), "n": rng.choice([0, 1, 2, 3, 7, 13, 31, 64, 100]),
         "kind": rng.choice(SAMPLE_KINDS), "mode": rng.choice(["batch_size"] * 3 + ["none",
                                                                                   "batch_sampler"]),
         "batch_size": rng.choice([1, 2, 3, 5, 8, 32, 128]), "drop_last": rng.random() < 0.4,
         "shuffle": None, "sampler": None, "generator": rng.random() < 0.4,
         "sampler_generator": rng.random() < 0.3, "collate": rng.choice([None, None, "keep",
                                                                         "tag", "random"]),
         "epochs": rng.randint(1, 3), "stop_after": rng.choice([None, None, None, 1, 2]),
         "len_first": rng.random() < 0.5, "seed": rng.randrange(1000)}
    iterable = c["dataset"].startswith("iterable")
    if c["mode"] == "batch_sampler" and iterable:
        c["mode"] = "batch_size"
    if c["mode"] != "batch_size":
        c["drop_last"] = False
    if not iterable and c["mode"] != "batch_sampler":
        c["shuffle"] = rng.choice([None, False, True, True]) if c["n"] else False
        if not c["shuffle"] and rng.random() < 0.6:
            c["sampler"] = rng.choice(SAMPLERS if c["n"] else ("sequential", "list"))
    if c["dataset"] == "iterable":
        c["len_first"] = False  # no len() to ask for
    return c


CONFIGS = [draw_config(random.Random(f"config {i}")) for i in range(CONFIG_COUNT)]


def make_dataset(lib, c):
    n, kind = c["n"], c["kind"]
    squares, batched, stream = datasets(tud if c["dataset"] == "torch_map" else lib)
    return {
        "map": lambda: squares(n, kind),
        "batched": lambda: batched(n, kind),
        "iterable": lambda: stream(n, kind),
        "iterable_len": lambda: stream(n, kind, max(n - 2, 0)),
        "tensor": lambda: lib.TensorDataset(torch.arange(n * 2).reshape(n, 2), torch.rand(n)),
        "torch_map": lambda: squares(n, kind),
        "subset": lambda: lib.Subset(batched(n + 5, kind), list(range(n + 4, 4, -1))),
        "concat": lambda: squares(n // 2, kind) + batched(n - n // 2, kind),
    }[c["dataset"]]()


def make_sampler(lib, c, generator):
    n = c["n"]
    return {
        None: lambda: None,
        "sequential": lambda: lib.SequentialSampler(range(n)),
        "random": lambda: lib.RandomSampler(range(n), generator=generator),
        "random_replacement": lambda: lib.RandomSampler(range(n), True, None, generator),
        "random_num_samples": lambda: lib.RandomSampler(range(n), False, 2 * n + 1, generator),
        "subset_random": lambda: lib.SubsetRandomSampler(list(range(0, n, 2)), generator),
        "weighted": lambda: lib.WeightedRandomSampler([i + 1.0 for i in range(n)], n + 3,
                                                      generator=generator),
        "list": lambda: list(range(n))[::-1],
        "distributed": lambda: lib.DistributedSampler(range(n), 3, 1, seed=c["seed"]),
    }[c["sampler"]]()


def make_collate(lib, c):
    return {
        None: None,
        "keep": lambda batch: batch,
        "tag": lambda batch: ("tag", lib.default_convert(batch)),
        "random": lambda batch: (lib.default_convert(batch), torch.rand(1)),
    }[c["collate"]]


def scenario_for(c):
    def scenario(lib):
        generator = torch.Generator().manual_seed(c["seed"]) if c["generator"] else None
        sampler_generator = (torch.Generator().manual_seed(c["seed"] + 1)
                             if c["sampler_generator"] else None)
        kwargs = {"shuffle": c["shuffle"], "drop_last": c["drop_last"],
                  "generator": generator, "collate_fn": make_collate(lib, c),
                  "sampler": make_sampler(lib, c, sampler_generator)}
        if c["mode"] == "none":
            kwargs["batch_size"] = None
        elif c["mode"] == "batch_size":
            kwargs["batch_size"] = c["batch_size"]
        else:
            inner = lib.RandomSampler(range(c["n"]), generator=sampler_generator) \
                if c["n"] else range(0)
            kwargs["batch_sampler"] = lib.BatchSampler(inner, c["batch_size"],
                                                       c["sampler_generator"])
        loader = lib.DataLoader(make_dataset(lib, c), **kwargs)
        length = len(loader) if c["len_first"] else None
        return (length, epochs(loader, c["epochs"], c["stop_after"]), generator,
                sampler_generator, torch.rand(1))

    return scenario


@pytest.mark.parametrize("config", CONFIGS, ids=[f"config{i}" for i in range(CONFIG_COUNT)])
def test_random_configuration(config):
    ref = same(scenario_for(config), seed=config["seed"])
    assert ref.error is None, f"drew an invalid configuration: {ref.error!r}"


def test_the_draw_covers_the_space():
    seen = {key: {str(c[key]) for c in CONFIGS} for key in ("dataset", "mode", "sampler",
                                                          "kind", "collate", "shuffle")}
    assert seen["dataset"] == set(DATASETS) and seen["kind"] == set(SAMPLE_KINDS)
    assert seen["sampler"] == {str(s) for s in (None, *SAMPLERS)}
    assert len(seen["mode"]) == 3 and len(seen["shuffle"]) == 3 and len(seen["collate"]) == 4

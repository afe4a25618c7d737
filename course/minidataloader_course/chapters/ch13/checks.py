"""Chapter 13 (your loader in training): the exercises and their hidden cases.

``WorkerSafeNoise`` runs inside real worker processes of minidataloader's DataLoader, started
with fork (the checker itself runs in a forked child, and only fork hands the reader's
notebook code to a worker without pickling it). ``seeds_drawn`` is held to torch's loaders in
a real script, its draws from the global generator counted; ``evaluate_quietly`` must leave
that generator as it found it.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import torch
from torch.utils.data import DataLoader

import minidataloader as mdl
from minidataloader_course.chapters.ch13 import solution as solutions
from minidataloader_course.checker.framework import Case, Exercise, Rule, register, take
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.shared.compare import difference


@contextlib.contextmanager
def _quiet_loader_warnings():
    """The hidden cases use up to 3 workers on any machine: the warning about more workers
    than CPUs is not the reader's doing."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*worker processes", category=UserWarning)
        yield


# ---------------------------------------------------------------------------------------
# A whole data pipeline for a new table

PIPELINE_PIECES = ("Dataset", "TensorDataset", "Subset", "random_split", "DataLoader")


def _table(rows: int, columns: int, classes: int, seed: int) -> dict:
    generator = torch.Generator().manual_seed(seed)
    scales = torch.logspace(0, 3, columns)  # features from ones to thousands: scaling matters
    features = (torch.randn(rows, columns, generator=generator) + 2) * scales
    labels = torch.randint(0, classes, (rows,), generator=generator)
    return {"features": features, "labels": labels, "seed": seed}


def _pipeline_cases() -> list[Case]:
    def case(rows, columns, classes, seed, hint):
        return Case(_table(rows, columns, classes, seed), hint=hint,
                    description=f"a table of {rows} rows, {columns} float32 features and "
                                f"int64 labels from 0 to {classes - 1}, seed={seed}")

    return [
        case(60, 3, 2, 0, "60 rows: 48 for training (3 full batches of 16), 12 to validate"),
        case(101, 4, 3, 1, "101 rows: random_split's fractions give 81 training rows "
                           "(the leftover row goes to the first split): 5 full batches and "
                           "one row that must be dropped"),
        case(21, 2, 2, 7, "21 rows: 17 for training, so one full batch and one sample left over"),
        case(400, 5, 4, 3, "400 rows: 80 validation rows make one batch of 64 and one of 16, "
                           "in the split's order"),
    ]


def _use_pipeline(implementation, case: Case) -> dict:
    result = implementation(**case.inputs)
    seen = {"type of what it returned": type(result).__name__}
    train_loader, val_loader = result
    rows = len(case.inputs["labels"])
    seen["len(train_loader)"] = len(train_loader)
    seen["len(val_loader)"] = len(val_loader)
    for epoch in (1, 2):
        seen[f"training batches, epoch {epoch}"] = take(train_loader, rows + 1)
    seen["validation batches"] = take(val_loader, rows + 1)
    return seen


def _compare_pipeline(expected, got) -> str | None:
    """The first difference, and what usually causes it."""
    compare = functools.partial(difference, tolerance=(1e-5, 1e-6))
    for key, value in expected.items():
        if key not in got:
            break
        problem = compare(value, got[key], key)
        if problem is None:
            continue
        if key.startswith("type"):
            return f"{problem}: return the two loaders as a tuple, (train_loader, val_loader)"
        if key.startswith("len"):
            return (f"{problem}: the training loader drops its incomplete last batch "
                    "(drop_last=True); the validation loader keeps every row, in batches of 64")
        batches = key.split(",")[0]
        if _labels(value) != _labels(got[key]):
            return (f"the labels of the {batches} come in another order ({problem}): the rows "
                    "are split by random_split(range(N), [0.8, 0.2]) with a generator seeded "
                    "with seed; the training loader shuffles with a generator of its own, "
                    "also seeded with seed; the validation loader does not shuffle")
        return (f"the labels are right but the features are not ({problem}): standardise "
                "with the mean and the standard deviation of the TRAINING rows only, "
                "features[train_rows].mean(dim=0) and .std(dim=0) (torch's default std)")
    return compare(expected, got)


def _labels(batches) -> list | None:
    try:
        return [labels.tolist() for _, labels in batches]
    except (TypeError, ValueError, AttributeError):
        return None


register(Exercise(
    reference=solutions.build_pipeline,
    cases=_pipeline_cases,
    run=_use_pipeline,
    compare=_compare_pipeline,
    hint=("split the row numbers, compute mean and std of features[train_rows] only, scale "
          "every row with them, then build a shuffled, drop_last training loader with its own "
          "generator and an in-order validation loader"),
    allowed=PIPELINE_PIECES,
    time_limit=3.0,
    expected_from="reference, built with torch's pieces",
    rules=(
        Rule("`random_split` with a seeded generator; standardised with the training rows' mean and `std`",
             (1, 2, 3, 4)),
        Rule("training: batches of 16, shuffled by its own seeded generator, incomplete last batch dropped",
             (1, 2, 3)),
        Rule("validation: batches of 64 in the split's order",
             (1, 2, 3, 4)),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# A worker-safe augmentation


class Blanks(mdl.Dataset):
    """Sample i is ``(noise(zeros), i)``: with an image of zeros, what comes out is the
    noise itself, so repeated noise is easy to spot."""

    def __init__(self, transform, n: int = 12, size: int = 3):
        self.transform, self.n, self.size = transform, n, size
        self.images = [torch.zeros(size) for _ in range(n)]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.transform(self.images[i]), i


def _repeats(batches: list) -> int:
    rows = [tuple(row) for noise, _ in batches for row in noise.tolist()]
    return len(rows) - len(set(rows))


def _use_noise(implementation, case: Case) -> dict:
    spec = case.inputs
    transform = implementation(spec["seed"])
    dataset = Blanks(transform)
    seen = {}
    if spec["preview"]:  # the script looks at one sample before training
        seen["a sample read in the main process"] = dataset[0][0]
    workers = spec["num_workers"]
    with _quiet_loader_warnings():
        loader = mdl.DataLoader(
            dataset, batch_size=4, shuffle=True, num_workers=workers,
            persistent_workers=spec["persistent"],
            multiprocessing_context="fork" if workers else None,
            generator=torch.Generator().manual_seed(spec["loader_seed"]))
        for epoch in range(1, spec["epochs"] + 1):
            batches = take(loader, len(dataset) + 1)
            seen[f"epoch {epoch}: noise patterns that repeat an earlier one"] = _repeats(batches)
            seen[f"epoch {epoch}: the dataset's images are still zeros afterwards"] = all(
                not image.any() for image in dataset.images)
            seen[f"epoch {epoch}"] = batches
    return seen


def _noise_cases() -> list[Case]:
    def case(num_workers, hint, preview=False, persistent=False, seed=5, loader_seed=0,
             epochs=2):
        settings = f"num_workers={num_workers}" + (", persistent_workers=True" * persistent)
        return Case({"seed": seed, "num_workers": num_workers, "preview": preview,
                     "persistent": persistent, "loader_seed": loader_seed, "epochs": epochs},
                    description=(f"WorkerSafeNoise({seed}) on 12 blank images, "
                                 f"DataLoader({settings}, shuffle=True, generator seed "
                                 f"{loader_seed}), {'two epochs' if epochs == 2 else 'one epoch'}"
                                 + (", one sample read in the main process first" * preview)),
                    hint=hint)

    return [
        case(0, "no workers: get_worker_info() is None, so draw from a generator seeded with "
                "the seed given to __init__, made once and then used on and on (the second "
                "epoch continues its stream); return a new tensor, so that the dataset's "
                "images stay zeros"),
        case(2, "in a worker, seed the generator with minidataloader.get_worker_info().seed "
                "(this check runs minidataloader's DataLoader, whose workers answer "
                "minidataloader's get_worker_info; torch's says None there): workers get "
                "different seeds, so no noise pattern repeats", epochs=1),
        case(3, "the main process used the transform first, and each worker starts with a "
                "copy of it: a generator that already exists was made for ANOTHER seed. "
                "Remember which seed your generator was made from, and make a new one when "
                "this process's seed differs", preview=True, seed=11, loader_seed=1, epochs=1),
        case(2, "persistent workers keep their seed from one epoch to the next: keep drawing "
                "from the same generator (do not make a new one for the same seed), or the "
                "second epoch repeats the first", persistent=True, loader_seed=3),
    ]


register(Exercise(
    reference=solutions.WorkerSafeNoise,
    cases=_noise_cases,
    run=_use_noise,
    compare=lambda expected, got: difference(expected, got, tolerance=(1e-5, 1e-6)),
    hint=("in __call__, ask get_worker_info() which process you are in: the main process "
          "uses self.seed, a worker its own seed. Keep the generator and the seed it was made "
          "from, and make a new one only when the seed differs (a worker's copy was made for "
          "the main process). Return the image plus 0.1 times noise drawn from it"),
    allowed=("Dataset", "IterableDataset", "Sampler", "get_worker_info"),
    time_limit=4.0,
    rules=(
        Rule("the main process: seeded with `seed`, used on and on; the images untouched",
             (1,)),
        # "persistent workers keep drawing" is no rule of its own: a transform cannot tell
        # one epoch from the next, so code that makes a new generator for the same seed does
        # so within an epoch too, and repeats its noise there (case 2)
        Rule("workers: seeded with their own seed when first needed, then used on and on "
             "(several epochs with persistent workers), no repeats",
             (2, 4)),
        Rule("a copied generator made for another seed is replaced",
             (3,)),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# Which seeds a training script's loaders draw from the global generator


def _global_draws(run) -> int:
    """How many 64-bit seeds ``run()`` drew from torch's global generator: its state after
    the run, found among the states after 0, 1, 2, ... such draws from the same seed."""
    torch.manual_seed(0)
    run()
    after = torch.get_rng_state()
    torch.manual_seed(0)
    for count in range(64):
        if torch.equal(torch.get_rng_state(), after):
            return count
        torch.empty((), dtype=torch.int64).random_()
    raise AssertionError("the run drew something other than 64-bit seeds")


def _torch_seeds_drawn(epochs, shuffle, num_workers, persistent_workers, generator, evaluate):
    """torch's answer: the script run with torch's loaders, its global draws counted."""

    def script():
        with _quiet_loader_warnings():
            train = DataLoader(range(12), batch_size=4, shuffle=shuffle,
                               num_workers=num_workers, persistent_workers=persistent_workers,
                               generator=torch.Generator().manual_seed(1) if generator else None,
                               multiprocessing_context="fork" if num_workers else None)
            val = DataLoader(range(6), batch_size=4)
            for _ in range(epochs):
                for _ in train:
                    pass
                if evaluate:
                    for _ in val:
                        pass
            del train  # persistent workers stop with their loader

    return _global_draws(script)


def _seed_cases() -> list[Case]:
    def case(hint, epochs=3, shuffle=True, num_workers=2, persistent_workers=False,
             generator=False, evaluate=False, tier=None):
        inputs = {"epochs": epochs, "shuffle": shuffle, "num_workers": num_workers,
                  "persistent_workers": persistent_workers, "generator": generator,
                  "evaluate": evaluate}
        return Case(inputs, hint=hint, tier=tier, description=(
            f"{epochs} epochs of DataLoader(shuffle={shuffle}, num_workers={num_workers}, "
            f"persistent_workers={persistent_workers}"
            + (", generator=its own" if generator else "") + ")"
            + (", an evaluation pass over a loader without workers after each" * evaluate)))

    return [
        case("each epoch's `for` loop makes a new iterator, which draws a base seed; a "
             "RandomSampler without a generator draws one more, for its own generator",
             shuffle=False),
        case("shuffle=True without a generator: the sampler draws a seed every epoch, on top "
             "of the iterator's base seed"),
        case("no workers still makes an iterator every epoch, and it draws a base seed "
             "(nothing uses it)", num_workers=0, shuffle=False),
        case("persistent workers keep one iterator for the whole run: one base seed, at the "
             "first epoch (the sampler still draws every epoch)", persistent_workers=True),
        case("a loader with a generator of its own draws both seeds from it: nothing from "
             "the global generator", generator=True),
        case("an evaluation pass is a new iterator over the validation loader: a base seed "
             "each time", persistent_workers=True, evaluate=True),
        case("one epoch, persistent or not: the same count", epochs=1,
             persistent_workers=True, evaluate=True),
        case("its own generator, and evaluations: only the evaluations draw from the global "
             "generator", generator=True, evaluate=True, epochs=2, num_workers=0),
    ]


register(Exercise(
    reference=solutions.seeds_drawn,
    oracle=_torch_seeds_drawn,
    cases=_seed_cases,
    hint=("count per epoch: a new iterator draws a base seed, a sampler that shuffles "
          "without a generator draws one; persistent workers keep one iterator; a generator "
          "of the loader's own takes both draws"),
    time_limit=15.0,
    expected_from="torch: the script run with its loaders, the draws from the global "
                  "generator counted",
    rules=(
        Rule("a base seed for every new iterator: every epoch's `for` loop",
             (1, 2, 3)),
        Rule("persistent workers: one iterator, one base seed for the run",
             (4, 6, 7)),
        Rule("shuffling without a generator: one more seed every epoch, the sampler's",
             (2, 4)),
        Rule("a generator of the loader's own: nothing from the global generator",
             (5, 8)),
        Rule("every evaluation pass draws a base seed, workers or not",
             (3, 6, 7, 8)),
    ),
    goals=(3,),
))


# ---------------------------------------------------------------------------------------
# An evaluation that leaves the training's random numbers alone


class _Scorer(torch.nn.Module):
    """Scores for ``classes`` classes: a fixed linear layer, and dropout (which draws random
    numbers in training mode)."""

    def __init__(self, features: int, classes: int):
        super().__init__()
        self.linear = torch.nn.Linear(features, classes)
        with torch.no_grad():
            generator = torch.Generator().manual_seed(features * 10 + classes)
            self.linear.weight.copy_(torch.randn(classes, features, generator=generator))
            self.linear.bias.zero_()
        self.dropout = torch.nn.Dropout(0.5)

    def forward(self, inputs):
        return self.dropout(self.linear(inputs))


class _Rows(mdl.Dataset):
    """``(features[i], labels[i])``, and a number drawn where the row is read, added to
    nothing: reading draws from the global generator of the process that reads."""

    def __init__(self, features, labels):
        self.features, self.labels = features, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        torch.rand(1)  # an augmentation would draw here
        return self.features[i], self.labels[i]


def _evaluation_cases() -> list[Case]:
    def case(rows, classes, workers, training, hint):
        return Case({"rows": rows, "classes": classes, "num_workers": workers,
                     "training": training}, hint=hint,
                    description=(f"a model of {classes} classes with dropout, in "
                                 f"{'training' if training else 'evaluation'} mode; a "
                                 f"DataLoader of {rows} rows, batch_size=4, "
                                 f"num_workers={workers}, no generator"))

    return [
        case(10, 3, 0, True, "the accuracy: the share of rows whose largest score is the "
                             "label, over every batch, in evaluation mode (no dropout)"),
        case(9, 2, 2, True, "iterating the loader draws a base seed from the global "
                            "generator, here too: put the generator's state back afterwards "
                            "(torch.random.fork_rng, or get_rng_state and set_rng_state)"),
        case(13, 4, 0, False, "a model in evaluation mode stays in evaluation mode; one in "
                              "training mode goes back to training mode"),
        case(4, 2, 1, True, "one batch, one worker: the same"),
    ]


def _use_evaluation(implementation, case: Case) -> dict:
    inputs = case.inputs
    generator = torch.Generator().manual_seed(inputs["rows"])
    features = torch.randn(inputs["rows"], 5, generator=generator)
    labels = torch.randint(0, inputs["classes"], (inputs["rows"],), generator=generator)
    model = _Scorer(5, inputs["classes"])
    model.train(inputs["training"])
    workers = inputs["num_workers"]
    loader = DataLoader(_Rows(features, labels), batch_size=4, num_workers=workers,
                        multiprocessing_context="fork" if workers else None)
    accuracy = implementation(model, loader)
    return {"accuracy": accuracy,
            "the model's mode afterwards": "training" if model.training else "evaluation",
            "torch.rand(3) afterwards (the global generator)": torch.rand(3)}


def _torch_evaluation(model, loader):
    """The oracle: the accuracy with dropout off, and the global generator left alone."""
    state, was_training = torch.get_rng_state(), model.training
    model.eval()
    with torch.no_grad():
        scores = [(model(x).argmax(dim=1) == y).sum().item() for x, y in loader]
    torch.set_rng_state(state)
    model.train(was_training)
    return sum(scores) / len(loader.dataset)


_EVALUATION_RULES = {
    "accuracy": "the share of rows whose largest score is the label, in evaluation mode "
                "(no dropout), over every row of every batch",
    "the model's mode afterwards": "leave the model in the mode it came in: a model in "
                                   "training mode goes back to training mode",
    "torch.rand(3) afterwards (the global generator)": (
        "iterating the loader (and reading its rows) drew from the global generator: keep "
        "its state and put the generator's state back afterwards (torch.random.fork_rng, or "
        "get_rng_state and set_rng_state)"),
}


def _compare_evaluation(expected, got) -> str | None:
    """The first difference, with what it means."""
    if isinstance(got, dict) and set(got) == set(expected):
        for key, meaning in _EVALUATION_RULES.items():
            problem = difference(expected[key], got[key], key, tolerance=(1e-6, 1e-9))
            if problem is not None:
                return f"{problem}: {meaning}"
    return difference(expected, got, tolerance=(1e-6, 1e-9))


register(Exercise(
    reference=solutions.evaluate_quietly,
    oracle=_torch_evaluation,
    cases=_evaluation_cases,
    run=_use_evaluation,
    compare=_compare_evaluation,
    hint=("in evaluation mode, count the rows whose largest score is the label; iterating "
          "the loader draws from the global generator, so keep its state and put it back; "
          "leave the model in the mode it came in"),
    time_limit=10.0,
    expected_from="the accuracy in evaluation mode, and the global generator as it was",
    rules=(
        Rule("the share of rows whose largest score is the label, dropout off",
             (1, 2, 3, 4)),
        Rule("the global generator as it was: iterating the loader drew a base seed",
             (1, 2, 3, 4)),
        Rule("the model left in the mode it came in",
             (1, 3)),
    ),
    goals=(3,),
))


# ---------------------------------------------------------------------------------------
# Check yourself

def _base_seeds_of_persistent_workers() -> int:
    """The real thing: torch's loader with persistent workers, three epochs, the base seeds
    its iterators draw in this process counted."""
    from minidataloader_course.chapters.ch13.capstone import seed_draws

    with _quiet_loader_warnings():
        loader = DataLoader(range(8), batch_size=4, num_workers=2, persistent_workers=True)
        with seed_draws() as counts:
            for _ in range(3):
                list(loader)
    del loader
    return counts["__init__", "_MultiProcessingDataLoaderIter"]


register(Prediction(
    "ch13-persistent-base-seeds", measure=_base_seeds_of_persistent_workers,
    why="one: the first epoch makes the iterator and its workers, which draws the base seed; "
        "the later epochs reset that iterator and draw none",
    mistakes={3: "a new iterator draws a base seed, but with persistent workers the loader "
                 "keeps its iterator: the second and third epochs reset it, without a draw",
              0: "the workers need a seed: the first iterator draws one, in the main process",
              2: "one base seed per worker? No: one per iterator; each worker adds its id"},
    goals=(3,),
))

register(Choice(
    "ch13-augmentation-proves-seeds", answer="c", why={
        "a": "the order of the samples comes from the sampler, in the main process: the same "
             "order with different worker seeds would give different shifts, and losses",
        "b": "RandomShift runs where the sample is read: with num_workers=2, in the workers",
        "d": "fork or spawn, torch seeds each worker with base_seed + worker_id: the start "
             "method does not decide the shifts",
    }, goals=(1, 2)))

register(Choice(
    "ch13-three-workers", answer="b", why={
        "a": "batch 0 goes to worker 0 with two workers or three, seeded base_seed + 0 both "
             "times: its shifts, and its loss, are the same",
        "c": "batch 2 goes to worker 2 with three workers, but to worker 0 with two: its "
             "shifts differ already",
        "d": "the samples of each batch are the same, but the shifts of a batch depend on the "
             "worker that reads it",
    }, goals=(2,)))

register(Choice(
    "ch13-torch-file", answer="b", why={
        "a": "dataloader.py starts the workers and talks to them, but what runs inside one is "
             "elsewhere",
        "c": "signal_handling.py notices dead workers from the main process; it seeds nothing",
        "d": "sampler.py makes the indices, in the main process",
    }, goals=(4,)))

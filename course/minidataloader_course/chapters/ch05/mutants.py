"""Chapter 5: plausible wrong answers to its exercises, written as changes to their
solutions' source; the checks must refuse each one with a verdict that names the
rule (``says``). See :class:`~minidataloader_course.checker.framework.Mutant`."""

from minidataloader_course.checker.framework import mutant as m

# The debugging lab's four bugs, as changes to the mended LabLoader: each is a mutant of its
# own, and all four together make the broken loader the lab hands out (lab.py builds it from
# these, and a test holds the workbook's stub to it).
BASE_SEED_LAST = [
    ("        # the base seed first, as torch's iterator draws it: before the sampler's draws\n"
     "        self.base_seed = torch.empty((), dtype=torch.int64).random_(\n"
     "            generator=self.generator).item()\n", ""),
    ("\n\n    def collate(self, samples):",
     "\n        # a base seed per epoch, as torch's iterator draws one\n"
     "        self.base_seed = torch.empty((), dtype=torch.int64).random_(\n"
     "            generator=self.generator).item()\n\n    def collate(self, samples):"),
]
LAST_BATCH_LOST = [
    ("        if samples:  # the short last batch\n            yield self.collate(samples)\n", ""),
    ("        return -(-len(self.sampler) // self.batch_size)  # a short last batch counts",
     "        return len(self.sampler) // self.batch_size"),
]
FIELDS_MIXED = [
    ("        return {key: default_collate([sample[key] for sample in samples])\n"
     "                for key in samples[0]}",
     "        keys = sorted(samples[0])  # the same order in every batch\n"
     "        columns = zip(*(sample.values() for sample in samples))\n"
     "        return {key: default_collate(list(column)) for key, column in zip(keys, columns)}"),
]
RESEEDED = [
    ("            self.sampler = SequentialSampler(dataset)\n",
     "            self.sampler = SequentialSampler(dataset)\n"
     "        if generator is not None:\n"
     "            self.seed = generator.initial_seed()  # to make every epoch reproducible\n"),
    ("    def __iter__(self):  # one epoch\n",
     "    def __iter__(self):  # one epoch\n"
     "        if self.generator is not None:\n"
     "            self.generator.manual_seed(self.seed)\n"),
]
FOUR_BUGS = RESEEDED + BASE_SEED_LAST + LAST_BATCH_LOST + FIELDS_MIXED

MUTANTS = [
    m("check_loader_arguments", "takes True for a batch size",
      [("if isinstance(batch_size, bool) or not isinstance(batch_size, int)",
        "if not isinstance(batch_size, int)")],
      "refuses bools", breaks=10),
    m("check_loader_arguments", "refuses a timeout without workers, as the constructor's rule",
      [("    # A timeout without workers is accepted here, as torch's constructor accepts it: the\n"
        "    # single-process iterator refuses it when the epoch starts.\n",
        "    if timeout != 0 and num_workers == 0:\n"
        "        raise AssertionError(\"timeout needs num_workers > 0\")\n")],
      "accepted when the loader is built", breaks=11),
    m("check_loader_arguments", "checks num_workers but not the timeout",
      [("    if timeout < 0:\n        raise ValueError(f\"timeout should be >= 0, got {timeout}\")\n",
        "")],
      "timeout must be >= 0", breaks=2),
    m("check_loader_arguments", "forgets that a sampler excludes shuffle=True",
      [("    if sampler is not None and shuffle:\n"
        "        raise ValueError(\"pass sampler or shuffle=True, not both\")\n", "")],
      "both decide the order", breaks=5),
    m("check_loader_arguments", "lets a batch_sampler come with drop_last=True",
      [("if batch_size != 1 or shuffle or sampler is not None or drop_last:",
        "if batch_size != 1 or shuffle or sampler is not None:")],
      "excludes drop_last", breaks=6),
    m("check_loader_arguments", "lets batch_size=None drop its last batch",
      [("    elif batch_size is None:\n        if drop_last:\n"
        "            raise ValueError(\"batch_size=None makes no batches: there is no last one to drop\")\n",
        "    elif batch_size is None:\n        pass\n")],
      "makes no batches", breaks=7),
    m("check_loader_arguments", "lets the loader shuffle a stream",
      [("if shuffle not in (None, False):", "if shuffle not in (None, False, True):")],
      "cannot be shuffled", breaks=4),
    m("check_loader_arguments", "allows prefetch_factor without workers",
      [("if prefetch_factor is not None and num_workers == 0:",
        "if prefetch_factor is not None and num_workers < 0:")],
      "must stay None", breaks=3),
    m("check_loader_arguments", "takes shuffle=None (the default) for shuffle=True",
      [("if sampler is not None and shuffle:", "if sampler is not None and shuffle is not False:")],
      "shuffle=None (the default) is not shuffle=True", breaks=1),
    m("check_loader_arguments", "accepts a batch size of 0",
      [("or batch_size <= 0:", "or batch_size < 0:")],
      "positive int", breaks=8),
    m("check_loader_arguments", "refuses shuffle=False for a stream",
      [("if shuffle not in (None, False):", "if shuffle is not None:")],
      "tolerates shuffle=False", breaks=9),
    m("loader_len", "counts the dataset even when a sampler is given",
      [("count = len(sampler)", "count = len(dataset)")],
      "a sampler of 3 indices", breaks=1),
    m("loader_len", "rounds down without drop_last",
      [("return -(-count // batch_size)", "return count // batch_size")],
      "3 full batches and one of 1", breaks=1),
    m("loader_len", "gives 0 for a stream without __len__",
      [("        count = len(dataset)  # a guess the stream makes; TypeError if it has no __len__\n",
        "        try:\n            count = len(dataset)\n        except TypeError:\n            return 0\n")],
      "raises TypeError", breaks=3),
    m("loader_len", "divides by the batch size even without batching",
      [("    if batch_size is None:\n        return count  # no batching: one item per sample\n", "")],
      "batch_size=None", breaks=2),
    m("loader_len", "counts the sampler's indices by iterating it",
      [("count = len(sampler)  # the sampler, not the dataset, sets the number of samples",
        "count = sum(1 for _ in sampler)")],
      "changed its input `sampler` in place", breaks=4),
    m("MapFetcher", "never calls __getitems__",
      [('if getattr(self.dataset, "__getitems__", None):', "if False:")],
      "ONE call per batch", breaks=3),
    m("MapFetcher", "collates with torch's default_collate instead of its collate_fn",
      [("return self.collate_fn(samples)",
        "from torch.utils.data import default_collate\n        return default_collate(samples)")],
      "your code used torch.utils.data.default_collate", breaks=2),
    m("MapFetcher", "returns the samples without collating them",
      [("return self.collate_fn(samples)", "return samples")],
      "collate_fn(samples)", breaks=2),
    m("MapFetcher", "skips the indices past the end of the dataset",
      [("samples = [self.dataset[index] for index in possibly_batched_index]",
        "samples = [self.dataset[index] for index in possibly_batched_index\n"
        "                       if index < len(self.dataset)]")],
      "IndexError", breaks=5),
    m("MapFetcher", "wraps a single index in a list",
      [("return self.collate_fn(self.dataset[possibly_batched_index])",
        "return self.collate_fn([self.dataset[possibly_batched_index]])")],
      "without auto_collation the index is a single index", breaks=4),
    m("MapFetcher", "reads the dataset's samples in __init__",
      [("        self.dataset = dataset\n",
        "        self.dataset = dataset\n        self.cache = [dataset[i] for i in range(len(dataset))]\n")],
      "samples read before the first fetch", breaks=1),
    m("IterableFetcher", "starts the stream again at every fetch",
      [("        self.stream = iter(dataset)  # one pass over the stream for the whole epoch\n",
        "        self.dataset = dataset\n"),
       ("        batch = []\n", "        batch = []\n        self.stream = iter(self.dataset)\n")],
      "never stopped", breaks=1),
    m("IterableFetcher", "ignores drop_last",
      [("if not batch or (self.drop_last and len(batch) < len(possibly_batched_index)):",
        "if not batch:")],
      "drop_last=True", breaks=1),
    m("IterableFetcher", "wraps a single sample in a list",
      [("return self.collate_fn(next(self.stream))", "return self.collate_fn([next(self.stream)])")],
      "collate_fn(one sample)", breaks=2),
    m("IterableFetcher", "zips the stream with the indices (zip takes one sample too many)",
      [("        batch = []\n        for _ in possibly_batched_index:  # only its length matters: the indices are None\n"
        "            try:\n                batch.append(next(self.stream))\n"
        "            except StopIteration:\n                break\n",
        "        batch = [sample for sample, _ in zip(self.stream, possibly_batched_index)]\n")],
      "numbers read when the first batch came back", breaks=3),
    m("SingleProcessIterator", "counts samples in len()",
      [("return len(self.loader)", "return len(self.loader.dataset)")],
      "len(iterator)", breaks=1),
    m("SingleProcessIterator", "counts the batches in len() by iterating the batch sampler",
      [("return len(self.loader)", "return sum(1 for _ in self.loader.batch_sampler)")],
      "len(iterator) drew no random number", breaks=1),
    m("SingleProcessIterator", "draws the base seed at the first next()",
      [("        self.base_seed = torch.empty((), dtype=torch.int64).random_(\n"
        "            generator=loader.generator).item()\n", ""),
       ("        return self.fetcher.fetch(next(self.indices))",
        "        if not hasattr(self, 'base_seed'):\n"
        "            self.base_seed = torch.empty((), dtype=torch.int64).random_(\n"
        "                generator=self.loader.generator).item()\n"
        "        return self.fetcher.fetch(next(self.indices))")],
      "draws random_ (1 int64 number) from the loader's generator between the marks "
      "«SingleProcessIterator(loader) made» and «the first next()»", "open Hint 1", breaks=4),
    m("SingleProcessIterator", "draws no base seed",
      [("        self.base_seed = torch.empty((), dtype=torch.int64).random_(\n"
        "            generator=loader.generator).item()\n", "")],
      "does not draw random_ (1 int64 number) from the loader's generator", breaks=4),
    m("SingleProcessIterator", "collates with its own default_collate, not the loader's collate_fn",
      [("loader.collate_fn, loader.drop_last)", "default_collate, loader.drop_last)")],
      "the loader's collate_fn", breaks=3),
    m("SingleProcessIterator", "forgets the IterableDataset: always a MapFetcher",
      [("fetcher = IterableFetcher if stream else MapFetcher", "fetcher = MapFetcher")],
      "an IterableFetcher over it", breaks=3),
    m("SingleProcessIterator", "always iterates the batch sampler",
      [("index_sampler = loader.batch_sampler if batched else loader.sampler",
        "index_sampler = loader.batch_sampler")],
      "batch_size=None", breaks=2),
    m("SingleProcessIterator", "lets a timeout through without workers",
      [("        if loader.timeout != 0:  # torch's check, after the draw: a timeout waits for workers\n"
        "            raise AssertionError(\"a timeout waits for worker processes: it needs num_workers > 0\")\n",
        "")],
      "AssertionError", breaks=5),
    m("DataLoader", "shuffles without the loader's generator",
      [("RandomSampler(dataset, generator=generator)", "RandomSampler(dataset)")],
      "a RandomSampler with the loader's generator", breaks=1),
    m("DataLoader", "collates single samples with default_collate",
      [("default_collate if batch_sampler is not None else default_convert", "default_collate")],
      "default_convert instead of default_collate", breaks=3),
    m("DataLoader", "keeps batch_size and drop_last with a batch_sampler",
      [("            batch_size, drop_last = None, False\n", "            pass\n")],
      "loader.batch_size is None", breaks=2),
    m("DataLoader", "does not check its arguments",
      [("        check_loader_arguments(dataset, batch_size, shuffle, sampler, batch_sampler,\n"
        "                               num_workers, drop_last, timeout, prefetch_factor,\n"
        "                               persistent_workers)\n", "")],
      "check_loader_arguments refuses shuffle with a sampler", breaks=5),
    m("DataLoader", "gives a stream a SequentialSampler",
      [("        if isinstance(dataset, IterableDataset):\n"
        "            sampler = itertools.repeat(None)  # a stream has no indices: None, forever\n"
        "        elif sampler is None:\n",
        "        if sampler is None:\n")],
      "IterableDataset", breaks=4),
    m("DataLoader", "gives the RandomSampler a generator of its own when the loader has none",
      [("RandomSampler(dataset, generator=generator)",
        "RandomSampler(dataset, generator=generator or torch.Generator())")],
      "draws", breaks=6),
    m("DataLoader", "counts its batches in len() by iterating the batch sampler",
      [("        return loader_len(self.dataset, self.batch_size, self.sampler, self.batch_sampler,\n"
        "                          self.drop_last)\n",
        "        return sum(1 for _ in self.batch_sampler)\n")],
      "len(loader) drew no random number", breaks=1),
    m("DataLoader", "refuses a timeout without workers when it is built",
      [("                               persistent_workers)\n",
        "                               persistent_workers)\n"
        "        if timeout != 0 and num_workers == 0:\n"
        "            raise AssertionError(\"timeout needs num_workers > 0\")\n")],
      "iter(loader)", breaks=7),
    m("LabLoader", "as handed out: all four bugs",
      FOUR_BUGS, "under its own name", breaks=2),
    m("LabLoader", "loses the short last batch",
      LAST_BATCH_LOST, "short one of 2", breaks=1),
    m("LabLoader", "keeps the last batch but len() still rounds down",
      LAST_BATCH_LOST[1:], "len(loader) counts", breaks=1),
    m("LabLoader", "pairs the sorted keys with the fields in the samples' order",
      FIELDS_MIXED, "under its own name", breaks=2),
    m("LabLoader", "reseeds the generator every epoch",
      RESEEDED, "each epoch a new order", breaks=3),
    m("LabLoader", "draws the base seed after the sampler's draws",
      BASE_SEED_LAST, "in another order", breaks=4),
]

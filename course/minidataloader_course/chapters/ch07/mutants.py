"""Chapter 7: plausible wrong answers to its exercises, written as changes to their
solutions' source; the checks must refuse each one with a verdict that names the
rule (``says``). See :class:`~minidataloader_course.checker.framework.Mutant`."""

from minidataloader_course.checker.framework import mutant as m

MUTANTS = [
    m("generate_state", "forgets the high 32 bits of the base seed",
      [("words = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]",
        "words = [worker_id, base_seed & 0xFFFFFFFF, 0, 0]")],
      "needs more than 32 bits", breaks=2),
    m("generate_state", "leaves the worker id out",
      [("words = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]",
        "words = [0, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]")],
      "the worker id, the base seed's low 32 bits", breaks=1),
    m("generate_state", "returns numpy's array, not a list of ints",
      [(".generate_state(4).tolist()", ".generate_state(4)")],
      "expected a list", "numpy", breaks=1),
    m("seed_worker", "seeds with the worker id",
      [("np.random.default_rng(info.seed)", "np.random.default_rng(worker_id)")],
      "made from the worker's seed", breaks=1),
    m("seed_worker", "seeds numpy's global generator instead of the dataset's",
      [("info.dataset.rng = np.random.default_rng(info.seed)", "np.random.seed(info.seed % 2**32)")],
      "give that copy a new numpy Generator", breaks=1),
    m("count_duplicate_augmentations", "compares rows within a batch only",
      [("    for batch in batches:\n        for params in batch.tolist():",
        "    for batch in batches:\n        seen = set()\n        for params in batch.tolist():")],
      "across batches", breaks=1),
    m("count_duplicate_augmentations", "joins the batches with torch.cat (which refuses no batch)",
      [("    for batch in batches:\n        for params in batch.tolist():",
        "    for params in torch.cat(list(batches)).tolist():\n        if True:")],
      "nothing to count: 0", breaks=3),
    m("count_duplicate_augmentations", "rounds before comparing",
      [("key = tuple(params)", "key = tuple(round(p, 6) for p in params)")],
      "compare exactly", breaks=2),
    m("ShardedStream", "forgets that there may be no worker",
      [("        if info is None:  # no workers: the main process reads all\n"
        "            return iter(self.items)\n", "")],
      "get_worker_info() is None", breaks=1),
    m("ShardedStream", "gives every worker every item",
      [("return iter(self.items[info.id::info.num_workers])", "return iter(self.items)")],
      "worker 0 reads items 0, 3, 6, 9", breaks=2),
    m("ShardedStream", "gives each worker a block instead of a stride",
      [("return iter(self.items[info.id::info.num_workers])",
        "size = -(-len(self.items) // info.num_workers)\n"
        "        return iter(self.items[info.id * size:(info.id + 1) * size])")],
      "strided", breaks=2),
    m("worker_loop, seeded", "computes the seeds but does not install them",
      [("    random.seed(seed)\n    torch.manual_seed(seed)\n"
        "    np.random.seed(generate_state(base_seed, worker_id))  # numpy takes no 64-bit seed\n",
        "    numpy_seed = generate_state(base_seed, worker_id)\n")],
      "seed torch and random with base_seed + worker_id", breaks=1),
    m("worker_loop, seeded", "seeds numpy with the worker's seed",
      [("np.random.seed(generate_state(base_seed, worker_id))", "np.random.seed(seed % 2**32)")],
      "numpy with generate_state", breaks=1),
    m("worker_loop, seeded", "makes the fetcher before telling the worker who it is",
      [("    fetcher_class = IterableFetcher if isinstance(dataset, IterableDataset) else MapFetcher\n"
        "    fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)\n", ""),
       ("    torch.set_num_threads(1)\n",
        "    torch.set_num_threads(1)\n"
        "    fetcher_class = IterableFetcher if isinstance(dataset, IterableDataset) else MapFetcher\n"
        "    fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)\n")],
      "make the fetcher after setting _worker_info", breaks=5),
    m("worker_loop, seeded", "calls init_fn first, before the seeds and the info",
      [("    if init_fn is not None:\n        init_fn(worker_id)  # after the seeds and the info: it may use both\n", ""),
       ("    seed = base_seed + worker_id  # every worker a seed of its own\n",
        "    if init_fn is not None:\n        init_fn(worker_id)\n"
        "    seed = base_seed + worker_id  # every worker a seed of its own\n")],
      "call init_fn(worker_id) after the seeds and the info", breaks=3),
    m("worker_loop, seeded", "reads on after its stream ended",
      [("        if ended:\n            continue  # nothing left to give: the main process knows, "
        "and skips these\n", "")],
      "answer no more tasks", breaks=4),
    m("worker_loop, seeded", "seeds the worker but never tells it who it is",
      [("    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,\n"
        "                              dataset=dataset)\n", "")],
      "set the module's _worker_info", breaks=2),
    m("MultiProcessIterator, streams", "ends the epoch at the first stream that ends",
      [("            if isinstance(data, StreamEnded):  # that worker's copy of the stream ran out\n",
        "            if isinstance(data, StreamEnded):\n                self._shutdown()\n"
        "                raise StopIteration\n")],
      "the epoch ends when no worker is left", breaks=2),
    m("MultiProcessIterator, streams", "hands a StreamEnded out as a batch",
      [("            if isinstance(data, StreamEnded):  # that worker's copy of the stream ran out\n",
        "            if False:\n")],
      "StreamEnded", breaks=1),
    m("MultiProcessIterator, streams", "waits for every stream to end, with a map-style dataset too",
      [("            if self.next_number == self.sent:\n",
        "            if self.next_number == self.sent and not any(self.active):\n")],
      "every worker stays active", breaks=3),
]

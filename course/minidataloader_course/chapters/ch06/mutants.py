"""Chapter 6: plausible wrong answers to its exercises, written as changes to their
solutions' source; the checks must refuse each one with a verdict that names the
rule (``says``). See :class:`~minidataloader_course.checker.framework.Mutant`."""

from minidataloader_course.checker.framework import mutant as m

# the names of the iterator's first three steps (chapters/ch06/checks.py, STEP_NAMES)
ONE = "MultiProcessIterator, one worker"
SEVERAL = "MultiProcessIterator, several workers"
IN_ORDER = "MultiProcessIterator, in order"

MUTANTS = [
    m("worker_loop", "dies on a bad sample",
      [("        try:\n            batch = fetcher.fetch(indices)\n"
        "        except Exception as error:  # a bad sample must not kill the worker:\n"
        "            batch = error  # send the error back, and go on\n",
        "        batch = fetcher.fetch(indices)\n")],
      "must not end the worker", breaks=3),
    m("worker_loop", "guards the reading but not the collating",
      [("        try:\n            batch = fetcher.fetch(indices)\n"
        "        except Exception as error:  # a bad sample must not kill the worker:\n"
        "            batch = error  # send the error back, and go on\n",
        "        try:\n            samples = [dataset[i] for i in indices]\n"
        "        except Exception as error:\n            result_queue.put((batch_number, error))\n"
        "            continue\n        batch = collate_fn(samples)\n")],
      "collating can fail too", breaks=3),
    m("worker_loop", "goes on after the None sentinel",
      [("        if task is None:  # the sentinel: no more work\n            return",
        "        if task is None:\n            continue")],
      "None sentinel", breaks=1),
    m("worker_loop", "numbers the batches with a count of its own",
      [("    while True:\n        task = index_queue.get()  # wait for the next task\n",
        "    sent = 0\n    while True:\n        task = index_queue.get()  # wait for the next task\n"),
       ("        result_queue.put((batch_number, batch))",
        "        result_queue.put((sent, batch))\n        sent += 1")],
      "the batch number of its task", breaks=2),
    m("worker_loop", "marks each task done, as with a queue.Queue",
      [("        result_queue.put((batch_number, batch))",
        "        result_queue.put((batch_number, batch))\n        index_queue.task_done()")],
      "must work in a worker process, with multiprocessing queues", breaks=4),
    # the iterator's steps (checks.STEP_NAMES), each mutated in its own assembled source
    m(ONE, "leaves the worker running at the end of the epoch",
      [("            self._shutdown()\n            raise StopIteration",
        "            raise StopIteration")],
      "stop the worker", breaks=1),
    m(ONE, "cuts the sampler's indices into batches itself (drop_last forgotten)",
      [("self.indices = iter(loader.batch_sampler if batched else loader.sampler)",
        "order, size = list(loader.sampler), loader.batch_size or 1\n"
        "        self.indices = iter([order[i:i + size] for i in range(0, len(order), size)]\n"
        "                            if batched else order)")],
      "loader.batch_sampler", breaks=2),
    m(ONE, "draws the base seed from the global generator, whatever the loader's",
      [("random_(\n            generator=loader.generator)", "random_()")],
      "from loader.generator", breaks=3),
    m(ONE, "tells the worker to collate, with batch_size=None too",
      [("self.done_event, batched,", "self.done_event, True,")],
      "auto_collation=False", breaks=4),
    m(SEVERAL, "sends every task to worker 0",
      [("        worker_id = next(self.turn)\n", "        worker_id = 0\n")],
      "round robin", breaks=1),
    m(SEVERAL, "sends prefetch_factor tasks in all, not per worker",
      [("for _ in range(loader.prefetch_factor * self.num_workers):",
        "for _ in range(loader.prefetch_factor):")],
      "prefetch_factor * num_workers tasks", breaks=2),
    m(SEVERAL, "sends no task when it hands a batch out",
      [("        self._dispatch()  # one batch handed out, one more task sent\n", "")],
      "one more task", breaks=2),
    m(SEVERAL, "stops only the first worker",
      [("        for index_queue in self.index_queues:\n            index_queue.put(None)\n",
        "        self.index_queues[0].put(None)\n")],
      "stop every worker", breaks=3),
    m(IN_ORDER, "hands the batches out as they arrive",
      [("            if number == self.next_number:\n", "            if True:\n")],
      "in order", breaks=1),
    m(IN_ORDER, "keeps one early batch aside, the last that came",
      [("self.waiting[number] = data  # early", "self.waiting = {number: data}  # early")],
      "reorder buffer", breaks=1),
    m(IN_ORDER, "reads every result in flight before handing one out",
      [("            number, data = self._get()\n"
        "            if number == self.next_number:\n"
        "                return self._hand_out(number, data)\n"
        "            self.waiting[number] = data  # early: it waits in the reorder buffer\n",
        "            for _ in range(self.sent - self.next_number - len(self.waiting)):\n"
        "                number, data = self._get()\n"
        "                self.waiting[number] = data\n")],
      "as soon as it arrives", breaks=2),
    m(IN_ORDER, "sends a task for every batch received, early ones included",
      [("            self.waiting[number] = data  # early: it waits in the reorder buffer\n",
        "            self.waiting[number] = data  # early: it waits in the reorder buffer\n"
        "            self._dispatch()\n")],
      "one task per batch handed out", breaks=3),
    m("MultiProcessIterator", "sends no task when it hands a batch out",
      [("        self._dispatch()  # one batch handed out, one more task sent\n", "")],
      "each batch handed out sends one more task", breaks=3),
    m("MultiProcessIterator", "reads every result in flight before handing one out",
      [("            number, data = self._get()\n"
        "            if number == self.next_number or not self.loader.in_order:\n"
        "                return self._hand_out(number, data)\n"
        "            self.waiting[number] = data  # early: it waits in the reorder buffer\n",
        "            for _ in range(self.sent - self.next_number - len(self.waiting)):\n"
        "                number, data = self._get()\n"
        "                self.waiting[number] = data\n")],
      "as soon as it arrives", breaks=6),
    m("MultiProcessIterator", "hands the batches out as they arrive, in_order or not",
      [("if number == self.next_number or not self.loader.in_order:", "if True:")],
      "in order", breaks=1),
    m("MultiProcessIterator", "keeps the order with in_order=False too",
      [("if number == self.next_number or not self.loader.in_order:",
        "if number == self.next_number:")],
      "hand out whatever arrives first", breaks=7),
    m("MultiProcessIterator", "deals round robin with in_order=False too, however busy the worker",
      [("            if self.loader.in_order or self.tasks[worker_id] < self.loader.prefetch_factor:\n"
        "                break  # out of order, a worker takes a task only when it has room\n",
        "            break\n")],
      "fewer than prefetch_factor tasks", breaks=9),
    m("MultiProcessIterator", "keeps one early batch aside, the last that came",
      [("self.waiting[number] = data  # early", "self.waiting = {number: data}  # early")],
      "reorder buffer", breaks=2),
    m("MultiProcessIterator", "draws the base seed from the global generator, whatever the loader's",
      [("random_(\n            generator=loader.generator)", "random_()")],
      "draw the base seed first, from loader.generator", breaks=4),
    m("MultiProcessIterator", "tells the workers to collate, with batch_size=None too",
      [("self.done_event, batched,", "self.done_event, True,")],
      "auto_collation=False", breaks=5),
    m("MultiProcessIterator", "hands a worker's exception out as a batch",
      [("        if isinstance(data, Exception):  # a worker's error: raised in its batch's turn\n"
        "            raise data\n", "")],
      "raise it when batch 2's turn comes", breaks=8),
    m("MultiProcessIterator", "raises a worker's exception before sending the next task",
      [("        self._dispatch()  # one batch handed out, one more task sent\n"
        "        if isinstance(data, Exception):  # a worker's error: raised in its batch's turn\n"
        "            raise data\n",
        "        if isinstance(data, Exception):  # a worker's error: raised in its batch's turn\n"
        "            raise data\n"
        "        self._dispatch()  # one batch handed out, one more task sent\n")],
      "raise after sending it", breaks=10),
    m("MultiProcessIterator", "leaves the workers running at the end of the epoch",
      [("                self._shutdown()\n                raise StopIteration",
        "                raise StopIteration")],
      "stop the workers", breaks=1),
]

"""Chapter 9: plausible wrong answers to its exercises, written as changes to their
solutions' source; the checks must refuse each one with a verdict that names the
rule (``says``). See :class:`~minidataloader_course.checker.framework.Mutant`."""

from minidataloader_course.checker.framework import mutant as m

MUTANTS = [
    m("pin_batch", "turns every mapping into a plain dict",
      [("        pinned = copy.copy(data)  # the same type: a dict, an OrderedDict, a defaultdict\n"
        "        pinned.update({key: pin_batch(item, pin_fn) for key, item in data.items()})\n"
        "        return pinned",
        "        return {key: pin_batch(item, pin_fn) for key, item in data.items()}")],
      "an OrderedDict stays an OrderedDict", breaks=2),
    m("pin_batch", "pins the items of a dict in place",
      [("        pinned = copy.copy(data)  # the same type: a dict, an OrderedDict, a defaultdict\n",
        "        pinned = data\n")],
      "data afterwards (it must not change)", breaks=5),
    m("pin_batch", "forgets namedtuples: builds one as it builds a list, from a generator",
      [('    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple\n'
        "        return type(data)(*(pin_batch(item, pin_fn) for item in data))\n", "")],
      "a namedtuple: build the same type", breaks=1),
    m("pin_batch", "gives pin_fn an object that pins itself",
      [('    if hasattr(data, "pin_memory"):  # a batch type that pins itself\n'
        "        return data.pin_memory()\n", "")],
      "pin_memory() method", breaks=4),
    m("pin_batch", "treats a string as a sequence of characters",
      [("    if isinstance(data, (str, bytes)):\n        return data\n", "")],
      "leave strings", breaks=3),
    m("copy_and_step", "says a copy without overlap is hidden when it is shorter",
      [("hidden = copy_ms <= compute_ms if overlap else copy_ms == 0", "hidden = copy_ms <= compute_ms")],
      "hidden only when there is nothing to copy", breaks=1),
    m("copy_and_step", "adds copy and compute even with overlap",
      [("step_ms = max(copy_ms, compute_ms) if overlap else copy_ms + compute_ms",
        "step_ms = copy_ms + compute_ms")],
      "the longer of copy and compute", breaks=1),
    m("copy_and_step", "takes a GB for 2**30 bytes",
      [("copy_ms = batch_bytes / (bandwidth_gbps * 1e9) * 1e3", "copy_ms = batch_bytes / (bandwidth_gbps * 2**30) * 1e3")],
      "x 1e9 bytes/s", breaks=1),
    m("copy_compute_timeline", "never overlaps",
      [("copy_start = compute_start if overlap else compute_end", "copy_start = compute_end")],
      "the next copy starts when a step starts", breaks=1),
    m("copy_compute_timeline", "starts a step before the previous one is over",
      [("compute_start = max(copy_end, compute_end)", "compute_start = copy_end")],
      "the previous step is over", breaks=1),
    m("pin_loop", "waits on the queue without a timeout",
      [("in_queue.get(timeout=0.1)", "in_queue.get()")],
      "to stop after done_event was set", breaks=2),
    m("pin_loop", "puts the pinned batch without its number",
      [("        out_queue.put((number, data))", "        out_queue.put(data)")],
      "put (number, pin_fn(batch)) on out_queue", breaks=1),
    m("pin_loop", "pins a worker's exception",
      [("if isinstance(number, int) and not isinstance(data, (Exception, StreamEnded)):",
        "if True:")],
      "pass it on as it is", breaks=3),
    m("pin_loop", "pins the acknowledgements and the ended streams too",
      [("if isinstance(number, int) and not isinstance(data, (Exception, StreamEnded)):",
        "if not isinstance(data, Exception):")],
      "only batches are pinned", breaks=4),
    m("pin_loop", "dies when pin_fn raises",
      [("            try:\n                data = pin_fn(data)\n            except Exception as error:\n"
        "                data = error  # raised when the loop reaches this batch\n",
        "            data = pin_fn(data)\n")],
      "when pin_fn raises", breaks=3),
    m("MultiProcessIterator, pinned", "starts no pin thread for a _pin_memory_fn",
      [("        if pin_fn is not None:  # or the pin thread's\n", "        if False:\n")],
      "with loader._pin_memory_fn set, start a thread", breaks=1),
    m("MultiProcessIterator, pinned", "leaves the pin thread running",
      [("            self.pin_done.set()\n            self.pin_thread.join()\n",
        "            pass\n")],
      "stop the thread at the end", breaks=1),
    m("copy_and_step", "adds copy and compute even when they overlap",
      [("step_ms = max(copy_ms, compute_ms) if overlap else copy_ms + compute_ms",
        "step_ms = copy_ms + compute_ms")],
      "the longer of copy and compute", breaks=2),
    m("copy_and_step", "calls a short copy hidden without overlap too",
      [("hidden = copy_ms <= compute_ms if overlap else copy_ms == 0",
        "hidden = copy_ms <= compute_ms")],
      "hidden only when there is nothing to copy", breaks=3),
    m("copy_compute_timeline", "starts the next copy after the step, overlap or not",
      [("copy_start = compute_start if overlap else compute_end", "copy_start = compute_end")],
      "the next copy starts when a step starts", breaks=2),
    m("MultiProcessIterator, pinned", "pins without asking whether there is an accelerator",
      [("            if torch.cuda.is_available():\n"
        "                pin_fn = functools.partial(pin_batch, pin_fn=torch.Tensor.pin_memory)\n"
        "            else:  # as torch: say so, and yield the batches unpinned\n"
        "                warnings.warn(",
        "            pin_fn = functools.partial(pin_batch, pin_fn=torch.Tensor.pin_memory)\n"
        "            if False:\n"
        "                warnings.warn(")],
      "no accelerator", breaks=4),
    m("MultiProcessIterator, pinned", "yields the batches unpinned without a word",
      [("            else:  # as torch: say so, and yield the batches unpinned\n"
        "                warnings.warn(", "            elif False:\n                warnings.warn(")],
      "a UserWarning that names 'pin_memory'", breaks=5),
    m("MultiProcessIterator, pinned", "reads the acknowledgements from the result queue",
      [("            resume_workers(self.index_queues, self.data_queue, self.workers)\n",
        "            resume_workers(self.index_queues, self.result_queue, self.workers)\n")],
      "the acknowledgements come through the pin thread too", breaks=2),
    m("MultiProcessIterator, pinned", "always starts the pin thread, passing batches on as they are",
      [("        if pin_fn is not None:  # or the pin thread's\n",
        "        pin_fn = pin_fn or (lambda batch: batch)  # nothing to pin: the batch as it is\n"
        "        if pin_fn is not None:  # or the pin thread's\n")],
      "no thread", breaks=3),
    m("copy_compute_timeline", "lays out the first batch before the loop",
      [("    copy_start, compute_end = 0.0, 0.0\n    for _ in range(batches):\n",
        "    timeline.append((0.0, copy_ms, copy_ms, copy_ms + compute_ms))  # waits for nothing\n"
        "    copy_start = copy_ms if overlap else copy_ms + compute_ms\n"
        "    compute_end = copy_ms + compute_ms\n"
        "    for _ in range(batches - 1):\n")],
      "batches=0", breaks=3),
]

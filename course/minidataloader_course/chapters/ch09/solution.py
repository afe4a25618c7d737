"""Chapter 9 (pin memory and the GPU): model solutions.

``pin_batch``, ``pin_loop`` and ``MultiProcessIterator`` are pieces of the learner's loader:
the iterator grows a thread that pins every batch on its way to the training loop.
"""

import copy
import functools
import itertools
import multiprocessing
import queue
import threading
import warnings
from collections.abc import Mapping, Sequence

import torch

from minidataloader_course.chapters.ch08 import solution as ch08
from minidataloader_course.chapters.ch08.solution import resume_workers, worker_loop
from minidataloader_course.learner.stubs.worker import StreamEnded


def pin_batch(data, pin_fn):
    if isinstance(data, torch.Tensor):
        return pin_fn(data)
    if hasattr(data, "pin_memory"):  # a batch type that pins itself
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, Mapping):
        pinned = copy.copy(data)  # the same type: a dict, an OrderedDict, a defaultdict
        pinned.update({key: pin_batch(item, pin_fn) for key, item in data.items()})
        return pinned
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(pin_batch(item, pin_fn) for item in data))
    if isinstance(data, Sequence):
        return type(data)(pin_batch(item, pin_fn) for item in data)
    return data  # numbers, None, ...: nothing to pin


def copy_and_step(batch_bytes, bandwidth_gbps, compute_ms, overlap):
    copy_ms = batch_bytes / (bandwidth_gbps * 1e9) * 1e3  # 1 GB = 1e9 bytes
    step_ms = max(copy_ms, compute_ms) if overlap else copy_ms + compute_ms
    # hidden: the copy adds nothing to the step; without overlap only an empty copy does not
    hidden = copy_ms <= compute_ms if overlap else copy_ms == 0
    return copy_ms, step_ms, hidden


def copy_compute_timeline(copy_ms, compute_ms, batches, overlap):
    timeline = []
    copy_start, compute_end = 0.0, 0.0
    for _ in range(batches):
        copy_end = copy_start + copy_ms
        compute_start = max(copy_end, compute_end)  # its batch, and a free GPU
        compute_end = compute_start + compute_ms
        timeline.append((copy_start, copy_end, compute_start, compute_end))
        # the next copy starts with this step (overlap), or after it
        copy_start = compute_start if overlap else compute_end
    return timeline


def pin_loop(in_queue, out_queue, done_event, pin_fn):
    while not done_event.is_set():
        try:
            number, data = in_queue.get(timeout=0.1)  # wake up to check
        except queue.Empty:
            continue
        # only batches are pinned: errors, ended streams, acknowledgements pass as they are
        if isinstance(number, int) and not isinstance(data, (Exception, StreamEnded)):
            try:
                data = pin_fn(data)
            except Exception as error:
                data = error  # raised when the loop reaches this batch
        out_queue.put((number, data))


class MultiProcessIterator(ch08.MultiProcessIterator):
    def __init__(self, loader):
        self.loader = loader
        self.num_workers = loader.num_workers
        batched = loader.batch_sampler is not None
        self.index_sampler = loader.batch_sampler if batched else loader.sampler
        self.base_seed = torch.empty((), dtype=torch.int64).random_(
            generator=loader.generator).item()
        context = loader.multiprocessing_context
        if context is None or isinstance(context, str):
            context = multiprocessing.get_context(context)
        self.result_queue = context.Queue()
        self.done_event = context.Event()
        self.index_queues, self.workers = [], []
        for worker_id in range(self.num_workers):
            index_queue = context.Queue()
            worker = context.Process(target=worker_loop, daemon=True, args=(
                loader.dataset, index_queue, self.result_queue, self.done_event, batched,
                loader.collate_fn, loader.drop_last, self.base_seed, loader.worker_init_fn,
                worker_id, self.num_workers))
            worker.start()
            self.index_queues.append(index_queue)
            self.workers.append(worker)
        self.data_queue = self.result_queue  # where the batches are read: the workers' queue,
        self.pin_thread = None
        pin_fn = getattr(loader, "_pin_memory_fn", None)  # a function of one batch, if set
        if pin_fn is None and loader.pin_memory:
            if torch.cuda.is_available():
                pin_fn = functools.partial(pin_batch, pin_fn=torch.Tensor.pin_memory)
            else:  # as torch: say so, and yield the batches unpinned
                warnings.warn("'pin_memory' argument is set as true but no accelerator is "
                              "found, then device pinned memory won't be used.", stacklevel=2)
        if pin_fn is not None:  # or the pin thread's
            self.data_queue = queue.Queue()
            self.pin_done = threading.Event()
            self.pin_thread = threading.Thread(target=pin_loop, daemon=True, args=(
                self.result_queue, self.data_queue, self.pin_done, pin_fn))
            self.pin_thread.start()
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        self.indices = iter(self.index_sampler)
        self.sent = 0
        self.next_number = 0
        self.worker_of = {}
        self.waiting = {}
        self.tasks = [0] * self.num_workers
        self.active = [True] * self.num_workers
        self.turn = itertools.cycle(range(self.num_workers))
        if not first_iter:  # the acknowledgements come through the pin thread too
            resume_workers(self.index_queues, self.data_queue, self.workers)
        for _ in range(loader.prefetch_factor * self.num_workers):
            self._dispatch()

    def _get(self):
        return self.data_queue.get()

    def _shutdown(self):
        if self.pin_thread is not None:  # first: it reads the result queue
            self.pin_done.set()
            self.pin_thread.join()
        for index_queue in self.index_queues:
            index_queue.put(None)
        for worker in self.workers:
            worker.join()

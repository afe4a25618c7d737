"""Chapter 10's debugging lab: ``BuggyIterator``, an iterator over a loader's batches with
workers, built like yours (chapter 6's design) on the package's worker loop, with three
bugs in it. The learner finds them with the trace tools (``TraceRecorder`` and the
queue-flow view, which see its events, and ``try_it``'s report of what it waited on and what
it stopped), and fixes them in ``RepairedIterator`` (the chapter's solution), checked
against torch. Each bug put back alone is one of the exercise's mutants.

It reads map-style datasets, in order (no ``in_order=False``), and hands out whatever the
workers send (a worker's error included): chapter 10's pieces do the rest.
"""

import itertools
import multiprocessing

import torch

from minidataloader import _tracing
from minidataloader.fetch import _DatasetKind
from minidataloader.worker import _worker_loop


class BuggyIterator:
    """One epoch of ``loader``'s batches, read by ``loader.num_workers`` worker processes.
    It reports its events to the trace (``_tracing.emit``), as the package's loader does."""

    def __init__(self, loader):
        self.loader = loader
        self.num_workers = loader.num_workers
        batched = loader.batch_sampler is not None
        self.indices = iter(loader.batch_sampler if batched else loader.sampler)
        base_seed = torch.empty((), dtype=torch.int64).random_(
            generator=loader.generator).item()
        context = loader.multiprocessing_context
        if context is None or isinstance(context, str):
            context = multiprocessing.get_context(context)
        self.result_queue, self.done_event = context.Queue(), context.Event()
        self.index_queues, self.workers = [], []
        for worker_id in range(self.num_workers):
            index_queue = context.Queue()
            worker = context.Process(target=_worker_loop, daemon=True, args=(
                _DatasetKind.Map, loader.dataset, index_queue, self.result_queue,
                self.done_event, batched, loader.collate_fn, loader.drop_last, base_seed,
                loader.worker_init_fn, worker_id, self.num_workers, _tracing.worker_folder()))
            worker.start()
            self.index_queues.append(index_queue)
            self.workers.append(worker)
        self.sent = 0  # batches sent to the workers: the next one gets this number
        self.next_number = 0  # the batch whose turn it is
        self.worker_of = {}  # batch number -> its worker, while it is in flight
        self.waiting = {}  # batch number -> a batch that came before its turn
        self.turn = itertools.cycle(range(self.num_workers))  # round robin
        self.shut_down = False
        _tracing.epoch_start(self, loader)
        for _ in range(loader.prefetch_factor * self.num_workers):
            self._dispatch()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

    def _dispatch(self):
        indices = next(self.indices, None)
        if indices is None:
            return  # the sampler is exhausted
        worker_id = next(self.turn)
        self.index_queues[worker_id].put((self.sent, indices))
        _tracing.emit("dispatch", batch=self.sent, worker=worker_id)
        self.worker_of[self.sent] = worker_id
        self.sent += 1

    def __next__(self):
        while True:
            if self.next_number == self.sent:  # nothing in flight: the epoch is over
                self._shutdown()
                raise StopIteration
            if self.waiting:  # a batch came early: hand it out
                number = min(self.waiting)
                _tracing.emit("reorder_leave", batch=number)
                return self._hand_out(number, self.waiting.pop(number))
            number, data = self.result_queue.get()
            _tracing.emit("received", batch=number, worker=self.worker_of[number])
            if number == self.next_number:
                return self._hand_out(number, data)
            _tracing.emit("reorder_enter", batch=number)
            self.waiting[number] = data

    def _hand_out(self, number, data):
        self.next_number += 1
        del self.worker_of[number]
        self._dispatch()  # one batch out, one more task in
        _tracing.emit("yielded", batch=number)
        return data

    def _shutdown(self):
        if self.shut_down:
            return
        self.shut_down = True
        _tracing.epoch_end(self)
        for worker_id in set(self.worker_of.values()):  # the workers with work in flight
            self.index_queues[worker_id].put(None)
        for worker in self.workers:
            worker.join()

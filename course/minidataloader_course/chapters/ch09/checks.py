"""Chapter 9 (pin memory and the GPU): the exercises and their hidden cases.

Nothing here needs an accelerator. Where the reader's code pins, it calls a ``pin_fn`` the
check hands it: a stand-in that copies the tensor (pinning copies it into page-locked
memory) and remembers the copy, so the check can tell which tensors went through it.
"""

from __future__ import annotations

import contextlib
import copy
import queue
import threading
import time
import warnings
from collections import OrderedDict, defaultdict, namedtuple

import torch

from minidataloader_course.chapters.ch09 import copy_time, pin_thread
from minidataloader_course.chapters.ch09 import solution as solutions
from minidataloader_course.chapters.multiprocess_cases import (
    ITERATOR_PIECES,
    TorchIterator,
    drain,
    finish_thread,
    iterator_case,
    loader_arguments,
    make_dataset,
    message_class,
    more_workers_than_cpus_is_fine,
    reference_loader,
    start_thread,
    use_iterator,
)
from minidataloader_course.checker.framework import Case, Exercise, Rule, register
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.shared.compare import close
from minidataloader_course.shared.processes import children

PIN_PIECES = ("minidataloader.pin_memory.pin_memory", "minidataloader.pin_memory._pin_memory_loop",
              "torch.utils.data._utils.pin_memory.pin_memory",
              "torch.utils.data._utils.pin_memory._pin_memory_loop")


class StandInPinning:
    """The check's ``pin_fn``: copies a tensor, as pinning does, and remembers the copies."""

    def __init__(self, limit_bytes: int | None = None):
        self.copies: list[torch.Tensor] = []  # kept alive, so that their ids stay theirs
        self.limit_bytes = limit_bytes

    def __call__(self, tensor):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"pin_fn pins tensors, but it was given {type(tensor).__name__}")
        if self.limit_bytes is not None and tensor.nelement() * tensor.element_size() > self.limit_bytes:
            raise RuntimeError("cannot pin this batch: out of page-locked memory")
        copy = tensor.clone()
        self.copies.append(copy)
        return copy

    def pinned(self, tensor) -> bool:
        return any(tensor is copy for copy in self.copies)

    def __deepcopy__(self, memo):
        return self  # like a function: copying the arguments of a call keeps the same one


class TokenBatch:
    """A batch type of its own, as a library may define one, with a ``pin_memory()`` method
    that the loader must call instead of looking inside. (On a machine with an accelerator
    it would call ``self.tokens.pin_memory()``; this one marks a copy: a stand-in.)"""

    def __init__(self, tokens, pinned: bool = False):
        self.tokens, self.pinned = tokens, pinned

    def pin_memory(self):
        return TokenBatch(self.tokens.clone(), pinned=True)

    def __repr__(self):
        return f"TokenBatch({self.tokens.tolist()})"


Pair = namedtuple("Pair", ["image", "label"])


def describe_pinned(value, pinning: StandInPinning):
    """``value`` with each tensor replaced by ("pinned" or "not pinned", tensor) and each
    TokenBatch by its state: what the check compares."""
    if isinstance(value, torch.Tensor):
        return ("pinned" if pinning.pinned(value) else "not pinned", value)
    if isinstance(value, TokenBatch):
        return ("TokenBatch", "pinned by its own pin_memory()" if value.pinned else "not pinned",
                value.tokens)
    if isinstance(value, BaseException):
        return f"the exception {type(value).__name__}: {value}"
    if type(value).__name__ == "StreamEnded":  # the learner's class, or the reference's
        return f"StreamEnded(worker_id={value.worker_id})"
    if isinstance(value, dict):
        described = copy.copy(value)  # the same type, a defaultdict included
        described.update({key: describe_pinned(item, pinning) for key, item in value.items()})
        return described
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(describe_pinned(item, pinning) for item in value))
    if isinstance(value, (list, tuple)):
        return type(value)(describe_pinned(item, pinning) for item in value)
    return value


# ---------------------------------------------------------------------------------------
# 1. pin_batch


def _batch_cases() -> list[Case]:
    images = torch.arange(6.0).reshape(2, 3)
    labels = torch.tensor([0, 1])
    return [
        Case({"data": images}, hint="a tensor: pin it with pin_fn(tensor) and return the copy"),
        Case({"data": [images, labels]}, hint="a list: pin each item, and return a list"),
        Case({"data": (images, labels)}, hint="a tuple stays a tuple"),
        Case({"data": {"image": images, "label": labels}},
             hint="a dict: the same keys, each value pinned"),
        Case({"data": Pair(images, labels)},
             hint="a namedtuple: build the same type, type(data)(*pinned_items)"),
        Case({"data": OrderedDict(b=labels, a=images)},
             hint="an OrderedDict stays an OrderedDict, keys in the same order"),
        Case({"data": defaultdict(list, image=images)},
             description="data = defaultdict(list, image=tensor)",
             hint="a defaultdict stays a defaultdict: copy.copy(data) keeps the type (and its "
                  "default_factory), then update the copy with the pinned items"),
        Case({"data": {"pixels": [images, images + 1], "meta": {"names": ["a", "b"], "size": 2}}},
             hint="containers inside containers: recurse, and leave strings and numbers as "
                  "they are"),
        Case({"data": {"text": TokenBatch(torch.tensor([5, 6, 7])), "label": labels}},
             hint="an object with a pin_memory() method pins itself: call data.pin_memory(), "
                  "do not look inside it (and do not give it to pin_fn, which takes tensors)"),
        Case({"data": ["no tensor here", 3, None, b"bytes"]},
             hint="a string is a Sequence too, but it has nothing to pin: return it unchanged "
                  "(check for str and bytes before Sequence)"),
    ]


def _use_pin_batch(implementation, case: Case) -> dict:
    pinning = StandInPinning()
    pinned = describe_pinned(implementation(case.inputs["data"], pinning), pinning)
    return {"what it returned": pinned,
            "data afterwards (it must not change)": describe_pinned(case.inputs["data"], pinning)}


register(Exercise(
    reference=solutions.pin_batch,
    cases=_batch_cases,
    run=_use_pin_batch,
    hint=("check in this order: a tensor (pin_fn), an object with a pin_memory method, str or "
          "bytes, a Mapping, a namedtuple, a Sequence, anything else; recurse into containers"),
    forbidden=PIN_PIECES,
    piece="pin_memory.pin_batch",
    rules=(
        Rule("tensors through `pin_fn`, in the same containers: list, tuple, dict, namedtuple",
             (1, 2, 3, 4, 5)),
        Rule("every mapping keeps its type (`OrderedDict`, `defaultdict`)",
             (6, 7)),
        Rule("nesting; strings, bytes, numbers unchanged",
             (8, 10)),
        Rule("an object with `pin_memory()` pins itself",
             (9,)),
        Rule("`data` is not modified (compared afterwards)",
             (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)),
    ),
    goals=(2, 6),
))


# ---------------------------------------------------------------------------------------
# 2. The copy and the step, in numbers


def _step_hint(nbytes: int, gbps: float, compute: float, overlap: bool) -> str:
    copy = nbytes / (gbps * 1e9) * 1e3
    hint = f"the copy takes {nbytes:,} bytes / ({gbps:g} x 1e9 bytes/s) = {copy:.3g} ms"
    if overlap:
        return hint + ("; overlapped, a step lasts as long as the longer of copy and compute, "
                       "and the copy is hidden when it is no longer than the compute")
    return hint + ("; without overlap, copy and compute add up, so the copy is hidden only when "
                   "there is nothing to copy")


STEPS = [(154_140_672, 25.0, 40.0, True), (154_140_672, 25.0, 40.0, False),
         (154_140_672, 6.0, 12.0, True), (38_535_168, 6.0, 12.0, True),
         (8_388_608, 4.0, 1.0, False), (1_000_000_000, 10.0, 100.0, True), (0, 12.0, 5.0, False)]

register(Exercise(
    reference=solutions.copy_and_step,
    cases=lambda: [Case({"batch_bytes": b, "bandwidth_gbps": g, "compute_ms": c, "overlap": o},
                        hint=_step_hint(b, g, c, o)) for b, g, c, o in STEPS],
    compare=close(rtol=1e-9, atol=1e-12),
    hint="copy_ms = batch_bytes / (bandwidth_gbps * 1e9) * 1000; return a tuple "
         "(copy_ms, step_ms, hidden), where hidden says whether the copy adds nothing to the "
         "step (step_ms == compute_ms)",
    rules=(
        Rule("`copy_ms` at the bandwidth in 10⁹ bytes/s",
             (1, 2, 3, 4, 5, 6, 7)),
        Rule("overlapped: the longer of the two; hidden when the copy is no longer than the compute",
             (1, 3, 4, 6)),
        Rule("not overlapped: the sum; hidden only when nothing is copied",
             (2, 5, 7)),
    ),
    goals=(3,),
))


# ---------------------------------------------------------------------------------------
# 3. The timeline of copies and steps


def _timeline_hint(copy_ms: float, compute_ms: float, overlap: bool) -> str:
    if not overlap:
        return ("without overlap each copy waits for the previous step to end, and each step "
                "for its copy: copy, step, copy, step, ...")
    slower = "the copies" if copy_ms > compute_ms else "the steps"
    return ("with overlap the next copy starts when a step starts; a step starts when its copy "
            f"has ended and the previous step is over. Here {slower} set the pace")


TIMELINES = [(2.0, 5.0, 4, True), (2.0, 5.0, 4, False), (5.0, 2.0, 4, True), (5.0, 2.0, 3, False),
             (3.0, 3.0, 3, True), (1.0, 4.0, 0, True), (0.0, 4.0, 3, True), (2.5, 1.5, 1, True)]

register(Exercise(
    reference=solutions.copy_compute_timeline,
    cases=lambda: [Case({"copy_ms": c, "compute_ms": s, "batches": n, "overlap": o},
                        hint=_timeline_hint(c, s, o)) for c, s, n, o in TIMELINES],
    compare=close(rtol=1e-9, atol=1e-9),
    hint=("keep two times: when the next copy may start, and when the last step ended. A "
          "batch's step starts when both its copy and the previous step are done; the next "
          "copy starts when that step starts (overlap) or when it ends (no overlap)"),
    rules=(
        Rule("a step starts when its copy has ended and the previous step is over",
             (1, 2, 3, 4, 5, 6, 7, 8)),
        Rule("the next copy starts with a step (overlap) or after it",
             (1, 2, 3, 4)),
        Rule("no batch; a copy of no time",
             (6, 7)),
    ),
    goals=(3,),
))


# ---------------------------------------------------------------------------------------
# 4. The pin thread's loop


class Resume:
    """A stand-in for the learner's Resume: what an acknowledgement carries as its number."""

    def __repr__(self):
        return "Resume()"


def _pin_loop_cases() -> list[Case]:
    small = torch.arange(4.0)

    def case(items, hint, gap=0.0, idle=0.0, limit_bytes=None, description=""):
        return Case({"items": tuple(items), "gap_s": gap, "idle_s": idle,
                     "limit_bytes": limit_bytes}, hint=hint, description=description)

    return [
        case([(0, small), (1, small + 4), (2, small + 8)],
             "take each (number, batch) from in_queue, put (number, pin_fn(batch)) on "
             "out_queue, in the same order; stop when done_event is set",
             description="three batches arrive, then done_event is set"),
        case([], "with nothing to pin, wait: use in_queue.get(timeout=0.1) in a loop whose "
                 "condition checks done_event, so that the loop notices it within 0.1 s",
             idle=0.3, description="nothing arrives for 0.3 s, then done_event is set"),
        case([(0, small), (1, small + 1), (2, small + 2)],
             "an empty queue is no reason to stop: keep waiting until done_event is set",
             gap=0.15, description="three batches, 0.15 s apart, then done_event is set"),
        case([(0, small), (1, ValueError("sample 5 is corrupt")), (2, small + 2)],
             "an exception from a worker is not a batch: pass it on as it is, unpinned",
             description="batch 1 is an exception a worker sent (ValueError)"),
        case([(0, torch.zeros(64)), (1, small)],
             "when pin_fn raises, put (number, the exception) on out_queue instead of the "
             "batch, and go on: the main loop raises it when it reaches that batch",
             limit_bytes=64, description="pin_fn raises RuntimeError on batch 0 (too big to "
                                         "pin), batch 1 is fine"),
        case([(0, small), (1, "STREAM ENDED"), (Resume(), 0), (2, small)],
             "only batches are pinned: a StreamEnded, and an acknowledgement (Resume(), "
             "worker_id), whose number is no int, pass as they are",
             description="batch 0, then worker 0's StreamEnded as batch 1, an acknowledgement "
                         "(Resume(), 0), and batch 2"),
    ]


STOP_LATE = ("pin_loop took longer than 1 s to stop after done_event was set: wait with "
             "in_queue.get(timeout=0.1), and check done_event in the loop's condition")


def _use_pin_loop(implementation, case: Case) -> dict:
    stream_ended = message_class(implementation, "StreamEnded")
    items = [(number, stream_ended(0) if isinstance(data, str) else data)
             for number, data in case.inputs["items"]]
    in_queue, out_queue, done_event = queue.Queue(), queue.Queue(), threading.Event()
    pinning = StandInPinning(case.inputs["limit_bytes"])
    thread, outcome = start_thread(implementation, (in_queue, out_queue, done_event, pinning),
                                   name="pin_memory")
    for number, data in items:
        if case.inputs["gap_s"]:
            time.sleep(case.inputs["gap_s"])
        in_queue.put((number, data))
    deadline = time.monotonic() + 1.0
    while out_queue.qsize() < len(items) and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.005)
    time.sleep(case.inputs["idle_s"])
    done_event.set()
    returned = finish_thread(thread, outcome, 1.0, STOP_LATE)
    return {"put on out_queue": [describe_pinned(message, pinning) for message in drain(out_queue)],
            "returned": returned}


register(Exercise(
    reference=solutions.pin_loop,
    cases=_pin_loop_cases,
    run=_use_pin_loop,
    hint=("loop until done_event is set: wait for (number, data) with a timeout, and go round "
          "again when the wait times out; pin data only if number is an int and data is "
          "neither an exception nor a StreamEnded; pass (number, data) on"),
    forbidden=PIN_PIECES,
    time_limit=5.0,
    piece="pin_memory.pin_loop",
    rules=(
        Rule("`(number, pin_fn(data))` in order, until `done_event`",
             (1, 3)),
        Rule("waits with a timeout, stops soon after `done_event`",
             (1, 2)),
        Rule("a worker's exception passes unpinned; `pin_fn`'s exception is sent and the loop goes on",
             (4, 5)),
        Rule("only batches are pinned: a `StreamEnded`, an acknowledgement pass as they are",
             (6,)),
    ),
    goals=(2, 6),
))


# ---------------------------------------------------------------------------------------
# 5. The iterator, grown: a pin thread between the workers and the training loop


def _pin_thread_cases() -> list[Case]:
    return [
        iterator_case(("numbers", 8), {"batch_size": 2, "num_workers": 2},
                      "with loader._pin_memory_fn set, start a thread running pin_loop from the "
                      "result queue to a queue.Queue of the main process, read the batches "
                      "from that one, and stop the thread at the end (its event, then join)",
                      pin=True),
        iterator_case(("numbers", 8, None, 5), {"batch_size": 2, "num_workers": 2},
                      "the exception a worker sends passes the pin thread unpinned, and is "
                      "raised in its turn", pin=True),
        iterator_case(("numbers", 8), {"batch_size": 3, "num_workers": 2,
                                       "persistent_workers": True},
                      "persistent workers: the acknowledgements come through the pin thread "
                      "too, so a new epoch waits for them on the pin thread's queue",
                      pin=True, epochs=(None, 1, None)),
        iterator_case(("stream", 5), {"batch_size": 2, "num_workers": 2},
                      "a StreamEnded passes the pin thread as it is", watch=(), pin=True),
        iterator_case(("numbers", 6), {"batch_size": 2, "num_workers": 2},
                      "without a pin function (and pin_memory=False, or no accelerator), no "
                      "thread, not even one that passes the batches on as they are: read the "
                      "result queue as before"),
    ]


def _pinned_iterator_cases() -> list[Case]:
    with_hook, _, _, _, without = _pin_thread_cases()
    return [
        with_hook,
        without,
        _without_accelerator(iterator_case(
            ("numbers", 6), {"batch_size": 2, "num_workers": 2, "pin_memory": True},
            "pin_memory=True, no _pin_memory_fn, and no accelerator (torch.cuda.is_available() "
            "is False): there is nothing to pin for. Warn as torch does, with a UserWarning "
            "that names 'pin_memory', start no pin thread, and yield the batches as they are "
            "(Tensor.pin_memory() needs an accelerator)")),
    ]


def _without_accelerator(case: Case) -> Case:
    case.inputs["no accelerator"] = True
    case.description = case.description.replace("; a whole epoch", "") + (
        "; no accelerator (on a machine with one, the check hides it); a whole epoch")
    return case


# Whichever way the code asks: torch's iterator asks torch.accelerator, the statement says
# torch.cuda. On a machine with an accelerator this hides it, so that the case means the same
# everywhere (and an iterator that pins without asking pins for real, which shows).
HIDDEN = ((torch.cuda, "is_available", lambda: False), (torch.cuda, "device_count", lambda: 0),
          (torch.accelerator, "is_available", lambda: False),
          (torch.accelerator, "device_count", lambda: 0),
          (torch.accelerator, "current_accelerator", lambda *args, **kwargs: None))


@contextlib.contextmanager
def no_accelerator():
    saved = [(module, name, getattr(module, name)) for module, name, _ in HIDDEN]
    for module, name, fake in HIDDEN:
        setattr(module, name, fake)
    try:
        yield
    finally:
        for module, name, real in saved:
            setattr(module, name, real)


def _use_pinning_iterator(implementation, case: Case) -> dict:
    if case.inputs.get("no accelerator"):
        with no_accelerator():
            return _use_without_accelerator(implementation, case)
    before = _threads()
    started = {}
    made = implementation
    if not case.inputs["pin"]:  # no pin function: not even a thread that passes batches on
        def made(loader):
            iterator = implementation(loader)
            started["threads the iterator started"] = len(_threads() - before)
            return iterator
    seen = use_iterator(made, case)
    seen.update(started)
    if not dict(case.inputs["arguments"]).get("persistent_workers"):
        seen["threads of the main process still running"] = len(_threads() - before)
    return seen


def _use_without_accelerator(implementation, case: Case) -> dict:
    """What a user sees of ``pin_memory=True`` on a machine without an accelerator: the
    warnings, and each batch, pinned or not."""
    spec = case.inputs
    dataset = make_dataset(spec["dataset"], implementation)
    loader = reference_loader(dataset, loader_arguments(spec["arguments"]))
    threads, workers = _threads(), set(children())
    batches = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with more_workers_than_cpus_is_fine():
            iterator = implementation(loader)
        started = len(_threads() - threads)
        dataset.epoch_started.set()
        while len(batches) <= len(dataset):
            try:
                batch = next(iterator)
            except StopIteration:
                break
            except Exception as error:
                error.__traceback__ = None  # see one_epoch: no cycle that keeps the workers
                batches.append(f"next() raised {type(error).__name__}: {error}")
                break
            batches.append(_pinned_or_not(batch))
    about_pinning = sorted({w.category.__name__ for w in caught if "pin_memory" in str(w.message)})
    del iterator
    return {"warnings about pin_memory (their category)": about_pinning,
            "batches (their samples), pinned or not": batches,
            "threads the iterator started": started,
            "threads of the main process still running": len(_threads() - threads),
            "worker processes still running": len(set(children()) - workers)}


def _pinned_or_not(batch):
    """A batch of ``(i, pid)`` samples as (its sample numbers, whether its tensors are pinned);
    anything else as it came."""
    if not (isinstance(batch, list) and len(batch) == 2
            and all(isinstance(part, torch.Tensor) for part in batch)):
        return batch
    pinned = [part.is_pinned() for part in batch]
    return batch[0].tolist(), ("pinned" if all(pinned) else "partly pinned" if any(pinned)
                               else "not pinned")


def _threads() -> set:
    """This process's threads, but for its queues' feeder threads (multiprocessing's own)."""
    return {t for t in threading.enumerate() if not t.name.startswith("QueueFeederThread")}


ITERATOR_HINT = ("once the workers run, decide the pin function; with one, a queue.Queue, a "
                 "threading.Event and a thread running pin_loop, and every read of a result "
                 "from that queue; stop the thread before the workers")

register(Exercise(
    reference=pin_thread.MultiProcessIterator,
    name="MultiProcessIterator, pin thread",
    oracle=TorchIterator,
    cases=_pin_thread_cases,
    run=_use_pinning_iterator,
    hint=ITERATOR_HINT,
    forbidden=ITERATOR_PIECES + PIN_PIECES,
    time_limit=8.0,
    piece="dataloader.MultiProcessIterator",
    expected_from="torch's iterator, each batch through the `_pin_memory_fn`",
    rules=(
        Rule("a pin thread for `loader._pin_memory_fn`, batches read from its queue, the thread stopped at the end",
             (1,)),
        Rule("a worker's exception, a `StreamEnded` and the acknowledgements pass through the thread",
             (2, 3, 4)),
        Rule("no pin function: no thread",
             (5,)),
    ),
    goals=(2, 6),
))

register(Exercise(
    reference=solutions.MultiProcessIterator,
    name="MultiProcessIterator, pinned",
    oracle=TorchIterator,
    cases=_pinned_iterator_cases,
    run=_use_pinning_iterator,
    hint=("the loader's _pin_memory_fn if it has one; else, with loader.pin_memory, pin_batch "
          "with Tensor.pin_memory where there is an accelerator, and a UserWarning (and "
          "nothing to pin) where there is none"),
    forbidden=ITERATOR_PIECES + PIN_PIECES,
    time_limit=8.0,
    piece="dataloader.MultiProcessIterator",
    expected_from="torch's iterator, each batch through the `_pin_memory_fn`",
    rules=(
        Rule("the hook still wins: a pin thread for `loader._pin_memory_fn`; no pin function, no thread",
             (1, 2)),
        Rule("`pin_memory=True` without an accelerator: no thread, the batches unpinned",
             (3,)),
        Rule("`pin_memory=True` without an accelerator: a `UserWarning` naming `pin_memory`",
             (3,), parity="torch's warning"),
    ),
    goals=(6,),
))


# ---------------------------------------------------------------------------------------
# Check yourself

register(Choice(
    "ch09-staging-buffer", answer="c", why={
        "a": "the copy engine reads host memory over PCIe whatever its kind; compression has "
             "nothing to do with it",
        "b": "pageable memory is in the host's RAM like pinned memory; the difference is "
             "whether the operating system may move or swap out its pages",
        "d": "the CPU is involved only in the staging copy; the transfer itself is the copy "
             "engine's, from pinned memory",
    }, goals=(1,)))

register(Choice(
    "ch09-what-pin-memory-does", answer="b", why={
        "a": "the batch you get is still on the CPU (batch.device is cpu): moving it is your "
             "loop's job, with .to('cuda', non_blocking=True)",
        "c": "the workers never pin: pinning is done by a thread of the main process, after a "
             "batch has crossed from its worker",
        "d": "the dataset is not touched: each batch is copied into page-locked memory as it "
             "passes through the pin thread",
    }, goals=(2,)))


def _megabytes_of_a_batch() -> float:
    import numpy as np
    from torch.utils.data import default_collate

    batch = default_collate([np.zeros((3, 224, 224)) for _ in range(64)])
    return round(batch.nbytes / 1e6, 1)


def _about_the_same(expected: float, got) -> str | None:
    if isinstance(got, (int, float)) and not isinstance(got, bool) and abs(
            got - expected) <= 0.005 * expected:
        return None
    return f"expected about {expected} MB, got {got!r}"


register(Prediction(
    "ch09-batch-megabytes", measure=_megabytes_of_a_batch, compare=_about_the_same,
    prompt_text="a number of MB (10**6 bytes)",
    why="np.zeros makes float64 arrays, and default_collate keeps the dtype: 64 x 3 x 224 "
        "x 224 values of 8 bytes, copied once more by the pin thread and again to the GPU",
    mistakes={38.5: "38.5 MB would be float32; np.zeros makes float64 (8 bytes a value), "
                    "and default_collate keeps numpy's dtype",
              9.6: "9.6 MB counts one byte per value; float64 takes 8"},
    goals=(4,),
))

register(Choice(
    "ch09-record-stream", answer="a", why={
        "b": "waiting is wait_stream's job (the main stream waits for the copy); "
             "record_stream is about when the memory may be reused",
        "c": "record_stream copies nothing: it tells the caching allocator that another "
             "stream uses the tensor",
        "d": "record_stream pins nothing: the tensor is already on the GPU",
    }, goals=(3,)))

register(Choice(
    "ch09-cost-of-pinning", answer="c", why={
        "a": "this is a real cost: pinning copies every batch once more, in the main "
             "process's pin thread",
        "b": "this is a real cost: the operating system cannot swap out or move page-locked "
             "memory, so a lot of it leaves less for everything else",
    }, goals=(4,)))

register(Choice(
    "ch09-pin-just-before", answer="b", why={
        "a": "the copy from pinned memory is faster, but pinning is itself a copy of the "
             "whole batch, made on the loop's path: two copies instead of one",
        "c": "non_blocking=True from freshly pinned memory is valid; it is the timing that "
             "suffers, not the correctness",
    }, goals=(4,)))

register(Choice(
    "ch09-cuda-fork-error", answer="a", why={
        "b": "pinning happens in a thread of the main process, not in the forked workers",
        "c": "a spawned worker is a fresh interpreter and may start CUDA (at the cost of a "
             "CUDA context of its own); the error is about forked copies",
        "d": "the training loop runs in the main process, where CUDA works",
    }, goals=(5,)))


register(copy_time.CopyTimePrediction(
    "ch09-copy-time", measure=copy_time.copy_ms_here,
    prompt_text="a number of milliseconds",
    why="the copy takes the batch's bytes over the bandwidth: 256 x 3 x 224 x 224 float32 "
        "values are 154,140,672 bytes; in milliseconds",
    goals=(5,)))

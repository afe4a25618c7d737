"""The messages a DataLoader with workers fails with, for chapter 10's troubleshooting table
and the troubleshooting appendix: torch's wording and minidataloader's, what each means,
and what to do.

The wordings are templates: ``{pid}``, ``{worker}``, ``{code}``, ``{seconds}`` and
``{type}`` stand for what changes from run to run, ``{traceback}`` for the worker's
traceback, ``{rest}`` for the rest of a long message and ``{cause}`` for the exceptions
printed before it. The book's tables never show these templates: they show the real
messages captured by chapter 10 (see :func:`excerpt`). The text is what :func:`minidataloader_course.shared.compare.error_text`
makes of an error: each exception of the chain as ``Type: message``, the cause first, as
Python prints them. Chapter 10 makes every one of these failures happen, with both
libraries, and checks each captured message against its template with :func:`matches`: a
wording that changes fails the book's build instead of going stale here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# What each kind of failure means, and what to do about it.
CATEGORIES = {
    "exception": (
        "your code (the dataset, a transform, collate_fn or worker_init_fn) raised an "
        "exception in a worker; the message carries the worker's own traceback",
        "read the traceback inside the message, from its last line up; to debug, run the "
        "same index with num_workers=0"),
    "timeout": (
        "no batch came within `timeout` seconds; the worker is still alive, busy or stuck",
        "find the slow sample (a network read, a lock); make the worker dump its stack "
        "(faulthandler); raise `timeout`"),
    "killed": (
        "the worker was killed with SIGKILL, usually by the kernel's out-of-memory killer",
        "use fewer workers, smaller batches or a smaller prefetch_factor; keep less in memory "
        "per worker; `dmesg` names the killer"),
    "crashed": (
        "the worker crashed in native code (a segmentation fault, an abort)",
        "run the same index with num_workers=0 to get the crash in the main process; suspect "
        "C extensions (image decoders, custom ops)"),
    "shared memory": (
        "a worker wrote a batch into shared memory (/dev/shm) that was full: the kernel "
        "sends SIGBUS",
        "give the container more /dev/shm (`docker run --shm-size=2g`, or `--ipc=host`); "
        "fewer workers, smaller prefetch_factor or smaller batches need less"),
    "exited": (
        "the worker process ended: sys.exit() or os._exit() in your code, or (spawn, "
        "forkserver) it could not import the dataset's class",
        "look at the worker's stderr above the error; define datasets in a .py module"),
    "open files": (
        "the main process reached its open-files limit: under the 'file_descriptor' "
        "sharing strategy each tensor received from a worker holds a file descriptor",
        "keep fewer batches (or copies) alive; raise `ulimit -n`; or call "
        "torch.multiprocessing.set_sharing_strategy('file_system')"),
    "cuda in fork": (
        "code in a forked worker used CUDA, which the main process had already started",
        "keep workers on the CPU and move batches to the GPU in the training loop (with "
        "pin_memory=True); or use multiprocessing_context='spawn'"),
}


@dataclass(frozen=True)
class Message:
    """One failure's message: what happened, its category (a key of CATEGORIES), torch's
    wording, minidataloader's (``None``: the same as torch's; ``""``: it prints nothing of
    the kind) and the label of the section of chapter 10 that explains it."""

    key: str
    what: str
    category: str
    torch: str
    ours: str | None
    section: str
    printed_by_worker: bool = False  # a line a worker writes to stderr, not an exception


_DIED = "\n\nThe above exception was the direct cause of the following exception:\n\n"

MESSAGES = [
    Message("exception", "an exception raised in a worker", "exception",
            "{type}: Caught {type} in DataLoader worker process {worker}.\nOriginal {traceback}",
            "{type}: {type} raised in DataLoader worker {worker} (pid {pid}); its traceback "
            "there:\n{traceback}",
            "ch10-exceptions"),
    Message("rebuilt as RuntimeError",
            "an exception raised in a worker, whose type cannot be built from one message",
            "exception",
            "RuntimeError: Caught {type} in DataLoader worker process {worker}.\n"
            "Original {traceback}",
            "RuntimeError: {type} raised in DataLoader worker {worker} (pid {pid}); its "
            "traceback there:\n{traceback}",
            "ch10-odd-exceptions"),
    Message("timeout", "no batch within `timeout` seconds", "timeout",
            "RuntimeError: DataLoader timed out after {seconds} seconds",
            "RuntimeError: DataLoader timed out: no batch within timeout={seconds} s, though "
            "every worker is alive{rest}",
            "ch10-timeout"),
    Message("SIGKILL", "a worker killed by SIGKILL (out of memory)", "killed",
            "RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Killed. " + _DIED
            + "RuntimeError: DataLoader worker (pid(s) {pid}) exited unexpectedly",
            "{cause}RuntimeError: DataLoader worker {worker} (pid {pid}) was killed by "
            "SIGKILL{rest}",
            "ch10-dead-worker"),
    Message("segfault", "a worker's segmentation fault", "crashed",
            "RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Segmentation "
            "fault. " + _DIED + "RuntimeError: DataLoader worker (pid(s) {pid}) exited "
            "unexpectedly",
            "{cause}RuntimeError: DataLoader worker {worker} (pid {pid}) was killed by "
            "SIGSEGV{rest}",
            "ch10-dead-worker"),
    Message("segfault, printed", "a worker's segmentation fault", "crashed",
            "ERROR: Unexpected segmentation fault encountered in worker.", "",
            "ch10-dead-worker", printed_by_worker=True),
    Message("bus error", "a worker killed by SIGBUS (/dev/shm full)", "shared memory",
            "RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Bus error. It "
            "is possible that dataloader's workers are out of shared memory. Please try to "
            "raise your shared memory limit." + _DIED + "RuntimeError: DataLoader worker "
            "(pid(s) {pid}) exited unexpectedly",
            "{cause}RuntimeError: DataLoader worker {worker} (pid {pid}) was killed by "
            "SIGBUS{rest}",
            "ch10-shared-memory"),
    Message("bus error, printed", "a worker killed by SIGBUS (/dev/shm full)",
            "shared memory",
            "ERROR: Unexpected bus error encountered in worker. This might be caused by "
            "insufficient shared memory (shm).", "",
            "ch10-shared-memory", printed_by_worker=True),
    Message("exit", "a worker that called exit", "exited",
            "RuntimeError: DataLoader worker (pid {pid}) exited unexpectedly with exit code "
            "{code}. Details are lost due to multiprocessing. Rerunning with num_workers=0 "
            "may give better error trace." + _DIED + "RuntimeError: DataLoader worker "
            "(pid(s) {pid}) exited unexpectedly",
            "{cause}RuntimeError: DataLoader worker {worker} (pid {pid}) exited with code "
            "{code}{rest}",
            "ch10-dead-worker"),
    Message("open files", "the open-files limit, in a DataLoader", "open files",
            "RuntimeError: Too many open files. Communication with the workers is no longer "
            "possible. Please increase the limit using `ulimit -n` in the shell or change "
            "the sharing strategy by calling "
            "`torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of "
            "your code",
            "RuntimeError: Too many open files: {rest}",
            "ch10-open-files"),
    Message("ancdata", "the open-files limit, in torch.multiprocessing", "open files",
            "RuntimeError: received 0 items of ancdata", None,
            "ch10-open-files"),
    Message("CUDA in a forked worker", "CUDA used in a forked worker",
            "cuda in fork",
            "{cause}RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA "
            "with multiprocessing, you must use the 'spawn' start method", None,
            "ch10-cuda-fork"),
]
BY_KEY = {message.key: message for message in MESSAGES}

_FIELDS = {
    "pid": r"\d+", "worker": r"\d+", "code": r"-?\d+", "seconds": r"[0-9.]+",
    "type": r"[\w.]+", "traceback": r"(?s:.*)", "rest": r"(?s:.*)", "cause": r"(?s:.*?)",
}
_FIELD = re.compile(r"\{(\w+)\}")


def pattern(template: str) -> re.Pattern:
    """A regular expression for a template: each field matches what it stands for, and a
    field that appears twice must be the same both times (the same pid, the same type)."""
    parts, seen, end = [], set(), 0
    for field in _FIELD.finditer(template):
        name = field.group(1)
        parts.append(re.escape(template[end:field.start()]))
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>{_FIELDS[name]})")
        seen.add(name)
        end = field.end()
    parts.append(re.escape(template[end:]))
    return re.compile("".join(parts))


def matches(template: str, text: str) -> bool:
    """Whether ``text`` (a real message) is an instance of ``template``."""
    return pattern(template).fullmatch(text) is not None


def excerpt(text: str) -> str:
    """A real message as the tables show it: the exceptions of a chain one per line, from
    the cause to the error raised (joined by →); of a long one (a worker's traceback), its
    first two lines, "…" and its last line, which names what the worker raised."""
    parts = []
    for part in text.split(_DIED):
        lines = part.splitlines()
        if len(lines) > 4:
            lines = [*lines[:2], "  …", lines[-1]]
        parts.append("\n".join(lines))
    return "\n→ ".join(parts)

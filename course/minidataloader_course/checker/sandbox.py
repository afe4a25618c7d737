"""Running code that may misbehave: in a forked child process with a time limit, its output
captured, its random number generators seeded, torch's loader pieces replaced by tripwires.

NOTE [ Why a forked child ]
The reader's function usually lives in a notebook. A forked child inherits it as it is, so
nothing of the reader's has to be pickled, and whatever it does there (loop forever, call
os._exit, crash, print a million lines, reseed the global RNGs, mutate its inputs) happens
to a copy of the kernel that is thrown away:

    parent (the kernel)                     child (os.fork)
    -------------------                     ---------------
    pipe, temp file for output  --fork-->   own process group; fds 1, 2 -> temp file;
                                            sys.stdout/err -> capped writers;
                                            tripwires in place of forbidden pieces
    select() on the pipe         <--pickle--  ("ready",), ("start", i), ("case", i, outcome),
      until "done", EOF, the                ..., ("done", characters printed)
      child's exit, or the deadline         os._exit(0): no atexit, no kernel clean-up
    killpg(SIGKILL): the child and anything it started
    waitpid: how it ended

Only plain data crosses the pipe: outcomes are dicts of strings made in the child, so the
parent never unpickles (and so never runs) an object of the reader's.

Jupyter's sys.stdout sends to the kernel's I/O thread, which a forked child does not have:
prints there would vanish (or block), hence the writers of our own. Windows has no fork;
there the code runs in this process, without a time limit (see ``run_inline``).
"""

from __future__ import annotations

import io
import os
import pickle
import select
import signal
import site
import struct
import sys
import sysconfig
import tempfile
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

import minidataloader
from minidataloader_course.shared.compare import untouched_rng

CAN_FORK = hasattr(os, "fork")
in_child = False  # True in a child started by run_forked
OUTPUT_KEPT = 20_000  # characters of printed output a check allows (and shows in part)
_HEADER = struct.Struct(">Q")


@dataclass
class ChildReport:
    """What came back from running a body, however it ended."""

    messages: list = field(default_factory=list)
    finished: bool = False  # the body ran to its end and said "done"
    timed_out: bool = False
    exit_code: int | None = None  # set if the process exited before finishing
    signal: int | None = None  # set if a signal ended it before finishing
    output: str = ""  # the first OUTPUT_KEPT characters printed
    printed: int = 0  # characters printed in all
    elapsed: float = 0.0
    ready: bool = False  # the child got as far as running the body


# ---------------------------------------------------------------------------------------
# Output capture


class _Budget:
    def __init__(self):
        self.kept = 0
        self.total = 0


class OutputFlood(BaseException):
    """Raised by a print past OUTPUT_KEPT characters: a flood of output stops the code that
    prints it at once, instead of running on until the time limit."""


class _CappedWriter(io.TextIOBase):
    """A text stream that keeps the first OUTPUT_KEPT characters (shared by stdout and
    stderr through ``budget``) and stops the code that tries to print more."""

    def __init__(self, sink: Callable[[str], None], budget: _Budget, fd: int | None = None):
        self._sink, self._budget, self._fd = sink, budget, fd

    def write(self, text):
        text = str(text)
        budget = self._budget
        budget.total += len(text)
        room = OUTPUT_KEPT - budget.kept
        if room > 0:
            piece = text[:room]
            budget.kept += len(piece)
            self._sink(piece)
        if budget.total > OUTPUT_KEPT:
            raise OutputFlood(f"more than {OUTPUT_KEPT:,} characters printed")
        return len(text)

    def writable(self):
        return True

    def isatty(self):
        return False

    @property
    def encoding(self):
        return "utf-8"

    def fileno(self):
        if self._fd is None:
            raise io.UnsupportedOperation("fileno")
        return self._fd


def _write_fd(fd: int):
    def sink(text: str):
        data = text.encode("utf-8", "replace")
        while data:
            data = data[os.write(fd, data):]
    return sink


# ---------------------------------------------------------------------------------------
# Whose code is this? (library code may use the loader pieces; the reader's may not)


def _library_roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    paths = sysconfig.get_paths()
    stdlib = tuple({os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")})
    others = {os.path.realpath(paths[k]) + os.sep for k in ("purelib", "platlib")}
    others.update(os.path.realpath(p) + os.sep for p in site.getsitepackages())
    others.add(os.path.dirname(os.path.realpath(torch.__file__)) + os.sep)
    course = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    library = os.path.dirname(os.path.realpath(minidataloader.__file__))
    others.update((course + os.sep, library + os.sep))  # editable installs live in the repo
    return stdlib, tuple(others)


_STDLIB, _LIBRARIES = _library_roots()
_real_paths: dict[str, str] = {}


def _real(filename: str) -> str:
    path = _real_paths.get(filename)
    if path is None:
        path = _real_paths[filename] = os.path.realpath(filename)
    return path


def _is_stdlib(filename: str) -> bool:
    # (in a virtual environment the "stdlib" folder holds site-packages: torch is no stdlib)
    path = _real(filename)
    return filename.startswith("<frozen") or (
        path.startswith(_STDLIB) and not path.startswith(_LIBRARIES))


def is_readers_code(filename: str) -> bool:
    """True for code that is neither the standard library, an installed package, torch, nor
    minidataloader: a notebook cell, a script, a test file."""
    if filename.startswith("<frozen"):
        return False
    path = _real(filename)
    return not path.startswith(_STDLIB) and not path.startswith(_LIBRARIES)


def called_by_reader(frame) -> bool:
    """Whether the closest caller outside the standard library is the reader's code."""
    while frame is not None and _is_stdlib(frame.f_code.co_filename):
        frame = frame.f_back
    return frame is not None and is_readers_code(frame.f_code.co_filename)


# ---------------------------------------------------------------------------------------
# Tripwires
#
# NOTE [ Who looked the piece up ]
# Calling a forbidden piece is delegation when the reader's code found the piece by itself:
# as an attribute of a module (`tud.default_collate`, `from torch.utils.data import ...`,
# at the top of a notebook or inside the function), or through its own namespaces (the
# globals of a notebook, a script or a module of the reader's, closures, default values, the
# attributes of its classes). A piece the case hands to the reader's code (a collate_fn, a
# dataset, a sampler, a generator) is not delegation, and it is the original: the checker's
# code never sees a tripwire. So while a check runs:
#
#   the reader's namespaces          every reference to a piece is replaced by a tripwire
#   any other module holding one     left as it is; its class becomes a subclass whose
#   (torch.utils.data, the package,  attribute lookup answers the reader's code with the
#   the checker's own modules)       tripwire and everyone else with the original (library
#                                    code reads its globals directly, never this way)
#   a forbidden method of a class    a descriptor that does the same
#
# A tripwire stops a call only when the reader's code makes it: handed on to library code
# (a collate_fn given to torch's DataLoader), it is the real thing.
# Out of reach, on purpose: `vars(module)[name]`, and modules first imported while the
# check runs (every module that holds a piece is imported before the reader's code runs).


class DelegationStop(BaseException):
    """Raised by a tripwire. A BaseException, so ``except Exception`` in the reader's code
    does not swallow it (and the tripwire records that it fired anyway)."""


class _Tripwire:
    """Stands in for a forbidden loader piece: called from the reader's code it records the
    call and stops it; called from anywhere else (torch itself, the checker) it is the real
    thing, so the checker can still use the piece to exercise the reader's code."""

    def __init__(self, original, dotted: str, fired: list[str]):
        self._original, self._dotted, self._fired = original, dotted, fired

    def _stop(self):
        self._fired.append(self._dotted)
        raise DelegationStop(self._dotted)

    def __call__(self, *args, **kwargs):
        if called_by_reader(sys._getframe(1)):
            self._stop()
        return self._original(*args, **kwargs)

    def __mro_entries__(self, bases):  # `class Mine(tud.TensorDataset):` inside the check
        if called_by_reader(sys._getframe(1)):
            self._stop()
        return (self._original,)

    def __getattr__(self, name):
        return getattr(self._original, name)

    def __getitem__(self, item):  # Dataset[int] and other generic aliases
        return self._original[item]

    def __instancecheck__(self, instance):
        return isinstance(instance, self._original)

    def __subclasscheck__(self, subclass):
        return issubclass(subclass, self._original)

    def __repr__(self):
        return repr(self._original)


_WIRES: dict[int, _Tripwire] = {}  # id(piece) -> its tripwire, while a check runs


def _wire_for(value) -> _Tripwire | None:
    wire = _WIRES.get(id(value))
    return wire if wire is not None and wire._original is value else None


def _as_seen_by(value, frame):
    """``value``, or its tripwire if ``value`` is a piece and ``frame`` is the reader's."""
    wire = _wire_for(value)
    return wire if wire is not None and called_by_reader(frame) else value


_GUARDED_TYPES: dict[type, type] = {}


def _guarded_type(module_type: type) -> type:
    """A subclass of ``module_type`` whose attribute lookup goes through ``_as_seen_by``."""
    guarded = _GUARDED_TYPES.get(module_type)
    if guarded is None:
        def __getattribute__(self, name):
            value = module_type.__getattribute__(self, name)
            return _as_seen_by(value, sys._getframe(1)) if id(value) in _WIRES else value

        guarded = type(module_type.__name__, (module_type,),
                       {"__getattribute__": __getattribute__, "__module__": module_type.__module__})
        _GUARDED_TYPES[module_type] = guarded
    return guarded


class _GuardedAttribute:
    """Stands in a class's ``__dict__`` for a forbidden method: the reader's code gets it
    wrapped in a tripwire, everyone else gets it as it is."""

    def __init__(self, raw, wire: _Tripwire):
        self._raw, self._wire = raw, wire

    def __get__(self, instance, owner=None):
        getter = getattr(type(self._raw), "__get__", None)
        value = getter(self._raw, instance, owner) if getter else self._raw
        if called_by_reader(sys._getframe(1)):
            return _Tripwire(value, self._wire._dotted, self._wire._fired)
        return value


def resolve(dotted: str):
    """The object a dotted name refers to, or None if there is none (yet)."""
    found = _locate(dotted)
    return found[2] if found else None


def _locate(dotted: str):
    """``(owner, attribute, value)`` for a dotted name: the module or class that holds the
    value under that attribute; None if there is none."""
    module_name, _, attribute = dotted.rpartition(".")
    while module_name:
        module = sys.modules.get(module_name)
        if module is None:
            try:
                module = __import__(module_name, fromlist=["_"])
            except ImportError:
                module_name, _, rest = module_name.rpartition(".")
                attribute = f"{rest}.{attribute}"
                continue
        owner, *path = [module, *attribute.split(".")]
        for part in path[:-1]:
            owner = getattr(owner, part, None)
        value = getattr(owner, path[-1], None) if owner is not None else None
        return None if value is None else (owner, path[-1], value)
    return None


def _is_readers_module(module) -> bool:
    filename = getattr(module, "__file__", None)
    return filename is None or is_readers_code(filename)


def _readers_functions(implementation) -> list:
    """The reader's functions whose closures and default values may hold pieces: the
    implementation, or the methods of a class of the reader's (and of its reader bases)."""
    functions = [implementation] if isinstance(implementation, types.FunctionType) else []
    for cls in _readers_classes(implementation):
        for value in vars(cls).values():
            value = getattr(value, "__func__", value)  # staticmethod, classmethod
            if isinstance(value, property):
                functions += [f for f in (value.fget, value.fset, value.fdel) if f]
            elif isinstance(value, types.FunctionType):
                functions.append(value)
    return [f for f in functions if is_readers_code(f.__code__.co_filename)]


def _readers_classes(implementation) -> list[type]:
    if not isinstance(implementation, type):
        return []
    return [cls for cls in implementation.__mro__ if any(
        isinstance(getattr(v, "__func__", v), types.FunctionType)
        and is_readers_code(getattr(v, "__func__", v).__code__.co_filename)
        for v in vars(cls).values())]


def install_tripwires(dotted_names: list[str], implementation) -> tuple[dict, list[str], Callable]:
    """Put tripwires where the reader's code looks pieces up (see the NOTE above).

    Returns ``(originals, fired, undo)``: id -> (piece, dotted name) of the pieces, the list
    tripwires append to when they fire, and a function that puts everything back.
    """
    originals: dict[int, tuple[object, str]] = {}
    owners = []
    for dotted in dotted_names:
        found = _locate(dotted)
        if found is not None:
            originals.setdefault(id(found[2]), (found[2], dotted))
            owners.append(found)
    fired: list[str] = []
    _WIRES.clear()
    _WIRES.update({key: _Tripwire(piece, dotted, fired)
                   for key, (piece, dotted) in originals.items()})
    undo: list[Callable[[], None]] = [_WIRES.clear]

    def patch(namespace: dict):
        for key, value in list(namespace.items()):
            wire = _wire_for(value)
            if wire is not None:
                namespace[key] = wire
                undo.append(lambda ns=namespace, k=key, v=value: ns.__setitem__(k, v))

    def guard(module):
        original_type = type(module)
        try:
            module.__class__ = _guarded_type(original_type)
        except TypeError:  # a module type that cannot be subclassed: replace its references
            patch(module.__dict__)
            return
        undo.append(lambda: setattr(module, "__class__", original_type))

    for module in list(sys.modules.values()):
        if not isinstance(module, types.ModuleType):
            continue
        if not any(_wire_for(value) for value in list(module.__dict__.values())):
            continue
        if _is_readers_module(module):
            patch(module.__dict__)
        else:
            guard(module)
    for owner, attribute, value in owners:
        raw = vars(owner).get(attribute) if isinstance(owner, type) else None
        if raw is not None:
            try:
                setattr(owner, attribute, _GuardedAttribute(raw, _WIRES[id(value)]))
            except (TypeError, AttributeError):  # a built-in type
                continue
            undo.append(lambda o=owner, a=attribute, r=raw: setattr(o, a, r))
    for cls in _readers_classes(implementation):
        for key, value in list(vars(cls).items()):
            wire = _wire_for(value)
            if wire is not None:
                setattr(cls, key, wire)
                undo.append(lambda c=cls, k=key, v=value: setattr(c, k, v))
    for function in _readers_functions(implementation):
        patch(function.__globals__)
        for cell in function.__closure__ or ():
            try:
                wire = _wire_for(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
            if wire is not None:
                value, cell.cell_contents = cell.cell_contents, wire
                undo.append(lambda c=cell, v=value: setattr(c, "cell_contents", v))
        if function.__defaults__ and any(id(d) in _WIRES for d in function.__defaults__):
            defaults = function.__defaults__
            function.__defaults__ = tuple(_WIRES.get(id(d), d) for d in defaults)
            undo.append(lambda f=function, d=defaults: setattr(f, "__defaults__", d))
        if function.__kwdefaults__:
            patch(function.__kwdefaults__)

    def restore():
        for step in reversed(undo):
            step()

    return originals, fired, restore


# ---------------------------------------------------------------------------------------
# Running a body in a child process (or inline)


def _send_frames(fd: int):
    def send(message) -> None:
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        data = _HEADER.pack(len(payload)) + payload
        while data:
            data = data[os.write(fd, data):]
    return send


def _child(body: Callable, write_fd: int, output_fd: int) -> None:
    """Runs in the forked child; never returns."""
    global in_child
    in_child = True
    try:
        os.setpgid(0, 0)  # a group of its own: killpg then also ends whatever it started
        signal.set_wakeup_fd(-1)  # the parent's event loop must not hear the child's signals
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        budget = _Budget()
        sys.stdout = _CappedWriter(_write_fd(1), budget, fd=1)
        sys.stderr = _CappedWriter(_write_fd(2), budget, fd=2)
        sys.stdin = io.StringIO("")  # input() gets EOF instead of waiting for a frontend
        if "torch" in sys.modules:
            # The kernel's OpenMP threads were not copied into this child: a parallel torch
            # operation here would wait for them forever. One thread, as in a loader's workers.
            sys.modules["torch"].set_num_threads(1)
        send = _send_frames(write_fd)
        send(("ready",))  # the time limit counts from here: see NOTE [ What the time limit counts ]
        body(send, lambda: budget.total)
        send(("done", budget.total))
    except BaseException:  # noqa: BLE001 - the body reports its own errors; this is a last resort
        try:
            os.write(2, b"checker: internal error in the child process\n")
        except OSError:
            pass
        os._exit(70)
    os._exit(0)


# NOTE [ What the time limit counts ]
# The limit is the reader's: "your code took longer than 2 s". It counts from the moment the
# child says it is ready, not from the fork: forking a kernel that holds torch, and the
# child's first steps, are ours, and on a busy machine they alone can take a good part of a
# 2 s limit. They get an allowance of their own (_STARTUP), far longer than they ever need;
# a child not ready by then never ran the reader's code (a lock that another thread of the
# kernel held at the fork could do that), so it is killed and the run made once more.
# When the deadline comes the pipe is read once more before the child is called late: a
# parent that was itself kept off the CPU may find "done" waiting there.
#
#     fork ----(startup, ours)----> ("ready",) ----(the reader's time limit)----> deadline
#                                                                                   |
#                                            read what is in the pipe, then killpg <-+
_STARTUP = 30.0


def run(body: Callable[[Callable, Callable], None], time_limit: float) -> ChildReport:
    """Run ``body(send, printed)`` where code that may misbehave can run: a forked child with
    a time limit (``run_forked``), or, on a system without fork (Windows), this process
    without one (``run_inline``)."""
    return run_forked(body, time_limit) if CAN_FORK else run_inline(body)


def run_forked(body: Callable[[Callable, Callable], None], time_limit: float) -> ChildReport:
    """Run ``body(send, printed)`` in a forked child; collect what it sends until it says
    "done", ends, or runs out of time (``time_limit`` seconds after it is ready to run the
    body). ``printed()`` is the number of characters printed so far. The child and
    everything it started are gone on return."""
    report = _run_forked_once(body, time_limit)
    if report.timed_out and not report.ready:  # stuck before the body: ours, not the reader's
        report = _run_forked_once(body, time_limit)
    return report


def _run_forked_once(body: Callable[[Callable, Callable], None], time_limit: float) -> ChildReport:
    report = ChildReport()
    output = tempfile.TemporaryFile()
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns about fork with threads running
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(body, write_fd, output.fileno())
    start = time.monotonic()
    os.close(write_fd)
    status = None
    try:
        buffer = bytearray()
        deadline = start + _STARTUP
        while not report.finished:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                was_ready = report.ready
                _read_available(read_fd, buffer, report)
                if report.ready and not was_ready:  # ready just now: its own deadline starts
                    deadline = time.monotonic() + time_limit
                    continue
                report.timed_out = not report.finished
                break
            if select.select([read_fd], [], [], min(remaining, 0.05))[0]:
                chunk = os.read(read_fd, 1 << 16)
                if not chunk:
                    break  # EOF: the child (and anything it started) is gone
                buffer += chunk
                was_ready = report.ready
                _parse_frames(buffer, report)
                if report.ready and not was_ready:
                    deadline = time.monotonic() + time_limit
            else:
                done, status_now = os.waitpid(pid, os.WNOHANG)
                if done:  # ended, though something it started may still hold the pipe
                    status = status_now
                    # what it wrote just before it ended may still wait in the pipe (a
                    # loaded machine: "done" arrives between the select and the waitpid)
                    _read_available(read_fd, buffer, report)
                    break
    finally:
        if status is None and report.finished:
            status = _wait_briefly(pid)
        _kill_group(pid)  # the child if it still runs, and anything it started
        if status is None:
            status = os.waitpid(pid, 0)[1]
        os.close(read_fd)
        report.elapsed = time.monotonic() - start
    if not report.finished and not report.timed_out:
        if os.WIFSIGNALED(status):
            report.signal = os.WTERMSIG(status)
        else:
            report.exit_code = os.waitstatus_to_exitcode(status)
    size = os.fstat(output.fileno()).st_size
    report.output = os.pread(output.fileno(), OUTPUT_KEPT * 4, 0).decode("utf-8", "replace")[:OUTPUT_KEPT]
    report.printed = max(report.printed, size)  # the file also holds what bypassed sys.stdout
    output.close()
    return report


def _read_available(read_fd: int, buffer: bytearray, report: ChildReport) -> None:
    """Read what already waits in the pipe, without waiting."""
    while select.select([read_fd], [], [], 0)[0]:
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        buffer += chunk
        _parse_frames(buffer, report)


def _parse_frames(buffer: bytearray, report: ChildReport) -> None:
    """Move the whole frames in ``buffer`` into ``report``."""
    while len(buffer) >= _HEADER.size:
        (length,) = _HEADER.unpack_from(buffer)
        if len(buffer) < _HEADER.size + length:
            return
        message = pickle.loads(bytes(buffer[_HEADER.size:_HEADER.size + length]))
        del buffer[:_HEADER.size + length]
        if message[0] == "done":
            report.finished, report.printed = True, message[1]
        elif message[0] == "ready":
            report.ready = True
        else:
            report.messages.append(message)


def _wait_briefly(pid: int, seconds: float = 1.0):
    """The child said "done" and is exiting: let it, so it is not killed mid-exit."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.002)
    return None


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_inline(body: Callable[[Callable, Callable], None]) -> ChildReport:
    """Run ``body(send, printed)`` in this process (no fork: Windows). No time limit, and a crash
    takes the kernel with it; output is still captured and RNG states put back."""
    report = ChildReport()
    kept: list[str] = []
    budget = _Budget()
    saved = sys.stdout, sys.stderr, sys.stdin
    start = time.monotonic()
    with untouched_rng():
        sys.stdout = _CappedWriter(kept.append, budget)
        sys.stderr = _CappedWriter(kept.append, budget)
        sys.stdin = io.StringIO("")
        try:
            report.ready = True  # no start of its own: the body runs at once
            body(report.messages.append, lambda: budget.total)
            report.finished = True
        finally:
            sys.stdout, sys.stderr, sys.stdin = saved
    report.output, report.printed = "".join(kept), budget.total
    report.elapsed = time.monotonic() - start
    return report

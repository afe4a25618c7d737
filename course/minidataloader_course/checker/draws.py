"""Which random numbers a piece of code draws: from which generator, by which call, how
many, in which order. Run the code inside ``with draws() as log:`` and look at ``log``::

    from minidataloader_course import draws

    generator = torch.Generator().manual_seed(0)
    loader = torch.utils.data.DataLoader(range(10), batch_size=4, shuffle=True,
                                         generator=generator)
    with draws(g=generator) as log:
        iterator = iter(loader)
        log.mark("iter(loader)")
        next(iterator)
    log  # a table: one row per call that drew random numbers, and your marks

What is seen:

- torch: every call of torch's Python API that draws (``randperm``, ``randint``, ``rand``,
  ``Tensor.random_``, ``multinomial``, ``bernoulli``, ``dropout``, ...), found with a
  ``TorchFunctionMode``, so it does not matter how the code imported the function. The row
  says which generator: ``torch (global)``, a generator you named (``draws(g=generator)``
  names it ``g``), or ``torch.Generator #k`` for one you did not name, numbered in the
  order the log meets them (a generator reseeded to another seed counts as a new one; its
  first row shows the seed);
- python's ``random`` and numpy's global ``np.random``: their module-level functions;
- reseeding: ``torch.manual_seed``, ``random.seed``, ``np.random.seed`` (and setting their
  states) are rows too; a named generator reseeded with ``manual_seed`` shows up at its
  next draw;
- anything else that changed one of these states (a draw from C code, a function imported
  with ``from random import random`` before the log began) is a row ``(unseen)`` at the
  point where the log noticed it.

Not seen: draws in other processes (workers) or other threads, and numpy ``Generator``
objects (``np.random.default_rng``).

For checks, :func:`compare_draws` compares two logs and names the first draw that is
missing, extra, out of order, at another moment or with other numbers; ``compare_with_draws``
makes an ``Exercise.compare`` of it for observations that hold a log.
"""

from __future__ import annotations

import contextlib
import difflib
import html
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

DRAW, SEED, UNSEEN, MARK = "draw", "seed", "unseen", "mark"
TORCH, PYTHON, NUMPY = "torch (global)", "random (global)", "numpy (global)"
SHOWN_VALUES = 6  # a row keeps the first few numbers drawn
DRAWS_KEY = "random draws"  # where an exercise's observation keeps its log

# torch's calls that draw random numbers (functions, Tensor methods, torch.nn.functional)
TORCH_CALLS = frozenset("""
    rand randn randint randperm rand_like randn_like randint_like normal poisson
    multinomial bernoulli random_ uniform_ normal_ bernoulli_ exponential_ geometric_
    cauchy_ log_normal_ dropout dropout_ dropout1d dropout2d dropout3d alpha_dropout
    feature_alpha_dropout feature_dropout rrelu rrelu_ gumbel_softmax
""".split())
PYTHON_CALLS = ("random", "uniform", "randint", "randrange", "choice", "choices", "shuffle",
                "sample", "gauss", "normalvariate", "lognormvariate", "expovariate",
                "vonmisesvariate", "gammavariate", "betavariate", "paretovariate",
                "weibullvariate", "triangular", "getrandbits", "randbytes")
NUMPY_CALLS = ("rand", "randn", "randint", "random", "random_sample", "ranf", "sample",
               "choice", "shuffle", "permutation", "uniform", "normal", "standard_normal",
               "integers", "binomial", "poisson", "exponential", "beta", "gamma", "bytes")


@dataclass(frozen=True)
class Draw:
    """One row of a log. ``kind`` is "draw" (a call that drew ``count`` numbers of type
    ``dtype`` from ``source``; ``values`` are the first few), "seed" (``source`` reseeded:
    ``values`` holds the seed), "unseen" (``source`` changed by something the log did not
    see) or "mark" (a line you added with ``log.mark(text)``: the text is ``call``).
    ``seed`` is the seed of a generator you did not name, on the first row that uses it."""

    kind: str
    source: str
    call: str
    count: int = 0
    dtype: str = ""
    values: tuple = ()
    seed: int | None = None

    @property
    def key(self) -> tuple:
        """What two logs must agree on, row for row (the values are compared apart)."""
        return (self.kind, self.source, self.call, self.count, self.dtype)

    def describe(self) -> str:
        """The row in words, e.g. "randperm (10 int64 numbers) from g"."""
        if self.kind == MARK:
            return f"«{self.call}»"
        if self.kind == SEED:
            return f"{self.call}({', '.join(map(str, self.values))}) on {self.source}"
        if self.kind == UNSEEN:
            return f"a change of {self.source} that no listed call explains"
        numbers = f"{self.count} {self.dtype} number{'s' * (self.count != 1)}".replace("  ", " ")
        return f"{self.call} ({numbers}) from {self.source}"

    def act(self, does: bool = True) -> str:
        """What the row's code did, as a verb phrase: "draws randperm (...) from g", or with
        ``does=False`` the form after "does not": "draw randperm (...) from g"."""
        verb = {DRAW: "draw", SEED: "reseed", UNSEEN: "change"}[self.kind]
        verb = verb + ("s" if does else "")
        if self.kind == SEED:
            return f"{verb} {self.source} with {self.call}({', '.join(map(str, self.values))})"
        if self.kind == UNSEEN:
            return f"{verb} {self.source} by a call this log cannot see"
        return f"{verb} {self.describe()}"


class DrawLog:
    """What ``with draws() as log:`` recorded: ``log.rows``, one :class:`Draw` per call
    that drew (or reseeded, or changed a state unseen) and per mark, in order. Jupyter shows
    it as a table; ``print(log)`` too."""

    def __init__(self, named: dict):
        self.rows: list[Draw] = []
        self._names = {id(generator): name for name, generator in named.items()}
        self._generators = dict(named)  # source -> generator (keeps their ids valid)
        self._seeds = {name: generator.initial_seed() for name, generator in named.items()}
        self._unnamed: dict[tuple[int, int], str] = {}  # (id, initial seed) -> source
        self._states: dict[str, object] = {}  # source -> its state after its last row
        for source in (TORCH, PYTHON, NUMPY, *named):
            self._states[source] = _state_of(source, self._generators.get(source))

    # -- reading the log
    def mark(self, text: str) -> None:
        """Add a line to the log, e.g. ``log.mark("iter(loader)")``: the draws before it
        happened before that point of your code, the draws after it after."""
        self.rows.append(Draw(MARK, "", str(text)))

    def draws(self, source: str | None = None) -> list[Draw]:
        """The rows that drew numbers, from ``source`` only if given (e.g. "torch (global)",
        a name you gave, "torch.Generator #1")."""
        return [r for r in self.rows if r.kind == DRAW and source in (None, r.source)]

    def calls(self, source: str | None = None) -> int:
        """How many calls drew numbers (from ``source``)."""
        return len(self.draws(source))

    def numbers(self, source: str | None = None) -> int:
        """How many numbers were drawn in all (from ``source``)."""
        return sum(r.count for r in self.draws(source))

    def sources(self) -> list[str]:
        """Every source that was drawn from, in the order of first use."""
        return list(dict.fromkeys(r.source for r in self.draws()))

    def __iter__(self):
        return iter(self.rows)

    def __len__(self):
        return len(self.rows)

    def _table(self) -> list[tuple[str, ...]]:
        table, number = [], 0
        for row in self.rows:
            if row.kind == MARK:
                table.append(("", f"── {row.call} ──", "", "", ""))
                continue
            number += 1
            source = row.source + (f" (seed {row.seed})" if row.seed is not None else "")
            if row.kind == DRAW:
                shown = ", ".join(map(_number, row.values))
                more = ", …" if row.count > len(row.values) else ""
                table.append((str(number), source, row.call, f"{row.count} {row.dtype}".strip(),
                              f"[{shown}{more}]"))
            elif row.kind == SEED:
                table.append((str(number), source, row.call, "reseeded",
                              ", ".join(map(str, row.values))))
            else:
                table.append((str(number), source, "(unseen)", "state changed",
                              "by a call this log cannot see"))
        return table

    def __str__(self) -> str:
        if not self.rows:
            return "no random numbers were drawn"
        header = ("#", "from", "call", "numbers", "first values")
        table = [header] + self._table()
        widths = [max(len(r[i]) for r in table if not r[1].startswith("──")) for i in range(4)]
        lines = []
        for row in table:
            if row[1].startswith("──"):
                lines.append(f"{'':>{widths[0]}}  {row[1]}")
            else:
                lines.append("  ".join(f"{cell:<{w}}" if i else f"{cell:>{w}}"
                                       for i, (cell, w) in enumerate(zip(row, widths)))
                             + f"  {row[4]}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        if not self.rows:
            return "<p><i>no random numbers were drawn</i></p>"
        e = html.escape
        cell = 'style="padding:1px 8px;text-align:left;font-family:monospace"'
        head = "".join(f"<th {cell}>{e(h)}</th>" for h in
                       ("#", "from", "call", "numbers", "first values"))
        body = []
        for row in self._table():
            if row[1].startswith("──"):
                body.append(f'<tr><td></td><td colspan="4" {cell}><i>{e(row[1])}</i></td></tr>')
            else:
                body.append("<tr>" + "".join(f"<td {cell}>{e(c)}</td>" for c in row) + "</tr>")
        return (f'<table class="mdl-draws" style="border-collapse:collapse;font-size:0.9em">'
                f'<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')

    # -- recording
    def _source(self, generator) -> str:
        """The source a torch generator is shown as. A generator you did not name gets a
        number; reseeded to another seed, it counts as a new one, whose first row shows its
        seed. A named one reseeded gets a row saying so."""
        if generator is None or generator is torch.default_generator:
            return TORCH
        name = self._names.get(id(generator))
        if name is not None:
            if generator.initial_seed() != self._seeds[name]:
                self._seeds[name] = generator.initial_seed()
                self.rows.append(Draw(SEED, name, "manual_seed", values=(self._seeds[name],)))
                self._states[name] = _state_of(name, generator)
            return name
        if generator.device.type != "cpu" and generator is _default_for(generator.device):
            return f"torch (global, {generator.device.type})"
        identity = (id(generator), generator.initial_seed())
        if identity not in self._unnamed:
            self._unnamed[identity] = f"torch.Generator #{len(self._unnamed) + 1}"
            self._generators[self._unnamed[identity]] = generator
        return self._unnamed[identity]

    def _first_use(self, source: str) -> int | None:
        """The seed to show on the first row of a generator you did not name."""
        if not source.startswith("torch.Generator #") or any(r.source == source for r in self.rows):
            return None
        return self._generators[source].initial_seed()

    def _before(self, source: str) -> None:
        """Before a row from ``source``: a change of its state since its last row is a draw
        (or a reseed) this log did not see."""
        state = _state_of(source, self._generators.get(source))
        if source in self._states and state is not None and not _same(self._states[source], state):
            self.rows.append(Draw(UNSEEN, source, "(unseen)"))

    def _after(self, source: str) -> None:
        self._states[source] = _state_of(source, self._generators.get(source))

    def _finish(self) -> None:
        for source in list(self._states):
            generator = self._generators.get(source)
            if source.startswith("torch.Generator #") and self._unnamed.get(
                    (id(generator), generator.initial_seed())) != source:
                continue  # reseeded since: a new generator, which has rows of its own
            if generator is not None and source in self._seeds:
                self._source(generator)  # a reseed since its last row is a row
            self._before(source)


def _number(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _default_for(device):
    try:
        return torch.cuda.default_generators[device.index or 0] if device.type == "cuda" else None
    except Exception:  # no such device here
        return None


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    return a == b


def _numpy_state():
    state = np.random.get_state()
    return (state[1].tobytes(), *state[2:])


def _state_of(source: str, generator=None):
    """A comparable copy of a source's state (None where it cannot be read)."""
    if source == TORCH:
        return torch.get_rng_state()
    if source == PYTHON:
        return random.getstate()
    if source == NUMPY:
        return _numpy_state()
    if generator is not None and generator.device.type == "cpu":
        return generator.get_state()
    return None


def _first_values(values) -> tuple:
    if isinstance(values, torch.Tensor):
        return tuple(values.detach().flatten()[:SHOWN_VALUES].cpu().tolist())
    if isinstance(values, np.ndarray):
        return tuple(values.ravel()[:SHOWN_VALUES].tolist())
    if isinstance(values, (list, tuple)):
        return tuple(values[:SHOWN_VALUES])
    if isinstance(values, (bytes, bytearray)):
        return tuple(values[:SHOWN_VALUES])
    return (values.item() if isinstance(values, np.generic) else values,)


# ---------------------------------------------------------------------------------------
# Recording: a TorchFunctionMode for torch, patched module functions for random and numpy

_ACTIVE: list[DrawLog] = []  # the open logs
_PATCHED: list[tuple[object, str, object]] = []  # (module, name, original)


class _TorchRecorder(TorchFunctionMode):
    def __init__(self, log: DrawLog):
        super().__init__()
        self.log = log

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") not in TORCH_CALLS:
            return func(*args, **kwargs)
        source = self.log._source(kwargs.get("generator"))
        seed = self.log._first_use(source)
        self.log._before(source)
        result = func(*args, **kwargs)
        drawn = result if isinstance(result, torch.Tensor) else args[0] if args else None
        if not isinstance(drawn, torch.Tensor):
            drawn = torch.as_tensor(result)
        place = f"torch (global, {drawn.device.type})" if source == TORCH and \
            drawn.device.type != "cpu" else source
        self.log.rows.append(Draw(DRAW, place, func.__name__, drawn.numel(),
                                  str(drawn.dtype).replace("torch.", ""),
                                  _first_values(drawn), seed))
        self.log._after(source)
        return result


def _count(name: str, args, result) -> int:
    if name == "shuffle":
        return len(args[0])
    if isinstance(result, np.ndarray):
        return int(result.size)
    if isinstance(result, (list, tuple, bytes)):
        return len(result)
    return 1


def _dtype(drawn) -> str:
    if isinstance(drawn, (np.ndarray, np.generic)):
        return str(drawn.dtype)
    if isinstance(drawn, (list, tuple)) and drawn:
        return type(drawn[0]).__name__
    return type(drawn).__name__ if drawn is not None else ""


def _drawing(source: str, name: str, original: Callable) -> Callable:
    def recorded(*args, **kwargs):
        for log in _ACTIVE:
            log._before(source)
        result = original(*args, **kwargs)
        drawn = args[0] if name == "shuffle" else result
        row = Draw(DRAW, source, name, _count(name, args, result), _dtype(drawn),
                   _first_values(drawn))
        for log in _ACTIVE:
            log.rows.append(row)
            log._after(source)
        return result

    recorded.__wrapped__ = original
    return recorded


def _reseeding(source: str, name: str, original: Callable) -> Callable:
    def recorded(*args, **kwargs):
        result = original(*args, **kwargs)
        shown = tuple(a for a in args if isinstance(a, (int, float, str))) or ("…",)
        for log in _ACTIVE:
            log.rows.append(Draw(SEED, source, name, values=shown))
            log._after(source)
        return result

    recorded.__wrapped__ = original
    return recorded


def _patches() -> list[tuple[object, str, Callable]]:
    """(module, name, replacement) for every module-level function the logs watch."""
    found = [(random, name, _drawing(PYTHON, name, getattr(random, name)))
             for name in PYTHON_CALLS if hasattr(random, name)]
    found += [(np.random, name, _drawing(NUMPY, name, getattr(np.random, name)))
              for name in NUMPY_CALLS if hasattr(np.random, name)]
    for module, source, names in ((random, PYTHON, ("seed", "setstate")),
                                  (np.random, NUMPY, ("seed", "set_state")),
                                  (torch, TORCH, ("manual_seed", "set_rng_state")),
                                  (torch.random, TORCH, ("manual_seed", "set_rng_state"))):
        found += [(module, name, _reseeding(source, name, getattr(module, name)))
                  for name in names]
    return found


@contextlib.contextmanager
def draws(**generators: torch.Generator):
    """Record the random numbers drawn inside the ``with`` block, in order: which
    generator, which call, how many numbers, the first few. Name the generators you want
    to recognise: ``draws(g=my_generator)`` shows ``g`` where that generator is used.
    Yields a :class:`DrawLog` (a table in Jupyter; ``log.mark(text)`` adds a line)."""
    for name, generator in generators.items():
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"draws({name}=...) names a torch.Generator, got "
                            f"{type(generator).__name__}")
    log = DrawLog(generators)
    if not _ACTIVE:
        for module, name, replacement in _patches():
            _PATCHED.append((module, name, getattr(module, name)))
            setattr(module, name, replacement)
    _ACTIVE.append(log)
    try:
        with _TorchRecorder(log):
            yield log
    finally:
        _ACTIVE.remove(log)
        if not _ACTIVE:
            while _PATCHED:
                module, name, original = _PATCHED.pop()
                setattr(module, name, original)
        log._finish()


# ---------------------------------------------------------------------------------------
# Comparing two logs


def _segments(rows: list[Draw]) -> tuple[list[str], list[tuple[int, Draw]]]:
    """The marks, and each other row with the number of marks before it."""
    marks, placed = [], []
    for row in rows:
        if row.kind == MARK:
            marks.append(row.call)
        else:
            placed.append((len(marks), row))
    return marks, placed


def _when(segment: int, marks: list[str]) -> str:
    """Where a row lies among the marks, e.g. "between the marks «iter()» and «...»"."""
    if not marks:
        return ""
    if segment == 0:
        return f" before the mark «{marks[0]}»"
    if segment == len(marks):
        return f" after the mark «{marks[-1]}»"
    return f" between the marks «{marks[segment - 1]}» and «{marks[segment]}»"


def compare_draws(expected: Iterable[Draw], got: Iterable[Draw], theirs: str = "torch",
                  yours: str = "your code") -> str | None:
    """``None`` if two logs agree; otherwise the first difference, in a sentence: a draw
    that is missing or extra, one made at another moment (between other marks) or in
    another order, or the same call giving other numbers. Both logs must have the same
    marks (the code that runs both makes them)."""
    marks, want = _segments(list(expected))
    their_marks, have = _segments(list(got))
    if marks != their_marks:
        return f"the logs have different marks: {marks} and {their_marks}"
    # rows match when they agree on the call and on where they lie among the marks
    want_keys = [(segment, row.key) for segment, row in want]
    have_keys = [(segment, row.key) for segment, row in have]
    opcodes = difflib.SequenceMatcher(None, want_keys, have_keys, autojunk=False).get_opcodes()
    lost = [i for tag, i1, i2, _, _ in opcodes if tag in ("delete", "replace")
            for i in range(i1, i2)]
    added = [j for tag, _, _, j1, j2 in opcodes if tag in ("insert", "replace")
             for j in range(j1, j2)]

    def moved(want_index: int, have_index: int) -> str:
        """The same draw in both logs, at other places."""
        (their_segment, row), (your_segment, _) = want[want_index], have[have_index]
        if their_segment != your_segment:
            return (f"{yours} {row.act()}{_when(your_segment, marks)}; {theirs} does it"
                    f"{_when(their_segment, marks)} (its row {want_index + 1})")
        return (f"{yours} {row.act()} in another order: it is {theirs}'s row "
                f"{want_index + 1} and {yours}'s row {have_index + 1}"
                f"{_when(your_segment, marks)}")

    for tag, i1, _, j1, _ in opcodes:
        if tag == "equal":
            continue
        if tag in ("delete", "replace"):
            segment, row = want[i1]
            twin = next((j for j in added if have[j][1].key == row.key), None)
            if twin is not None:
                return moved(i1, twin)
            if tag == "replace":
                return (f"row {i1 + 1}: where {theirs} {row.act()}{_when(segment, marks)}, "
                        f"{yours} {have[j1][1].act()}")
            return (f"{yours} does not {row.act(does=False)}, which {theirs} does"
                    f"{_when(segment, marks)} (its row {i1 + 1})")
        segment, row = have[j1]
        twin = next((i for i in lost if want[i][1].key == row.key), None)
        if twin is not None:
            return moved(twin, j1)
        return (f"{yours} {row.act()}{_when(segment, marks)} (its row {j1 + 1}), which "
                f"{theirs} does not")
    for k, ((_, row), (_, other)) in enumerate(zip(want, have), 1):
        if row.values != other.values:
            return (f"row {k}, {row.describe()}, gives other numbers: {theirs} "
                    f"{list(row.values)}, {yours} {list(other.values)}: is the generator "
                    f"seeded (and drawn from) as {theirs} does it?")
    return None


def compare_with_draws(compare: Callable | None = None, key: str = DRAWS_KEY) -> Callable:
    """An ``Exercise.compare`` for observations (dicts) that hold a draw log under ``key``
    (a list of :class:`Draw`, e.g. ``log.rows``): the logs are compared first, with
    :func:`compare_draws`, then the rest with ``compare`` (default: ``difference``)."""
    from minidataloader_course.shared.compare import Raised, difference

    rest = compare or difference

    def compared(expected, got) -> str | None:
        if isinstance(expected, dict) and isinstance(got, dict) and key in expected \
                and key in got and not isinstance(got[key], Raised):
            problem = compare_draws(expected[key], got[key])
            if problem:
                return problem
            expected = {k: v for k, v in expected.items() if k != key}
            got = {k: v for k, v in got.items() if k != key}
        return rest(expected, got)

    return compared

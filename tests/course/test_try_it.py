"""``try_it``, the time limit and clean-up of the workbooks' try-it cells: a hang ends within
the limit with a message that says where, no process it started outlives the block, the next
run works, and loaders that work (the package's, torch's) pass through it unchanged. Then the
rule that every try-it cell uses it, and once in a real Jupyter kernel.

Each scenario runs in a fresh Python process of its own, under a hard time limit of the
test's, so that a try_it that fails to stop a hang fails the test instead of hanging it, and
so that "no child process left" is about that process alone."""

from __future__ import annotations

import ast
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIMIT = 2.0  # the scenarios' time limit, in seconds
# What a stopped block may take beyond its limit: stopping the workers (SIGTERM, up to 2 s,
# then SIGKILL) and unwinding, on a loaded machine.
MARGIN = 12.0
HARD = 120  # seconds a scenario's process may run at all

# The hang every scenario and the kernel test stop, in the code that defines it (one copy for
# both): it needs os, time, torch.utils.data as tud, and MAIN, the main process's pid.
HANGS_IN_WORKERS = """
class HangsInWorkers(tud.Dataset):
    # a __getitem__ that never returns in a worker (and works in the main process)
    def __len__(self):
        return 8

    def __getitem__(self, index):
        if os.getpid() != MAIN:
            time.sleep(10_000)
        return index
"""

PREAMBLE = """
import json, os, signal, sys, time
import multiprocessing as mp
import torch
import torch.utils.data as tud
import minidataloader as mdl
from minidataloader_course import try_it
from minidataloader_course.shared.try_it import TryItTimeout
from minidataloader_course.shared.processes import children

MAIN = os.getpid()
FORK = mp.get_context("fork")
LIMIT = {limit}
results = {{}}

{hangs_in_workers}

def attempt(body, seconds=LIMIT):
    # runs body in try_it(seconds); what came out, how long it took, the children left
    start = time.monotonic()
    outcome = {{"error": None}}
    try:
        with try_it(seconds, "your loader"):
            outcome["value"] = body()
    except BaseException as error:
        outcome["error"], outcome["message"] = type(error).__name__, str(error)
    outcome["seconds"] = time.monotonic() - start
    outcome["children"] = children()
    return outcome


def normal_batches(library):
    loader = library.DataLoader(range(10), batch_size=3, shuffle=True, num_workers=2,
                                multiprocessing_context=FORK,
                                generator=torch.Generator().manual_seed(0))
    return [batch.tolist() for batch in loader]
"""


def scenario(code: str) -> dict:
    """Run ``code`` after PREAMBLE in a fresh process; it fills ``results``, returned."""
    preamble = PREAMBLE.format(limit=LIMIT, hangs_in_workers=HANGS_IN_WORKERS)
    program = preamble + textwrap.dedent(code) + (
        "\nprint('RESULTS=' + json.dumps(results))\n")
    with tempfile.TemporaryDirectory() as folder:  # a file: tracebacks show its lines
        script = pathlib.Path(folder) / "scenario.py"
        script.write_text(program)
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             timeout=HARD, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-4000:]
    line = [x for x in run.stdout.splitlines() if x.startswith("RESULTS=")]
    assert line, run.stdout[-2000:] + run.stderr[-2000:]
    results = json.loads(line[-1][len("RESULTS="):])
    results["stderr"] = run.stderr
    return results


def assert_stopped_in_time(outcome: dict, *says: str) -> None:
    assert outcome["error"] == "TryItTimeout", outcome
    assert LIMIT <= outcome["seconds"] < LIMIT + MARGIN, outcome
    assert outcome["children"] == [], f"processes left after the block: {outcome}"
    for text in (f"more than {LIMIT:g} s", *says):
        assert text in outcome["message"], (text, outcome["message"])


@pytest.mark.timeout(HARD + 30)
@pytest.mark.parametrize("library", ["mdl", "tud"])
def test_a_worker_that_never_answers_is_stopped_and_the_next_run_works(library):
    results = scenario(f"""
        def hung():
            loader = {library}.DataLoader(HangsInWorkers(), batch_size=2, num_workers=2,
                                          multiprocessing_context=FORK)
            return [batch.tolist() for batch in loader]

        results["hung"] = attempt(hung)
        results["again"] = attempt(lambda: normal_batches({library}))
        results["torch"] = normal_batches(tud)
        results["after"] = children()
    """)
    assert_stopped_in_time(results["hung"], "line", "The 2 processes it started were stopped")
    again = results["again"]
    assert again["error"] is None, again
    assert again["value"] == results["torch"]  # torch, outside try_it, is the oracle
    assert again["children"] == results["after"] == []


@pytest.mark.timeout(HARD + 30)
def test_a_main_loop_that_waits_on_a_queue_forever_is_stopped_where_it_waits():
    # the learner's iterator: its worker never answers, its __next__ reads without a
    # timeout, and its clean-up joins the worker without one (which try_it must not let
    # hang in its turn)
    results = scenario("""
        class Iterator:
            def __init__(self):
                self.result_queue = FORK.Queue()
                self.worker = FORK.Process(target=time.sleep, args=(10_000,))
                self.worker.start()

            def __iter__(self):
                return self

            def __next__(self):
                return self.result_queue.get()

            def __del__(self):
                self.worker.join()


        results["hung"] = attempt(lambda: list(Iterator()))
        results["again"] = attempt(lambda: normal_batches(mdl))
    """)
    assert_stopped_in_time(results["hung"], "in __next__: return self.result_queue.get()",
                           "a read from a queue", "The 1 process it started was stopped")
    assert results["again"]["error"] is None and results["again"]["children"] == []


@pytest.mark.timeout(HARD + 30)
def test_neither_except_exception_nor_a_worker_that_ignores_sigterm_keeps_it_running():
    results = scenario("""
        def deaf():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(10_000)


        def swallows():
            worker = FORK.Process(target=deaf)
            worker.start()
            while True:
                try:
                    worker.join()
                except Exception:  # the learner's catch-all: not try_it's interruption
                    pass


        def swallows_everything():
            while True:
                try:
                    time.sleep(10_000)
                except BaseException:  # and even this: try_it still ends the block
                    break
            return "ran on"


        results["deaf"] = attempt(swallows)
        results["everything"] = attempt(swallows_everything)
    """)
    assert_stopped_in_time(results["deaf"], "a join() on a process that does not end")
    assert_stopped_in_time(results["everything"])


@pytest.mark.timeout(HARD + 30)
def test_a_block_that_ends_well_passes_its_values_and_errors_through_and_stops_leftovers():
    results = scenario("""
        def outer(signum, frame):
            pass


        signal.signal(signal.SIGALRM, outer)
        signal.setitimer(signal.ITIMER_REAL, 100.0)  # a time limit of the caller's (every cell)

        def leaves_a_worker():
            FORK.Process(target=time.sleep, args=(10_000,), daemon=True).start()
            return "done"


        results["leftover"] = attempt(leaves_a_worker)

        def fails():
            raise ValueError("the learner's own error")


        results["fails"] = attempt(fails)
        results["torch"] = attempt(lambda: normal_batches(tud))
        results["outer_timer"] = signal.getitimer(signal.ITIMER_REAL)[0]
        results["outer_handler"] = signal.getsignal(signal.SIGALRM) is outer
    """)
    leftover = results["leftover"]
    assert leftover["error"] is None and leftover["value"] == "done", leftover
    assert leftover["children"] == []
    assert "1 process(es) started in this block still ran at its end" in results["stderr"]
    assert results["fails"]["error"] == "ValueError", results["fails"]
    assert results["torch"]["error"] is None and results["torch"]["children"] == []
    assert 90 < results["outer_timer"] <= 100 and results["outer_handler"], results


@pytest.mark.timeout(HARD + 30)
def test_a_loader_in_a_reference_cycle_stops_its_own_workers_before_try_it_would():
    results = scenario("""
        def serve(tasks):
            while tasks.get() is not None:
                pass


        class CyclicLoader:  # holds its iterator, which holds it: freed by the collector
            def __init__(self):
                self.tasks = FORK.Queue()
                self.worker = FORK.Process(target=serve, args=(self.tasks,))
                self.worker.start()
                self.iterator = self
                results["worker"] = self.worker

            def __del__(self):
                self.tasks.put(None)
                self.worker.join(timeout=10)


        results["block"] = attempt(lambda: CyclicLoader() and "made")
        results["exitcode"] = results.pop("worker").exitcode
    """)
    assert results["block"]["error"] is None, results
    assert results["block"]["children"] == []
    assert results["exitcode"] == 0, results  # it ended on its own: no SIGTERM
    assert "still ran at its end" not in results["stderr"]


@pytest.mark.timeout(HARD + 30)
def test_without_sigalrm_a_watchdog_thread_stops_the_block():
    # Windows has no SIGALRM: there the watchdog interrupts the main thread instead
    results = scenario("""
        del signal.SIGALRM

        def hung():
            loader = mdl.DataLoader(HangsInWorkers(), batch_size=2, num_workers=2,
                                    multiprocessing_context=FORK)
            return [batch.tolist() for batch in loader]

        results["hung"] = attempt(hung)
        results["again"] = attempt(lambda: normal_batches(mdl))
    """)
    assert_stopped_in_time(results["hung"], "The 2 processes it started were stopped")
    assert results["again"]["error"] is None and results["again"]["children"] == []


@pytest.mark.timeout(HARD + 30)
def test_multiprocessings_own_servers_started_in_a_block_outlive_it():
    # spawn starts the resource tracker, forkserver its server, on first use: inside the
    # first try-it cell that uses them; the kernel needs them for the rest of its life
    results = scenario("""
        from multiprocessing import forkserver, resource_tracker

        for method in ("spawn", "forkserver"):
            def batches(method=method):
                loader = mdl.DataLoader(list(range(6)), batch_size=2, num_workers=1,
                                        multiprocessing_context=method)
                return [batch.tolist() for batch in loader]

            results[method] = attempt(batches, seconds=90)  # spawn imports torch anew
        results["servers"] = [resource_tracker._resource_tracker._pid,
                              forkserver._forkserver._forkserver_pid]
        results["left"] = children()
        results["again"] = attempt(lambda: normal_batches(mdl))
    """)
    for method in ("spawn", "forkserver"):
        assert results[method]["error"] is None, results[method]
        assert results[method]["value"] == [[0, 1], [2, 3], [4, 5]]
    assert all(results["servers"]), results
    assert sorted(results["left"]) == sorted(results["servers"]), results
    assert results["again"]["error"] is None and "relaunching" not in results["stderr"]


# ---------------------------------------------------------------------------------------
# Every try-it cell uses it
#
# NOTE [ Which cells are try-it cells ]
# A code cell of a chapter that goes into its workbook (tagged `workbook`; not the stub of an
# exercise) is a try-it cell when
#   - it names the learner's code: `myloader`, or a name that a stub of the chapter above the
#     cell defines (a function or class of an exercise's stub, a `%%piece`'s or `%piece`'s
#     name: the magic puts it in the notebook), as a plain name (not `tud.DataLoader`), and
#   - it starts processes (or a pool): a call with `num_workers=` other than 0, a call of
#     `.Process(`, `MultiProcessIterator(` or `ToyPool(`, or a call of a function that a
#     workbook cell of the chapter defines with one of those (chapter 7's `draws`); a call
#     of an exercise's own function (not a piece) with `num_workers=` is a computation
#     (chapter 10's `shared_memory_needed`), not a start.
# Such a cell runs its code inside `with try_it(...)`. The rule is simple rather than exact:
# a cell that starts workers beside a pure function of the learner's is wrapped too (no
# harm: its workers are stopped at its end). The book's own cells run the reference pieces,
# which do not hang.

CHAPTERS = sorted(path for path in (ROOT / "book").glob("[0-9][0-9]_*.md")
                  if 5 <= int(path.name[:2]) <= 15)
_STARTERS = ("Process", "MultiProcessIterator", "ToyPool")
_PIECE = re.compile(r"^%%?piece[ \t]+[\w.]*?(\w+)[ \t]*$", re.MULTILINE)


def _tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


def _python(source: str) -> ast.Module:
    """The cell's code, its magics left out; an empty module if it does not parse."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                     for line in source.splitlines())
    try:
        return ast.parse(code)
    except SyntaxError:
        return ast.Module(body=[], type_ignores=[])


def _stub_names(source: str) -> set[str]:
    names = set(_PIECE.findall(source))
    names.update(node.name for node in _python(source).body
                 if isinstance(node, (ast.FunctionDef, ast.ClassDef)))
    return names


def _called(call: ast.Call) -> str:
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")


def _starts(tree: ast.AST, starting: set[str], models: set[str] = frozenset()) -> bool:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if _called(node) in _STARTERS or _called(node) in starting:
            return True
        if isinstance(node.func, ast.Name) and node.func.id in models:
            continue  # an exercise's function of num_workers: a computation, not a start
        for keyword in node.keywords:
            if keyword.arg == "num_workers" and not (
                    isinstance(keyword.value, ast.Constant) and keyword.value.value == 0):
                return True
    return False


def try_it_cells(path: pathlib.Path) -> list[tuple[int, str]]:
    """(index, source) of the workbook cells of ``path`` that NOTE [ Which cells are try-it
    cells ] calls try-it cells."""
    import jupytext

    learners = {"myloader"}
    starting: set[str] = set()  # functions of the workbook's cells that start processes
    models: set[str] = set()  # the exercises' functions that are not pieces of the loader
    found = []
    for index, cell in enumerate(jupytext.reads(path.read_text(), fmt="md:myst").cells):
        tags = _tags(cell)
        if cell.cell_type != "code" or "workbook" not in tags:
            continue
        if "exercise" in tags:
            learners |= _stub_names(cell.source)
            if not _PIECE.search(cell.source):
                models |= {node.name for node in _python(cell.source).body
                           if isinstance(node, ast.FunctionDef)}
            continue
        tree = _python(cell.source)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and _starts(node, starting):
                starting.add(node.name)
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        if names & learners and _starts(tree, starting, models):
            found.append((index, cell.source))
    return found


def test_the_rule_finds_the_cells_it_is_about():
    """The rule is not vacuous: chapter 6's comparison of the learner's loader with torch's,
    and chapter 7's seed_worker in torch's workers (through a function of an earlier cell),
    are try-it cells."""
    chapter6 = [s for _, s in try_it_cells(ROOT / "book" / "06_workers_and_queues.md")]
    assert any("myloader.DataLoader(" in s for s in chapter6)
    assert any("worker_loop" in s and "Process(" in s for s in chapter6)
    chapter7 = [s for _, s in try_it_cells(ROOT / "book" / "07_randomness_in_workers.md")]
    assert any("draws(worker_init_fn=seed_worker)" in s for s in chapter7)


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_try_it_cell_runs_in_try_it(path):
    unwrapped = [f"cell {index + 1}: {source.splitlines()[0] if source else ''}"
                 for index, source in try_it_cells(path)
                 if not re.search(r"^\s*with try_it\(", source, re.MULTILINE)]
    assert not unwrapped, (
        f"{path.name}: these workbook cells run the learner's code with worker processes "
        f"outside `with try_it(...)` (NOTE [ Which cells are try-it cells ] in "
        f"tests/course/test_try_it.py): {unwrapped}")


# ---------------------------------------------------------------------------------------
# In a real Jupyter kernel


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_in_a_jupyter_kernel_a_hang_fails_its_cell_and_the_kernel_runs_on():
    import nbclient
    import nbformat

    cells = [
        textwrap.dedent("""
        import os, time
        import torch.utils.data as tud
        from minidataloader_course import try_it
        from minidataloader_course.shared.processes import children
        MAIN = os.getpid()
        """) + HANGS_IN_WORKERS,
        f"""
        start = time.monotonic()
        try:
            with try_it({LIMIT}, "your loader"):
                list(tud.DataLoader(HangsInWorkers(), batch_size=2, num_workers=2,
                                    multiprocessing_context="fork"))
        finally:
            seconds = time.monotonic() - start
        """,
        """
        with try_it(30):
            batches = [b.tolist() for b in tud.DataLoader(range(6), batch_size=2, num_workers=2,
                                                          multiprocessing_context="fork")]
        print(f"SECONDS={seconds:.2f} CHILDREN={children()} BATCHES={batches}")
        """,
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(textwrap.dedent(c))
                                               for c in cells])
    notebook.cells[1].metadata["tags"] = ["raises-exception"]
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                                     allow_errors=False, resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    error = [o for o in notebook.cells[1].outputs if o.output_type == "error"]
    assert error and error[0].ename == "TryItTimeout", notebook.cells[1].outputs
    assert f"more than {LIMIT:g} s" in error[0].evalue
    text = "".join(o.get("text", "") for o in notebook.cells[2].outputs)
    found = re.search(r"SECONDS=([\d.]+) CHILDREN=\[\] BATCHES=\[\[0, 1\], \[2, 3\], \[4, 5\]\]",
                      text)
    assert found, notebook.cells[2].outputs
    assert LIMIT <= float(found.group(1)) < LIMIT + MARGIN

"""The book's timing claims on a busy machine: `make book-under-load`, and helpers for
tests/book/test_timing_claims.py.

A claim about timing must hold on a reader's busy laptop (DESIGN.md, "Book conventions"):
each such cell asserts a mechanism (counts, orders, states), measures robustly, or words its
sentence from what it measured. This runs the pages that hold such claims while CPU-bound
processes keep every core busy (two per core: a load average about 2 x cores, plus the
page's own work), and fails if any of their cells fails:

    make book-under-load                        # every page below, about 10 minutes on 2 cores
    python -m tests.book.under_load 06_workers_and_queues.md ...    # some of them

It is not part of `make test` (its budget is 30 minutes); test_timing_claims.py runs the
measuring cells of the claims that failed on busy machines before, under the same load.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import subprocess
import sys
import time

import jupytext
import nbclient
import nbformat
from nbclient.exceptions import CellExecutionError, CellTimeoutError

BOOK = pathlib.Path(__file__).resolve().parents[2] / "book"

# The pages whose cells time something (wall clock, CPU time, or waits with a deadline).
TIMED_PAGES = [
    "01_epochs_batches_iterations.md", "02_dataset.md", "04_collate.md",
    "06_workers_and_queues.md", "07_randomness_in_workers.md", "08_persistent_workers.md",
    "09_pin_memory_and_gpu.md", "10_shutdown.md", "10_when_things_go_wrong.md",
    "11_performance.md", "12_distributed_sampling.md", "appendix_differences.md",
    "appendix_myths.md",
]
CELL_TIMEOUT = 180  # seconds, as in _config.yml


@contextlib.contextmanager
def busy_cores(per_core: int = 2):
    """Keep every core busy with CPU-bound processes (`per_core` for each) while inside."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(per_core * (os.cpu_count() or 1))]
    try:
        time.sleep(0.5)  # they are running
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()


def code_cells(page: str, *markers: str, before: dict[str, str] | None = None):
    """The code cells of `page`: all of them, or only the first (the page's imports) and
    those whose source contains one of `markers`. `before` maps a marker to code run in a
    cell of its own just before that marker's cell (to break something on purpose)."""
    notebook = jupytext.read(BOOK / page)
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"
             and "skip-execution" not in cell.metadata.get("tags", [])]
    if markers:
        cells = cells[:1] + [cell for cell in cells[1:]
                             if any(marker in cell.source for marker in markers)]
    chosen = []
    for cell in cells:
        for marker, code in (before or {}).items():
            if marker in cell.source:
                chosen.append(nbformat.v4.new_code_cell(code))
        chosen.append(cell)
    notebook.cells = chosen
    return notebook


def run(notebook) -> list[tuple[int, str]]:
    """Run the notebook's cells in a kernel with book/ as the working directory, as the
    build does; go on after a failing cell. The failures: (cell number, last line)."""
    client = nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(BOOK)}})
    failures = []
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            try:
                client.execute_cell(cell, index)
            except CellTimeoutError:
                failures.append((index, f"timed out after {CELL_TIMEOUT} s"))
                break  # the kernel is still busy with it
            except CellExecutionError as error:
                if "raises-exception" not in cell.metadata.get("tags", []):
                    lines = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines()
                    failures.append((index, lines[-1] if lines else "error"))
    return failures


def main(pages: list[str]) -> int:
    failed = 0
    with busy_cores():
        for page in pages or TIMED_PAGES:
            start = time.monotonic()
            failures = run(code_cells(page))
            load = os.getloadavg()[0]
            print(f"{page}: {'passed' if not failures else 'FAILED'} in "
                  f"{time.monotonic() - start:.0f} s (load average {load:.1f})", flush=True)
            for index, line in failures:
                print(f"    cell {index}: {line}", flush=True)
            failed += bool(failures)
    print(f"book-under-load: {failed} of {len(pages or TIMED_PAGES)} page(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

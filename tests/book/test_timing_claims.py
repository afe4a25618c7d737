"""The book's timing claims hold on a busy machine, and still catch a broken mechanism.

- Under load (two CPU-bound processes per core), the cells that failed on busy machines
  before pass: chapter 6's queue-flow summary, the appendix's killed workers and shutdowns.
  (`make book-under-load` runs every page that times something.)
- With the mechanism broken on purpose, the claim's cell fails: a reorder buffer that holds
  batches back under in_order=False.
- `make book` lists the pages whose cells failed (tests/book/build_report.py), and builds
  them: a mini book with the book's execution settings, one page failing in its second cell.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.book import build_report
from tests.book.under_load import busy_cores, code_cells, run

ROOT = pathlib.Path(__file__).resolve().parents[2]

QUEUE_FLOW = ("record_queue_flow(num_workers=4", "summaries = {name: trace.summary()")
APPENDIX_CELLS = ("class WaitsFromSampleTwo", "class ExitsAtOnce", "class Stuck(",
                  "def stop_time_of_garbage", "class DiesHoldingTheLock")

# The reorder buffer holds early batches back whatever in_order says.
BROKEN_REORDERING = """
import minidataloader.dataloader as _dataloader
_init = _dataloader._MultiProcessingDataLoaderIter.__init__
def _always_in_order(self, loader):
    _init(self, loader)
    self._in_order = True
_dataloader._MultiProcessingDataLoaderIter.__init__ = _always_in_order
"""


@pytest.mark.parametrize("page, markers", [
    ("06_workers_and_queues.md", QUEUE_FLOW),
    ("appendix_differences.md", APPENDIX_CELLS),
], ids=["ch06-queue-flow", "appendix-shutdown"])
def test_timing_claims_hold_under_load(page, markers):
    notebook = code_cells(page, *markers)
    assert len(notebook.cells) == len(markers) + 1, "a marker no longer finds its cell"
    with busy_cores():
        assert run(notebook) == []


def test_a_broken_mechanism_fails_its_cell():
    notebook = code_cells("06_workers_and_queues.md", *QUEUE_FLOW,
                          before={QUEUE_FLOW[0]: BROKEN_REORDERING})
    failures = run(notebook)
    summary = len(notebook.cells) - 1  # the claims' cell
    assert [index for index, _ in failures] == [summary], failures
    assert "AssertionError" in failures[0][1]


PAGE = """---
jupytext:
  text_representation: {{extension: .md, format_name: myst, format_version: 0.13}}
kernelspec: {{display_name: Python 3 (ipykernel), language: python, name: python3}}
---

# {title}

```{{code-cell}} ipython3
print("first cell ran")
```

```{{code-cell}} ipython3
{second}
```

```{{code-cell}} ipython3
print("third cell ran")
```
"""


def test_make_book_builds_a_failing_page_and_names_it(tmp_path):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    sphinx = config["sphinx"]["config"]
    assert sphinx["nb_execution_raise_on_error"] is False  # a failing page does not abort
    mini = {"title": "mini", "only_build_toc_files": True, "execute": config["execute"],
            "sphinx": {"config": {key: sphinx[key] for key in sphinx
                                  if key.startswith("nb_execution")}}}
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(mini))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: fine\nchapters:\n  - file: broken\n")
    (tmp_path / "fine.md").write_text(PAGE.format(title="Fine", second="print('fine')"))
    (tmp_path / "broken.md").write_text(PAGE.format(title="Broken", second="assert 1 == 2"))
    jupyter_book = shutil.which("jupyter-book", path=str(pathlib.Path(sys.executable).parent))
    built = subprocess.run([jupyter_book, "build", str(tmp_path)], capture_output=True,
                           text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    html = tmp_path / "_build" / "html"
    broken = (html / "broken.html").read_text()
    # each text is in its cell's source; a cell that ran shows it in its output too
    assert broken.count("first cell ran") == 2 and "AssertionError" in broken
    assert broken.count("third cell ran") == 1  # built, not run: the page stopped at cell 2
    assert (html / "fine.html").read_text().count("first cell ran") == 2
    assert build_report.failed_pages(tmp_path / "_build") == {"broken": "CellExecutionError"}
    assert build_report.main(["build_report", str(tmp_path / "_build")]) == 1

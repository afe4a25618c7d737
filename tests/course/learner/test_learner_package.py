"""The learner's own package (``notebooks/myloader``): made from the stubs, written a piece at a
time by ``%%piece`` cells, never overwritten without asking, reset with a backup, importable
by scripts and by spawned worker processes."""

from __future__ import annotations

import multiprocessing
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from minidataloader_course import exercises
from minidataloader_course.learner import (
    EDITED,
    STUB,
    WRITTEN,
    PieceConflict,
    ensure_package,
    fill_with_solutions,
    find_regions,
    import_package,
    piece_exercises,
    region_text,
    replace_region,
    reset,
    status,
    stub_regions,
    write_piece,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A fresh package from the stubs, in a folder called notebooks, the current folder."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    monkeypatch.chdir(folder)
    path = folder / "myloader"
    ensure_package(path)
    yield path
    for name in [n for n in sys.modules if n == "myloader" or n.startswith("myloader.")]:
        del sys.modules[name]
    if str(folder) in sys.path:
        sys.path.remove(str(folder))


def test_every_piece_asked_for_has_a_stub_and_every_stub_a_chapter():
    stubs = stub_regions()
    asked = piece_exercises()
    assert set(asked) <= set(stubs), set(asked) - set(stubs)
    for piece, region in stubs.items():
        assert "(chapter " in region.note, f"{piece}: its marker should say which chapter"
        if int(region.note.split("chapter ")[1].split(")")[0].split(";")[0]) <= 13:
            assert piece in asked, f"{piece} is in the stubs, but no exercise asks for it"
    for asking in asked.values():
        for exercise in asking:
            assert exercise.name in exercises()


def test_regions_read_and_replace_methods_too():
    text = textwrap.dedent('''\
        class Iterator:
            def given(self):
                return 1

            # >>> piece: Iterator.step (chapter 6)
            def step(self):
                raise NotImplementedError
            # <<< piece: Iterator.step
        ''')
    region = find_regions(text, "dataloader")["Iterator.step"]
    assert region.piece == "dataloader.Iterator.step"
    assert region_text(text, region) == "def step(self):\n    raise NotImplementedError"
    changed = replace_region(text, region, "def step(self):\n    return 2\n")
    namespace: dict = {}
    exec(changed, namespace)
    assert namespace["Iterator"]().step() == 2 and namespace["Iterator"]().given() == 1
    with pytest.raises(ValueError, match="no end line"):
        find_regions("# >>> piece: Lost (chapter 3)\n", "sampler")


def test_a_fresh_package_is_all_stubs_and_imports(package):
    assert set(status(package).values()) == {STUB}
    module = import_package(package)
    assert module.DataLoader.__module__ == "myloader.dataloader"
    with pytest.raises(NotImplementedError):
        module.DataLoader(range(3))


def test_a_piece_written_twice_needs_no_question_but_an_edit_elsewhere_does(package):
    piece = "sampler.SequentialSampler"
    first = "class SequentialSampler(Sampler):\n    pass"
    assert write_piece(package, piece, first) == "written"
    assert status(package)[piece] == WRITTEN
    assert write_piece(package, piece, first + "  # again") == "written"
    # the learner edits the file in JupyterLab's editor
    path = package / "sampler.py"
    path.write_text(path.read_text().replace("pass  # again", "pass  # edited by hand"))
    assert status(package)[piece] == EDITED
    with pytest.raises(PieceConflict) as conflict:
        write_piece(package, piece, first)
    assert "edited by hand" in conflict.value.current
    assert "edited by hand" in path.read_text()
    assert write_piece(package, piece, first, force=True) == "written"
    backups = list((package / ".backups").glob("sampler.py.*"))
    assert len(backups) == 1 and "edited by hand" in backups[0].read_text()


def test_the_book_gaining_a_piece_leaves_the_learners_work_alone(package):
    write_piece(package, "sampler.SequentialSampler", "class SequentialSampler(Sampler):\n    x = 1")
    path = package / "sampler.py"
    old = path.read_text()
    start = old.index("# >>> piece: BatchSampler")
    path.write_text(old[:start])  # a package made before the book had BatchSampler
    (package / "pin_memory.py").unlink()
    added = ensure_package(package)
    assert "sampler.BatchSampler" in added and "pin_memory.py" in added
    assert "x = 1" in path.read_text()
    import_package(package)


def test_reset_asks_first_and_keeps_a_backup(package, monkeypatch, capsys):
    from minidataloader_course.__main__ import main

    write_piece(package, "sampler.SequentialSampler", "class SequentialSampler(Sampler):\n    x = 1")
    monkeypatch.setattr("builtins.input", lambda question: "n")
    assert main(["reset", "--path", str(package)]) == 1
    said = capsys.readouterr().out
    assert "sampler.SequentialSampler" in said and "nothing changed" in said
    assert status(package)["sampler.SequentialSampler"] == WRITTEN
    monkeypatch.setattr("builtins.input", lambda question: "y")
    assert main(["reset", "--path", str(package)]) == 0
    assert set(status(package).values()) == {STUB}
    backups = list(package.parent.glob("myloader-backup-*"))
    assert len(backups) == 1 and "x = 1" in (backups[0] / "sampler.py").read_text()
    assert main(["status", "--path", str(package)]) == 0
    assert re.search(rf"sampler.SequentialSampler +{STUB}\n", capsys.readouterr().out)


def test_fill_asks_before_replacing_written_pieces_and_keeps_a_backup(package, monkeypatch,
                                                                      capsys):
    from minidataloader_course.__main__ import main

    write_piece(package, "sampler.SequentialSampler", "class SequentialSampler(Sampler):\n    x = 1")
    monkeypatch.setattr("builtins.input", lambda question: "n")
    assert main(["fill", "3", "--path", str(package)]) == 1
    assert "sampler.SequentialSampler" in capsys.readouterr().out
    assert "x = 1" in (package / "sampler.py").read_text()
    monkeypatch.setattr("builtins.input", lambda question: "y")
    assert main(["fill", "3", "--path", str(package)]) == 0
    states = status(package)
    assert states["sampler.SequentialSampler"] == WRITTEN and states["sampler.RandomSampler"] == WRITTEN
    assert states["collate.default_collate"] == STUB, "chapter 4's piece was filled for chapter 3"
    assert "x = 1" not in (package / "sampler.py").read_text()
    backups = list(package.parent.glob("myloader-backup-*"))
    assert len(backups) == 1 and "x = 1" in (backups[0] / "sampler.py").read_text()


def test_init_writes_every_workbook_and_the_package_and_keeps_a_changed_one(tmp_path,
                                                                           monkeypatch, capsys):
    from minidataloader_course.__main__ import main

    assert main(["init", str(tmp_path / "ws")]) == 0
    shipped = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(p.name for p in (tmp_path / "ws").glob("*.ipynb")) == shipped
    assert (tmp_path / "ws" / "myloader" / "__init__.py").exists()
    mine = tmp_path / "ws" / shipped[0]
    mine.write_text("my work")
    monkeypatch.setattr("builtins.input", lambda question: "n")
    assert main(["init", str(tmp_path / "ws")]) == 0
    assert mine.read_text() == "my work" and f"{mine.name}: kept yours" in capsys.readouterr().out
    monkeypatch.setattr("builtins.input", lambda question: "y")
    assert main(["init", str(tmp_path / "ws")]) == 0
    assert mine.read_text() != "my work"
    assert mine.with_name(mine.name + ".bak").read_text() == "my work"


def test_reset_of_one_piece(package):
    write_piece(package, "sampler.SequentialSampler", "class SequentialSampler(Sampler):\n    x = 1")
    write_piece(package, "sampler.BatchSampler", "class BatchSampler(Sampler):\n    y = 2")
    reset(package, ["sampler.SequentialSampler"])
    states = status(package)
    assert states["sampler.SequentialSampler"] == STUB
    assert states["sampler.BatchSampler"] == WRITTEN


def _batches_in_a_spawned_process(queue):
    import myloader

    queue.put([batch.tolist() for batch in myloader.DataLoader(range(5), batch_size=2)])


def test_a_spawned_process_imports_the_learners_package(package):
    fill_with_solutions(package, 5)
    import_package(package)  # puts its folder on sys.path, which spawn passes on
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_batches_in_a_spawned_process, args=(queue,))
    process.start()
    try:
        assert queue.get(timeout=60) == [[0, 1], [2, 3], [4]]
    finally:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()


def test_a_script_imports_the_learners_package(package):
    fill_with_solutions(package, 5)
    script = package.parent / "train.py"
    script.write_text("import myloader\nprint(len(myloader.DataLoader(range(10), batch_size=4)))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, cwd=package.parent)
    assert done.stdout.strip() == "3", done.stderr


# ---------------------------------------------------------------------------------------
# The magic, in an IPython shell


@pytest.fixture
def shell(package):
    from IPython.core.interactiveshell import InteractiveShell

    ipython = InteractiveShell.instance()
    ipython.run_cell("%load_ext minidataloader_course.learner", store_history=False)
    yield ipython
    InteractiveShell.clear_instance()


def run(shell, source: str, capsys) -> str:
    result = shell.run_cell(source, store_history=False)
    assert result.error_in_exec is None, result.error_in_exec
    return capsys.readouterr().out


SEQUENTIAL = ("class SequentialSampler(Sampler):\n"
              "    def __init__(self, data_source):\n"
              "        self.data_source = data_source\n\n"
              "    def __iter__(self):\n"
              "        return iter(range(len(self.data_source)))\n\n"
              "    def __len__(self):\n"
              "        return len(self.data_source)\n")


def test_piece_saves_the_cell_and_binds_what_the_package_says(shell, package, capsys):
    said = run(shell, "%%piece sampler.SequentialSampler\n" + SEQUENTIAL, capsys)
    assert "saved: SequentialSampler in myloader/sampler.py" in said
    assert SEQUENTIAL.strip() in (package / "sampler.py").read_text()
    sampler = shell.user_ns["SequentialSampler"]
    assert sampler.__module__ == "myloader.sampler"
    assert list(sampler(range(3))) == [0, 1, 2]
    from minidataloader_course import check

    assert check(sampler).passed


def test_piece_refuses_what_cannot_be_a_piece(shell, package, capsys):
    before = (package / "sampler.py").read_text()
    said = run(shell, "%%piece sampler.SequentialSampler\nclass SequentialSampler(:\n", capsys)
    assert "Not saved" in said and "not valid Python" in said
    said = run(shell, "%%piece sampler.SequentialSampler\ndef helper():\n    pass\n", capsys)
    assert "must define 'SequentialSampler'" in said
    said = run(shell, "%%piece sampler.NoSuchPiece\nclass NoSuchPiece:\n    pass\n", capsys)
    assert "no piece 'NoSuchPiece'" in said
    assert (package / "sampler.py").read_text() == before


def test_piece_asks_before_overwriting_an_edit_made_elsewhere(shell, package, capsys):
    run(shell, "%%piece sampler.SequentialSampler\n" + SEQUENTIAL, capsys)
    path = package / "sampler.py"
    path.write_text(path.read_text().replace("return len(self.data_source)",
                                             "return len(self.data_source)  # mine"))
    # nobody can answer in this shell (as in a notebook run by a script): the answer is no
    said = run(shell, "%%piece sampler.SequentialSampler\n" + SEQUENTIAL, capsys)
    assert "edited outside this notebook" in said and "Not saved" in said
    assert "# mine" in path.read_text()
    said = run(shell, "%%piece --overwrite sampler.SequentialSampler\n" + SEQUENTIAL, capsys)
    assert "saved" in said and "# mine" not in path.read_text()
    assert list((package / ".backups").glob("sampler.py.*"))


def test_piece_as_a_line_loads_the_learners_version(shell, package, capsys, monkeypatch):
    run(shell, "%%piece sampler.SequentialSampler\n" + SEQUENTIAL, capsys)
    replaced = []  # in JupyterLab, set_next_input replaces the cell's text
    monkeypatch.setattr(shell, "set_next_input", lambda text, replace: replaced.append(
        (text, replace)))
    shell.user_ns.pop("SequentialSampler")
    said = run(shell, "%piece sampler.SequentialSampler", capsys)
    assert SEQUENTIAL.strip() in said  # a terminal has no cell to replace: the code is printed
    assert replaced == [("%%piece sampler.SequentialSampler\n" + SEQUENTIAL.strip(), True)]
    # the check after the cell checks the version the file holds, even in a fresh kernel
    assert shell.user_ns["SequentialSampler"].__module__ == "myloader.sampler"


def test_a_loaded_piece_is_shown_folded_in_a_notebook():
    # JupyterLab replaces the cell and must not show the code a second time, open
    from minidataloader_course.learner._magic import _folded

    bundle = _folded("Still only %piece in this cell?", "x = 1 < 2")
    assert bundle["text/html"].startswith("<details><summary>")
    assert "<details open" not in bundle["text/html"] and "x = 1 &lt; 2" in bundle["text/html"]
    assert bundle["text/plain"].endswith("x = 1 < 2")


def test_the_extension_finds_the_package_from_a_chapter_in_book(tmp_path, monkeypatch):
    from minidataloader_course.learner import find_package

    (tmp_path / "book").mkdir()
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "book")
    assert find_package() == tmp_path / "notebooks" / "myloader"
    monkeypatch.chdir(tmp_path / "notebooks")
    assert find_package() == tmp_path / "notebooks" / "myloader"
    assert os.path.isdir(tmp_path / "notebooks")

"""The stateful loader builds on the hooks the core declares, and on nothing else of it:
every private name of the core that minidataloader/stateful/ uses (reads, overrides,
imports) is one that NOTE [ Hooks for the stateful loader ] lists -- and the NOTE lists
nothing the extra does not use. Read from the source with ``ast``, so a new reach into the
core's state fails here, whatever the tests of behaviour say."""

import ast
import pathlib
import re

PACKAGE = pathlib.Path(__file__).resolve().parents[3] / "minidataloader"
CORE = sorted(PACKAGE.glob("*.py"))  # the core: the package's top-level modules
STATEFUL = sorted((PACKAGE / "stateful").glob("*.py"))
NOTE = "# NOTE [ Hooks for the stateful loader ]"


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name != "_"


def core_names() -> set[str]:
    """Every private name the core defines: functions, classes, attributes, module globals."""
    found = set()
    for path in CORE:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, ast.Attribute):
                found.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.add(node.id)
        found.add(path.stem)  # a module of the core, imported by name (_tracing)
    return {name for name in found if private(name)}


def names_used_by(paths) -> set[str]:
    """Every private name these modules read, define, override or import."""
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute):
                found.add(node.attr)
            elif isinstance(node, ast.Name):
                found.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, ast.ImportFrom):
                found.update(alias.name for alias in node.names)
    return {name for name in found if private(name)}


def declared_hooks() -> set[str]:
    """The names NOTE [ Hooks for the stateful loader ] lists (the last part of a dotted
    name: ``_BaseDataLoaderIter._next_index()`` declares ``_next_index``)."""
    lines = (PACKAGE / "dataloader.py").read_text().splitlines()
    start = lines.index(NOTE)
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("#"):
            break
        block.append(line)
    words = re.findall(r"[\w.]+", "\n".join(block))
    last_parts = [word.rstrip(".").split(".")[-1] for word in words]
    return {name for name in last_parts if private(name)}


def test_the_note_lists_exactly_the_core_names_the_extra_uses():
    used = names_used_by(STATEFUL) & core_names()
    declared = declared_hooks()
    assert used - declared == set(), (
        f"minidataloader/stateful uses private names of the core that NOTE [ Hooks for the "
        f"stateful loader ] does not declare: {sorted(used - declared)}")
    assert declared - used == set(), (
        f"the NOTE declares names the extra no longer uses: {sorted(declared - used)}")


def test_the_hooks_are_a_handful():
    attributes = {"_dataset", "_dataset_kind", "_index_sampler", "_sampler_iter",
                  "_num_workers", "_persistent_workers", "_base_seed", "_num_yielded"}
    classes_and_modules = {"_SingleProcessDataLoaderIter", "_MultiProcessingDataLoaderIter",
                           "_DatasetKind", "_ExceptionWrapper", "_is_error", "_is_stream_end",
                           "_tracing"}
    hooks = declared_hooks() - attributes - classes_and_modules
    assert hooks == {"_new_base_seed", "_get_iterator", "_iterator", "_next_index", "_keepers",
                     "_first_batch", "_reset", "_get_data", "_process_data"}


def test_the_check_catches_a_new_reach_into_the_core(tmp_path):
    """The check is not vacuous: a module reading the reorder buffer is caught."""
    probe = tmp_path / "probe.py"
    probe.write_text("def peek(iterator):\n    return iterator._task_info\n")
    assert "_task_info" in names_used_by([probe]) & core_names() - declared_hooks()

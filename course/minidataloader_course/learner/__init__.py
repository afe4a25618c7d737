"""The learner's own loader, ``notebooks/myloader/``, written a piece at a time in the
workbooks: the package's files and pieces (``package.py``, see its NOTE), the ``%%piece`` magic
(``_magic.py``) and the stubs the package is made from (``stubs/``)."""

from minidataloader_course.learner.package import (
    BACKUPS,
    EDITED,
    PACKAGE,
    STATE_FILE,
    STUB,
    STUBS,
    WRITTEN,
    PieceConflict,
    Region,
    backup,
    backup_package,
    digest,
    ensure_package,
    fill_with_solutions,
    find_package,
    find_regions,
    import_package,
    package_regions,
    piece_exercises,
    piece_steps,
    reference_source,
    region_text,
    replace_region,
    reset,
    split_piece,
    status,
    stub_files,
    stub_region,
    stub_regions,
    write_piece,
)


def load_ipython_extension(ipython) -> None:
    """``%load_ext minidataloader_course.learner``: the ``%%piece`` magic, and the
    learner's package made (if need be) and importable."""
    from minidataloader_course.learner._magic import load

    load(ipython)


__all__ = ['EDITED', 'STUB', 'WRITTEN', 'backup', 'backup_package', 'BACKUPS', 'digest', 'ensure_package', 'fill_with_solutions', 'find_package', 'find_regions', 'import_package', 'PACKAGE', 'package_regions', 'piece_exercises', 'piece_steps', 'PieceConflict', 'reference_source', 'Region', 'region_text', 'replace_region', 'reset', 'split_piece', 'STATE_FILE', 'status', 'stub_files', 'stub_region', 'stub_regions', 'STUBS', 'write_piece', "load_ipython_extension"]

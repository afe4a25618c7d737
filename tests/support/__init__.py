"""Helpers shared by the test folders: import them as ``tests.support.<module>``.

Every folder under tests/ is a package (it has an ``__init__.py``), so pytest puts the
repository root on ``sys.path`` and these imports work from any test, from spawned workers
(spawn hands the parent's ``sys.path`` over) and from scripts run with ``PYTHONPATH`` set to
the root (``mp_procs.env``).

    differential   run a scenario with torch.utils.data and minidataloader, compare all
    mp_datasets    datasets and functions that run inside worker processes
    mp_procs       watch processes, run scripts in subprocesses with a time limit
    measure_times  how long noticing a dead worker and shutting down take
"""

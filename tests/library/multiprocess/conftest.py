"""Multi-process tests: every test here has a time limit (the `timeout` mark that
tests/conftest.py gives this folder, plus bounded joins and subprocess timeouts inside), so a
hang fails, and the garbage collector runs between tests (tests/conftest.py).

The helpers live in the tests.support package: the differential helper, and the datasets
that run in workers (mp_datasets.py), importable by spawned workers too, because spawn hands
the parent's sys.path over (pytest put the repository root on it: tests/ is a package)."""

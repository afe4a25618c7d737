"""Shared fixtures. The browser fixture opens pages in headless Chromium (Debian's, or the one
MINIDATALOADER_CHROMIUM names) through Playwright and fails the test on any request that
leaves the machine or any console error. Every test of the folders that start worker processes
has a time limit, so that a hang fails."""

from __future__ import annotations

import gc
import os
import pathlib
import re
from urllib.parse import urlparse

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD_HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
# The browser: MINIDATALOADER_CHROMIUM names its executable, or says "playwright" for
# Playwright's own Chromium (`python -m playwright install chromium`, as CI on GitHub does,
# where Ubuntu's chromium package is a snap stub); by default, Debian's.
CHROMIUM = os.environ.get("MINIDATALOADER_CHROMIUM") or "/usr/bin/chromium"
PLAYWRIGHTS_OWN = CHROMIUM == "playwright"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", ""}
# Folders whose tests start worker processes (plus bounded joins and subprocess timeouts inside).
WORKER_FOLDERS = (ROOT / "tests" / "library" / "multiprocess", ROOT / "tests" / "library" / "stateful")


# The files of the longest tests (a workbook in a kernel, a whole milestone: 10 to 50 s each).
# They run first: `make test` spreads tests with xdist's worksteal, where a worker that runs
# out of tests takes half of what the other has left; with the long ones run early, what is
# left at the end is short, and neither worker waits long for the other.
LONGEST_FIRST = (ROOT / "tests" / "course" / "test_installed_course.py",
                 ROOT / "tests" / "book" / "test_notebooks.py",
                 ROOT / "tests" / "course" / "test_milestones.py")


def pytest_addoption(parser):
    parser.addoption("--chapter", type=int, default=None, metavar="N",
                     help="run only the tests of chapter N (make check CH=N): its folder's "
                          "tests, and the tests of its exercises, items, mutants and workbooks")


def chapter_of(item) -> int | None:
    """The chapter a test is about: its folder (tests/course/chNN/), an exercise, item or
    mutant it is run for, or a chapter's page or workbook in its name; None if none."""
    folder = re.search(r"/ch(\d\d)/", "/" + str(item.path.relative_to(ROOT)))
    if folder:
        return int(folder.group(1))
    from minidataloader_course import exercises, questions

    known = {**exercises(), **questions()}
    for value in getattr(getattr(item, "callspec", None), "params", {}).values():
        for part in value if isinstance(value, (tuple, list)) else (value,):
            name = getattr(part, "exercise", part)  # a Mutant names its exercise
            if isinstance(name, str) and name in known:
                return int(known[name].chapter[2:])
    found = re.search(r"\[(?:ch)?(\d\d)[_-]", item.nodeid)
    return int(found.group(1)) if found else None


def pytest_collection_modifyitems(config, items):
    chapter = config.getoption("--chapter")
    if chapter is not None:
        kept = [item for item in items if chapter_of(item) == chapter]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    for item in items:
        if item.path.parent in WORKER_FOLDERS and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(60))
    items.sort(key=lambda item: item.path not in LONGEST_FIRST)  # stable: otherwise as collected


@pytest.fixture(autouse=True)
def collect_garbage_iterators(request):
    """Iterators caught in reference cycles are shut down by the garbage collector whenever
    it runs: in the worker folders, make that happen between tests, not in the middle of the
    next one, and before forked workers inherit them."""
    yield
    if request.path.parent in WORKER_FOLDERS:
        gc.collect()


def is_local(url: str) -> bool:
    parsed = urlparse(url)
    if parsed.scheme in ("file", "data", "blob", "about"):
        return True
    return parsed.hostname in LOCAL_HOSTS


class PageWatch:
    """What a page did that it must not: requests to other hosts, console errors."""

    def __init__(self):
        self.external_requests: list[str] = []
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []

    def assert_clean(self):
        assert not self.external_requests, f"requests left the machine: {self.external_requests}"
        assert not self.page_errors, f"JavaScript errors: {self.page_errors}"
        assert not self.console_errors, f"console errors: {self.console_errors}"


@pytest.fixture(scope="session")
def chromium_browser():
    if not PLAYWRIGHTS_OWN and not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium (`apt-get install chromium`, "
                    "or run `make test` as root, which installs it), or set "
                    "MINIDATALOADER_CHROMIUM to a Chromium (\"playwright\": Playwright's own)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        # launch() gives the browser a new, empty profile of its own
        browser = playwright.chromium.launch(
            executable_path=None if PLAYWRIGHTS_OWN else CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium_browser):
    """A fresh page; every non-local request is aborted and recorded (the test then fails)."""
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    watch = PageWatch()

    def route(route_obj):
        url = route_obj.request.url
        if is_local(url):
            route_obj.continue_()
        else:
            watch.external_requests.append(url)
            route_obj.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda msg: msg.type == "error" and watch.console_errors.append(msg.text))
    page.on("pageerror", lambda exc: watch.page_errors.append(str(exc)))
    page.watch = watch
    yield page
    context.close()


@pytest.fixture(scope="session")
def built_book():
    index = BUILD_HTML / "index.html"
    if not index.exists():
        pytest.fail("the book is not built: run `make book-strict` (or `make test`) first")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return BUILD_HTML


MUTANT_TEST = "test_a_wrong_variant_is_refused_and_the_verdict_names_the_rule"


def pytest_terminal_summary(terminalreporter):
    """The fraction of wrong answers (tests/course/checker/test_mutants.py) the exercise checker
    refused with a verdict that names the rule: it must be 100 %."""
    reports = [report for outcome in ("passed", "failed")
               for report in terminalreporter.stats.get(outcome, [])
               if getattr(report, "when", "") == "call" and MUTANT_TEST in report.nodeid]
    if reports:
        refused = sum(report.passed for report in reports)
        terminalreporter.write_line(
            f"exercise checker: {refused} of {len(reports)} wrong answers refused with a verdict "
            f"that names the rule ({100 * refused / len(reports):.1f} %)")

"""The workbooks in a real JupyterLab: ``jupyter lab`` on 127.0.0.1 (with a token), opened in
headless Chromium. A workbook's cells run through the interface (Run, Run All Cells), a check's
verdict appears, the live explorer widget answers a slider, and a chapter (``.md``) opens as a
notebook through jupytext. Nothing the page asks for leaves the machine."""

from __future__ import annotations

import json
import os
import pathlib
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = pytest.mark.browser
ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKBOOK = ROOT / "notebooks" / "01_epochs_batches_iterations.ipynb"
CHAPTER = ROOT / "book" / "01_epochs_batches_iterations.md"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on 127.0.0.1 over a folder holding workbook 1 and chapter 1, with
    settings of its own (no news, no update checks); killed, kernels and all, at the end."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book").mkdir()
    shutil.copy(WORKBOOK, tmp_path / "notebooks")
    shutil.copy(CHAPTER, tmp_path / "book")
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    notebooks = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    notebooks.mkdir(parents=True)
    # every cell in the page, not only those scrolled to: what the test looks for is there
    (notebooks / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    port, token = free_port(), secrets.token_hex(16)
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
               f"--port={port}", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={tmp_path}", "--LabApp.expose_app_in_browser=True",
               f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
               f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    environment = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
                   "JUPYTER_CONFIG_DIR": str(tmp_path / "config")}
    log = open(tmp_path / "lab.log", "w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment,
                              start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                assert server.poll() is None, (tmp_path / "lab.log").read_text()
                assert time.monotonic() < deadline, "JupyterLab did not start in 90 s"
                time.sleep(0.5)
        yield url, token
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        try:  # its kernels run in the same session: none may outlive it
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        log.close()


def run_menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-item", has_text=menu).first.click()
    page.locator(".lm-Menu-item:visible", has_text=item).first.click()


def test_a_workbook_runs_in_jupyterlab(lab, page):
    url, token = lab
    page.set_default_timeout(90_000)
    page.goto(f"{url}/lab/tree/notebooks/{WORKBOOK.name}?token={token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell")
    page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for()  # the kernel
    run_menu(page, "Run", "Run All Cells")

    # a check's verdict, as the reader sees it
    verdict = page.locator(".jp-OutputArea-output .mdl-verdict").first
    verdict.wait_for()
    # the first is a check-yourself item or an exercise, depending on the chapter's order
    assert re.search(r"not (attempted|answered) yet", verdict.inner_text())
    verdicts = page.locator(".jp-OutputArea-output .mdl-verdict")
    verdicts.filter(has_text="not attempted yet").first.wait_for()  # an exercise's stub

    # the live explorer: move a slider, and the kernel redraws the view
    view = page.locator(".jp-OutputArea-output .mdl-explorer").first
    view.wait_for()
    view.scroll_into_view_if_needed()
    before = view.inner_text()
    handle = page.locator(".jp-OutputArea-output .widget-slider .noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    for _ in range(3):
        handle.press("ArrowRight")
    page.wait_for_function("before => document.querySelector("
                           "'.jp-OutputArea-output .mdl-explorer').innerText !== before", arg=before)
    assert view.inner_text() != before

    # the cells ran to the end: the last code cell has an execution count
    counts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
    assert counts and all("*" not in count and "[ ]" not in count for count in counts[-3:])

    # a chapter opens as a notebook through jupytext
    page.evaluate("async path => { await window.jupyterapp.commands.execute("
                  "'docmanager:open', {path, factory: 'Jupytext Notebook'}); return true; }",
                  f"book/{CHAPTER.name}")
    chapter = page.locator(".jp-NotebookPanel:visible")
    chapter.locator(".jp-MarkdownCell").first.wait_for()
    assert chapter.locator(".jp-CodeCell").count() > 10
    assert "Epochs, batches and iterations" in chapter.locator(".jp-MarkdownCell").first.inner_text()
    assert not page.watch.external_requests, page.watch.external_requests
    assert not page.watch.page_errors, page.watch.page_errors

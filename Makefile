# Two commands a newcomer needs:  make book   and   make test
# Everything a fresh machine lacks is installed here (the venv, and Chromium for the
# browser tests when we are root, as in CI).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JB     := $(BIN)/jupyter-book
PYTEST := $(BIN)/python -m pytest
# Parallel pytest workers: independent tests spread over the cores. (Three on CI's two cores
# were no faster, and made the Ctrl-C tests time out, torch's as well as ours.) worksteal: a
# worker that runs out of tests takes half of the other's, so neither idles at the end.
XDIST  ?= -n 2 --dist worksteal

.PHONY: setup book book-under-load book-strict serve lab test lint unit browser chromium clean workbooks check estimates

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml course/pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 10), "minidataloader needs Python >= 3.10 (the book is tested on 3.11)"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . -e course
	touch $(STAMP)

## make book: set up and build the book (notebooks executed, results cached between builds).
## Every page is built, one whose cell fails too (the error is shown at that cell); at the end
## the failing pages are listed, and make book fails.
book: setup
	@status=0; $(JB) build . || status=1; \
	$(BIN)/python -m tests.book.build_report _build || status=1; \
	echo; echo "The book: file://$(CURDIR)/_build/html/index.html   (or: make serve)"; \
	exit $$status

## make book-under-load: every page that times something, executed while CPU-bound processes
## keep each core busy (two per core); fails if a cell fails. About 10 minutes on 2 cores, so
## not part of make test, which runs the cells that failed on busy machines before
## (tests/book/test_timing_claims.py).
book-under-load: setup
	$(BIN)/python -m tests.book.under_load

## the build `make test` runs: every notebook re-executed, any warning is an error, two pages
## at a time (tests/book/strict_build.py says why only here)
book-strict: setup
	$(BIN)/python -m tests.book.strict_build

serve: book
	$(BIN)/python -m http.server --bind 127.0.0.1 --directory _build/html 8000

lab: setup
	$(BIN)/python -m minidataloader_course create --path notebooks/myloader
	$(BIN)/jupyter lab --ip=127.0.0.1 $(if $(filter 0,$(shell id -u)),--allow-root,)

## make workbooks: write notebooks/NN_*.ipynb from book/NN_*.md, and course/EXERCISES.md from
## the chapters' declarations (tests fail when either differs from what is committed)
workbooks: setup
	$(BIN)/python -m minidataloader_course.authoring.workbooks
	$(BIN)/python -m minidataloader_course.authoring.tables

## make estimates: after `make book`, the cells' run time of every chapter page from the build
## (into course/minidataloader_course/authoring/cell_seconds.json), then the computed time
## estimates written into the chapters and intro.md (course/README.md says the rule)
estimates: setup
	$(BIN)/python -m minidataloader_course.authoring.estimates --measure _build

## make check [CH=6]: the everyday loop, a few minutes: lint, the library's unit tests, the
## house's rules, and chapter CH's course tests (its exercises, mutants, workbook, demos)
CH ?= 1
check: setup
	$(BIN)/ruff check .
	$(PYTEST) $(XDIST) -q -m "not browser and not slow" tests/library tests/test_layout.py
	$(PYTEST) $(XDIST) -q -m "not browser" --chapter $(CH) tests/course tests/book

## make test: set up, then lint, unit tests, the strict book build, the browser tests
test: setup chromium
	@status=0; \
	$(MAKE) --no-print-directory lint        || status=1; \
	$(MAKE) --no-print-directory unit        || status=1; \
	$(MAKE) --no-print-directory book-strict || status=1; \
	$(MAKE) --no-print-directory browser     || status=1; \
	if [ $$status -ne 0 ]; then echo "make test: FAILED (see above)"; else echo "make test: all passed"; fi; \
	exit $$status

lint: setup
	$(BIN)/ruff check .

unit: setup
	$(PYTEST) $(XDIST) --durations=25 -m "not browser" tests

browser: setup
	$(PYTEST) $(XDIST) -m browser tests

# The browser tests' Chromium: the one MINIDATALOADER_CHROMIUM names ("playwright": Playwright's
# own, which CI installs), or else Debian's, installed here when we are root (Playwright's own
# download fails offline).
chromium:
	@if [ -n "$$MINIDATALOADER_CHROMIUM" ] || [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "chromium not found: browser tests will be skipped (install it with: sudo apt-get install chromium)"; fi

clean:
	rm -rf _build

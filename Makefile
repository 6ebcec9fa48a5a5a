# Two commands set everything up on a fresh machine:
#   make book   create .venv, install, build the HTML book into _build/html
#   make test   create/update .venv, run every test (unit tests + nbval)
# See README.md for the rest.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3

# One BLAS thread: the course's matrices are small, extra threads only compete
# for the two cores of a laptop or CI runner, and a fixed summation order keeps
# every printed number identical from run to run.
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard chapters/*.ipynb))

.PHONY: help venv book test notebooks lab bench lint clean assignments grade system-deps browser-test experiments

help:
	@echo "make book       build the HTML book into _build/html (creates .venv)"
	@echo "make test       run the unit tests and nbval over every notebook"
	@echo "make notebooks  re-execute every chapter notebook in place"
	@echo "make lab        open JupyterLab on the course environment"
	@echo "make bench      run the benchmarks"
	@echo "make experiments  re-run chapter 5's experiment into results/ch5_*.json"
	@echo "make browser-test  open the built book (and the notebooks in JupyterLab) in headless Chromium"
	@echo "make system-deps   install the Debian packages the tests need (chromium, bubblewrap)"
	@echo "make assignments  build the student and autograder versions of the assignments"
	@echo "make grade SUBMISSIONS=folder ASSIGNMENT=01_motivation [OUT=grades.csv]"
	@echo "                grade a folder of submitted notebooks into a CSV"
	@echo "make clean      remove _build (and .venv with 'make clean ALL=1')"

# The environment is rebuilt when requirements.txt or pyproject.toml change.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --quiet -r requirements.txt
	@touch $(STAMP)

venv: $(STAMP)

# The book links to the student notebooks, so they are built first.
book: $(STAMP) assignments
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	@echo "Open _build/html/index.html"

test: $(STAMP)
	$(BIN)/python -m pytest tests src/posenc --ignore=tests/browser --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval $(NOTEBOOKS)

# Without timestamps in the cell metadata, a re-run that changes no output changes no file.
notebooks: $(STAMP)
	@for nb in $(NOTEBOOKS); do \
		echo "executing $$nb"; \
		$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
			--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 \
			--ExecutePreprocessor.record_timing=False "$$nb"; \
	done

lab: $(STAMP)
	$(BIN)/jupyter lab chapters/

# Chapter 5's designed experiment (two worker processes, a progress bar); the
# chapter reads the committed results file, tests/test_experiment_results.py re-runs a few cells.
experiments: $(STAMP)
	$(BIN)/python -m posenc.experiment --out results/ch5_experiment.json --processes 2
	$(BIN)/python -m posenc.experiment --long-budget --out results/ch5_long_budget.json --processes 2
	$(BIN)/python -m posenc.experiment --readout results/ch5_readout.json

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python "$$b"; done

# Student and autograder versions of every assignment, into assignments/dist (rebuilt only
# when a master notebook or src/posenc changed; FORCE=1 rebuilds all).
assignments: $(STAMP)
	$(BIN)/python assignments/build.py $(if $(FORCE),--force)

# make grade SUBMISSIONS=path/to/folder ASSIGNMENT=01_motivation OUT=grades.csv
# (GRADE_ARGS passes more options, e.g. GRADE_ARGS="--cell-timeout 10 --jobs 4")
OUT ?= grades.csv
GRADE_ARGS ?=
grade: assignments
	@test -n "$(SUBMISSIONS)" -a -n "$(ASSIGNMENT)" || \
		{ echo "usage: make grade SUBMISSIONS=folder ASSIGNMENT=01_motivation [OUT=grades.csv]"; exit 2; }
	$(BIN)/python assignments/grade.py "$(SUBMISSIONS)" --assignment "$(ASSIGNMENT)" --out "$(OUT)" $(GRADE_ARGS)

# Debian packages that pip cannot install (Chromium for the browser tests,
# bubblewrap for the grading sandbox); installs only what is missing.
system-deps:
	bash .ci/system-deps

# The browser tests: the built book (run `make book` first) and the notebooks in JupyterLab,
# in Debian's headless Chromium, offline, at 1280 px.
browser-test: $(STAMP) system-deps
	$(BIN)/python -m pytest tests/browser -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks chapters assignments

clean:
	rm -rf _build assignments/dist
	@if [ -n "$${ALL:-}" ]; then rm -rf $(VENV); fi

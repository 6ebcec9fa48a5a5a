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

.PHONY: help venv book test test-units test-cpus test-slow notebooks lab bench lint clean assignments grade system-deps browser-test experiments experiments-cpus

help:
	@echo "make book       build the HTML book into _build/html (creates .venv)"
	@echo "make test       run the unit tests and nbval over every notebook (also under other CPU settings)"
	@echo "make notebooks  re-execute every chapter notebook in place"
	@echo "make lab        open JupyterLab on the course environment"
	@echo "make bench      run the benchmarks"
	@echo "make experiments  re-run the heavy experiment grids into results/ (minutes)"
	@echo "make experiments-cpus  the same grids under each CPU setting, and what moved (an hour)"
	@echo "make browser-test  open the built book (and the notebooks in JupyterLab) in headless Chromium"
	@echo "make system-deps   install the Debian packages the tests need (chromium, bubblewrap)"
	@echo "make assignments  build the student and autograder versions of the assignments"
	@echo "make grade SUBMISSIONS=folder ASSIGNMENT=01_motivation [OUT=grades.csv]"
	@echo "                grade a folder of submitted notebooks into a CSV, each in a sandbox"
	@echo "                (both take SOURCE=folder of master notebooks, for a private copy)"
	@echo "make clean      remove _build (and .venv with 'make clean ALL=1')"

# The environment is rebuilt when requirements.txt or pyproject.toml change.
# The pinned NumPy (2.4) needs Python 3.11 or newer: say so before pip fails to resolve it.
$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
		echo "The course needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) -V 2>&1)."; \
		echo "Run with another interpreter, e.g.: make PYTHON=python3.12 test"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --quiet -r requirements.txt
	@touch $(STAMP)

venv: $(STAMP)

# The book links to the student notebooks, so they are built first.
book: $(STAMP) assignments
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	@echo "Open _build/html/index.html"

# `make test` runs two jobs side by side, one per core, that take about as long:
#   test-units  the unit tests, the doctests, ruff, and nbval over every chapter as they
#               run on this machine, except the unit-test files of SLOW_TESTS;
#   test-cpus   nbval over every chapter again under each of CPU_SETTINGS: NumPy with some
#               SIMD groups switched off and another OpenBLAS kernel, as on another
#               processor. A stored output that depends on the order of floating-point sums
#               fails here (tests/README.md says how such cells are handled);
#               then test-slow: SLOW_TESTS, with this machine's own settings as in test-units.
# SLOW_TESTS are the slowest unit-test files (the assignments: otter builds, grading in the
# sandbox). With them test-units took twice as long as test-cpus, leaving one core idle for
# ten minutes; moved to the second job, every test still runs once, with the same variables.
# Each setting is NUMPY-GROUPS-TO-DISABLE:OPENBLAS-KERNEL (commas between groups);
# tests/cpu_settings.py first checks that the setting is really in force.
CPU_SETTINGS ?= X86_V3:Sandybridge X86_V4,AVX512_ICL,AVX512_SPR:Nehalem
NBVAL := --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval
SLOW_TESTS := tests/test_assignments.py

test: $(STAMP)
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-units test-slow

test-units: $(STAMP)
	$(BIN)/python -m pytest tests src/posenc --ignore=tests/browser \
		$(addprefix --ignore=,$(SLOW_TESTS)) -p no:cacheprovider $(NBVAL) $(NOTEBOOKS)

test-cpus: $(STAMP)
	@for setting in $(CPU_SETTINGS); do \
		groups="$${setting%%:*}"; groups="$${groups//,/ }"; core="$${setting##*:}"; \
		echo "== chapters with NumPy's $$groups off and OpenBLAS kernel $$core"; \
		NPY_DISABLE_CPU_FEATURES="$$groups" OPENBLAS_CORETYPE="$$core" \
			$(BIN)/python tests/cpu_settings.py --disabled "$$groups" --coretype "$$core" || exit 1; \
		NPY_DISABLE_CPU_FEATURES="$$groups" OPENBLAS_CORETYPE="$$core" \
			$(BIN)/python -m pytest -q -p no:cacheprovider $(NBVAL) $(NOTEBOOKS) \
			|| exit 1; \
	done

# The second job of `make test` ends with SLOW_TESTS (after test-cpus, in the same slot).
test-slow: test-cpus
	$(BIN)/python -m pytest $(SLOW_TESTS) -p no:cacheprovider

# Without timestamps in the cell metadata, a re-run that changes no output changes no file.
notebooks: $(STAMP)
	@for nb in $(NOTEBOOKS); do \
		echo "executing $$nb"; \
		$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
			--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 \
			--ExecutePreprocessor.record_timing=False "$$nb"; \
	done
	$(BIN)/python tools/lab_compat.py $(NOTEBOOKS)

# JupyterLab on the repository root, so that every link of the course resolves (chapters,
# assignments/dist, the .md pages), opened on chapters/. jupyter-config/ holds the course's
# Lab settings (extensions disabled because they fail to load). Root (containers, Binder)
# needs --allow-root. LAB_ARGS passes more options, e.g. LAB_ARGS="--no-browser --port 8890".
# The student notebooks that every chapter links to are built first (quick when up to date).
LAB_ARGS ?=
lab: $(STAMP) assignments
	JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter-config$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
		$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/chapters \
		$(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# Chapter 5's designed experiment (two worker processes, a progress bar); the
# chapter reads the committed results file, tests/test_experiment_results.py re-runs a few cells.
.PHONY: experiments-ch5
experiments: experiments-ch5
experiments-ch5: $(STAMP)
	$(BIN)/python -m posenc.experiment --out results/ch5_experiment.json --processes 2
	$(BIN)/python -m posenc.experiment --long-budget --out results/ch5_long_budget.json --processes 2
	$(BIN)/python -m posenc.experiment --token-scale --out results/ch5_token_scale.json --processes 2
	$(BIN)/python -m posenc.experiment --readout results/ch5_readout.json --processes 2

# benchmarks/bench_grading.py grades with the autograder of assignment 2, hence `assignments`.
# BENCH_QUICK=1 runs every benchmark with few repetitions (the tests use it): the numbers
# then only show that the benchmarks run, not what they measure.
bench: $(STAMP) assignments
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python "$$b"; done

# Student and autograder versions of every assignment, into assignments/dist (rebuilt only
# when a master notebook or src/posenc changed; FORCE=1 rebuilds all).
# SOURCE is the folder of master notebooks: a graded offering keeps a private copy.
SOURCE ?= assignments/source
assignments: $(STAMP)
	$(BIN)/python assignments/build.py --source "$(SOURCE)" $(if $(FORCE),--force)

# make grade SUBMISSIONS=path/to/folder ASSIGNMENT=01_motivation OUT=grades.csv
# (GRADE_ARGS passes more options, e.g. GRADE_ARGS="--cell-timeout 10 --jobs 4")
OUT ?= grades.csv
GRADE_ARGS ?=
grade: assignments
	@test -n "$(SUBMISSIONS)" -a -n "$(ASSIGNMENT)" || \
		{ echo "usage: make grade SUBMISSIONS=folder ASSIGNMENT=01_motivation [OUT=grades.csv]"; exit 2; }
	$(BIN)/python assignments/grade.py "$(SUBMISSIONS)" --assignment "$(ASSIGNMENT)" --out "$(OUT)" \
		--source "$(SOURCE)" $(GRADE_ARGS)

# Debian packages that pip cannot install (Chromium for the browser tests,
# bubblewrap for the grading sandbox); installs only what is missing.
system-deps:
	bash .ci/system-deps

# The browser tests: the built book (run `make book` first) and the notebooks in JupyterLab,
# in Debian's headless Chromium, offline, at 1280 px.
browser-test: $(STAMP) system-deps
	$(BIN)/python -m pytest tests/browser -p no:cacheprovider

# The heavy experiment grids, each writing a committed results file that its
# chapter reads and a test spot-checks. Each chapter adds its own part.
.PHONY: experiments experiments-ch7 experiments-synthetic
experiments: experiments-ch7 experiments-synthetic

# Chapter 7: a byte-level language model on NumPy's Python source with every
# position method, trained at 128 bytes and read at 128 to 1,024 (perplexity by
# position, the RoPE extension rules with and without a fine-tune, passkey
# retrieval), three seeds each, in two worker processes with a progress bar.
experiments-ch7: $(STAMP)
	$(BIN)/python -m posenc.longcontext results/ch7_longcontext.json

# The synthetic length tasks at 16 tokens (the appendix's worked examples): every
# position method tested at 1x, 2x, 4x with the RoPE extensions; then the same grid
# with learning rates chosen by validation loss.
experiments-synthetic: $(STAMP)
	$(BIN)/python -m posenc.extrapolation results/ch7_extrapolation.json
	$(BIN)/python -m posenc.extrapolation results/ch7_rate_by_loss.json --rate-selection loss

# The same grids under each of CPU_SETTINGS (as on another processor), each into
# results/cpus/<setting>/, then what moved: every cell's rate and mean,
# and every verdict, under each setting, into results/cpu_settings.json (committed; the
# chapters read it) and each cell's spread into the results files. About twice `make
# experiments` per setting; the main grids of both chapters run first under every setting,
# then the follow-ups (the token-scale arm without its reference retrain).
.PHONY: experiments-cpus
experiments-cpus: $(STAMP)
	@for pass in main follow-ups; do for setting in $(CPU_SETTINGS); do \
		groups="$${setting%%:*}"; groups="$${groups//,/ }"; core="$${setting##*:}"; \
		dir="results/cpus/$${setting//[,:]/-}"; mkdir -p "$$dir"; \
		export NPY_DISABLE_CPU_FEATURES="$$groups" OPENBLAS_CORETYPE="$$core"; \
		echo "== $$pass with NumPy's $$groups off and OpenBLAS kernel $$core into $$dir"; \
		$(BIN)/python tests/cpu_settings.py --disabled "$$groups" --coretype "$$core" \
			> "$$dir/cpu_setting.txt" || exit 1; \
		if [ "$$pass" = main ]; then \
			$(BIN)/python -m posenc.experiment --out "$$dir/ch5_experiment.json" --processes 2 \
			&& $(BIN)/python -m posenc.extrapolation "$$dir/ch7_extrapolation.json" || exit 1; \
		else \
			$(BIN)/python -m posenc.experiment --long-budget --out "$$dir/ch5_long_budget.json" \
				--processes 2 \
			&& $(BIN)/python -m posenc.experiment --token-scale --no-reference \
				--out "$$dir/ch5_token_scale.json" --processes 2 \
			&& $(BIN)/python -m posenc.extrapolation "$$dir/ch7_rate_by_loss.json" \
				--rate-selection loss || exit 1; \
		fi; \
	done; done
	$(MAKE) --no-print-directory cpu-comparison

# Line up whatever experiments-cpus has written so far (results/cpu_settings.json).
.PHONY: cpu-comparison
cpu-comparison: $(STAMP)
	$(BIN)/python -m posenc.reproduce results --record \
		$(foreach s,$(CPU_SETTINGS),results/cpus/$(subst :,-,$(subst $(comma),-,$(s))))

comma := ,

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks chapters assignments _ext tools

clean:
	rm -rf _build assignments/dist
	@if [ -n "$${ALL:-}" ]; then rm -rf $(VENV); fi

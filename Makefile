# tibench: `make demo` runs the whole study on the embedded MariaDB; `make test` runs the tests.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PARAMS ?= params/demo.yaml

.DEFAULT_GOAL := help
.PHONY: help setup demo demo-hosts test test-fast lint format lab bench clean-data server-stop ycsb go-tools

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -d $(VENV) || $(PY) -m venv $(VENV)
	@# uv installs what pip would in seconds (pip takes 50 s on 2 cores); pip itself, brought up
	@# to date, where uv cannot be had (an index that serves only pip)
	($(BIN)/pip install -q uv && $(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev]') \
		|| ($(BIN)/pip install -q --upgrade pip && $(BIN)/pip install -q -e '.[dev]')
	@# bytecode for what runs, compiled once on every core (where PYTHONDONTWRITEBYTECODE is set,
	@# every process would compile again what it imports): not the packages' own tests, nor the
	@# Kubernetes client's 1,900 model modules that one test imports (12 s where uv's
	@# --compile-bytecode of everything took 25); tibench's own modules too
	@# (the YCSB binding builds meanwhile: Maven keeps about one core busy; setup checks it after)
	@$(BIN)/python -c "from tibenchlib.ycsb import build_binding; build_binding()" >/dev/null 2>&1 & \
	$(BIN)/python -m compileall -q -j 0 -x '/(tests?|testing|kubernetes|pip)/' tibenchlib \
		"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
		>/dev/null; rc=$$?; wait; exit $$rc
	@touch $(STAMP)

setup: ## install what is missing: system packages (apt), a .venv with tibench, the YCSB binding, go-ycsb and go-tpc, the notebooks' output filter
	@bash scripts/setup-system.sh
	@# go-ycsb and go-tpc (pinned, from the Go module proxy) build beside the .venv, into a cache
	@# outside the clone that every clone shares (tibenchlib/gobuild.py; stdlib only, so the
	@# system Python runs it); without the go command, one line says what to install
	@$(PY) -m tibenchlib.gobuild & gopid=$$!; $(MAKE) -s $(STAMP); rc=$$?; \
		wait $$gopid || echo "tibench setup: go-ycsb/go-tpc not built (above: why); the tests that run them will fail" >&2; \
		exit $$rc
	@$(BIN)/python -c "from tibenchlib.ycsb import build_binding; build_binding()" >/dev/null \
		|| echo "tibench setup: the YCSB binding was not built; it is built on first use" >&2
	@# committed notebooks carry no outputs: git strips them on commit (the exception, committed
	@# with its outputs for nbval, is named in .gitattributes); cell ids are kept
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
		$(BIN)/nbstripout --install --attributes .gitattributes \
		&& git config filter.nbstripout.clean "'$(abspath $(BIN))/python' -m nbstripout --keep-id"; \
	fi

demo: setup ## run the whole study in params/demo.yaml on the embedded MariaDB (about 6 minutes)
	$(BIN)/tibench run $(PARAMS)
	@echo "tables (JSON, CSV): data/$$(basename $(PARAMS) .yaml)/results/"
	@# the findings were printed by the run; the report's path comes last
	@set -o pipefail; $(BIN)/tibench report $$(basename $(PARAMS) .yaml) 2>/dev/null \
		| sed 's/^/report: /' || echo "report: tibench report $$(basename $(PARAMS) .yaml) failed" >&2

demo-hosts: setup ## a sweep from this machine and two SSH client hosts (sshd on 127.0.0.2/.3)
	$(BIN)/python -m tibenchlib.hosts.demo

# pytest-xdist: each test file on one worker in file order (module fixtures and the order of
# tests inside a file hold), each worker with its own data directory and server. The CI study
# (tests/conftest.py: ci_study) is measured once, in the clone's data/ci, by the file that
# starts first; the files that only read it go to workers once it exists, the others beside
# it, those with the most slow tests first. Five workers on 2 cores: tests wait on timed
# benchmark runs, servers and kernels (on an idle 2-core machine, pytest took 593 s with three
# workers, 488-513 s with four, 456-498 s with five; the tests that check CPU-bound verdicts and
# latencies hold under that load). The CI study, which the readers wait for, runs ahead of the
# other workers' load where the machine allows it (conftest: CI_STUDY_NICE).
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider
XDIST ?= -n 5 --dist loadfile --no-loadscope-reorder

test: setup ## the full test suite, notebooks included (nbval)
	@# with the published tables recomputed by nbval: the committed outputs of
	@# notebooks/reports_reproduced.ipynb checked exactly (no --nbval-lax); the executed CI
	@# notebooks are resumed, and some re-executed by nbval, in tests/test_notebooks_resume.py
	$(PYTEST) $(XDIST) tests --nbval --nbval-current-env notebooks/reports_reproduced.ipynb

.PHONY: report
report: setup ## the HTML report of the study in PARAMS, under data/<study>/report/
	$(BIN)/tibench report $$(basename $(PARAMS) .yaml)

test-fast: setup ## the tests that need no server or notebook (XDIST= runs them in one process)
	$(PYTEST) $(XDIST) tests -m "not slow and not notebook"

lint: setup ## ruff check and format check
	$(BIN)/ruff check tibenchlib tests benchmarks
	$(BIN)/ruff format --check tibenchlib tests benchmarks

format: setup ## ruff format
	$(BIN)/ruff format tibenchlib tests benchmarks

bench: setup ## run every performance script in benchmarks/ (prints measured ratios)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

lab: setup ## JupyterLab at the project root, opened on notebooks/ (127.0.0.1; --allow-root as root)
	$(BIN)/jupyter lab --ip=127.0.0.1 $$([ "$$(id -u)" -eq 0 ] && echo --allow-root) \
		--ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks

ycsb: setup ## build tibench's YCSB binding with Maven (jars under data/ycsb/m2, not ~/.m2)
	$(BIN)/python -c "from tibenchlib.ycsb import build_binding; build_binding()" >/dev/null
	@echo "YCSB 0.17.0 with tibench's JDBC binding: built under data/ycsb/"

go-tools: ## build go-ycsb and go-tpc at their pinned versions with the go command (cached in ~/.cache/tibench/go)
	$(PY) -m tibenchlib.gobuild

server-stop: ## stop the embedded MariaDB
	-$(BIN)/tibench server stop

clean-data: server-stop ## remove run outputs under data/ (keeps data/reference)
	find data -mindepth 1 -maxdepth 1 ! -name reference ! -name .gitkeep -exec rm -rf {} +

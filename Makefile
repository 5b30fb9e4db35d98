# make lab     set up .venv (with the CuPy build matching this machine's CUDA, if any), make or
#              reuse your workspace (./workspace, ignored by git), and start gpulab
# make lab-env only set up the environment `make lab` runs in
# make test    set up .venv with the test tools and run every check: ruff, mypy, pytest
# make test-fast  the quick lane while working: the tests not marked slow or gpu, on every
#              core (about 3 min on 2 cores; tests/conftest.py SLOW says which are slow)
# make bench   run the benchmarks under bench/

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
LAB_ENV = $(VENV)/.lab-$(or $(CUDA_EXTRA),cpu)

# The CUDA major version nvidia-smi reports (empty without an NVIDIA driver).
CUDA_MAJOR := $(shell nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\)\..*/\1/p' | head -n 1)
CUDA_EXTRA := $(if $(filter 12 13,$(CUDA_MAJOR)),cuda$(CUDA_MAJOR),)
LAB_INSTALL = $(PY) -m pip --disable-pip-version-check install --progress-bar on -c constraints.txt -e ".$(if $(CUDA_EXTRA),[$(CUDA_EXTRA)],)"

.PHONY: lab lab-env test test-fast lint pytest bench clean

# The learner's notebooks live in ./workspace (ignored by git), never in exercises/, which
# stays as the course ships it; `gpulab init` makes it the first time and reuses it after.
lab: lab-env
	@$(VENV)/bin/gpulab init workspace
	@echo "Starting gpulab (q quits). In a new shell: source $(VENV)/bin/activate, then gpulab --help"
	$(VENV)/bin/gpulab

lab-env: $(LAB_ENV)

test: $(VENV)/.test tests/markmap/node_modules/.installed
	$(MAKE) --no-print-directory lint pytest

lint: $(VENV)/.test
	$(VENV)/bin/ruff check lab tests bench solutions exercises
	$(VENV)/bin/ruff format --check lab tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(VENV)/bin/gpulab dev lint-lessons
	$(VENV)/bin/gpulab dev check

# Every test, in two passes: first those that may share the machine, on every core; then, one
# at a time, those that need it to themselves (alone: installs, browsers, terminals against a
# clock, grading runs against time limits; gpu: timed kernels). Both passes run; make fails if
# either failed.
pytest: $(VENV)/.test
	@status=0; \
	$(PY) -m pytest -m "not alone and not gpu" -n auto --durations=15 || status=1; \
	$(PY) -m pytest -m "alone or gpu" --durations=20 || status=1; \
	exit $$status

# CI runs `make test`, every test; this lane leaves out the slow ones (the learner's chair, the
# attack corpora, the cluster, the browsers), so run `make test` before you push.
test-fast: $(VENV)/.test
	$(PY) -m pytest -m "not slow and not gpu" -n auto

bench: $(VENV)/.test
	$(PY) bench/startup.py
	$(PY) bench/grading.py
	$(PY) bench/cluster.py
	$(PY) bench/book.py

# `@$(STILL_AT_WORK) command`: where stdout is no terminal (CI logs, `make lab | tee`), pip
# draws no progress bar and installs for half a minute in silence; this says every 10 s that the
# command still runs (stopped, with its sleep, when the command ends). On a terminal: nothing.
STILL_AT_WORK = if [ ! -t 1 ]; then \
	( trap 'kill $$nap 2>/dev/null; exit 0' TERM; n=0; \
	  while :; do sleep 10 & nap=$$!; wait $$nap; n=$$((n + 10)); \
	  echo "  ... still at work ($$n s)"; done ) & \
	trap "kill $$! 2>/dev/null" EXIT; fi;

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gpulab needs Python 3.11 or newer: set PYTHON=python3.11 (or newer)")'
	@echo "Making a virtual environment in $(VENV)"
	@$(STILL_AT_WORK) $(PYTHON) -m venv $(VENV)
	@echo "Upgrading pip in $(VENV)"
	@$(STILL_AT_WORK) $(PIP) install --upgrade pip

# Not quiet: the first install takes a minute or more, and the learner should see it work.
$(VENV)/.lab-%: $(PY) pyproject.toml constraints.txt
	@echo "Installing gpulab and what it needs into $(VENV)$(if $(CUDA_EXTRA), with CuPy for CUDA $(CUDA_MAJOR) (nvidia-smi found a driver),) ..."
	@echo '$(LAB_INSTALL)'
	@$(STILL_AT_WORK) $(LAB_INSTALL)
	@rm -f $(VENV)/.lab-* && touch $@

$(VENV)/.test: $(PY) pyproject.toml constraints.txt
	$(PIP) install -c constraints.txt -e ".[dev]"
	@touch $@

# markmap's own transformer, for the test that lessons render the same in markmap.
# Without npm the markmap tests skip and say why.
tests/markmap/node_modules/.installed: tests/markmap/package.json tests/markmap/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/markmap && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else \
		echo "npm not found: the markmap parity tests will be skipped"; \
	fi

clean:
	rm -rf $(VENV) tests/markmap/node_modules .pytest_cache .mypy_cache .ruff_cache

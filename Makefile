# make lab     set up .venv (with the CuPy build matching this machine's CUDA, if any), make or
#              reuse your workspace (./workspace, ignored by git), and start gpulab
# make lab-env only set up the environment `make lab` runs in
# make test    set up .venv with the test tools and run every check: ruff, mypy, pytest
# make bench   run the benchmarks under bench/

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
LAB_ENV = $(VENV)/.lab-$(or $(CUDA_EXTRA),cpu)

# The CUDA major version nvidia-smi reports (empty without an NVIDIA driver).
CUDA_MAJOR := $(shell nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\)\..*/\1/p' | head -n 1)
CUDA_EXTRA := $(if $(filter 12 13,$(CUDA_MAJOR)),cuda$(CUDA_MAJOR),)

.PHONY: lab lab-env test lint pytest bench clean

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

pytest: $(VENV)/.test
	$(PY) -m pytest

bench: $(VENV)/.test
	$(PY) bench/startup.py
	$(PY) bench/grading.py
	$(PY) bench/cluster.py
	$(PY) bench/book.py

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gpulab needs Python 3.11 or newer: set PYTHON=python3.11 (or newer)")'
	@echo "Making a virtual environment in $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# Not quiet: the first install takes a minute or more, and the learner should see it work.
$(VENV)/.lab-%: $(PY) pyproject.toml constraints.txt
	@echo "Installing gpulab and what it needs into $(VENV)$(if $(CUDA_EXTRA), with CuPy for CUDA $(CUDA_MAJOR) (nvidia-smi found a driver),) ..."
	$(PY) -m pip --disable-pip-version-check install --progress-bar on -c constraints.txt -e ".$(if $(CUDA_EXTRA),[$(CUDA_EXTRA)],)"
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

# Two commands on a fresh machine: `make run` and `make test`. Both create the virtualenv if it is
# missing and install the project with its development tools.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= auto

.PHONY: install run test test-slow check lint typecheck unit nightly bench bench-audit bench-run calibrate adapters-table mutation soak-table clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Every adapter extra is installed too (`adapters`), so the tests of the ready adapters run rather
# than skip (it costs install time only; docs/adapters.md lists the versions); the browser extra
# drives a chromium that .ci/run installs (the browser test skips without it); the distributed
# extra serves the Dask audit recipe's test.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,adapters,browser,distributed]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/ctxconf run

check: lint typecheck

lint: install
	$(BIN)/ruff check reference_impl conformance tests bench tools
	$(BIN)/ruff format --check reference_impl conformance tests bench tools

typecheck: install
	$(BIN)/mypy

# `make test` leaves out the tests marked `exhaustive` (each reruns the whole corpus or another long
# search to re-derive a committed table or one more fuzz seed); `make test-slow` runs exactly those,
# and .ci/run runs both. Plain `pytest` runs everything.
unit: install
	$(BIN)/python -m pytest -n $(JOBS) --dist loadgroup -m "not exhaustive"

test: check unit

test-slow: install
	$(BIN)/python -m pytest -n $(JOBS) --dist loadgroup -m exhaustive

# Random seeds and five times the examples of the slow properties
# (tests/support/hypothesis_support.py), the exhaustive tests included; `make test` uses the
# derandomized `ci` profile.
nightly: install
	HYPOTHESIS_PROFILE=nightly $(BIN)/python -m pytest -n $(JOBS)

bench: install
	$(BIN)/python bench/assemble_bench.py

bench-audit: install
	$(BIN)/python bench/audit_bench.py

# `ctxconf run --jobs 2` against `--jobs 1` for a plug-in that takes 20 ms a call.
bench-run: install
	$(BIN)/python bench/run_jobs_bench.py

adapters-table: install
	$(BIN)/python bench/adapters_table.py --write

# Mutation testing of the checks, identity and the policy (not part of `make test`: it takes long).
mutation: install
	$(BIN)/python tools/mutation.py

# The README's long-run table: every registered plug-in over the built-in soak workloads.
soak-table: install
	$(BIN)/python bench/soak_table.py --write README.md

calibrate: install
	$(BIN)/python bench/calibrate_tokens.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis reports

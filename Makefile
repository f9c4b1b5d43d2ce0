# hermes-admin: `make demo` and `make test` work on a fresh clone with nothing installed by hand.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: demo demo-fleet test test-fast bench lint clean install mutate mutate-guards fuzz bytecode

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]' ruff
	$(MAKE) --no-print-directory bytecode
	touch $(STAMP)

# The project's modules compiled once, as pip does for a wheel: an editable install (and
# PYTHONDONTWRITEBYTECODE=1, set on some machines) would compile all of them again on
# every start, about 0.3 s of each console start here. Stale files are ignored by Python.
bytecode:
	$(BIN)/python -m compileall -q store tui screens > /dev/null

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hermes-admin demo

# Two simulated hosts sharing keys through a local redis-server; the console in fleet view on host A.
demo-fleet: $(STAMP)
	$(BIN)/hermes-admin demo --fleet

# Two workers (pytest-xdist): most of the suite waits on child processes, so two workers
# on a 2-core machine take ~60% of the serial time. The real-terminal (tmux) tests run one
# after another on a single worker (tests/conftest.py puts them in one xdist group).
# A serial run is still `$(BIN)/python -m pytest -q -p no:cacheprovider`.
test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup -m "not slow"

bench: $(STAMP) bytecode
	$(BIN)/python bench/bench_store.py
	$(BIN)/python bench/bench_tui.py
	$(BIN)/python bench/bench_runtime.py --procs 1 4 --seconds 3
	$(BIN)/python bench/bench_fleet.py
	$(BIN)/python bench/bench_fleet_view.py
	$(BIN)/python bench/bench_proxy.py --seconds 3

# Mutation testing (not in CI; minutes to hours): kill rate in the README.
# The hostile-input suites with many more generated cases than CI runs (HERMES_FUZZ_EXAMPLES):
# the CLI, the fleet's checked edges, and forged Redis data against a running sync daemon.
fuzz: $(STAMP)
	HERMES_FUZZ_EXAMPLES=$${HERMES_FUZZ_EXAMPLES:-3000} $(BIN)/python -m pytest -q -s -p no:cacheprovider --timeout=3600 --hypothesis-show-statistics \
		tests/cli/test_hostile_cli_fuzz.py tests/fleet/test_fleet_inbound.py tests/fleet/test_fleet_forged.py \
		tests/proxy/test_edge_fuzz.py

mutate: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[mutate]'
	$(BIN)/mutmut run
	$(BIN)/mutmut results

# The kill rate of every module that guards keys, each against the tests of its own area
# (tests/mutate_guards.py; about 45 minutes on 2 cores). MODULES="store/ops/history.py ..."
# runs only those. A change to a guard module runs this for that module before it lands.
mutate-guards: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[mutate]'
	$(BIN)/python -m tests.mutate_guards $(MODULES)

# docs/screenshot.svg, the README's picture: the demo's console through Textual's SVG export;
# and docs/web-*.png: `hermes-admin web` on the demo's root in Debian's chromium, at two sizes.
.PHONY: screenshot
screenshot: $(STAMP)
	$(BIN)/python docs/make_screenshot.py
	$(BIN)/python docs/make_web_screenshots.py

lint: $(STAMP)
	$(BIN)/ruff check store tui screens tests bench
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .cache build *.egg-info

# One entry point for newcomers and CI. `make test` and `make run` set
# everything up on a fresh machine (root, Debian) and are safe to repeat.

VENV      := .venv
PY        := $(VENV)/bin/python
PIP       := $(VENV)/bin/pip
STAMP     := $(VENV)/.deps-stamp
APT_PKGS  := iproute2 iputils-ping ethtool tcpdump mininet openssl tcpreplay netsniff-ng gcc libc6-dev python3-dev
PYTEST_ARGS ?=

.PHONY: deps test test-unit test-bmv2 run cli bench lint clean

deps: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@./scripts/apt-deps.sh $(APT_PKGS)
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev]'
	@./scripts/link-mininet.sh $(VENV)
	@touch $@

# The whole suite: unit and packet tests, then the root-only layers
# (network namespaces, Mininet) when running as root.
test: deps
	$(PY) -m pytest -q $(PYTEST_ARGS)

test-unit: deps
	$(PY) -m pytest -q -m "not root and not mininet" $(PYTEST_ARGS)

# The SGLB packet tests and the STF corpus on BMv2 (needs p4c-bm2-ss and simple_switch_grpc:
# docs/bmv2.md), then the comparisons with p4c and BMv2 that also run in `make test`.
test-bmv2: deps
	$(PY) -m pytest -q --target bmv2 tests/sglb tests/softswitch/test_stf_corpus.py tests/reference $(PYTEST_ARGS)

run: deps
	$(PY) -m topologies.demo

cli: deps
	$(PY) -m topologies.cli

bench: deps
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

lint: deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# One entry point for everything: `make demo` and `make test` work on a fresh machine
# with only Python (>= 3.10) and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# A second environment with only `mixplane[load]`, as a training node installs it.
LEAN := .venv-lean
LEAN_STAMP := $(LEAN)/.installed
SOURCES := pyproject.toml setup.py src/mixplane/load/_pieces.c

.PHONY: demo test test-lean lint format bench clean browser netns audio-tools

# torch is pinned so pip takes the CPU wheel; the [load] extra accepts any recent torch.
$(STAMP): $(SOURCES)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "torch==2.13.0" -e ".[dev]"
	touch $(STAMP)

$(LEAN_STAMP): $(SOURCES)
	rm -rf $(LEAN)
	$(PYTHON) -m venv $(LEAN)
	$(LEAN)/bin/pip install --quiet --upgrade pip
	$(LEAN)/bin/pip install --quiet "torch==2.13.0" -e ".[load]" pytest pytest-timeout
	touch $(LEAN_STAMP)

# The work folder stays, so the dashboard can show it afterwards (`mixplane serve`).
demo: $(STAMP) audio-tools
	rm -rf demo-work
	$(BIN)/mixplane demo demo-work

# The dashboard's tests drive a real headless Chromium: Debian's, installed once.
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The cluster tests (tests/cluster) make hosts out of network namespaces: iproute2's `ip`.
netns:
	@command -v ip >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null; }

# The synthetic audio corpus speaks its transcripts with espeak-ng.
audio-tools:
	@command -v espeak-ng >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng >/dev/null; }

test: $(STAMP) test-lean browser netns audio-tools
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/pytest -q

# The load-only install: its tests live apart from the suite's fixtures (--confcutdir).
test-lean: $(LEAN_STAMP)
	$(LEAN)/bin/python -m pytest -q -p no:cacheprovider -o addopts= --confcutdir=tests/lean tests/lean

lint: $(STAMP)
	$(BIN)/ruff check src tests bench

format: $(STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

clean:
	rm -rf $(VENV) $(LEAN) .pytest_cache .ruff_cache

# One entry point for everything: `make demo` and `make test` work on a fresh machine
# with only Python (>= 3.10) and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint format bench clean

# torch is pinned so pip takes the CPU wheel; the [torch] extra accepts any recent torch.
$(STAMP): pyproject.toml setup.py src/mixplane/load/_pieces.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "torch==2.13.0" -e ".[dev,torch]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/mixplane demo

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests bench

format: $(STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

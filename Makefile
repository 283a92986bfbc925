# Two commands do all the set-up on a fresh machine:
#   make run    - create .venv, install Apus, open it on the bundled sample vault
#   make test   - create .venv, install Apus with its test extra, run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint check-clients bench-index clean

# llama-cpp-python is compiled first, for the instruction sets this CPU can run (never
# -march=native: see packaging/llama_build.py and the README); the editable install keeps it.
$(STAMP): pyproject.toml packaging/llama_build.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python packaging/llama_build.py --python $(BIN)/python
	$(BIN)/python -m pip install --progress-bar off -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/apus --vault assets/sample-vault

# The suite in two passes: every test not marked `serial` on two workers per core (a test's
# folders, ports and servers are its own; tests/conftest.py says why two), then the `serial`
# ones alone (exit status 5: none is marked now). A loadgroup keeps the tests that share one
# costly fixture (the packaged binaries) on one worker.
# The suite starts about nine hundred Python processes (the CLI, `apus mcp`, embedding servers,
# pytest's workers): each compiles Apus's modules again where PYTHONDONTWRITEBYTECODE is set, so
# the suite lets Python write its bytecode caches (git ignores __pycache__) and writes Apus's and
# the tests' first, before the workers start at once.
test: export PYTHONDONTWRITEBYTECODE =
test: $(STAMP)
	$(BIN)/python -m compileall -q app tests
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest -n auto --dist loadgroup -m "not serial"
	$(BIN)/python -m pytest -m serial || [ $$? -eq 5 ]

lint: $(STAMP)
	$(BIN)/ruff check app tests packaging
	$(BIN)/lint-imports
	$(BIN)/mypy

# `apus connect` checked by the real Claude Code and Codex, installed from the npm registry into
# a scratch folder with HOME there (needs node and npm; not part of `make test`).
check-clients: $(STAMP)
	$(BIN)/python tests/support/real_clients.py

# Keeps the compiled llama-cpp-python wheels (in pip's cache directory, minutes to rebuild).
clean:
	rm -rf $(VENV) build dist

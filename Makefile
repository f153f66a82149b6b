# swiglu-gen: `make generate` after a template change, `make test` to run everything.
# A fresh clone needs only python3 (>= 3.10) and network access to PyPI: the first target
# that needs them creates .venv with every dependency.

PYTHON ?= python3
VENV ?= .venv
# The CPU build of torch (on disk on our CI machines; elsewhere from PyPI).  On a GPU box:
#   make test TORCH=torch  (or any CUDA build you already have: TORCH="")
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
VARIANTS := generated/variants.toml
STAMP := $(VENV)/.installed

.PHONY: env generate check test test-codegen test-generated format bench tune compile-check clean

env: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(if $(TORCH),$(BIN)/python -m pip install --quiet "$(TORCH)")
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

generate: $(STAMP)
	$(BIN)/swiglu-gen --variants $(VARIANTS) -o generated

check: $(STAMP)
	$(BIN)/swiglu-gen --variants $(VARIANTS) -o generated --check

test: $(STAMP)
	$(BIN)/python -m pytest -q tests generated

test-codegen: $(STAMP)
	$(BIN)/python -m pytest -q tests

test-generated: $(STAMP)
	$(BIN)/python -m pytest -q generated

format: $(STAMP)
	$(BIN)/black codegen tests scripts

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache

# GPU only: the perf table of the SwiGLU and GeGLU modules (results in bench-results/).
BENCH_MODULES ?= generated/glu_silu_bf16_bn128_sm90.py generated/glu_gelu_bf16_bn128_sm90.py generated/glu_gelu_tanh_bf16_bn128_sm90.py
bench: $(STAMP)
	$(BIN)/swiglu-gen bench $(BENCH_MODULES) --out bench-results

# GPU only: re-measure a module's tiling and write the winner into generated/variants.toml.
# TUNE_ARGS: more `swiglu-gen tune` options, e.g. for a grouped module
#   make tune TUNE_MODULE=generated/glu_silu_bf16_bn128_sm90_grouped.py \
#             TUNE_ARGS="--shape 65536,2048,768,128 --routing balanced --only bm=128"
#   and its own grouped GEMMs (used where torch._grouped_mm has no fast path: an A100, fp16)
#   make tune TUNE_MODULE=generated/glu_silu_bf16_bn64_sm80_grouped.py TUNE_ARGS="--kernel gmm"
TUNE_MODULE ?= generated/glu_silu_bf16_bn128_sm90.py
TUNE_ARGS ?=
tune: $(STAMP)
	$(BIN)/swiglu-gen tune $(TUNE_MODULE) $(TUNE_ARGS) --write && $(MAKE) generate

# Any machine: compile every generated module's kernels for its GPU target (no GPU needed).
compile-check: $(STAMP)
	env -u TRITON_INTERPRET $(BIN)/swiglu-gen compile-check generated/glu_*.py

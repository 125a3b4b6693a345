# Diwaniya — every workflow is one make target.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test camel proto proto-check lint typecheck bench clean

# Every .proto of the API: `make proto` compiles them, `make proto-check` checks their stubs.
PROTOS := proto/diwaniya/v1/conversations.proto proto/diwaniya/v1/knowledge.proto

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

## run: start the service on its embedded default (SQLite under ./data, offline responder)
run: $(STAMP)
	$(BIN)/diwaniya serve

# Under CI=true nothing may skip, so the camel-tools tests need the extra:
# `CI=true make test` installs it itself (as .ci/run does), not only .ci/run.
ifeq ($(CI),true)
TEST_EXTRAS := camel
endif

## test: the whole test suite (needs PostgreSQL at 127.0.0.1:5432 for the postgres half)
test: $(STAMP) proto-check $(TEST_EXTRAS)
	$(BIN)/python -m pytest -q

## camel: add the optional camel-tools extra (DIWANIYA_SEARCH_KEYS=camel, parity tests).
## torch is pinned first so pip takes the CPU build from local disk; unpinned,
## camel-tools' dependency pulls a 6 GB CUDA build.
camel: $(STAMP)
	$(BIN)/pip install -q "torch==2.13.0"
	$(BIN)/pip install -q -e ".[camel]"

## proto: regenerate diwaniya/v1 stubs from proto/
proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc --plugin=protoc-gen-mypy=$(BIN)/protoc-gen-mypy -Iproto --python_out=. --grpc_python_out=. --mypy_out=. \
	  $(PROTOS)

## proto-check: fail when the committed stubs are stale
proto-check: $(STAMP)
	@tmp=$$(mktemp -d) && \
	$(BIN)/python -m grpc_tools.protoc --plugin=protoc-gen-mypy=$(BIN)/protoc-gen-mypy -Iproto --python_out=$$tmp --grpc_python_out=$$tmp --mypy_out=$$tmp \
	  $(PROTOS) && \
	for p in $(PROTOS); do \
	  base=$$(basename $$p .proto); \
	  for f in $${base}_pb2.py $${base}_pb2_grpc.py $${base}_pb2.pyi; do \
	    cmp -s $$tmp/diwaniya/v1/$$f diwaniya/v1/$$f || { echo "diwaniya/v1/$$f is stale: run 'make proto'"; exit 1; }; \
	  done; \
	done; rm -rf $$tmp

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy diwaniya/errors.py service majlis nlp memory

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

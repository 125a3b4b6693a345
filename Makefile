# Diwaniya — every workflow is one make target.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test camel lock proto proto-check lint typecheck bench clean

# The client distribution first (./client), so that the server's
# diwaniya-client==<version> requirement resolves to it, not to an index.
# constraints.txt pins every dependency to the versions CI tested (`make lock`).
$(STAMP): pyproject.toml client/pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e ./client -e ".[dev]"
	touch $(STAMP)

## run: start the service on its embedded default (SQLite under ./data, offline responder)
run: $(STAMP)
	$(BIN)/diwaniya serve

# Under CI=true nothing may skip, so the camel-tools tests need the extra:
# `CI=true make test` installs it itself (as .ci/run does), not only .ci/run.
ifeq ($(CI),true)
TEST_EXTRAS := camel
endif

# Most of the suite's time is waiting (outages, `serve` start-ups, streamed
# replies), so it runs on TEST_WORKERS pytest-xdist processes, each with its own
# PostgreSQL database; tests/conftest.py starts the slowest first. loadgroup
# (tests/_xdist.py's scheduler) hands out one test, or one XDIST_GROUPS group,
# at a time (plain `load` sends long runs of consecutive tests, which would put
# every slow test on the first worker). Eight: two workers sit in the 60 s
# database outages and others in serve start-ups, drains and kills, mostly
# asleep; measured on the quiet 2-core machine, 2,520 cases took 151 s on five
# workers and 141–147 s on eight (the CPU, ~225 s, is then the limit).
# `.venv/bin/python -m pytest -q` alone still runs serially (for debugging).
# Where the CPU goes (per test, per worker, the PostgreSQL server): bench/suite_cpu.py.
TEST_WORKERS ?= 8

## test: the whole test suite (needs PostgreSQL at 127.0.0.1:5432 for the postgres half)
test: $(STAMP) proto-check $(TEST_EXTRAS)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

## camel: add the optional camel-tools extra (DIWANIYA_SEARCH_KEYS=camel, parity tests).
## torch is pinned first so pip takes the CPU build from local disk; unpinned,
## camel-tools' dependency pulls a 6 GB CUDA build.
camel: $(VENV)/.camel
$(VENV)/.camel: $(STAMP)
	$(BIN)/pip install -q -c constraints.txt "torch==2.13.0"
	$(BIN)/pip install -q -c constraints.txt -e ".[camel]"
	touch $@

## lock: re-pin constraints.txt to what the venv holds (after `make camel`: the extra's
## dependencies too). Run it after changing a dependency in pyproject.toml, then `make test`.
## torch's local label (+cpu) is dropped: `==2.13.0` still takes the CPU file from disk.
lock: $(VENV)/.camel
	{ sed -n '/^#/p;/^[^#]/q' constraints.txt; \
	  $(BIN)/pip freeze --all --exclude-editable | grep -v '^#\|^pip==' | sed -e 's/+cpu$$//'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

# proto/ is the single source; client/diwaniya/v1 holds the generated stubs and
# a copy of the .proto shipped as package data (both checked by proto-check).
# Every .proto of the API: `make proto` compiles them, `make proto-check` checks their stubs.
PROTOS := proto/diwaniya/v1/conversations.proto proto/diwaniya/v1/knowledge.proto
PROTO_PKG := client/diwaniya/v1

## proto: regenerate client/diwaniya/v1 stubs (and its .proto copy) from proto/
proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc --plugin=protoc-gen-mypy=$(BIN)/protoc-gen-mypy -Iproto --python_out=client --grpc_python_out=client --mypy_out=client \
	  $(PROTOS)
	cp $(PROTOS) $(PROTO_PKG)/

## proto-check: fail when the committed stubs are stale
proto-check: $(STAMP)
	@tmp=$$(mktemp -d) && \
	$(BIN)/python -m grpc_tools.protoc --plugin=protoc-gen-mypy=$(BIN)/protoc-gen-mypy -Iproto --python_out=$$tmp --grpc_python_out=$$tmp --mypy_out=$$tmp \
	  $(PROTOS) && \
	for p in $(PROTOS); do \
	  base=$$(basename $$p .proto); cp $$p $$tmp/diwaniya/v1/; \
	  for f in $${base}_pb2.py $${base}_pb2_grpc.py $${base}_pb2.pyi $${base}.proto; do \
	    cmp -s $$tmp/diwaniya/v1/$$f $(PROTO_PKG)/$$f || { echo "$(PROTO_PKG)/$$f is stale: run 'make proto'"; exit 1; }; \
	  done; \
	done; rm -rf $$tmp

# buf (buf.yaml): lint rules with documented exceptions, and no breaking change
# against the previous commit's proto (first parent: on main, the last merge).
# BUF_AGAINST overrides the baseline, e.g. BUF_AGAINST='.git#branch=main,subdir=proto'.
BUF_AGAINST ?= .git\#ref=HEAD~1,subdir=proto

## lint: ruff, the layering contracts ([tool.importlinter] in pyproject.toml),
## buf lint, buf breaking against the previous commit
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/buf lint
	@git rev-parse -q --verify HEAD~1 >/dev/null || { \
	  echo "buf breaking: no previous commit to compare with (shallow clone? fetch with --depth 2 or more)"; exit 1; }
	$(BIN)/buf breaking --against '$(BUF_AGAINST)'

typecheck: $(STAMP)
	$(BIN)/mypy client/diwaniya service majlis nlp memory

clean:
	rm -rf $(VENV) build *.egg-info client/build client/*.egg-info .pytest_cache .mypy_cache .ruff_cache

"""Shared fixtures: a fresh PostgreSQL database per test session (and one per test that
asks), ../shared/data, and the scripted model and webhook servers.

Outside CI, tests that need PostgreSQL or ../shared/data skip when those are
missing. Under CI (``CI=true``) a missing one is a failure, never a skip.

``make test`` runs the suite on pytest-xdist workers (``-n``, ``--dist
loadgroup``); a "session" is then one worker, so each worker has a database of
its own. ``pytest -q`` alone still runs everything serially, in file order.
"""

from __future__ import annotations

import gc
import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.fakes import ScriptedOpenAIServer, WebhookServer

# This machine's environment (like the Dockerfile's image) sets
# PYTHONDONTWRITEBYTECODE=1. In a test run that made every xdist worker recompile
# the sources and re-rewrite every test module (~4 CPU-s each), and every `serve`
# or CLI subprocess recompile the server (~0.2 CPU-s, ~100 of them). The run
# caches bytecode in the git-ignored __pycache__ folders instead: workers and
# subprocesses, started after this line, inherit the environment.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
# An xdist worker's collection imports every test module and what they import:
# no cyclic collection until it is done (pytest_collection_finish settles the
# heap and turns the collector back on), ~0.25 CPU-s a worker.
if os.environ.get("PYTEST_XDIST_WORKER"):
    gc.disable()
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# Servers under test (in-process and `serve` subprocesses, which inherit this)
# put their Prometheus endpoint on a free port: the default 127.0.0.1:9464 would
# collide between concurrent servers and test runs.
os.environ.setdefault("DIWANIYA_METRICS_LISTEN", "127.0.0.1:0")
# A server opens its whole lock pool at start by default (18 connections of the
# default budget of 30); eight xdist workers' servers at once would need more
# than the shared PostgreSQL's 100 slots. Tests open lock connections on demand,
# as the service did before; test_connection_budget checks the default itself.
os.environ.setdefault("DIWANIYA_PG_LOCK_POOL_MIN", "1")
# Likewise the query pool opens one connection, not the product's two: a
# server under test rarely runs two statements at once (a first turn needs
# one), and each backend opened is 50-90 ms of the shared server's CPU at every
# one of the suite's several hundred start-ups (bench/pg_backends.py: 4 → 3).
os.environ.setdefault("DIWANIYA_POOL_MIN_SIZE", "1")
ADMIN_DSN = os.environ.get("DIWANIYA_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")
_DEFAULT_SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SHARED_DATA = Path(os.environ.get("DIWANIYA_SHARED_DATA", _DEFAULT_SHARED))


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: required, not skipped)")
    pytest.skip(reason)


@contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """DSN of a database created for the caller and dropped (forcibly) afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        _unavailable(f"PostgreSQL is not reachable at {ADMIN_DSN}: {exc}")
    try:
        yield f"{ADMIN_DSN.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """DSN of a database created for this test session and dropped afterwards."""
    # The worker id ("gw3"; absent when serial) only names the database for a
    # reader of pg_stat_activity: the uuid already makes it unique per session.
    with fresh_database(f"diwaniya_test_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}") as dsn:
        yield dsn


@pytest.fixture
def own_database(request: pytest.FixtureRequest) -> Iterator[str]:
    """DSN of a database of this test's own, dropped (forcibly) after it: for what the
    session database cannot show — an empty database, a schema or a setting from an
    older release, backends terminated without touching other tests' connections."""
    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    with fresh_database(f"diwaniya_{module}") as dsn:
        yield dsn


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """The scripted language model (the one fake): a real local HTTP server speaking
    OpenAI chat-completions, for in-process servers and ``serve`` subprocesses alike."""
    server = ScriptedOpenAIServer()
    yield server
    server.close()


@pytest.fixture
def webhook_server() -> Iterator[WebhookServer]:
    """A real HTTP server standing for a tenant's backend (webhook tools, handoff notices)."""
    server = WebhookServer()
    yield server
    server.close()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only ../shared/data folder."""
    if not (SHARED_DATA / "SOURCES.md").exists():
        _unavailable(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


# Under xdist, workers take tests in collection order, one scheduling unit at a
# time (--dist loadgroup, tests/_xdist.py), so the slowest start first and the
# run does not end with one worker alone on a 60 s outage. Each entry is a node-id prefix,
# longest first (seconds from `--durations` on the 2-core machine); tests that
# match none keep their file order after these. Serial runs are not reordered.
SLOW_FIRST: tuple[str, ...] = (
    "tests/chaos/test_db_outage.py::test_outage_answers_unavailable_and_recovers[restart-60s]",
    "tests/chaos/test_db_outage.py::test_outage_answers_unavailable_and_recovers[proxy_drop-60s]",
    "tests/chaos/test_process_faults.py::",
    "tests/service/test_budgets.py::test_rate_limit_holds_in_total_across_two_processes",
    "tests/service/test_budgets.py::test_token_budget_spent_on_one_process_is_enforced_by_the_",
    "tests/chaos/test_kill_restart.py::",
    "tests/service/test_workers.py::",
    "tests/service/test_server.py::test_sigterm_drains_the_real_process",
    "tests/service/test_accept_wait.py::",  # blocks its loop past gRPC's 30 s on purpose
    "tests/service/test_connection_budget.py::test_workers_share_the_replica_budget",
    "tests/test_deploy.py::test_pod_config_migrates_then_serves_its_probes",
    "tests/service/test_offline_qa.py::",
    "tests/chaos/test_pg_restart.py::",
    "tests/service/test_telemetry_serve.py::",
    "tests/service/test_knowledge_cli.py::",
    "tests/service/test_gc_cli.py::",  # serve processes (session 6)
    "tests/service/test_compaction.py::",
    "tests/service/test_pii_storage.py::",
    "tests/service/test_wording_expectations.py::test_reply",  # two groups of ~150
    "tests/service/test_startup_errors.py::",
    "tests/service/test_security.py::",
    "tests/service/test_search_keys_setting.py::",
    "tests/service/test_lazy_drivers.py::",  # two fresh interpreters
    "tests/chaos/",
    "tests/memory/test_memory_terms.py::test_query_terms_are_bounded_word_runs",
    "tests/test_deploy.py::",
    "tests/test_image.py::test_hadolint_is_clean",
    "tests/client/test_retries.py::",
    "tests/service/test_fencing.py::",
    "tests/service/test_model_outage.py::",
    "tests/service/test_pgbouncer.py::",
)


# Tests that must share one worker (tests/_xdist.py): (regex at the start of the
# node id, group name). The PII corpus fixture is module-scoped and sends the
# whole corpus through a server per store: one worker per store runs it once.
XDIST_GROUPS: tuple[tuple[str, str], ...] = (
    (r"tests/service/test_pii_storage\.py::test_corpus_\w+\[(sqlite|postgres)", r"pii-\1"),
    # One server per store for the ~150 wording cases (a module-scoped fixture).
    (r"tests/service/test_wording_expectations\.py::test_reply_\w+\[(sqlite|postgres)",
     r"wording-\1"),
    # One `serve --workers 2` per store for test_workers.py's real-process tests
    # (its two_workers fixture); the one that ends it comes last in the file.
    (r"tests/service/test_workers\.py::test_(every_worker_serves|a_killed_worker|"
     r"killing_the_supervisor)\w*\[(sqlite|postgres)\]", r"workers-\2"),
    # The tests that validate manifests against kubernetes-validate's schemas: the
    # schemas load once per process (~1.3 CPU-s), so once, not on three workers.
    (r"tests/test_deploy\.py::test_(overlay_renders_and_validates_strictly|"
     r"validation_rejects_typos|secret_template_is_valid)", "k8s-validate"),
)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown under -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: tests/_xdist.py's scheduler (groups by XDIST_GROUPS)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests._xdist import GroupedScheduling

    return GroupedScheduling(config, log, XDIST_GROUPS)


def _slow_rank(nodeid: str) -> int:
    for rank, prefix in enumerate(SLOW_FIRST):
        if nodeid.startswith(prefix):
            return rank
    return len(SLOW_FIRST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: _slow_rank(item.nodeid))  # stable: file order otherwise


def pytest_collection_finish(session: pytest.Session) -> None:
    """The test process's collector set as a serving process's (service.heap.settle).

    After collection the heap holds every module the tests import and every
    collected test, alive until the process exits, and CPython's full
    collections re-walked all of it (~0.1 s each, ~15 % of a worker's CPU on the
    service tests). Frozen, and with generation 0 collected every 10,000
    allocations, the in-process servers under test also collect as ``serve`` does.
    """
    from service import heap

    heap.settle()
    gc.enable()  # off during an xdist worker's collection (above)

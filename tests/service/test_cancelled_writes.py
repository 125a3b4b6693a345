"""grpc's ERROR for a write that failed after a cancel is one INFO line of ours.

grpc.aio logs "ExecuteBatchError raised in core by servicer method [...]" at
ERROR, with a traceback, when a client's cancel (or deadline) races a blocked
write — the expected end of that RPC (tests/service/test_blocked_writes.py
makes it happen through a real server). These tests send grpc's own record
through grpc's logger with the filter a server installs.
"""

from __future__ import annotations

import logging

import grpc
import pytest
from grpc._cython import cygrpc

from service import closing
from service.closing import GRPC_LOGGER, CancelledWriteFilter, quiet_cancelled_writes

METHOD = "/diwaniya.v1.Conversations/SendMessage"


def _grpc_logs(exc: Exception, message: str) -> None:
    # As grpc's _handle_exceptions does: _LOGGER.exception(... % method).
    try:
        raise exc
    except Exception:
        logging.getLogger(GRPC_LOGGER).exception(message)


@pytest.fixture
def installed() -> None:
    quiet_cancelled_writes()


@pytest.mark.usefixtures("installed")
def test_a_failed_write_after_a_cancel_is_info_and_says_it_is_expected(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    _grpc_logs(cygrpc.ExecuteBatchError('Failed "execute_batch"'),
               f"ExecuteBatchError raised in core by servicer method [{METHOD}]")
    lines = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert [level for _, level, _ in lines] == [logging.INFO]
    name, _, message = lines[0]
    assert name == "diwaniya.service"
    assert METHOD in message and "expected" in message and "after the RPC had ended" in message


@pytest.mark.usefixtures("installed")
def test_other_grpc_errors_stay_errors(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    _grpc_logs(ValueError("a servicer bug"),
               f"Unexpected [ValueError] raised by servicer method [{METHOD}]")
    assert [(r.name, r.levelno) for r in caplog.records] == [(GRPC_LOGGER, logging.ERROR)]
    assert caplog.records[0].exc_info is not None  # the traceback is kept


def test_installed_once_however_many_servers_start() -> None:
    quiet_cancelled_writes()
    quiet_cancelled_writes()
    filters = logging.getLogger(GRPC_LOGGER).filters
    assert len([f for f in filters if isinstance(f, CancelledWriteFilter)]) == 1


def test_grpc_still_has_the_private_names_the_filter_needs() -> None:
    """service.closing leans on two private names of grpc (no public API has them):
    should a grpc upgrade move either, this fails and names it, rather than grpc's
    ERROR lines quietly coming back."""
    assert closing.EXECUTE_BATCH_ERROR is cygrpc.ExecuteBatchError, (
        f"grpc {grpc.__version__}: grpc._cython.cygrpc.ExecuteBatchError is gone")
    # The logger grpc.aio's _handle_exceptions reports servicer failures on.
    logger = cygrpc._LOGGER
    assert logger.name == GRPC_LOGGER, f"grpc {grpc.__version__} now logs on {logger.name}"


def test_without_the_private_error_every_record_passes(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # The guard: a grpc without ExecuteBatchError leaves its lines as they were.
    monkeypatch.setattr(closing, "EXECUTE_BATCH_ERROR", None)
    grpc_log = logging.getLogger(GRPC_LOGGER)
    monkeypatch.setattr(grpc_log, "filters", [])
    caplog.set_level(logging.INFO)
    quiet_cancelled_writes()
    assert "has no grpc._cython.cygrpc.ExecuteBatchError" in caplog.text
    caplog.clear()
    _grpc_logs(cygrpc.ExecuteBatchError('Failed "execute_batch"'),
               f"ExecuteBatchError raised in core by servicer method [{METHOD}]")
    assert [(r.name, r.levelno) for r in caplog.records] == [(GRPC_LOGGER, logging.ERROR)]

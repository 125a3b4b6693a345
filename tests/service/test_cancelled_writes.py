"""grpc's ERROR for a write that failed after a cancel is one INFO line of ours.

grpc.aio logs "ExecuteBatchError raised in core by servicer method [...]" at
ERROR, with a traceback, when a client's cancel (or deadline) races a blocked
write — the expected end of that RPC (tests/service/test_blocked_writes.py
makes it happen through a real server). These tests send grpc's own record
through grpc's logger with the filter a server installs.
"""

from __future__ import annotations

import logging

import pytest
from grpc._cython import cygrpc

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

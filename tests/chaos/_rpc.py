"""What the chaos tests read of a failed RPC: the error itself and its RetryInfo delay."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status


async def rpc_error(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    """The error ``call`` must fail with (the test fails if it succeeds)."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


def retry_delay_s(err: grpc.aio.AioRpcError) -> float | None:
    """The google.rpc.RetryInfo delay the server sent with ``err`` (UNAVAILABLE,
    RESOURCE_EXHAUSTED), in seconds; None when it sent none."""
    status = rpc_status.from_call(err)
    for detail in status.details if status else []:
        info = error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            return info.retry_delay.ToMilliseconds() / 1000
    return None

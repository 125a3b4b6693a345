"""A retry that replays a finished ``request_id`` is not a new turn: the rate limit
neither counts nor refuses it (majlis.turn_guard), on both stores."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from service import DiwaniyaClient
from tests.service.conftest import collect


async def test_a_replayed_request_id_does_not_count_against_the_rate(
    run_service: Callable[..., Any],
) -> None:
    suffix = uuid.uuid4().hex[:8]
    key, user = f"key-{suffix}", f"replay-rate-{suffix}"
    async with run_service(api_keys={key: f"t-{suffix}"}, rate_limit="2/hour") as svc:
        async with DiwaniyaClient(svc.target, api_key=key) as client:
            first = uuid.uuid4().hex
            done = await collect(client.send("وين طلبي؟", user_id=user, request_id=first))
            for _ in range(3):  # retries of a finished turn: replayed, never refused
                again = await collect(client.send("وين طلبي؟", user_id=user, request_id=first))
                assert again[-1].turn_completed.replayed
                assert again[-1].turn_id == done[-1].turn_id
            second = await collect(client.send("مرحبا", user_id=user,
                                               request_id=uuid.uuid4().hex))
            assert not second[-1].turn_completed.replayed  # the second of two allowed
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await collect(client.send("هلا", user_id=user, request_id=uuid.uuid4().hex))
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            # Over the rate, a finished request still replays: it costs nothing.
            again = await collect(client.send("وين طلبي؟", user_id=user, request_id=first))
            assert again[-1].turn_completed.replayed

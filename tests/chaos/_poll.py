"""Polling a live server until a check holds, for the chaos tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import grpc


async def wait_until(check: Callable[[], Awaitable[bool]], within_s: float, *,
                     every_s: float = 0.1) -> bool:
    """True once ``check()`` is true within ``within_s``; an RPC error counts as not yet."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if await check():
                return True
        except grpc.aio.AioRpcError:
            pass
        await asyncio.sleep(every_s)
    return False

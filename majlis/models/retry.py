"""When to retry a model call, and how long to wait first.

Pure functions over status codes, headers and the clock, so the policy is
tested without a network. The invariant: no wait ever ends past the turn's
deadline; if it would, the caller raises ``DeadlineExceeded`` instead.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Callable, Mapping

__all__ = ["backoff_delay", "is_retryable_status", "rejects_tools", "retry_after_s"]

# "tool" / "function" in any case: how providers name the part they refused
# (e.g. vLLM '"auto" tool choice requires --enable-auto-tool-choice',
# Ollama 'model does not support tools', OpenAI 'Invalid schema for function').
_TOOLS_WORD = re.compile(r"tool|function", re.IGNORECASE)
_TOOL_REJECTION_STATUSES = frozenset({400, 404, 422})
# Retry-After may name a wait longer than any turn; cap it when there is no deadline.
MAX_RETRY_AFTER_S = 60.0


def is_retryable_status(status: int) -> bool:
    """429 (rate limited), 408 and every 5xx are worth another attempt."""
    return status in (408, 409, 429) or 500 <= status <= 599


def rejects_tools(status: int, message: str) -> bool:
    """A 400/404/422 whose message names tools or functions."""
    return status in _TOOL_REJECTION_STATUSES and bool(_TOOLS_WORD.search(message))


def retry_after_s(
    headers: Mapping[str, str], *, now: Callable[[], float] = time.time
) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` is either delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


def backoff_delay(attempt: int, *, base_s: float, max_s: float, rng: Callable[[], float]) -> float:
    """Exponential backoff with "equal jitter": half fixed, half random.

    The fixed half guarantees we actually back off; the random half keeps many
    clients that failed together from retrying together.
    """
    capped = min(max_s, base_s * (2**attempt))
    return capped / 2 + capped / 2 * rng()

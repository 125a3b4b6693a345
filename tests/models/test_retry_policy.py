"""The retry policy as pure functions: Retry-After forms, tool rejection, backoff."""

from __future__ import annotations

import pytest

from majlis.models.retry import backoff_delay, is_retryable_status, rejects_tools, retry_after_s


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),  # the precise one wins
        ({"Retry-After": "Sun, 29 Nov 2026 20:00:10 GMT"}, 10.0),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_forms(headers: dict[str, str], expected: float | None) -> None:
    now = 1795982400.0  # Sun, 29 Nov 2026 20:00:00 GMT
    assert retry_after_s(headers, now=lambda: now) == expected


def test_tool_rejection_needs_the_right_status_and_words() -> None:
    assert rejects_tools(400, "model does not support tools")
    assert rejects_tools(422, "Unknown field: functions")
    assert rejects_tools(404, "tool_choice not found")
    assert not rejects_tools(400, "messages: field required")
    assert not rejects_tools(500, "tool server crashed")


def test_retryable_statuses() -> None:
    assert [s for s in (400, 401, 404, 408, 429, 500, 503) if is_retryable_status(s)] == [
        408,
        429,
        500,
        503,
    ]


def test_backoff_grows_is_capped_and_jittered() -> None:
    low = [backoff_delay(a, base_s=0.5, max_s=4, rng=lambda: 0.0) for a in range(6)]
    high = [backoff_delay(a, base_s=0.5, max_s=4, rng=lambda: 1.0) for a in range(6)]
    assert low == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert high == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]

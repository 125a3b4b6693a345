"""The turn's text as typed (unmasked), held outside the graph state for the model only.

The engine masks personal data before the text enters the thread state, which
LangGraph checkpoints after every step. A tenant whose policy is
``pii_to_model = "raw"`` wants its model to see the real number (to pass it to
its own order backend, say): that one string is carried in a context variable
for the length of the turn — never in the state, so never in a checkpoint, an
event or a log — and read by the respond node alone.

>>> with holding_raw("بطاقتي 4111111111111111"):
...     raw_turn_text()
'بطاقتي 4111111111111111'
>>> raw_turn_text() is None
True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["holding_raw", "raw_turn_text"]

_RAW: ContextVar[str | None] = ContextVar("diwaniya_raw_turn_text", default=None)


@contextmanager
def holding_raw(text: str | None) -> Iterator[None]:
    """Make ``text`` the current turn's raw text inside the block (None: nothing held)."""
    token = _RAW.set(text)
    try:
        yield
    finally:
        try:
            _RAW.reset(token)
        except ValueError:  # an abandoned stream finalised in another context
            _RAW.set(None)


def raw_turn_text() -> str | None:
    return _RAW.get()

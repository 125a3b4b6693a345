"""Reply text helpers shared by every path that speaks: nodes, approvals, tools, responders.

Kept apart from any one responder so that the engine, the hold node and the
tool loop do not borrow them from the offline responder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["render_content", "stream_words"]


def stream_words(text: str) -> list[str]:
    """«أهلاً وسهلاً بك» → ['أهلاً ', 'وسهلاً ', 'بك']: every chunk keeps its trailing space.

    >>> stream_words("أهلاً وسهلاً بك")
    ['أهلاً ', 'وسهلاً ', 'بك']
    """
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words) if w or i == 0]


def render_content(content: Any) -> str:
    """Tool content as short Arabic-friendly text: «الحالة: في الطريق، الموعد: غدًا».

    >>> render_content({"الحالة": "في الطريق", "الموعد": "غدًا"})
    'الحالة: في الطريق، الموعد: غدًا'
    """
    if content is None:
        return "تم."
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        return "، ".join(f"{k}: {render_content(v)}" for k, v in content.items())
    if isinstance(content, list):
        return "؛ ".join(render_content(v) for v in content[:5])
    return str(content)

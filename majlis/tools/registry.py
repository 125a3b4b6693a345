"""Which tools to bind this turn.

Models choose worse among many tools, and every definition costs prompt
tokens, so each turn binds only the few whose description or example
utterances share content keys with what the user said. Built-ins are always
eligible. With ``k`` or fewer tools, all are bound: nothing to choose.

    >>> registry.select("وين وصل طلبي رقم 4411؟", k=2)   # doctest: +SKIP
    [kb_search, remember_fact, handoff_to_human, order_status]
"""

from __future__ import annotations

from collections.abc import Sequence

from diwaniya.errors import ConfigurationError
from majlis.tools.base import Tool
from majlis.tools.builtin import BUILTIN_NAMES
from nlp.keys import KeyFunction, content_keys, search_keys, stop_keys_for

__all__ = ["ToolRegistry"]


class ToolRegistry:
    def __init__(self, tools: Sequence[Tool], *, keys: KeyFunction = search_keys) -> None:
        names = [t.spec.name for t in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigurationError(f"tool names must be unique; repeated: {duplicates}")
        self._tools = list(tools)
        self._by_name = {t.spec.name: t for t in tools}
        self._keys = keys
        self._stop = stop_keys_for(keys)
        self._index_built: dict[str, list[frozenset[str]]] | None = None

    @property
    def _index(self) -> dict[str, list[frozenset[str]]]:
        """Per tool: one key set for the description and one per example utterance.

        Built on first use: a registry is built every turn, and with ``k`` or
        fewer tools (the common case) ``select`` never ranks, so never needs it.
        """
        if self._index_built is None:
            self._index_built = {
                t.spec.name: [
                    frozenset(content_keys(text, self._keys, self._stop))
                    for text in (t.spec.description, *t.examples)
                ]
                for t in self._tools
            }
        return self._index_built

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools)

    def relevance(self, text: str, tool: Tool) -> float:
        """Best fraction of the text's content keys found in one example or the description."""
        query = set(content_keys(text, self._keys, self._stop))
        if not query:
            return 0.0
        return max(
            (len(query & keys) / len(query) for keys in self._index[tool.spec.name]), default=0.0
        )

    def select(self, text: str, k: int = 5) -> list[Tool]:
        builtins = [t for t in self._tools if t.spec.name in BUILTIN_NAMES]
        others = [t for t in self._tools if t.spec.name not in BUILTIN_NAMES]
        if len(others) <= k:
            return builtins + others
        scored = [(self.relevance(text, t), i, t) for i, t in enumerate(others)]
        ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
        return builtins + [t for _, _, t in ranked[:k]]

"""Emitting events from inside a node: live to the caller, and into the node's record."""

from __future__ import annotations

from typing import Any

from majlis.events import Event, event_to_dict
from majlis.graph_run import event_writer


class Emitter:
    """Collects one node's events and streams each one as it happens.

    The collected dicts go into the node's record (``Setting.events``,
    ``Reply.events`` …) so that the completed turn can be replayed exactly;
    the live copy goes to the turn's run (majlis.graph_run).
    """

    def __init__(self) -> None:
        self._writer = event_writer()
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event_to_dict(event))
        self._writer(event)

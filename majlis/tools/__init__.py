"""Tools the model (or the offline responder) can call during a turn."""

from majlis.tools.base import Tool, ToolContext, ToolOutcome
from majlis.tools.builtin import (
    compose_handoff_summary,
    handoff_tool,
    kb_search_tool,
    remember_fact_tool,
)
from majlis.tools.loop import FALLBACK_REPLY, TurnOutput, run_model_turn
from majlis.tools.registry import ToolRegistry
from majlis.tools.webhook import WebhookTool, WebhookToolConfig

__all__ = [
    "FALLBACK_REPLY",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolRegistry",
    "TurnOutput",
    "WebhookTool",
    "WebhookToolConfig",
    "compose_handoff_summary",
    "handoff_tool",
    "kb_search_tool",
    "remember_fact_tool",
    "run_model_turn",
]

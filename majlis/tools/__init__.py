"""Tools the model (or the offline responder) can call during a turn."""

from majlis.tools.base import Tool, ToolContext, ToolOutcome
from majlis.tools.builtin import (
    compose_handoff_summary,
    handoff_tool,
    kb_search_tool,
    remember_fact_tool,
)
from majlis.tools.registry import ToolRegistry
from majlis.tools.webhook import WebhookTool, WebhookToolConfig

__all__ = [
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolRegistry",
    "WebhookTool",
    "WebhookToolConfig",
    "compose_handoff_summary",
    "handoff_tool",
    "kb_search_tool",
    "remember_fact_tool",
]

"""Real local HTTP servers that tests script: an OpenAI-compatible model and webhooks."""

from tests.fakes.openai_server import ScriptedOpenAIServer, ScriptedReply
from tests.fakes.webhook_server import WebhookReply, WebhookServer

__all__ = ["ScriptedOpenAIServer", "ScriptedReply", "WebhookReply", "WebhookServer"]

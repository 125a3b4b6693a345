"""The text layer's own exceptions: ``nlp`` imports nothing of the product.

The composition root (``service``) maps these to the domain error tree
(``diwaniya.errors.ConfigurationError``) where it loads the text layer;
programmer errors (a wrong argument) are plain ``ValueError``/``TypeError``.
"""

from __future__ import annotations

__all__ = ["NlpError", "ResourceUnavailable"]


class NlpError(Exception):
    """Base of the text layer's errors; ``message`` is the one line to show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ResourceUnavailable(NlpError):
    """A backend or data file the operator selected is missing or unreadable.

    Raised at startup (loading), never per request.
    """

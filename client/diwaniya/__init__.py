"""Diwaniya: the API package (generated ``diwaniya.v1`` stubs) and the domain error tree.

Every other package (``nlp``, ``memory``, ``majlis``, ``service``) raises only
errors from :mod:`diwaniya.errors`; ``service.errors`` is the one place that
turns them into gRPC status codes.
"""

from diwaniya.errors import DiwaniyaError

__all__ = ["DiwaniyaError"]

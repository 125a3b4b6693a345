"""Diwaniya: the API package (generated ``diwaniya.v1`` stubs, their ``.proto``),
the domain error tree and the clients (``diwaniya.client``).

Distributed alone as ``diwaniya-client`` (grpcio, protobuf, grpcio-status only).

Every other package (``nlp``, ``memory``, ``majlis``, ``service``) raises only
errors from :mod:`diwaniya.errors`; ``service.errors`` is the one place that
turns them into gRPC status codes.
"""

from diwaniya.errors import DiwaniyaError

__all__ = ["DiwaniyaError"]

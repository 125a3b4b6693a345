"""Registering the servicer with deserializers that never fail the call as UNKNOWN.

grpc.aio runs the request deserializer before the handler; when protobuf
raises (invalid UTF-8 in a ``string`` field, a truncated varint, a wrong wire
type) the call ends as ``UNKNOWN`` with no useful message.  Here every method
is registered with a tolerant deserializer that returns an :class:`Undecodable`
marker instead, and a thin wrapper turns the marker into ``INVALID_ARGUMENT``
with an actionable message.  A ``Converse`` stream passes the marker through to
the servicer, which answers that one message with an ``error`` event and keeps
the stream open, as for any other failed turn.

>>> decode = tolerant(pb.SendMessageRequest)
>>> decode(b"\\x12\\x02\\xd8\\x00")   # field 2 (text): "\\xd8\\x00" is not UTF-8  # doctest: +SKIP
Undecodable(type_name='diwaniya.v1.SendMessageRequest', detail='Error parsing message ...')
>>> decode(pb.SendMessageRequest(text="هلا والله").SerializeToString()).text
'هلا والله'
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message

from diwaniya.errors import InvalidRequest
from diwaniya.v1 import conversations_pb2 as pb
from service.errors import abort

SERVICE = pb.DESCRIPTOR.services_by_name["Conversations"]


@dataclass(frozen=True, slots=True)
class Undecodable:
    """A request whose bytes are not a valid message of the method's input type."""

    type_name: str
    detail: str

    @property
    def message(self) -> str:
        return (f"the request is not a valid {self.type_name} ({self.detail}); string fields "
                "must be valid UTF-8 — check the client's encoding and its copy of the proto")

    def error(self) -> InvalidRequest:
        return InvalidRequest(self.message, reason="MALFORMED_MESSAGE")


def tolerant(cls: type[Message]) -> Callable[[bytes], Message | Undecodable]:
    def decode(data: bytes) -> Message | Undecodable:
        try:
            return cls.FromString(data)
        except (DecodeError, ValueError, RuntimeError) as exc:
            # upb raises DecodeError; the pure-Python runtime can raise ValueError
            # (bad UTF-8) — both are the client's bytes, never our fault.
            return Undecodable(cls.DESCRIPTOR.full_name, str(exc) or type(exc).__name__)

    return decode


def _unary_unary(method: Callable[..., Any]) -> Callable[..., Any]:
    async def handler(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        if isinstance(request, Undecodable):
            await abort(context, request.error())
        return await method(request, context)

    return handler


def _unary_stream(method: Callable[..., Any]) -> Callable[..., Any]:
    async def handler(request: Any, context: grpc.aio.ServicerContext[Any, Any]
                      ) -> AsyncIterator[Any]:
        if isinstance(request, Undecodable):
            await abort(context, request.error())
        # aclosing: a stream that ends early closes the servicer's generator
        # here, in this task's context, not in the garbage collector's.
        async with contextlib.aclosing(method(request, context)) as items:
            async for item in items:
                yield item

    return handler


def add_servicer(servicer: Any, server: grpc.aio.Server, *,
                 service: ServiceDescriptor = SERVICE, messages: ModuleType = pb) -> None:
    """Like the generated ``add_ConversationsServicer_to_server``, tolerant of bad bytes.

    Built from the service descriptor, so a new RPC in the proto is registered
    here without editing this module; another service passes its descriptor
    and the generated module holding its messages (service.knowledge).
    """
    handlers: dict[str, grpc.RpcMethodHandler] = {}
    for method in service.methods:
        request_cls: type[Message] = getattr(messages, method.input_type.name)
        response_cls: type[Message] = getattr(messages, method.output_type.name)
        impl = getattr(servicer, method.name)
        kwargs: dict[str, Any] = {"request_deserializer": tolerant(request_cls),
                                  "response_serializer": response_cls.SerializeToString}
        if method.client_streaming and method.server_streaming:
            # The servicer sees the Undecodable marker per message (see Converse).
            handler = grpc.stream_stream_rpc_method_handler(impl, **kwargs)
        elif method.client_streaming:
            handler = grpc.stream_unary_rpc_method_handler(impl, **kwargs)
        elif method.server_streaming:
            handler = grpc.unary_stream_rpc_method_handler(_unary_stream(impl), **kwargs)
        else:
            handler = grpc.unary_unary_rpc_method_handler(_unary_unary(impl), **kwargs)
        handlers[method.name] = handler
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),))
    server.add_registered_method_handlers(service.full_name, handlers)

"""A raw-call harness for ``diwaniya.v1.Conversations``: the tests' and bench's view of the wire.

Not used by the server, nor by ``diwaniya chat``: callers use the light client
of the ``diwaniya-client`` distribution (:class:`diwaniya.client.AsyncClient`:
typed errors, generated request_ids, safe retries). This one returns the raw
grpc calls and raises ``grpc.aio.AioRpcError``, so tests can assert exact
statuses, trailers and cancellation; it shares the light client's channel
options (TLS/mTLS, API key), so both speak to a server the same way.

>>> async with DiwaniyaClient("127.0.0.1:50051") as client:      # doctest: +SKIP
...     async for event in client.send("السلام عليكم", user_id="u1"):
...         print(event.WhichOneof("event"))
turn_started
phase_changed
text_delta
...
turn_completed
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType

from grpc_health.v1 import health_pb2, health_pb2_grpc

from diwaniya.client import _options as opt
from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc


@dataclass(frozen=True)
class ClientTls:
    """TLS towards the server as one value: the CA to trust (None: the system
    roots) and, for mTLS, this client's certificate and key (PEM files).

    ``server_name`` overrides the name checked in the server certificate, for
    a target given as an address the certificate does not list.
    """

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    server_name: str | None = None


class DiwaniyaClient:
    def __init__(self, target: str, *, api_key: str | None = None,
                 tls: bool | ClientTls | None = False,
                 tls_ca: opt.Pem | None = None, tls_cert: opt.Pem | None = None,
                 tls_key: opt.Pem | None = None, tls_server_name: str | None = None,
                 timeout_s: float | None = 120.0, own_connection: bool = False) -> None:
        if isinstance(tls, ClientTls):
            tls_ca, tls_cert, tls_key = tls.ca_file, tls.cert_file, tls.key_file
            tls_server_name = tls_server_name or tls.server_name
        tls = bool(tls)
        self._channel = opt.aio_channel(
            target, tls=tls, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key,
            tls_server_name=tls_server_name, own_connection=own_connection)
        self._stub = pb_grpc.ConversationsStub(self._channel)
        self._metadata = opt.auth_metadata(api_key)
        self._timeout = timeout_s

    async def __aenter__(self) -> DiwaniyaClient:
        return self

    async def __aexit__(
        self, *exc: type[BaseException] | BaseException | TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    message = staticmethod(opt.message)

    def send(self, text: str, *, user_id: str, thread_id: str = "", request_id: str = "",
             country: str = "", timezone: str = "", client_time: datetime | None = None,
             timeout_s: float | None = None,
             register: pb.Register.ValueType = pb.REGISTER_UNSPECIFIED,
             ) -> AsyncIterator[pb.TurnEvent]:
        """One turn; iterate the returned call for its events (raises ``grpc.aio.AioRpcError``)."""
        request = self.message(text, user_id=user_id, thread_id=thread_id, request_id=request_id,
                               country=country, timezone=timezone, client_time=client_time,
                               register=register)
        return self._stub.SendMessage(request, metadata=self._metadata,
                                      timeout=timeout_s or self._timeout)

    def approve(self, call_id: str, *, thread_id: str, user_id: str, approved: bool = True,
                request_id: str = "") -> AsyncIterator[pb.TurnEvent]:
        """Answer an ``approval_required`` event; iterate the call for the settling turn."""
        return self._stub.Approve(
            pb.Approval(thread_id=thread_id, user_id=user_id, call_id=call_id,
                        approved=approved, request_id=request_id),
            metadata=self._metadata, timeout=self._timeout)

    def converse(self, messages: AsyncIterator[pb.ClientMessage]) -> AsyncIterator[pb.TurnEvent]:
        return self._stub.Converse(messages, metadata=self._metadata)

    async def get_thread(self, thread_id: str, *, user_id: str) -> pb.Thread:
        return await self._stub.GetThread(
            pb.GetThreadRequest(thread_id=thread_id, user_id=user_id), metadata=self._metadata)

    async def list_threads(self, *, user_id: str, page_size: int = 20,
                           page_token: str = "") -> pb.ListThreadsResponse:
        return await self._stub.ListThreads(
            pb.ListThreadsRequest(user_id=user_id, page_size=page_size, page_token=page_token),
            metadata=self._metadata)

    async def delete_thread(self, thread_id: str, *, user_id: str) -> pb.DeleteThreadResponse:
        return await self._stub.DeleteThread(
            pb.DeleteThreadRequest(thread_id=thread_id, user_id=user_id), metadata=self._metadata)

    async def release_handoff(self, thread_id: str, *, user_id: str) -> pb.Thread:
        """Give a handed-off thread back to the bot; returns the thread."""
        return await self._stub.ReleaseHandoff(
            pb.ReleaseHandoffRequest(thread_id=thread_id, user_id=user_id),
            metadata=self._metadata)

    async def health(self, service: str = "") -> str:
        stub = health_pb2_grpc.HealthStub(self._channel)
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)

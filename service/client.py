"""A small typed client for ``diwaniya.v1.Conversations``.

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

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc
from service.convert import timestamp


@dataclass(frozen=True)
class ClientTls:
    """TLS towards the server: the CA to trust (None: the system roots) and, for
    mTLS, this client's certificate and key (PEM files).

    ``server_name`` overrides the name checked in the server certificate, for
    a target given as an address the certificate does not list.
    """

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    server_name: str | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("a client certificate needs its key, and the key its certificate")
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca_file.read_bytes() if self.ca_file else None,
            private_key=self.key_file.read_bytes() if self.key_file else None,
            certificate_chain=self.cert_file.read_bytes() if self.cert_file else None)


class DiwaniyaClient:
    def __init__(self, target: str, *, api_key: str | None = None,
                 timeout_s: float | None = 120.0, own_connection: bool = False,
                 tls: ClientTls | None = None) -> None:
        # own_connection: grpc shares one TCP connection between channels to the
        # same target; a client of its own spreads over ``serve --workers``.
        options: list[tuple[str, str | int]] = (
            [("grpc.use_local_subchannel_pool", 1)] if own_connection else [])
        if tls is None:
            self._channel = grpc.aio.insecure_channel(target, options=options or None)
        else:
            if tls.server_name:
                options.append(("grpc.ssl_target_name_override", tls.server_name))
            self._channel = grpc.aio.secure_channel(target, tls.credentials(),
                                                    options=options or None)
        self._stub = pb_grpc.ConversationsStub(self._channel)
        self._metadata = (("authorization", f"Bearer {api_key}"),) if api_key else ()
        self._timeout = timeout_s

    async def __aenter__(self) -> DiwaniyaClient:
        return self

    async def __aexit__(
        self, *exc: type[BaseException] | BaseException | TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    @staticmethod
    def message(
        text: str, *, user_id: str, thread_id: str = "", request_id: str = "", country: str = "",
        timezone: str = "", client_time: datetime | None = None,
        register: pb.Register.ValueType = pb.REGISTER_UNSPECIFIED,
    ) -> pb.SendMessageRequest:
        msg = pb.SendMessageRequest(text=text, user_id=user_id, thread_id=thread_id,
                                    request_id=request_id, country=country, timezone=timezone,
                                    register=register)
        if client_time is not None:
            msg.client_time.CopyFrom(timestamp(client_time))
        return msg

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

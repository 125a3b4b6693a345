"""The grpc.aio server: options, health, reflection, readiness and graceful drain."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from diwaniya.v1 import conversations_pb2 as pb
from service import knowledge as kb_service
from service import wire
from service.knowledge import KnowledgeServicer
from service.servicer import ConversationsServicer

log = logging.getLogger("diwaniya.server")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Conversations"].full_name


@dataclass(frozen=True)
class ServerOptions:
    listen: str = "127.0.0.1:0"
    reflection: bool = True
    max_message_bytes: int = 1 << 20
    max_concurrent_streams: int = 256
    keepalive_time_s: int = 60
    keepalive_timeout_s: int = 20
    drain_grace_s: float = 20.0
    # How long health reports NOT_SERVING while still serving, so that load
    # balancers and kube-proxy stop routing here before new RPCs are refused.
    drain_delay_s: float = 2.0
    readiness_interval_s: float = 5.0
    # One of several worker processes on the same port (service.workers).
    reuse_port: bool = False


class Server:
    """Owns the grpc.aio server and its lifecycle.

    ``start()`` binds and returns the port; ``drain()`` turns health to
    NOT_SERVING first (so load balancers stop routing new streams here),
    refuses new turns, then ``stop(grace)`` lets open streams finish.
    """

    def __init__(
        self,
        servicer: ConversationsServicer,
        ready: Callable[[], Awaitable[None]],
        options: ServerOptions,
        draining: asyncio.Event,
        knowledge: KnowledgeServicer | None = None,
    ) -> None:
        self._options = options
        self._ready = ready
        self._draining = draining
        self.health = health.aio.HealthServicer()
        grpc_options = [
            ("grpc.max_receive_message_length", options.max_message_bytes),
            ("grpc.max_send_message_length", options.max_message_bytes),
            ("grpc.max_concurrent_streams", options.max_concurrent_streams),
            ("grpc.keepalive_time_ms", options.keepalive_time_s * 1000),
            ("grpc.keepalive_timeout_ms", options.keepalive_timeout_s * 1000),
            ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
            ("grpc.keepalive_permit_without_calls", 1),
        ]
        if options.reuse_port:
            # Explicit, not grpc's platform default: the workers depend on it.
            grpc_options.append(("grpc.so_reuseport", 1))
        self._server = grpc.aio.server(
            options=grpc_options, maximum_concurrent_rpcs=options.max_concurrent_streams * 4
        )
        # Not the generated add_ConversationsServicer_to_server: undecodable
        # bytes must be INVALID_ARGUMENT, not UNKNOWN (service.wire).
        wire.add_servicer(servicer, self._server)
        names = [SERVICE_NAME]
        if knowledge is not None:
            wire.add_servicer(knowledge, self._server, service=kb_service.SERVICE,
                              messages=kb_service.kpb)
            names.append(kb_service.SERVICE.full_name)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        if options.reflection:
            reflection.enable_server_reflection(
                (*names, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
            )
        self._watch: asyncio.Task[None] | None = None
        self.port = 0

    async def start(self) -> int:
        self.port = self._server.add_insecure_port(self._options.listen)
        if self.port == 0:
            raise OSError(f"cannot listen on {self._options.listen}")
        await self._server.start()
        await self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        await self._check_ready()
        self._watch = asyncio.create_task(self._watch_readiness())
        return self.port

    async def _set_ready(self, status: int) -> None:
        """Readiness: the service name, which load balancers and readiness probes ask.

        Liveness (service ``""``, what Kubernetes' gRPC liveness probe asks) is
        set SERVING at start and never follows the database: a database outage
        must take replicas out of rotation, not restart every one of them.
        """
        await self.health.set(SERVICE_NAME, status)

    async def _check_ready(self) -> None:
        try:
            await asyncio.wait_for(self._ready(), timeout=5)
            status = health_pb2.HealthCheckResponse.SERVING
        except Exception as exc:
            log.warning("not ready: %s", exc)
            status = health_pb2.HealthCheckResponse.NOT_SERVING
        if not self._draining.is_set():
            await self._set_ready(status)

    async def _watch_readiness(self) -> None:
        while True:
            await asyncio.sleep(self._options.readiness_interval_s)
            await self._check_ready()

    async def drain(self, grace: float | None = None, *, delay: float | None = None) -> None:
        """NOT_SERVING → (delay, still serving) → refuse new RPCs → open ones get ``grace``.

        Converse streams end after their running turn; in-flight turns finish.
        """
        grace = self._options.drain_grace_s if grace is None else grace
        delay = self._options.drain_delay_s if delay is None else delay
        if self._watch:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        # Draining is readiness only: the process stays live until it exits.
        await self._set_ready(health_pb2.HealthCheckResponse.NOT_SERVING)
        log.info("draining: NOT_SERVING for %.1fs, then up to %.1fs for open streams", delay,
                 grace)
        await asyncio.sleep(delay)
        self._draining.set()
        await self._server.stop(grace)

    async def wait_for_termination(self) -> None:
        await self._server.wait_for_termination()


def stop_on_signal() -> asyncio.Event:
    """An event set by SIGTERM/SIGINT; install it before start-up work.

    A worker told to stop while it is still starting (serve --workers) must
    drain like any other, not die of the default SIGTERM action.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def serve_until_signal(server: Server, stop: asyncio.Event | None = None) -> None:
    """Run until SIGTERM/SIGINT (or ``stop``, from :func:`stop_on_signal`), then drain."""
    if stop is None:
        stop = stop_on_signal()
    await stop.wait()
    log.info("signal received")
    await server.drain()

"""The grpc.aio server: options, TLS, health, reflection, readiness and graceful drain."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Self

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from diwaniya.errors import ConfigurationError
from diwaniya.v1 import conversations_pb2 as pb
from majlis.config import settings_values
from service import knowledge as kb_service
from service import priority, wire
from service.closing import ClosingInterceptor, quiet_cancelled_writes
from service.knowledge import KnowledgeServicer
from service.servicer import ConversationsServicer

log = logging.getLogger("diwaniya.server")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Conversations"].full_name


def _read(path: Path, setting: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"{setting}={path} cannot be read: {exc.strerror}") from exc


@dataclass(frozen=True)
class ServerTls:
    """Server certificate and key (PEM); a client CA turns on mTLS.

    With ``client_ca_file`` and ``require_client_cert`` a client without a
    certificate signed by that CA fails the handshake (it never reaches an RPC).
    """

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None
    require_client_cert: bool = False

    @classmethod
    def from_settings(cls, cert: Path | None, key: Path | None, client_ca: Path | None,
                      require_client_cert: bool) -> ServerTls | None:
        if cert is None and key is None:
            if client_ca is not None or require_client_cert:
                raise ConfigurationError(
                    "DIWANIYA_TLS_CLIENT_CA_FILE / DIWANIYA_TLS_REQUIRE_CLIENT_CERT need "
                    "DIWANIYA_TLS_CERT_FILE and DIWANIYA_TLS_KEY_FILE")
            return None
        if cert is None or key is None:
            raise ConfigurationError(
                "set both DIWANIYA_TLS_CERT_FILE and DIWANIYA_TLS_KEY_FILE (or neither)")
        if require_client_cert and client_ca is None:
            raise ConfigurationError(
                "DIWANIYA_TLS_REQUIRE_CLIENT_CERT=true needs DIWANIYA_TLS_CLIENT_CA_FILE, "
                "the CA that signs client certificates")
        return cls(cert, key, client_ca, require_client_cert)

    def _files(self) -> list[tuple[Path, str]]:
        files = [(self.key_file, "DIWANIYA_TLS_KEY_FILE"),
                 (self.cert_file, "DIWANIYA_TLS_CERT_FILE")]
        if self.client_ca_file:
            files.append((self.client_ca_file, "DIWANIYA_TLS_CLIENT_CA_FILE"))
        return files

    def _config(self) -> Any:
        key, cert, *ca = (_read(path, name) for path, name in self._files())
        try:
            return grpc.ssl_server_certificate_configuration(
                [(key, cert)], root_certificates=ca[0] if ca else None)
        except (ValueError, RuntimeError, TypeError) as exc:
            raise ConfigurationError(f"TLS files are not usable: {exc}") from exc

    def _verify(self) -> None:
        """A certificate that does not match its key, or a file that is no PEM,
        fails here at startup rather than in every client's handshake."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
            if self.client_ca_file:
                context.load_verify_locations(self.client_ca_file)
        except (ssl.SSLError, OSError, ValueError) as exc:
            raise ConfigurationError(
                f"DIWANIYA_TLS_CERT_FILE / DIWANIYA_TLS_KEY_FILE / DIWANIYA_TLS_CLIENT_CA_FILE "
                f"are not a usable certificate, key and CA: {exc}") from exc

    def _stamp(self) -> tuple[tuple[int, int, int], ...]:
        out = []
        for path, _ in self._files():
            try:
                st = path.stat()  # follows a mounted Secret's ..data symlink
            except OSError:
                return ()
            out.append((st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(out)

    def credentials(self) -> grpc.ServerCredentials:
        """Credentials that pick up renewed files (cert-manager) on the next handshake.

        grpc asks the fetcher before each new TLS handshake; it answers a new
        configuration only when a file changed, else None (keep the current
        one). Unreadable files keep the current certificate (logged).
        """
        stamp = [self._stamp()]
        initial = self._config()
        self._verify()

        def fetch() -> Any:
            now = self._stamp()
            if not now or now == stamp[0]:
                return None
            try:
                config = self._config()
            except ConfigurationError as exc:
                log.error("keeping the current TLS certificate: %s", exc.message)
                return None
            stamp[0] = now
            log.info("TLS certificate reloaded from %s", self.cert_file)
            return config

        return grpc.dynamic_ssl_server_credentials(
            initial, fetch, require_client_authentication=self.require_client_cert)


@dataclass(frozen=True)
class ServerOptions:
    listen: str = "127.0.0.1:0"
    reflection: bool = False
    tls: ServerTls | None = None
    # GOAWAY after this long so long-lived HTTP/2 connections rebalance over
    # replicas after a scale-out; open streams get the grace. None: never.
    max_connection_age_s: float | None = 300.0
    max_connection_age_grace_s: float = 150.0
    # gRPC cancels a call the loop has not taken after this long (service.settings).
    accept_timeout_s: int = 600
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
    # A plaintext port serving grpc.health.v1 only: the kubelet's gRPC probes
    # speak no TLS, so with TLS on they ask here. None: health on `listen` only.
    health_listen: str | None = None
    # grpc.aio server interceptors, outermost first (service.telemetry: tracing, RPC logs).
    interceptors: Sequence[Any] = ()

    @classmethod
    def from_settings(cls, settings: object, **overrides: Any) -> Self:
        """The settings of the same names; ``overrides`` (e.g. a ``--listen``) win."""
        return replace(cls(**settings_values(cls, settings)), **overrides)


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
        # Read now: a missing or bad file fails construction, not the bind.
        self._credentials = options.tls.credentials() if options.tls else None
        self.health = health.aio.HealthServicer()
        grpc_options = [
            ("grpc.max_receive_message_length", options.max_message_bytes),
            ("grpc.max_send_message_length", options.max_message_bytes),
            ("grpc.max_concurrent_streams", options.max_concurrent_streams),
            ("grpc.keepalive_time_ms", options.keepalive_time_s * 1000),
            ("grpc.keepalive_timeout_ms", options.keepalive_timeout_s * 1000),
            ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
            ("grpc.keepalive_permit_without_calls", 1),
            # Not gRPC's 30 s: on a starved loop calls wait longer than that to be
            # taken, and gRPC would cancel them unseen (CANCELLED, no event, no log).
            ("grpc.server_max_unrequested_time_in_server", options.accept_timeout_s),
        ]
        if options.max_connection_age_s is not None:
            grpc_options += [
                ("grpc.max_connection_age_ms", round(options.max_connection_age_s * 1000)),
                ("grpc.max_connection_age_grace_ms",
                 round(options.max_connection_age_grace_s * 1000)),
            ]
        if options.reuse_port:
            # Explicit, not grpc's platform default: the workers depend on it.
            grpc_options.append(("grpc.so_reuseport", 1))
        quiet_cancelled_writes()  # grpc's ERROR for a write after a cancel (service.closing)
        self._server = grpc.aio.server(
            options=grpc_options, maximum_concurrent_rpcs=options.max_concurrent_streams * 4,
            # Outermost, always: every streaming handler is closed in its own task
            # when its RPC ends, even when grpc drops it mid-write (service.closing).
            interceptors=(ClosingInterceptor(), *options.interceptors),
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
        self._health_server: grpc.aio.Server | None = None
        if options.health_listen:
            reuse = [("grpc.so_reuseport", 1)] if options.reuse_port else []
            self._health_server = grpc.aio.server(options=reuse)
            health_pb2_grpc.add_HealthServicer_to_server(self.health, self._health_server)
        self._watch: asyncio.Task[None] | None = None
        self._was_ready: bool | None = None  # the last readiness check's answer
        self.port = 0
        self.health_port = 0

    async def start(self, *, opening: bool = False) -> int:
        """Bind and serve; returns the port.

        ``opening``: the app is not open yet (service.opening) — readiness starts
        NOT_SERVING without a check, and says nothing until the app has opened
        (a start-up's wait is logged once, by service.opening, not per check).
        """
        if self._credentials is None:
            self.port = self._server.add_insecure_port(self._options.listen)
        else:
            self.port = self._server.add_secure_port(self._options.listen, self._credentials)
        if self.port == 0:
            raise OSError(f"cannot listen on {self._options.listen}")
        # The accept loops' tasks, and so every RPC task they create, start in the
        # front lane of a FrontLaneLoop (service.priority); each RPC settles
        # after its first response (a probe's is its answer: under load a
        # liveness probe is never behind turns). Reset at once: only they inherit it.
        token = priority.front()
        try:
            if self._health_server is not None and self._options.health_listen:
                self.health_port = self._health_server.add_insecure_port(
                    self._options.health_listen)
                if self.health_port == 0:
                    raise OSError(f"cannot listen on {self._options.health_listen} (health)")
                await self._health_server.start()
            await self._server.start()
        finally:
            priority.FIRST_RESPONSE.reset(token)
        await self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        if opening:
            self._was_ready = False
            await self._set_ready(health_pb2.HealthCheckResponse.NOT_SERVING)
        else:
            await self.check_ready()
        self._watch = asyncio.create_task(self._watch_readiness())
        return self.port

    async def _set_ready(self, status: int) -> None:
        """Readiness: the service name, which load balancers and readiness probes ask.

        Liveness (service ``""``, what Kubernetes' gRPC liveness probe asks) is
        set SERVING at start and never follows the database: a database outage
        must take replicas out of rotation, not restart every one of them.
        """
        await self.health.set(SERVICE_NAME, status)

    async def check_ready(self) -> None:
        """Ask the database now and set readiness (also every ``readiness_interval_s``)."""
        try:
            await asyncio.wait_for(self._ready(), timeout=5)
            status = health_pb2.HealthCheckResponse.SERVING
        except Exception as exc:
            # Once per change, not every interval: an outage (or a start-up that
            # waits for its database, service.opening) is one line, not one a probe.
            if self._was_ready is not False:
                log.warning("not ready: %s", exc)
            status = health_pb2.HealthCheckResponse.NOT_SERVING
        else:
            if self._was_ready is False:
                log.info("ready: the database answers")
        self._was_ready = status == health_pb2.HealthCheckResponse.SERVING
        if not self._draining.is_set():
            await self._set_ready(status)

    async def _watch_readiness(self) -> None:
        while True:
            await asyncio.sleep(self._options.readiness_interval_s)
            await self.check_ready()

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
        if self._health_server is not None:
            await self._health_server.stop(0)

    async def stop(self) -> None:
        """Stop at once, without a drain: a start-up that failed after the bind."""
        if self._watch:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        self._draining.set()
        await self._server.stop(0)
        if self._health_server is not None:
            await self._health_server.stop(0)

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

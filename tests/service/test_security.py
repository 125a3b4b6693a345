"""Secure by default: no open service beyond loopback, hashed reloadable keys, TLS/mTLS,
reflection off, and connections that age out (issue #13, items 1 and 5).

Real servers on 127.0.0.1:0 (and 0.0.0.0:0 for the exposure checks); the
certificates come from a throw-away CA made per test (tests/service/_certs.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from diwaniya.errors import ConfigurationError
from service import DiwaniyaClient, Settings, build_app
from service.auth import ApiKeyAuth, check_exposure, hash_key
from service.client import ClientTls
from tests.service._certs import TestCA
from tests.service._cli import run_cli_in_thread
from tests.service.conftest import collect


@pytest.fixture
def backend() -> str:
    return "sqlite"  # the edge is under test here, not the store

REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DIWANIYA_") and k not in {"DATABASE_URL"}}
    # DIWANIYA_METRICS_LISTEN is set again after the filter: the default 9464
    # would collide with the servers of concurrent tests (xdist workers).
    env.update({"DIWANIYA_DATA_DIR": str(tmp_path / "data"), "DIWANIYA_LOG_LEVEL": "WARNING",
                "DIWANIYA_METRICS_LISTEN": "127.0.0.1:0", "PYTHONPATH": str(REPO)}, **extra)
    return env


# ------------------------------------------------------------ exposure
def test_refuses_to_listen_open_beyond_loopback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "service", "serve", "--listen", "0.0.0.0:0", "--workers", "1"],
        env=_env(tmp_path), cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "DIWANIYA_API_KEYS_FILE" in lines[0] and "DIWANIYA_ALLOW_ANONYMOUS=true" in lines[0]
    assert not (tmp_path / "data").exists()  # refused before anything was opened


def test_serves_open_beyond_loopback_only_when_allowed(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--listen", "0.0.0.0:0", "--workers", "1"],
        env=_env(tmp_path, DIWANIYA_ALLOW_ANONYMOUS="true"), cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("diwaniya listening on 0.0.0.0:"), (line, proc.stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
    assert code == 0


def test_exposure_rules() -> None:
    open_auth = ApiKeyAuth({})
    check_exposure("127.0.0.1:50051", open_auth, allow_anonymous=False)  # loopback: fine
    check_exposure("[::1]:50051", open_auth, allow_anonymous=False)
    check_exposure("0.0.0.0:50051", open_auth, allow_anonymous=True)
    check_exposure("0.0.0.0:50051", ApiKeyAuth({hash_key("k"): "t"}), allow_anonymous=False)
    for listen in ("0.0.0.0:50051", "[::]:50051", "10.0.0.7:50051", "diwaniya.svc:50051"):
        with pytest.raises(ConfigurationError, match="DIWANIYA_ALLOW_ANONYMOUS"):
            check_exposure(listen, open_auth, allow_anonymous=False)


async def test_keys_allow_a_non_loopback_listener(settings_for) -> None:
    settings = settings_for(api_keys={hash_key("k-shop"): "shop"}, listen="0.0.0.0:0")
    app = await build_app(settings)
    try:
        server = app.server()
        port = await server.start()
        async with DiwaniyaClient(f"127.0.0.1:{port}", api_key="k-shop") as client:
            events = await collect(client.send("السلام عليكم", user_id="sec-u1"))
        assert events[-1].HasField("turn_completed")
        await server.drain(0, delay=0)
    finally:
        await app.close()


# --------------------------------------------------------------- keys
def _write_atomically(path: Path, keys: dict[str, str]) -> None:
    """As the kubelet updates a mounted Secret: a new file swapped in."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(keys), encoding="utf-8")
    os.replace(tmp, path)


async def _code(call: object) -> str:
    try:
        await collect(call)
    except grpc.aio.AioRpcError as err:
        return err.code().name
    return "OK"


async def test_keys_file_reloads_without_restart(run_service, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    keys_file = tmp_path / "api-keys.json"
    _write_atomically(keys_file, {hash_key("old-key"): "shop"})
    async with run_service(api_keys_file=keys_file, api_keys_reload_s=0) as svc:
        def client(key: str) -> DiwaniyaClient:
            return DiwaniyaClient(svc.target, api_key=key)

        async with client("old-key") as old, client("new-key") as new:
            assert await _code(old.send("هلا", user_id="sec-r1")) == "OK"
            assert await _code(new.send("هلا", user_id="sec-r1")) == "UNAUTHENTICATED"

            _write_atomically(keys_file, {hash_key("new-key"): "shop"})
            assert await _code(old.send("هلا", user_id="sec-r1")) == "UNAUTHENTICATED"
            assert await _code(new.send("هلا", user_id="sec-r1")) == "OK"

            # A broken edit keeps the keys in force: it never opens the service.
            keys_file.write_text("{not json", encoding="utf-8")
            with caplog.at_level(logging.ERROR, logger="diwaniya.auth"):
                assert await _code(new.send("هلا", user_id="sec-r1")) == "OK"
            assert "keeping the previous 1 API key(s)" in caplog.text
            assert await _code(old.send("هلا", user_id="sec-r1")) == "UNAUTHENTICATED"


def test_keys_are_kept_hashed_and_plain_keys_warned(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="diwaniya.auth"):
        auth = ApiKeyAuth({"plain-key": "a", hash_key("hashed-key"): "b"})
    assert "1 API key(s) in plain text" in caplog.text
    assert auth.tenant([("authorization", "Bearer plain-key")]) == "a"
    assert auth.tenant([("authorization", "Bearer hashed-key")]) == "b"
    # Nothing in the object is the key itself.
    assert "plain-key" not in repr(vars(auth)) and "hashed-key" not in repr(vars(auth))
    assert hash_key("plain-key") == "sha256:" + hashlib.sha256(b"plain-key").hexdigest()
    with pytest.raises(ConfigurationError, match="64 hex digits"):
        ApiKeyAuth({"sha256:abc": "t"})


async def test_the_benches_serve_with_a_hashed_key(caplog: pytest.LogCaptureFixture,
                                                   tmp_path: Path) -> None:
    """bench/_support_sets.served keys the bench tenant as "sha256:<hex>": none of the
    plain-text warning above (once per set, 15 a run), and the client's key still works."""
    from bench._support_sets import TENANT, served, turn

    with caplog.at_level(logging.WARNING, logger="diwaniya.auth"):
        async with served(tmp_path) as (app, client):
            reply = await turn(client, "السلام عليكم", user="sec-bench")
            # The key named the bench tenant: the thread is that tenant's.
            assert reply.reply and reply.thread_id
            assert await app.persistence.threads.get(TENANT, reply.thread_id) is not None
    assert "plain text" not in caplog.text


# ---------------------------------------------------------------- TLS
async def test_tls_with_a_test_ca(run_service, tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    srv = ca.server()
    async with run_service(tls_cert_file=srv.cert, tls_key_file=srv.key) as svc:
        async with DiwaniyaClient(svc.target, tls=ClientTls(ca_file=ca.cert)) as client:
            assert await client.health() == "SERVING"
            events = await collect(client.send("السلام عليكم", user_id="sec-t1"))
            assert events[-1].HasField("turn_completed")
        # Plaintext to a TLS port, and TLS trusting another CA, never reach an RPC.
        (tmp_path / "other").mkdir()
        other = TestCA(tmp_path / "other", "other CA")
        for tls in (None, ClientTls(ca_file=other.cert)):
            async with DiwaniyaClient(svc.target, tls=tls, timeout_s=10) as client:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await client.get_thread("t", user_id="sec-t1")
                assert err.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_mtls_rejects_a_client_without_a_certificate(run_service, tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    srv, cli = ca.server(), ca.client()
    (tmp_path / "rogue").mkdir()
    rogue = TestCA(tmp_path / "rogue", "rogue CA").client("rogue")
    async with run_service(tls_cert_file=srv.cert, tls_key_file=srv.key,
                           tls_client_ca_file=ca.cert, tls_require_client_cert=True) as svc:
        with_cert = ClientTls(ca_file=ca.cert, cert_file=cli.cert, key_file=cli.key)
        async with DiwaniyaClient(svc.target, tls=with_cert) as client:
            events = await collect(client.send("هلا والله", user_id="sec-m1"))
            assert events[-1].HasField("turn_completed")
        for tls in (ClientTls(ca_file=ca.cert),
                    ClientTls(ca_file=ca.cert, cert_file=rogue.cert, key_file=rogue.key)):
            async with DiwaniyaClient(svc.target, tls=tls, timeout_s=10) as client:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await client.get_thread("t", user_id="sec-m1")
                assert err.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_cli_thread_command_speaks_mtls(run_service, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # main() in-process, as the console script calls it (python -m service chat
    # in a fresh interpreter: tests/client/test_chat_cli.py).
    ca = TestCA(tmp_path)
    srv, cli = ca.server(), ca.client()
    async with run_service(tls_cert_file=srv.cert, tls_key_file=srv.key,
                           tls_client_ca_file=ca.cert, tls_require_client_cert=True) as svc:
        base = ["chat", "--once", "السلام عليكم", "--json", "--user", "sec-cli",
                "--target", svc.target]

        async def run(*flags: str) -> tuple[int, str]:
            done = await run_cli_in_thread(monkeypatch, capsys, _env(tmp_path), *base, *flags)
            return done.returncode, done.stdout + done.stderr

        code, out = await run("--tls-ca", str(ca.cert), "--tls-cert", str(cli.cert),
                              "--tls-key", str(cli.key))
        assert code == 0, out
        assert '"turn_completed"' in out
        code, out = await run("--tls-ca", str(ca.cert))  # no client certificate
        assert code != 0 and "UNAVAILABLE" in out


async def test_cli_kb_command_speaks_mtls(run_service, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    ca = TestCA(tmp_path)
    srv, cli = ca.server(), ca.client()
    async with run_service(tls_cert_file=srv.cert, tls_key_file=srv.key,
                           tls_client_ca_file=ca.cert, tls_require_client_cert=True) as svc:
        base = ["kb", "list", "--target", svc.target]

        async def run(*flags: str) -> tuple[int, str]:
            done = await run_cli_in_thread(monkeypatch, capsys, _env(tmp_path), *base, *flags)
            return done.returncode, done.stdout + done.stderr

        code, out = await run("--tls-ca", str(ca.cert), "--tls-cert", str(cli.cert),
                              "--tls-key", str(cli.key))
        assert code == 0, out  # an empty knowledge base lists nothing, over mTLS
        code, out = await run()  # plaintext to a TLS port
        assert code == 2 and "UNAVAILABLE" in out


async def test_probes_get_plaintext_health_beside_a_tls_port(run_service,
                                                              tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    srv = ca.server()
    async with run_service(tls_cert_file=srv.cert, tls_key_file=srv.key,
                           health_listen="127.0.0.1:0") as svc:
        async with DiwaniyaClient(f"127.0.0.1:{svc.server.health_port}") as probe:
            assert await probe.health() == "SERVING"
            assert await probe.health("diwaniya.v1.Conversations") == "SERVING"
            # Only health is there: the conversations need the TLS port.
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await probe.get_thread("t", user_id="sec-h1")
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_a_renewed_certificate_is_served_without_restart(run_service,
                                                                tmp_path: Path) -> None:
    old_ca = TestCA(tmp_path, "old CA")
    served = old_ca.server("served")  # the paths the server reads, as a mounted Secret
    async with run_service(tls_cert_file=served.cert, tls_key_file=served.key) as svc:
        async with DiwaniyaClient(svc.target, tls=ClientTls(ca_file=old_ca.cert)) as client:
            assert await client.health() == "SERVING"
        (tmp_path / "new").mkdir()
        new_ca = TestCA(tmp_path / "new", "new CA")
        renewed = new_ca.server("renewed")
        for src, dst in ((renewed.key, served.key), (renewed.cert, served.cert)):
            os.replace(src, dst)
        async with DiwaniyaClient(svc.target, tls=ClientTls(ca_file=new_ca.cert)) as client:
            assert await client.health() == "SERVING"
        async with DiwaniyaClient(svc.target, tls=ClientTls(ca_file=old_ca.cert),
                                  timeout_s=10) as client:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.get_thread("t", user_id="sec-rot")
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def test_tls_settings_are_checked_together(tmp_path: Path) -> None:
    from service.server import ServerTls

    with pytest.raises(ConfigurationError, match="both DIWANIYA_TLS_CERT_FILE"):
        ServerTls.from_settings(Path("c.pem"), None, None, False)
    with pytest.raises(ConfigurationError, match="DIWANIYA_TLS_CLIENT_CA_FILE"):
        ServerTls.from_settings(Path("c.pem"), Path("k.pem"), None, True)
    with pytest.raises(ConfigurationError, match="cannot be read"):
        ServerTls.from_settings(Path("/nonexistent/c.pem"), Path("k.pem"), None,
                                False).credentials()  # type: ignore[union-attr]
    ca = TestCA(tmp_path)
    one, other = ca.server("one"), ca.server("other")
    with pytest.raises(ConfigurationError, match="not a usable certificate"):
        ServerTls(one.cert, other.key).credentials()  # a key that is not the cert's


# ------------------------------------------------ reflection, conn age
async def test_reflection_is_off_by_default(run_service) -> None:
    assert Settings().reflection is False
    async with run_service() as svc:
        async with grpc.aio.insecure_channel(svc.target) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)

            async def ask() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
                yield reflection_pb2.ServerReflectionRequest(list_services="")

            with pytest.raises(grpc.aio.AioRpcError) as err:
                async for _ in stub.ServerReflectionInfo(ask()):
                    pass
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_connections_age_out_so_clients_rebalance(run_service) -> None:
    async with run_service(max_connection_age_s=1.0, max_connection_age_grace_s=1.0) as svc:
        async with grpc.aio.insecure_channel(svc.target) as channel:
            from grpc_health.v1 import health_pb2, health_pb2_grpc

            stub = health_pb2_grpc.HealthStub(channel)
            await stub.Check(health_pb2.HealthCheckRequest())
            assert channel.get_state() == grpc.ChannelConnectivity.READY
            # The server's GOAWAY moves the channel off READY (it reconnects on
            # the next call, possibly to another replica).
            await asyncio.wait_for(
                channel.wait_for_state_change(grpc.ChannelConnectivity.READY), 60)
            assert channel.get_state() != grpc.ChannelConnectivity.READY
            reply = await stub.Check(health_pb2.HealthCheckRequest())
            assert reply.status == health_pb2.HealthCheckResponse.SERVING

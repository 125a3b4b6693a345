"""Start-up failures: one clear line on stderr, exit status 2, nothing left running.

Each settings error runs the CLI's own ``main`` in this process with the
same environment (the check is in ``main``, before anything is opened; a
subprocess each cost about a CPU-second, issue #12); the real entry point in a
subprocess still shows a failure inside ``build_app``, a port in use and the
unknown-variable warning. A ``build_app`` failure is also shown in-process,
where the threads it opened must all be gone afterwards.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from diwaniya.errors import ConfigurationError
from service import Settings, build_app
from service.cli import main
from service.settings import env_names, unknown_variables
from tests.conftest import ADMIN_DSN


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DIWANIYA_") and k != "DATABASE_URL"}
    # DIWANIYA_METRICS_LISTEN is set again after the filter: the default 9464
    # would collide with the servers of concurrent tests (xdist workers).
    env.update({"DIWANIYA_DATA_DIR": str(tmp_path / "data"), "DIWANIYA_LISTEN": "127.0.0.1:0",
                "DIWANIYA_METRICS_LISTEN": "127.0.0.1:0", "DIWANIYA_WORKERS": "1", **extra})
    return env


def _run(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "service", *args], capture_output=True,
                          text=True, env=_env(tmp_path, **extra), timeout=120,
                          cwd=Path(__file__).resolve().parents[2])


def _run_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              capsys: pytest.CaptureFixture[str], *args: str,
              **extra: str) -> subprocess.CompletedProcess[str]:
    """``main(args)`` in this process with ``_env``'s environment, as a CompletedProcess.

    In a thread with a deadline: a settings error that stopped being caught
    would start a server and never return, so that fails instead of hanging.
    An exception escaping ``main`` fails the test as a traceback would.
    """
    env = _env(tmp_path, **extra)
    with monkeypatch.context() as m:
        for name in set(os.environ) - set(env):
            m.delenv(name)
        for name, value in env.items():
            m.setenv(name, value)
        capsys.readouterr()  # drop anything printed before
        with ThreadPoolExecutor(1) as pool:
            code = pool.submit(main, list(args)).result(timeout=120)
        out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["diwaniya", *args], code, out, err)


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("diwaniya: ")
    return lines[0]


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("DIWANIYA_API_KEYS", "notjson", "DIWANIYA_API_KEYS: not valid JSON"),
    ("DIWANIYA_TENANTS", "{not json", "DIWANIYA_TENANTS: not valid JSON"),
    ("DIWANIYA_POOL_MIN_SIZE", "31", "DIWANIYA_POOL_MIN_SIZE (31) is larger than "
                                     "DIWANIYA_PG_MAX_CONNECTIONS (30)"),
    ("DIWANIYA_MODEL_TIMEOUT_S", "-1", "DIWANIYA_MODEL_TIMEOUT_S: Input should be greater"),
    ("DIWANIYA_MODEL_TEMPERATURE", "9", "DIWANIYA_MODEL_TEMPERATURE: Input should be less"),
    ("DIWANIYA_DEFAULT_TIMEZONE", "Mars/Olympus", "'Mars/Olympus' is not an IANA time zone"),
    ("DATABASE_URL", "mysql://app:pw@db/app", "the scheme 'mysql' is not supported"),
    ("DIWANIYA_MODEL_BASE_URL", "ftp://models", "DIWANIYA_MODEL_BASE_URL: String should match"),
    ("DIWANIYA_LOG_LEVEL", "LOUD", "DIWANIYA_LOG_LEVEL: Input should be 'DEBUG'"),
    ("DIWANIYA_PG_POOL_MAX", "many", "DIWANIYA_PG_POOL_MAX: Input should be a valid integer"),
    ("DIWANIYA_LISTEN", "50051", "DIWANIYA_LISTEN: listen must look like HOST:PORT"),
    ("DIWANIYA_TOOLS_FILE", "/nonexistent/tools.json",
     "DIWANIYA_TOOLS_FILE: cannot read the tools file '/nonexistent/tools.json'"),
    ("DIWANIYA_TENANTS", '{"acme": {"persona_nam": "x"}}',
     "DIWANIYA_TENANTS (acme.persona_nam): Extra inputs are not permitted"),
    ("DIWANIYA_SETTINGS_FILE", "/nonexistent/diwaniya.env",
     "DIWANIYA_SETTINGS_FILE: '/nonexistent/diwaniya.env' is not a file"),
])
def test_every_settings_error_is_one_line_and_status_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    variable: str, value: str, expected: str
) -> None:
    line = _one_line(_run_here(tmp_path, monkeypatch, capsys, "serve", **{variable: value}))
    assert expected in line
    assert "pw@" not in line  # a database password is never echoed


def test_several_bad_values_are_named_on_the_same_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line(_run_here(tmp_path, monkeypatch, capsys, "migrate",
                               DIWANIYA_MODEL_TIMEOUT_S="0", DIWANIYA_LOG_LEVEL="chatty"))
    assert "DIWANIYA_MODEL_TIMEOUT_S" in line and "DIWANIYA_LOG_LEVEL" in line


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_bad_tools_file_stops_build_app_with_one_line(tmp_path: Path, workers: str) -> None:
    """Past the settings check (valid JSON), the tools are rejected before the port
    is bound and the stores are opened: the process exits with status 2, one line.
    With several workers the supervisor checks them (one line, not one per worker)."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": 1}]), encoding="utf-8")
    line = _one_line(_run(tmp_path, "serve", DIWANIYA_TOOLS_FILE=str(tools),
                          DIWANIYA_WORKERS=workers))
    assert f"cannot load tools from {tools}: tool 1:" in line


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _run(tmp_path, "serve", DIWANIYA_LISTEN=f"127.0.0.1:{port}")
    # grpc core logs its own bind failure line first (its C logger, not ours).
    ours = [line for line in proc.stderr.splitlines() if line.startswith("diwaniya: ")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(ours) == 1 and f"cannot listen on 127.0.0.1:{port}" in ours[0]


def _worker_threads() -> set[threading.Thread]:
    # asyncio_N: the event loop's default executor (asyncio.to_thread), shut down with the loop.
    return {t for t in threading.enumerate()
            if t is not threading.main_thread() and not t.name.startswith("asyncio_")}


async def test_build_app_closes_what_it_opened_when_it_fails(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "lookup"}]), encoding="utf-8")
    before = _worker_threads()
    with pytest.raises(ConfigurationError, match="tool 1: description_ar: Field required") as err:
        await build_app(Settings(data_dir=tmp_path / "data", tools_file=tools))
    # ``err`` keeps build_app's frame (and so anything it failed to close) alive:
    # aiosqlite would otherwise stop a leaked connection's thread when collected.
    left = _worker_threads() - before
    for thread in left:
        thread.join(timeout=10)  # a closed connection's thread ends after its stop marker
    assert [t.name for t in left if t.is_alive()] == []
    assert err.value.message.startswith("cannot load tools from")


async def test_app_close_is_idempotent(tmp_path: Path) -> None:
    app = await build_app(Settings(data_dir=tmp_path / "data"))
    await app.close()
    await app.close()
    assert app.persistence.backend == "sqlite"


def test_unknown_variables_are_reported_with_the_closest_name() -> None:
    environ = {"DIWANIYA_POOL_MAX_SIZ": "4", "DIWANIYA_REFLECTON": "false",
               "DIWANIYA_LISTEN": "127.0.0.1:1", "DIWANIYA_METRICS_LISTEN": "",
               "DIWANIYA_LOG_FORMAT": "json", "DIWANIYA_LOG_MESSAGE_TEXT": "false",
               "DIWANIYA_API_KEY": "k", "DIWANIYA_ACME_HOOK_SECRET": "s",
               "DIWANIYA_XYZZY": "1", "DATABASE_URL": "postgresql://x", "HOME": "/root"}
    settings = Settings(handoff_webhook_secret_env="DIWANIYA_ACME_HOOK_SECRET")
    assert unknown_variables(settings, environ) == [
        "DIWANIYA_POOL_MAX_SIZ is not a setting and is ignored; did you mean "
        "DIWANIYA_POOL_MAX_SIZE?",
        "DIWANIYA_REFLECTON is not a setting and is ignored; did you mean DIWANIYA_REFLECTION?",
        "DIWANIYA_XYZZY is not a setting and is ignored",
    ]
    assert {"DIWANIYA_PG_POOL_MAX", "DIWANIYA_POOL_MAX_SIZE", "DATABASE_URL",
            "DIWANIYA_DATABASE_URL", "DIWANIYA_LOG_LEVEL"} <= env_names()


def test_the_entry_point_warns_about_an_unknown_variable(tmp_path: Path) -> None:
    proc = _run(tmp_path, "migrate", DIWANIYA_DEFAULT_TIMEZONE="Asia/Riyadh",
                DIWANIYA_DEFAULT_TIMEZON="Asia/Kuwait")
    assert proc.returncode == 0, proc.stderr
    # Logs are JSON lines (DIWANIYA_LOG_FORMAT=json by default).
    records = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    warnings = [r["msg"] for r in records if r["level"] == "WARNING"]
    assert len(warnings) == 1
    assert warnings[0].endswith("DIWANIYA_DEFAULT_TIMEZON is not a setting and is ignored; "
                                "did you mean DIWANIYA_DEFAULT_TIMEZONE?")


@pytest.mark.postgres
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_refused_login_is_not_waited_out(tmp_path: Path, workers: str) -> None:
    """A start-up whose database is down waits, live and not ready (tests/chaos/
    test_start_without_db.py); one whose login is refused exits 2 with the reason:
    no amount of waiting fixes a role that does not exist (majlis.pg_probe). With
    several workers the supervisor's probe says so before any worker starts."""
    host = ADMIN_DSN.split("@", 1)[-1].rsplit("/", 1)[0]
    proc = _run(tmp_path, "serve", DATABASE_URL=f"postgresql://diwaniya_no_such_role@{host}/x",
                DIWANIYA_LOG_LEVEL="ERROR", DIWANIYA_WORKERS=workers)
    ours = [line for line in proc.stderr.splitlines() if line.startswith("diwaniya: ")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(ours) == 1 and "refused the login (SQLSTATE 28000" in ours[0], proc.stderr

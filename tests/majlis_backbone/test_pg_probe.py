"""Opening PostgreSQL at start-up: which failures a replica waits out, which exit 2 at once.

majlis.pg_probe.open_failure is the split service.opening acts on: transient
(the database is down, starting up, full, unreachable) → live, not ready,
retry; permanent (the settings are wrong) → ConfigurationError, exit 2.
The probe is also run for real: against a port where nothing listens, and
against the shared PostgreSQL with a role and a database that do not exist
(a refused login changes nothing on the server).
"""

from __future__ import annotations

import socket

import asyncpg
import psycopg
import pytest
from psycopg_pool import PoolTimeout

from diwaniya.errors import ConfigurationError, StoreUnavailable, Unavailable
from majlis.pg_probe import describe, open_failure, probe_postgres
from tests.conftest import ADMIN_DSN, _unavailable


def _caused_by(outer: Exception, cause: BaseException) -> Exception:
    outer.__cause__ = cause
    return outer


TRANSIENT = [
    ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)"),
    ConnectionResetError(104, "Connection reset by peer"),
    TimeoutError(),
    socket.gaierror(-2, "Name or service not known"),  # DNS of a cluster still starting
    asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
    asyncpg.exceptions.TooManyConnectionsError("sorry, too many clients already"),
    asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator command"),
    psycopg.OperationalError("connection failed: Connection refused"),
    PoolTimeout("pool initialization incomplete after 10.0 sec"),
    Unavailable("cannot open PostgreSQL: pool initialization incomplete after 10.0 sec"),
    Unavailable("another replica held the migration lock for 300s"),
]

PERMANENT = [
    (asyncpg.exceptions.InvalidPasswordError("password authentication failed for user app"),
     "SQLSTATE 28P01"),
    (asyncpg.exceptions.InvalidAuthorizationSpecificationError('role "app" does not exist'),
     "SQLSTATE 28000"),
    (asyncpg.exceptions.InvalidCatalogNameError('database "diwaniya" does not exist'),
     "SQLSTATE 3D000"),
    (asyncpg.exceptions.UndefinedObjectError('unrecognized configuration parameter "x"'),
     "SQLSTATE 42704"),
    # The pool's wrapper hides the driver's reason; its cause still carries the SQLSTATE.
    (_caused_by(Unavailable("cannot open PostgreSQL"),
                asyncpg.exceptions.InvalidPasswordError("password authentication failed")),
     "SQLSTATE 28P01"),
    (ValueError("invalid literal for int() with base 10: 'notaport'"), "not a usable"),
    (asyncpg.exceptions.ClientConfigurationError("invalid DSN: scheme is expected to be "
                                                 "either postgresql or postgres"),
     "not a usable"),
    (ConfigurationError("DATABASE_URL reaches PostgreSQL through a pooler in transaction "
                        "mode"), "transaction"),
]


@pytest.mark.parametrize("exc", TRANSIENT, ids=lambda e: type(e).__name__)
def test_an_outage_is_waited_out(exc: BaseException) -> None:
    problem = open_failure(exc, retry_after_s=1.5)
    assert isinstance(problem, StoreUnavailable), problem
    assert problem.retry_after_s == 1.5


@pytest.mark.parametrize(("exc", "said"), PERMANENT, ids=lambda e: type(e).__name__)
def test_wrong_settings_fail_fast(exc: BaseException, said: str) -> None:
    problem = open_failure(exc)
    assert isinstance(problem, ConfigurationError), problem
    assert said in problem.message


def test_a_bug_is_not_taken_for_the_database() -> None:
    assert open_failure(KeyError("channel_values")) is None


def test_describe_never_shows_the_password() -> None:
    assert describe("postgresql+psycopg://app:s3cret@db:6432/diwaniya") == "db:6432/diwaniya"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_probe_of_a_port_where_nothing_listens_is_transient() -> None:
    with pytest.raises(StoreUnavailable, match="cannot reach PostgreSQL"):
        await probe_postgres(f"postgresql://postgres@127.0.0.1:{_free_port()}/postgres",
                             connect_timeout_s=2)


@pytest.mark.postgres
@pytest.mark.parametrize(("path", "user", "sqlstate"), [
    ("postgres", "diwaniya_no_such_role", "28000"),
    ("diwaniya_no_such_database", "postgres", "3D000"),
])
async def test_the_probe_of_a_refused_login_is_permanent(path: str, user: str,
                                                         sqlstate: str) -> None:
    base = ADMIN_DSN.split("://", 1)[1].split("@", 1)[-1].rsplit("/", 1)[0]
    try:
        await probe_postgres(ADMIN_DSN, connect_timeout_s=3)
    except StoreUnavailable as exc:
        _unavailable(f"PostgreSQL is not reachable at {ADMIN_DSN}: {exc.message}")
    with pytest.raises(ConfigurationError, match=f"SQLSTATE {sqlstate}"):
        await probe_postgres(f"postgresql://{user}@{base}/{path}", connect_timeout_s=3)

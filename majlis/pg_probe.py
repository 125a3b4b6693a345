"""Can PostgreSQL be reached now, and if not, will waiting help? (start-up without a database)

A replica that starts while its database is down stays live and retries
(service.opening); one whose settings are wrong exits 2 at once, because no
amount of waiting fixes a refused password. :func:`open_failure` is that
split, :func:`probe_postgres` the cheap check a waiting replica repeats
before it opens its pools again.

The probe speaks asyncpg, not psycopg: libpq reports a refused login only as
the server's message text (localised by the server's ``lc_messages``), while
asyncpg carries the SQLSTATE. The memory store connects with asyncpg too, so
the probe accepts exactly the ``DATABASE_URL`` forms the service needs.

>>> open_failure(ConnectionRefusedError(111, "Connect call failed"))
StoreUnavailable('cannot reach PostgreSQL: [Errno 111] Connect call failed')
>>> type(open_failure(ValueError("invalid literal for int(): 'notaport'"))).__name__
'ConfigurationError'
"""

from __future__ import annotations

import asyncio
import ssl
from urllib.parse import urlsplit

from diwaniya.errors import ConfigurationError, DiwaniyaError, StoreUnavailable, Unavailable
from majlis.store_errors import store_error

# SQLSTATE classes a login can fail with that pass by themselves: a connection
# exception (08), a server short of connections or memory (53: "too many
# clients"), operator intervention (57: "the database system is starting up",
# shutting down, in recovery), a system error on the server (58). Any other
# SQLSTATE at login — 28 (role or password refused, pg_hba.conf), 3D000 (no
# such database), 42704 (an unknown parameter in the URL) — is the settings.
TRANSIENT_SQLSTATE_CLASSES = frozenset({"08", "53", "57", "58"})


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of ``exc`` or of what caused it (asyncpg and psycopg both name it so)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        code = getattr(current, "sqlstate", None)
        if isinstance(code, str) and code:
            return code
        current = current.__cause__ or current.__context__
    return None


def open_failure(exc: BaseException, *, retry_after_s: float = 1.0) -> DiwaniyaError | None:
    """Why opening the database failed: :class:`ConfigurationError` when retrying cannot
    help (exit 2), :class:`StoreUnavailable` when the database may still come up, None
    when ``exc`` is no database failure at all (a bug: let it propagate).

    Permanent: a server SQLSTATE outside :data:`TRANSIENT_SQLSTATE_CLASSES`, a
    URL the driver cannot parse (ValueError, asyncpg's ClientConfigurationError),
    a certificate that does not verify, or a ConfigurationError already (a
    transaction-pooling PgBouncer). Transient: a refused or reset connection, a
    timeout, a host name that does not resolve (DNS in a cluster that is still
    starting), and the outage errors of majlis.store_errors.

    >>> class Refused(Exception):
    ...     sqlstate = "28P01"   # password authentication failed
    >>> open_failure(Refused("password authentication failed")).message[:40]
    'PostgreSQL refused the login (SQLSTATE 2'
    >>> open_failure(type("StartingUp", (Exception,), {"sqlstate": "57P03"})()).reason
    'STORE_UNAVAILABLE'
    """
    if isinstance(exc, ConfigurationError):
        return exc
    code = sqlstate(exc)
    if code is not None and code[:2] not in TRANSIENT_SQLSTATE_CLASSES:
        what = ("refused the login" if code.startswith("28") else
                "has no such database" if code == "3D000" else "refused the connection")
        return ConfigurationError(
            f"PostgreSQL {what} (SQLSTATE {code}: {_short(exc)}); waiting will not fix it: "
            "check DATABASE_URL (user, password, database name, parameters), "
            "PGUSER/PGPASSWORD and pg_hba.conf")
    if code is not None:
        return StoreUnavailable(f"PostgreSQL is not accepting connections yet (SQLSTATE {code}: "
                                f"{_short(exc)})", retry_after_s=retry_after_s)
    if isinstance(exc, ssl.SSLCertVerificationError):
        return ConfigurationError(
            f"PostgreSQL's TLS certificate does not verify ({_short(exc)}): check sslmode and "
            "sslrootcert in DATABASE_URL")
    if isinstance(exc, Unavailable):
        return StoreUnavailable(exc.message, retry_after_s=retry_after_s)
    if isinstance(exc, (OSError, TimeoutError)):
        return StoreUnavailable(f"cannot reach PostgreSQL: {_short(exc)}",
                                retry_after_s=retry_after_s)
    down = store_error(exc, retry_after_s=retry_after_s)
    if isinstance(down, StoreUnavailable):
        return down
    if isinstance(exc, ValueError) or type(exc).__name__ == "ClientConfigurationError":
        return ConfigurationError(f"DATABASE_URL is not a usable PostgreSQL URL: {_short(exc)}")
    if isinstance(exc, DiwaniyaError):
        return exc
    return None


async def probe_postgres(dsn: str, *, connect_timeout_s: float,
                         application_name: str | None = None) -> None:
    """One connection, closed at once; raises :func:`open_failure`'s error when it fails."""
    import asyncpg

    settings = {"application_name": application_name} if application_name else None
    try:
        conn = await asyncpg.connect(_asyncpg_dsn(dsn), timeout=connect_timeout_s,
                                     server_settings=settings)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise (open_failure(exc) or ConfigurationError(
            f"cannot connect to PostgreSQL: {type(exc).__name__}: {_short(exc)}")) from exc
    await conn.close(timeout=connect_timeout_s)


def describe(dsn: str) -> str:
    """Where ``dsn`` points, for a log line — never its password.

    >>> describe("postgresql://app:s3cret@db.internal:6432/diwaniya?sslmode=require")
    'db.internal:6432/diwaniya'
    >>> describe("host=db port=5432")
    'the DATABASE_URL host'
    """
    parts = urlsplit(dsn)
    if not parts.scheme.startswith("postgres"):
        return "the DATABASE_URL host"
    try:
        port = parts.port or 5432
    except ValueError:
        port = 5432
    return f"{parts.hostname or 'localhost'}:{port}{parts.path or '/'}"


def _asyncpg_dsn(url: str) -> str:
    # asyncpg speaks postgresql:// only (memory.factory drops the same suffixes).
    scheme, sep, rest = url.partition("://")
    return scheme.split("+", 1)[0] + sep + rest


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]

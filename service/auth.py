"""API-key authentication: the key names the tenant; keys are kept as SHA-256 hashes.

Callers send ``authorization: Bearer <key>``. Operators configure keys as
``{"sha256:<hex>": "tenant"}`` (``printf %s KEY | sha256sum``); a plain key is
accepted, hashed at load and warned about, so no key is kept in memory or
needed on disk in the clear. The presented key is hashed and compared with
every known hash in constant time (``hmac.compare_digest``, no early exit).

Keys from ``DIWANIYA_API_KEYS_FILE`` (a mounted Kubernetes Secret) are
re-read when the file changes — the kubelet swaps the ``..data`` symlink, so
the inode changes — checked at most every ``reload_s`` on the request path.
A file that turns unreadable or invalid keeps the previous keys (logged):
a bad edit must never open the service.

With no keys and no keys file the service is *open* (every caller is tenant
``default``); :func:`check_exposure` refuses that on a non-loopback address
unless ``DIWANIYA_ALLOW_ANONYMOUS=true``.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from diwaniya.errors import ConfigurationError, Unauthenticated

log = logging.getLogger("diwaniya.auth")

DEFAULT_TENANT = "default"
PREFIX = "sha256:"


def hash_key(key: str) -> str:
    """The stored form of an API key.

    >>> hash_key("k")
    'sha256:8254c329a92850f6d539dd376f4816ee2764517da5e0235514af433164480d7a'
    """
    return PREFIX + hashlib.sha256(key.encode()).hexdigest()


def hashed_keys(keys: Mapping[str, str], *, source: str = "DIWANIYA_API_KEYS") -> dict[bytes, str]:
    """``{"sha256:<hex>" or plain key: tenant}`` → ``{digest: tenant}``; warns of plain keys."""
    out: dict[bytes, str] = {}
    plain = 0
    for key, tenant in keys.items():
        if not isinstance(key, str) or not isinstance(tenant, str) or not key or not tenant:
            raise ConfigurationError(f"{source}: keys and tenants must be non-empty strings")
        if key.startswith(PREFIX):
            hexdigest = key[len(PREFIX):].lower()
            try:
                digest = bytes.fromhex(hexdigest)
            except ValueError:
                digest = b""
            if len(digest) != 32:
                raise ConfigurationError(
                    f"{source}: {key[:15]}… is not 'sha256:' and 64 hex digits")
        else:
            plain += 1
            digest = hashlib.sha256(key.encode()).digest()
        out[digest] = tenant
    if plain:
        log.warning("%s holds %d API key(s) in plain text; store them as "
                    "\"sha256:<hex>\" (printf %%s KEY | sha256sum)", source, plain)
    return out


def load_keys_file(path: Path) -> dict[bytes, str]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"DIWANIYA_API_KEYS_FILE={path} cannot be read: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigurationError(
            f"DIWANIYA_API_KEYS_FILE={path} must hold a JSON object {{\"sha256:<hex>\": tenant}}")
    return hashed_keys(raw, source=f"DIWANIYA_API_KEYS_FILE={path}")


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()  # follows the Secret's ..data symlink
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class ApiKeyAuth:
    """Maps a bearer key to its tenant; ``keys_file`` is watched (see module docstring)."""

    def __init__(self, keys: Mapping[str, str] | None = None, *, keys_file: Path | None = None,
                 reload_s: float = 5.0) -> None:
        self._static = hashed_keys(keys or {})
        self._file = keys_file
        self._reload_s = reload_s
        self._lock = threading.Lock()
        self._from_file: dict[bytes, str] = {}
        self._stamp: tuple[int, int, int] | None = None
        self._checked = 0.0
        if keys_file is not None:
            self._stamp = _stamp(keys_file)
            self._from_file = load_keys_file(keys_file)
            self._checked = time.monotonic()

    @property
    def open(self) -> bool:
        """No key can be presented: every caller is tenant ``default``."""
        return not self._static and self._file is None

    @property
    def key_count(self) -> int:
        return len(self._static) + len(self._from_file)

    def reload_if_changed(self, *, force: bool = False) -> bool:
        """Re-read the keys file when it changed; True when new keys were taken."""
        if self._file is None:
            return False
        now = time.monotonic()
        if not force and now - self._checked < self._reload_s:
            return False
        with self._lock:
            self._checked = now
            stamp = _stamp(self._file)
            if stamp == self._stamp and not force:
                return False
            try:
                keys = load_keys_file(self._file)
            except ConfigurationError as exc:
                log.error("keeping the previous %d API key(s): %s", len(self._from_file),
                          exc.message)
                self._stamp = stamp
                return False
            self._stamp = stamp
            self._from_file = keys
        log.info("API keys reloaded from %s: %d key(s)", self._file, len(keys))
        return True

    def tenant(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
        if self.open:
            return DEFAULT_TENANT
        self.reload_if_changed()
        header = ""
        for key, value in metadata or ():
            if key.lower() == "authorization":
                header = value.decode() if isinstance(value, bytes) else value
                break
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated("send the API key as metadata 'authorization: Bearer <key>'")
        presented = hashlib.sha256(token.strip().encode()).digest()
        found: str | None = None
        # Every entry is compared (no early exit): the time does not depend on
        # which key, if any, matched.
        for known, tenant in (*self._static.items(), *self._from_file.items()):
            if hmac.compare_digest(known, presented):
                found = tenant
        if found is None:
            raise Unauthenticated("the API key is not valid for this service")
        return found


def is_loopback(listen: str) -> bool:
    """Whether ``HOST:PORT`` listens on loopback only.

    >>> [is_loopback(a) for a in ("127.0.0.1:0", "[::1]:50051", "localhost:1", "0.0.0.0:50051")]
    [True, True, True, False]
    """
    host = listen.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name may resolve anywhere: not loopback


def check_exposure(listen: str, auth: ApiKeyAuth, *, allow_anonymous: bool) -> None:
    """Refuse to serve without API keys beyond loopback (exit status 2 at startup)."""
    if auth.open and not allow_anonymous and not is_loopback(listen):
        raise ConfigurationError(
            f"refusing to listen on {listen} without API keys: set DIWANIYA_API_KEYS_FILE "
            "(or DIWANIYA_API_KEYS) to {\"sha256:<hex>\": \"tenant\"}, or "
            "DIWANIYA_ALLOW_ANONYMOUS=true to serve anyone who reaches the port")


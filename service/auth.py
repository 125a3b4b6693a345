"""API-key authentication: the key names the tenant.

Callers send ``authorization: Bearer <key>``. With no keys configured the
service runs open (embedded default) and every caller is tenant ``default``.
Keys are compared in constant time.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping

from diwaniya.errors import Unauthenticated

DEFAULT_TENANT = "default"


class ApiKeyAuth:
    def __init__(self, keys: Mapping[str, str]) -> None:
        self._keys = dict(keys)

    @property
    def open(self) -> bool:
        return not self._keys

    def tenant(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
        if self.open:
            return DEFAULT_TENANT
        header = ""
        for key, value in metadata or ():
            if key.lower() == "authorization":
                header = value.decode() if isinstance(value, bytes) else value
                break
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("send the API key as metadata 'authorization: Bearer <key>'")
        for known, tenant in self._keys.items():
            if hmac.compare_digest(known.encode(), token.strip().encode()):
                return tenant
        raise Unauthenticated("the API key is not valid for this service")

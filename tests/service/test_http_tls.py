"""Every app's HTTP client (models, webhooks) verifies TLS with one shared context."""

from __future__ import annotations

import ssl
from pathlib import Path

from service import Settings, build_app
from service.app import _tls_context


def test_the_shared_context_verifies_certificates_and_host_names() -> None:
    context = _tls_context()
    assert context is _tls_context()  # made once per process
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded


async def test_two_apps_use_it(tmp_path: Path) -> None:
    apps = [await build_app(Settings(data_dir=tmp_path / name)) for name in ("a", "b")]
    try:
        # httpx's transport → httpcore's pool holds the context its connections use.
        used = [app.http._transport._pool._ssl_context for app in apps]  # type: ignore[attr-defined]
        assert used == [_tls_context(), _tls_context()]
    finally:
        for app in apps:
            await app.close()

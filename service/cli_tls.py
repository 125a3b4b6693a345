"""The client-side TLS flags shared by ``diwaniya chat``, ``thread`` and ``kb``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def tls_arguments(p: argparse.ArgumentParser) -> None:
    """TLS to the server: --tls-ca alone (or --tls with the system roots), mTLS with
    --tls-cert and --tls-key as well; PEM file paths (defaults DIWANIYA_CLIENT_TLS_*_FILE)."""
    env = os.environ.get
    p.add_argument("--tls", action="store_true",
                   help="use TLS with the system's CAs (implied by the options below)")
    p.add_argument("--tls-ca", type=Path, default=env("DIWANIYA_CLIENT_TLS_CA_FILE"),
                   help="CA certificate to trust (PEM)")
    p.add_argument("--tls-cert", type=Path, default=env("DIWANIYA_CLIENT_TLS_CERT_FILE"),
                   help="client certificate for mTLS (PEM; with --tls-key)")
    p.add_argument("--tls-key", type=Path, default=env("DIWANIYA_CLIENT_TLS_KEY_FILE"),
                   help="its private key (PEM; with --tls-cert)")
    p.add_argument("--tls-server-name", help="the name to check in the server's certificate")

"""Rendering and strict validation of the kustomize overlays, for tests/test_deploy.py.

``render("prod")`` runs the real ``kubectl kustomize``; ``validate(doc)`` checks a
built-in kind against the pinned ``kubernetes-validate`` schemas and a custom
resource against its published CRD in ``../shared/k8s-crds``, both strictly
(unknown fields fail, as with the API server's strict field validation).
Under CI=true a missing tool or schema fails instead of skipping.
"""

from __future__ import annotations

import base64
import copy
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import jsonschema
import pytest
import yaml

from tests.chaos.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "k8s"
CRDS = ROOT.parent / "shared" / "k8s-crds"
OVERLAYS = ("dev", "prod")
# The Kubernetes version the manifests are validated against (kubernetes-validate
# is pinned exactly in pyproject.toml, so its schemas do not move under us).
K8S_VERSION = "1.37.0"
CI = os.environ.get("CI") == "true"


def missing(what: str) -> None:
    message = f"{what} is missing: run `.venv/bin/pip install -e '.[dev]'`"
    if CI:
        pytest.fail(message)
    pytest.skip(message)


def tool(name: str) -> str:
    # The venv's bin first: `.venv/bin/python -m pytest` need not have it on PATH.
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        missing(f"the `{name}` executable")
    assert found is not None
    return found


@functools.cache
def render(overlay: str) -> tuple[dict[str, Any], ...]:
    result = subprocess.run(
        [tool("kubectl"), "kustomize", str(K8S / "overlays" / overlay)],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"kubectl kustomize {overlay}: {result.stderr}"
    return tuple(d for d in yaml.safe_load_all(result.stdout) if d)


def docs(overlay: str, kind: str) -> list[dict[str, Any]]:
    return [d for d in render(overlay) if d["kind"] == kind]


def one(overlay: str, kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs(overlay, kind) if name in (None, d["metadata"]["name"])]
    assert len(found) == 1, f"{overlay}: expected one {kind} {name or ''}, got {len(found)}"
    return found[0]


def pod_template(doc: dict[str, Any]) -> dict[str, Any]:
    """The pod template of a workload (a CronJob's sits under its jobTemplate)."""
    spec = doc["spec"]["jobTemplate"]["spec"] if doc["kind"] == "CronJob" else doc["spec"]
    return dict(spec["template"])


def pod_specs(overlay: str) -> list[dict[str, Any]]:
    return [pod_template(d)["spec"] for d in render(overlay)
            if d["kind"] in ("Deployment", "Job", "CronJob", "StatefulSet", "DaemonSet")]


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return pod.get("initContainers", []) + pod["containers"]


def server(overlay: str) -> dict[str, Any]:
    return one(overlay, "Deployment", "diwaniya")["spec"]["template"]["spec"]


def config(overlay: str) -> dict[str, str]:
    return one(overlay, "ConfigMap")["data"]


def walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


# --- strict schema validation ----------------------------------------------

def kubernetes_validate() -> Any:
    try:
        import kubernetes_validate
    except ImportError:
        missing("kubernetes-validate")
    return kubernetes_validate


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """An openAPIV3Schema that rejects unknown fields, as the API server's strict
    field validation does: objects with declared properties get
    additionalProperties false, unless marked x-kubernetes-preserve-unknown-fields."""
    schema = copy.deepcopy(schema)
    for node in walk(schema):
        if (node.get("type") == "object" and "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            node["additionalProperties"] = False
    return schema


@functools.cache
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> strict JSON schema, for every served CRD version."""
    if not CRDS.is_dir():
        missing(f"{CRDS} (the shared CRD schemas)")
    schemas = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                schemas[(f"{group}/{version['name']}", kind)] = strict(
                    version["schema"]["openAPIV3Schema"])
    return schemas


def validate(doc: dict[str, Any]) -> None:
    """Raise if ``doc`` is not a valid object of its kind (unknown fields included)."""
    crd = crd_schemas().get((doc["apiVersion"], doc["kind"]))
    if crd is not None:
        jsonschema.Draft7Validator(crd).validate(doc)
    else:
        kubernetes_validate().validate(doc, K8S_VERSION, strict=True)


def pod_env(overlay: str, keys_dir: Path, pg_dsn: str) -> dict[str, str]:
    """The server container's environment as the kubelet would build it, with
    the mounts and the database replaced by local ones (the keys: dev's)."""
    env = dict(config(overlay))
    container = server(overlay)["containers"][0]
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
    (secret,) = docs("dev", "Secret")
    keys_file = keys_dir / PurePosixPath(env["DIWANIYA_API_KEYS_FILE"]).name
    keys_file.write_bytes(base64.b64decode(secret["data"]["api-keys.json"]))
    # No collector here, and no traffic to cluster names from a test machine.
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT")
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none",
               OTEL_LOGS_EXPORTER="none")
    env.update(DIWANIYA_API_KEYS_FILE=str(keys_file), DIWANIYA_DATA_DIR=str(keys_dir),
               DIWANIYA_METRICS_LISTEN=f"127.0.0.1:{free_port()}", DATABASE_URL=pg_dsn)
    if {e["name"] for e in container["env"]} >= {"PGUSER", "PGPASSWORD"}:
        # prod: the URL names only host and database; both drivers must take
        # the user and password from PGUSER/PGPASSWORD (CloudNativePG's Secret).
        url = urlsplit(pg_dsn)
        assert url.username and not url.password
        env["DATABASE_URL"] = urlunsplit(url._replace(netloc=url.netloc.split("@", 1)[1]))
        env.update(PGUSER=url.username, PGPASSWORD="unused-with-trust-auth")
    return env

"""The deployment files agree with the code they deploy."""

from __future__ import annotations

from pathlib import Path

import yaml

from service.server import SERVICE_NAME
from service.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def _docs(name: str) -> list[dict]:
    return list(yaml.safe_load_all((ROOT / "k8s" / name).read_text(encoding="utf-8")))


def test_probes_ask_for_the_real_service() -> None:
    deployment = next(d for d in _docs("deployment.yaml") if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["grpc"]["service"] == SERVICE_NAME
    # Liveness asks the process-only health service "", never the readiness one.
    assert container["livenessProbe"]["grpc"].get("service", "") == ""
    assert container["livenessProbe"]["grpc"]["port"] == container["ports"][0]["containerPort"]
    assert container["ports"][0]["containerPort"] == 50051


def test_configmap_names_only_real_settings_and_grace_outlasts_drain() -> None:
    (config,) = _docs("configmap.yaml")
    fields = {f"DIWANIYA_{name.upper()}" for name in Settings.model_fields}
    unknown = set(config["data"]) - fields
    assert not unknown, f"configmap sets unknown settings: {unknown}"
    deployment = next(d for d in _docs("deployment.yaml") if d["kind"] == "Deployment")
    grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    drain = float(config["data"]["DIWANIYA_DRAIN_GRACE_S"])
    delay = float(config["data"].get("DIWANIYA_DRAIN_DELAY_S", Settings().drain_delay_s))
    assert grace > drain + delay


def test_dockerfile_ships_every_package() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    # client/ is the diwaniya-client distribution (the diwaniya namespace).
    for package in ("client", "service", "majlis", "nlp", "memory"):
        assert f"COPY {package} {package}" in dockerfile
    assert "python -m build --wheel --outdir /wheels client" in dockerfile

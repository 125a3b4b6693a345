"""The ``diwaniya-gc`` CronJob agrees with the code it runs and with the server it
cleans up after (tests/test_deploy.py renders and validates the manifests, and
runs the CronJob's command with its pod env against PostgreSQL after migrate)."""

from __future__ import annotations

import pytest

from service.cli import _parser as _cli_parser
from tests import k8s_manifests as km
from tests.k8s_manifests import OVERLAYS


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_gc_cronjob_runs_a_real_command_with_the_servers_env(overlay: str) -> None:
    """``diwaniya gc`` exists, runs alone, and sees the settings the server sees
    (retention knobs included), with the same database and credentials."""
    cron = km.one(overlay, "CronJob", "diwaniya-gc")
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = km.pod_template(cron)["spec"]
    (container,) = pod["containers"]
    assert container["args"] == ["gc"]
    parsed = _cli_parser().parse_args(container["args"])
    assert parsed.command == "gc" and parsed.dry_run is False
    assert pod["restartPolicy"] in ("OnFailure", "Never")
    assert "ttlSecondsAfterFinished" in cron["spec"]["jobTemplate"]["spec"]
    server = km.server(overlay)["containers"][0]
    assert container["image"] == server["image"]
    assert container["envFrom"] == server["envFrom"]
    shared = {"DATABASE_URL", "PGUSER", "PGPASSWORD"}
    assert ({e["name"]: e for e in container["env"] if e["name"] in shared}
            == {e["name"]: e for e in server.get("env", []) if e["name"] in shared})
    config = km.config(overlay)
    for name in ("DIWANIYA_CHECKPOINTS_KEPT", "DIWANIYA_THREAD_IDLE_TTL_S"):
        assert name in config  # from the ConfigMap both read, never per pod
        assert name not in {e["name"] for c in (container, server) for e in c.get("env", [])}
    # Not a server pod: no Service or PodDisruptionBudget selects it.
    labels = km.pod_template(cron)["metadata"]["labels"]
    for doc in (km.one(overlay, "Service", "diwaniya"), km.one(overlay, "PodDisruptionBudget")):
        selector = doc["spec"]["selector"]
        assert not km.matches(selector.get("matchLabels", selector), labels)

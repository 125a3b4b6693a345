"""The deployment files agree with the code they deploy, and with Kubernetes.

Each overlay is rendered with the real ``kubectl kustomize`` and validated
strictly (unknown fields fail) against the pinned Kubernetes schemas of
``kubernetes-validate``; the custom resources (CloudNativePG ``Cluster`` and
``Pooler``, Prometheus Operator ``ServiceMonitor``) against the published CRD
schemas in ``../shared/k8s-crds`` (tests/k8s_manifests.py). Then the invariants
an operator relies on are asserted on the rendered output, not on the source
files, so a patch in an overlay cannot quietly undo them. Under CI=true a
missing tool fails.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

import grpc
import jsonschema
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from service.server import SERVICE_NAME
from service.settings import Settings
from tests import k8s_manifests as km
from tests.chaos.conftest import ServeProcess
from tests.k8s_manifests import K8S, OVERLAYS, ROOT
from tests.service._cli import run_cli_with_environ

# Settings that other lanes of issue #13 add now (names agreed in advance);
# accepted here so the manifests can already set them.
AGREED_SETTINGS = {
    "DIWANIYA_API_KEYS_FILE", "DIWANIYA_METRICS_LISTEN", "DIWANIYA_PG_MAX_CONNECTIONS",
    "DIWANIYA_MAX_CONNECTION_AGE_S", "DIWANIYA_LOG_FORMAT", "DIWANIYA_LOG_LEVEL",
    "DIWANIYA_ALLOW_ANONYMOUS",
}
# docs/operations.md "Metrics": every series the service exports.
METRICS = (
    "diwaniya_turn_duration_seconds", "diwaniya_turn_first_event_seconds",
    "diwaniya_model_tokens_total", "diwaniya_model_cost_usd_total", "diwaniya_rpc_total",
    "diwaniya_active_streams", "diwaniya_model_failures_total", "diwaniya_db_pool_connections",
    "diwaniya_db_pool_wait_seconds", "diwaniya_turns_by_phase_total",
    "diwaniya_turns_by_dialect_total",
)
# max_connections left for superuser slots, CloudNativePG's own connections,
# and an operator's psql during an incident.
PG_HEADROOM = 20


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_renders_and_validates_strictly(overlay: str) -> None:
    docs = km.render(overlay)
    for doc in docs:
        km.validate(doc)
    kinds = {d["kind"] for d in docs}
    assert {"Namespace", "ServiceAccount", "ConfigMap", "Deployment", "Service",
            "HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy", "Job",
            "CronJob"} <= kinds
    if overlay == "prod":
        assert {"Cluster", "Pooler", "ServiceMonitor"} <= kinds
        # Custom resources are checked by their CRDs, never skipped as unknown.
        assert {(d["apiVersion"], d["kind"]) for d in docs
                if d["kind"] in ("Cluster", "Pooler", "ServiceMonitor")} <= set(km.crd_schemas())


def test_validation_rejects_typos_and_bad_values() -> None:
    # The validators are strict: a misspelled field or a wrong enum fails.
    deployment = copy.deepcopy(km.one("prod", "Deployment"))
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbes"] = {}
    with pytest.raises(jsonschema.ValidationError):
        km.validate(deployment)
    for edit in ({"poolmode": "session"}, {"poolMode": "statement"}):
        pooler = copy.deepcopy(km.one("prod", "Pooler"))
        pooler["spec"]["pgbouncer"].update(edit)
        with pytest.raises(jsonschema.ValidationError):
            km.validate(pooler)
    monitor = copy.deepcopy(km.one("prod", "ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["intervall"] = "30s"
    with pytest.raises(jsonschema.ValidationError):
        km.validate(monitor)


def test_secret_template_is_valid_and_has_every_key_the_pods_read() -> None:
    template = yaml.safe_load((K8S / "base" / "secret.template.yaml").read_text(encoding="utf-8"))
    km.validate(template)
    assert template["metadata"]["name"] == "diwaniya"
    read = set()
    for pod in km.pod_specs("prod"):
        for node in km.walk(pod):
            ref = node.get("secretKeyRef")
            if ref and ref["name"] == "diwaniya":
                read.add(ref["key"])
        for volume in pod.get("volumes", []):
            if volume.get("secret", {}).get("secretName") == "diwaniya":
                read |= {item["key"] for item in volume["secret"]["items"]}
    assert read == {"api-keys.json", "database-url"}
    assert read <= set(template["stringData"])
    # The dev overlay generates the same keys, so both overlays run the same pods.
    (dev_secret,) = km.docs("dev", "Secret")
    assert read <= set(dev_secret["data"])
    # DATABASE_URL in prod names the session pooler, not the database.
    assert f"//{km.one('prod', 'Pooler')['metadata']['name']}:" in template["stringData"][
        "database-url"]


# --- the pods ---------------------------------------------------------------

@pytest.mark.parametrize("overlay", OVERLAYS)
def test_probes_are_distinct_and_ask_for_the_real_services(overlay: str) -> None:
    (container,) = km.server(overlay)["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"grpc": 50051, "metrics": 9464}
    liveness, readiness = container["livenessProbe"], container["readinessProbe"]
    # Readiness follows the database and the drain; liveness is the process only.
    assert readiness["grpc"]["service"] == SERVICE_NAME
    assert liveness["grpc"].get("service", "") == ""
    assert container["startupProbe"]["grpc"].get("service", "") == ""
    assert liveness != readiness
    for probe in (liveness, readiness, container["startupProbe"]):
        assert probe["grpc"]["port"] == ports["grpc"]
    config = km.config(overlay)
    assert config["DIWANIYA_LISTEN"].rpartition(":")[2] == str(ports["grpc"])
    assert config["DIWANIYA_METRICS_LISTEN"].rpartition(":")[2] == str(ports["metrics"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_is_restricted(overlay: str) -> None:
    pods = km.pod_specs(overlay)
    assert len(pods) == 3  # the server, the migration Job and the gc CronJob
    for pod in pods:
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["automountServiceAccountToken"] is False
        assert pod["serviceAccountName"] == "diwaniya"
        assert not any("hostPath" in v for v in pod.get("volumes", []))
        for container in km.containers(pod):
            context = container["securityContext"]
            assert context["runAsNonRoot"] is True
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}
            assert "limits" in container["resources"] and "requests" in container["resources"]
    assert km.one(overlay, "ServiceAccount")["automountServiceAccountToken"] is False
    labels = km.one(overlay, "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_secrets_are_never_optional_and_keys_reload_in_place(overlay: str) -> None:
    for pod in km.pod_specs(overlay):
        for node in km.walk(pod):
            for ref in ("secretKeyRef", "secretRef", "secret"):
                if ref in node:
                    assert node[ref].get("optional") is not True, f"optional {ref}: {node}"
    pod = km.server(overlay)
    keys_file = PurePosixPath(km.config(overlay)["DIWANIYA_API_KEYS_FILE"])
    (volume,) = [v for v in pod["volumes"] if v["name"] == "api-keys"]
    assert volume["secret"]["optional"] is False
    assert [i["path"] for i in volume["secret"]["items"]] == [keys_file.name]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "api-keys"]
    # A subPath mount never sees a rotated Secret: the directory is mounted.
    assert mount["mountPath"] == str(keys_file.parent) and "subPath" not in mount
    assert mount["readOnly"] is True


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_images_are_real_references_never_latest(overlay: str) -> None:
    images = {c["image"] for pod in km.pod_specs(overlay) for c in km.containers(pod)}
    assert len(images) == 1  # the Job migrates with the release it precedes
    for image in images:
        name, _, tag = image.partition("@")[0].rpartition(":")
        assert "/" in name and "." in name.split("/")[0], f"{image}: not a registry path"
        assert "@sha256:" in image or (tag and tag != "latest"), f"{image}: no tag or digest"
    if overlay == "prod":
        cluster = km.one("prod", "Cluster")["spec"]["imageName"]
        assert not cluster.endswith(":latest") and ":" in cluster


def _setting_names() -> set[str]:
    names = set()
    for name, field in Settings.model_fields.items():
        names.add(f"DIWANIYA_{name.upper()}")
        alias = field.validation_alias
        names |= {str(choice) for choice in getattr(alias, "choices", [])}
    return names


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_config_names_only_real_settings(overlay: str) -> None:
    known = _setting_names() | AGREED_SETTINGS
    env = set(km.config(overlay))
    for pod in km.pod_specs(overlay):
        env |= {e["name"] for c in km.containers(pod) for e in c.get("env", [])}
    unknown = {n for n in env if n.startswith("DIWANIYA_") and n not in known}
    assert not unknown, f"{overlay} sets unknown settings: {unknown}"
    others = {n for n in env if not n.startswith(("DIWANIYA_", "OTEL_"))}
    assert others <= {"DATABASE_URL", "PGUSER", "PGPASSWORD"}
    config = km.config(overlay)
    assert config["DIWANIYA_MIGRATE_ON_START"] == "false"  # the Job migrates
    assert config["DIWANIYA_REFLECTION"] in ("true", "false")
    assert config["DIWANIYA_LOG_FORMAT"] == "json"
    assert config["OTEL_SERVICE_NAME"] == "diwaniya"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_config_values_pass_the_settings_model(overlay: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # The values, not only the names: a typo'd time zone or a bad HOST:PORT
    # would otherwise surface only when a pod starts. The agreed names of other
    # lanes are left to their own start-up checks.
    for name in [n for n in os.environ if n.startswith("DIWANIYA_")]:
        monkeypatch.delenv(name)
    config = {k: v for k, v in km.config(overlay).items()
              if k.startswith("DIWANIYA_") and k not in AGREED_SETTINGS}
    for name, value in config.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.listen == config["DIWANIYA_LISTEN"]
    assert settings.migrate_on_start is False
    assert settings.workers == 1
    assert settings.drain_grace_s == float(config["DIWANIYA_DRAIN_GRACE_S"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_grace_outlasts_the_drain(overlay: str) -> None:
    config = km.config(overlay)
    grace = km.server(overlay)["terminationGracePeriodSeconds"]
    drain = float(config["DIWANIYA_DRAIN_GRACE_S"])
    delay = float(config.get("DIWANIYA_DRAIN_DELAY_S", Settings().drain_delay_s))
    assert grace > drain + delay


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_migration_job_runs_migrate(overlay: str) -> None:
    job = km.one(overlay, "Job", "diwaniya-migrate")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")
    assert "ttlSecondsAfterFinished" in job["spec"]


# --- traffic, scaling, disruption -------------------------------------------

@pytest.mark.parametrize("overlay", OVERLAYS)
def test_services_balance_onto_the_server_pods(overlay: str) -> None:
    deployment = km.one(overlay, "Deployment", "diwaniya")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert km.matches(deployment["spec"]["selector"]["matchLabels"], labels)
    main, headless = km.one(overlay, "Service", "diwaniya"), km.one(
        overlay, "Service", "diwaniya-headless")
    for service in (main, headless):
        assert km.matches(service["spec"]["selector"], labels)
    assert {p["name"]: p.get("appProtocol") for p in main["spec"]["ports"]} == {
        "grpc": "grpc", "metrics": "http"}
    assert headless["spec"]["clusterIP"] == "None"
    assert [p["name"] for p in headless["spec"]["ports"]] == ["grpc"]
    container_ports = {p["name"] for p in deployment["spec"]["template"]["spec"]["containers"][0][
        "ports"]}
    assert {p["targetPort"] for p in main["spec"]["ports"]} <= container_ports


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_hpa_owns_the_replica_count_and_pdb_lets_one_go(overlay: str) -> None:
    deployment = km.one(overlay, "Deployment", "diwaniya")
    hpa = km.one(overlay, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1", "kind": "Deployment", "name": "diwaniya"}
    # A fixed replica count would reset the HPA's choice on every apply.
    assert "replicas" not in deployment["spec"]
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    pdb = km.one(overlay, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert km.matches(pdb["spec"]["selector"]["matchLabels"],
                    deployment["spec"]["template"]["metadata"]["labels"])
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} == {
        "kubernetes.io/hostname", "topology.kubernetes.io/zone"}


def _ports(rule: dict[str, Any]) -> set[Any]:
    return {p["port"] for p in rule.get("ports", [])}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policy_admits_only_what_the_service_needs(overlay: str) -> None:
    policy = km.one(overlay, "NetworkPolicy")["spec"]
    for pod in (d for d in km.render(overlay) if d["kind"] in ("Deployment", "Job", "CronJob")):
        assert km.matches(policy["podSelector"]["matchLabels"],
                        km.pod_template(pod)["metadata"]["labels"])
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    ingress = {frozenset(_ports(rule)): rule["from"] for rule in policy["ingress"]}
    assert set(ingress) == {frozenset({"grpc"}), frozenset({"metrics"})}
    # Every peer is selected by a label; none is "anyone" ({}).
    for peers in ingress.values():
        for peer in peers:
            selectors = [peer.get("namespaceSelector"), peer.get("podSelector")]
            assert any(s and s.get("matchLabels") for s in selectors), peer
    (monitoring,) = ingress[frozenset({"metrics"})]
    assert monitoring["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"}
    egress = [_ports(rule) for rule in policy["egress"]]
    assert {53} in egress and {5432} in egress and {8000} in egress
    assert all(rule.get("to") for rule in policy["egress"])  # no egress to anywhere
    (database,) = [r for r in policy["egress"] if _ports(r) == {5432}]
    (peer,) = database["to"]
    if overlay == "prod":
        # Only the pooler carries the label: nothing reaches PostgreSQL around it.
        pooler = km.one("prod", "Pooler")["spec"]["template"]["metadata"]["labels"]
        assert km.matches(peer["podSelector"]["matchLabels"], pooler)
        cluster = km.one("prod", "Cluster")["spec"].get("inheritedMetadata", {})
        assert not km.matches(peer["podSelector"]["matchLabels"], cluster.get("labels", {}))


# --- prod: PostgreSQL, the pooler, the connection budget, monitoring --------

def test_prod_pooler_is_session_mode_in_front_of_the_cluster() -> None:
    pooler, cluster = km.one("prod", "Pooler")["spec"], km.one("prod", "Cluster")
    # Session advisory locks and asyncpg's statement cache need session mode.
    assert pooler["pgbouncer"]["poolMode"] == "session"
    assert pooler["cluster"]["name"] == cluster["metadata"]["name"]
    assert pooler["type"] == "rw" and pooler["instances"] >= 2
    assert cluster["spec"]["instances"] >= 3
    assert cluster["spec"]["postgresql"]["synchronous"]["number"] >= 1
    # The app credentials are CloudNativePG's own Secret for this cluster.
    app_secret = f"{cluster['metadata']['name']}-app"
    for pod in km.pod_specs("prod"):
        env = {e["name"]: e for e in pod["containers"][0]["env"]}
        assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == app_secret
        assert env["PGUSER"]["valueFrom"]["secretKeyRef"]["name"] == app_secret


def test_prod_connection_budget_fits_the_pooler_and_the_database() -> None:
    budget = int(km.config("prod")["DIWANIYA_PG_MAX_CONNECTIONS"])
    # A rollout at the HPA's maximum runs maxSurge extra pods (the old ones
    # drain while the new ones serve).
    surge = km.one("prod", "Deployment")["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
    replicas = km.one("prod", "HorizontalPodAutoscaler")["spec"]["maxReplicas"] + surge
    pooler = km.one("prod", "Pooler")["spec"]
    params = {k: int(v) for k, v in pooler["pgbouncer"]["parameters"].items()}
    max_connections = int(
        km.one("prod", "Cluster")["spec"]["postgresql"]["parameters"]["max_connections"])
    clients = replicas * budget
    # Session mode: one server connection per client connection in use.
    assert clients <= pooler["instances"] * params["default_pool_size"]
    # The Service may send every client to one pooler instance.
    assert clients <= params["max_client_conn"]
    server = pooler["instances"] * (params["default_pool_size"] + params["reserve_pool_size"])
    assert server + PG_HEADROOM <= max_connections
    assert km.config("prod")["DIWANIYA_WORKERS"] == "1"  # the budget is per pod


def test_dev_connection_budget_fits_a_default_postgresql() -> None:
    # dev has no pooler: its own PostgreSQL at the default max_connections (100).
    budget = int(km.config("dev")["DIWANIYA_PG_MAX_CONNECTIONS"])
    surge = km.one("dev", "Deployment")["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
    replicas = km.one("dev", "HorizontalPodAutoscaler")["spec"]["maxReplicas"] + surge
    assert replicas * budget + PG_HEADROOM <= 100
    assert km.config("dev")["DIWANIYA_WORKERS"] == "1"


def test_prod_servicemonitor_scrapes_the_metrics_port_once() -> None:
    monitor = km.one("prod", "ServiceMonitor")["spec"]
    (endpoint,) = monitor["endpoints"]
    assert endpoint["path"] == "/metrics"
    scraped = [s for s in km.docs("prod", "Service")
               if km.matches(monitor["selector"]["matchLabels"], s["metadata"]["labels"])]
    assert [s["metadata"]["name"] for s in scraped] == ["diwaniya"]
    assert endpoint["port"] in {p["name"] for p in scraped[0]["spec"]["ports"]}


def test_operations_doc_covers_metrics_probes_and_the_formula() -> None:
    doc = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    missing = [m for m in METRICS if m not in doc]
    assert not missing, f"docs/operations.md does not describe {missing}"
    for phrase in ("DIWANIYA_PG_MAX_CONNECTIONS", "max_connections", SERVICE_NAME,
                   "Citus", "CloudNativePG", "outages.md", "session"):
        assert phrase in doc, phrase


# --- the pod's own configuration, run for real --------------------------------

def _health(channel: grpc.Channel, service: str) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status


def _watch_until(channel: grpc.Channel, service: str, status: int) -> None:
    # Event-driven: the health Watch stream, not a polling sleep.
    stub = health_pb2_grpc.HealthStub(channel)
    for reply in stub.Watch(health_pb2.HealthCheckRequest(service=service), timeout=90):
        if reply.status == status:
            return
    raise AssertionError(f"{service!r} never became {status}")


@pytest.mark.postgres
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pod_config_migrates_then_serves_its_probes(
    overlay: str, pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The Job's command, then the server's, with the overlay's ConfigMap and env:
    migrate exits 0, liveness ("") and readiness (the API) report SERVING, and
    SIGTERM turns readiness NOT_SERVING while liveness holds, then exits 0."""
    env = km.pod_env(overlay, tmp_path, pg_dsn)
    job = km.one(overlay, "Job", "diwaniya-migrate")["spec"]["template"]["spec"]["containers"][0]
    job_env = {**env, **{e["name"]: e["value"] for e in job["env"] if "value" in e}}
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "DIWANIYA_"))}
    # The Job's and the CronJob's commands run the CLI's main in this process with
    # exactly the pod's environment (a fresh interpreter each cost a CPU-second;
    # the entry point itself is the serve process's below).
    migrated = run_cli_with_environ(monkeypatch, capsys, {**inherited, **job_env}, *job["args"])
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    if "PGUSER" in env:
        # The user really comes from PGUSER: a role that does not exist fails.
        role = f"diwaniya_no_such_role_{uuid.uuid4().hex[:8]}"
        try:
            refused = run_cli_with_environ(monkeypatch, capsys,
                                           {**inherited, **job_env, "PGUSER": role}, *job["args"])
            failed, said = refused.returncode != 0, refused.stdout + refused.stderr
        except Exception as exc:  # escaping main: a traceback and exit 1 in the pod
            failed, said = True, str(exc)
        assert failed and role in said
    # The gc CronJob's command runs on what the Job made, with its own pod env.
    cron = km.pod_template(km.one(overlay, "CronJob", "diwaniya-gc"))["spec"]["containers"][0]
    cron_env = {**env, **{e["name"]: e["value"] for e in cron["env"] if "value" in e}}
    collected = run_cli_with_environ(monkeypatch, capsys, {**inherited, **cron_env},
                                     *cron["args"])
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert json.loads(collected.stdout.splitlines()[-1])["dry_run"] is False
    serve = ServeProcess(env, tmp_path / "serve.log")
    target = serve.start()
    # One connection throughout: the next Check right after NOT_SERVING needs
    # no new handshake inside the drain delay.
    channel = grpc.insecure_channel(target)
    try:
        assert _health(channel, "") == health_pb2.HealthCheckResponse.SERVING
        _watch_until(channel, SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        assert serve.proc is not None
        serve.proc.send_signal(signal.SIGTERM)
        _watch_until(channel, SERVICE_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
        # Within DIWANIYA_DRAIN_DELAY_S the process still answers: liveness holds.
        assert _health(channel, "") == health_pb2.HealthCheckResponse.SERVING
        assert serve.proc.wait(timeout=120) == 0
    finally:
        channel.close()
        serve.stop()

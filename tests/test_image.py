"""The image: the Dockerfile lints clean, builds from an allow-listed context, runs as non-root.

No image is built here (no Docker daemon, no base image offline): what would make
``docker build`` fail or ship the wrong thing is checked on the files themselves —
hadolint, every COPY source inside the .dockerignore allow-list (Docker's pattern
rules), a multi-stage build whose user is the pods' runAsUser.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import PurePosixPath

from tests import k8s_manifests as km
from tests.k8s_manifests import OVERLAYS, ROOT


def test_hadolint_is_clean() -> None:
    result = subprocess.run(
        [km.tool("hadolint"), "--no-color", "Dockerfile"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_dockerfile_is_multi_stage_non_root_and_ships_every_package() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    # client/ is the diwaniya-client distribution (the diwaniya namespace).
    for package in ("client", "service", "majlis", "nlp", "memory"):
        assert f"COPY {package} {package}" in dockerfile
    assert "python -m build --wheel --outdir /wheels client" in dockerfile
    assert len(re.findall(r"^FROM ", dockerfile, re.MULTILINE)) >= 2
    (user,) = re.findall(r"^USER (\S+)$", dockerfile, re.MULTILINE)
    uid = int(user.split(":")[0])
    assert uid != 0
    # runAsUser in the pods is the image's user: runAsNonRoot checks a number.
    for overlay in OVERLAYS:
        for pod in km.pod_specs(overlay):
            assert pod["securityContext"]["runAsUser"] == uid
    assert re.search(r"^EXPOSE 50051 9464$", dockerfile, re.MULTILINE)
    # The build context is an allow-list: no ./data, .venv or .git in an image.
    ignore = [line for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
              if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*"
    assert not [line for line in ignore if line.startswith("!") and re.match(
        r"!/?(data|\.venv|\.git|tests|bench)\b", line)]


def _docker_context_keeps(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore's ``patterns`` leave ``path`` in the build context.

    Docker's rules: patterns are cleaned (no leading or trailing "/"), one that
    matches the path or any of its parent folders decides, the last match wins,
    "!" re-includes.
    """
    parts = PurePosixPath(path).parts
    kept = True
    for pattern in patterns:
        negate = pattern.startswith("!")
        cleaned = pattern.removeprefix("!").strip("/")
        if any(fnmatch.fnmatchcase("/".join(parts[:n]), cleaned) for n in range(1, len(parts) + 1)):
            kept = negate
    return kept


def test_every_path_the_dockerfile_copies_is_in_the_build_context() -> None:
    # .dockerignore is an allow-list ("*", then "!path"): a COPY of a path it
    # does not re-include fails the build ("COPY failed: … not found"). client/
    # (the diwaniya-client distribution) was once copied but not allowed.
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text(
        encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]
    sources = [source for args in re.findall(r"^COPY (?!--from)(.+)$", dockerfile, re.MULTILINE)
               for source in args.split()[:-1] if not source.startswith("--")]
    assert "client" in sources and "constraints.txt" in sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert _docker_context_keeps(source, patterns), f".dockerignore leaves out {source}"
    assert not _docker_context_keeps("data/threads.sqlite", patterns)
    assert not _docker_context_keeps("service/__pycache__/server.cpython-311.pyc", patterns)

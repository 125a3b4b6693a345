"""constraints.txt pins what pyproject.toml asks for, at versions that satisfy it.

Every install (the Makefile's, .ci/run's through it, the Dockerfile's) takes
constraints.txt as pip constraints, so CI runs the versions it last tested and
an upstream release cannot change main between two commits. A dependency added
to pyproject.toml without `make lock`, or a pin outside a requirement's range,
would only show on a fresh machine; this catches it at once.
"""

from __future__ import annotations

import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.k8s_manifests import ROOT


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep, f"constraints.txt: {line!r} is not an exact pin (name==version)"
        pins[canonicalize_name(name)] = Version(version)
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = [project["dependencies"], *project.get("optional-dependencies", {}).values()]
    own = canonicalize_name(project["name"])
    return [req for group in groups for req in map(Requirement, group)
            if canonicalize_name(req.name) not in (own, "diwaniya-client")]


def test_every_requirement_is_pinned_within_its_range() -> None:
    pins = _pins()
    requirements = _requirements()
    assert len(requirements) > 10
    unpinned = [str(r) for r in requirements if canonicalize_name(r.name) not in pins]
    assert not unpinned, f"not in constraints.txt (run `make lock`): {unpinned}"
    outside = [f"{r} vs {pins[canonicalize_name(r.name)]}" for r in requirements
               if not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)]
    assert not outside, f"constraints.txt pins outside pyproject.toml's range: {outside}"


def test_a_pin_is_one_line_per_distribution() -> None:
    lines = [line.partition("==")[0] for line in
             (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    names = [canonicalize_name(name) for name in lines]
    assert len(names) == len(set(names))
    assert "diwaniya" not in names and "diwaniya-client" not in names

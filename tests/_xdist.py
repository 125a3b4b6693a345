"""How ``make test`` hands tests to its pytest-xdist workers (``--dist loadgroup``).

xdist's own ``xdist_group`` mark does nothing under pytest 9.2: xdist 3.8 tags
the node id (``item._nodeid``), which pytest no longer reads, so every test was
its own unit and a module-scoped fixture ran once per worker that drew one of
its tests (test_pii_storage's corpus: up to 8 times instead of twice). This
scheduler groups by node id instead — :data:`tests.conftest.XDIST_GROUPS`, a
table the controller can read without collecting — and keeps the workers'
order (slowest first, tests/conftest.py ``SLOW_FIRST``):

- a unit is one group, or one test;
- units go out in collection order (not xdist's "largest group first");
- a worker holds at most one unit beyond the one it runs (the minimum: an xdist
  worker starts a test only once it knows the next), and the unit queued behind
  each worker's first — the 60 s outages among them — is taken from the tail of
  the queue, where the quick tests are, so nothing slow waits a minute behind them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController


class GroupedScheduling(LoadScopeScheduling):
    """LoadScope scheduling whose scopes are :data:`groups` matches, else single tests."""

    def __init__(self, config: pytest.Config, log: Producer | None,
                 groups: Sequence[tuple[str, str]]) -> None:
        super().__init__(config, log)
        # (regex matched at the start of a node id, group name; \1… refer to its groups)
        self._groups = [(re.compile(pattern), name) for pattern, name in groups]
        self._initial = False

    def _split_scope(self, nodeid: str) -> str:
        for pattern, name in self._groups:
            match = pattern.match(nodeid)
            if match:
                return "group:" + match.expand(name)
        return nodeid

    def schedule(self) -> None:
        if self.collection is None:
            # Collection order, not the number of tests per scope.
            self.config.option.loadscopereorder = False
        self._initial = self.collection is None
        try:
            super().schedule()
        finally:
            self._initial = False

    def _assign_work_unit(self, node: WorkerController) -> None:
        # The initial second unit of a worker waits behind its first: a quick one.
        from_tail = self._initial and bool(self.assigned_work.get(node))
        scope, work_unit = self.workqueue.popitem(last=from_tail)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some([collection.index(nodeid)
                                for nodeid, done in work_unit.items() if not done])

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        # One running and one queued, never more: a queued test cannot move to
        # a worker that frees up sooner.
        if self._pending_of(self.assigned_work[node]) > 1:
            return
        self._assign_work_unit(node)

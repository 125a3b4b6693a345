"""Compaction: a long thread's oldest turns fold into a running summary, at a turn boundary.

A thread's checkpoint holds its whole history (``messages``), rewritten with
every turn, so without this a thread costs O(turns²) bytes and every turn reads
and writes more. When the estimated tokens of ``messages`` pass the tenant's
budget (``DIWANIYA_COMPACTION_TOKENS``; 0 = off), the turns before the latest
``DIWANIYA_COMPACTION_KEEP_TURNS`` fold into ``summary`` (a
:class:`~majlis.records.ThreadSummary`) and leave ``messages``:

* by the tenant's model when one is configured (majlis.summaries, one call
  bounded by the turn's deadline); if that call fails the fold is extractive
  instead, and the failure is logged;
* extractively otherwise (offline, deterministic).

Where it runs: the ``compact`` node, after ``remember`` (the last step that
appends the turn's messages), reached only when :meth:`Compaction.route` says
so — with compaction off for a tenant that is one integer compare per turn,
and with it off for every tenant of the process the graph has neither the
route nor the node (:attr:`Compaction.enabled`). It writes
``messages`` with :class:`langgraph.types.Overwrite` (the channel's reducer
appends; an overwrite replaces, the equivalent of ``RemoveMessage`` for our
dict messages) and ``summary`` in the same step, so both land in the turn's
one checkpoint and its fenced commit (majlis.fence): a turn that is aborted,
times out or loses its thread commits nothing and so folds nothing. Replays
read the request table, never ``messages``, so folded turns still replay.

Token estimate: ``len(text) // 3 + 4`` per message — about three characters a
token for Arabic in current BPE vocabularies (fewer for English, so English is
over-counted: it folds a little early), plus the role's framing. Cheap and
deterministic; no tokenizer is loaded.

    >>> estimate_tokens([{"text": "وين طلبي رقم 48213؟"}])
    10
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langgraph.graph import END
from langgraph.types import Overwrite

from diwaniya.errors import DiwaniyaError
from majlis.config import settings_values
from majlis.records import ThreadMessage, ThreadSummary
from majlis.state import ThreadState, summary_of
from majlis.summaries import ModelSummary, extractive_summary, model_summary

if TYPE_CHECKING:  # majlis.tenants holds a CompactionPolicy per tenant
    from majlis.tenants import Tenant, Tenants

__all__ = ["COMPACT", "Compaction", "CompactionPolicy", "estimate_tokens", "split_turns"]

log = logging.getLogger("diwaniya.majlis.compaction")

COMPACT = "compact"
# Time kept back from the turn's deadline for the extractive fallback and the
# commit when the model summary is slow: it is cut this long before the deadline.
RESERVE_S = 1.0
# The summary is capped at this share of the budget (in estimated tokens),
# so that after a fold the history is well under the budget again.
SUMMARY_SHARE = 0.5
CHARS_PER_TOKEN = 3
MESSAGE_TOKENS = 4


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """One tenant's compaction; ``tokens == 0`` is off. ``by_model``: a model is configured."""

    tokens: int = 0
    keep_turns: int = 4
    by_model: bool = False

    @classmethod
    def from_settings(cls, settings: object, *, by_model: bool = False) -> CompactionPolicy:
        """From (tenant-merged) settings: ``compaction_tokens``, ``compaction_keep_turns``."""
        return cls(by_model=by_model, **settings_values(
            cls, settings, {"tokens": "compaction_tokens", "keep_turns": "compaction_keep_turns"},
            skip={"by_model"}))

    @property
    def summary_chars(self) -> int:
        return max(int(self.tokens * SUMMARY_SHARE), 64) * CHARS_PER_TOKEN


def estimate_tokens(messages: Sequence[Mapping[str, Any] | ThreadMessage]) -> int:
    """The estimated tokens of ``messages`` (state dicts or records; see the module doc)."""
    total = 0
    for m in messages:
        text = m.text if isinstance(m, ThreadMessage) else m.get("text", "")
        total += len(text) // CHARS_PER_TOKEN + MESSAGE_TOKENS
    return total


def split_turns(messages: Sequence[Any], keep_turns: int) -> tuple[list[Any], list[Any]]:
    """``messages`` as (the turns to fold, the latest ``keep_turns`` turns), whole turns only.

    A turn is a run of messages with one ``turn_id`` (a message: the user's and
    the reply; an approval: the reply alone).

    >>> msgs = [{"turn_id": t, "text": ""} for t in ("a", "a", "b", "b", "c")]
    >>> [[m["turn_id"] for m in part] for part in split_turns(msgs, 2)]
    [['a', 'a'], ['b', 'b', 'c']]
    """
    seen = 0
    last = None
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        turn = m.turn_id if isinstance(m, ThreadMessage) else m["turn_id"]
        if turn != last:
            seen += 1
            last = turn
            if seen > keep_turns:
                return list(messages[:i + 1]), list(messages[i + 1:])
    return [], list(messages)


class Compaction:
    """The ``compact`` node and the route to it, reading each tenant's
    :attr:`~majlis.tenants.Tenant.compaction` (and its model, to summarise)."""

    def __init__(self, tenants: Tenants) -> None:
        self._tenants = tenants

    @property
    def enabled(self) -> bool:
        """Whether any tenant compacts (without one the graph has no route to ``compact``)."""
        every = (self._tenants.default, *self._tenants.overrides.values())
        return any(t.compaction.tokens for t in every)

    def route(self, state: ThreadState) -> str:
        """After ``remember``: ``compact`` when the history passed the budget, else END."""
        policy = self._tenants(state["input"].tenant).compaction
        if not policy.tokens:  # off: the one compare a turn pays
            return END
        over = estimate_tokens(state.get("messages") or ()) > policy.tokens
        return COMPACT if over else END

    async def __call__(self, state: ThreadState) -> dict[str, Any]:
        inp = state["input"]
        tenant = self._tenants(inp.tenant)
        policy = tenant.compaction
        raw = state.get("messages") or []
        fold, keep = split_turns(raw, policy.keep_turns)
        if not fold:  # the latest turns alone are over the budget: nothing to fold
            return {}
        folded = [ThreadMessage.read(m) for m in fold]
        previous = summary_of(state)
        before = previous.text if previous else ""
        update: dict[str, Any] = {}
        made = (await _by_model(tenant, inp.thread_id, before, folded, inp.deadline)
                if policy.by_model else None)
        if made is not None:
            text, method = made.text, "model"
            update["usage"] = _add_usage(state.get("usage"), made, tenant)
        else:
            text = extractive_summary(before, folded, max_chars=policy.summary_chars)
            method = "extractive"
        turns = len({m.turn_id for m in folded}) + (previous.turns if previous else 0)
        log.info("thread %s: folded %d messages into the summary (%s, %d turns in all)",
                 inp.thread_id, len(fold), method, turns)
        update["summary"] = ThreadSummary(text, turns=turns, through_turn=folded[-1].turn_id,
                                          method=method)
        update["messages"] = Overwrite(keep)
        return update


async def _by_model(tenant: Tenant, thread_id: str, before: str, folded: list[ThreadMessage],
                    deadline: float | None) -> ModelSummary | None:
    """The model's summary, or None after a logged failure (the fold is then extractive)."""
    cut = (deadline if deadline is not None else time.monotonic() + 30.0) - RESERVE_S
    if cut <= time.monotonic():
        log.warning("thread %s: no time left in the turn for a model summary; "
                    "folding extractively", thread_id)
        return None
    try:
        return await model_summary(tenant.model, before, folded, deadline=cut,
                                   max_chars=tenant.compaction.summary_chars)
    except (DiwaniyaError, TimeoutError, ValueError) as exc:
        log.warning("thread %s: the model summary failed (%s: %s); folding extractively",
                    thread_id, type(exc).__name__, exc)
        return None


def _add_usage(current: Mapping[str, float] | None, made: ModelSummary,
               tenant: Tenant) -> dict[str, float]:
    """The thread's usage with the summary call's tokens (and their price) added."""
    usage = dict(current or {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0})
    usage["prompt_tokens"] = usage.get("prompt_tokens", 0) + made.prompt_tokens
    usage["completion_tokens"] = usage.get("completion_tokens", 0) + made.completion_tokens
    if tenant.prices is not None:
        usage["cost_usd"] = usage.get("cost_usd", 0) + tenant.prices.cost_usd(
            made.prompt_tokens, made.completion_tokens)
    return usage

"""Per-tenant turn rate, per-tenant and per-thread token and cost budgets.

Checked before a turn reaches the graph (so before any model call); a turn
over a limit fails ``ResourceExhausted`` naming the limit (``QuotaViolation``)
and when a retry can succeed (``retry_after_s``: the end of the counter's
window). The counters are ``limits`` fixed windows kept in the database
(:mod:`majlis.limit_storage`), so every replica sees the same totals.

Tokens and cost are only known after the model answered: a turn's usage is
added when its ``usage`` event passes, and the check before a turn compares
the counter *so far* with the budget. So a budget can be overshot by at most
one turn's usage per concurrently admitted turn (one, for turns of a thread,
which never run concurrently) — the next turn is then refused.

Rate limits are counted when a turn is admitted; refused turns count too
(fixed windows). A retry that replays a finished ``request_id`` is neither
counted nor refused (majlis.turn_guard looks its record up first): it makes
no model call and adds nothing to the thread.

Example (a tenant allowed 2 turns a minute, third turn within the minute)::

    >>> await budgets.admit("acme", thread_id="")      # doctest: +SKIP
    ResourceExhausted: تم تجاوز حد الطلبات … (turns_per_1_minute: 2; retry in 41s)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from limits import RateLimitItem, RateLimitItemPerSecond, parse_many
from limits.aio.strategies import FixedWindowRateLimiter

from diwaniya.errors import ConfigurationError, QuotaViolation, ResourceExhausted
from majlis.events import Usage
from majlis.limit_storage import DatabaseStorage

log = logging.getLogger("diwaniya.budgets")

MICROS = 1_000_000  # cost counters are integers: micro-USD


def parse_rate(text: str | None) -> tuple[RateLimitItem, ...]:
    """``"2/second;30/minute"`` (the ``limits`` notation) → its items; ``None``/"" → none."""
    if not text:
        return ()
    try:
        return tuple(parse_many(text))
    except ValueError as exc:
        raise ConfigurationError(
            f"rate_limit {text!r} is not in the limits notation, e.g. '2/second;30/minute': "
            f"{exc}") from None


@dataclass(frozen=True, slots=True)
class BudgetPolicy:
    """One tenant's limits; ``None`` means unlimited."""

    rate: tuple[RateLimitItem, ...] = ()
    tenant_tokens: int | None = None
    thread_tokens: int | None = None
    tenant_cost_usd: float | None = None
    thread_cost_usd: float | None = None
    window_s: int = 86400

    @property
    def enabled(self) -> bool:
        return bool(self.rate) or any(v is not None for v in (
            self.tenant_tokens, self.thread_tokens, self.tenant_cost_usd, self.thread_cost_usd))


@dataclass(frozen=True, slots=True)
class _Budget:
    what: str       # "tokens" | "cost"
    scope: str      # "tenant" | "thread"
    limit: int      # tokens, or micro-USD
    item: RateLimitItem


def _window_name(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            return f"{seconds // size}_{unit}"
    return f"{seconds}_second"


def _budgets(policy: BudgetPolicy) -> list[_Budget]:
    out: list[_Budget] = []
    for what, scope, value in (("tokens", "tenant", policy.tenant_tokens),
                               ("tokens", "thread", policy.thread_tokens),
                               ("cost", "tenant", policy.tenant_cost_usd),
                               ("cost", "thread", policy.thread_cost_usd)):
        if value is None:
            continue
        limit = int(value) if what == "tokens" else round(value * MICROS)
        # A budget is a fixed window of `window_s` whose "hits" are tokens (or micro-USD).
        item = RateLimitItemPerSecond(max(limit, 1), policy.window_s, namespace="DIWANIYA")
        out.append(_Budget(what, scope, limit, item))
    return out


@dataclass
class TurnBudgets:
    """The admission check and the usage recorder for turns.

    >>> budgets = TurnBudgets(DatabaseStorage(counters), BudgetPolicy(rate=parse_rate("2/minute")))
    ...                                                                    # doctest: +SKIP
    """

    storage: DatabaseStorage
    default: BudgetPolicy = field(default_factory=BudgetPolicy)
    overrides: Mapping[str, BudgetPolicy] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._limiter = FixedWindowRateLimiter(self.storage)

    def policy(self, tenant: str) -> BudgetPolicy:
        return self.overrides.get(tenant, self.default)

    async def admit(self, tenant: str, thread_id: str) -> None:
        """Count this turn against the tenant's rate and check its budgets; raise if over.

        Raises ResourceExhausted (with ``quota`` and ``retry_after_s``).
        """
        policy = self.policy(tenant)
        for item in policy.rate:
            if not await self._limiter.hit(item, "turns", tenant):
                reset, _ = await self._limiter.get_window_stats(item, "turns", tenant)
                per = _window_name(item.get_expiry())
                self._refuse(
                    QuotaViolation(f"tenant:{tenant}", f"turns_per_{per}", item.amount,
                                   item.amount, f"at most {item.amount} turns per "
                                   f"{per.replace('_', ' ')} for tenant {tenant!r}"),
                    reset, "تم تجاوز الحد المسموح من الطلبات، يرجى المحاولة بعد قليل")
        for budget in _budgets(policy):
            ids = self._ids(budget, tenant, thread_id)
            if ids is None:
                continue
            if not await self._limiter.test(budget.item, *ids):
                used = await self.storage.get(budget.item.key_for(*ids))
                reset = await self.storage.get_expiry(budget.item.key_for(*ids))
                per = _window_name(policy.window_s)
                unit = "tokens" if budget.what == "tokens" else "usd_micros"
                shown = (f"{budget.limit} tokens" if budget.what == "tokens"
                         else f"{budget.limit / MICROS:g} USD")
                self._refuse(
                    QuotaViolation(f"{budget.scope}:{ids[-1]}",
                                   f"{budget.scope}_{unit}_per_{per}", budget.limit, used,
                                   f"{budget.scope} budget of {shown} per "
                                   f"{per.replace('_', ' ')} is used up ({used} {unit} used)"),
                    reset, "تم استهلاك الميزانية المخصصة لهذه المحادثة، يرجى المحاولة لاحقاً")

    async def record(self, tenant: str, thread_id: str, usage: Usage) -> None:
        """Add a finished model call's tokens and cost to every budget it counts against."""
        for budget in _budgets(self.policy(tenant)):
            ids = self._ids(budget, tenant, thread_id)
            if ids is None:
                continue
            amount = (usage.prompt_tokens + usage.completion_tokens if budget.what == "tokens"
                      else round(usage.cost_usd * MICROS))
            if amount > 0:
                await self.storage.incr(budget.item.key_for(*ids), budget.item.get_expiry(),
                                        amount=amount)

    @staticmethod
    def _ids(budget: _Budget, tenant: str, thread_id: str) -> tuple[str, ...] | None:
        if budget.scope == "tenant":
            return (budget.what, tenant)
        # A new conversation has used nothing yet; its thread id is made by the engine.
        return (budget.what, tenant, thread_id) if thread_id else None

    @staticmethod
    def _refuse(quota: QuotaViolation, reset_at: float, arabic: str) -> None:
        retry = max(1.0, reset_at - time.time())
        log.info("turn refused: %s (%s); retry in %.0fs", quota.quota_id, quota.subject, retry)
        raise ResourceExhausted(
            f"{arabic} — {quota.description}; retry in {retry:.0f}s", retry_after_s=retry,
            quota=quota)

"""handoff_to_human on its own: the webhook is told once, and a failure never undoes it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from majlis.events import Handoff
from majlis.tools import ToolContext, ToolOutcome, handoff_tool

CTX = ToolContext(tenant="shop", user_id="u1", thread_id="t1", turn_id="turn-1")


class _Notify:
    def __init__(self, outcome: ToolOutcome) -> None:
        self.outcome = outcome
        self.sent: list[Mapping[str, Any]] = []

    async def __call__(self, payload: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.sent.append(payload)
        return self.outcome


async def test_two_calls_in_a_turn_are_one_handoff_and_one_webhook_call() -> None:
    notify = _Notify(ToolOutcome(ok=True, content={"ticket": "T-7"}))
    tool = handoff_tool(lambda: "الطلب المفتوح: وين طلبي؟", notify)
    first = await tool.run({"reason": "العميل يصرّ"}, CTX)
    second = await tool.run({"reason": "مرة ثانية"}, CTX)
    assert first.ok and first.content == {"handed_off": True, "reason": "العميل يصرّ",
                                          "notified": True}
    assert [type(e) for e in first.events] == [Handoff]
    assert second.ok and second.events == () and second.content["already"]
    assert notify.sent == [{"event": "handoff", "tenant": "shop", "user_id": "u1",
                            "thread_id": "t1", "turn_id": "turn-1", "reason": "العميل يصرّ",
                            "summary_ar": "الطلب المفتوح: وين طلبي؟"}]


async def test_a_failing_webhook_is_reported_and_the_handoff_holds() -> None:
    notify = _Notify(ToolOutcome(ok=False, error="the backend failed (HTTP 503): down"))
    out = await handoff_tool(lambda: "ملخص", notify).run({"reason": "منزعج"}, CTX)
    assert out.ok and out.content["handed_off"] and out.content["notified"] is False
    assert "503" in out.content["notify_error"]
    assert [type(e) for e in out.events] == [Handoff]


async def test_without_a_webhook_nothing_is_posted() -> None:
    out = await handoff_tool(lambda: "ملخص").run({}, CTX)
    assert out.content == {"handed_off": True, "reason": "طلب المستخدم"}

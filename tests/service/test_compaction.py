"""Compaction over gRPC, both stores: a long thread's oldest turns fold into a running summary.

What is checked is what is stored: the thread's latest checkpoint (read from
the database through the service's own saver) no longer holds the folded
turns, and its ``summary`` carries the customer's request and order number
(masked) — and what the model is sent: the summary in the system prompt.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import grpc
import pytest

from majlis.compaction import estimate_tokens
from majlis.records import ThreadSummary
from service import DiwaniyaClient
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect, take_over

# The session's PostgreSQL database is shared: a user of this module's own.
USER = f"compact-{uuid.uuid4().hex[:8]}"

# A support thread; the order number is masked in the summary as memories keep it.
OFFLINE_TURNS = ["السلام عليكم", "وين طلبي رقم 48213؟", "ابي ارجع المنتج", "شكرا",
                 "متى يوصل الطلب؟", "كم سعر التوصيل؟", "عندكم فرع في حولي؟", "الله يعطيك العافية"]
# The model path: (customer, scripted model reply). Turn 3 passes the budget.
MODEL_TURNS = [("السلام عليكم، اسمي أحمد", "هلا أحمد، حياك الله"),
               ("وين طلبي رقم 48213؟", "أبشر، أشيّك عليه الحين"),
               ("ابي ارجع المنتج", "تمام، نرتب لك الإرجاع"),
               ("متى يوصل المندوب؟", "اليوم إن شاء الله")]
MODEL_SUMMARY = "- العميل أحمد يسأل عن طلبه رقم ****13 ويريد إرجاع المنتج."


def _budget_after(turns: int) -> int:
    """A budget the first ``turns`` model turns stay within, and the next one passes."""
    texts = [t for pair in MODEL_TURNS[:turns] for t in pair]
    return estimate_tokens([{"text": t} for t in texts]) + 2


async def _stored(svc: Any, thread_id: str) -> dict[str, Any]:
    """The channel values of the thread's latest checkpoint, as the database holds them."""
    found = await svc.app.persistence.checkpointer.aget_tuple(
        {"configurable": {"thread_id": thread_id}})
    assert found is not None
    return dict(found.checkpoint["channel_values"])


async def _turn(client: DiwaniyaClient, text: str, thread_id: str = "", *,
                request_id: str = "") -> list[Any]:
    return await collect(client.send(text, user_id=USER, thread_id=thread_id,
                                     request_id=request_id or uuid.uuid4().hex))


async def test_long_thread_folds_whole_turns_and_the_summary_keeps_the_request(
    run_service: Any,
) -> None:
    async with run_service(compaction_tokens=200, compaction_keep_turns=2) as svc:
        thread_id = ""
        turn_ids: list[str] = []
        for text in OFFLINE_TURNS:
            events = await _turn(svc.client, text, thread_id)
            thread_id = events[-1].thread_id
            turn_ids.append(events[-1].turn_id)
            view = await svc.client.get_thread(thread_id, user_id=USER)
            # At a turn boundary, never mid-turn: every turn kept has both its messages.
            kept = [m.turn_id for m in view.messages]
            assert all(kept.count(t) == 2 for t in kept)
            assert kept[-2:] == [turn_ids[-1]] * 2
        stored = await _stored(svc, thread_id)
        thread = await svc.client.get_thread(thread_id, user_id=USER)
    summary = ThreadSummary.read(stored["summary"])
    assert summary is not None and summary.method == "extractive"
    stored_turns = [m["turn_id"] for m in stored["messages"]]
    folded = turn_ids[:summary.turns]
    assert summary.turns >= 2 and summary.through_turn == folded[-1]
    # The folded turns left the checkpoint; the latest ones are all there, verbatim.
    assert not set(folded) & set(stored_turns)
    assert stored_turns == [t for t in turn_ids[summary.turns:] for _ in range(2)]
    assert stored["messages"][-2]["text"] == OFFLINE_TURNS[-1]
    # The customer's request as typed, the order number masked (never raw), no greeting.
    assert "ابي ارجع المنتج" in summary.text and "****13" in summary.text
    assert "48213" not in summary.text and "السلام عليكم" not in summary.text
    assert thread.history_summary == summary.text
    assert (thread.folded_turns, thread.history_summary_method) == (summary.turns, "extractive")
    assert len(thread.messages) == len(stored_turns)


async def test_replay_of_an_old_request_id_after_its_turn_was_folded(run_service: Any) -> None:
    async with run_service(compaction_tokens=120, compaction_keep_turns=1) as svc:
        first = await _turn(svc.client, OFFLINE_TURNS[1], request_id="r-first")
        thread_id = first[-1].thread_id
        for text in OFFLINE_TURNS[2:6]:
            await _turn(svc.client, text, thread_id)
        thread = await svc.client.get_thread(thread_id, user_id=USER)
        again = await _turn(svc.client, OFFLINE_TURNS[1], thread_id, request_id="r-first")
        after = await svc.client.get_thread(thread_id, user_id=USER)
    assert thread.folded_turns >= 1
    assert first[-1].turn_id not in {m.turn_id for m in thread.messages}
    assert again[-1].turn_completed.replayed
    assert again[-1].turn_completed.text == first[-1].turn_completed.text
    assert again[-1].turn_id == first[-1].turn_id
    assert [m.turn_id for m in after.messages] == [m.turn_id for m in thread.messages]


async def test_compaction_is_a_per_tenant_setting(run_service: Any) -> None:
    on_key, on_tenant = f"key-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    off_key, off_tenant = f"key-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    async with run_service(api_keys={on_key: on_tenant, off_key: off_tenant},
                           tenants={on_tenant: {"compaction_tokens": 120,
                                                "compaction_keep_turns": 1}}) as svc:
        views = []
        for key in (on_key, off_key):
            async with DiwaniyaClient(svc.target, api_key=key) as client:
                thread_id = ""
                for text in OFFLINE_TURNS:
                    thread_id = (await _turn(client, text, thread_id))[-1].thread_id
                views.append(await client.get_thread(thread_id, user_id=USER))
    on, off = views
    assert on.folded_turns > 0 and on.history_summary
    assert len(on.messages) < 2 * len(OFFLINE_TURNS)
    assert (off.folded_turns, off.history_summary, len(off.messages)) == (
        0, "", 2 * len(OFFLINE_TURNS))


async def test_model_summarises_and_its_summary_reaches_the_next_prompt(
    run_service: Any, openai_server: ScriptedOpenAIServer,
) -> None:
    replies = [ScriptedReply.text(reply) for _, reply in MODEL_TURNS]
    # Turn 3 passes the budget: its reply, then the summary call, then turn 4.
    openai_server.push(*replies[:3], ScriptedReply.text(MODEL_SUMMARY, usage=(40, 12)),
                       replies[3])
    async with run_service(model_base_url=openai_server.base_url,
                           compaction_tokens=_budget_after(2), compaction_keep_turns=1) as svc:
        thread_id = ""
        for text, _ in MODEL_TURNS:
            thread_id = (await _turn(svc.client, text, thread_id))[-1].thread_id
        thread = await svc.client.get_thread(thread_id, user_id=USER)
        stored = await _stored(svc, thread_id)
    bodies = openai_server.bodies
    assert len(bodies) == 5 and openai_server.pending == 0
    summarise = bodies[3]["messages"]
    # The summary call: the instruction, then the folded turns fenced as data.
    assert "تلخّص" in summarise[0]["content"]
    assert "<untrusted-data" in summarise[1]["content"]
    assert MODEL_TURNS[1][0] in summarise[1]["content"]
    assert MODEL_TURNS[2][0] not in summarise[1]["content"]  # the kept turn is not folded
    # Turn 4's prompt: the summary in the system message, the folded turns no longer sent.
    turn4 = bodies[4]["messages"]
    assert MODEL_SUMMARY in turn4[0]["content"]
    sent = [m["content"] for m in turn4[1:]]
    assert MODEL_TURNS[0][0] not in sent and MODEL_TURNS[1][0] not in sent
    assert MODEL_TURNS[2][0] in sent
    assert (thread.history_summary, thread.history_summary_method, thread.folded_turns) == (
        MODEL_SUMMARY, "model", 2)
    assert ThreadSummary.read(stored["summary"]) == ThreadSummary(
        MODEL_SUMMARY, turns=2, through_turn=stored["summary"].through_turn, method="model")
    # The summary call's tokens are the thread's too: 4 turns at 10 + 5, the summary 40 + 12.
    assert (thread.prompt_tokens, thread.completion_tokens) == (4 * 10 + 40, 4 * 5 + 12)


async def test_model_failure_while_summarising_folds_extractively_and_logs(
    run_service: Any, openai_server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="diwaniya.majlis.compaction")
    replies = [ScriptedReply.text(reply) for _, reply in MODEL_TURNS]
    # A 400 is not retried: the summary fails at once, the turn still completes.
    openai_server.push(*replies[:3], ScriptedReply.error(400, "bad request"))
    async with run_service(model_base_url=openai_server.base_url,
                           compaction_tokens=_budget_after(2), compaction_keep_turns=1) as svc:
        thread_id = ""
        completed = []
        for text, _ in MODEL_TURNS[:3]:
            events = await _turn(svc.client, text, thread_id)
            thread_id = events[-1].thread_id
            completed.append(events[-1].HasField("turn_completed"))
        thread = await svc.client.get_thread(thread_id, user_id=USER)
    assert all(completed)
    assert thread.history_summary_method == "extractive" and thread.folded_turns == 2
    assert "وين طلبي رقم ****13؟" in thread.history_summary
    assert "48213" not in thread.history_summary
    assert [m.text for m in thread.messages] == list(MODEL_TURNS[2])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("model summary failed" in w and "folding extractively" in w for w in warnings)


async def test_a_turn_aborted_after_folding_folds_nothing(
    run_service: Any, openai_server: ScriptedOpenAIServer, backend: str,
) -> None:
    replies = [ScriptedReply.text(reply) for _, reply in MODEL_TURNS]
    # The summary streams slowly, so the thread is taken over while this turn folds.
    slow_summary = ScriptedReply.text(MODEL_SUMMARY, event_delay_s=0.25)
    openai_server.push(*replies[:3], slow_summary)
    async with run_service(model_base_url=openai_server.base_url,
                           compaction_tokens=_budget_after(2), compaction_keep_turns=1) as svc:
        thread_id = ""
        for text, _ in MODEL_TURNS[:2]:
            thread_id = (await _turn(svc.client, text, thread_id))[-1].thread_id
        before = await _stored(svc, thread_id)
        taken = False
        with pytest.raises(grpc.aio.AioRpcError) as err:
            async for event in svc.client.send(MODEL_TURNS[2][0], user_id=USER,
                                               thread_id=thread_id, request_id="r-3"):
                if event.HasField("text_delta") and not taken:
                    taken = True
                    await asyncio.to_thread(take_over, svc, backend, thread_id)
        thread = await svc.client.get_thread(thread_id, user_id=USER)
        after = await _stored(svc, thread_id)
    assert err.value.code() == grpc.StatusCode.ABORTED
    assert len(openai_server.requests) == 4  # the aborted turn did summarise
    # …and none of it was committed: the history and the (absent) summary are as before.
    assert after["messages"] == before["messages"] and len(after["messages"]) == 4
    assert after.get("summary") is None
    assert (thread.history_summary, thread.folded_turns, len(thread.messages)) == ("", 0, 4)

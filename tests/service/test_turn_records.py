"""The turn records survive both savers, and threads checkpointed as dicts carry on.

Every checkpoint since majlis.records holds frozen dataclasses; LangGraph's
serde rebuilds them from the database (SQLite and PostgreSQL), with our types
on its allowlist — no "unregistered"/"blocked" type warnings. A thread whose
last checkpoint was written by the dict-shaped code (messages and held calls
as dicts, the ``turn`` scratch dict, the legacy ``completed`` channel) is
read, approved and continued as if nothing changed.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from majlis.culture import Cues
from majlis.persistence import checkpoint_serde
from majlis.persistence_pg import TurnSaver
from majlis.records import (
    Analysis,
    ApprovalInput,
    CompletedTurn,
    HeldCall,
    Recollection,
    Reply,
    Setting,
    ThreadMessage,
    TurnInput,
)
from majlis.state import TURN_RECORDS, held_calls, history
from tests.service.conftest import collect, kinds


def _user() -> str:
    return f"rec-{uuid.uuid4().hex[:10]}"


def _reader(svc: Any) -> Any:
    """The inner saver, reading every channel: the service's PostgreSQL saver leaves
    the turn records out of what it loads (majlis.persistence_pg.TurnSaver)."""
    saver = svc.app.persistence.checkpointer.inner
    if isinstance(saver, TurnSaver):
        return TurnSaver(saver.conn, serde=saver.serde, scratch=())
    return saver


async def _head(svc: Any, thread_id: str, saver: Any = None) -> Any:
    # A fresh read from the database, never the turn's own objects.
    saver = saver or _reader(svc)
    return await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})


async def test_records_round_trip_through_the_saver(run_service, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="langgraph")
    user = _user()
    async with run_service() as svc:
        events = await collect(svc.client.send("هلا والله، وين طلبي؟", user_id=user))
        thread_id = events[-1].thread_id
        head = await _head(svc, thread_id)
    values = head.checkpoint["channel_values"]
    done = values["outcome"]
    assert isinstance(done, CompletedTurn)
    streamed = events[-1].turn_completed
    assert (done.reply, done.phase, done.dialect) == (streamed.text, streamed.phase,
                                                      streamed.dialect)
    assert done.to_event(streamed.checkpoint_id).text == streamed.text
    assert done.events[0]["kind"] == "turn_started"
    assert isinstance(values["input"], TurnInput) and values["input"].text == "هلا والله، وين طلبي؟"
    analysis = values["analysis"]
    assert isinstance(analysis, Analysis) and isinstance(analysis.cues, Cues)
    assert isinstance(analysis.cues.openers, tuple)  # msgpack lists are tuples again
    assert isinstance(values["setting"], Setting) and isinstance(values["setting"].hijri, tuple)
    assert isinstance(values["recollection"], Recollection)
    assert isinstance(values["reply"], Reply) and values["reply"].text == streamed.text
    # The history stays in its plain stored form (see majlis.state), read as records.
    assert [m.role for m in history(values)] == ["user", "assistant"]
    assert all(isinstance(m, ThreadMessage) for m in history(values))
    complaints = [r.getMessage() for r in caplog.records
                  if "unregistered" in r.getMessage() or "Blocked" in r.getMessage()]
    assert complaints == []


@pytest.mark.parametrize("backend", ["postgres"])
async def test_the_postgres_saver_loads_no_turn_records(run_service) -> None:
    """They are written with every checkpoint but never read again (majlis.state):
    the service's saver does not rebuild them; the thread's own fields it does."""
    user = _user()
    async with run_service() as svc:
        events = await collect(svc.client.send("هلا والله، وين طلبي؟", user_id=user))
        thread_id = events[-1].thread_id
        loaded = await _head(svc, thread_id, svc.app.persistence.checkpointer.inner)
        stored = await _head(svc, thread_id)
        later = await collect(svc.client.send("طيب شكرا", user_id=user, thread_id=thread_id))
    values = loaded.checkpoint["channel_values"]
    assert not set(TURN_RECORDS) & set(values)
    assert set(TURN_RECORDS) <= set(stored.checkpoint["channel_values"])
    assert [m.role for m in history(values)] == ["user", "assistant"]
    assert values["dialect_thread"] == stored.checkpoint["channel_values"]["dialect_thread"]
    assert kinds(later)[-1] == "turn_completed"


async def _write_old_checkpoint(svc: Any, thread_id: str) -> None:
    """What the dict-shaped code left in a thread: the shapes this test must keep reading."""
    saver = _reader(svc)
    head = await _head(svc, thread_id, saver)
    checkpoint = dict(head.checkpoint)
    at = "2026-11-01T07:00:00+00:00"
    old: dict[str, Any] = {
        "messages": [
            {"role": "user", "text": "ابي الغي طلبي رقم 4411", "turn_id": "t-old",
             "phase": "transaction", "dialect": "gulf", "at": at},
            {"role": "assistant", "text": "تبي أكمل؟ يحتاج موافقتك", "turn_id": "t-old",
             "phase": "transaction", "dialect": "gulf", "at": at},
        ],
        "phase": "transaction", "dialect": "gulf", "dialect_confidence": 0.9,
        "pending_approvals": {"call-old": {"name": "cancel_order", "turn_id": "t-old",
                                           "arguments_json": '{"order_id": "4411"}'}},
        "turn": {"turn_id": "t-old", "text": "ابي الغي طلبي رقم 4411", "tone": {"register": "gulf"},
                 "cues": {"request": True}, "events": []},
        "completed": {"old-request": {"turn_id": "t-old"}},
        "last_user_at": at,
    }
    versions = dict(checkpoint["channel_versions"])
    new_versions = {}
    for channel in old:
        versions[channel] = new_versions[channel] = saver.get_next_version(
            versions.get(channel), None)
    checkpoint.update(id=str(uuid6()), channel_values={**checkpoint["channel_values"], **old},
                      channel_versions=versions)
    await saver.aput(head.config, checkpoint, {"source": "update", "step": 99, "parents": {}},
                     new_versions)


async def test_a_thread_checkpointed_as_dicts_continues(run_service) -> None:
    user = _user()
    async with run_service() as svc:
        first = await collect(svc.client.send("السلام عليكم", user_id=user))
        thread_id = first[-1].thread_id
        await _write_old_checkpoint(svc, thread_id)
        shown = await svc.client.get_thread(thread_id, user_id=user)
        declined = await collect(svc.client.approve("call-old", thread_id=thread_id,
                                                    user_id=user, approved=False))
        later = await collect(svc.client.send("طيب شكرا", user_id=user, thread_id=thread_id))
        thread = await svc.client.get_thread(thread_id, user_id=user)
        head = await _head(svc, thread_id)
    assert [m.text for m in shown.messages] == ["ابي الغي طلبي رقم 4411",
                                                 "تبي أكمل؟ يحتاج موافقتك"]
    # The dict-shaped held call is found, settled and removed.
    assert kinds(declined)[0] == "turn_started" and kinds(declined)[-1] == "turn_completed"
    assert "tool_result" not in kinds(declined)
    assert kinds(later)[-1] == "turn_completed"
    texts = [m.text for m in thread.messages]
    assert texts[:2] == ["ابي الغي طلبي رقم 4411", "تبي أكمل؟ يحتاج موافقتك"]
    assert texts[2:] == [declined[-1].turn_completed.text, "طيب شكرا",
                         later[-1].turn_completed.text]
    values = head.checkpoint["channel_values"]
    assert held_calls(values) == {}
    assert [m.turn_id for m in history(values)][:2] == ["t-old", "t-old"]


def test_readers_take_the_dict_form() -> None:
    """What a strict serde returns for a refused type, and what old checkpoints hold."""
    held = HeldCall.read({"name": "cancel_order", "arguments_json": "{}", "turn_id": "t"})
    assert held == HeldCall("cancel_order", "{}", "t")
    message = ThreadMessage.read({"role": "user", "text": "هلا", "turn_id": "t", "phase": "",
                                  "dialect": "gulf", "at": "2026-11-01T07:00:00+00:00"})
    assert message.at.isoformat() == "2026-11-01T07:00:00+00:00"
    analysis = Analysis(script="arabic", dialect="gulf", dialect_confidence=0.5,
                        cues={"openers": ["salam"], "request": True})  # type: ignore[arg-type]
    assert analysis.cues == Cues(openers=("salam",), request=True)
    reply = Reply(text="تم", held={"c1": {"name": "x"}},  # type: ignore[dict-item]
                  usage={"model": "m", "prompt_tokens": 3})  # type: ignore[arg-type]
    assert reply.held["c1"] == HeldCall("x") and reply.usage is not None
    assert reply.usage.prompt_tokens == 3


@pytest.mark.parametrize("strict", [False, True])
def test_every_record_round_trips_through_the_serde(strict: bool) -> None:
    """Through the savers' serde (allowlisted) and through a strict one that refuses
    our types — then the dict form comes back and the readers rebuild the records."""
    serde = JsonPlusSerializer(allowed_msgpack_modules=None) if strict else checkpoint_serde()
    at = datetime(2026, 11, 1, 7, 30, tzinfo=UTC)
    done = CompletedTurn(turn_id="t", reply="هلا", phase="greeting", dialect="gulf",
                         events=({"kind": "turn_started", "user_text": "هلا", "request_id": ""},))
    inp = TurnInput(turn_id="t", tenant="default", user_id="u", thread_id="th", at=at,
                    tz="Asia/Kuwait", approval=ApprovalInput("c1", True))
    back = serde.loads_typed(serde.dumps_typed({"outcome": done, "input": inp,
                                                "held": HeldCall("cancel_order")}))
    if strict:
        assert isinstance(back["outcome"], dict)  # refused: the fields, not the type
        assert CompletedTurn(**back["outcome"]) == done
        assert TurnInput(**back["input"]) == inp
        assert HeldCall.read(back["held"]) == HeldCall("cancel_order")
    else:
        assert back == {"outcome": done, "input": inp, "held": HeldCall("cancel_order")}

"""Safe retries: a request_id is idempotent per (tenant, user), including a new thread's first
message; reusing it for different content is ALREADY_EXISTS; the replay window is a setting."""

from __future__ import annotations

import asyncio
import uuid

import grpc
import pytest

from majlis.threads import RequestKey
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect


def _user() -> str:
    # The PostgreSQL database is shared by the session: a fresh user sees only its threads.
    return f"u-{uuid.uuid4().hex[:10]}"


async def test_retry_of_a_first_message_returns_the_same_thread(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    u1 = _user()
    openai_server.push(ScriptedReply.text("هلا والله، شلون أقدر أخدمك؟"))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        first = await collect(svc.client.send("السلام عليكم", user_id=u1, request_id="new-1"))
        again = await collect(svc.client.send("السلام عليكم", user_id=u1, request_id="new-1"))
        # Naming the thread the first attempt created is the same request too.
        named = await collect(svc.client.send("السلام عليكم", user_id=u1, request_id="new-1",
                                              thread_id=first[-1].thread_id))
        listed = await svc.client.list_threads(user_id=u1)
        thread = await svc.client.get_thread(first[-1].thread_id, user_id=u1)
    assert len(openai_server.requests) == 1
    assert [t.thread_id for t in listed.threads] == [first[-1].thread_id]
    assert again[-1].thread_id == named[-1].thread_id == first[-1].thread_id
    assert again[-1].turn_completed.replayed and named[-1].turn_completed.replayed
    assert again[-1].turn_completed.text == "هلا والله، شلون أقدر أخدمك؟"
    assert again[-1].turn_completed.checkpoint_id == first[-1].turn_completed.checkpoint_id
    assert [m.text for m in thread.messages] == ["السلام عليكم", "هلا والله، شلون أقدر أخدمك؟"]
    assert listed.threads[0].turn_count == 1


async def test_request_id_reused_for_other_content_is_already_exists(run_service) -> None:
    u1 = _user()
    async with run_service() as svc:
        first = await collect(svc.client.send("ابي اعرف وين طلبي", user_id=u1,
                                              request_id="r-1"))
        thread_id = first[-1].thread_id
        other = await collect(svc.client.send("هلا", user_id=u1))
        attempts = [
            svc.client.send("ابي الغي الطلب", user_id=u1, request_id="r-1"),  # other text
            svc.client.send("ابي اعرف وين طلبي", user_id=u1, request_id="r-1",  # other thread
                            thread_id=other[-1].thread_id),
        ]
        for call in attempts:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await collect(call)
            assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
            assert "request_id 'r-1' was already used" in err.value.details()
            assert "new request_id" in err.value.details()
        thread = await svc.client.get_thread(thread_id, user_id=u1)
        listed = await svc.client.list_threads(user_id=u1)
    assert len(thread.messages) == 2
    assert len(listed.threads) == 2  # the rejected retries created nothing


async def test_request_ids_are_per_user(run_service) -> None:
    u1, u2 = _user(), _user()
    async with run_service() as svc:
        mine = await collect(svc.client.send("مرحبا", user_id=u1, request_id="same"))
        theirs = await collect(svc.client.send("مرحبا", user_id=u2, request_id="same"))
    assert not theirs[-1].turn_completed.replayed
    assert theirs[-1].thread_id != mine[-1].thread_id


async def test_replay_window_is_a_setting_and_expired_records_are_pruned(
    run_service, monkeypatch: pytest.MonkeyPatch
) -> None:
    u1 = _user()
    # Prune on every claim instead of once a minute, so the test sees it.
    monkeypatch.setattr("majlis.threads_pg.PRUNE_EVERY_S", 0.0)
    monkeypatch.setattr("majlis.threads_sqlite.PRUNE_EVERY_S", 0.0)
    async with run_service(request_replay_window_s=0.5) as svc:
        first = await collect(svc.client.send("هلا", user_id=u1, request_id="w-1"))
        replay = await collect(svc.client.send("هلا", user_id=u1, request_id="w-1"))
        await asyncio.sleep(0.8)
        threads = svc.app.persistence.threads
        key = RequestKey("default", u1, "w-1")
        assert await threads.get_request(key, window_s=0.5) is None  # expired
        await collect(svc.client.send("مساء الخير", user_id=u1, request_id="w-2"))
        # Any claim prunes expired records: even an unbounded look finds nothing.
        assert await threads.get_request(key, window_s=1e9) is None
        # After the window the id is free again: a new message, a new thread.
        fresh = await collect(svc.client.send("ابي اسأل عن التوصيل", user_id=u1,
                                              request_id="w-1"))
        record = await threads.get_request(key, window_s=0.5)
    assert replay[-1].turn_completed.replayed
    assert not fresh[-1].turn_completed.replayed
    assert fresh[-1].thread_id != first[-1].thread_id
    assert record is not None and record.thread_id == fresh[-1].thread_id and record.done


async def test_an_expired_request_id_is_claimed_again_without_a_prune(
    run_service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim itself overwrites an expired record (no prune ran since): the id runs
    a new message on a new thread, and a retry within the new window replays it."""
    u1 = _user()
    monkeypatch.setattr("majlis.threads_pg.PRUNE_EVERY_S", 1e9)
    monkeypatch.setattr("majlis.threads_sqlite.PRUNE_EVERY_S", 1e9)
    # A window long enough that the retry below, one turn later, is inside it.
    async with run_service(request_replay_window_s=3.0) as svc:
        first = await collect(svc.client.send("هلا", user_id=u1, request_id="x-1"))
        await asyncio.sleep(3.5)
        again = await collect(svc.client.send("وين طلبي؟", user_id=u1, request_id="x-1"))
        retry = await collect(svc.client.send("وين طلبي؟", user_id=u1, request_id="x-1"))
    assert not again[-1].turn_completed.replayed
    assert again[-1].thread_id != first[-1].thread_id
    assert retry[-1].turn_completed.replayed and retry[-1].thread_id == again[-1].thread_id


async def test_deleting_a_thread_forgets_its_request_ids(run_service) -> None:
    u1 = _user()
    async with run_service() as svc:
        first = await collect(svc.client.send("هلا", user_id=u1, request_id="d-1"))
        await svc.client.delete_thread(first[-1].thread_id, user_id=u1)
        again = await collect(svc.client.send("هلا", user_id=u1, request_id="d-1"))
    assert not again[-1].turn_completed.replayed
    assert again[-1].thread_id != first[-1].thread_id

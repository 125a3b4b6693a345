"""Fencing: a turn that lost its hold on the thread cannot commit, and every client hears the truth.

The loss is produced for real: on PostgreSQL the turn's lock session is
terminated (as a database restart would) and a second turn takes the thread;
on both stores the fencing token is moved on under a running turn, as a
successor's takeover does.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import grpc
import psycopg
import pytest

from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect, take_over

# 30 words at 0.2 s: the first turn is still streaming (6 s) while the test kills its
# lock session and runs a whole second turn, even on a loaded machine.
SLOW_REPLY = " ".join(["أبشر"] * 30)
# The session's PostgreSQL database is shared: this module's own user keeps its
# threads on the first page of ListThreads.
USER = f"fence-{uuid.uuid4().hex[:8]}"


def _kill_lock_session(dsn: str) -> int:
    """Terminate the backend holding our advisory locks, as a PostgreSQL restart would.

    The 30 s timeout makes pg_terminate_backend wait until the backend has
    exited (and so released its locks): without one it only signals, and on a
    loaded machine the next turn could still find the thread locked.
    """
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid, 30000) FROM pg_locks"
            " WHERE locktype = 'advisory' AND classid = %s AND granted AND database ="
            " (SELECT oid FROM pg_database WHERE datname = current_database())",
            (0x4457,)).fetchall()
    return len(rows)


async def _forks(svc: Any, thread_id: str) -> list[str | None]:
    """Parents that have more than one child checkpoint (a forked history)."""
    seen: dict[str | None, int] = {}
    async for c in svc.app.persistence.checkpointer.alist(
            {"configurable": {"thread_id": thread_id}}):
        parent = c.parent_config["configurable"]["checkpoint_id"] if c.parent_config else None
        seen[parent] = seen.get(parent, 0) + 1
    return [p for p, n in seen.items() if n > 1]


async def test_turn_whose_lease_was_taken_over_is_aborted_and_not_saved(
    run_service, openai_server: ScriptedOpenAIServer, backend: str
) -> None:
    openai_server.push(ScriptedReply.text("هلا والله"),
                       ScriptedReply.text(SLOW_REPLY, event_delay_s=0.2),
                       ScriptedReply.text("طلبك في الطريق"))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        first = await collect(svc.client.send("السلام عليكم", user_id=USER))
        thread_id = first[-1].thread_id
        seen = []
        taken = False
        with pytest.raises(grpc.aio.AioRpcError) as err:
            async for event in svc.client.send("وين طلبي؟", user_id=USER, thread_id=thread_id,
                                               request_id="r-2"):
                seen.append(event)
                if event.HasField("text_delta") and not taken:
                    taken = True
                    await asyncio.to_thread(take_over, svc, backend, thread_id)
        assert err.value.code() == grpc.StatusCode.ABORTED
        assert "nothing of it was saved" in err.value.details()
        assert not any(e.HasField("turn_completed") for e in seen)
        lost = await svc.client.get_thread(thread_id, user_id=USER)
        # The same request_id now runs (it was never recorded as done), once.
        retry = await collect(svc.client.send("وين طلبي؟", user_id=USER, thread_id=thread_id,
                                              request_id="r-2"))
        thread = await svc.client.get_thread(thread_id, user_id=USER)
        listed = await svc.client.list_threads(user_id=USER)
        forks = await _forks(svc, thread_id)
    assert len(lost.messages) == 2
    assert not retry[-1].turn_completed.replayed
    assert [m.text for m in thread.messages if m.role == "user"] == ["السلام عليكم", "وين طلبي؟"]
    assert _count(listed, thread_id) == 2  # the registry agrees with the history
    assert forks == []


@pytest.mark.parametrize("backend", ["postgres"])
async def test_lost_lock_session_then_second_turn_no_fork_truthful_statuses(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    """The issue's failure: the first turn's lock dies, a second turn runs and commits."""
    openai_server.push(ScriptedReply.text("هلا والله"),
                       ScriptedReply.text(SLOW_REPLY, event_delay_s=0.2),
                       ScriptedReply.text("حاضرين، تفضل"))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        first = await collect(svc.client.send("السلام عليكم", user_id=USER))
        thread_id = first[-1].thread_id
        slow_events: list[Any] = []
        second: list[Any] = []

        async def slow() -> None:
            async for event in svc.client.send("وين طلبي؟", user_id=USER, thread_id=thread_id,
                                               request_id="slow"):
                slow_events.append(event)
                if event.HasField("text_delta") and not second:
                    assert await asyncio.to_thread(_kill_lock_session, svc.settings.database_dsn())
                    second.extend(await collect(svc.client.send(
                        "ابي اكلم موظف", user_id=USER, thread_id=thread_id, request_id="fast")))

        with pytest.raises(grpc.aio.AioRpcError) as err:
            await slow()
        thread = await svc.client.get_thread(thread_id, user_id=USER)
        listed = await svc.client.list_threads(user_id=USER)
        forks = await _forks(svc, thread_id)
    assert second[-1].HasField("turn_completed")
    assert err.value.code() == grpc.StatusCode.ABORTED
    assert not any(e.HasField("turn_completed") for e in slow_events)
    assert [m.text for m in thread.messages if m.role == "user"] == ["السلام عليكم",
                                                                   "ابي اكلم موظف"]
    assert _count(listed, thread_id) == 2
    assert forks == []


def _token(dsn: str, thread_id: str) -> tuple[int, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT lease_epoch, lease_owner FROM diwaniya_threads"
                           " WHERE thread_id = %s", (thread_id,)).fetchone()
    assert row is not None
    return int(row[0]), row[1]


def _lose_bump(dsn: str, thread_id: str, durable: tuple[int, Any]) -> int:
    """What a crash does to a lock statement that committed asynchronously and had not
    reached the disk: the holder's session (and so its lock) is gone, and the thread's
    row is back to its last durable token."""
    killed = _kill_lock_session(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE diwaniya_threads SET lease_epoch = %s, lease_owner = %s"
                     " WHERE thread_id = %s", (*durable, thread_id))
    return killed


@pytest.mark.parametrize("backend", ["postgres"])
async def test_a_lost_token_bump_is_never_reissued(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    """The lock statement commits asynchronously: a crash may lose the running turn's
    bump. The next holder then bumps the epoch to the very value the lost holder has;
    only the owner uuid tells them apart, so the lost holder must not commit (an
    epoch-only fence lets it: a fork, and "completed" for a turn that forked)."""
    openai_server.push(ScriptedReply.text("هلا والله"),
                       ScriptedReply.text(SLOW_REPLY, event_delay_s=0.2),
                       ScriptedReply.text("حاضرين، تفضل"))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        dsn = svc.settings.database_dsn()
        first = await collect(svc.client.send("السلام عليكم", user_id=USER))
        thread_id = first[-1].thread_id
        durable = await asyncio.to_thread(_token, dsn, thread_id)
        lost: list[Any] = []
        second: list[Any] = []
        tokens: list[tuple[int, Any]] = []

        async def slow() -> None:
            async for event in svc.client.send("وين طلبي؟", user_id=USER, thread_id=thread_id,
                                               request_id="lost-bump"):
                lost.append(event)
                if event.HasField("text_delta") and not second:
                    tokens.append(await asyncio.to_thread(_token, dsn, thread_id))
                    assert await asyncio.to_thread(_lose_bump, dsn, thread_id, durable)
                    second.extend(await collect(svc.client.send(
                        "ابي اكلم موظف", user_id=USER, thread_id=thread_id, request_id="next")))
                    tokens.append(await asyncio.to_thread(_token, dsn, thread_id))

        with pytest.raises(grpc.aio.AioRpcError) as err:
            await slow()
        thread = await svc.client.get_thread(thread_id, user_id=USER)
        listed = await svc.client.list_threads(user_id=USER)
        forks = await _forks(svc, thread_id)
    (lost_epoch, lost_owner), (next_epoch, next_owner) = tokens
    assert lost_epoch == next_epoch == durable[0] + 1  # the epoch WAS reissued
    assert lost_owner != next_owner
    assert second[-1].HasField("turn_completed")
    assert err.value.code() == grpc.StatusCode.ABORTED
    assert "nothing of it was saved" in err.value.details()
    assert not any(e.HasField("turn_completed") for e in lost)
    assert [m.text for m in thread.messages if m.role == "user"] == ["السلام عليكم",
                                                                   "ابي اكلم موظف"]
    assert _count(listed, thread_id) == 2
    assert forks == []


@pytest.mark.parametrize("backend", ["postgres"])
async def test_lost_lock_session_without_successor_still_completes_truthfully(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    """No one took the thread over, so the turn may commit: it says completed, and nothing
    after that says "not saved" (the dead session's unlock failure is not an error)."""
    openai_server.push(ScriptedReply.text(SLOW_REPLY, event_delay_s=0.05),
                       ScriptedReply.text("العفو"))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        events: list[Any] = []
        killed = 0
        async for event in svc.client.send("هلا", user_id=USER, request_id="k-1"):
            events.append(event)
            if event.HasField("text_delta") and not killed:
                killed = await asyncio.to_thread(_kill_lock_session, svc.settings.database_dsn())
        thread = await svc.client.get_thread(events[-1].thread_id, user_id=USER)
        after = await collect(svc.client.send("شكرا", user_id=USER,
                                              thread_id=events[-1].thread_id))
    assert killed == 1
    assert events[-1].HasField("turn_completed")
    assert len(thread.messages) == 2
    assert after[-1].HasField("turn_completed")


async def test_concurrent_turns_on_many_threads_each_commit_only_their_own(
    run_service, backend: str
) -> None:
    """The deferral is per turn (a ContextVar): concurrent turns never swap checkpoints."""
    texts = ["هلا", "مساء الخير", "شلونك", "السلام عليكم", "ابي اسأل عن الفاتورة"]
    async with run_service() as svc:
        user = f"many-{backend}"
        results = await asyncio.gather(*(
            collect(svc.client.send(t, user_id=user, request_id=f"m-{i}"))
            for i, t in enumerate(texts)))
        threads = [await svc.client.get_thread(r[-1].thread_id, user_id=user) for r in results]
    assert len({r[-1].thread_id for r in results}) == len(texts)
    for text, result, thread in zip(texts, results, threads, strict=True):
        assert [m.text for m in thread.messages if m.role == "user"] == [text]
        assert result[-1].turn_completed.checkpoint_id


async def test_cancelled_or_timed_out_turn_writes_no_checkpoint(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    """Exit durability used to save a scratch checkpoint for a failed turn; now nothing."""
    openai_server.push(ScriptedReply.text("هلا والله"),
                       ScriptedReply.text(SLOW_REPLY, event_delay_s=0.1),
                       ScriptedReply.text(SLOW_REPLY, event_delay_s=0.1))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        first = await collect(svc.client.send("السلام عليكم", user_id="fail-u"))
        thread_id = first[-1].thread_id
        saver = svc.app.persistence.checkpointer
        before = [c async for c in saver.alist({"configurable": {"thread_id": thread_id}})]
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await collect(svc.client.send("وين طلبي؟", user_id="fail-u", thread_id=thread_id,
                                          timeout_s=1.0))
        # The timed-out turn's lease is released by the server as it ends, which
        # under load can land just after the client's own deadline fired: a send
        # in that moment is truthfully ABORTED "busy" and is sent again.
        for _ in range(100):
            asked = len(openai_server.requests)
            call = svc.client.send("ابي اكلم موظف", user_id="fail-u", thread_id=thread_id)
            try:
                async for event in call:
                    # Cancel while the model is still streaming its 3 s reply: once
                    # its request has arrived (or text flows). Waiting for a
                    # text_delta alone raced the turn's end on a loaded machine
                    # (CI rehearsal, session 9), and a turn that ends first is kept.
                    if event.HasField("turn_started"):
                        for _ in range(250):
                            if len(openai_server.requests) > asked:
                                break
                            await asyncio.sleep(0.02)
                    if event.HasField("turn_started") or event.HasField("text_delta"):
                        call.cancel()
                        break
                break
            except grpc.aio.AioRpcError as busy:
                assert busy.code() == grpc.StatusCode.ABORTED, busy
                await asyncio.sleep(0.05)
        else:
            pytest.fail("the thread stayed busy for 5 s after its timed-out turn ended")
        await asyncio.sleep(0.5)
        after = [c async for c in saver.alist({"configurable": {"thread_id": thread_id}})]
        listed = await svc.client.list_threads(user_id="fail-u")
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert len(after) == len(before) == 1
    assert _count(listed, thread_id) == 1


@pytest.mark.parametrize("failure", ["after_commit", "before_commit", "database_gone"])
async def test_commit_whose_outcome_was_lost_is_reported_truthfully(
    run_service, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """The connection dies around COMMIT: the engine asks the database what happened."""
    async with run_service() as svc:
        threads = svc.app.persistence.threads
        commit = threads.commit_turn

        async def flaky(*args: Any, **kwargs: Any) -> None:
            if failure == "after_commit":
                await commit(*args, **kwargs)
            raise OSError("connection reset while committing")

        async def gone(*args: Any, **kwargs: Any) -> bool:
            raise OSError("database is not answering")

        first = await collect(svc.client.send("هلا", user_id=f"lost-{failure}"))
        thread_id = first[-1].thread_id
        monkeypatch.setattr(threads, "commit_turn", flaky)
        if failure == "database_gone":
            monkeypatch.setattr(threads, "turn_saved", gone)
            monkeypatch.setattr("majlis.turns.COMMIT_CHECK_PAUSE_S", 0.01)
        events: list[Any] = []
        code = None
        try:
            async for event in svc.client.send("وين طلبي؟", user_id=f"lost-{failure}",
                                               thread_id=thread_id, request_id="lost-1"):
                events.append(event)
        except grpc.aio.AioRpcError as exc:
            code, details = exc.code(), exc.details()
        monkeypatch.undo()
        thread = await svc.client.get_thread(thread_id, user_id=f"lost-{failure}")
    saved = "وين طلبي؟" in [m.text for m in thread.messages]
    if failure == "after_commit":
        assert saved and code is None and events[-1].HasField("turn_completed")
    elif failure == "before_commit":
        assert not saved and code == grpc.StatusCode.UNAVAILABLE
        assert "it was not saved" in details
    else:
        assert not saved and code == grpc.StatusCode.UNAVAILABLE
        assert "whether it was saved is unknown" in details and "same request_id" in details


async def test_a_deadline_that_passes_while_the_consumer_holds_an_event_ends_the_turn_cleanly(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    """The turn's deadline passes while its consumer holds an event (as a blocked write does).

    The consumer's own await is not cancelled by the turn's deadline; the turn
    then ends with DeadlineExceeded, nothing is checkpointed, and the thread
    takes a new turn at once (no lease outlives it). Written while chasing a
    CI-rehearsal failure in which a timed-out turn's RPC ended UNKNOWN and the
    event loop's finaliser later closed a still-running turn generator.
    """
    from diwaniya.errors import DeadlineExceeded
    from majlis.requests import TurnRequest

    openai_server.push(ScriptedReply.text("هلا والله"),
                       ScriptedReply.text(SLOW_REPLY, event_delay_s=0.1),
                       ScriptedReply.text("أبشر"))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        first = await collect(svc.client.send("السلام عليكم", user_id="held-u"))
        thread_id = first[-1].thread_id
        saver = svc.app.persistence.checkpointer
        before = [c async for c in saver.alist({"configurable": {"thread_id": thread_id}})]
        turn = svc.app.engine.run_turn(
            TurnRequest(tenant="default", user_id="held-u", text="وين طلبي؟",
                        thread_id=thread_id), timeout_s=1.0)
        kinds: list[str] = []
        with pytest.raises(DeadlineExceeded):
            async for envelope in turn:
                kinds.append(type(envelope.event).__name__)
                if len(kinds) == 1:
                    # Hold the first event past the deadline, as a blocked write does;
                    # this sleep must not be cancelled by the turn's deadline.
                    await asyncio.sleep(1.3)
        await turn.aclose()
        after = [c async for c in saver.alist({"configurable": {"thread_id": thread_id}})]
        # The thread is free at once: no lease outlives the failed turn.
        third = await collect(svc.client.send("شكرا", user_id="held-u", thread_id=thread_id))
    assert kinds[0] == "TurnStarted"
    assert len(after) == len(before) == 1
    assert third[-1].HasField("turn_completed")


async def test_a_deadline_that_passes_while_the_consumer_holds_a_text_delta_ends_the_turn(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    """As above, but the event held past the deadline is a ``text_delta``, mid-graph.

    The deadline used to be one ``asyncio.timeout_at`` around the graph's whole
    stream, ``yield``s included: when it fired while the consumer held an event,
    it cancelled the consumer's own await (in a server, grpc's blocked write),
    where nothing turned it into DeadlineExceeded. Now it covers only the
    graph's steps: the consumer's await is left alone and its next step is
    DeadlineExceeded, with nothing checkpointed and the thread free at once.
    """
    from diwaniya.errors import DeadlineExceeded
    from majlis.requests import TurnRequest

    openai_server.push(ScriptedReply.text("هلا والله"),
                       ScriptedReply.text(SLOW_REPLY, event_delay_s=0.3),  # 9 s: past the deadline
                       ScriptedReply.text("أبشر"))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        first = await collect(svc.client.send("السلام عليكم", user_id="held-delta-u"))
        thread_id = first[-1].thread_id
        saver = svc.app.persistence.checkpointer
        before = [c async for c in saver.alist({"configurable": {"thread_id": thread_id}})]
        # 3 s for the first text_delta to arrive: with 1 s, a starved CPU (nice 19
        # against two busy loops) passed the deadline before it, and the test
        # never held one.
        timeout_s = 3.0
        due = time.monotonic() + timeout_s
        turn = svc.app.engine.run_turn(
            TurnRequest(tenant="default", user_id="held-delta-u", text="وين طلبي؟",
                        thread_id=thread_id), timeout_s=timeout_s)
        kinds: list[str] = []
        hold_cancelled = False
        with pytest.raises(DeadlineExceeded):
            async for envelope in turn:
                kinds.append(type(envelope.event).__name__)
                if kinds[-1] == "TextDelta" and kinds.count("TextDelta") == 1:
                    try:
                        # Held past the deadline, as a write blocked by flow control is.
                        await asyncio.sleep(max(0.0, due - time.monotonic()) + 0.3)
                    except asyncio.CancelledError:
                        hold_cancelled = True
                        task = asyncio.current_task()
                        assert task is not None
                        task.uncancel()
        await turn.aclose()
        after = [c async for c in saver.alist({"configurable": {"thread_id": thread_id}})]
        third = await collect(svc.client.send("شكرا", user_id="held-delta-u",
                                              thread_id=thread_id))
    assert "TextDelta" in kinds
    assert not hold_cancelled, "the turn's deadline cancelled its consumer's own await"
    assert len(after) == len(before) == 1
    assert third[-1].HasField("turn_completed")


def _count(listed: Any, thread_id: str) -> int:
    """The registry's turn count of ``thread_id`` (other tests share the user id)."""
    return next(t.turn_count for t in listed.threads if t.thread_id == thread_id)

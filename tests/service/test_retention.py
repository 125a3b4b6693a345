"""Retention over gRPC on both stores (issue #15 item 5): the latest N checkpoints per
thread, idle expiry with the thread's memories, and ``diwaniya gc`` — checked in the
database itself."""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from diwaniya.errors import ConfigurationError
from majlis.retention import COMMIT_PRUNE_MAX
from service import DiwaniyaClient, gc_cli
from service.app import retention_policy
from service.settings import Settings, TenantSettings, load_settings
from tests.service._retention_db import ThreadRows
from tests.service.conftest import collect

HOUR = 3600.0


async def _gc(settings: Settings, *, dry_run: bool = False, batch: int = 500) -> None:
    """``diwaniya gc`` in this process (the CLI's own code, on its own connections)."""
    assert await gc_cli.run(settings, argparse.Namespace(dry_run=dry_run,
                                                         batch_size=batch)) == 0


async def _turns(client: DiwaniyaClient, user: str, texts: list[str], thread_id: str = ""
                 ) -> str:
    for text in texts:
        events = await collect(client.send(text, user_id=user, thread_id=thread_id))
        assert events[-1].HasField("turn_completed")
        thread_id = events[-1].thread_id
    return thread_id


async def test_a_thread_keeps_its_latest_n_checkpoints_and_goes_on(
    run_service: Callable[..., Any],
) -> None:
    user = f"keep-{uuid.uuid4().hex[:6]}"
    texts = ["السلام عليكم", "عندي مشكلة في الطلب", "الطلب ما وصل", "متى يوصل؟", "شكراً"]
    async with run_service(checkpoints_kept=2) as svc:
        db = ThreadRows(svc.settings)
        thread_id = await _turns(svc.client, user, texts[:1])
        for n, text in enumerate(texts[1:], start=2):
            await _turns(svc.client, user, [text], thread_id)
            assert db.checkpoints(thread_id) == min(n, 2)
            assert db.orphan_blobs(thread_id) == 0
        thread = await svc.client.get_thread(thread_id, user_id=user)
    # The head holds the whole conversation: nothing the customer said is lost.
    assert [m.text for m in thread.messages if m.role == "user"] == texts
    _, head = db.registry(thread_id) or (0, "")
    assert head  # the head survived every prune (fencing compares with it)


async def test_replay_still_works_after_its_checkpoint_was_pruned(
    run_service: Callable[..., Any],
) -> None:
    user = f"replay-{uuid.uuid4().hex[:6]}"
    request_id = uuid.uuid4().hex
    async with run_service(checkpoints_kept=1) as svc:
        first = await collect(svc.client.send("وين طلبي؟", user_id=user, request_id=request_id))
        thread_id = first[-1].thread_id
        await _turns(svc.client, user, ["هلا", "مرحبا"], thread_id)
        assert ThreadRows(svc.settings).checkpoints(thread_id) == 1
        again = await collect(svc.client.send("وين طلبي؟", user_id=user, request_id=request_id))
    assert again[-1].turn_completed.replayed
    assert again[-1].turn_completed.text == first[-1].turn_completed.text
    assert again[-1].turn_id == first[-1].turn_id


async def test_an_idle_thread_expires_with_its_memories_per_tenant(
    run_service: Callable[..., Any],
) -> None:
    suffix = uuid.uuid4().hex[:6]
    keys = {f"k-short-{suffix}": "short", f"k-kept-{suffix}": "kept"}
    user = f"idle-{suffix}"
    async with run_service(api_keys=keys, thread_idle_ttl_s=HOUR,
                           tenants={"kept": TenantSettings(thread_idle_ttl_s=0)}) as svc:
        db = ThreadRows(svc.settings)
        short = DiwaniyaClient(svc.target, api_key=f"k-short-{suffix}")
        kept = DiwaniyaClient(svc.target, api_key=f"k-kept-{suffix}")
        try:
            text = ["اسمي خالد وعندي مشكلة في الفاتورة"]
            # One user per thread: a user's name is one memory, moved to the latest thread.
            gone, fresh = await _turns(short, user, text), await _turns(short, user + "-b", text)
            forever = await _turns(kept, user, text)
            assert db.memories(gone) == 1
            for thread_id in (gone, forever):
                db.age(thread_id, 2 * HOUR)
            # Expired at once, before any gc: every read and turn is NOT_FOUND.
            for call in (lambda: short.get_thread(gone, user_id=user),
                         lambda: collect(short.send("هلا", user_id=user, thread_id=gone))):
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await call()
                assert err.value.code() == grpc.StatusCode.NOT_FOUND
            assert not (await short.list_threads(user_id=user)).threads
            await _gc(svc.settings)
            assert set(db.per_table(gone).values()) == {0}, db.per_table(gone)
            # Another tenant's TTL of 0 keeps its idle thread; a recent one stays too.
            for thread_id in (fresh, forever):
                assert db.per_table(thread_id)["diwaniya_threads"] == 1
                assert db.memories(thread_id) == 1
            assert len((await kept.get_thread(forever, user_id=user)).messages) == 2
        finally:
            await short.close()
            await kept.close()


async def test_gc_dry_run_changes_nothing_then_gc_prunes_once(
    run_service: Callable[..., Any], settings_for: Callable[..., Settings],
    capsys: pytest.CaptureFixture[str],
) -> None:
    user = f"dry-{uuid.uuid4().hex[:6]}"
    async with run_service() as svc:  # N unset: every checkpoint kept
        thread_id = await _turns(svc.client, user, ["هلا", "مرحبا", "كيف الحال؟", "شكراً"])
        db = ThreadRows(svc.settings)
        before = db.per_table(thread_id), db.registry(thread_id)
        assert before[0]["checkpoints"] == 4
        strict = settings_for(checkpoints_kept=1, thread_idle_ttl_s=HOUR)
        capsys.readouterr()
        await _gc(strict, dry_run=True)
        assert (db.per_table(thread_id), db.registry(thread_id)) == before
        out, err = capsys.readouterr()
        counted = json.loads(out.splitlines()[-1])
        assert counted["dry_run"] is True and counted["checkpoints_pruned"] >= 3
        assert "checkpoints: would delete" in err
        await _gc(strict, batch=1)
        assert db.checkpoints(thread_id) == 1 and db.orphan_blobs(thread_id) == 0
        after = db.per_table(thread_id)
        await _gc(strict)  # idempotent: nothing more to do
        assert db.per_table(thread_id) == after
        thread = await svc.client.get_thread(thread_id, user_id=user)
        assert len([m for m in thread.messages if m.role == "user"]) == 4
        await _turns(svc.client, user, ["وبعد؟"], thread_id)


def test_every_retention_knob_is_a_setting_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {"DIWANIYA_CHECKPOINTS_KEPT": "7", "DIWANIYA_THREAD_IDLE_TTL_S": "86400",
                        "DIWANIYA_TENANTS": '{"بنك": {"thread_idle_ttl_s": 600},'
                                            ' "أرشيف": {"thread_idle_ttl_s": 0}}'}.items():
        monkeypatch.setenv(name, value)
    policy = retention_policy(load_settings())
    assert policy.checkpoints_kept == 7 and policy.expires
    assert (policy.idle_ttl("بنك"), policy.idle_ttl("أرشيف"), policy.idle_ttl("متجر")) == (
        600, 0, 86400)
    monkeypatch.setenv("DIWANIYA_CHECKPOINTS_KEPT", "-1")
    with pytest.raises(ConfigurationError, match="DIWANIYA_CHECKPOINTS_KEPT"):
        load_settings()
    # docs/operations.md documents every one of them.
    doc = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text("utf-8")
    for name in ("DIWANIYA_CHECKPOINTS_KEPT", "DIWANIYA_THREAD_IDLE_TTL_S", "thread_idle_ttl_s",
                 "DIWANIYA_REQUEST_REPLAY_WINDOW_S", "DIWANIYA_TURN_EVENTS_TTL_S", "diwaniya gc"):
        assert name in doc, name


async def test_a_thread_from_before_n_was_set_is_trimmed_a_bounded_step_per_turn(
    run_service: Callable[..., Any],
) -> None:
    user = f"old-{uuid.uuid4().hex[:6]}"
    turns = COMMIT_PRUNE_MAX + 4
    async with run_service() as svc:  # keep everything, as before the setting existed
        thread_id = await _turns(svc.client, user, ["هلا"] * turns)
        db = ThreadRows(svc.settings)
        assert db.checkpoints(thread_id) == turns
    async with run_service(checkpoints_kept=2) as svc:
        await _turns(svc.client, user, ["مرحبا"], thread_id)
        # One commit deletes at most COMMIT_PRUNE_MAX: never one slow commit.
        assert db.checkpoints(thread_id) == turns + 1 - COMMIT_PRUNE_MAX
        await _turns(svc.client, user, ["شكراً"], thread_id)
        assert db.checkpoints(thread_id) == 2 and db.orphan_blobs(thread_id) == 0


async def test_gc_prunes_expired_records_events_and_counters_and_keeps_live_ones(
    run_service: Callable[..., Any],
) -> None:
    suffix = uuid.uuid4().hex[:8]
    key, user = f"key-{suffix}", f"records-{suffix}"
    async with run_service(api_keys={key: f"t-{suffix}"}, rate_limit="100/hour") as svc:
        db = ThreadRows(svc.settings)
        async with DiwaniyaClient(svc.target, api_key=key) as client:
            old = await collect(client.send("هلا", user_id=user, request_id=uuid.uuid4().hex))
            new = await collect(client.send("مرحبا", user_id=user, request_id=uuid.uuid4().hex))
        stale, live = old[-1].thread_id, new[-1].thread_id
        window = svc.settings.request_replay_window_s + svc.settings.turn_events_ttl_s
        db.age_records(stale, 2 * window)
        db.add_expired_counter(f"expired-{suffix}")
        counted = db.counters()
        await _gc(svc.settings)
        assert db.per_table(stale)["diwaniya_requests"] == 0
        assert db.per_table(stale)["diwaniya_turn_events"] == 0
        assert db.per_table(stale)["checkpoints"] == 1  # the thread itself is not expired
        assert db.per_table(live)["diwaniya_requests"] == 1
        assert db.per_table(live)["diwaniya_turn_events"] > 0
        left = db.counters()
        assert f"expired-{suffix}" in counted and f"expired-{suffix}" not in left
        assert left and set(left) <= set(counted)  # the live window's counters stay

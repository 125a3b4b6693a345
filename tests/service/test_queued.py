"""A turn that waits for its thread says ``queued`` first, on both stores."""

from __future__ import annotations

import grpc

from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect, kinds


async def test_enqueued_turn_emits_queued_before_it_starts(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.push(ScriptedReply.text("خلني أشوف لك الموضوع وأرد عليك", event_delay_s=0.2),
                       ScriptedReply.text("تفضل، هذا الرد الثاني"),
                       ScriptedReply.text("العفو، حياك"))
    async with run_service(model_base_url=openai_server.base_url,
                           concurrency_policy="enqueue", enqueue_wait_s=20) as svc:
        first = svc.client.send("السلام عليكم", user_id="u1")
        started = await first.read()
        thread_id = started.thread_id
        second = svc.client.send("وش صار على طلبي؟", user_id="u1", thread_id=thread_id)
        # Under load the second lock connection may still be opening (the lock
        # pool grows on demand): then ``lock_pool`` is said first, truthfully,
        # and ``thread_busy`` follows it. Both come before the turn starts.
        waits = [await second.read()]
        while waits[-1].HasField("queued") and waits[-1].queued.reason == "lock_pool":
            waits.append(await second.read())
        head = waits[-1]
        rest = []
        while (event := await first.read()) is not grpc.aio.EOF:
            rest.append(event)
        tail = []
        while (event := await second.read()) is not grpc.aio.EOF:
            tail.append(event)
        # A turn that does not wait says nothing of the kind.
        alone = await collect(svc.client.send("شكراً", user_id="u1", thread_id=thread_id))
    assert head.HasField("queued"), head
    assert head.queued.reason == "thread_busy" and head.queued.position >= 1
    assert all(w.seq == 0 and w.thread_id == thread_id and w.turn_id == "" for w in waits)
    assert kinds(rest)[-1] == "turn_completed"
    assert kinds(tail)[0] == "turn_started" and kinds(tail)[-1] == "turn_completed"
    assert "queued" not in kinds(alone) and kinds(alone)[-1] == "turn_completed"

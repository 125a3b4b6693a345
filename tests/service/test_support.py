"""Support behaviours over gRPC, on both stores, in dialect (offline responder).

Order numbers are asked for when missing, remembered and reused; the bot answers
"what is my name?" in the second person and takes its own name only from the
tenant persona; a seasonal greeting opens a reply but never replaces the next
step; a failed answer to a complaint offers a person; "I don't know" comes with
a next step.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from majlis.models import PhraseBook
from memory import kb
from tests.fakes import ScriptedOpenAIServer, ScriptedReply, WebhookReply, WebhookServer
from tests.service.conftest import collect, kinds

SAY = PhraseBook.load().say
GENDERS = (None, "m", "f")
# 2027-02-25 09:00 in Kuwait: 18 Ramadan 1448 and Kuwait's National Day.
RAMADAN_NATIONAL_DAY = datetime(2027, 2, 25, 6, 0, tzinfo=UTC)
HOURS = "# أوقات العمل\n\nالدوام من الأحد إلى الخميس، من 8 صباحًا إلى 4 عصرًا.\n"


def _reply(events: list[Any]) -> str:
    return str(events[-1].turn_completed.text)


class _Thread:
    """One customer's thread: ``await t.say("…")`` → the reply text."""

    def __init__(self, svc: Any, user: str, country: str, **kw: Any) -> None:
        self.svc, self.user, self.country, self.kw = svc, user, country, kw
        self.id = ""
        self.events: list[Any] = []

    async def say(self, text: str) -> str:
        self.events = await collect(self.svc.client.send(
            text, user_id=self.user, thread_id=self.id, country=self.country, **self.kw))
        self.id = self.events[-1].thread_id
        return _reply(self.events)

    @property
    def voice(self) -> str:
        """The phrase voice of the last reply: the thread's region when it was mirrored,
        else ``neutral``/``msa`` (turn_completed.reply_register, see majlis.culture.tone)."""
        done = self.events[-1].turn_completed
        return done.dialect if done.reply_register == "dialect" else done.reply_register


@pytest.mark.parametrize(("country", "region", "text"), [
    ("KW", "gulf", "ابغى ارجّع الطلب"),
    ("EG", "egyptian", "عايز ابدّل الموبايل اللي اشتريته"),
    ("JO", "levantine", "بدي رجّع الطلبية"),
    ("MA", "maghrebi", "بغيت نرجع الطلبية ديالي"),
])
async def test_order_request_without_a_number_asks_for_it_in_dialect(
    run_service, country: str, region: str, text: str
) -> None:
    async with run_service() as svc:
        reply = await _Thread(svc, "u1", country).say(text)
    # «عايز» says the customer is a man: the masculine form is right there.
    assert any(SAY("ask_order_number", region, gender=g) in reply for g in GENDERS)


async def test_order_number_is_remembered_and_reused_without_asking_again(run_service) -> None:
    async with run_service() as svc:
        t = _Thread(svc, "u1", "KW")
        first = await t.say("طلبي رقم 48213 ما وصل")
        await t.say("شكرا")
        third = await t.say("وين صار طلبي؟")
        number = await t.say("شنو رقم طلبي؟")
    assert "48213" in first and "نحوّلك" in first  # a failed complaint offers a person
    assert "48213" in third
    # No message here has a Gulf-only marker (وين/شنو are Kuwaiti and Iraqi
    # alike), so the thread may stay below the mirroring threshold: neutral.
    assert t.voice in {"gulf", "neutral"}
    assert SAY("ask_order_number", t.voice) not in third
    assert SAY("user_order_number", t.voice, order="48213") in number


async def test_a_number_given_after_being_asked_is_understood(run_service) -> None:
    async with run_service() as svc:
        # Its own user: the PostgreSQL database (and its memories) is shared by the session.
        t = _Thread(svc, "asked-number", "IQ")
        asked = await t.say("اريد ارجع الطلب مالتي")
        voice = t.voice
        given = await t.say("48213")
        later = await t.say("شوكت يوصل طلبي؟")
        thread = await svc.client.get_thread(t.id, user_id="asked-number")
        facts = await svc.app.store.user_records("default", "asked-number", limit=10)
    assert voice in {"iraqi", "neutral"}
    assert SAY("ask_order_number", voice) in asked
    assert "48213" in given and SAY("ask_order_number", voice) not in given
    assert "48213" in later
    assert [m.text for m in thread.messages if m.role == "user"] == [
        "اريد ارجع الطلب مالتي", "48213", "شوكت يوصل طلبي؟"]
    # The answer is a memory too, masked like every number the extractor keeps.
    assert [f.text for f in facts] == ["رقم الطلب ****13"]


async def test_a_remembered_order_number_fills_the_tenants_tool(
    run_service, webhook_server: WebhookServer, tmp_path: Path
) -> None:
    url = webhook_server.route("/orders", WebhookReply(
        json_body={"order_id": "48213", "status": "مع المندوب"}))
    tools = [{
        "name": "order_status", "description_ar": "حالة الطلب",
        "parameters": {"type": "object", "properties": {
            "order_id": {"type": "string", "description": "رقم الطلب"}},
            "required": ["order_id"]},
        "url": url, "examples": ["وين طلبي", "حالة الطلب"],
        "parameter_patterns": {"order_id": r"\d{4,}"},
    }]
    (tmp_path / "tools.json").write_text(json.dumps(tools, ensure_ascii=False), "utf-8")
    async with run_service(tools_file=tmp_path / "tools.json") as svc:
        t = _Thread(svc, "u1", "SA")
        await t.say("السلام عليكم، رقم الطلب 48213")
        reply = await t.say("وين طلبي؟")
        events = t.events
    call = next(e.tool_call for e in events if e.HasField("tool_call"))
    assert json.loads(call.arguments_json) == {"order_id": "48213"}
    assert json.loads(webhook_server.requests[0].body) == {"order_id": "48213"}
    assert "مع المندوب" in reply


async def test_my_name_is_answered_in_the_second_person(run_service) -> None:
    async with run_service() as svc:
        t = _Thread(svc, "u1", "KW")
        await t.say("اسمي احمد")
        mine = await t.say("شنو اسمي؟")
        other = _Thread(svc, "u1", "EG")  # the user's name is a memory: another thread knows it
        again = await other.say("اسمي ايه؟")
        stranger = await _Thread(svc, "u2", "KW").say("وش اسمي؟")
    assert "اسمك احمد" in mine and "اسمي" not in mine
    assert "اسمك احمد" in again
    assert stranger.startswith(SAY("user_name_unknown", "gulf"))  # never another user's name


async def test_the_bot_takes_a_name_only_from_the_persona(run_service) -> None:
    async with run_service(api_keys={"k-named": "named", "k-plain": "plain"},
                           tenants={"named": {"persona_name": "نورة"},
                                    "plain": {"persona_name": ""}}) as svc:
        from diwaniya.client import AsyncClient

        async with AsyncClient(svc.target, api_key="k-named") as named, \
                AsyncClient(svc.target, api_key="k-plain") as plain:
            await collect(named.send("اسمي احمد", user_id="u1", country="KW"))
            with_name = _reply(await collect(named.send("شنو اسمك؟", user_id="u1",
                                                        country="KW")))
            await collect(plain.send("اسمي احمد", user_id="u1", country="KW"))
            nameless = _reply(await collect(plain.send("شنو اسمك؟", user_id="u1",
                                                       country="KW")))
    assert "نورة" in with_name and "احمد" not in with_name
    assert SAY("bot_no_name", "gulf") in nameless and "احمد" not in nameless


async def test_seasonal_greeting_opens_but_never_replaces_the_next_step(
    run_service, tmp_path: Path
) -> None:
    doc = tmp_path / "hours.md"
    doc.write_text(HOURS, encoding="utf-8")
    async with run_service() as svc:
        await kb.ingest_files(svc.app.store, "default", [doc])
        kw = {"client_time": RAMADAN_NATIONAL_DAY, "timezone": "Asia/Kuwait"}
        greeting = await _Thread(svc, "u1", "KW", **kw).say("مرحبا")
        ordering = _Thread(svc, "u2", "KW", **kw)
        order = await ordering.say("ابي ارجع طلبي")
        question = await _Thread(svc, "u3", "KW", **kw).say("السلام عليكم، متى الدوام عندكم؟")
    for reply in (greeting, order, question):
        assert "رمضان" in reply and "الوطني" in reply
    regions = ("gulf", "iraqi", "egyptian", "levantine", "maghrebi", "msa", "neutral")
    assert any(greeting.endswith(SAY("how_can_i_help", r)) for r in regions)
    assert ordering.voice in {"gulf", "neutral"}
    assert order.endswith(SAY("ask_order_number", ordering.voice))
    assert "من الأحد إلى الخميس" in question


async def test_i_dont_know_comes_with_a_next_step(run_service) -> None:
    async with run_service() as svc:
        reply = await _Thread(svc, "u1", "KW").say("وش سعر الاشتراك الذهبي عندكم؟")  # وش: Gulf
    assert reply == SAY("dont_know", "gulf")
    assert "أخمّن" not in reply and "نحوّلكم" in reply  # not a refusal: it offers a way on


async def test_complaint_without_an_answer_offers_a_person(run_service) -> None:
    async with run_service() as svc:
        lebanese = _Thread(svc, "u1", "LB")
        app = await lebanese.say("عندي مشكلة بالتطبيق ما عم يفتح")
        kuwaiti = _Thread(svc, "u2", "KW")
        late = await kuwaiti.say("الطلب متأخر وما وصلني لليوم")
    assert lebanese.voice in {"levantine", "neutral"}
    assert SAY("offer_person", lebanese.voice) in app
    # An order complaint without its number: sorry, the question, and a person.
    v = kuwaiti.voice
    assert v in {"gulf", "neutral"}
    assert late == " ".join((SAY("sorry", v), SAY("ask_order_number", v), SAY("offer_person", v)))


async def test_the_model_sees_the_threads_order_number(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.push(ScriptedReply.text("أبشر، بتابع طلبك."))
    openai_server.push(ScriptedReply.text("طلبك رقم 48213 في الطريق."))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        t = _Thread(svc, "u1", "KW")
        await t.say("طلبي رقم 48213 ما وصل")
        await t.say("وين صار طلبي؟")
    first = openai_server.bodies[0]["messages"][0]["content"]
    system = openai_server.bodies[1]["messages"][0]["content"]
    assert "48213" in system
    assert "لا تدّعِ اسمًا غيره" in system  # the persona's name only
    assert "اطلب منه رقم الطلب" not in first  # the number came with the complaint
    assert "tool_call" not in kinds(t.events)


async def test_the_model_is_told_to_ask_for_a_missing_order_number(
    run_service, openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.push(ScriptedReply.text("أبشر، عطني رقم الطلب."))
    async with run_service(model_base_url=openai_server.base_url,
                           tenants={"default": {"persona_name": ""}}) as svc:
        await _Thread(svc, "u1", "KW").say("ابي ارجع طلبي")
    system = openai_server.bodies[0]["messages"][0]["content"]
    assert "اطلب منه رقم الطلب" in system
    assert "ليس لك اسم" in system

"""Majlis scenarios over gRPC, with the caller's client_time and country."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import pytest

from tests.service.conftest import collect, kinds

# 2027-02-25 09:00 in Kuwait: 18 Ramadan 1448 and Kuwait's National Day.
KW_NATIONAL_DAY_IN_RAMADAN = datetime(2027, 2, 25, 6, 0, tzinfo=UTC)
ORDINARY_MORNING = datetime(2026, 11, 2, 6, 0, tzinfo=UTC)  # a Monday, no season


@pytest.fixture
def backend() -> str:
    # Scenarios exercise the conversation, not storage; the storage-sensitive
    # behaviour runs against both backends in test_turns.py.
    return "sqlite"


def reply(events: list) -> str:
    return events[-1].turn_completed.text


def phases(events: list) -> list[str]:
    return [e.phase_changed.current for e in events if e.HasField("phase_changed")]


async def test_greeting_and_complaint_in_one_message(run_service) -> None:
    async with run_service() as svc:
        events = await collect(svc.client.send(
            "السلام عليكم، عندي مشكلة في الحساب ما اقدر ادخل", user_id="u1",
            client_time=ORDINARY_MORNING, country="SA", timezone="Asia/Riyadh"))
    text = reply(events)
    assert text.startswith("وعليكم السلام")  # the greeting is returned, briefly, first
    assert len(text) > len("وعليكم السلام ورحمة الله وبركاته") + 5  # …and the business follows
    assert events[-1].turn_completed.phase == "transaction"


async def test_mobile_app_problem_is_a_request_not_a_farewell(run_service) -> None:
    async with run_service() as svc:
        events = await collect(svc.client.send("عندي مشكلة في تطبيق الموبايل", user_id="u1",
                                               client_time=ORDINARY_MORNING, country="KW"))
    assert events[-1].turn_completed.phase == "transaction"
    assert "farewell" not in phases(events)
    assert "أمان الله" not in reply(events) and "مع السلامة" not in reply(events)


async def test_ramadan_and_national_day_at_once(run_service) -> None:
    async with run_service() as svc:
        events = await collect(svc.client.send(
            "السلام عليكم", user_id="u1", client_time=KW_NATIONAL_DAY_IN_RAMADAN, country="KW",
            timezone="Asia/Kuwait"))
        other = await collect(svc.client.send(
            "السلام عليكم", user_id="u2", client_time=KW_NATIONAL_DAY_IN_RAMADAN, country="EG",
            timezone="Africa/Cairo"))
    text = reply(events)
    assert "رمضان" in text or "الشهر" in text
    assert "الوطني" in text
    assert "الوطني" not in reply(other)  # national days follow the caller's country
    assert "رمضان" in reply(other) or "الشهر" in reply(other)


async def test_ramadan_kareem_is_answered_allahu_akram(run_service) -> None:
    async with run_service() as svc:
        events = await collect(svc.client.send(
            "رمضان كريم", user_id="u1", client_time=datetime(2027, 2, 12, 18, tzinfo=UTC),
            country="AE", timezone="Asia/Dubai"))
    assert "الله أكرم" in reply(events)


async def test_thanks_and_farewell_close_the_cycle_and_next_message_opens_one(run_service
                                                                             ) -> None:
    t = ORDINARY_MORNING
    async with run_service() as svc:
        first = await collect(svc.client.send("هلا والله", user_id="u1", client_time=t))
        thread = first[-1].thread_id
        business = await collect(svc.client.send(
            "ابي اعرف وين طلبي", user_id="u1", thread_id=thread,
            client_time=t + timedelta(minutes=1)))
        bye = await collect(svc.client.send(
            "مشكور، مع السلامة", user_id="u1", thread_id=thread,
            client_time=t + timedelta(minutes=2)))
        again = await collect(svc.client.send(
            "السلام عليكم", user_id="u1", thread_id=thread, client_time=t + timedelta(minutes=3)))
    assert phases(first) == ["greeting"]
    assert business[-1].turn_completed.phase == "transaction"
    assert bye[-1].turn_completed.phase == "farewell"
    assert any(w in reply(bye) for w in ("أمان الله", "الله يسلمك", "العفو", "مع السلامة"))
    changed = [e.phase_changed for e in again if e.HasField("phase_changed")]
    assert changed and changed[0].new_cycle and changed[0].previous == "farewell"
    assert reply(again).startswith("وعليكم السلام")


async def test_long_gap_opens_a_new_cycle(run_service) -> None:
    async with run_service() as svc:
        first = await collect(svc.client.send("ابي اعرف وين طلبي", user_id="u1",
                                              client_time=ORDINARY_MORNING))
        later = await collect(svc.client.send(
            "ابي اعرف وين طلبي", user_id="u1", thread_id=first[-1].thread_id,
            client_time=ORDINARY_MORNING + timedelta(days=2)))
    changed = [e.phase_changed for e in later if e.HasField("phase_changed")]
    assert changed and changed[0].new_cycle


@pytest.mark.parametrize("when", [datetime(1900, 1, 1, tzinfo=UTC),
                                  datetime(2090, 6, 1, tzinfo=UTC)])
async def test_client_time_outside_the_calendar_is_invalid(run_service, when: datetime) -> None:
    async with run_service() as svc:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await collect(svc.client.send("السلام عليكم", user_id="u1", client_time=when))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "1924" in err.value.details() and "2077" in err.value.details()


async def test_arabizi_greeting_gets_arabic_reply(run_service) -> None:
    async with run_service() as svc:
        events = await collect(svc.client.send("salam alaikum, shlonak?", user_id="u1",
                                               client_time=ORDINARY_MORNING))
    assert events[-1].turn_completed.script == "arabizi"
    assert "وعليكم السلام" in reply(events)
    assert kinds(events)[-1] == "turn_completed"


async def test_tenants_have_their_own_voice_and_national_days(run_service) -> None:
    from service import DiwaniyaClient

    tenants = {
        "bank": {"register_policy": "msa", "persona_name": "مساعد البنك",
                 "national_days": {"KW": [[11, 2, "يوم المؤسسة"]]}},
    }
    async with run_service(api_keys={"k-bank": "bank", "k-shop": "shop"},
                           tenants=tenants) as svc:
        async with DiwaniyaClient(svc.target, api_key="k-bank") as bank, \
                DiwaniyaClient(svc.target, api_key="k-shop") as shop:
            b = await collect(bank.send("السلام عليكم", user_id="u1", country="KW",
                                        client_time=ORDINARY_MORNING))
            s = await collect(shop.send("السلام عليكم", user_id="u1", country="KW",
                                        client_time=ORDINARY_MORNING))
    assert "يوم المؤسسة" in reply(b)  # the bank's own national-day table
    assert "يوم المؤسسة" not in reply(s)


async def test_country_settles_an_ambiguous_greeting_but_not_a_clear_dialect(run_service
                                                                            ) -> None:
    async with run_service() as svc:
        kw = await collect(svc.client.send("صباح الخير", user_id="u1", country="KW",
                                           client_time=ORDINARY_MORNING))
        eg = await collect(svc.client.send("ازيك يا باشا، عايز اعرف الطلب بتاعي فين",
                                           user_id="u2", country="KW",
                                           client_time=ORDINARY_MORNING))
    assert kw[-1].turn_completed.dialect == "gulf"
    assert reply(kw).startswith("صباح النور")
    assert eg[-1].turn_completed.dialect == "egyptian"

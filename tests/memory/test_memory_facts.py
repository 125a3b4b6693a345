"""Rule-based fact extraction from the user's own words, across dialects."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from memory import Kind, MemoryStore, NewRecord
from memory.facts import FactExtractor, RuleFactExtractor, mask_number

X: FactExtractor = RuleFactExtractor()


def slots(text: str) -> list[tuple[str, str]]:
    return [(f.slot, f.value) for f in X.extract(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("هلا والله، انا اسمي محمد", [("name", "محمد")]),  # Gulf
        ("اسمي عبد الله الحربي ورقم طلبي ٤٥٨٧٢١٣٩", [("name", "عبد الله الحربي"),
                                                   ("order_number", "****2139")]),
        ("إسمِي سارة", [("name", "سارة")]),  # hamza and kasra
        ("ازيك، انا اسمي منى وعايزة اعرف الاوردر فين", [("name", "منى")]),  # Egyptian
        ("مرحبا، اسمي رامي وبدي ساعدني بالفاتورة", [("name", "رامي")]),  # Levantine
        ("my name is Sara", [("name", "Sara")]),
        ("salam, esmi Ahmed w 3ayez arga3 el order", [("name", "Ahmed")]),  # Arabizi
        ("ناديني ابو فهد لو سمحت", [("address_as", "ابو فهد")]),
        ("تقدر تناديني بـ دكتور خالد", [("address_as", "دكتور خالد")]),
        ("please call me Abu Fahad", [("address_as", "Abu Fahad")]),
        ("اسمي ايه؟", []),  # Egyptian "what is my name?" asks, it gives no name
        ("شنو اسمي؟", []),
    ],
)
def test_names_and_forms_of_address(text: str, expected: list[tuple[str, str]]) -> None:
    assert slots(text) == expected


@pytest.mark.parametrize(
    ("text", "slot", "masked"),
    [
        ("رقم الطلب 98127733", "order_number", "****7733"),
        ("order #88213921 still not here", "order_number", "****3921"),
        ("رقم حسابي: ١٢٣٤-٥٦٧٨-٩٠١٢", "account_number", "****9012"),
        ("ابغى استرجع الطلب رقم 992871", "order_number", "****2871"),
        ("رقم جوالي 0551234567 اتصلوا علي", "phone_number", "****4567"),
        ("شو صار بالأوردر؟ رقم الاوردر ٥٥٤٤٣٣٢٢", "order_number", "****3322"),  # Levantine
    ],
)
def test_numbers_are_stored_masked_only(text: str, slot: str, masked: str) -> None:
    facts = [f for f in X.extract(text) if f.slot == slot]
    assert [f.value for f in facts] == [masked]
    digits = re.sub(r"\D", "", text.translate(str.maketrans("٠١٢٣٤٥٦٧٨٩", "0123456789")))
    for fact in facts:
        stored = fact.text + str(fact.to_record(tenant="t", user_id="u").metadata)
        assert digits[:-4] not in re.sub(r"\D", "", stored)  # the hidden part is really gone


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("افضل التواصل بالواتساب", [("contact_channel", "whatsapp")]),
        ("بدي تحكوا معي عالواتس مش اتصال", [("contact_channel", "whatsapp")]),
        ("ابغاكم تتواصلون معي على الايميل", [("contact_channel", "email")]),
        ("ابيكم تكلموني على الجوال مو واتساب", [("contact_channel", "phone")]),  # negated one
        ("عايز حد يكلمني بالانجليزي", [("language", "en")]),  # Egyptian
        ("نحب تبعثولي مسج", [("contact_channel", "sms")]),  # Maghrebi
        ("أفضّل المواعيد المسائية", [("preference", "المواعيد المسائية")]),
        ("ما احب الاتصال", [("preference", "ما احب الاتصال")]),
    ],
)
def test_preferences(text: str, expected: list[tuple[str, str]]) -> None:
    assert slots(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ابي اعرف وين طلبي",  # Gulf: a request, not a preference
        "عايز اعرف الاوردر بتاعي فين",  # Egyptian
        "شلونكم؟ وين صارت الشحنة",  # Iraqi
        "واش كاين شي تخفيض؟",  # Maghrebi
        "اسم المنتج مكتوب غلط",  # "اسم" but not "اسمي"
        "رقم 5 مو زين",  # short number, no cue
        "",
    ],
)
def test_no_facts_from_ordinary_requests(text: str) -> None:
    assert X.extract(text) == []


def test_mask_number_keeps_only_last_digits() -> None:
    assert mask_number("٩٨٧ ٦٥٤-٣٢١٠") == "****3210"
    assert mask_number("48213") == "****13"


async def test_restating_a_name_updates_the_same_fact(
    store: MemoryStore, tenants: Callable[[str], str]
) -> None:
    t = tenants("shop")
    [first] = X.extract("اسمي خالد")
    await store.put([first.to_record(tenant=t, user_id="u1", thread_id="th1")])
    [second] = X.extract("لا عفواً، اسمي فهد")
    await store.put([second.to_record(tenant=t, user_id="u1", thread_id="th2")])
    hits = await store.search(t, "اسمي", user_id="u1", kinds={Kind.FACT})
    assert [h.record.metadata["value"] for h in hits] == ["فهد"]
    assert hits[0].record.id == first.record_id("u1") == second.record_id("u1")


async def test_remember_then_recall_across_threads(
    store: MemoryStore, tenants: Callable[[str], str]
) -> None:
    from memory import recall, remember

    t = tenants("shop")
    await store.put([NewRecord(tenant=t, kind=Kind.DOCUMENT, id="kb#0", doc_id="kb",
                               text="سياسة الاسترجاع: خلال ١٤ يوماً مع الفاتورة.")])
    stored = await remember(store, X, tenant=t, user_id="u1", thread_id="th-1", turn_id="1",
                            message="هلا، ناديني ابو فهد ورقم طلبي 77120934")
    assert {r.metadata["slot"] for r in stored} == {"address_as", "order_number"}
    assert await remember(store, X, tenant=t, user_id="u1", message="شكراً") == []

    # A later thread: the facts come back without being asked for, the KB by query.
    got = await recall(store, t, "u1", "كم يوم عندي للاسترجاع؟")
    assert {f.text for f in got.user_facts} == {"ناديني ابو فهد", "رقم طلبي ****0934"}
    assert [h.record.id for h in got.documents] == ["kb#0"]
    assert (await recall(store, t, "u2", "الاسترجاع")).user_facts == []

    # DeleteThread erases what that thread taught us.
    assert await store.erase_thread(t, "th-1") == 2
    assert (await recall(store, t, "u1", "الاسترجاع")).user_facts == []


@pytest.mark.parametrize(
    ("text", "awaiting", "expected"),
    [
        ("طلبي رقم 48213 ما وصل", "", {"order_number": "48213"}),  # as typed, not masked
        ("رقم الاوردر ٥٥٤٤٣٣٢٢ ومحتاجه بكرة", "", {"order_number": "55443322"}),
        # Personal data (nlp.pii) is masked even in the thread: nothing raw is stored.
        ("ايميلي sara.k@example.com", "", {"email": "s***@example.com"}),
        ("رقم جوالي ٠٥٠١٢٣٤٥٦٧", "", {"phone_number": "****4567"}),
        ("48213", "order_number", {"order_number": "48213"}),  # the answer to our question
        ("رقمه ٤٨٢١٣", "order_number", {"order_number": "48213"}),
        ("48213", "", {}),  # a bare number nobody asked for means nothing
        ("ابي ارجع 3 قطع", "order_number", {}),
    ],
)
def test_thread_facts_keep_the_value_as_typed(text: str, awaiting: str,
                                              expected: dict[str, str]) -> None:
    from memory.facts import thread_facts

    assert thread_facts(text, awaiting=awaiting) == expected


def test_email_is_stored_masked() -> None:
    (fact,) = X.extract("ايميلي sara.k@example.com")
    assert (fact.slot, fact.value) == ("email", "s***@example.com")
    assert "sara.k" not in fact.text

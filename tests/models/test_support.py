"""Support rules on their own: which messages are order matters, which ask for a name."""

from __future__ import annotations

import pytest

from majlis.models import PhraseBook, ResponderContext
from majlis.models.support import advance, business_text, direct_reply, order_intent

BOOK = PhraseBook.load()


@pytest.mark.parametrize("text", [
    "وين صار طلبي؟",  # Gulf
    "ابغى ارجّع الجوال",  # Gulf
    "عايز ابدّل الموبايل",  # Egyptian
    "الأوردر بتاعي فين؟",  # Egyptian
    "بدي رجّع الطلبية",  # Levantine
    "بغيت نرجع الطلبية ديالي",  # Maghrebi
    "اريد الغي الطلب",  # Iraqi / MSA
    "salam, 3ayez arja3 el order",  # Arabizi
    "ابغى ارجّع الشاحن، كيف؟",  # a want, then how: still the customer's own return
])
def test_order_matters(text: str) -> None:
    assert order_intent(text)


@pytest.mark.parametrize("text", [
    "كم مدة الإرجاع؟",  # a policy question: the knowledge base's
    "عندي طلب توظيف",  # «طلب» = a request, not an order
    "متى الدوام عندكم؟",
    "الكود ما وصلني",  # a code, not a parcel
])
def test_not_order_matters(text: str) -> None:
    assert not order_intent(text, complaint=True)


@pytest.mark.parametrize("text", [
    "هل يمكن استبدال الجهاز بعد فتح العلبة؟",  # MSA: whether one may exchange
    "كيف استرجع المبلغ إذا نزل السعر؟",  # Gulf: how refunds work
    "واش نقدر نبدل الكارط القديمة بوحدة جديدة؟",  # Maghrebi: a card, not an order
    "الكرت رجعته يشتغل؟ شلون؟",  # Iraqi: making a card work again
])
def test_policy_questions_about_returns_and_cards_are_not_order_matters(text: str) -> None:
    # Even when the flow read the message as a request, a question about what may be
    # done is for the policy documents: it must not be answered with "your order number?".
    assert not order_intent(text, request=True)


def test_delivery_complaint_is_an_order_matter() -> None:
    assert order_intent("المندوب ما جا", complaint=True)


def test_a_number_in_an_order_request_is_the_order_number() -> None:
    turn = advance(None, "ابي ارجع 48213", complaint=False)
    assert turn.known == {"order_number": "48213"} and turn.state["awaiting"] == ""


def test_an_unrelated_bare_number_is_not_an_order_number() -> None:
    turn = advance(None, "48213", complaint=False)
    assert turn.known == {} and not turn.order_intent


def test_greeting_clauses_are_left_out_of_the_question() -> None:
    assert business_text("السلام عليكم، متى الدوام عندكم؟") == "متى الدوام عندكم؟"
    assert business_text("السلام عليكم") == "السلام عليكم"


@pytest.mark.parametrize(("text", "phrase"), [
    ("شنو اسمي؟", "user_name"), ("اسمي ايه؟", "user_name"), ("what's my name", "user_name"),
    ("شو اسمك؟", "bot_name"), ("مين انت؟", "bot_name"), ("وش رقم طلبي؟", "user_order_number"),
])
def test_questions_about_names_and_numbers(text: str, phrase: str) -> None:
    ctx = ResponderContext(user_text=text, region="gulf", persona="نورة",
                           known={"name": "أحمد", "order_number": "48213"})
    reply = direct_reply(ctx, lambda p, **s: BOOK.say(p, "gulf", **s))
    assert reply == BOOK.say(phrase, "gulf", name="أحمد", persona="نورة", order="48213")

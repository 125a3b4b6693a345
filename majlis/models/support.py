"""Support behaviours: order numbers asked for and reused, names answered honestly.

Two halves:

* :func:`advance` runs in the respond node for every turn (model or offline):
  it reads what the message gives (order number, name, phone, e-mail — as
  typed, via :func:`memory.facts.thread_facts`), merges it into what the thread
  already knows, and notes when an order matter still lacks its number, so the
  next message «48213» is read as the answer.
* :func:`direct_reply` and :func:`follow_up` are the offline responder's: a
  question about the customer's own name or order number is answered from the
  thread (never by quoting the customer's fact in the first person), the bot's
  name comes from the tenant persona only, and an order, return or complaint
  request without a number asks for it.

Example, Gulf thread: «طلبي رقم 48213 ما وصل» … «وين صار طلبي؟» →
«آسفين على اللي صار. بخصوص طلبك رقم 48213: …» — the number is reused, not re-asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import nlp
from majlis import culture
from majlis.models.qtypes import QuestionType, question_type
from majlis.models.types import Recalled, ResponderContext, ToolSpec
from memory.facts import answered_number, thread_facts

__all__ = ["ORDER", "SupportTurn", "advance", "business_text", "direct_reply", "follow_up",
           "known_arguments", "known_facts_ar", "model_policy", "order_intent",
           "policy_question"]

Say = Callable[..., str]

ORDER = "order_number"

# Matched on nlp.fold() text (alef/yeh/teh marbuta unified, ASCII digits, lower case).
_AR = "\u0621-\u064a"
_PROCLITIC = r"(?:[وفب]|وب|فب|لل|ول)?"
# The order itself: طلبي/الطلب/الاوردر/شحنتي/الطرد — never a bare «طلب» ("a request").
_ORDER_NOUNS = (r"طلب(?:ي|يتي|يه|ك|كم|ه|ات|اتي|يات)|الطلب(?:يه|ات|يات)?|(?:ال)?اوردر(?:ي)?|"
                r"شحنت(?:ي|ك)|(?:ال)?شحنه|(?:ال)?طرد(?:ي)?|مشترياتي")
_ORDER_NOUN = re.compile(rf"(?<![{_AR}]){_PROCLITIC}(?:{_ORDER_NOUNS})(?![{_AR}])"
                         r"|\b(?:order|orders|package|parcel|shipment|talab[iy]?)\b")
# Returning, exchanging, cancelling or refunding something bought, as a verb
# (ارجّع/رجّع/نرجع، استرجع، استبدل/بدّل/نبدل، استرد، ألغي; Arabizi arja3/raja3) …
_ACTION_VERB = re.compile(
    rf"(?<![{_AR}]){_PROCLITIC}(?:[انت]?رجع(?:ه|ها|و|هم)?|[انت]?سترجع(?:ه|ها|و)?|"
    rf"[انت]?ستبدل(?:ه|ها|و)?|[ان]بدل(?:ه|ها|و)?|[انت]?سترد|[ان]لغي)(?![{_AR}])"
    r"|\b(?:return|refund|exchange|cancel|arja3|arage3|raja3|nraja3|badel)\b"
)
# … or as a noun, which is an order matter only in a request («ابي استرجاع المبلغ»),
# not in a policy question («كم مدة الإرجاع؟» is for the knowledge base).
_ACTION_NOUN = re.compile(rf"(?<![{_AR}]){_PROCLITIC}(?:ال)?(?:ارجاع|ترجيع|مرتجع|استرجاع|"
                          rf"استبدال|تبديل|استرداد|الغاء)(?![{_AR}])|\bestebdal\b")
# Delivery words that make a complaint an order matter (a code that «ما وصل» is not).
_DELIVERY = re.compile(rf"(?<![{_AR}]){_PROCLITIC}(?:ال)?(?:مندوب|توصيل|شحن|طرد|شحنه)"
                       rf"(?![{_AR}])|\b(?:delivery|courier)\b")
_LOOSE_NUMBER = re.compile(r"(?<!\d)(\d{4,12})(?!\d)")
# Wanting: «ابي/ابغى/عايز/بدي/بغيت/اريد ارجع…» is a request even when it ends in «؟».
_WANT = re.compile(rf"(?<![{_AR}])[وف]?(?:ابي|ابغي|ابغا|نبي|نبغي|عايز|عاوز|عايزه|عاوزه|بدي|بدنا|"
                   rf"بغيت|بغينا|اريد|نريد|حاب|حابب|ودي)(?![{_AR}])"
                   r"|\b(?:abi|abgha|3ayez|3awez|baddi|bedi|bghit|areed|i want)\b")

_WHAT = r"(?:شنو|شو|وش|ايش|ايه|اي|واش|اش|شنهو|شسم|ما|ماهو|ما هو|ما هي|شني|شنهي)"
_USER_NAME_Q = re.compile(
    rf"(?<![{_AR}]){_WHAT}\s+(?:هو\s+)?اسمي(?![{_AR}])|(?<![{_AR}])اسمي\s+{_WHAT}(?![{_AR}])"
    rf"|(?<![{_AR}])(?:تعرف|تعرفي|عارف|عارفه|فاكر|تذكر|متذكر)\s+اسمي(?![{_AR}])"
    r"|\bwhat(?:'s| is) my name\b|\b(?:shno|shu|sho|wesh|esh) (?:esmi|ismi)\b|\besmi (?:eh|eih)\b"
)
_BOT_NAME_Q = re.compile(
    rf"(?<![{_AR}]){_WHAT}\s+(?:هو\s+)?اسمك(?![{_AR}])|(?<![{_AR}])اسمك\s+{_WHAT}(?![{_AR}])"
    rf"|(?<![{_AR}])(?:مين|منو|من|شكون|مينك)\s+(?:انت|انتي|انتا|نتا|نتي|حضرتك)(?![{_AR}])"
    r"|\bwhat(?:'s| is) your name\b|\bwho are you\b|\b(?:shno|shu|sho|wesh|esh) (?:esmak|ismak)\b"
)
_ORDER_NUMBER_Q = re.compile(
    rf"(?<![{_AR}]){_WHAT}\s+(?:هو\s+)?رقم\s+(?:طلبي|الطلب|اوردري|الاوردر|شحنتي)(?![{_AR}])"
)
_NAME_FACT = re.compile(r"^\s*(?:انا\s+)?[اأإ]سمي\s+(?P<name>.+?)\s*$")


def order_intent(text: str, *, complaint: bool = False, request: bool = False) -> bool:
    """An order, a return/exchange/cancellation, or a delivery complaint.

    >>> order_intent("وين صار طلبي؟"), order_intent("ابغى ارجّع الجوال")
    (True, True)
    >>> order_intent("عندي طلب توظيف"), order_intent("الكود ما وصلني", complaint=True)
    (False, False)
    >>> order_intent("كم مدة الإرجاع؟"), order_intent("ابي استرجاع المبلغ", request=True)
    (False, True)
    """
    folded = nlp.fold(text)
    if _ORDER_NOUN.search(folded):
        return True
    if policy_question(text):
        # «واش نقدر نبدل la puce بـ eSIM؟», «ما المهلة لطلب استرداد فرق السعر؟»: asking
        # *whether/how/when* one may return or exchange is a question for the policy
        # documents, not an order matter, unless an order is named or wanted.
        return complaint and _DELIVERY.search(folded) is not None
    if _ACTION_VERB.search(folded):
        return True
    if request and _ACTION_NOUN.search(folded):
        return True
    return complaint and _DELIVERY.search(folded) is not None


def policy_question(text: str) -> bool:
    """A question about what may be done, without a want: «كيف استرجع المبلغ؟»,
    «واش نقدر نرجعها تخدم؟», «ما المهلة المتاحة لطلب الاسترداد؟» — but not
    «ابغى ارجّع الجوال» (a request) nor «بدي رجّعه، كيف؟» (wanted).

    >>> policy_question("واش نقدر نبدل la puce؟"), policy_question("ابغى ارجع الجوال؟")
    (True, False)
    """
    folded = nlp.fold(text)
    if _WANT.search(folded):
        return False
    return "؟" in text or "?" in text or question_type(text) is not QuestionType.OTHER


_CLAUSE = re.compile(r"[،,.!؛;\n]+")


def business_text(text: str) -> str:
    """The message without the greeting clauses before its business, for answering:
    «السلام عليكم، متى الدوام عندكم؟» → 'متى الدوام عندكم؟' (the greeting is answered
    by the opening; left in, its words would dilute the knowledge-base match)."""
    clauses = [c.strip() for c in _CLAUSE.split(text) if c.strip()]
    dropped = 0
    while len(clauses) - dropped > 1:
        cues = culture.read_cues(clauses[dropped])
        if not cues.greeted or cues.business:
            break
        dropped += 1
    return " ".join(clauses[dropped:]) if dropped else text


@dataclass(frozen=True, slots=True)
class SupportTurn:
    """What the respond node passes on: the thread's facts and the open order matter."""

    known: dict[str, str]  # slot → value as typed (order_number, name, phone_number, email…)
    order_intent: bool  # this turn is about an order (or answers our question about one)
    pending_request: str  # the request this bare answer completes ("" otherwise)
    state: dict[str, Any]  # the thread's new ``support`` field (committed by remember)


def advance(previous: Mapping[str, Any] | None, text: str, *, complaint: bool,
            request: bool = False) -> SupportTurn:
    """Merge this message into the thread's support state.

    >>> t1 = advance(None, "ابي ارجع طلبي", complaint=False)
    >>> t1.state["awaiting"]
    'order_number'
    >>> t2 = advance(t1.state, "48213", complaint=False)
    >>> t2.known, t2.pending_request
    ({'order_number': '48213'}, 'ابي ارجع طلبي')
    """
    prev = dict(previous or {})
    prior_known: dict[str, str] = dict(prev.get("known") or {})
    awaiting = str(prev.get("awaiting") or "")
    given = thread_facts(text, awaiting=awaiting)
    answered = bool(awaiting) and awaiting in given and answered_number(text) is not None
    intent = order_intent(text, complaint=complaint, request=request)
    if intent and ORDER not in given:
        loose = [n for n in _LOOSE_NUMBER.findall(nlp.fold(text))
                 if n not in given.values()]
        if loose:
            given[ORDER] = loose[0]  # «ابي ارجع 48213»: the number is the order's
    known = {**prior_known, **given}
    pending = str(prev.get("pending") or "") if answered else ""
    intent = intent or answered
    need = intent and ORDER not in known
    state = {"known": known, "awaiting": ORDER if need else "",
             "pending": text if need else ""}
    return SupportTurn(known=known, order_intent=intent, pending_request=pending, state=state)


_FACT_LABELS_AR = {"order_number": "رقم الطلب", "name": "اسم العميل",
                   "phone_number": "رقم الجوال", "email": "البريد الإلكتروني",
                   "account_number": "رقم الحساب", "invoice_number": "رقم الفاتورة",
                   "reference_number": "رقم مرجعي"}


def known_facts_ar(known: Mapping[str, str]) -> list[str]:
    """The thread's facts for the model prompt: ``{"order_number": "48213"}`` →
    ``['رقم الطلب (ذكره العميل في هذه المحادثة): 48213']``."""
    return [f"{_FACT_LABELS_AR.get(k, k)} (ذكره العميل في هذه المحادثة): {v}"
            for k, v in known.items() if v]


def model_policy(*, persona: str, order_missing: bool) -> str:
    """The same support rules, told to a configured model (its system prompt's policy)."""
    name = (f"- اسمك «{persona}» فقط؛ لا تدّعِ اسمًا غيره." if persona
            else "- ليس لك اسم: لا تدّعِ اسمًا لنفسك.")
    lines = [
        "سياسة الدعم:",
        name,
        "- إذا سأل العميل عن اسمه فأجبه بصيغة المخاطب («اسمك …») من المعلومات المحفوظة.",
        "- تهنئة المناسبة (رمضان، العيد، اليوم الوطني) قد تفتتح الرد، لكنها لا تغني أبدًا"
        " عن الجواب أو الخطوة التالية.",
        "- إن لم تجد الجواب فلا ترفض: اقترح خطوة تالية (توضيح السؤال أو التحويل إلى موظف).",
        "- رقم الطلب والاسم وبيانات التواصل المذكورة في المحادثة استخدمها ولا تسأل عنها مجددًا.",
    ]
    if order_missing:
        lines.append("- العميل يتكلم عن طلب ولم يذكر رقمه بعد: اطلب منه رقم الطلب.")
    return "\n".join(lines)


def known_arguments(spec: ToolSpec, known: Mapping[str, str]) -> dict[str, Any]:
    """Tool arguments the thread already knows: an ``order_id`` from the order number
    given two turns ago, so «وين صار طلبي؟» calls ``order_status`` without re-asking."""
    order = known.get(ORDER)
    if not order:
        return {}
    out: dict[str, Any] = {}
    props: Mapping[str, Any] = spec.parameters.get("properties", {})
    for name, prop in props.items():
        description = str(prop.get("description") or "")
        if re.search(r"order|tracking", name, re.I) or "طلب" in description:
            kind = prop.get("type")
            out[name] = int(order) if kind == "integer" and order.isdigit() else order
    return out


def _user_name(ctx: ResponderContext) -> str | None:
    name = ctx.known.get("name")
    if name:
        return name
    for fact in _facts(ctx.recalled):
        m = _NAME_FACT.match(fact.text)
        if m:
            return m["name"]
    return None


def _facts(recalled: Sequence[Recalled]) -> list[Recalled]:
    return [r for r in recalled if r.kind != "document"]


def direct_reply(ctx: ResponderContext, say: Say) -> str | None:
    """A question about the customer's own name or order number, or the bot's name.

    >>> from majlis.models.phrases import PhraseBook
    >>> book = PhraseBook.load()
    >>> ctx = ResponderContext(user_text="شنو اسمي؟", region="iraqi", known={"name": "احمد"})
    >>> direct_reply(ctx, lambda p, **s: book.say(p, "iraqi", **s)).split(".")[0]
    'اسمك احمد'
    """
    folded = nlp.fold(ctx.user_text)
    if _USER_NAME_Q.search(folded):
        name = _user_name(ctx)
        return say("user_name", name=name) if name else say("user_name_unknown")
    if _BOT_NAME_Q.search(folded):
        # Never invent a name: only the tenant's persona gives the bot one.
        return say("bot_name", persona=ctx.persona) if ctx.persona else say("bot_no_name")
    if _ORDER_NUMBER_Q.search(folded):
        order = ctx.known.get(ORDER)
        return say("user_order_number", order=order) if order else say("ask_order_number")
    return None


def follow_up(ctx: ResponderContext, answer: str, *, answered: bool, say: Say) -> str:
    """The business part of an order matter: ask for the number, or reuse it.

    ``answer`` is what the knowledge base gave (``answered``) or the fallback line.
    """
    if not ctx.order_intent:
        return answer
    order = ctx.known.get(ORDER)
    sorry = say("sorry") if ctx.complaint else ""
    if not order:
        ask = say("ask_order_number")
        if answered:
            return _join(answer, ask)
        # A complaint we hold no answer for: sorry, the question, and a person.
        return _join(sorry, ask, say("offer_person") if sorry else "")
    if answered:
        noted = say("order_noted", order=order) if ctx.pending_request else ""
        return _join(noted, answer)
    # Nothing in the knowledge base: reuse the number and offer a person.
    return _join(sorry, say("order_followup", order=order))


def _join(*parts: str) -> str:
    return " ".join(p.strip() for p in parts if p and p.strip())

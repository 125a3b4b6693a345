"""The phase machine over real messages: GREETING → SOCIAL → TRANSACTION → FAREWELL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from majlis.culture import Cues, Phase, PhaseStep, next_phase, read_cues

MINUTE = timedelta(minutes=1)


def run(messages: list[str], *, gap: timedelta = MINUTE) -> list[PhaseStep]:
    steps, phase = [], None
    for text in messages:
        step = next_phase(phase, read_cues(text), since_last=None if phase is None else gap)
        steps.append(step)
        phase = step.current
    return steps


def test_full_cycle_in_order() -> None:
    steps = run(["السلام عليكم", "شلونك؟", "الحمد لله، ابي اغير الباقة", "الباقة الذهبية",
                 "مشكور، مع السلامة"])
    assert [s.current for s in steps] == [Phase.GREETING, Phase.SOCIAL, Phase.TRANSACTION,
                                         Phase.TRANSACTION, Phase.FAREWELL]
    assert steps[0].new_cycle and not any(s.new_cycle for s in steps[1:])
    assert [s.changed for s in steps] == [True, True, True, False, True]


@pytest.mark.parametrize("text", [
    "هلا، عندي مشكلة في الحساب",
    "السلام عليكم، متى يوصل طلبي؟",
    "ازيك، عايز اغير الباقة",
    "مرحبا، بدي احكي مع موظف",
    "salam, 3ayez a3raf el fatoora",
])
def test_greeting_plus_request_is_a_transaction(text: str) -> None:
    (step,) = run([text])
    assert step.current is Phase.TRANSACTION
    assert step.new_cycle


def test_mobile_app_problem_is_a_transaction_not_a_farewell() -> None:
    steps = run(["السلام عليكم", "عندي مشكلة في تطبيق الموبايل"])
    assert steps[-1].current is Phase.TRANSACTION


def test_thanks_closes_and_next_message_opens_a_new_cycle() -> None:
    steps = run(["ابي اعرف رصيدي", "تسلم", "السلام عليكم"])
    assert [s.current for s in steps] == [Phase.TRANSACTION, Phase.FAREWELL, Phase.GREETING]
    assert steps[2].new_cycle and steps[2].previous is Phase.FAREWELL


def test_request_after_farewell_opens_a_new_cycle_as_transaction() -> None:
    steps = run(["مع السلامة", "نسيت، ابي اغير العنوان"])
    assert steps[1].new_cycle
    assert steps[1].current is Phase.TRANSACTION


def test_thanks_with_a_new_request_stays_in_business() -> None:
    steps = run(["ابي اعرف رصيدي", "شكرا، وعندي سؤال ثاني: كم رسوم التحويل؟"])
    assert steps[1].current is Phase.TRANSACTION


def test_long_gap_opens_a_new_cycle() -> None:
    long_gap = next_phase(Phase.TRANSACTION, read_cues("هلا"), since_last=timedelta(hours=7))
    assert long_gap.new_cycle and long_gap.current is Phase.GREETING
    short_gap = next_phase(Phase.TRANSACTION, read_cues("هلا"), since_last=timedelta(hours=1))
    assert not short_gap.new_cycle and short_gap.current is Phase.TRANSACTION
    custom = next_phase(Phase.SOCIAL, read_cues("هلا"), since_last=timedelta(minutes=40),
                        long_gap=timedelta(minutes=30))
    assert custom.new_cycle


def test_phase_never_moves_backwards_within_a_cycle() -> None:
    steps = run(["ابي احجز موعد", "صباح الخير", "تمام"])
    assert [s.current for s in steps] == [Phase.TRANSACTION] * 3


def test_small_talk_after_greeting_is_social() -> None:
    steps = run(["مساء الخير", "الحمد لله تمام"])
    assert [s.current for s in steps] == [Phase.GREETING, Phase.SOCIAL]


def test_phase_values_match_event_strings() -> None:
    assert [p.value for p in Phase] == ["greeting", "social", "transaction", "farewell"]
    assert Phase("farewell") is Phase.FAREWELL


_ORDER = [Phase.GREETING, Phase.SOCIAL, Phase.TRANSACTION, Phase.FAREWELL]


@given(
    current=st.sampled_from([None, *Phase]),
    flags=st.fixed_dictionaries({name: st.booleans() for name in (
        "wellbeing", "thanks", "farewell", "request", "question", "complaint", "insistence")}),
    greeted=st.booleans(),
    gap_minutes=st.integers(min_value=0, max_value=24 * 60),
)
def test_phase_invariants(current: Phase | None, flags: dict[str, bool], greeted: bool,
                          gap_minutes: int) -> None:
    cues = Cues(
        openers=("salam",) if greeted or flags["wellbeing"] else (),
        wellbeing=flags["wellbeing"], thanks=flags["thanks"], farewell=flags["farewell"],
        request=flags["request"], question=flags["question"], complaint=flags["complaint"],
        insistence=flags["insistence"],
    )
    step = next_phase(current, cues, since_last=timedelta(minutes=gap_minutes))
    # A request is never dropped.
    if cues.business:
        assert step.current is Phase.TRANSACTION
    # Within a cycle the phase never moves backwards.
    if not step.new_cycle:
        assert current is not None
        assert _ORDER.index(step.current) >= _ORDER.index(current)
    # A cycle restarts exactly after a farewell, a first message or a long gap.
    assert step.new_cycle == (current in (None, Phase.FAREWELL) or gap_minutes >= 6 * 60)

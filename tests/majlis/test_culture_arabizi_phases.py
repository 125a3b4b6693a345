"""A greeting plus a request in Arabizi or mixed script is business: TRANSACTION."""

from __future__ import annotations

import pytest

from majlis.culture import Phase, next_phase, read_cues
from majlis.culture.phrase_match import arabizi_skeleton


@pytest.mark.parametrize("text", [
    "salam 3alaykom, 3andi moshkila",          # Gulf/Levantine Arabizi: a problem
    "hi, عندي مشكلة بالطلب",                   # English greeting, Arabic complaint
    "salam, bghit nbdel l'commande",           # Maghrebi: I want to change the order
    "marhaba, badde ghayyer el bake2a",        # Levantine: I want to change the plan
    "salam, wen talabi?",                      # where is my order
    "ahlan, el app mesh sha8al",               # Egyptian: the app does not work
    "hello, ابي اغير رقم الجوال",               # mixed: I want to change the number
    "slm, 3andi mochkil f l'compte",           # Maghrebi French spelling of مشكل
])
def test_greeting_plus_request_reaches_transaction(text: str) -> None:
    cues = read_cues(text)
    assert cues.greeted, text
    assert cues.business, text
    assert next_phase(None, cues, since_last=None).current is Phase.TRANSACTION


@pytest.mark.parametrize(("text", "phase"), [
    ("salam 3alaykom", Phase.GREETING),
    ("marhaba", Phase.GREETING),
    ("hi", Phase.GREETING),
])
def test_a_bare_arabizi_greeting_stays_a_greeting(text: str, phase: Phase) -> None:
    assert next_phase(None, read_cues(text), since_last=None).current is phase


def test_skeletons_join_spellings_but_not_short_words() -> None:
    assert arabizi_skeleton("mushkila") == arabizi_skeleton("mochkila") == "mshkl"
    assert arabizi_skeleton("hi") == arabizi_skeleton("abi") == ""
    # A greeting word's skeleton is not a business cue.
    assert not read_cues("marhaba, shukran").business

"""The grounding bars' second look without the words that frame a question (session 12).

A chunk that lacks only a dialect question's function words («يصير», «معاي»,
«عادي»: majlis/models/data/function_words.tsv), or an MSA question's frame verb
(«يقع», «يستغرق») beside a sentence carrying the type asked, is about what was
asked: the bars look again without those words (Answer.without_framing).  A chunk
that lacks a word naming a thing («كلب», «الدراجة», «المدير») still abstains.
Questions and policies written for these tests (a gym's guests and cards, no
support set covers them), not taken from bench/data.
"""

from __future__ import annotations

from importlib import resources

import pytest
from _kb_answers import doc, kb_reply

import nlp
from majlis.models.answers import select_answer
from majlis.models.concepts import concepts_words, framing_concept, function_words
from nlp.keys import stop_keys_for

KEYS = nlp.search_keys
STOP = stop_keys_for(KEYS)
REGIONS = ("gulf", "egyptian", "levantine", "maghrebi", "iraqi")


GUESTS = doc("guests", "الضيوف",
             "يحق للمشترك إحضار ضيف واحد مجانا كل شهر. "
             "يدفع الضيف الإضافي 30 ريالا عن الزيارة.", 5.0)
HOURS = doc("hours", "أوقات الصالة",
            "تفتح الصالة من 6 صباحا حتى 11 مساء. "
            "مكتب خدمة المشتركين في الطابق الأول.", 3.0)
CARDS = doc("cards", "بطاقة العضوية",
            "يمكن إلغاء الاشتراك من التطبيق في أي وقت. "
            "تجديد بطاقة العضوية التالفة برسوم 25 ريالا.", 4.0)


# The knowledge base of most questions below.
GYM = (GUESTS, HOURS)


# -- the data -----------------------------------------------------------------------------

def test_the_list_covers_the_five_regions_and_arabizi() -> None:
    text = resources.files("majlis.models").joinpath("data/function_words.tsv").read_text("utf-8")
    regions: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        word, where, gloss = line.split("\t")
        assert " " not in word and gloss, line  # one word, and what it is
        for region in where.split(","):
            regions[region] = regions.get(region, 0) + 1
    assert set(regions) <= {*REGIONS, "arabizi", "all"}
    assert all(regions.get(r, 0) >= 15 for r in REGIONS), regions
    assert regions.get("arabizi", 0) >= 10


@pytest.mark.parametrize("word", [
    # one per region: modal, genitive, preposition with pronoun, complementiser, tag
    "يمديني", "بتاعي", "معايا", "تبعي", "انو", "ديالي", "خاصني", "مالتي", "وياي", "عادي",
])
def test_function_words_of_every_region_are_listed(word: str) -> None:
    assert word in function_words()


@pytest.mark.parametrize("word", [
    # words that also name a thing in MSA stay out: money, right, second, hand, kit
    "مال", "حق", "ثاني", "ايد", "عده", "رسوم", "ضيف", "احد",
])
def test_words_that_name_things_are_not_listed(word: str) -> None:
    assert word not in function_words()


def test_a_proclitic_is_cut_from_the_question_never_from_the_entry() -> None:
    # Egyptian: «وعادي» is «و» + «عادي»; «بتوع» is an entry as written, not «ب» + «توع»
    found = concepts_words("وعادي نجيب الضيوف بتوع الشغل؟", KEYS, STOP, nlp.dialect_to_msa,
                           dialect=True)
    framed = {c[2]: framing_concept(c, dialect=True, typed=False) for c in found}
    # A concept's words are as written; «وعادي» is read as «عادي» too (qtypes.in_vocab).
    assert framed == {("وعادي",): True, ("نجيب",): False, ("الضيوف",): False,
                      ("بتوع",): True, ("الشغل",): False}


def test_frame_verbs_are_set_aside_only_beside_a_typed_sentence() -> None:
    found = concepts_words("أين يقع مكتب المشتركين؟", KEYS, STOP, nlp.dialect_to_msa)
    frame = next(c for c in found if c[2] == ("يقع",))
    assert framing_concept(frame, dialect=False, typed=True)
    assert not framing_concept(frame, dialect=False, typed=False)


# -- answered now, refused before ------------------------------------------------------------

@pytest.mark.parametrize(("question", "fact"), [
    # Gulf: can I bring a guest with me?  («يصير», «معاي» framing; the policy says «يحق»)
    ("يصير اجيب ضيف معاي؟", "ضيف واحد مجانا"),
    # Gulf: am I able to bring a guest with me?
    ("يمديني اجيب ضيف معاي؟", "ضيف واحد مجانا"),
    # Levantine: can I bring a guest with me, is it all right?
    ("فيني جيب ضيف معاي عادي؟", "ضيف واحد مجانا"),
    # Levantine: can I bring a guest with me now?
    ("بقدر جيب ضيف معاي هلق؟", "ضيف واحد مجانا"),
    # MSA: where is the members' service office?  («يقع»: the place is the answer)
    ("أين يقع مكتب خدمة المشتركين؟", "الطابق الأول"),
])
def test_a_chunk_lacking_only_framing_words_answers(question: str, fact: str) -> None:
    reply, cited = kb_reply(question, GYM)
    assert cited, reply
    assert fact in reply


def test_the_second_look_is_what_answers() -> None:
    answer = select_answer("يصير اجيب ضيف معاي؟", [GUESTS, HOURS], keys=KEYS, stop=STOP,
                           expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)
    assert answer is not None and answer.without_framing is not None
    # «يصير» is bridged to the policy's «يحق»; «معاي» (with me) no policy writes
    assert answer.without_framing.set_aside == ("معاي",)
    assert answer.without_framing.grounding > answer.grounding


# -- still abstains ------------------------------------------------------------------------

@pytest.mark.parametrize("question", [
    # Egyptian: can I bring a dog with me, is it all right?  (no policy on dogs)
    "ينفع اجيب كلب معايا عادي؟",
    # Gulf: can I bring a child with me?
    "يصير اجيب طفل معاي؟",
    # Iraqi: can I bring my cat with me?
    "اكدر اجيب قطتي وياي؟",
    # Maghrebi: can I bring my bicycle with me?
    "نقدر نجيب الدراجة ديالي معايا؟",
    # MSA: where is the manager's office?  (the chunk names another office)
    "أين يقع مكتب المدير؟",
    # MSA: how long does getting a guest card take?  (no such card)
    "كم يستغرق الحصول على بطاقة الضيف؟",
])
def test_a_chunk_lacking_a_named_thing_still_abstains(question: str) -> None:
    reply, cited = kb_reply(question, GYM)
    assert not cited, reply


def test_a_frame_verb_is_kept_when_the_sentence_lacks_the_type() -> None:
    # «كم يستغرق إلغاء الاشتراك؟»: «يمكن إلغاء الاشتراك في أي وقت» says no duration,
    # so «يستغرق» is not set aside and the sentence is not served as the answer
    answer = select_answer("كم يستغرق إلغاء الاشتراك؟", [CARDS], keys=KEYS, stop=STOP,
                           expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)
    assert answer is not None and not answer.typed
    assert answer.without_framing is None
    reply, cited = kb_reply("كم يستغرق إلغاء الاشتراك؟", (CARDS, HOURS))
    assert not cited, reply


# -- a noun in ة with a possessive suffix («بطاقتي») is the noun («البطاقة») ------------------

LIBRARY_CARD = doc("library", "بطاقة المكتبة",
                   "تصدر البطاقة البديلة خلال 3 أيام عمل برسوم 10 ريالات. "
                   "تتجدد الفاتورة الشهرية في أول كل شهر.", 5.0)


@pytest.mark.parametrize("word,noun", [
    ("بطاقتي", "بطاقه"), ("فاتورتكم", "فاتور"), ("سيارته", "سيار"),
])
def test_a_possessed_noun_stands_for_the_noun(word: str, noun: str) -> None:
    found = concepts_words(f"متى تصل {word}؟", KEYS, STOP, None)
    assert any(noun in keys for keys, _plain, _words in found)


def test_a_possessed_noun_is_not_cut_into_another_word() -> None:
    # «بطاقتي» is not «ب» + «طاقة» (energy): only the whole word is restored
    found = concepts_words("متى تصل بطاقتي؟", KEYS, STOP, None)
    assert not any("طاقه" in keys for keys, _plain, _words in found)


def test_an_msa_question_about_my_card_is_answered() -> None:
    # MSA: how long does my replacement card take?  The policy says «البطاقة البديلة».
    reply, cited = kb_reply("كم يستغرق إصدار بطاقتي البديلة؟", (LIBRARY_CARD, HOURS))
    assert cited, reply
    assert "3 أيام" in reply

"""A noun's own first letter is not a proclitic (issue 10, gated answers).

qtypes.PROCLITIC cuts «و/ف/ب/ال» from any word with three letters after it, so
«فترة», «وثائق», «واحد», «وكالة» lost a letter of their own («تره», «ثايق», «احد»,
«كاله») and were never found in the vocabularies that read them.  Every lookup
now reads a word under both forms (qtypes.proclitic_forms / in_vocab), a
concept's words are the words as written, and the letter-held check counts each
form on its own length.  Also here: the Levantine ‑كن / Egyptian ‑كو function
words, and vocabularies written in the folded spelling fold_words produces.
Questions written for these tests, not taken from bench/data.
"""

from __future__ import annotations

import pytest

import majlis.models.concepts as concepts_module
import majlis.models.qtypes as qtypes_module
import nlp
from majlis.models import Citation, OfflineResponder, ResponderContext, ToolCallRequest
from majlis.models.concepts import (
    concepts_words,
    framing_concept,
    function_concept,
    function_words,
    held_by_letters,
)
from majlis.models.qtypes import (
    QuestionType,
    asks_duration,
    fold_words,
    in_vocab,
    proclitic_forms,
    question_type,
    type_strength,
)
from majlis.models.types import Recalled
from majlis.models.word_forms import with_skeletons
from nlp.keys import stop_keys_for

KEYS = nlp.search_keys
STOP = stop_keys_for(KEYS)


def _concepts(question: str, *, dialect: bool = True) -> list[concepts_module.Concept]:
    return concepts_words(question, KEYS, STOP, nlp.dialect_to_msa, dialect=dialect,
                          qtype=question_type(question))


def test_both_forms_are_kept() -> None:
    assert proclitic_forms("والرسوم") == ("والرسوم", "رسوم")
    assert proclitic_forms("باقه") == ("باقه", "اقه")  # the cut is kept, never alone
    assert proclitic_forms("كم") == ("كم",)
    assert in_vocab("فتره", frozenset({"فتره"})) and in_vocab("والمده", frozenset({"مده"}))


@pytest.mark.parametrize("question", ["ما فترة الضمان؟", "شو فترة السماح؟"])
def test_a_measure_noun_opening_with_fa_still_types_the_question(question: str) -> None:
    # «فترة» was read as «تره»: the what-question about a period was left untyped.
    assert question_type(question) is QuestionType.QUANTITY


def test_a_how_long_question_about_a_period_asks_a_duration() -> None:
    assert asks_duration("كم فترة الضمان على الغسالة؟")


def test_a_word_of_its_own_wa_is_no_subject_when_the_list_says_so() -> None:
    # Gulf: do you have just one branch?  «واحد» (one) names nothing; «احد» was unknown.
    plain = {c[2]: c[1] for c in _concepts("عندكم فرع واحد بس؟")}
    assert plain[("واحد",)] is False
    assert plain[("فرع",)] is True


def test_documents_opening_with_wa_frame_a_typed_answer() -> None:
    # «وثائق» (documents) is a measure noun, like «اوراق»; «ثايق» was none.
    found = _concepts("وين اسلم وثائق القبول؟", dialect=False)
    framed = {c[2]: framing_concept(c, dialect=False, typed=True) for c in found}
    assert framed[("وثايق",)] is True and framed[("القبول",)] is False


def test_the_letters_of_a_word_of_five_count_through_its_whole_form() -> None:
    # Iraqi «وكالة» (dealership) without its article, against «الوكالة»: the keys
    # are left out (set()), the letters decide.  «كاله» has four letters, under the
    # five the letter check needs; «وكاله» has five.
    chunk = Recalled("cars.md#0", "document", "cars › الصيانة",
                     "تتم صيانة السيارات الجديدة في الوكالة المعتمدة فقط.", "", 3.0)
    found = _concepts("وكالة شنو تصلح سيارتي؟")
    word = next(c for c in found if c[2] == ("وكاله",))
    assert held_by_letters([word], set(), chunk, True) == [True]


def test_a_sentence_word_keeps_its_own_root_beside_the_cut_one() -> None:
    # «وكالة»: the root of the word as written («^وكل») meets «الوكالة», «توكيل».
    loose = with_skeletons([], "وكالة", roots=True)
    assert "^وكل" in loose and "^وكل" in with_skeletons([], "الوكالة", roots=True)
    # An article's whole form is noise («الاهلي», «الهلال» → «~لهل»); an MSA question
    # keeps the ARCD-calibrated cut forms alone.
    assert "~لهل" not in with_skeletons([], "النادي الاهلي", roots=True)
    assert "~وكل" not in with_skeletons([], "وكالة")


@pytest.mark.parametrize("word", ["بدكن", "تبعكن", "الكن", "معكن", "بتاعكو", "عليكو"])
def test_second_person_plural_forms_are_function_words(word: str) -> None:
    assert word in function_words()


def test_a_levantine_want_you_is_a_function_concept() -> None:
    # «بدكن» (you want) was cut to «دكن», which named something unknown.
    found = _concepts("شو الاوراق اللي بدكن ياها؟")
    assert {c[2]: function_concept(c) for c in found}[("بدكن",)] is True


def test_minutes_in_a_sentence_answer_a_time_question() -> None:
    # «دقائق» folds to «دقايق»; the entry spelt with ئ never matched.
    assert type_strength("ينتهي الرمز بعد 10 دقائق.", QuestionType.TIME) == 1.0


def _vocabularies() -> list[tuple[str, str]]:
    out = []
    for module in (qtypes_module, concepts_module):
        for name, value in vars(module).items():
            sets = value.values() if isinstance(value, dict) else [value]
            for entries in sets:
                if isinstance(entries, frozenset):
                    out += [(name, w) for w in entries if isinstance(w, str)]
    return out


def test_every_vocabulary_entry_is_written_as_fold_words_reads_text() -> None:
    unfolded = [(name, w) for name, w in _vocabularies() if fold_words(w) != [w]]
    assert unfolded == []


# -- framing words written from the grammar (validated leave-one-set-out) -------------------

@pytest.mark.parametrize("word", ["ايلا", "ملي", "لين", "لحتى", "لمن", "راهو", "eza", "fel",
                                  "3al", "gher", "eh"])
def test_conditionals_temporal_conjunctions_and_arabizi_prepositions_are_listed(
        word: str) -> None:
    assert fold_words(word)[0] in function_words()


def test_manner_and_quantity_words_frame_a_dialect_question_only() -> None:
    # Iraqi: can I pay in instalments, or must it all be paid at once?
    found = _concepts("اكدر ادفع الفلوس على مراحل لو لازم كلها مرة وحدة؟")
    framed = {c[2]: framing_concept(c, dialect=True, typed=False) for c in found}
    assert framed[("كلها",)] and framed[("وحده",)]
    assert not framed[("مراحل",)]
    msa = _concepts("هل يمكن دفع الرسوم كلها مرة واحدة؟", dialect=False)
    assert not any(framing_concept(c, dialect=False, typed=False) for c in msa)


def test_a_chunk_lacking_only_once_and_all_answers_the_instalment_question() -> None:
    fees = Recalled("fees.md#0", "document", "fees › الرسوم الدراسية",
                    "يمكن دفع الرسوم الدراسية على 3 دفعات في السنة. "
                    "يدفع الطالب الجديد رسوم التسجيل عند القبول.", "", 4.0)
    bus = Recalled("bus.md#0", "document", "bus › الحافلات",
                   "تعمل الحافلات من 6 صباحا حتى 2 ظهرا.", "", 1.0)
    responder = OfflineResponder(keys=KEYS, expand=nlp.dialect_to_msa,
                                 dialect_cue=nlp.has_dialect_words)
    extras: list[Citation | ToolCallRequest] = []
    # Iraqi: how do I pay the fees, all at once?  The policy never says «كلها مرة وحدة».
    ctx = ResponderContext(user_text="شلون ادفع الرسوم، كلها مرة وحدة؟",
                           region="iraqi", is_request=True, recalled=(fees, bus))
    reply = responder._answer(ctx, extras)
    assert "3 دفعات" in reply and any(isinstance(e, Citation) for e in extras)

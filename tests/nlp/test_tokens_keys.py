"""tokenize, segment, words, search_keys, script detection, Arabizi."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlp import (
    Script,
    Token,
    TokenKind,
    arabizi_to_arabic,
    content_keys,
    detect_script,
    fold,
    search_keys,
    segment,
    stop_keys_for,
    tokenize,
    words,
)
from nlp.keys import split_function_words
from nlp.tokens import typed_texts


def test_tokenize_kinds_and_offsets() -> None:
    text = "شلونك @ali؟ شوف https://x.com/a #عروض_رمضان 7abibi ٣٥٠ ريال 😂👍🏽"
    toks = tokenize(text)
    assert [(t.text, t.kind) for t in toks] == [
        ("شلونك", TokenKind.WORD),
        ("@ali", TokenKind.MENTION),
        ("؟", TokenKind.PUNCT),
        ("شوف", TokenKind.WORD),
        ("https://x.com/a", TokenKind.URL),
        ("#عروض_رمضان", TokenKind.HASHTAG),
        ("7abibi", TokenKind.LATIN),
        ("٣٥٠", TokenKind.NUMBER),
        ("ريال", TokenKind.WORD),
        ("😂", TokenKind.EMOJI),
        ("👍🏽", TokenKind.EMOJI),
    ]
    for t in toks:
        assert text[t.start : t.end] == t.text


def test_tokenize_keeps_diacritics_inside_word() -> None:
    # SQLite FTS5's default tokenizer splits كَتَبَ into ك / ت / ب.
    assert [t.text for t in tokenize("كَتَبَ الوَلَدُ")] == ["كَتَبَ", "الوَلَدُ"]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_tokenize_offsets_always_slice_the_input(text: str) -> None:
    for t in tokenize(text):
        assert text[t.start : t.end] == t.text
        assert t.end > t.start


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("والكتاب", ["و", "ال", "كتاب"]),
        ("بالبيت", ["ب", "ال", "بيت"]),
        ("وبيقولها", ["و", "ب", "يقول", "ها"]),
        ("هيموت", ["ه", "يموت"]),
        ("قلبك", ["قلب", "ك"]),
        ("للاخر", ["ل", "ل", "اخر"]),
        # guarded whole words
        ("والد", ["والد"]),
        ("والي", ["والي"]),
        ("فيل", ["فيل"]),
        ("بلد", ["بلد"]),
        ("كلب", ["كلب"]),
        ("الو", ["الو"]),
        ("بدي", ["بدي"]),
        ("واللي", ["و", "اللي"]),
        # ب is a root letter (gold QCRI/PUD keep these whole); the host check
        # also protects their inflected forms
        ("بعدين", ["بعدين"]),
        ("بعدها", ["بعد", "ها"]),
        ("بينهم", ["بين", "هم"]),
        ("بغيتي", ["بغيتي"]),
        ("بده", ["بده"]),
        # … while the preposition / progressive ب is still split
        ("بكتابها", ["ب", "كتاب", "ها"]),
        ("وبالسياره", ["و", "ب", "ال", "سياره"]),
    ],
)
def test_segment(word: str, expected: list[str]) -> None:
    assert segment(word) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ابتثجحخدذرزسشصضطظعغفقكلمنهويء"), max_size=12))
def test_segment_segments_join_back(word: str) -> None:
    assert "".join(segment(word)) == word


def test_words_for_cue_matching() -> None:
    assert words("هلا، عندي مشكلة في الموبايل") == ["هلا", "عندي", "مشكله", "في", "موبايل"]
    assert words("وبالنسبة للفاتورة؟") == ["نسبه", "فاتوره"]
    assert words("shlonak 7abibi") == ["شلونك", "حبيبي"]


@pytest.mark.parametrize(
    ("query", "doc"),
    [
        ("الكتاب", "وبكتابها"),
        ("مستشفى", "المستشفي"),  # PostgreSQL's arabic config stems these apart
        ("المعلمات", "معلمين"),
        ("الفاتورة", "فاتورتي"),
        ("كَتَبَ", "كتب"),
        ("مرح\u200cبا", "مرحبا"),  # zero-width character inside a word
    ],
)
def test_search_keys_meet(query: str, doc: str) -> None:
    assert search_keys(query) == search_keys(doc) != []


@pytest.mark.parametrize(
    ("word", "key"),
    [
        # ك is a root letter here: never stripped outside كال (was ريم, ويت).
        ("كريم", "كريم"),
        ("الكريم", "كريم"),
        ("الكويت", "كويت"),
        ("كثير", "كثير"),
        ("كلام", "كلام"),
        # ك "like" before the article is the clitic
        ("كالبحر", "بحر"),
        ("كالمعتاد", "معتاد"),
        # false-split guards stay whole
        ("والد", "والد"),
        ("والي", "والي"),
        ("فيل", "فيل"),
        ("بلد", "بلد"),
        ("كلب", "كلب"),
        ("كبير", "كبير"),
        ("كتاب", "كتاب"),
    ],
)
def test_search_key_of_one_word(word: str, key: str) -> None:
    assert search_keys(word) == [key]


@pytest.mark.parametrize(
    ("query", "doc"),
    [
        ("شرقاً", "الشرق"),  # tanween fatha: شرقا → شرق
        ("كبيرا", "كبير"),  # was بيرا (ك stripped), now the ا goes, not the ك
        ("كتاباً", "كتاب"),
        ("رسميا", "الرسمي"),
        ("سوريا", "سوري"),  # country and nisba adjective meet
        ("المباراة", "مباريات"),  # ا left after the ه suffix goes too
    ],
)
def test_final_alef_is_dropped_from_search_keys(query: str, doc: str) -> None:
    assert search_keys(query) == search_keys(doc) != []


@pytest.mark.parametrize(
    ("word", "key"),
    [("دنيا", "دنيا"), ("الدنيا", "دنيا"), ("أمريكا", "امريكا"), ("عليا", "عليا"), ("يوما", "يوم")],
)
def test_final_alef_kept_where_it_belongs_to_the_word(word: str, key: str) -> None:
    # دنيا ≠ دني "lowly", عليا must not become the stopword علي; هذا stays a stopword.
    assert search_keys(word) == [key]
    assert search_keys("هذا") == []


@pytest.mark.parametrize(
    "verb", ["يتزوج", "تتزوج", "نتزوج", "أتزوج", "يتزوجون", "بيتزوج", "حيتزوج", "ويتزوجها"]
)
def test_imperfective_prefix_meets_the_perfective(verb: str) -> None:
    assert search_keys(verb) == search_keys("تزوج") == ["تزوج"]


@pytest.mark.parametrize(
    ("word", "key"),
    [
        ("يتيم", "يتيم"),  # 4 letters: too short to carry a prefix
        ("اتصل", "اتصل"),
        ("يمين", "يمين"),  # a bare ي is not stripped (would give مين)
        ("يكتب", "يكتب"),
        ("تعلم", "تعلم"),  # the perfective itself keeps its ت
    ],
)
def test_person_prefix_guards(word: str, key: str) -> None:
    assert search_keys(word) == [key]


@pytest.mark.parametrize("word", ["كيف", "كل", "كأن", "كما"])
def test_kaf_initial_function_words_are_stopwords(word: str) -> None:
    assert search_keys(word) == []


@pytest.mark.parametrize(
    ("question", "keys"),
    [
        ("ماهي عاصمة مصر؟", ["عاصم", "مصر"]),  # was ['ماه', ...]
        ("ماهى عاصمة مصر؟", ["عاصم", "مصر"]),  # ى folds to ي
        ("ماهو الاسم الرسمي؟", ["اسم", "رسم"]),
        ("مين غنى الاغنية؟", ["غني", "اغن"]),
        ("ايش اسم الفيلم؟", ["اسم", "فيلم"]),
        ("علاش مقطوع الضو؟", ["مقطوع", "ضو"]),  # Maghrebi "why"
    ],
)
def test_glued_and_dialect_question_words_are_not_keys(question: str, keys: list[str]) -> None:
    assert search_keys(question) == keys
    assert search_keys(question) == search_keys("ما هي " + question.split(" ", 1)[1])


def test_search_keys_keep_order_duplicates_numbers_latin() -> None:
    assert search_keys("الكتاب والكتاب في 2024 Routers") == ["كتاب", "كتاب", "2024", "router"]
    assert search_keys("هو في من على") == []


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("شلونك حبيبي", Script.ARABIC),
        ("ازيك يا باشا ٣", Script.ARABIC),
        ("shlonak 7abibi", Script.ARABIZI),
        ("ana 3ayez a3raf el fatoura", Script.ARABIZI),
        ("my internet is not working", Script.LATIN),
        ("الراوتر مو شغال restart ما نفع", Script.MIXED),
        ("😂😂 !!", Script.OTHER),
        ("Привет", Script.OTHER),
    ],
)
def test_detect_script(text: str, script: Script) -> None:
    assert detect_script(text) is script


@pytest.mark.parametrize(
    ("latin", "arabic"),
    [("shlonak 7abibi", "شلونك حبيبي"), ("3ayez", "عايز"), ("yalla", "يلا"), ("kifak", "كيفك")],
)
def test_arabizi_to_arabic(latin: str, arabic: str) -> None:
    assert fold(arabizi_to_arabic(latin)) == arabic


def test_tokens_are_frozen_equal_and_hashable() -> None:
    tok = tokenize("مرحبا")[0]
    assert tok == Token("مرحبا", TokenKind.WORD, 0, 5)
    assert hash(tok) == hash(Token("مرحبا", TokenKind.WORD, 0, 5))
    with pytest.raises(AttributeError):  # immutable: a named tuple
        tok.text = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "expected_words", "expected_keys"),
    [
        # Iraqi
        ("شكو ماكو؟ الخط مالي ما يشتغل",
         ["شكو", "ماكو", "خط", "مالي", "ما", "يشتغل"], ["شكو", "خط", "مال", "يشتغل"]),
        # Egyptian, with progressive ب and وال
        ("النت عندي فاصل والراوتر بيفصل",
         ["نت", "عندي", "فاصل", "راوتر", "يفصل"], ["نت", "عندي", "فاصل", "راوتر", "يفصل"]),
        # Levantine, shadda kept by clean, dropped by fold
        ("مرحبا، بدي غيّر كلمة السر تبعي",
         ["مرحبا", "بدي", "غير", "كلمه", "سر", "تبعي"], ["مرحب", "بدي", "كلمه", "سر", "تبع"]),
        # Maghrebi
        ("سلام، واش كاين شي عرض على الانترنت؟",
         ["سلام", "واش", "كاين", "شي", "عرض", "علي", "انترنت"], ["سلام", "شي", "عرض", "انترنت"]),
        # MSA
        ("أودّ الاستفسار عن رصيد حسابي",
         ["اود", "استفسار", "عن", "رصيد", "حسابي"], ["اود", "استفسار", "رصيد", "حساب"]),
        # English in Latin script: English stopwords dropped from keys only
        ("My router keeps disconnecting",
         ["my", "router", "keeps", "disconnecting"], ["router", "keep", "disconnecting"]),
    ],
)
def test_dialect_messages(text: str, expected_words: list[str], expected_keys: list[str]) -> None:
    assert words(text) == expected_words
    assert search_keys(text) == expected_keys


def test_arabizi_query_meets_arabic_document() -> None:
    assert set(search_keys("el net 5arban")) & set(search_keys("النت خربان"))


def _reference_tokens(text: str) -> list[tuple[str, str, int, int]]:
    """tokenize() without its word-run fast path: one regex match per token."""
    import re

    from nlp import tokens as t

    pattern = re.compile(t._TOKEN_RE.pattern.replace(t._RUN_ALT, ""), re.VERBOSE)
    names = sorted(pattern.groupindex.items(), key=lambda kv: kv[1])
    kinds = ["punct", *(name for name, _ in names)]
    stop = len(text.rstrip(t._TRAILING))
    return [(m.group(i), kinds[i], m.start(i), m.end(i))
            for m in pattern.finditer(text, 0, stop) if (i := m.lastindex or 0) and m.group(i)]


_MIXED = st.text(alphabet=st.sampled_from(
    "شلونكحبيبيوالكتاب َُ  \t\n،.؟!@#_:/wxyz7319٣😂\u200c\u200d\u202e\u2067"))


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), _MIXED))
def test_word_run_fast_path_equals_one_match_per_token(text: str) -> None:
    got = [(tok.text, tok.kind.value, tok.start, tok.end) for tok in tokenize(text)]
    assert got == _reference_tokens(text)
    assert [(k.value, s) for k, s in typed_texts(text)] == [(k, s) for s, k, _, _ in got]


def test_one_factory_chooses_the_key_backend(tmp_path: Path) -> None:
    from nlp import ResourceUnavailable, key_function, stem_and_surface_keys

    assert key_function("builtin") is stem_and_surface_keys
    assert key_function()("والكتابات") == ["كتاب", "كتابات"]
    # camel without its data: the text layer's own error, mapped by the caller.
    with pytest.raises(ResourceUnavailable, match="camel_data -i"):
        key_function("camel", camel_data_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown search-key backend"):
        key_function("porter")  # type: ignore[arg-type]


def test_request_words_are_not_retrieval_stopwords() -> None:
    from nlp.lexicon import REQUEST_WORDS, STOPWORDS

    # ابي is "I want" in the Gulf and "my father" in MSA: matching ignores it,
    # the index keeps it.
    assert REQUEST_WORDS.isdisjoint(STOPWORDS)
    assert "ابي" in REQUEST_WORDS and search_keys("ابي") == ["ابي"]
    assert content_keys("ابي اعرف", search_keys, stop_keys_for(search_keys)) == ["اعرف"]


def test_a_text_folded_again_gives_fresh_lists_never_the_remembered_tokens() -> None:
    # nlp.keys remembers a text's folded tokens: what a caller does with the
    # lists it gets back must not change what the next caller of that text gets.
    text = "بدي رجّع الغرض خلال تلات تيام shlonak"
    first = search_keys(text)
    first.append("دخيل")
    first_words = words(text)
    first_words.clear()
    rest, found = split_function_words(text)
    found.append("دخيل")
    assert search_keys(text) == first[:-1] == ["بدي", "رجع", "غرض", "3", "ايام"]
    assert words(text) == ["بدي", "رجع", "غرض", "خلال", "تلات", "تيام", "شلونك"]
    assert split_function_words(text) == (rest, found[:-1])

"""Table-driven checks of the wording data: every phrase × region × gender × register.

Each phrase renders for every region, country variant, gender and voice; no
placeholder is left; while the gender is unknown or female no masculine-only
imperative appears where the table has a neutral form; MSA texts carry no
colloquial spelling; the team speaks in the plural.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from majlis.culture import SeasonCalendar, ToneProfile, compute_tone, read_cues
from majlis.culture.greetings import REGISTERS, load_greetings
from majlis.culture.seasonal import MAX_GREETINGS, seasonal_wishes
from majlis.models.phrases import GENDERS, PhraseBook, parse_voice, voice_key
from majlis.prompt import compose_system_prompt

BOOK = PhraseBook.load()
VOICES = ("msa", "neutral", "gulf", "egyptian", "levantine", "maghrebi", "iraqi")
VARIANTS = (("maghrebi", "DZ"), ("maghrebi", "TN"), ("maghrebi", "MA"), ("gulf", "AE"),
            ("gulf", None), ("egyptian", "EG"))
SLOTS = {"topic": "سياسة الإرجاع", "what": "رقم الطلب", "order": "48213", "name": "أحمد",
         "persona": "نورة"}
# Second-person words only a man is addressed with (Tunisian has one form for both;
# final-weak verbs like تعطينا / تدينا are the same for a man and a woman).
MASCULINE_ONLY = re.compile(
    r"(?<!\S)(أبشر|تكرم|تدلل|تبي|تقدر|وضّح|جرّب|عطني|عطنا|تريد|بتحب|بتريد|"
    r"تحب|توضّح|توضح|توضّحلنا|توضحلنا|وضّحلنا|تقصد|كتقصد|عايز|تزوّدنا|فيك)"
    r"(?=[\s،.؟]|$)")
# The bot is a team: no first-person-singular offers.
SINGULAR = re.compile(r"(?<!\S)(أحوّلك|بحوّلك|أتابعه|سجّلت|أحتاج|آسف|مش عايز|لغيت|ألغيت)"
                      r"(?=[\s،.؟]|$)")
COLLOQUIAL_IN_MSA = ("وانت", "انتي", "عشان", "الحين", "ازيك", "شلونك", "مش ", "هيدا")


def _voices() -> list[tuple[str, str | None, str | None]]:
    """(region, country, gender): every voice and country variant, every gender."""
    return ([(region, None, gender) for region in VOICES for gender in GENDERS]
            + [(region, country, gender) for region, country in VARIANTS for gender in GENDERS])


def _phrase_problems(phrase_id: str, region: str, country: str | None,
                     gender: str | None) -> list[str]:
    text = BOOK.say(phrase_id, region, gender=gender, country=country, **SLOTS)
    where = f"{phrase_id} {region}/{country}/{gender}: {text!r}"
    problems = []
    if "{" in text or "}" in text:
        problems.append(f"placeholder left in {where}")
    # Empty only where it is meant to be: the formal answer has no lead-in.
    if not text and not (phrase_id == "answer_lead" and region in ("msa", "neutral")):
        problems.append(f"empty {where}")
    if SINGULAR.search(text):
        problems.append(f"first-person singular in {where}")
    if gender != "m" and country != "TN" and MASCULINE_ONLY.search(text):
        problems.append(f"masculine-only form in {where}")
    if region == "msa" and [w for w in COLLOQUIAL_IN_MSA if w in text]:
        problems.append(f"colloquial spelling in {where}")
    return problems


# One case per phrase, every voice × country × gender inside it (a failure
# lists them all): the domain is finite and small, so it is checked whole.
@pytest.mark.parametrize("phrase_id", list(BOOK.phrase_ids()))
def test_every_phrase_renders_for_every_voice(phrase_id: str) -> None:
    problems = [p for voice in _voices() for p in _phrase_problems(phrase_id, *voice)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("phrase_id", list(BOOK.phrase_ids()))
def test_every_phrase_has_msa_neutral_and_each_region(phrase_id: str) -> None:
    keys = BOOK.keys_of(phrase_id)
    assert "msa" in keys and "neutral" in keys
    if phrase_id != "fallback":  # fallback is said in the neutral voice only
        assert {"gulf", "egyptian", "levantine", "maghrebi", "iraqi"} <= set(keys)
        assert {"maghrebi:DZ", "maghrebi:TN"} <= set(keys)


def test_voice_key_round_trip_and_explicit_arguments_win() -> None:
    assert parse_voice(voice_key("maghrebi", gender="f", country="tn")) == ("maghrebi", "TN", "f")
    assert BOOK.say("handoff_started", "gulf/m", gender="f") == BOOK.say(
        "handoff_started", "gulf", gender="f")
    # Moroccan is the Maghrebi default; an unknown country reads the region's text.
    assert BOOK.say("need_param", "maghrebi", country="MA", what="x") == BOOK.say(
        "need_param", "maghrebi", what="x")
    assert BOOK.say("need_param", "maghrebi", country="DZ", what="x") != BOOK.say(
        "need_param", "maghrebi", what="x")
    # Old callers (region only) still work.
    assert BOOK.say("dont_know", "gulf") == BOOK.say("dont_know", "gulf", gender=None)


def test_gendered_forms_differ_where_the_user_is_addressed() -> None:
    forms = {g: BOOK.say("handoff_started", "gulf", gender=g) for g in GENDERS}
    assert forms["m"].startswith("أبشر،") and forms["f"].startswith("أبشري،")
    assert not forms[None].startswith("أبشر")
    assert "تبين" in BOOK.say("offer_person", "gulf", gender="f")


def _greeting_problems(key: str, region: str, register: str, gender: str | None) -> list[str]:
    reply = load_greetings().entry(key).reply(region=region, register=register,
                                              gender=gender)  # type: ignore[arg-type]
    where = f"{key} {region}/{register}/{gender}: {reply!r}"
    problems = []
    if not reply or "{" in reply:
        problems.append(f"empty or unrendered {where}")
    if gender != "m" and any(m in reply for m in ("وانت شلونك", "وانت من أهله", "وانت ازيك",
                                                   "وانت كيفك")):
        problems.append(f"masculine reply for gender {gender} in {where}")
    if region == "msa" and [w for w in COLLOQUIAL_IN_MSA if w in reply]:
        problems.append(f"colloquial spelling in {where}")
    if "عيوني" in reply:
        problems.append(f"endearment in {where}")
    return problems


# One case per greeting, every voice × register × gender inside it.
@pytest.mark.parametrize("key", list(load_greetings().entries))
def test_every_greeting_reply_renders(key: str) -> None:
    problems = [p for region in VOICES for register in REGISTERS for gender in GENDERS
                for p in _greeting_problems(key, region, register, gender)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("said", "region", "reply"), [
    ("بارك الله فيك", "maghrebi", "وفيك بارك الله"),
    ("عيد سعيد", "gulf", "وعيدكم سعيد، وعساكم من عواده"),
    ("تصبحون على خير", "gulf", "وانتم من أهله"),
    ("شحالك", "gulf", "بخير الله يسلمكم، وانتوا شحالكم؟"),
    ("عسلامة", "maghrebi", "عسلامة، مرحبا بيك"),
    ("عواشر مبروكة", "maghrebi", "علينا وعليكم، عواشر مبروكة"),
    ("عاشت ايدك", "iraqi", "عاشت أيامك"),
    ("ربنا يخليك", "egyptian", "ويخليك يا رب"),
])
def test_customary_replies_answer_what_was_said(said: str, region: str, reply: str) -> None:
    cues = read_cues(said)
    keys = cues.openers + cues.closers
    assert keys, said
    table = load_greetings()
    assert table.entry(keys[0]).reply(region=region, register="neutral", gender=None) == reply


@pytest.mark.parametrize("text", ["عسلامة، لاباس؟", "salam alaikum, kifak?",
                                  "السلام عليكم، كيف حالك؟"])
def test_greeting_only_messages_are_not_questions(text: str) -> None:
    cues = read_cues(text)
    assert cues.openers and not cues.business


# --- seasonal: the two-greeting cap and the religious opt-in --------------------------

KUWAIT = ZoneInfo("Asia/Kuwait")
LIBERATION_FRIDAY = SeasonCalendar().moment(datetime(2027, 2, 26, 6, tzinfo=UTC), tz=KUWAIT,
                                            country="KW")
FRIDAY_IN_BEIRUT = SeasonCalendar().moment(datetime(2026, 11, 6, 8, tzinfo=UTC),
                                           tz=ZoneInfo("Asia/Beirut"), country="LB")


def test_three_occasions_are_cut_to_two_main_ones() -> None:
    for religious in (False, True):
        wishes = seasonal_wishes(LIBERATION_FRIDAY, region="gulf", religious=religious)
        assert len(wishes) == MAX_GREETINGS
        assert not any("جمعة" in w for w in wishes)


def test_friday_and_fasting_wishes_only_for_a_tenant_that_opts_in() -> None:
    assert seasonal_wishes(FRIDAY_IN_BEIRUT, region="levantine", religious=False) == []
    assert seasonal_wishes(FRIDAY_IN_BEIRUT, region="levantine", religious=True) == [
        "جمعة مباركة"]
    plain = seasonal_wishes(LIBERATION_FRIDAY, region="msa", religious=False)
    assert "رمضان كريم" in plain and not any("صيام" in w for w in plain)
    devout = seasonal_wishes(LIBERATION_FRIDAY, region="msa", religious=True)
    assert "رمضان كريم، وتقبّل الله صيامكم" in devout


def test_seasonal_wording_is_region_true() -> None:
    eid = SeasonCalendar().moment(datetime(2026, 3, 20, 6, tzinfo=UTC), tz=KUWAIT, country="KW")
    assert any("كل سنة وانتم طيبين" in w for w in seasonal_wishes(eid, region="egyptian",
                                                                  religious=False))
    assert any("عواشر مبروكة" in w for w in seasonal_wishes(eid, region="maghrebi",
                                                           religious=False))


# --- the model prompt: one register rule, consistent address ----------------------------

def _prompt(profile: ToneProfile, *, voice: str, region: str, gender: str | None = None,
            text: str = "السلام عليكم") -> str:
    moment = SeasonCalendar().moment(datetime(2026, 11, 2, 6, tzinfo=UTC), tz=KUWAIT,
                                     country="KW")
    tone = compute_tone(profile, region=voice, cues=read_cues(text), turn_index=0,
                        known_gender=gender, moment=moment,  # type: ignore[arg-type]
                        prior_formality=None, voice=voice)
    return compose_system_prompt(persona=profile.persona_name, tone_block=tone.to_prompt(),
                                 region=region, recalled=[], facts=[], now_gregorian="",
                                 now_hijri="")


def test_msa_tenant_prompt_has_no_contradicting_dialect_line() -> None:
    # Even a caller that passes the thread's dialect cannot add «أجب بها».
    prompt = _prompt(ToneProfile(register_policy="msa"), voice="msa", region="gulf")
    assert "Modern Standard Arabic" in prompt and "الفصحى" in prompt
    assert "لهجة" not in prompt and "الخليجية" not in prompt


def test_dialect_prompt_has_exactly_one_arabic_register_line() -> None:
    prompt = _prompt(ToneProfile(), voice="gulf", region="gulf")
    assert prompt.count("أجب بها") == 1 and "الفصحى وحدها" not in prompt


def test_prompt_addresses_the_model_in_one_form_and_the_bot_as_a_team() -> None:
    female = _prompt(ToneProfile(), voice="gulf", region="gulf", gender="f")
    assert "خاطبها بصيغة المؤنث" in female and "خاطبيها" not in female
    unknown = _prompt(ToneProfile(), voice="gulf", region="gulf")
    assert "خاطبه بصيغة محايدة" in unknown
    assert "بصيغة الجمع" in unknown
    moment = SeasonCalendar().moment(datetime(2026, 11, 2, 6, tzinfo=UTC), tz=KUWAIT,
                                     country="KW")
    tone = compute_tone(ToneProfile(formality_floor="casual"), region="gulf",
                        cues=read_cues("هههه تمام"), turn_index=3, known_gender=None,
                        moment=moment, prior_formality="casual", voice="gulf")
    assert tone.formality == "casual"
    assert "no terms of endearment" in tone.to_prompt() and "عيوني" in tone.to_prompt()

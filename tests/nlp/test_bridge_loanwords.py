"""Session-7 bridge families: loanwords of the support trade, dialect function words,
hamza-less spellings and Arabizi as dialect evidence (nlp.bridge, data/bridge.tsv).

The sentences are written for these tests, one family per region and script, not
taken from the bench/data/support sets.
"""

from __future__ import annotations

import pytest
from _bridge_cases import assert_expands_to

import nlp
from nlp.bridge import parse_bridge


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("الرومنق يشتغل في البحرين؟", {"تجوال"}),  # gulf roaming
        ("الرومينج عليه رسوم؟", {"تجوال"}),  # egyptian
        ("فعلت الرومينغ قبل السفر", {"تجوال"}),  # maghrebi
        ("الفيزا مالتي انرفضت", {"بطاقة"}),  # iraqi, visa card
        ("لاكارط ديالي تبلوكات", {"بطاقة", "حظر"}),  # maghrebi carte + bloquer
        ("الكونط ديالي فيه مشكل", {"حساب"}),  # maghrebi compte
        ("شحال الصولد اللي بقا؟", {"رصيد"}),  # maghrebi solde
        ("الكوموند ديالي ما وصلاتش", {"طلب"}),  # maghrebi commande
        ("الديليفري اتأخر", {"توصيل"}),  # egyptian delivery
        ("الباكيج وصل اللوكر؟", {"طرد", "خزانة"}),  # gulf package, locker
        ("بغيت نبدل الريزيرفاسيون", {"حجز"}),  # maghrebi réservation
        ("الاوتيل فيه باركينج؟", {"فندق"}),  # levantine hôtel
        ("الجنطة لازم تكون اقل من كم كيلو؟", {"حقيبة", "كيلوغرام"}),  # iraqi bag, kilo
        ("فاليز وحدة فابور؟", {"حقيبة"}),  # maghrebi valise
        ("الكرهبة فيها تأمين شامل؟", {"سيارة"}),  # maghrebi car
        ("الكوسيون يرجع امتى؟", {"تأمين"}),  # maghrebi caution (deposit)
        ("عندي روشتة من الدكتور", {"وصفة", "طبيب"}),  # egyptian prescription
        ("دزيت الراشيته من التطبيق", {"وصفة", "أرسل"}),  # iraqi
        ("الابونمو ديال الجيم", {"اشتراك", "نادي"}),  # maghrebi abonnement, gym
        ("بدي جمّد الاشتراك شهر", {"تجميد"}),  # levantine freezing
        ("ابي اعبي المحفظة", {"شحن"}),  # gulf top-up
        ("نشارجي البورتفوي بالكارط؟", {"شحن", "محفظة"}),  # maghrebi recharger
        ("التقني غادي يجي للدار امتى؟", {"فني"}),  # maghrebi technicien
        ("لقيته ارخص بمحل ثاني", {"وجد", "أقل", "سعر"}),  # gulf cheaper elsewhere
        ("في فوايد على التقسيط؟", {"فوائد"}),  # hamza-less spelling
        ("السايق ما رد علي", {"سائق"}),  # hamza seat, by rule
        ("shgad el roaming?", {"تجوال"}),  # arabizi
        ("ma3i valise w sac", {"حقيبة"}),  # arabizi / French
    ],
)
def test_loanwords_and_families_reach_policy_words(question: str, expected: set[str]) -> None:
    assert_expands_to(question, expected)


@pytest.mark.parametrize(
    "text",
    [
        "الي اين هاجر الشاعر؟",  # «إلى» folded is الي: never the dialect «اللي»
        "متى انتقل اللاعب الى النادي؟",
        "ماذا يستخدم اللاعبون في الملعب؟",  # اللاعبون is no top-up verb
        "متى انتحرت اخته وصال؟",  # وصال is a name, not «و + صال» (gym)
        "ما هي اللغة العربية؟",  # العربية is Arabic, not the Egyptian car
    ],
)
def test_msa_questions_are_not_read_as_dialect(text: str) -> None:
    assert not nlp.has_dialect_words(text)


@pytest.mark.parametrize(
    "text",
    [
        "اللي طلبته ما وصل",  # dialect relative pronoun, every region
        "حدا بيرد علي؟",  # levantine someone
        "الطلب مالتي وين صار؟",  # iraqi possessive
        "الفاتورة حقتي غلط",  # gulf possessive
        "2addeh el rosoom 3al ta7weel?",  # arabizi, no lexicon word needed
        "wach kayn chi 7al?",
    ],
)
def test_dialect_function_words_and_arabizi_are_dialect_evidence(text: str) -> None:
    assert nlp.has_dialect_words(text)


def test_english_is_not_arabizi_evidence() -> None:
    # Latin words are dialect evidence only when Arabizi outweighs English.
    assert not nlp.has_dialect_words("can you help me with my order please?")


def test_dialect_tag_is_evidence_of_no_region() -> None:
    lexicon = parse_bridge("اللي\tالذي\tdialect\nمحل\tمتجر\tall\n")
    assert lexicon.has_dialect_words("المنتج اللي اشتريته")
    assert not lexicon.has_dialect_words("اين اقرب محل؟")

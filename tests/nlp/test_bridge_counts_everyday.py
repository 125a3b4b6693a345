"""Bridge vocabulary of session 13 (issue 10): counts the key-level number rule does
not reach, everyday synonyms of the five regions, and the other number of the
French loans customers type in Maghrebi Arabizi.

A count meets a policy only as keys: the question's own keys plus its bridge
words, keyed together as memory.expansion does, must hold the policy's
(«ستة أشهر» keys as «6 اشهر», «يومين» as «2 يوم»).
"""

from __future__ import annotations

import pytest
from _bridge_cases import assert_expands_to

import nlp


def _query_keys(question: str) -> set[str]:
    """The keys a search holds for ``question``: its own and its bridge words'."""
    bridged = " ".join(nlp.dialect_to_msa(question))
    return set(nlp.search_keys(question)) | set(nlp.search_keys(bridged))


@pytest.mark.parametrize(
    ("question", "policy"),
    [
        ("الضمان ست شهور بس؟", "ستة أشهر"),  # levantine: شهور vs the policy's أشهر
        ("الضمان ست شهور ولا سنة؟", "6 أشهر"),  # egyptian, the policy in digits
        ("الاسترجاع بياخد تلت ايام؟", "ثلاثة أيام"),  # egyptian «تلت» before a plural
        ("المكنة بتتصلح في تلت تيام؟", "3 أيام"),  # levantine
        ("التركيب بياخد تمن ساعات؟", "ثماني ساعات"),  # egyptian «تمن» (eight)
        ("واش كاتوصل في جوج ايام؟", "يومين"),  # maghrebi جوج + plural = dual
        ("التصليح ياخد جوج سيمانات؟", "أسبوعين"),  # moroccan سيمانة (semaine)
        ("الرد بيجي بعد جمعتين؟", "أسبوعين"),  # levantine جمعة = week
        ("زوز مرات في الشهر نجم نبدل؟", "مرتين"),  # tunisian
        ("el garantie sta shhor?", "ستة أشهر"),  # mixed French/Arabizi, not read as Arabizi
        ("ywasal f yomin?", "يومين"),  # gulf arabizi dual
        ("ba3d sa3tin", "ساعتين"),  # levantine arabizi dual
        ("ntsanna nos sa3a?", "30 دقيقة"),  # maghrebi arabizi half an hour, policy in digits
        ("rob3 sa3a bark?", "ربع ساعة"),  # maghrebi arabizi
        ("el frais khamsin dirham?", "50 درهم"),  # arabizi count, policy in digits
        ("mia riyal wala aktar?", "100 ريال"),  # gulf arabizi «mia» is a hundred, not water
        ("jouj simanat w ywasal?", "أسبوعين"),  # maghrebi arabizi
    ],
)
def test_dialect_counts_meet_the_policy_count(question: str, policy: str) -> None:
    wanted = set(nlp.search_keys(policy))  # the count, as the policy keys it
    have = _query_keys(question)
    assert wanted <= have, (question, sorted(wanted - have))


@pytest.mark.parametrize(
    ("text", "not_wanted"),
    [
        ("تمنه كام؟", "8"),  # تمن = price
        ("بدي ادفع تلت المبلغ", "3"),  # تلت = a third
        ("تلت ساعة بس", "3"),  # a third of an hour (20 minutes), not three hours
        ("يوم الجمعة فاتحين؟", "اسبوع"),  # Friday is not a week
        ("امتحانات نص السنة امتى؟", "6"),  # mid-year, not half a year
        ("الكشاف بقاله شهرين مش شغال", "متجر"),  # egyptian «it has been», not a grocery
    ],
)
def test_the_other_senses_of_count_words_stay(text: str, not_wanted: str) -> None:
    assert not_wanted not in _query_keys(text)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # phone: «تلفوني» is تلفون + ي, though ‑ني is peeled first
        ("تلفوني وقع وانكسرت الشاشة", {"هاتف"}),  # gulf / levantine
        ("التليفوني مش بيشحن", {"هاتف"}),  # egyptian
        ("كوبوني ما اشتغل", {"قسيمة"}),  # gulf, the same peel on another noun in ن
        ("بنزيني خلص بالطريق", {"وقود"}),  # levantine
        ("الموبيل ديالي ماكايشارجيش", {"جوال"}),  # maghrebi
        ("الفون حقي علق", {"هاتف"}),  # gulf
        ("النقال طاح في الما", {"جوال"}),  # maghrebi
        ("el portable dyali t9ad?", {"جوال"}),  # maghrebi arabizi, French loan
        ("tilifoun dyali khasr", {"هاتف"}),  # maghrebi arabizi
        # car: Egyptian عربية in phrases whose other word is a car's
        ("العربية بتاعتي عطلت في الطريق", {"سيارة"}),
        ("ينفع اركن العربية قدام المحل؟", {"سيارة", "ركن"}),
        ("عربيتك فيها تأمين؟", {"سيارة"}),
        ("الكرهبة ما تمشيش", {"سيارة"}),  # tunisian
        ("sayara dyali fiha mochkil", {"سيارة"}),  # arabizi
        # house, doctor
        ("nkhalles mn dar?", {"منزل"}),  # maghrebi arabizi
        ("bghit nchouf tbib lyoum", {"طبيب", "اليوم"}),  # maghrebi arabizi
        ("fi doctor el sa3a kam?", {"طبيب"}),  # egyptian arabizi
        # computer, shop, wallet, glasses, clothes
        ("الكمبيوتر تبعي ما عم يشتغل", {"حاسوب"}),  # levantine
        ("l'ordinateur ma khdamch", {"حاسوب"}),  # maghrebi, French elision
        ("l'application ma khdamach", {"التطبيق"}),  # maghrebi
        ("3tini l'adresse dyal l'agence", {"عنوان"}),  # maghrebi
        ("شريتو من الحانوت اللي حدا الدار", {"متجر", "منزل"}),  # maghrebi
        ("ضاع الجزدان وفيه البطاقة", {"محفظة"}),  # levantine
        ("النضارة اتكسرت", {"نظارة"}),  # egyptian
        ("التياب ما وصلت", {"ملابس"}),  # levantine
        # today, yesterday, children, good condition, a lot
        ("طلبت النهاردة الصبح", {"اليوم"}),  # egyptian
        ("البارح طلبت وما وصل", {"أمس"}),  # gulf / iraqi
        ("الدراري كيلعبو فالمسبح؟", {"أطفال"}),  # maghrebi
        ("المنتج كويس ومقفول، ينفع ارجعه؟", {"سليم"}),  # egyptian
        ("الجهاز منيح بس بدي رجعو", {"سليم"}),  # levantine
        ("فيه برشا ناس في الطابور", {"كثير"}),  # tunisian
        # starting, searching
        ("امتى بيبلش الدوام؟", {"يبدأ"}),  # levantine
        ("بدور على فرع قريب", {"أبحث"}),  # egyptian
    ],
)
def test_everyday_words_meet_the_policy_words(question: str, expected: set[str]) -> None:
    assert_expands_to(question, expected)


@pytest.mark.parametrize(
    "msa",
    [
        "ما هي اللغة العربية الفصحى؟",  # عربية alone is Arabic
        "تقع المملكة العربية السعودية في آسيا",
        "هل تقدمون الخدمة بالعربية؟",
    ],
)
def test_arabic_is_not_a_car(msa: str) -> None:
    assert "سيارة" not in nlp.dialect_to_msa(msa)


@pytest.mark.parametrize(
    "msa",
    [
        "كم عدد السنين في القرن؟",  # MSA synonym family: no dialect evidence
        "الضمان صالح ستة شهور",
        "اشتريت حاسوبا من المتجر",
        "لا أجد الكمبيوتر",
    ],
)
def test_msa_words_of_the_new_entries_are_no_dialect_evidence(msa: str) -> None:
    assert not nlp.has_dialect_words(msa)


def test_piece_is_a_part_not_a_cat() -> None:
    words = nlp.dialect_to_msa("bghit nbdel wa7ed la pièce")
    assert "قطعة" in words and "قطة" not in words


@pytest.mark.parametrize(
    ("singular", "plural"),
    [
        ("pièce", "pièces"), ("facture", "factures"), ("commande", "commandes"),
        ("carte", "cartes"), ("compte", "comptes"), ("billet", "billets"),
        ("chambre", "chambres"), ("pneu", "pneus"), ("frein", "freins"),
        ("batterie", "batteries"), ("médicament", "médicaments"), ("vaccin", "vaccins"),
        ("examen", "examens"), ("résultat", "résultats"), ("offre", "offres"),
        ("réclamation", "réclamations"), ("virement", "virements"), ("document", "documents"),
        ("voiture", "voitures"), ("hôpital", "hôpitaux"), ("réseau", "réseaux"),
        ("abonnement", "abonnements"), ("réservation", "réservations"), ("fleur", "fleurs"),
        ("technicien", "techniciens"), ("pharmacie", "pharmacies"), ("reçu", "reçus"),
    ],
)
def test_french_loans_are_known_in_both_numbers(singular: str, plural: str) -> None:
    # A listed loan gives its MSA words; a missing one, letter-by-letter readings
    # («factures» → فكتورس) that share nothing with the listed number's.
    one, many = (set(nlp.search_keys(" ".join(nlp.dialect_to_msa(w)))) for w in (singular, plural))
    assert one & many, (singular, sorted(one), sorted(many))

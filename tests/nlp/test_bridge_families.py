"""Support-domain synonym families in the bridge lexicon and its ``msa`` tag."""

from __future__ import annotations

import pytest
from _bridge_cases import assert_expands_to

import nlp
from nlp.bridge import parse_bridge


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("هل تحتسبون رسوما على الدفع بالتقسيط؟", {"تفرض"}),  # msa charging
        ("هل يتقاضى البنك عمولة؟", {"رسوم", "تفرض"}),  # msa ~تقاضي
        ("بيحسبوا كام على التوصيل؟", {"رسوم"}),  # egyptian
        ("شكد يكصون على التحويل؟", {"رسوم", "يخصم"}),  # iraqi
        ("متى يعاد المبلغ؟", {"استرداد", "إرجاع"}),  # msa refunding
        ("امتى ترجع الفلوس؟", {"استرداد", "المبلغ"}),  # egyptian / levantine phrase
        ("واش غادي يردولي لفلوس؟", {"استرداد"}),  # maghrebi رد
        ("هل يجوز إرجاع المنتج المفتوح؟", {"يمكن", "يسمح"}),  # msa permitting
        ("يمديني اغير العنوان؟", {"يمكن"}),  # gulf
        ("واش نقدر نانولي الطلب؟", {"إلغاء"}),  # maghrebi annuler
        ("الكرت انسرق، ابي ابلوكه", {"حظر", "إيقاف", "سرقة"}),  # gulf card blocking
        ("بدي سكرلي البطاقة", {"إيقاف"}),  # levantine
        ("كيفاش نأكتيفي الشريحة؟", {"تفعيل"}),  # maghrebi activer
        ("شو الماكسيمم للتحويل؟", {"الأقصى"}),  # limits
        ("شو باقيلي بالمحفظة؟", {"الرصيد"}),  # balance
        ("بغيت ريليفي ديال الحساب", {"كشف"}),  # maghrebi relevé
        ("abgha a7awel floos", {"تحويل"}),  # arabizi transferring
        ("ma3lesh bghit n annuler", {"إلغاء"}),  # arabizi / French
    ],
)
def test_support_words_get_their_policy_synonyms(question: str, expected: set[str]) -> None:
    assert_expands_to(question, expected)


@pytest.mark.parametrize(
    "text",
    [
        "حسب الموقع الجغرافي",  # حسب = according to, not charging
        "ما هو تاريخ الخصم؟",  # the noun خصم (discount) is no deduction verb
        "متى يبدأ عيد الفطر؟",  # عيد (Eid) is no refund
    ],
)
def test_common_msa_words_of_another_sense_are_not_expanded(text: str) -> None:
    got = set(nlp.dialect_to_msa(text))
    assert not got & {"رسوم", "تفرض", "تحتسب", "استرداد", "إرجاع", "إعادة"}, got


def test_msa_family_matches_msa_forms_and_is_no_dialect_evidence() -> None:
    lexicon = parse_bridge("~حتسب\tتفرض رسوم\tmsa\n~رجع\tإرجاع\tall\n")
    # An msa ~stem matches the verb's MSA forms; an all ~stem does not.
    assert lexicon.expand("هل تحتسبون رسوما؟") == ["تفرض", "رسوم"]
    assert lexicon.expand("متى يرجع؟") == []
    assert not lexicon.has_dialect_words("هل تحتسبون رسوما؟")
    assert not nlp.has_dialect_words("هل يجوز إرجاع المنتج المفتوح؟")

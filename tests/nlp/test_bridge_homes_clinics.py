"""Bridge vocabulary of session 11: what tenants of a residential building and
outpatients of a hospital say (lifts, pools, parking, waste, locks, pets, guests;
teeth, laboratory, sick leave, wards, vaccination), each region's words and loans,
met with the words a building's or a clinic's policy uses."""

from __future__ import annotations

import pytest
from _bridge_cases import assert_expands_to

import nlp


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # building, lift, floor, guard
        ("الاسانسير واقف من امبارح", {"مصعد"}),  # egyptian
        ("السانسور ماخدامش من البارح", {"مصعد"}),  # maghrebi
        ("the lift mashi shaghal", {"مصعد"}),  # arabizi
        ("الناطور مش موجود عالباب", {"حارس"}),  # levantine
        ("البدروم فيه مية", {"السفلي"}),  # egyptian basement
        # pool, swimming, women, alone
        ("البيسين فاتح النهارده؟", {"المسبح"}),  # egyptian
        ("في وقت للحريم بالمسبح؟", {"السيدات"}),  # gulf
        ("البنت تقدر تعوم بوحدها؟", {"سباحة", "بمفردها"}),  # maghrebi
        ("ولدي يقدر يروح بروحه؟", {"بمفرده"}),  # gulf
        # parking, sticker, towing
        ("الباركنق عندكم ببلاش؟", {"مواقف", "مجانا"}),  # gulf
        ("فين الجراج بتاع العمارة؟", {"موقف"}),  # egyptian
        ("محتاج استيكر للعربية", {"ملصق"}),  # egyptian
        ("ما نقدرش نباركي قدام الباب؟", {"الوقوف"}),  # maghrebi
        # waste and recycling
        ("وين ارمي الزبالة؟", {"النفايات"}),  # gulf/levantine
        ("الزبل كيتجمع فوقاش؟", {"النفايات"}),  # maghrebi
        ("فين احط القزاز الفاضي؟", {"زجاج"}),  # egyptian
        ("القناني البلاستيك وين تنحط؟", {"عبوات"}),  # levantine / iraqi
        # locks, taps, filters, furniture
        ("عايز اغير الكالون", {"قفل"}),  # egyptian
        ("ضاع ليا الساروت", {"مفتاح"}),  # maghrebi
        ("الحنفية بتنقط", {"صنبور", "تسرب"}),  # levantine
        ("متى تنظفون فلاتر المكيف؟", {"مرشحات", "التكييف"}),  # gulf
        ("نقدر ننقل العفش بالليل؟", {"الأثاث"}),  # gulf / levantine
        ("عندنا قنفة قديمة", {"الأثاث"}),  # iraqi
        # pets and guests
        ("عندي بسة صغيرة", {"قطة"}),  # levantine
        ("البزونة مسموحة؟", {"قطة"}),  # iraqi
        ("الضياف ديالي فين يوقفو؟", {"الضيوف", "الزوار"}),  # maghrebi
        ("الخطار يحتاجون تسجيل؟", {"الضيوف"}),  # iraqi / gulf
        # teeth, pain, swelling
        ("ضرسي يوجعني", {"الأسنان", "ألم"}),  # all
        ("عندكم دكتور سنان يوم السبت؟", {"الأسنان"}),  # egyptian
        ("بتعملوا امبلانت؟", {"زراعة"}),  # all
        ("خدي منفوخ من امبارح", {"تورم"}),  # all
        # laboratory, fasting, on someone's behalf
        ("المعمل بيفتح الساعة كام؟", {"المختبر"}),  # egyptian
        ("لازم اجي صايم للتحليل؟", {"الصيام"}),  # all
        ("اخوي يستلم النتايج بدالي؟", {"نيابة", "تفويض", "النتائج"}),  # gulf
        ("fin kayn labo?", {"المختبر"}),  # maghrebi arabizi
        # sick leave, reports
        ("بغيت الكونجي مالادي", {"الإجازة", "المرضية"}),  # maghrebi
        ("ابي سك ليف لليوم", {"الإجازة", "المرضية"}),  # gulf
        # vaccination, fever
        ("الجلبة ديال الدراري فابور؟", {"تطعيم", "مجانا"}),  # maghrebi
        ("بنتي مشوبة شوي", {"حرارة"}),  # levantine
        ("الابرة توجع الطفل؟", {"حقنة"}),  # all
        # wards, intensive care, staying overnight
        ("امي راقدة بالمستشفى", {"التنويم"}),  # gulf / iraqi
        ("اخوي بالعناية المشددة", {"العناية", "المركزة"}),  # levantine
        ("ينفع ابات مع ابويا؟", {"المبيت"}),  # egyptian
        # missed appointments, disability, valet, machines, tickets, flowers
        ("ماجيتش للرونديفو", {"تغيب", "موعد"}),  # maghrebi
        ("فين اماكن المعاقين؟", {"الإعاقة"}),  # msa family
        ("عندكم فاليه؟", {"صف", "السيارات"}),  # gulf / levantine
        ("المكينة ما تاخذ كاش", {"آلة"}),  # gulf
        ("اقدر ادخل ورود للمريض؟", {"الزهور"}),  # all
        # rooms, corridors, home, batteries, throwing away, power cuts
        ("الاوضة فيها كام سرير؟", {"الغرفة"}),  # egyptian
        ("الكلب يمشي في الطرقة؟", {"الممرات"}),  # egyptian
        ("فين نحط البيلات القدام؟", {"البطاريات"}),  # maghrebi
        ("وين اذب الاكياس؟", {"رمي"}),  # iraqi / gulf
        ("الضو طاح من الصباح", {"انقطاع", "الكهرباء"}),  # maghrebi
        ("المغسلة دتنقط", {"تسرب"}),  # iraqi progressive د
        # staying valid, own cost, at most, postponing, not coming
        ("الرمز بيضل شغال لبكرا؟", {"يبقى", "صالح"}),  # levantine
        ("التصليح على حسابي ولا عليكم؟", {"نفقتي", "تكلفة"}),  # all
        ("اكثر شي كم ادفع باليوم؟", {"أقصى"}),  # gulf / iraqi
        ("ابي أأجله لبعد بكرة", {"تأجيل", "تغيير"}),  # gulf
        ("ما اجيت للموعد امس", {"تغيب"}),  # iraqi
        ("كل كم تغسلون الفلاتر؟", {"تنظيف", "فلاتر"}),  # gulf: washing filters is cleaning
        # "has become", "didn't let me", issuing a paper, flowers
        ("الثلاجة صايرة تطلع صوت", {"أصبحت"}),  # gulf / iraqi
        ("الحارس ما خلاني ادخل", {"منع"}),  # gulf / levantine / iraqi
        ("تقدرون تطلعون لي تقرير؟", {"إصدار"}),  # gulf: issue me a report
        ("جبت باقة ورد للمريض", {"الزهور"}),  # all
    ],
)
def test_home_and_clinic_words_meet_the_policy_words(question: str, expected: set[str]) -> None:
    assert_expands_to(question, expected)


@pytest.mark.parametrize(
    ("msa", "expected"),
    [
        ("متى يفتح حوض السباحة؟", {"المسبح"}),
        ("كم مرة تنظف مرشحات التكييف؟", {"فلاتر"}),
        ("هل يحق للضيف الدخول؟", {"زائر"}),
        ("هل تجرون غرس الأسنان؟", {"زراعة"}),
        ("هل يمكن استبدال القفل؟", {"تغيير", "أقفال"}),
        ("متى يكون المنقذ موجودا؟", {"يتواجد"}),
        ("كم مرة تنظف الفلاتر سنويا؟", {"السنة"}),
    ],
)
def test_msa_synonyms_meet_the_policy_word(msa: str, expected: set[str]) -> None:
    # A policy says «المسبح»، «فلاتر»، «زائر»: an MSA question's synonym must meet it,
    # and is no evidence of dialect (tagged msa).
    assert_expands_to(msa, expected)
    assert not nlp.has_dialect_words(msa)


@pytest.mark.parametrize("msa", ["أغلق الشباك قبل المطر",
                                 "تقع البناية في وسط المدينة", "جلس على الكنبة",
                                 "صدرت سلسلة كتب جديدة", "اشترى قنينة ماء", "وقف البواب عند الباب",
                                 "اللون أزرق", "ظهر ورم في الصورة"])
def test_msa_homographs_of_new_entries_are_no_dialect_evidence(msa: str) -> None:
    # شباك، عمارة، بناية، كنبة، سلسلة، قنينة، بواب are MSA words too: tagged «all».
    assert not nlp.has_dialect_words(msa)


@pytest.mark.parametrize("question", ["الحارس ما خلاني ادخل", "المكيف صاير يطلع صوت",
                                      "الرمز بيضل شغال؟", "ما اجيت للموعد"])
def test_new_dialect_forms_are_dialect_evidence(question: str) -> None:
    # A dialect question is judged with the dialect bars (majlis.models.offline._grounded):
    # «صاير», «ما خلاني», «بيضل», «ما اجيت» are said in no MSA text.
    assert nlp.has_dialect_words(question)

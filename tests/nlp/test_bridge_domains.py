"""Bridge vocabulary of session 9: the support words of new domains (utilities, school,
health, insurance, delivery, travel, government, banking, cars, food) in each region's
words and loans, and the gaps found in session 8 (كنسلت، ألغيت، الجم، ‑لكم)."""

from __future__ import annotations

from importlib import resources

import pytest
from _bridge_cases import assert_expands_to

import nlp
from nlp.bridge import parse_bridge
from nlp.keys import split_function_words


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # utilities
        ("النور قاطع عندنا من الصبح", {"كهرباء", "انقطاع"}),  # egyptian
        ("الكونتور ديالي كيحسب بزاف", {"عداد"}),  # maghrebi (compteur)
        ("قائمة الكهرباء هالشهر واجد غالية", {"فاتورة"}),  # iraqi: قائمة = the bill
        ("في فويت فالكوزينة، شكون يصلحها؟", {"تسرب"}),  # maghrebi (fuite)
        ("فيه تهريب ماي تحت المغسلة", {"تسرب", "مياه"}),  # gulf
        ("ابي وايت ماي بكرة", {"صهريج", "مياه"}),  # gulf water tanker
        ("نكدر نطلب تانكر للبيت؟", {"صهريج"}),  # iraqi
        ("قصولي الضو بلا ما يعلموني", {"كهرباء", "قطع", "فصل"}),  # maghrebi
        ("هعزل الشهر الجاي، اعمل ايه في العداد؟", {"انتقال"}),  # egyptian: moving house
        ("الكهربا مقطوعة بكل الحارة", {"كهرباء", "انقطاع", "حي"}),  # levantine
        # school
        ("المريول من وين بنشتريه؟", {"الزي", "المدرسي"}),  # levantine
        ("الطابلية لازم تكون زرقا؟", {"الزي", "المدرسي"}),  # maghrebi (tablier)
        ("الكانتين بيفتح الساعة كام؟", {"المقصف"}),  # egyptian
        ("البولتان ديال الطريميستر فوقاش كيخرج؟", {"كشف", "الدرجات"}),  # maghrebi
        ("وقتيش بيطلعوا العلامات؟", {"الدرجات"}),  # levantine
        ("عندي ثلاث عيال، في خصم للاخوان؟", {"إخوة"}),  # gulf: siblings
        ("شو الاوراق المطلوبة للتسجيل؟", {"المستندات", "الوثائق"}),  # levantine
        ("ولدي ماغاديش يجي اليوم", {"ابن", "الطالب"}),  # maghrebi
        # health
        ("واش كاينة فرملية فالمدرسة؟", {"الممرضة", "تمريض"}),  # maghrebi (infirmière)
        ("بنتي عندها لاليرجي من الحليب", {"حساسية"}),  # maghrebi (allergie)
        ("ابني سخن من امبارح", {"حمى", "حرارة"}),  # egyptian fever
        ("الحكيم بيداوم يوم السبت؟", {"الطبيب"}),  # levantine doctor
        ("الكشفية بكام عندكم؟", {"استشارة", "رسوم"}),  # egyptian consultation fee
        # insurance and cars
        ("دعمني واحد بالسيارة، شلون ارفع كلايم؟", {"حادث", "مطالبة"}),  # gulf
        ("الكونسطا ضروري باش نخلصو؟", {"محضر"}),  # maghrebi (constat)
        ("الكونترا ديالي فوقاش كيسالي؟", {"العقد"}),  # maghrebi (contrat)
        ("عندي بنشر بالطريق، ترسلون سطحة؟", {"ثقب", "إطار", "ساحبة"}),  # gulf
        ("الفيدونج داخل فالسيرفيس؟", {"تغيير", "الزيت", "صيانة"}),  # maghrebi
        # delivery, travel, government, banking
        ("الشوفير ماجاش لحد دابا", {"سائق", "لم", "يصل"}),  # maghrebi
        ("الباسبور لازم يكون ساري ست شهور؟", {"جواز", "السفر"}),  # levantine
        ("البيرمي ديالي ضاع", {"رخصة", "القيادة"}),  # maghrebi (permis)
        ("اجازة السوق مالتي خلصت", {"رخصة", "القيادة"}),  # iraqi
        ("الگيشي ماخدامش", {"الصراف", "الآلي"}),  # maghrebi (guichet)
        ("بدي سكر الحساب", {"إغلاق", "الحساب"}),  # levantine
        ("دقلي لما توصل الطلبية", {"اتصال"}),  # levantine: دقّلي, call me
        # food
        ("المنيو فيه اكل نباتي؟", {"قائمة", "الطعام"}),  # gulf / levantine
        ("الطلب وصل ناقص سندويش", {"ناقص", "شطيرة"}),  # all
    ],
)
def test_new_domain_words_meet_the_policy_words(question: str, expected: set[str]) -> None:
    assert_expands_to(question, expected)


@pytest.mark.parametrize("msa", ["ما الأوراق المطلوبة للتسجيل؟", "هل يوجد فحص طبي للطلاب؟",
                                 "ما رسوم استخراج جواز السفر؟", "متى تصدر العلامات؟",
                                 # an entry's key without a first letter that only looks
                                 # like a proclitic (بارسل، بنشرت، بنو…) must not be one:
                                 "لماذا أرسل الرسول؟", "متى نشرت المجلة الخبر؟",
                                 "أين استقرت قبائل بنو هلال؟", "من أسقط إمبراطورية الروم؟"])
def test_msa_homographs_of_new_entries_are_no_dialect_evidence(msa: str) -> None:
    # أوراق، فحص، جواز، علامات are MSA words too: tagged «all», never a region.
    assert not nlp.has_dialect_words(msa)


def test_kansel_keeps_its_kaf_and_is_dialect() -> None:
    # «كنسلت» is ~كنسل + ت, not the Moroccan prefix كـ + «نسلت».
    assert sorted(nlp.dialect_to_msa("كنسلت الطلب امبارح")) == ["أمس", "إلغاء"]
    assert nlp.has_dialect_words("كنسلت الطلب")


def test_an_msa_cancel_form_meets_the_policy_noun() -> None:
    # «ألغيت» keys as «غيت», «إلغاء» as «غاء»: only the bridge joins them; MSA, no dialect.
    assert nlp.dialect_to_msa("ألغيت الاشتراك") == ["إلغاء"]
    assert not nlp.has_dialect_words("ألغيت الاشتراك")


def test_the_article_never_precedes_a_two_letter_entry() -> None:
    # «الجم» is the gym (الجيم); Iraqi «جم» is كم, and only without the article.
    assert "كم" not in nlp.dialect_to_msa("اشتراك الجم شهري؟")
    assert "نادي" in " ".join(nlp.dialect_to_msa("اشتراك الجم شهري؟"))
    assert nlp.dialect_to_msa("جم سعر الاشتراك؟") == ["كم"]


@pytest.mark.parametrize("form", ["نعيطلكم", "نفتحلكن", "بتبعتولنا"])
def test_a_verb_with_l_and_a_pronoun_meets_its_stem(form: str) -> None:
    bridge = parse_bridge("~عيط\tاتصال\tmaghrebi\n~فتح\tفتح\tlevantine\n~بعت\tإرسال\tlevantine\n")
    assert bridge.expand(form), form


def test_function_words_are_split_off_as_written_or_after_a_conjunction() -> None:
    rest, found = split_function_words("بدي سكّر الحساب ولازم ادفع الفاتورة؟")
    assert found == ["بدي", "ولازم"]
    assert "الحساب" in rest and "بدي" not in rest
    # «الزي» with the article is the uniform, not Egyptian «زي» (like).
    assert split_function_words("سعر الزي المدرسي؟")[1] == []
    assert split_function_words("زي ما قلتلك")[1] == ["زي"]


def test_every_new_region_tag_is_known() -> None:
    # A typo in a region column would make a word silent dialect evidence.
    raw = resources.files("nlp").joinpath("data/bridge.tsv").read_text("utf-8")
    known = {"gulf", "egyptian", "levantine", "maghrebi", "iraqi", "arabizi", "all",
             "dialect", "msa"}
    for line in raw.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split("\t")
        regions = {r.strip() for r in fields[2].split(",")} if len(fields) > 2 else set()
        assert regions <= known, line


@pytest.mark.parametrize(
    ("noun", "other"),
    [("التلفون", "تلف"), ("كرتونة", "كرت"), ("الكوبونات", "كوب"), ("زيتون", "زيت"),
     ("عربون", "عرب"), ("بالون", "ون"), ("بروتين", "روتين")],
)
def test_a_noun_whose_ending_looks_like_a_suffix_keeps_its_own_key(noun: str, other: str) -> None:
    # KEYS_VERSION 3 (nlp.lexicon.STEM_KEPT): «تلفون» was keyed «تلف» (damage).
    assert other not in nlp.stem_and_surface_keys(noun), noun


def test_a_kept_noun_is_one_key_in_all_its_forms() -> None:
    stems = {nlp.search_keys(w)[0] for w in ("تلفون", "التلفون", "تلفوني", "بتلفونك", "تلفونات")}
    assert stems == {"تلفون"}

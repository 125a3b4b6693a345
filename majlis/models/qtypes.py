"""Question typing: what a support question asks for, and whether a sentence carries it.

«كم/شكد/قديش» asks a quantity, «متى/امتى» a time or day, «وين/فين» a place or
page, «هل/واش» (or a wh-less «يشمله الضمان؟») a yes or no, «كيف/شلون» a
procedure, «ما هو/من هي/شو هي X» (a short subject) a definition.  Split from
:mod:`majlis.models.answers` (which chooses among sentences) so the typing
vocabulary can grow without the selection growing.

    >>> question_type("قديش بياخد التوصيل؟").value, answers_type("التوصيل خلال يومين.",
    ...     QuestionType.QUANTITY)
    ('quantity', True)
"""

from __future__ import annotations

import re
from enum import StrEnum

from nlp.normalize import latin_lower

__all__ = [
    "MARKS",
    "PROCLITIC",
    "QuestionType",
    "answers_type",
    "asks_duration",
    "asks_existence",
    "asks_notice",
    "asks_price",
    "carries_notice",
    "carries_price",
    "fold_words",
    "in_vocab",
    "looks_dialect",
    "proclitic_forms",
    "question_type",
    "type_strength",
]


class QuestionType(StrEnum):
    QUANTITY = "quantity"
    TIME = "time"
    PLACE = "place"
    YES_NO = "yes_no"
    PROCEDURE = "procedure"
    DEFINITION = "definition"
    REQUIREMENT = "requirement"
    OTHER = "other"


# Question words per type, folded the way nlp.fold folds (ة→ه, ى→ي,
# أإآ→ا), Arabic and Arabizi.  The first question word in the text decides.
_TYPE_WORDS: dict[QuestionType, frozenset[str]] = {
    QuestionType.QUANTITY: frozenset(
        "كم بكم كام بكام شكد بشكد اشكد شقد بشقد قديش بقديش قديه قداش بقداش قداه شحال بشحال"
        " جم"  # Iraqi «چم» folds to «كم» (_FOLD)
        " kam kaam bkam adesh 2adesh addesh 2addesh 2addeh addeh 2adde adde 2adeh adeh"
        " shkad shgad chkad ch7al sh7al chhal shhal ch7al cham gaddesh"
        # Maghrebi «قداش» as Arabizi writes it (9 and q for ق, ch and sh for ش).
        " 9adech 9addech 9adesh 9addesh 9adach qadech qaddech gadech kadech".split()
    ),
    QuestionType.TIME: frozenset(
        "متي امتي امتا ايمتي ايمتا وقتاش فوقاش شوقت شوكت اشوكت ايمته وقتيش امتين"
        " emta imta emtaa imtaa emte imte meta mata mita waqtash waqtach wa9tash wa9tach"
        " wqtach fo9ash fou9ach foqash shwakit shwaket ashwakit".split()
    ),
    QuestionType.PLACE: frozenset(
        "اين وين فين منين وينه فينه وينكم فينكم وينو فينو وينها فينها فاين"
        " wen wein ween wenn fen fein fin feen fayn fain mnin mneen mnein".split()
    ),
    QuestionType.YES_NO: frozenset("هل واش wach wash wesh hal".split()),
    QuestionType.PROCEDURE: frozenset(
        "كيف شلون اشلون ازاي كيفاش كيفاه كيفيه طريقه"
        " kif kaif keef kayf kifeh shlon shloon ezay izay ezzay izzay kifash kifach".split()
    ),
}
# Words that make a wh-less question a yes/no one: «يشمله الضمان؟», «اكو فرع؟».
_YES_NO_CUES = frozenset(
    "فيه يوجد اكو كاين ممكن ينفع يصير يصلح يمكن اقدر نقدر يشمل يشمله"
    " تقبلون تقبلوا مسموح تدفع ادفع"
    # «can I / may I / is it possible» in the five regions: Levantine فيني/بقدر/بيصير,
    # Egyptian ينفع/بينفع/اقدر, Gulf يمديني/اقدر, Iraqi اكدر/يصير, Maghrebi نقدر/نجم/يمكن,
    # Tunisian نجم; «still» (لسه، مازال، باقي) asks whether something still holds.
    " فيني فينا فيك بقدر بنقدر تقدر يقدر اكدر نكدر تكدر يمديني يمدينا يمدي بينفع بيصير"
    " يجوز نقدرو نجم نجمو نجموا قادر لسه لسا مازال بعده"
    " aku fi fih feeh momken mumkin mumken yenfa3 yinfa3 binfa3 y9eer ysir yseer ysyr"
    " agdar a2dar ader n9der n2der fini feeni yemdi".split()
)
# A cue that closes the question asks it too: «ابي اغير العنوان، ينفع؟», «…، يصير؟».
_YES_NO_TAIL = frozenset(
    "ينفع بينفع يصير بيصير يصلح ممكن يمكن مسموح يمدي يجوز ولا ولالا لا"
    " yenfa3 y9eer ysir momken mumkin wala".split()
)

# Evidence that a sentence answers a type (folded, whole words or affixes).  Every
# vocabulary here is written folded, as fold_words reads text (ئ → ي: «دقايق»,
# «ميه», «قايمه»): an entry spelt «دقائق» could never match (tests keep it so).
_DIGIT = re.compile(r"[0-9\u0660-\u0669\u06f0-\u06f9]")
_NUMBER_WORDS = frozenset(
    "واحد واحده اثنين اثنان اثنتين يومين يومان ساعتين ثلاث ثلاثه اربع اربعه خمس خمسه"
    " ست سته سبع سبعه ثماني ثمانيه تسع تسعه عشر عشره عشرين ثلاثين اربعين خمسين ستين"
    " ميه مايه ميتين الف الفين نصف ربع ثلث ضعف بالميه بالمايه مجانا مجاني مجانيه"
    " سنتين سنتان شهرين اسبوعين ساعتين دقيقتين"
    " ريال ريالا درهم درهما دينار دينارا جنيه جنيها ليره دولار يورو".split()
)
_TIME_WORDS = frozenset(
    "يوم ايام يومين ساعه ساعات ساعتين اسبوع اسابيع اسبوعين شهر اشهر شهرين سنه سنتين سنوات"
    " عام عامين اعوام دقيقتين"
    " دقيقه دقايق صباحا صباح مساء مساءا ظهرا عصرا ليلا فجرا الاحد الاثنين الثلاثاء"
    " الاربعاء الخميس الجمعه السبت احد اثنين ثلاثاء اربعاء خميس جمعه سبت خلال بعد قبل"
    " يناير فبراير مارس ابريل مايو يونيو يوليو اغسطس سبتمبر اكتوبر نوفمبر ديسمبر"
    " القرن قرن عطله عطلات".split()
)
_PLACE_WORDS = frozenset(
    "في شارع حي مدينه منطقه فرع فروع مركز طريق صفحه قسم اعدادات تطبيق موقع الموقع موقعنا"
    " عنوان بجوار مقابل قرب داخل خارج مول مجمع طابق قايمه رابط بوابه"
    " الرياض جده دبي القاهره بيروت عمان بغداد الدار البيضاء الرباط تونس الجزاير".split()
)
_POLARITY_WORDS = frozenset(
    "لا ليس ليست لن لم غير يشمل تشمل يمكن يمكنك ممكن متاح متاحه يحق يجوز نعم مسموح"
    " ممنوع يقبل نقبل تقبل يتوفر تتوفر يوجد توجد مشمول مشموله".split()
)
# A definition states its subject, then what it is: «الإيدز … هو مرض يصيب…»,
# «الشيوعية عبارة عن…», «يعرف التوحد بأنه…».
_DEFINITION_WORDS = frozenset(
    "هو هي هم وهو وهي وهم عباره يعرف تعرف يعد تعد يعتبر تعتبر يقصد ويقصد".split()
)
_PROCEDURE_WORDS = frozenset(
    "افتح اختر اضغط ادخل اكتب ارسل اتصل تواصل قم اتبع ثم عبر خلال بواسطه طريق يمكنك"
    " يرجي يجب زر تطبيق الاعدادات رابط املا احضر قدم توجه سجل".split()
)
# «وش الأوراق المطلوبة؟», «شو لازم جيب معي؟», «ايش الشروط؟»: what one must bring or
# meet is answered by a sentence that states a condition or a document.
_REQUIREMENT_WORDS = frozenset(
    "يشترط يشترطون شرط شروط بشرط يجب يلزم يتطلب تتطلب مطلوب مطلوبه المطلوبه ومعك معك"
    " احضار احضر تقديم الهويه هويه الاقامه اقامه جواز الجواز سجل السجل شهاده الشهاده"
    " فاتوره الفاتوره اثبات صوره".split()
)
# Evidence words that go with many sentences that do not answer: «خلال/قبل/بعد» for a
# time, «في» for a place, «ثم/عبر» for a procedure.  They count half (type_strength),
# so «يصل الطلب خلال 3 أيام» beats «غيّر العنوان قبل الشحن» for «امتى يوصل؟».
_WEAK_EVIDENCE: dict[QuestionType, frozenset[str]] = {
    QuestionType.TIME: frozenset("خلال بعد قبل".split()),
    QuestionType.PLACE: frozenset("في داخل خارج تطبيق".split()),
    QuestionType.PROCEDURE: frozenset(
        "ثم عبر خلال بواسطه طريق يمكنك يرجي يجب تطبيق تواصل".split()),
    QuestionType.YES_NO: frozenset("يمكن يمكنك ممكن".split()),
    # «هو» also stands in sentences about something else («وهو ما يعادل…»); the
    # strong evidence is a sentence that opens with the subject (answers.py).
    QuestionType.DEFINITION: _DEFINITION_WORDS,
}
_TYPE_EVIDENCE: dict[QuestionType, frozenset[str]] = {
    QuestionType.QUANTITY: _NUMBER_WORDS,
    QuestionType.TIME: _TIME_WORDS,
    QuestionType.PLACE: _PLACE_WORDS,
    QuestionType.YES_NO: _POLARITY_WORDS,
    QuestionType.PROCEDURE: _PROCEDURE_WORDS,
    QuestionType.DEFINITION: _DEFINITION_WORDS,
    QuestionType.REQUIREMENT: _REQUIREMENT_WORDS,
}
# Digits answer «كم»; for «متى» a number must come with a time word (أيام، الساعة),
# else «رسوم التوصيل 25 ريالا» would answer «امتى يوصل الطلب؟».
_NUMERIC_TYPES = frozenset({QuestionType.QUANTITY})

# Borrowed letters first: Iraqi/Gulf گ (U+06AF, from ق) and چ (U+0686, «چم» = كم),
# Maghrebi ڤ (U+06A4) and پ (U+067E), so «اگدر» is one word (nlp.bridge does the same).
_FOLD = str.maketrans({"گ": "ق", "چ": "ك", "ڤ": "ف", "پ": "ب", "ة": "ه", "ى": "ي", "أ": "ا",
                       "إ": "ا", "آ": "ا", "ٱ": "ا", "ؤ": "و", "ئ": "ي"})
MARKS = re.compile("[\u064b-\u0652\u0670\u0640]")
_WORD = re.compile("[\u0621-\u064a]+|[a-z0-9']+")
PROCLITIC = re.compile("^(?:وال|فال|بال|كال|لل|ال|و|ف|ب)(?=[\u0621-\u064a]{3})")


def proclitic_forms(word: str) -> tuple[str, ...]:
    """A folded word as written and, when PROCLITIC would cut it, without the cut.

    PROCLITIC cannot tell a conjunction from a noun's own first letter: «والتوصيل»
    is «و» + «التوصيل», but «باقه», «وكاله», «فتره», «وثائق» and «وحده» lose a letter
    of their own («اقه», «كاله», «تره», «ثائق», «حده»).  A word is looked up in a
    vocabulary under both forms, so neither reading is lost.

    >>> proclitic_forms("والرسوم"), proclitic_forms("فتره"), proclitic_forms("كم")
    (('والرسوم', 'رسوم'), ('فتره', 'تره'), ('كم',))
    """
    bare = PROCLITIC.sub("", word)
    return (word, bare) if bare != word else (word,)


def in_vocab(word: str, vocab: frozenset[str] | dict[str, QuestionType]) -> bool:
    """Is the folded word, under one of its :func:`proclitic_forms`, in ``vocab``?

    >>> in_vocab("وثايق", _REQUIREMENT_CUES), in_vocab("والرسوم", _REQUIREMENT_CUES)
    (True, False)
    """
    return any(f in vocab for f in proclitic_forms(word))


def fold_words(text: str) -> list[str]:
    """The folded Arabic and Latin words of ``text`` (Latin accents folded: nlp.normalize).

    >>> fold_words("الفاتورة ديال la fièvre؟")
    ['الفاتوره', 'ديال', 'la', 'fievre']
    """
    return _WORD.findall(MARKS.sub("", latin_lower(text)).translate(_FOLD))


# «ما مدة الضمان؟», «شو مواعيد الدوام؟»: a what-question about a measure noun asks
# for a quantity or a time, as «كم» or «متى» would (folded, proclitics stripped).
_MEASURE_NOUNS: dict[str, QuestionType] = {
    **dict.fromkeys("مده مدته صلاحيه سعر اسعار رسوم تكلفه كلفه عدد قيمه نسبه مبلغ حد"
                    " مهله فتره عمر سن رقم ارقام وزن سرعه".split(), QuestionType.QUANTITY),
    **dict.fromkeys("مواعيد موعد اوقات توقيت ايام يوم".split(), QuestionType.TIME),
}
# A «كم» question about a span of time («كم مدة…», «شكد يوم…», «قديش بياخد وقت»):
# its answer carries a time unit, not just a number (a price would not do).
_DURATION_WORDS = frozenset(
    "مده مدته المده وقت الوقت فتره مهله يوم ايام يوما اسبوع اسابيع شهر اشهر شهور"
    " سنه سنين سنوات ساعه ساعات دقيقه دقايق".split()
)
_WHAT = frozenset("ما ماذا ماهي ماهو شو وش ايش شنو شنهو ايه اشنو شنيه what".split())
# What is required: papers, documents, conditions, or what one must bring
# («شو لازم جيب», «ايش احتاج», «شنو اريد حتى…», Maghrebi «شنو خاصني»), folded.
_REQUIREMENT_CUES = frozenset(
    "اوراق ورق مستندات مستند وثايق وثيقه شروط شرط متطلبات مطلوب مطلوبه لازم يلزم"
    " احتاج نحتاج يحتاج خاصني خصني اجيب جيب نجيب احضر bring papers wra9 awra2 shorot"
    " lazem lazim".split()
)
# The definite hour before «كم/كام/قديش…»: «الساعة كام» asks what time (folded).
_THE_HOUR = frozenset("الساعه للساعه".split())
# «لأي ساعة», «أي يوم»: which hour/day asks a time.
# Dialect «which»: Egyptian انهي, Iraqi ياتو/يا, Maghrebi اينا/اشمن, Arabizi.
_WHICH = frozenset("اي لاي باي انهي اينا اشمن ياتو ay ayy anhi ina ashmen".split())
_WHICH_TIME = frozenset("ساعه يوم وقت تاريخ نهار شهر sa3a youm yom nhar wa9t wa2t"
                        " ساعات ايام اوقات مواعيد موعد تواريخ شهور اشهر سنه".split())
# «أي فرع», «انهي مكان», «ياتو منطقة»: which branch/place asks a place.
_WHICH_PLACE = frozenset("فرع فروع مكان اماكن منطقه مناطق مدينه مدن مركز مراكز عنوان"
                         " محل محلات معرض صفحه".split())
# Egyptian «قد ايه» (how much / how long), Arabic and Arabizi.
_HOW_MUCH = frozenset({("قد", "ايه"), ("قد", "اي"), ("ad", "eh"), ("2ad", "eh"), ("ad", "eih")})


def question_type(text: str) -> QuestionType:
    """What the question asks for.

    >>> [question_type(q).value for q in ("شكد سعر التوصيل؟", "امتى تفتحون؟",
    ...     "وين أقرب فرع؟", "يشمله الضمان؟", "شلون أغير الباسورد؟", "abi a3raf")]
    ['quantity', 'time', 'place', 'yes_no', 'procedure', 'other']
    >>> [question_type(q).value for q in ("المعمل بيفتح الساعة كام؟", "كم ساعة تاخذ الصيانة؟",
    ...     "الموقف قديش الساعة؟")]
    ['time', 'quantity', 'quantity']
    >>> [question_type(q).value for q in ("بأي ايام تفتحون؟", "انهي فرع قريب مني؟",
    ...     "تعطوني خط مؤقت؟ لكم شهر؟", "الهدية لكم؟")]
    ['time', 'place', 'quantity', 'other']
    """
    words = fold_words(text)
    for i, word in enumerate(words):
        # «لشحال», «لامتى», «لوين»: a question word after the preposition ل.
        # Three letters at least after it: «لكم» is «for you», not «كم».
        forms = (word, PROCLITIC.sub("", word),
                 word[1:] if word[:1] == "ل" and len(word) > 3 else word)
        for qtype, vocab in _TYPE_WORDS.items():
            if any(f in vocab for f in forms):
                if qtype is QuestionType.QUANTITY and i > 0 and words[i - 1] in _THE_HOUR:
                    # «بيفتح الساعة كام؟», «لحد الساعة كم؟»: the hour asked is a clock
                    # time, answered by «من السابعة صباحا»; «كم ساعة» (how many hours)
                    # and «قديش الساعة» (how much an hour) stay quantities.
                    return QuestionType.TIME
                return qtype
    bare = [PROCLITIC.sub("", w) for w in words]
    for prev, word, written in zip(["", *bare], bare, words, strict=False):
        if prev in _WHICH and (word in _WHICH_TIME or written in _WHICH_TIME):
            return QuestionType.TIME
        if prev in _WHICH and (word in _WHICH_PLACE or written in _WHICH_PLACE):
            return QuestionType.PLACE  # «أي فروع»: as written, not PROCLITIC's «روع»
        if prev == "لكم" and word in _DURATION_WORDS:
            # «لكم يوم؟» (for how many days): «لكم» is «for you» unless a unit follows.
            return QuestionType.QUANTITY
        if (prev, word) in _HOW_MUCH:
            return QuestionType.QUANTITY
    if any(w in _WHAT for w in words[:2]):
        for written, word in zip(words[1:4], bare[1:4], strict=True):
            # «الحد», «السن»: the article on a two-letter noun, which PROCLITIC keeps;
            # «فترة»: a noun PROCLITIC cuts («تره»), found as written.
            noun = word[2:] if word.startswith("ال") and word[2:] in _MEASURE_NOUNS else word
            noun = written if noun not in _MEASURE_NOUNS else noun
            if noun in _MEASURE_NOUNS:
                return _MEASURE_NOUNS[noun]
    if any(w in _WHAT for w in words[:2]) and any(
            in_vocab(w, _REQUIREMENT_CUES) for w in words[1:5]):
        return QuestionType.REQUIREMENT
    if _asks_definition(words):
        return QuestionType.DEFINITION
    if "؟" in text or "?" in text:
        if any(w in _YES_NO_CUES for w in words[:4]) or (words and words[-1] in _YES_NO_TAIL):
            return QuestionType.YES_NO
    return QuestionType.OTHER


# «ما هو السرطان؟», «من هي نانسي عجرم؟», «شو هي الباقة الذهبية؟», «ما معنى…»:
# what or who, then the copula or a word of defining, asks what the subject *is*.
_COPULA = frozenset("هو هي هم".split())
_WHO = frozenset("من مين منو".split())
_DEFINE = frozenset("تعريف معني مفهوم".split())
_FUSED = frozenset("ماهو ماهي منهو منهي".split())
# «ما هي الدولة التي تحد سوريا؟» asks an attribute of another subject, not a definition.
_RELATIVE = frozenset("التي الذي اللتي اللذي اللي الي اللذين اللواتي".split())


# Words naming the subject: more, and the question asks one attribute of it
# («ما هو اول نادي لعب فيه رونالدو؟»), which a definition would not answer.
_SUBJECT_WORDS = 3


def _asks_definition(words: list[str]) -> bool:
    if not words or any(w in _RELATIVE for w in words):
        return False
    first, second = words[0], words[1] if len(words) > 1 else ""
    if first in _FUSED or first == "عرف":
        subject = words[1:]
    elif first in _WHAT | _WHO and second in _COPULA:
        subject = words[2:]
    elif first in _WHAT and second in _DEFINE:
        subject = words[2:]
    else:
        return False
    return 0 < len(subject) <= _SUBJECT_WORDS


# «Do you have / is there / do you offer …?» opening a question, folded: Gulf/Iraqi
# عندكم، عدكم، اكو، فيه; Levantine في، عندكن، بتعملوا; Egyptian فيه، بتبيعوا;
# Maghrebi كاين، كتبيعو; MSA يوجد، تتوفر، توفرون، تقدمون.
_EXISTENCE = frozenset(
    "عندكم عندكن عندك عدكم فيه في فيش اكو كاين كاينه يوجد توجد تتوفر يتوفر تقدمون"
    " توفرون بتعملوا بتعملو تسوون بتاجروا تبيعون بتبيعوا بتبيعو كتبيعو".split()
)


def asks_existence(text: str) -> bool:
    """Does the question ask whether something is had or offered?

    >>> asks_existence("عندكم خصم للطلاب؟"), asks_existence("واش كاين شي عرض؟")
    (True, True)
    >>> asks_existence("كم رسوم التوصيل؟"), asks_existence("الخصم عندكم كم؟")
    (False, False)
    """
    words = [w for w in fold_words(text) if w not in ("هل", "واش", "wach", "wash")]
    return bool(words) and words[0] in _EXISTENCE


def asks_duration(text: str) -> bool:
    """Is a quantity question asking how long?

    >>> asks_duration("شكد مدة الأقساط؟"), asks_duration("كم رسوم التوصيل؟")
    (True, False)
    """
    return question_type(text) is QuestionType.QUANTITY and any(
        in_vocab(w, _DURATION_WORDS) for w in fold_words(text))


# A «كم» question about a price («بكام», «كم السعر», «قديش بتكلف», «شحال خاصني نخلص»):
# its answer carries a currency, a percentage or «free», not just any number.
_PRICE_WORDS = frozenset(
    "بكم بكام بشحال بقديش بقداش بشكد سعر السعر اسعار سعره سعرها رسوم الرسوم رسومها تكلفه"
    " كلفه يكلف تكلف بيكلف بتكلف ثمن الثمن تمن التمن فلوس مبلغ تاخذون تحاسبون نخلص ندفع"
    " ادفع bkam b2addesh se3r s3r ra7sum rsoom rosoom floos flous".split()
)
_PRICE_EVIDENCE = frozenset(
    "ريال ريالا ريالات درهم درهما دراهم دينار دينارا دنانير جنيه جنيها جنيهات ليره ليرات"
    " دولار دولارا يورو بالميه بالمايه مجانا مجاني مجانيه".split()  # folded: ئ → ي
)


# «شلون اعرف…؟», «هعرف ازاي…؟», «kifach n3ref…?»: how the customer will *know*
# (folded: the verb «to know» with the five regions' person and future prefixes).
_KNOW_VERBS = frozenset(
    "اعرف نعرف تعرف هعرف هنعرف حعرف حنعرف بعرف بنعرف راح اعرف كنعرف غنعرف نعرفو"
    " a3ruf a3rif a3ref a3raf n3ref na3ref n3arf na3rif ne3ref".split()
)
# How one is told or shown: a message, a notification, a call, a status shown.
_NOTICE_EVIDENCE = frozenset(
    "رساله رسايل نصيه اشعار اشعارا تنبيه نبلغك نبلغ يبلغ تبلغ نرسل يرسل ترسل يصلك تصلك"
    " يصل تصل يتصل نتصل بريد تعرض يعرض تظهر يظهر".split()
)


def asks_notice(text: str) -> bool:
    """Does a how-question ask how the customer will know something?

    >>> asks_notice("شلون اعرف الجهاز وصل؟"), asks_notice("كيف اغير كلمة المرور؟")
    (True, False)
    """
    return question_type(text) is QuestionType.PROCEDURE and any(
        w in _KNOW_VERBS for w in fold_words(text))


def carries_notice(sentence: str) -> bool:
    """Does ``sentence`` say how one is told or shown (a message, a notification)?

    >>> carries_notice("نرسل لك رسالة نصية عند وصول الجهاز."), carries_notice("افتح صفحة طلباتي.")
    (True, False)
    """
    return any(f in _NOTICE_EVIDENCE for w in fold_words(sentence) for f in _forms(w))


def asks_price(text: str) -> bool:
    """Is a quantity question asking what something costs?

    >>> asks_price("خطة الحماية بكام؟"), asks_price("كم يوم يبقى الطرد؟")
    (True, False)
    """
    return question_type(text) is QuestionType.QUANTITY and not asks_duration(text) and any(
        w in _PRICE_WORDS or PROCLITIC.sub("", w) in _PRICE_WORDS for w in fold_words(text))


def carries_price(sentence: str) -> bool:
    """Does ``sentence`` state a price: a currency, a percentage or «free»?

    >>> carries_price("تبلغ الرسوم 10 بالمئة من السعر."), carries_price("لمدة سنتين.")
    (True, False)
    """
    return "%" in sentence or "٪" in sentence or any(
        f in _PRICE_EVIDENCE for w in fold_words(sentence) for f in _forms(w))


def _forms(word: str) -> tuple[str, ...]:
    """:func:`proclitic_forms`, and the bare word without the accusative alef
    («شهرا», «يوما», «عاما»: a count's unit written with tanwin)."""
    forms = proclitic_forms(word)
    bare = forms[-1]
    if len(bare) > 3 and bare.endswith("ا"):
        return (*forms, bare[:-1])
    return forms


def type_strength(sentence: str, qtype: QuestionType) -> float:
    """How surely ``sentence`` carries what a ``qtype`` question asks for: 1 for
    strong evidence (a number, a duration, a weekday, an imperative step), 0.5 when
    only a weak word stands (:data:`_WEAK_EVIDENCE`), 0 for none.

    >>> [type_strength(s, QuestionType.TIME) for s in ("يصل الطلب خلال 3 أيام.",
    ...     "غيّر العنوان قبل الشحن.", "نوفر التوصيل.")]
    [1.0, 0.5, 0.0]
    """
    if qtype is QuestionType.OTHER:
        return 0.0
    if qtype in _NUMERIC_TYPES and _DIGIT.search(sentence):
        return 1.0
    vocab = _TYPE_EVIDENCE[qtype]
    weak = _WEAK_EVIDENCE.get(qtype, frozenset())
    best = 0.0
    for w in fold_words(sentence):
        forms = _forms(w)
        if any(f in vocab for f in forms):
            if not any(f in weak for f in forms):
                return 1.0
            best = 0.5
    return best


def answers_type(sentence: str, qtype: QuestionType) -> bool:
    """Does ``sentence`` carry what a ``qtype`` question asks for?

    >>> answers_type("رسوم التوصيل 15 ريالا.", QuestionType.QUANTITY)
    True
    >>> answers_type("لا يشمل الضمان الكسر.", QuestionType.YES_NO)
    True
    """
    if qtype is QuestionType.OTHER:
        return False
    if qtype in _NUMERIC_TYPES and _DIGIT.search(sentence):
        return True
    vocab = _TYPE_EVIDENCE[qtype]
    return any(w in vocab or PROCLITIC.sub("", w) in vocab for w in fold_words(sentence))


# Words only dialect speech uses (the bridge knows many more; these stand when
# no bridge is injected), and the Egyptian/Levantine بـ imperfect (بيفتح، بتوصلوا).
_DIALECT_MARKERS = frozenset(
    "شو وش ايش شنو شنهو ليش ليه علاش وين فين امتي امتا ايمتي وقتاش فوقاش قديش قداش شحال"
    " شكد بكام كام شلون اشلون ازاي كيفاش عايز عاوز بدي ابي ابغي ابغا بغيت مش مو موب مب"
    " اكو ماكو مافي مفيش كاين دلوقتي هلق هسه دابا الحين عشان علشان باش ديال تبع مالتي"
    " مالتكم عدكم ليا شوي شويه".split()
)
_B_IMPERFECT = re.compile("^ب[يتن][\u0621-\u064a]{3}(?:و|وا)?$")


def looks_dialect(question: str) -> bool:
    """Does the question carry dialect words?  (The fallback when the service
    injects no ``dialect_cue``: a few markers, no lexicon.)

    >>> looks_dialect("هو الفرع بيفتح يوم الجمعة؟"), looks_dialect("متى يفتح الفرع؟")
    (True, False)
    """
    words = fold_words(question)
    return any(w in _DIALECT_MARKERS or _B_IMPERFECT.match(w) for w in words)

"""The keys a sentence must meet to answer a question: its own, and its MSA bridge.

For answer selection (``majlis.models``): a customer asks «بيحسبوا كام على
التقسيط؟ وبعد كم يوم ترجع الفلوس؟»; the sentence that answers says «تفرض
الشركة رسوماً … ويعاد المبلغ خلال ثلاثة أيام».  :func:`question_keys` gives
the question's own keys (counts already digits, ``nlp.number_words``) and,
apart, the keys of the MSA words the bridge (``nlp.bridge``) adds, which a
caller should weigh below the customer's own words, as memory search does
(``memory.expansion.BRIDGE_WEIGHT``).  Both lists come from the same key
function, so they meet a sentence keyed with it.

    >>> q = question_keys("بيحسبوا كام على التقسيط؟")
    >>> q.own, q.msa
    (['يحسبو', 'تقسيط'], ['رسوم', 'تفرض', 'تحتسب'])
    >>> q = question_keys("الفلوس بترجع بعد تلات تيام؟")
    >>> q.own, q.msa[:3]
    (['فلوس', 'ترجع', '3', 'ايام'], ['استرداد', 'مبلغ', 'اعاد'])
"""

from __future__ import annotations

from dataclasses import dataclass

from nlp.bridge import dialect_to_msa
from nlp.keys import KeyFunction, search_keys

__all__ = ["QuestionKeys", "question_keys"]


@dataclass(frozen=True, slots=True)
class QuestionKeys:
    own: list[str]  # the question's keys, in order, duplicates dropped
    msa: list[str]  # keys of the bridge's MSA words the question does not already hold

    @property
    def all(self) -> list[str]:
        return self.own + self.msa


def question_keys(text: str, keys: KeyFunction = search_keys) -> QuestionKeys:
    """The question's own keys and its MSA-bridge keys, through one key function.

    >>> question_keys("ما هي رسوم التوصيل؟").msa
    []
    """
    own = list(dict.fromkeys(keys(text)))
    have = set(own)
    msa = [k for k in dict.fromkeys(keys(" ".join(dialect_to_msa(text)))) if k not in have]
    return QuestionKeys(own, msa)

"""Extractive answering: pick the sentences of recalled text that answer a question.

Never generates: every word of an answer comes from the tenant's own text.
A sentence scores by the question's content keys it contains, each weighted by
how rare it is among the candidate sentences (a local IDF), so the entity name
shared by a whole article counts less than the word that picks one sentence.

    >>> s = split_sentences("وُلد في المدينة المنورة عام 1958. عمل صحفيًا في جدة.")
    >>> s
    ['وُلد في المدينة المنورة عام 1958.', 'عمل صحفيًا في جدة.']
    >>> split_sentences("الزعفران (بالإنجليزية: Saffron؛ وبالفارسية: زعفران) هو توابل.")
    ['الزعفران (بالإنجليزية: Saffron؛ وبالفارسية: زعفران) هو توابل.']
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from majlis.models.types import Recalled
from nlp.keys import KeyFunction, content_keys

__all__ = ["Extract", "best_extract", "split_sentences"]

# A sentence ends at . ! ? or Arabic ؟ (U+061F) ؛ (U+061B) … (U+2026) followed by
# space, or at a line break. Requiring the space keeps 3.5 and 1.2.3 whole.
_BOUNDARY = re.compile("(?<=[.!?\u061f\u061b\u2026])\\s+|\\n+")
# A parenthesis closed on the same line: a boundary inside it is not one.  An
# encyclopedic lead names its subject, then gives other spellings in brackets
# separated by ؛ («محمد علي باشا (بالتركية العثمانية: …؛ وبالتركية الحديثة: …)،
# هو مؤسس…»): cut there, the subject's sentence would stop before what it says.
_PARENTHESIS = re.compile(r"\([^()\n]{0,300}\)")
# A fragment this short ("د." before a name, "ص." for a page) is glued back on.
_MIN_WORDS = 3
# A second sentence must add at least this much coverage to be worth its words.
_MIN_GAIN = 0.1


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` in order, original characters untouched."""
    text = text.strip()
    inside = [m.span() for m in _PARENTHESIS.finditer(text)]
    pieces, start = [], 0
    for cut in _BOUNDARY.finditer(text):
        if not any(a < cut.start() < b for a, b in inside):
            pieces.append(text[start:cut.start()])
            start = cut.end()
    pieces.append(text[start:])
    out: list[str] = []
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        if out and len(out[-1].split()) < _MIN_WORDS:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


@dataclass(frozen=True, slots=True)
class Extract:
    """The best answer found: its sentences, source and how well it covers the question."""

    source: Recalled
    sentences: tuple[str, ...]
    coverage: float  # weighted share of the question's keys in the chosen sentences, 0..1
    chunk_coverage: float  # unweighted share of question keys anywhere in the chunk, 0..1

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


def best_extract(
    question: str,
    recalled: Sequence[Recalled],
    *,
    keys: KeyFunction,
    stop: frozenset[str],
    max_sentences: int = 2,
) -> Extract | None:
    """The sentences best answering ``question`` from one recalled chunk, or None.

    Ties go to the chunk ranked higher by memory, then to the earlier sentence,
    so the result is deterministic for the same inputs.
    """
    q_keys = set(content_keys(question, keys, stop))
    if not q_keys or not recalled:
        return None
    pool: list[tuple[int, int, str, frozenset[str]]] = []
    for rank, item in enumerate(recalled):
        for pos, sentence in enumerate(split_sentences(item.text)):
            pool.append((rank, pos, sentence, frozenset(keys(sentence))))
    if not pool:
        return None
    df = Counter(k for *_, s_keys in pool for k in s_keys & q_keys)
    n = len(pool)
    weight = {k: math.log((n + 1) / (df[k] + 0.5)) for k in q_keys}
    total = sum(weight.values())

    def covered(found: frozenset[str] | set[str]) -> float:
        return sum(weight[k] for k in q_keys & found) / total if total else 0.0

    # Between equally covering sentences, prefer the chunk whose *title* names
    # the question's topic: «رسوم التوصيل» belongs to «التوصيل», not «الإرجاع».
    title_cover = [covered(frozenset(keys(item.title))) for item in recalled]
    best: tuple[float, float, int, int] | None = None
    for rank, pos, _sentence, s_keys in pool:
        candidate = (covered(s_keys), title_cover[rank], -rank, -pos)
        if best is None or candidate > best:
            best = candidate
    assert best is not None
    score, _title, neg_rank, neg_pos = best
    rank, pos = -neg_rank, -neg_pos
    if score <= 0:
        return None
    chunk = [p for p in pool if p[0] == rank]
    chosen = {pos}
    found = set(chunk[pos][3])
    # Add a second sentence only if it brings question keys the first lacks.
    while len(chosen) < max_sentences:
        gains = [
            (covered(found | p[3]) - covered(found), -p[1]) for p in chunk if p[1] not in chosen
        ]
        if not gains or max(gains)[0] < _MIN_GAIN:
            break
        _gain, neg = max(gains)
        chosen.add(-neg)
        found |= chunk[-neg][3]
    chunk_keys = set().union(*(p[3] for p in chunk))
    return Extract(
        source=recalled[rank],
        sentences=tuple(chunk[i][2] for i in sorted(chosen)),
        coverage=covered(found),
        chunk_coverage=len(q_keys & chunk_keys) / len(q_keys),
    )

"""Tokenisation into typed spans with offsets into the input string.

One compiled alternation does the whole job in C; Python only wraps matches.
Order of alternatives matters: Arabic words first (the commonest token, and
no URL/mention/hashtag starts with an Arabic letter), URL before MENTION
(``user@host.com``), LATIN before NUMBER so Arabizi like ``7abibi`` stays one
word.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import NamedTuple

__all__ = ["Token", "TokenKind", "tokenize", "typed_texts"]


class TokenKind(StrEnum):
    WORD = "word"  # Arabic-script word (letters, diacritics, tatweel)
    NUMBER = "number"  # any decimal digits (ASCII, ٠–٩, ۰–۹) with separators
    LATIN = "latin"  # non-Arabic alphabetic word, digits allowed (Arabizi: 3ayez)
    URL = "url"  # http(s)://…, www.…, bare domains with a path, e-mail addresses
    MENTION = "mention"  # @user
    HASHTAG = "hashtag"  # #وسم_طويل
    EMOJI = "emoji"  # one pictograph incl. skin tone / VS16 / ZWJ sequence / flag
    PUNCT = "punct"  # any other visible character


class Token(NamedTuple):
    """One token; ``text == source[start:end]``. Immutable (a named tuple: the
    cheapest immutable object to build, and tokenize() builds one per token)."""

    text: str
    kind: TokenKind
    start: int
    end: int


# Arabic letters: U+0621–U+063A, U+0641–U+064A, U+066E–U+06D3, U+06D5,
# U+06EE–U+06EF, U+06FA–U+06FF, supplements U+0750–U+077F, U+08A0–U+08FF,
# presentation forms U+FB50–U+FDFF, U+FE70–U+FEFC.
_AR_LETTER = (
    "\u0621-\u063a\u0641-\u064a\u066e-\u06d3\u06d5\u06ee\u06ef\u06fa-\u06ff"
    "\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufefc"
)
# Marks that continue an Arabic word: harakat U+064B–U+065F, dagger alef
# U+0670, Quranic marks U+0610–U+061A / U+06D6–U+06ED, tatweel U+0640.
_AR_CONT = "\u064b-\u065f\u0670\u0610-\u061a\u06d6-\u06ed\u0640"
# A Latin (or other non-Arabic script) letter: \w minus digits, underscore
# and the Arabic block.
_LAT_LETTER = f"[^\\W\\d_{_AR_LETTER}\u0600-\u06ff]"
_EMOJI_BASE = (
    "\U0001f000-\U0001faff\u2600-\u27bf\u2300-\u23ff\u2b00-\u2bff"
    "\u3030\u303d\u3297\u3299\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21aa"
)
_EMOJI_MOD = "\ufe0f\U0001f3fb-\U0001f3ff\u20e3\U000e0020-\U000e007f"
# Format characters never start a token of their own: U+200B–U+200F,
# U+202A–U+202E, U+2060–U+206F, U+FEFF.
_SKIP = "\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff"

# An e-mail's local part is ASCII (RFC 5321 as people type it), starts where
# such a run starts (the lookbehind) and is possessive: ``[\w.+-]+@`` was
# retried from every position of a run like ``a.a.a.…``, O(n²) (6.8 s for
# 40,000 characters).  An e-mail glued to an Arabic word still starts right
# after it (ايميليuser@x.com).
# Leading whitespace/format characters are consumed *inside* the match:
# finditer then never restarts an 8-way alternation at every space (about
# 1.4x faster).  Token offsets come from the named group's span.  A trailing
# run of them would make every start position rescan it (quadratic), so the
# search stops at the end of the text with that run stripped (_TRAILING).
# A run of two or more Arabic words separated by single spaces is matched as
# one span (group ``run``, split by the caller): most of a message is such a
# run, and one match per run instead of per word saves the regex engine's
# per-match cost (≈1.25× tokenize throughput).  Possessive quantifiers: a run
# that stops before a non-letter gives nothing back, so no backtracking.
_AR_WORD = f"[{_AR_LETTER}][{_AR_LETTER}{_AR_CONT}]*+"
_RUN_ALT = f"(?P<run>{_AR_WORD}(?:\\x20{_AR_WORD})+)\n  | "
_TOKEN_RE = re.compile(
    rf"""
    [\s{_SKIP}]*+
    (?:
    {_RUN_ALT}(?P<word>[{_AR_LETTER}][{_AR_LETTER}{_AR_CONT}]*)
  | (?P<url>(?:https?://|www\.)[^\s<>"]*[^\s<>".,!?؟،)]
        |(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]++@[\w-]+(?:\.[\w-]+)+)
  | (?P<mention>@\w+)
  | (?P<hashtag>\#[\w{_AR_CONT}]+)
  | (?P<latin>\d*{_LAT_LETTER}(?:{_LAT_LETTER}|\d|['’]{_LAT_LETTER})*)
  | (?P<number>\d+(?:[.,٫٬]\d+)*)
  | (?P<emoji>[\U0001f1e6-\U0001f1ff]{{2}}
        |[{_EMOJI_BASE}][{_EMOJI_MOD}]*(?:\u200d[{_EMOJI_BASE}][{_EMOJI_MOD}]*)*)
  | (?P<punct>[^\s{_SKIP}])
    )
    """,
    re.VERBOSE,
)

_KINDS = {k.name.lower(): k for k in TokenKind} | {"run": TokenKind.WORD}
# Group number → kind (index 0 unused: every match ends in exactly one group).
_KIND_OF_GROUP: tuple[TokenKind, ...] = (
    TokenKind.PUNCT,
    *(_KINDS[name] for name, _ in sorted(_TOKEN_RE.groupindex.items(), key=lambda kv: kv[1])),
)
_RUN = _TOKEN_RE.groupindex["run"]
_TRAILING = "".join(chr(c) for c in range(0x3000 + 1) if chr(c).isspace()) + (
    "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    + "".join(chr(c) for c in range(0x2060, 0x2070))
    + "\ufeff"
)


# tuple.__new__ with a ready tuple skips NamedTuple's Python-level __new__
# (keyword plumbing): the same Token, several times cheaper per token.
_tuple_new = tuple.__new__


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into typed tokens; offsets index into ``text``.

    >>> [t.kind.value for t in tokenize("شلونك @ali؟ 7abibi ٣ 😂")]
    ['word', 'mention', 'punct', 'latin', 'number', 'emoji']
    >>> tokenize("كَتَبَ")[0]
    Token(text='كَتَبَ', kind=<TokenKind.WORD: 'word'>, start=0, end=6)
    """
    kinds, new, word = _KIND_OF_GROUP, _tuple_new, TokenKind.WORD
    stop = len(text.rstrip(_TRAILING))
    out: list[Token] = []
    append = out.append
    for m in _TOKEN_RE.finditer(text, 0, stop):
        tok = m.group(i := m.lastindex or 0)
        if not tok:
            continue
        # The token group always ends the match, so its start is end - len(tok):
        # one method call per token fewer than m.span(group).
        end = m.end()
        if i == _RUN:  # words separated by exactly one U+0020
            start = end - len(tok)
            for w in tok.split(" "):
                append(new(Token, (w, word, start, start + len(w))))
                start += len(w) + 1
        else:
            append(new(Token, (tok, kinds[i], end - len(tok), end)))
    return out


def typed_texts(text: str) -> list[tuple[TokenKind, str]]:
    """(kind, text) pairs, as ``tokenize`` without offsets or Token objects.

    The pipeline functions (``words``, ``search_keys``, dialect features) use
    this: building a frozen dataclass per token costs more than the regex.

    >>> [(k.value, t) for k, t in typed_texts("وين الطلب #123")]
    [('word', 'وين'), ('word', 'الطلب'), ('hashtag', '#123')]
    """
    kinds, word = _KIND_OF_GROUP, TokenKind.WORD
    stop = len(text.rstrip(_TRAILING))
    out: list[tuple[TokenKind, str]] = []
    for m in _TOKEN_RE.finditer(text, 0, stop):
        if i := m.lastindex:
            if i == _RUN:
                out.extend((word, w) for w in m.group(i).split(" "))
            else:
                out.append((kinds[i], m.group(i)))
    return out

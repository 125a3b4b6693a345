"""Arabic language pipeline: normal forms, tokens, search keys, script, dialect.

>>> from nlp import fold, search_keys
>>> fold("أَهْلاً"), search_keys("والكتاب")
('اهلا', ['كتاب'])
"""

from nlp.arabizi import arabizi_to_arabic
from nlp.keys import search_keys, words
from nlp.normalize import clean, fold
from nlp.script import Script, detect_script
from nlp.segment import segment
from nlp.tokenize import Token, TokenKind, tokenize

__all__ = [
    "Script",
    "Token",
    "TokenKind",
    "arabizi_to_arabic",
    "clean",
    "detect_script",
    "fold",
    "search_keys",
    "segment",
    "tokenize",
    "words",
]

"""Arabic language pipeline: normal forms, tokens, search keys, script, dialect.

``number_words_to_digits`` is the count normalisation every key function
applies («تلات تيام» → 3 ايام, «يومين» → 2 يوم), so keys of a sentence and of
a question agree on numbers.

>>> from nlp import fold, search_keys
>>> fold("أَهْلاً"), search_keys("والكتاب")
('اهلا', ['كتاب'])
"""

from nlp.arabizi import arabizi_to_arabic
from nlp.backends import KeyBackend, key_function
from nlp.bridge import dialect_to_msa, has_dialect_words
from nlp.camel import camel_lemma_keys, require_camel_morphology
from nlp.clitics import segment
from nlp.dialect import (
    REGIONS,
    DialectIdentifier,
    DialectResult,
    load_dialect_identifier,
    pool_dialects,
)
from nlp.dialect_thread import Evidence, ThreadDialect, message_evidence, shared_words
from nlp.errors import NlpError, ResourceUnavailable
from nlp.keys import (
    KEYS_VERSION,
    KeyFunction,
    content_keys,
    keys_fingerprint,
    search_keys,
    stem_and_surface_keys,
    stop_keys_for,
    words,
)
from nlp.normalize import clean, drop_overrides, fold
from nlp.number_words import number_words_to_digits
from nlp.script import Script, detect_script
from nlp.tokens import Token, TokenKind, tokenize

__all__ = [
    "KEYS_VERSION",
    "REGIONS",
    "DialectIdentifier",
    "DialectResult",
    "Evidence",
    "KeyBackend",
    "KeyFunction",
    "NlpError",
    "ResourceUnavailable",
    "Script",
    "ThreadDialect",
    "Token",
    "TokenKind",
    "arabizi_to_arabic",
    "camel_lemma_keys",
    "clean",
    "content_keys",
    "detect_script",
    "dialect_to_msa",
    "drop_overrides",
    "fold",
    "has_dialect_words",
    "key_function",
    "keys_fingerprint",
    "load_dialect_identifier",
    "message_evidence",
    "number_words_to_digits",
    "pool_dialects",
    "require_camel_morphology",
    "search_keys",
    "segment",
    "shared_words",
    "stem_and_surface_keys",
    "stop_keys_for",
    "tokenize",
    "words",
]

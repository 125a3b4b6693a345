"""Arabic language pipeline: normal forms, tokens, search keys, script, dialect.

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
    KeyFunction,
    content_keys,
    search_keys,
    stem_and_surface_keys,
    stop_keys_for,
    words,
)
from nlp.normalize import clean, drop_overrides, fold
from nlp.script import Script, detect_script
from nlp.tokens import Token, TokenKind, tokenize

__all__ = [
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
    "load_dialect_identifier",
    "message_evidence",
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

"""A turn request in domain terms, and its validation.

Validation lives here, not in the gRPC edge, so that every entry point (gRPC,
CLI, tests) gets the same limits and the same actionable messages.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import nlp
from diwaniya.errors import InvalidRequest
from majlis.config import settings_values
from nlp import pii

# Ids are opaque to us but must be safe to log, to use as keys and to echo back.
_THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{0,63}")
_USER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@\-]{0,127}")
_REQUEST_ID = re.compile(r"[\x21-\x7e]{1,128}")  # printable ASCII, no spaces
_COUNTRY = re.compile(r"[A-Z]{2}")
_REGISTERS = frozenset({"", "msa", "dialect"})
# C0/C1 controls other than TAB (U+0009), LF (U+000A) and CR (U+000D): never typed by a person.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Longest run of non-space characters; a "word" longer than the limit is an attack or a paste error.
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Limits:
    max_text_chars: int = 4000
    max_token_chars: int = 200

    @classmethod
    def from_settings(cls, settings: object) -> Self:
        """From ``DIWANIYA_MAX_TEXT_CHARS`` / ``DIWANIYA_MAX_TOKEN_CHARS``."""
        return cls(**settings_values(cls, settings))


@dataclass(frozen=True, slots=True)
class TurnRequest:
    tenant: str
    user_id: str
    text: str
    thread_id: str = ""
    request_id: str = ""
    country: str = ""
    timezone: str = ""
    client_time: datetime | None = None
    register: str = ""


def check_thread_id(thread_id: str, *, required: bool = True) -> str:
    if not thread_id:
        if required:
            raise InvalidRequest("thread_id is required", field="thread_id")
        return ""
    if not _THREAD_ID.fullmatch(thread_id):
        raise InvalidRequest(
            "thread_id is malformed: use 1-64 characters of A-Z a-z 0-9 _ - "
            "(or leave it empty to start a new thread)",
            field="thread_id",
        )
    return thread_id


def check_request_id(request_id: str) -> str:
    if request_id and not _REQUEST_ID.fullmatch(request_id):
        raise InvalidRequest(
            "request_id is malformed: use 1-128 printable ASCII characters without spaces",
            field="request_id",
        )
    return request_id


def check_user_id(user_id: str) -> str:
    if not user_id:
        raise InvalidRequest("user_id is required", field="user_id")
    if not _USER_ID.fullmatch(user_id):
        raise InvalidRequest(
            "user_id is malformed: use 1-128 characters of A-Z a-z 0-9 . _ : @ -", field="user_id"
        )
    return user_id


def clean_text(text: str, limits: Limits) -> str:
    r"""The user's text as it will be stored and shown, or :class:`InvalidRequest`.

    Display spoofing is removed (``nlp.clean``) and personal data is masked
    (``nlp.pii``) HERE, before the text reaches the thread, its checkpoints,
    memories, events, logs or the model: nothing downstream ever holds the raw
    card number, IBAN, national ID, phone or e-mail.  An unbalanced bidi
    override (U+202E RLO … U+202C PDF) is removed, not rejected:

    >>> clean_text("\u202eهلا\u202c والله", Limits())
    'هلا والله'
    >>> clean_text("جوالي ٠٥٠١٢٣٤٥٦٧", Limits())
    'جوالي ****4567'
    """
    if len(text) > limits.max_text_chars * 4:
        # Cheap early exit before any normalisation work on a huge payload.
        raise InvalidRequest(
            f"text is {len(text)} characters; the limit is {limits.max_text_chars}", field="text",
            reason="TEXT_TOO_LONG")
    bad = _CONTROL.search(text)
    if bad:
        raise InvalidRequest(
            f"text contains the control character U+{ord(bad.group()):04X} at position "
            f"{bad.start()}; remove it and send again",
            field="text", reason="TEXT_CONTROL_CHARACTER")
    cleaned = nlp.clean(text).strip()
    if not cleaned or all(unicodedata.category(c)[0] in "CZ" for c in cleaned):
        raise InvalidRequest(
            "text is empty (after removing invisible formatting characters)", field="text",
            reason="TEXT_EMPTY")
    if len(cleaned) > limits.max_text_chars:
        raise InvalidRequest(
            f"text is {len(cleaned)} characters; the limit is {limits.max_text_chars}",
            field="text", reason="TEXT_TOO_LONG")
    longest = max((len(w) for w in _WHITESPACE.split(cleaned)), default=0)
    if longest > limits.max_token_chars:
        raise InvalidRequest(
            f"text contains a {longest}-character word; the limit is {limits.max_token_chars} "
            "characters between spaces",
            field="text", reason="TEXT_WORD_TOO_LONG")
    return pii.mask(cleaned)


def validate(request: TurnRequest, limits: Limits) -> TurnRequest:
    """Check every field; return the request with its text cleaned and hints normalised."""
    check_thread_id(request.thread_id, required=False)
    check_user_id(request.user_id)
    check_request_id(request.request_id)
    country = request.country.upper()
    if country and not _COUNTRY.fullmatch(country):
        raise InvalidRequest(
            f"country {request.country!r} is not an ISO 3166-1 alpha-2 code such as KW or SA",
            field="country",
        )
    if request.timezone:
        if len(request.timezone) > 64:
            raise InvalidRequest("timezone is too long for an IANA name", field="timezone")
        try:
            ZoneInfo(request.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidRequest(
                f"timezone {request.timezone!r} is not an IANA time zone such as Asia/Riyadh",
                field="timezone",
            ) from None
    register = request.register.lower()
    if register not in _REGISTERS:
        raise InvalidRequest("register must be msa or dialect", field="register")
    client_time = request.client_time
    if client_time is not None and client_time.tzinfo is None:
        client_time = client_time.replace(tzinfo=UTC)
    return replace(
        request,
        text=clean_text(request.text, limits),
        country=country,
        register=register,
        client_time=client_time,
    )

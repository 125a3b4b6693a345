"""What may be shown: reply text without Markdown headings, file names, slugs or [sources].

Citations belong in ``memory_cited`` alone; the reply shows only the tenant's
sentences.  Split from :mod:`majlis.models.answers`.

    >>> display_text("## الفروع\\nالفرع الرئيسي في الرياض [branches.md].")
    'الفرع الرئيسي في الرياض .'
"""

from __future__ import annotations

import re

__all__ = ["HEADING_LINE", "display_text", "display_topic"]


HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s.*$", re.MULTILINE)
_BRACKETED = re.compile(r"\[[^\]\n]{0,120}\]|【[^】\n]{0,120}】")
_FILE_NAME = re.compile(r"\b[\w\-]+\.(?:md|markdown|txt|jsonl|json|pdf|docx?|html?)\b", re.I)
_SLUG_PATH = re.compile(r"[\w\-]*\s*›\s*")
_MD_MARKUP = re.compile(r"(\*\*|__|`)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+", re.MULTILINE)
_ARABIC = re.compile("[\u0621-\u064a]")
_SPACES = re.compile(r"[ \t]+")


def display_text(text: str) -> str:
    """Text fit for the reply: no Markdown heading, file name, slug path or [source].

    >>> display_text("## الفروع\\nالفرع الرئيسي في الرياض [branches.md].")
    'الفرع الرئيسي في الرياض .'
    """
    text = HEADING_LINE.sub("", text)
    text = _BRACKETED.sub("", text)
    text = _FILE_NAME.sub("", text)
    text = _SLUG_PATH.sub("", text)
    text = _MD_MARKUP.sub("", text)
    text = _LIST_MARK.sub("", text)
    return _SPACES.sub(" ", text).strip()


def display_topic(title: str) -> str:
    """A chunk title as a topic to name: its last Arabic heading, never a file slug.

    >>> display_topic("branches › الفروع وأوقات العمل")
    'الفروع وأوقات العمل'
    >>> display_topic("refunds")
    ''
    """
    for part in reversed(title.split("›")):
        part = display_text(part)
        if _ARABIC.search(part):
            return part
    return ""

"""Cutting knowledge-base documents into searchable chunks.

A chunk is a heading's section, or a run of its paragraphs, never longer
than ``max_chars`` unless a single sentence is.  Each chunk carries its
heading path as a title so "## الاسترجاع" still describes the paragraph
under it.  Chunk ids are ``{doc_id}#{ordinal}``: stable across re-ingests of
an unchanged file, so re-ingesting updates rows in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Chunk", "DocFormat", "chunk_document"]

DocFormat = Literal["markdown", "text"]

# ATX heading: 1–6 '#', a space, the heading text.
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_BLANK_LINES = re.compile(r"\n[ \t]*\n+")
# Sentence ends: . ! ? and the Arabic question mark U+061F, full stop U+06D4,
# followed by whitespace.
_SENTENCE_END = re.compile(r"(?<=[.!?\u061F\u06D4])\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    id: str
    doc_id: str
    ordinal: int
    title: str
    text: str


def chunk_document(
    doc_id: str,
    text: str,
    *,
    title: str = "",
    fmt: DocFormat = "markdown",
    max_chars: int = 2_000,
) -> list[Chunk]:
    """Split one document into chunks, in document order.

    >>> [c.title for c in chunk_document("faq", "# الشحن\\nخلال يومين\\n\\n## الرسوم\\nمجاني")]
    ['الشحن', 'الشحن › الرسوم']
    >>> chunk_document("faq", "# الشحن\\nخلال يومين")[0].id
    'faq#0'
    """
    sections = _sections(text) if fmt == "markdown" else [([], text)]
    chunks: list[Chunk] = []
    for path, body in sections:
        heading = " › ".join(path)
        full_title = " › ".join(p for p in (title, heading) if p)
        for piece in _pack(_paragraphs(body), max_chars):
            chunks.append(Chunk(f"{doc_id}#{len(chunks)}", doc_id, len(chunks), full_title, piece))
    return chunks


def _sections(text: str) -> list[tuple[list[str], str]]:
    """(heading path, body) pairs; text before the first heading has path []."""
    sections: list[tuple[list[str], str]] = []
    path: list[tuple[int, str]] = []
    lines: list[str] = []
    heading_line = False  # lines[0] is the current section's heading text
    in_fence = False

    def flush() -> None:
        # The heading is the section's title (indexed with it, memory.text_keys);
        # in the body it would be served as if it were a sentence of the policy
        # («الاسترجاع يمكنك إرجاع…»).  A heading with no body is still worth
        # finding, so only then does it stay as text.
        nonlocal heading_line
        rest = lines[1:] if heading_line else lines
        if "".join(rest).strip():
            sections.append(([h for _, h in path], "\n".join(rest)))
        elif "".join(lines).strip():
            sections.append(([h for _, h in path], "\n".join(lines)))
        heading_line = False
        lines.clear()

    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence  # a '#' inside code is not a heading
        match = None if in_fence else _HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            path = [(lv, h) for lv, h in path if lv < level] + [(level, match.group(2).strip())]
            lines.append(match.group(2).strip())
            heading_line = True
        else:
            lines.append(line)
    flush()
    return sections


def _paragraphs(body: str) -> list[str]:
    return [p.strip() for p in _BLANK_LINES.split(body) if p.strip()]


def _pack(paragraphs: list[str], max_chars: int) -> list[str]:
    """Greedily join paragraphs up to ``max_chars``; split oversized ones by sentence."""
    units: list[str] = []
    for para in paragraphs:
        units.extend([para] if len(para) <= max_chars else _SENTENCE_END.split(para))
    packed: list[str] = []
    for unit in units:
        if packed and len(packed[-1]) + 2 + len(unit) <= max_chars:
            packed[-1] = f"{packed[-1]}\n\n{unit}"
        else:
            packed.append(unit)
    return packed

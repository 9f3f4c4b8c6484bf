"""The repository's Markdown pages as a reader's forge shows them: headings, anchors, links, code.

Only what the pages use is read: ATX headings (`## Title`), fenced code blocks, inline code,
and inline links `[text](target)`. A heading's anchor is made as GitHub makes it: lower case,
punctuation other than `-` and `_` dropped, spaces as `-`, and `-1`, `-2`... after a repeat.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6}) +(.+?) *#* *$")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_INLINE_CODE = re.compile(r"(`+)[^`]+?\1")


@dataclass(frozen=True)
class Section:
    level: int
    title: str
    body: str
    """Its text up to the next heading, code blocks included."""


def _lines(text: str) -> Iterator[tuple[str, bool]]:
    """Each line, and whether it lies in a fenced code block (its fences included)."""
    fence = ""
    for line in text.splitlines():
        marker = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence:
            yield line, True
            if marker and marker[1][0] == fence[0] and len(marker[1]) >= len(fence):
                fence = ""
        elif marker:
            fence = marker[1]
            yield line, True
        else:
            yield line, False


def sections(text: str) -> list[Section]:
    """Every heading outside code blocks, with the text under it."""
    found: list[tuple[int, str, list[str]]] = []
    for line, in_code in _lines(text):
        heading = None if in_code else _HEADING.match(line)
        if heading:
            found.append((len(heading[1]), heading[2], []))
        elif found:
            found[-1][2].append(line)
    return [Section(level, title, "\n".join(body)) for level, title, body in found]


def anchor(title: str) -> str:
    """The anchor GitHub gives a heading titled `title` (before any `-1` for a repeat)."""
    plain = _INLINE_CODE.sub(lambda code: code[0].strip("`"), title)
    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", plain)
    return re.sub(r"[^\w\- ]", "", plain.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    result: set[str] = set()
    for section in sections(text):
        base = anchor(section.title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def links(text: str) -> list[str]:
    """The targets of the inline links outside code (a link's text may wrap a line)."""
    prose = "\n".join("" if in_code else line for line, in_code in _lines(text))
    return [str(target) for target in _LINK.findall(_INLINE_CODE.sub("", prose))]


def python_block(section: Section) -> str:
    """The first Python code block of a section."""
    code = re.search(r"^```python\n(.*?)^```", section.body + "\n", re.MULTILINE | re.DOTALL)
    assert code, f"the section {section.title!r} has no Python block"
    return code[1]

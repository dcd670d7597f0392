"""The structure of a document, to compare a translation with its English source.

Markdown is parsed with markdown-it-py (CommonMark, the parser rich uses). A document's structure is what a
translation must keep: its headings (levels, in order), the numbered items under each heading (the questions),
its code blocks (language and code; comments may be translated), its tables' shapes, its images, and its links'
targets. Prose is free; everything a learner acts on is not. (A summary template has no translated twin: its
prose is translated through the lab's catalog, so there is no structure to compare.)
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from markdown_it import MarkdownIt

PARSER = MarkdownIt("commonmark").enable("table")
TRANSLATED = re.compile(r"\.[a-z]{2}(\.md)$")  # README.es.md -> README.md
COMMENT = re.compile(r"(^|\s)#(?!!).*$")  # a shell or Python comment (not a #! line)


@dataclass
class Structure:
    headings: list[int] = field(default_factory=list)  # heading levels, in order
    numbered: list[int] = field(
        default_factory=list
    )  # per heading (and before the first): numbered items
    code: list[tuple[str, str]] = field(
        default_factory=list
    )  # (info string, code without comments)
    tables: list[tuple[int, int]] = field(default_factory=list)  # (rows, columns)
    images: list[str] = field(default_factory=list)
    links: list[str] = field(
        default_factory=list
    )  # link targets, anchors excluded (they follow headings)

    def differences(self, other: Structure) -> list[str]:
        """What differs from `other` (the source), one line each; empty when the structures agree."""
        out = []
        for name in ("headings", "numbered", "code", "tables", "images", "links"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                out.append(f"{name}: {_first_difference(mine, theirs)}")
        return out


def _first_difference(mine: list, theirs: list) -> str:
    for i, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        if a != b:
            return f"item {i + 1} is {a!r} here but {b!r} in the source"
    return f"{len(mine)} here, {len(theirs)} in the source"


def _code_without_comments(code: str) -> str:
    lines = (COMMENT.sub("", line).rstrip() for line in code.splitlines())
    return "\n".join(line for line in lines if line)


def markdown_structure(text: str) -> Structure:
    s = Structure(numbered=[0])
    tokens = PARSER.parse(text)
    lists: list[
        str
    ] = []  # the open lists, outermost first: only top-level numbered items are questions
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            s.headings.append(int(tok.tag[1]))
            s.numbered.append(0)
        elif tok.type in ("ordered_list_open", "bullet_list_open"):
            lists.append(tok.type)
        elif tok.type in ("ordered_list_close", "bullet_list_close"):
            lists.pop()
        elif tok.type == "list_item_open" and lists == ["ordered_list_open"]:
            s.numbered[-1] += 1
        elif tok.type in ("fence", "code_block"):
            s.code.append((tok.info.strip(), _code_without_comments(tok.content)))
        elif tok.type == "table_open":
            s.tables.append(_table_shape(tokens, i))
        elif tok.type == "inline":
            _add_targets(s, tok.children or [])
    return s


def _add_targets(s: Structure, inline_tokens) -> None:
    """Images, and link targets without their anchors (an anchor follows its translated heading)."""
    for child in inline_tokens:
        if child.type == "image":
            s.images.append(child.attrs["src"])
        elif child.type == "link_open" and not child.attrs["href"].startswith("#"):
            # A translation links to the translated twin where there is one: README.es.md ~ README.md.
            s.links.append(TRANSLATED.sub(r"\1", child.attrs["href"].split("#")[0]))


def _table_shape(tokens, start: int) -> tuple[int, int]:
    rows = cols = 0
    for tok in tokens[start:]:
        if tok.type == "tr_open":
            rows += 1
        elif tok.type in ("th_open",):
            cols += 1
        elif tok.type == "table_close":
            break
    return rows, cols


def structure(path: Path) -> Structure:
    text = Path(path).read_text(encoding="utf-8")
    return markdown_structure(text)


def source_of(translation: Path, lang: str) -> Path:
    """README.es.md -> README.md."""
    return translation.with_name(translation.name.replace(f".{lang}.", ".", 1))


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = unicodedata.normalize("NFC", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown document (GitHub's rule, duplicates numbered -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    tokens = PARSER.parse(text)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            base = github_anchor(tokens[i + 1].content)
            n = seen.get(base, 0)
            out.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    out.update(re.findall(r'<a id="([^"]+)"', text))  # explicit anchors
    return out


def _relative_links(path: Path):
    """(href, target file) of every relative link and image of a Markdown file."""
    for tok in PARSER.parse(path.read_text(encoding="utf-8")):
        for child in tok.children or []:
            if child.type not in ("link_open", "image"):
                continue
            href = child.attrs.get("href") or child.attrs.get("src")
            if re.match(r"[a-z]+:", href) or href.startswith("mailto:"):
                continue
            target = href.partition("#")[0]
            yield href, (path.parent / target).resolve() if target else path


def links_past_a_twin(translation: Path, lang: str) -> list[str]:
    """Links of a translation to an English document that has a twin in its language (X.md where X.es.md exists),
    but for its own source (the language switch line)."""
    out = []
    source = source_of(translation, lang).resolve()
    for href, file in _relative_links(translation):
        twin = file.with_name(file.name.replace(".md", f".{lang}.md"))
        if (
            file.suffix == ".md"
            and not TRANSLATED.search(file.name)
            and file != source
            and twin.is_file()
        ):
            out.append(f"{href}: link {twin.name} instead")
    return out


def broken_links(path: Path) -> list[str]:
    """Relative links of a Markdown file whose file or heading anchor does not exist."""
    out = []
    for href, file in _relative_links(path):
        anchor = unquote(href.partition("#")[2])  # the parser percent-encodes an accented anchor
        if not file.exists():
            out.append(f"{href}: no such file")
        elif (
            anchor
            and file.suffix == ".md"
            and anchor not in anchors(file.read_text(encoding="utf-8"))
        ):
            out.append(f"{href}: no heading with that anchor in {file.name}")
    return out


def section_items(text: str, headings: tuple[str, ...]) -> list[list]:
    """The inline tokens (links, text, code spans) of each list item under a heading whose text is one of
    `headings`, up to the next heading."""
    tokens, items, inside, depth = PARSER.parse(text), [], False, 0
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            inside = tokens[i + 1].content in headings
        elif inside and tok.type == "list_item_open":
            depth += 1
            items.append([])
        elif inside and tok.type == "list_item_close":
            depth -= 1
        elif inside and depth and tok.type == "inline":
            items[-1] += tok.children or []
    return items

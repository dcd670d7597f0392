"""Figures a text quotes from a committed run, and whether that run's file still holds them.

A text (a theory text, a lab's handout, the survey, the README) quotes a measured figure inside the text of a link
to the file it comes from: `[1.65x faster at batch 8](../benchmarks/h200-run/compile/summary.md)`. Such a link is a
*citation*: every number and every `code` span in its text must appear in the linked file (a `code` span that is
the file's own path, `[`benchmarks/custom_op/README.md`](...)`, names the file and quotes nothing).
A number matches a number of the file when the
file's value, rounded to the quoted precision, is the quoted value (3.7e-8 matches 3.725290298461914e-08;
an integer must match exactly). A re-recorded run that changes a figure makes the citation stale, and the test
names the sentence.

A translation (00-motivation.es.md) quotes the same figures as its source, from the same files, in the same order:
its citations' words are translated, their numbers and `code` spans are not (a figure rounded differently would
still be in the file, and would still be a drift from the source).

A figure that looks measured (a decimal number, a percentage, a multiplier such as 1.3x, a number with a unit of
size or time) and stands outside any citation is *uncited*: the text must link it to its run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from itertools import zip_longest
from pathlib import Path

from markdown_it import MarkdownIt

PARSER = MarkdownIt("commonmark").enable("table")
# 1,118 / 279 512 (Spanish groups with a no-break space) / 3.7e-8 / 49 / 122.0; not the digits inside a word
# (sm90, x1, fp32)
NUMBER = re.compile(r"(?<![\w.])(\d+(?:[,\u00a0]\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:x\b|(?!\w))")
GROUPS = re.compile(r"[,\u00a0]")  # thousands separators: 279,512 and 279 512 are one figure
UNIT = r"(?:kB|MB|GB|KiB|MiB|GiB|B|ms|us|µs|s|min)\b"
# what looks measured: a decimal number, a percentage, a multiplier, a size or a time
MEASURED = re.compile(
    r"(?<![\w.])(?:\d+\.\d+(?:[eE][-+]?\d+)?|\d+(?:\.\d+)?\s?%|\d+(?:\.\d+)?x\b|\d[\d,\u00a0]*(?:\.\d+)?\s?"
    + UNIT
    + ")"
)
# version numbers are not figures: torch 2.13, triton 3.6, Python 3.11, CUDA 13.0, sm_90
VERSION = re.compile(r"\b(?:torch|triton|Triton|Python|CUDA|PyTorch|cuBLAS|NCCL)\s+\d+(?:\.\d+)+")
RESULTS = "benchmarks"  # committed runs live under this folder of the repository


@dataclass(frozen=True)
class Citation:
    doc: Path  # the text that quotes
    target: Path  # the committed file it quotes from
    text: str  # the link's text: the quoted figures
    context: str  # the paragraph, list item or table cell around it, to name the stale sentence

    def numbers(self) -> list[str]:
        return [GROUPS.sub("", n) for n in NUMBER.findall(_without_code(self.text))]

    def code_spans(self) -> list[str]:
        """The quoted code spans, less one that is the cited file's own path."""
        spans = re.findall(r"`([^`]+)`", self.text)
        return [s for s in spans if not self.target.as_posix().endswith("/" + s.lstrip("./"))]


def _without_code(text: str) -> str:
    return re.sub(r"`[^`]*`", " ", text)


def _inline_blocks(path: Path):
    """Every inline block of the document (paragraph, heading, list item text, table cell) as markdown-it tokens."""
    for tok in PARSER.parse(path.read_text(encoding="utf-8")):
        if tok.type == "inline":
            yield tok


def _link_target(doc: Path, href: str, root: Path) -> Path | None:
    """The committed results file a relative link points to, or None for any other link."""
    if re.match(r"[a-z]+:", href) or href.startswith("#"):
        return None
    target = (doc.parent / href.split("#")[0]).resolve()
    inside = root.resolve() / RESULTS
    return target if target.is_file() and inside in target.parents else None


def citations(doc: Path, root: Path) -> list[Citation]:
    out = []
    for block in _inline_blocks(doc):
        children = block.children or []
        for i, child in enumerate(children):
            if child.type != "link_open":
                continue
            target = _link_target(doc, child.attrs["href"], root)
            if target is None:
                continue
            text = []
            for inner in children[i + 1 :]:
                if inner.type == "link_close":
                    break
                text.append(f"`{inner.content}`" if inner.type == "code_inline" else inner.content)
            out.append(Citation(doc, target, "".join(text), block.content))
    return out


def _matches(quoted: str, found: Decimal) -> bool:
    q = Decimal(quoted.replace(",", ""))
    exponent = q.as_tuple().exponent
    if exponent >= 0 and "e" not in quoted.lower():
        return found == q  # an integer is quoted exactly
    quantum = Decimal(1).scaleb(exponent)
    return any(found.quantize(quantum, rounding=r) == q for r in (ROUND_HALF_EVEN, ROUND_HALF_UP))


def _file_numbers(text: str) -> list[Decimal]:
    return [Decimal(GROUPS.sub("", n)) for n in NUMBER.findall(text)]


def stale(citation: Citation) -> list[str]:
    """What the citation quotes that its file does not hold, one line each (empty: every figure is there)."""
    text = citation.target.read_text(encoding="utf-8")
    found = _file_numbers(text)
    missing = [n for n in citation.numbers() if not any(_matches(n, f) for f in found)]
    missing += [f"`{c}`" for c in citation.code_spans() if c not in text]
    where = f"{citation.doc.name}: [{citation.text}]({citation.target.name})"
    return [
        f"{where}: {m} is not in the file (sentence: {citation.context[:120]!r})" for m in missing
    ]


def uncited(doc: Path, root: Path) -> list[str]:
    """Figures that look measured but stand outside any citation, with the sentence they are in."""
    out = []
    for block in _inline_blocks(doc):
        prose, inside_citation = [], False
        for child in block.children or []:
            if child.type == "link_open":
                inside_citation = _link_target(doc, child.attrs["href"], root) is not None
            elif child.type == "link_close":
                inside_citation = False
            elif child.type == "text" and not inside_citation:
                prose.append(child.content)
        text = VERSION.sub(" ", " ".join(prose))
        out += [f"{doc.name}: {m!r} in {block.content[:120]!r}" for m in MEASURED.findall(text)]
    return out


def quoted(doc: Path, root: Path) -> list[tuple[str, list[str], list[str]]]:
    """What a text cites, in order: (the file, relative to root; its numbers; its code spans) per citation."""
    return [
        (c.target.relative_to(root.resolve()).as_posix(), c.numbers(), c.code_spans())
        for c in citations(doc, root)
    ]


def translation_drift(translation: Path, source: Path, root: Path) -> list[str]:
    """Citations of a translation that do not quote what the source's citation at the same place quotes."""
    out = []
    pairs = zip_longest(quoted(translation, root), quoted(source, root))
    for i, (mine, theirs) in enumerate(pairs, start=1):
        if mine != theirs:
            out.append(
                f"{translation.name}: citation {i} quotes {mine} but the source quotes {theirs}"
            )
    return out

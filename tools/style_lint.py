"""The Spanish edition's lint: every Spanish text checked against what the style guide (theory/style.es.md) bans.

    python -m tools.style_lint            # what CI runs: one line per finding, exit 1 if any
    python -m tools.style_lint --fix      # rewrites what has one right answer (numbers, %), then checks
    python -m tools.style_lint FILE ...   # only these files (.es.md, a Spanish .po)

The Spanish texts: every *.es.md of the repository (tests/ aside: its planted texts are wrong on purpose) and the
Spanish msgstr of every message catalog (which holds the summary templates' Spanish too). A document's paragraph
that links a page with no Spanish twin (the runs kept in benchmarks/) must say the page is in English. Only prose
is read: code blocks and spans, template tags, {placeholders}, identifiers (lm_head, torch.compile, --lang), URLs
and link targets, HTML tags, a table column headed "inglés", and a passage marked <span lang="en"> are blanked out
first, keeping every offset, so a finding names its line and a fix lands where it belongs. For the
English-sentence rule, quoted text ("...", the way a PyTorch error is cited) and the titles of links to other
sites are blanked too. The rules: tools/style_rules.py.
"""

from __future__ import annotations

import argparse
import functools
import io
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from tools import style_rules
from tools.style_rules import RULES, english_words

ROOT = Path(__file__).resolve().parents[1]
SKIP = {".git", ".venv", "results", "my-work", "tests", "node_modules", ".pytest_cache"}
BLANK = "\x00"  # what a blanked-out character becomes: never a letter, a digit or a space

FENCE = re.compile(r"^ *(```|~~~).*?^ *\1[^\n]*$", re.M | re.S)
COMMENT = re.compile(
    r"(?:^|\s)#(?![!#])(.*)$", re.M
)  # a shell or Python comment in a code block: prose
ALWAYS_CODE = [
    re.compile(r"<!--.*?-->", re.S),  # HTML comments
    re.compile(r'<(span|div|p)\s+lang="en"[^>]*>.*?</\1>', re.S),  # a passage marked as English
    re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S),  # Jinja tags
    re.compile(r"(`+).+?\1", re.S),  # code spans
    re.compile(r"\]\([^)\s]*\)"),  # link targets
    re.compile(r"<https?://[^>]*>|https?://\S+"),  # URLs
    re.compile(r"</?[A-Za-z][^>\n]*>"),  # HTML tags
    re.compile(r"\{[\w.\[\]]*(?:![rsa])?(?::[^{}\n]*)?\}|%\(\w+\)[sdr]|%[sdr]"),  # placeholders
    re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*"),  # options: --lang, -m
    re.compile(
        r"\b[A-Za-z_]\w*(?:[.:]+\w+)+(?:\(\))?|\b\w+_\w*\b"
    ),  # lm_head, torch.compile, aten::mm
    re.compile(r"(?<![\w])'[^'\n]*'"),  # single-quoted: Python's repr of a value, a file name
]
# Quoted text, a line break allowed but not a blank line: "Could not run ... with arguments from the ... backend";
# and the text of a link to another site: the cited work's title, in its own language
QUOTED = re.compile(r'"(?:[^"\n]|\n(?!\s*\n))*"|“[^”]*”|«[^»]*»|\[[^\]]*\](?=\(https?://)')
GLOSSARY = ROOT / "theory" / "glossary.es.md"
PYTHON_TYPES = {"dict", "str", "list", "int", "float", "bool", "tuple", "none"}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    text: str
    advice: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.text!r}: {self.advice}"


def blank(text: str, pattern: re.Pattern) -> str:
    """`text` with every match of `pattern` replaced by BLANK characters (newlines kept: lines stay lines)."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", BLANK, m.group(0)), text)


def english_columns(text: str) -> str:
    """Blank out the cells of every Markdown table column whose header says "inglés" (the glossary's terms)."""
    lines, columns = text.split("\n"), set()
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            columns = set()
            continue
        cells = line.split("|")
        if not columns and i + 1 < len(lines) and re.match(r"^\|[-:| ]+\|$", lines[i + 1]):
            columns = {k for k, cell in enumerate(cells) if "inglés" in cell.lower()}
        lines[i] = "|".join(
            re.sub(r"[^\n]", BLANK, c) if k in columns else c for k, c in enumerate(cells)
        )
    return "\n".join(lines)


def code_blocks(text: str) -> str:
    """Blank out fenced code blocks, all but their comments: a comment is translated, so it is prose."""

    def keep_comments(block: re.Match) -> str:
        code = block.group(0)
        kept = {i for m in COMMENT.finditer(code) for i in range(m.start(1), m.end(1))}
        return "".join(c if c == "\n" or i in kept else BLANK for i, c in enumerate(code))

    return FENCE.sub(keep_comments, text)


def prose(text: str, markdown: bool) -> str:
    """`text` with everything that is not Spanish prose blanked out, character for character."""
    if markdown:
        text = english_columns(code_blocks(text))
    for pattern in ALWAYS_CODE:
        text = blank(text, pattern)
    return text


def findings_in(text: str, path: str, first_line: int = 1, markdown: bool = True) -> list[Finding]:
    """Every finding in one text: a document, a template, or one msgstr (first_line: where it starts)."""
    masked = prose(text, markdown)
    out = []
    for rule in RULES:
        for m in rule.pattern.finditer(masked):
            line = first_line + masked.count("\n", 0, m.start())
            out.append(Finding(path, line, rule.name, m.group(0), rule.advice))
    unquoted = masked
    for m in QUOTED.finditer(
        text
    ):  # found in the text itself: a link's title ends before its blanked target
        unquoted = (
            unquoted[: m.start()] + blank(m.group(0), re.compile(".+", re.S)) + unquoted[m.end() :]
        )
    for number, line in enumerate(unquoted.split("\n")):
        words = english_words(line.replace(BLANK, " "))
        if len(words) >= 2:
            sentence = " ".join(line.replace(BLANK, " ").split())
            advice = (
                "Spanish where Spanish serves (English words: " + ", ".join(sorted(words)) + ")"
            )
            out.append(Finding(path, first_line + number, "English sentence", sentence, advice))
    return sorted(out, key=lambda f: f.line)


def fixed(text: str, markdown: bool = True) -> str:
    """`text` with the rules that have one right answer applied (numbers, the percent sign), in prose only."""
    for rule in (r for r in RULES if r.fix):
        masked = prose(text, markdown)
        pieces, end = [], 0
        for m in rule.pattern.finditer(masked):
            # the matched span holds digits, spaces and marks only: the same in the text and in its prose
            pieces += [text[end : m.start()], rule.fix(text[m.start() : m.end()])]
            end = m.end()
        text = "".join(pieces) + text[end:]
    return text


def spanish_texts(root: Path = ROOT) -> list[Path]:
    """Every Spanish document and template, and every Spanish catalog, under `root` (SKIP aside)."""
    found = [
        p
        for pattern in ("**/*.es.md", "**/locale/es/LC_MESSAGES/*.po")
        for p in root.glob(pattern)
        if not SKIP & set(p.relative_to(root).parts)
    ]
    return sorted(found)


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def catalog_findings(path: Path) -> list[Finding]:
    """The findings in a .po's Spanish strings, each at the line of its msgid."""
    from babel.messages import pofile  # the catalog tool's library: CI and the image have it

    with path.open("rb") as f:
        catalog = pofile.read_po(f)
    out = []
    for message in catalog:
        if not message.id:
            continue
        forms = [message.string] if isinstance(message.string, str) else list(message.string)
        for form in forms:
            out += findings_in(form or "", _shown(path), message.lineno or 0, markdown=False)
            if form and form == _source(message) and len(_english_left(form)) >= 2:
                advice = "translate it (the glossary keeps only its own terms in English)"
                out.append(Finding(_shown(path), message.lineno, "untranslated", form, advice))
    return out


def _source(message) -> str:
    return message.id if isinstance(message.id, str) else message.id[0]


def _english_left(text: str) -> set[str]:
    """The words of a message left as its English source that Spanish would say otherwise: not code, not
    quoted values, not capitals (DDP, TF32), not Python's type names, not a term the glossary keeps."""
    words = blank(prose(text, markdown=False), QUOTED).replace(BLANK, " ").split()
    plain = {w.lower() for w in words if re.fullmatch(r"[a-z][a-z-]{2,}", w)}
    return plain - PYTHON_TYPES - kept_terms()


@functools.cache
def kept_terms() -> frozenset[str]:
    """The words of every term the glossary keeps in English (its rows that say "se queda(n) en inglés")."""
    terms = set()
    for row in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = row.split("|")
        if len(cells) > 3 and re.search(r"se queda|tal cual", cells[3]):
            terms |= {w.lower() for w in re.findall(r"[A-Za-z]+", cells[1])}
    return frozenset(terms)


LINK = re.compile(r"\]\((?!https?:|#)([^)\s#]+\.md)(?:#[^)\s]*)?\)")


def english_only_links(text: str, path: Path) -> list[Finding]:
    """Links to a page that has no Spanish twin (page.md without page.es.md: the runs kept in benchmarks/),
    in a paragraph that does not say the page is in English."""
    out, line = [], 1
    for paragraph in re.split(r"(\n\s*\n)", text):
        english = [
            m.group(1) for m in LINK.finditer(paragraph) if _english_only(path.parent / m.group(1))
        ]
        if english and "inglés" not in prose(paragraph, markdown=True):
            advice = "say that the page is in English: (en inglés)"
            out.append(Finding(_shown(path), line, "link to a page in English", english[0], advice))
        line += paragraph.count("\n")
    return out


def _english_only(page: Path) -> bool:
    return (
        page.is_file()
        and not page.name.endswith(".es.md")
        and not page.with_name(page.name.removesuffix(".md") + ".es.md").is_file()
    )


def lint(paths: list[Path]) -> list[Finding]:
    out = []
    for path in paths:
        if path.suffix == ".po":
            out += catalog_findings(path)
        else:
            text = path.read_text(encoding="utf-8")
            out += findings_in(text, _shown(path)) + english_only_links(text, path)
    return out


def fix_files(paths: list[Path]) -> list[Path]:
    """Apply the fixes to every file (a catalog through Babel, its .mo recompiled); the files changed."""
    changed = []
    for path in paths:
        if path.suffix == ".po":
            if _fix_catalog(path):
                changed.append(path)
            continue
        text = path.read_text(encoding="utf-8")
        if fixed(text) != text:
            path.write_text(fixed(text), encoding="utf-8")
            changed.append(path)
    return changed


def _fix_catalog(path: Path) -> bool:
    from babel.messages import pofile

    from tools import catalogs

    with path.open("rb") as f:
        catalog = pofile.read_po(f)
    touched = False
    for message in catalog:
        if not message.id or not message.string:
            continue
        forms = [message.string] if isinstance(message.string, str) else list(message.string)
        new = [fixed(form, markdown=False) for form in forms]
        if new != forms:
            message.string = new[0] if isinstance(message.string, str) else tuple(new)
            touched = True
    if touched:
        buf = io.BytesIO()
        pofile.write_po(buf, catalog, width=100, sort_by_file=True, ignore_obsolete=True)
        path.write_bytes(buf.getvalue())
        path.with_suffix(".mo").write_bytes(catalogs.compiled(catalog))
    return touched


def known_key(finding: Finding) -> str:
    """How the known-findings file names a finding: file, rule and text (lines move; these do not)."""
    return "\t".join((finding.path, finding.rule, " ".join(finding.text.split())))


def read_known(path: Path | None) -> set[str]:
    if path is None or not path.is_file():
        return set()
    return {line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.style_lint", description=__doc__.splitlines()[0]
    )
    parser.add_argument("files", nargs="*", type=Path, help="default: every Spanish text")
    parser.add_argument("--fix", action="store_true", help="rewrite numbers and %% signs first")
    parser.add_argument(
        "--known",
        type=Path,
        help="findings the edition's pass has not reached yet (file, rule, text per line): counted, not "
        "failed; with --write-known, written from this run",
    )
    parser.add_argument("--write-known", action="store_true")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.files] or spanish_texts()
    if args.fix:
        for path in fix_files(paths):
            print(f"fixed {_shown(path)}")
    found = lint(paths)
    if args.write_known and args.known:
        args.known.write_text("".join(sorted({known_key(f) + "\n" for f in found})), "utf-8")
    known = read_known(args.known)
    new = [f for f in found if known_key(f) not in known]
    for finding in new:
        print(finding)
    waiting = (
        f" ({len(found) - len(new)} known, listed in {args.known})" if len(new) < len(found) else ""
    )
    print(
        f"{len(new)} finding(s) against {style_rules.GUIDE} in {len(paths)} Spanish texts{waiting}"
        if new
        else f"Spanish texts: {len(paths)} checked against {style_rules.GUIDE}, nothing new{waiting}"
    )
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())

"""A survey's text as the grader reads it: its prose (no comments, code, tables or headings), its words, its
sentences under their headings, the language it is written in (English or Spanish, from its own words, so
that a survey is graded the same whatever language the run speaks), and the passages it shares with another text.

The figures a survey quotes, traced to a run's: every byte count, time, percentage and bandwidth written in the
text must match one of the run's figures within the precision it is written with.

Numbers are read as either language writes them: a decimal point or a decimal comma (1.68 MB, 1,68 MB), and
thousands grouped by commas or points (1,118,048 B, 1.118.048 B), by spaces as the Spanish edition's style guide
writes them (1 118 048 B: a space, a no-break space or a narrow one; theory/style.es.md) or not at all (1118048 B);
with both marks, the last one is the decimal mark (1,517,920.5 / 1.517.920,5). One mark with exactly three digits
after it (1,118 or 1.118 kB) can be read either way: it takes the decimal mark the survey's other quantities show
(most of those that show one), else its language's (language: a point in English, a comma in
Spanish). A space groups digits only between groups of exactly three (x11 363 kB is 11, then 363 kB). The handout
(README.md and README.es.md, "The survey") says so.
"""

from __future__ import annotations

import re

from workshop.i18n import N_, _
from workshop.labs.distributed.figure_rows import FigureRow

# A word: letters of any script (está, años), then letters, apostrophes or hyphens (all-reduce, it's). On ASCII
# text this is exactly [A-Za-z][A-Za-z'’-]*, so English counts do not change.
WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|['’-])*")
# A sentence ends at . ! or ? before a space and what can start one: a capital (accented ones too), Spanish's
# opening ¿ and ¡, emphasis, a parenthesis or code.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÁÉÍÓÚÜÑ¿¡*_(`])")
# Function words that only one of the two languages has (not "a": both do): a page of prose has dozens of them.
FUNCTION_WORDS = {
    "en": frozenset(
        {"the", "of", "and", "to", "is", "are", "that", "it", "its", "for", "on", "with"}
    ),
    "es": frozenset({"el", "la", "los", "las", "de", "del", "que", "y", "en", "un", "una", "por"}),
}


def strip(text: str) -> str:
    """The text without HTML comments and fenced code (their lines kept blank, so line numbers hold)."""
    blank = lambda m: "\n" * m.group(0).count("\n")  # noqa: E731
    text = re.sub(r"<!--.*?-->", blank, text, flags=re.S)
    return re.sub(r"^```.*?^```", blank, text, flags=re.S | re.M)


def prose(text: str) -> str:
    """What counts as prose: no comments, code, tables or headings."""
    lines = strip(text).splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith(("|", "#")))


def words(text: str) -> int:
    return len(WORD.findall(prose(text)))


def shared_passages(text: str, other: str, length: int) -> list[str]:
    """Runs of `length` words in a row that both texts' prose hold (case aside), each as its words, in the order
    `text` has them."""

    def runs(t: str) -> list[str]:
        found = [w.lower() for w in WORD.findall(prose(t))]
        return [" ".join(found[i : i + length]) for i in range(len(found) - length + 1)]

    theirs = set(runs(other))
    return [run for run in dict.fromkeys(runs(text)) if run in theirs]


def language(text: str) -> str:
    """'es' when the prose has more Spanish function words than English ones, else 'en'."""
    found = [w.lower() for w in WORD.findall(prose(text))]
    counts = {lang: sum(w in own for w in found) for lang, own in FUNCTION_WORDS.items()}
    return "es" if counts["es"] > counts["en"] else "en"


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, prose under it) for each section; the text before the first heading has heading ''."""
    parts = re.split(r"^(#+ .*)$", strip(text), flags=re.M)
    return list(zip(["", *parts[1::2]], [prose(body) for body in parts[::2]], strict=True))


def sentences(text: str) -> list[tuple[str, str]]:
    """(heading, sentence) for each sentence of prose (a list item is a paragraph of its own)."""
    return [
        (heading, s)
        for heading, body in sections(text)
        for paragraph in re.split(r"\n\s*\n|\n\s*[-*] ", body)
        for s in SENTENCE_END.split(" ".join(paragraph.split()))
        if s.strip()
    ]


SPACES = (
    " \u00a0\u202f"  # a space, a no-break space, a narrow no-break space: digit groups (1 118 048)
)
NUMBER = (
    rf"\d{{1,3}}(?:[.,]\d{{3}})+(?!\d)(?:[.,]\d+)?|\d{{1,3}}(?:[{SPACES}]\d{{3}})+(?!\d)(?:[.,]\d+)?"
    r"|\d+(?:[.,]\d+)?"
)
UNITS = {  # written unit -> (dimension, scale to the figures' unit)
    "GB/s": ("GB/s", 1.0),
    "B": ("bytes", 1.0),
    "bytes": ("bytes", 1.0),
    "kB": ("bytes", 1e3),
    "KB": ("bytes", 1e3),
    "KiB": ("bytes", 1024.0),
    "MB": ("bytes", 1e6),
    "MiB": ("bytes", 1024.0**2),
    "GB": ("bytes", 1e9),
    "GiB": ("bytes", 1024.0**3),
    "us": ("ms", 1e-3),
    "µs": ("ms", 1e-3),
    "ms": ("ms", 1.0),
    "%": ("fraction", 0.01),
}
# as a message names a dimension (the others: as written)
DIMENSION_NAMES = {"fraction": N_("fraction")}
UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
# One number, or a range or list of them (1.68-0.84 MB, 1,68 a 0,84 MB), then its unit. Not inside a word or
# another number (x4 180 kB is 180 kB).
QUANTITY = re.compile(
    rf"(?<![\w.,])((?:{NUMBER})(?:(?:\s*(?:-|–|/)\s*|\s+(?:to|a)\s+)(?:{NUMBER}))*)\s*({UNIT})(?![\w/])"
)


def shown_decimal_mark(written: str) -> str | None:
    """The decimal mark a written number implies: '.' or ',' (1.68; 1,68; 1.118.048 implies a decimal comma),
    '' for a plain integer, None when it could be either (1,118: one mark, three digits after it)."""
    marks = re.findall(r"[.,]", written)
    if not marks:
        return ""
    if len(set(marks)) == 2:
        return marks[-1]
    if len(marks) > 1:  # repeated: thousands, so the decimal mark is the other one
        return "," if marks[0] == "." else "."
    head, tail = written.split(marks[0])
    # a group can follow 1-3 digits, not 0
    thousands = len(tail) == 3 and head != "0" and len(head) <= 3
    return None if thousands else marks[0]


def decimal_mark(text: str) -> str:
    """The decimal mark of a survey's prose: what most of its quantities that show one show, else its language's."""
    shown = [
        shown_decimal_mark(number)
        for match in QUANTITY.finditer(prose(text))
        for number in re.findall(NUMBER, match.group(1))
    ]
    points, commas = shown.count("."), shown.count(",")
    if points != commas:
        return "." if points > commas else ","
    return "," if language(text) == "es" else "."


def parse(written: str, decimal: str) -> tuple[float, int]:
    """A written number's value and its decimals; `decimal`: the mark a number that could be either takes."""
    mark = shown_decimal_mark(written)
    mark = decimal if mark is None else mark
    integer, fraction = written.rsplit(mark, 1) if mark and mark in written else (written, "")
    return float(re.sub(rf"[.,{SPACES}]", "", integer) + "." + (fraction or "0")), len(fraction)


# A quantity written in the survey, as a dict (`quoted`): its text, its line, its dimension, its values in the
# figures' unit, and how exactly it is written: its tolerance, half a unit of the last digit written, in the
# figures' unit
Quoted = dict


def quoted(text: str) -> list[Quoted]:
    out, decimal = [], decimal_mark(text)
    for number, line in enumerate(strip(text).splitlines(), 1):
        for match in QUANTITY.finditer(line):
            dimension, scale = UNITS[match.group(2)]
            parsed = [parse(x, decimal) for x in re.findall(NUMBER, match.group(1))]
            decimals = max(d for _value, d in parsed)
            values = tuple(value * scale for value, _decimals in parsed)
            out.append(
                dict(
                    text=match.group(0),
                    line=number,
                    dimension=dimension,
                    values=values,
                    tolerance=0.5 * 10**-decimals * scale,
                )
            )
    return out


def figure_quantities(figures: list[FigureRow]) -> dict[str, list[tuple[float, str]]]:
    """Dimension -> [(value, what it is)] over every figure: what a survey may quote."""
    out: dict[str, list[tuple[float, str]]] = {"bytes": [], "ms": [], "fraction": [], "GB/s": []}
    for f in figures:
        # (dimension, value, what it is, the names its text is formatted with besides {demo}); a value of None:
        # the run has no such figure
        quantities = [
            ("bytes", f["state_bytes_per_rank"], N_("{demo} held per rank"), {}),
            ("bytes", f["comm_bytes"], N_("{demo} collectives' buffers"), {}),
            *(
                ("bytes", v, N_("{demo} rank 0 {kind}"), {"kind": k})
                for k, v in f["bytes_rank0"].items()
            ),
            ("bytes", f["sent_bytes"], N_("{demo} sent per rank"), {}),
            ("bytes", f["cuda_peak_bytes"] or None, N_("{demo} CUDA peak"), {}),
            *(
                quantity
                for r in f["collectives_rank0"]
                for quantity in (
                    (
                        "bytes",
                        r["bytes"],
                        "{demo} {phase} {op}",
                        {"phase": r["phase"], "op": r["op"]},
                    ),
                    ("bytes", r["bytes"] / r["count"], N_("{demo} one {op}"), {"op": r["op"]}),
                )
            ),
            *(
                quantity
                for c in f["communication"]
                for quantity in (
                    ("bytes", c["buffer_bytes"], N_("{demo} {kind} buffers"), {"kind": c["kind"]}),
                    ("bytes", c["sent_bytes"], N_("{demo} {kind} sent"), {"kind": c["kind"]}),
                    (
                        "ms",
                        c["seconds"] and 1e3 * c["seconds"] or None,
                        N_("{demo} {kind} time"),
                        {"kind": c["kind"]},
                    ),
                    (
                        "GB/s",
                        c["busbw_gbps"] or None,
                        N_("{demo} {kind} bus bandwidth"),
                        {"kind": c["kind"]},
                    ),
                )
            ),
            ("ms", f["step_ms"], N_("{demo} step"), {}),
            ("ms", f["chunk_ms"] or None, N_("{demo} chunk"), {}),
            ("ms", f["overhead_ms"] or None, N_("{demo} overhead"), {}),
            ("fraction", f["bubble"], N_("{demo} idle"), {}),
            ("fraction", f["bubble_theory"], N_("{demo} idle in theory"), {}),
            ("fraction", f["overhead_share"], N_("{demo} overhead share"), {}),
        ]
        for dimension, value, what, names in quantities:
            if value is not None:
                out[dimension].append((value, _(what).format(demo=f["demo"], **names)))
    return out


def untraced(text: str, figures: list[FigureRow]) -> list[str]:
    """Each quantity of the text that matches no figure: 'line N: text (nearest: value, what)'."""
    known = figure_quantities(figures)
    out = []
    for q in quoted(text):
        for value in q["values"]:
            candidates = known[q["dimension"]]
            # the written precision's half unit, and a hair more: 62% is what '{:.0%}' writes for 0.625
            if any(abs(value - v) <= q["tolerance"] * (1 + 1e-6) for v, _what in candidates):
                continue
            nearest = min(candidates, key=lambda c: abs(c[0] - value), default=None)
            line = _("line {line}: {text}").format(line=q["line"], text=q["text"])
            if nearest:
                unit = _(DIMENSION_NAMES.get(q["dimension"], q["dimension"]))
                line += " " + _("(nearest: {value:.4g} {unit}, {what})").format(
                    value=nearest[0], unit=unit, what=nearest[1]
                )
            out.append(line)
            break
    return out


def cited(text: str, figures: list[FigureRow]) -> int:
    """How many quantities in the prose trace to the figures."""
    body = prose(text)
    return len(quoted(body)) - len(untraced(body, figures))

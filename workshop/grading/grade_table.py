"""`grade`'s table: one line per learner (gradebook.Row), one column per exercise the workshop declares, then the
runs' facts and the notes; written as grades.csv and grades.md (TableFiles), every learner-supplied text made
inert: no spreadsheet formula in the CSV, no pipe, HTML or link in the Markdown.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from workshop import labs
from workshop.declarations import checks
from workshop.foundations import atomic
from workshop.i18n import N_, _, ngettext

FACTS = ("git_revision", "tree_modified", "torch", "triton", "python", "device", "device_name")
# The facts' column headings (torch, triton, python are names, the same in every language)
FACT_HEADINGS = {
    "git_revision": N_("git revision"),
    "tree_modified": N_("tree modified"),
    "device": N_("device"),
    "device_name": N_("device name"),
}


def declared() -> list[str]:
    """Every exercise the workshop declares, in lab order: the table's columns, and the only ids counted."""
    return [ex.id for exercises in labs.all_exercises().values() for ex in exercises]


def table(rows: list) -> tuple[list[str], list[list[str]]]:
    """The header and one line per learner: name, passing count, each exercise, the facts, runs, the names the
    hand-in gives, its source, notes.
    Headings and statuses in the language in use; exercise ids, torch, triton and python as they are."""
    exercise_ids = declared()
    # the exercises passing: none unless this grade ran them (a result.json is a file anyone can edit)
    passing = lambda row: sum(row.statuses.get(e) == checks.PASSING for e in exercise_ids)  # noqa: E731
    header = [
        _("learner"),
        _("exercises passing"),
        *exercise_ids,
        *(_(FACT_HEADINGS.get(name, name)) for name in FACTS),
        *(_("runs"), _("name it gives"), _("source"), _("notes")),
    ]
    return header, [
        [
            row.learner,
            f"{passing(row) if row.verified else 0}/{len(exercise_ids)}",
            *(cell(row, e) for e in exercise_ids),
            *(" / ".join(sorted(row.facts.get(name, set()))) or "?" for name in FACTS),
            " ".join(row.runs),
            " / ".join(sorted(row.claimed)),
            row.source,
            " | ".join(row.notes),
        ]
        for row in rows
    ]


def cell(row, exercise_id: str) -> str:
    """An exercise's cell: its status, marked self-reported unless this grade ran it, and the hints the learner
    took on it and the `check --show` runs that graded it, as the hand-in counts them ('passing (2 hints,
    --show 1; self-reported)')."""
    status = row.statuses.get(exercise_id, checks.NOT_GRADED)
    text = _(status)
    if not row.verified and status != checks.NOT_GRADED:
        text = _("{status} (self-reported)").format(status=text)
    taken, shown = row.hints.get(exercise_id, 0), row.shown.get(exercise_id, 0)
    helps = [ngettext("{n} hint", "{n} hints", taken).format(n=taken)] if taken else []
    helps += [f"--show {shown}"] if shown else []
    if not helps:
        return text
    return text + " " + _("({helps}; self-reported)").format(helps=", ".join(helps))


# The title of a table, and the first note of each of its rows, where the hand-ins' code ran as processes of the
# grading machine (--sandbox native): it could change what grade reads and writes, so its statuses are evidence of
# nothing but a rehearsal
NOT_ISOLATED = N_("not isolated: a rehearsal, not a grade")

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as a formula


def to_csv(header: list[str], lines: list[list[str]]) -> str:
    """The table as CSV; a cell that would start a formula gets a leading apostrophe, so that a spreadsheet
    shows it as text."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(
        [
            ["'" + c if c.startswith(FORMULA_START) else c for c in map(str, line)]
            for line in [header, *lines]
        ]
    )
    return buf.getvalue()


# What would make learner text live: a table cell's pipe, HTML, a link's or an image's brackets and the escape
# itself (CommonMark's backslash escapes), and the two forms GitHub links bare ("http://", "www.")
MARKDOWN_ESCAPES = {"|": "\\|", "<": "&lt;", ">": "&gt;"} | {c: "\\" + c for c in "\\[]"}
BARE_LINK = re.compile(r"(?<=:)//|(?<=www)\.", re.IGNORECASE)


def md_cell(value) -> str:
    """Text that stays inside its Markdown table cell or list item, inert: one line, no pipe, no HTML, no link,
    no image."""
    text = "".join(MARKDOWN_ESCAPES.get(c, c) for c in " ".join(str(value).split()))
    return BARE_LINK.sub(lambda m: "".join("\\" + c for c in m.group()), text)


def to_markdown(header: list[str], lines: list[list[str]], title: str) -> str:
    """The table without the notes column, then each learner's notes as a list below it."""

    def cells(values):
        return "| " + " | ".join(md_cell(v) for v in values) + " |"

    body = [
        cells(header[:-1]),
        "|" + "---|" * (len(header) - 1),
        *(cells(line[:-1]) for line in lines),
    ]
    notes = [f"- **{md_cell(line[0])}**: {md_cell(line[-1])}" for line in lines if line[-1]]
    text = f"# {title}\n\n" + "\n".join(body) + "\n"
    return text + ("\n## " + _("Notes") + "\n\n" + "\n".join(notes) + "\n" if notes else "")


class TableFiles:
    """grades.csv and grades.md in a folder that has none (nothing is overwritten), titled not isolated where the
    hand-ins' code ran unisolated (NOT_ISOLATED), written as rows come:
    grades.partial.csv/.md after each hand-in (titled partial, k of n: what survives a Ctrl-C), then
    grades.csv/.md once every hand-in is graded, the partial ones removed."""

    def __init__(self, out_dir: Path, total: int, isolated: bool = True):
        self.out_dir, self.total = Path(out_dir), total
        self.isolated = isolated
        self.title = _("Grades") if isolated else _(NOT_ISOLATED).capitalize()
        self.final = (self.out_dir / "grades.csv", self.out_dir / "grades.md")
        self.partial = (self.out_dir / "grades.partial.csv", self.out_dir / "grades.partial.md")
        existing = [p for p in self.final if p.exists()]
        if existing:
            raise FileExistsError(
                ngettext(
                    "{files} already exists: choose another --to folder",
                    "{files} already exist: choose another --to folder",
                    len(existing),
                ).format(files=", ".join(str(p) for p in existing))
            )

    def update(self, rows: list, done: bool = False) -> tuple[Path, Path]:
        """Write the table of `rows`: the partial one, or, once every hand-in is graded (`done`), the final one,
        the partial ones removed."""
        partial = _("{title} (partial: {done} of {total} hand-ins graded)").format(
            title=self.title, done=len(rows), total=self.total
        )
        title, paths = (self.title, self.final) if done else (partial, self.partial)
        header, lines = table(rows)
        atomic.write_text(paths[0], to_csv(header, lines))
        atomic.write_text(paths[1], to_markdown(header, lines, title))
        for path in self.partial if done else ():
            path.unlink(missing_ok=True)
        return paths

"""The survey exercise: the learner's one page on DDP, FSDP, tensor and pipeline parallel (`survey.md` in their
workspace), started from a template filled with their run's figures (`template`, the workspace's hook: written by
`exercises init` after a run, or by `check` after its run), and graded for:

- length: one page of prose, WORDS words in the survey's language (tables, headings, code and comments do not
  count);
- the four strategies (survey_strategies.py): each named in sentences of prose about it alone that say what each
  rank holds and what each collective carries, checked against that strategy's own facts; the tables do not
  count, the lab fills them in;
- figures (survey_text.py): every byte count, time, percentage and bandwidth in the text traces to the run's
  figures within the precision it is written with, and at least MIN_CITED of them are quoted in the prose.

A survey may be written in English or in Spanish, whatever language the run speaks: the grader reads the
language from the text (survey_text.language), and the strategies' words and the numbers' formats of both.
The figures a survey is traced against are those of the run it was started from (its template names that run's
figures.json), themselves checked against the run that grades it: byte counts and collectives do not change
from run to run at one N; times and idle fractions do, so they are quoted from that run, not re-measured.
The model answer, survey/README.md (survey/README.es.md in Spanish), is graded the same way against the
committed runs' figures.json.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from workshop import i18n
from workshop.i18n import _, templates
from workshop.lab_api import LabContext
from workshop.labs.distributed import figure_rows
from workshop.labs.distributed.grading import survey_strategies, survey_text
from workshop.learner import workspace

REPO = Path(__file__).resolve().parents[4]
TEMPLATES = Path(__file__).resolve().parents[1] / "templates"  # the lab's
MODEL_ANSWER = REPO / "survey" / "README.md"  # the reference of the exercise
COMMITTED_RUNS = [  # the runs the model answer quotes, each a figures.json
    REPO / "benchmarks" / "cpu-run" / "distributed-n2" / "figures.json",
    REPO / "benchmarks" / "cpu-run" / "distributed-n4" / "figures.json",
    REPO / "benchmarks" / "h200-run" / "distributed" / "figures.json",
]
STARTER = "survey_starter.md.j2"
# One page of prose, in the survey's language. Spanish says the same in more words (articles, "de"): the model
# answer has 759 words in Spanish against 649 in English (1.17x), and the range scales by as much.
WORDS = {"en": (250, 700), "es": (290, 820)}
MIN_CITED = 4
# The model answer is in the repository every learner clones, and its byte counts are the same on every run at one
# N: a survey may share no run of this many words with it, in either language (its own words, not a copy).
COPIED_WORDS = 12
# The most the lab's process reads of what a learner names: survey.md (a page of prose is ~5 kB) and the
# figures.json it quotes (a run's is ~30 kB)
SURVEY_BYTES, FIGURES_BYTES = 256 * 1024, 16 * 2**20


def model_answer(lang: str) -> Path:
    """The model answer in `lang` (survey/README.es.md), or the English source where it has no translation."""
    translated = MODEL_ANSWER.with_name(f"README.{lang}.md")
    return translated if lang != i18n.DEFAULT and translated.is_file() else MODEL_ANSWER


def template(lab_dir: Path | None, work: Path) -> str | None:
    """The workspace's hook (Exercise.template): survey.md's starting text from the lab's newest run folder, in the
    language in use (`exercises init` or `check` writing it), or None when there is no run yet (`check
    distributed` writes it after its run): the survey's template, its tables filled with the run's figures
    (placeholders where it has none), and the run's figures.json named in the text, relative to `work`, the
    workspace survey.md is written to, so that grading finds them again."""
    path = Path(lab_dir) / "figures.json" if lab_dir else None
    if path is None or not path.is_file():
        return None
    figures = figure_rows.read(path)
    first = figures[0] if figures else None
    return templates.render(
        TEMPLATES,
        i18n.language(),
        {
            "figures": figures,
            "source": relative(path, work),
            "n": first and first["n"],
            "device": first and first["device"],
        },
        STARTER,
    )


def relative(path: Path, folder: Path) -> str:
    """`path` as seen from `folder` (../results/<run>/distributed/figures.json): it still names the file when
    the workspace and its results move together."""
    return os.path.relpath(Path(path).resolve(), Path(folder).resolve())


def mismatches(quoted: list[figure_rows.FigureRow], run: list[figure_rows.FigureRow]) -> list[str]:
    """Demos whose fixed figures differ between the figures a survey quotes and this run's: what does not change
    between runs at one N (N, the bytes per rank, each logged row of collectives)."""
    theirs, ours = (
        {
            f["demo"]: (
                f["n"],
                f["state_bytes_per_rank"],
                [(r["phase"], r["op"], r["count"], r["bytes"]) for r in f["collectives_rank0"]],
            )
            for f in figures
        }
        for figures in (quoted, run)
    )
    return [d for d in sorted(set(theirs) | set(ours)) if theirs.get(d) != ours.get(d)]


def grade(
    ctx: LabContext,
    document: Path,
    run: list[figure_rows.FigureRow] | None = None,
    run_dir: Path | None = None,
) -> None:
    """Grade a survey: the learner's against the figures it was started from (figures_quoted), checked against
    `run` (the figures of the run graded against, whose lab folder is `run_dir`: this run's by default); the
    model answer (run None) against the committed runs'."""
    if not Path(document).is_file():
        raise NotImplementedError(  # `check` writes the template after its run (Exercise.template)
            _("{name} does not exist yet: `python -m workshop check distributed` writes it").format(
                name=Path(document).name
            )
        )
    text = text_of(document, SURVEY_BYTES)
    if text is None:  # a learner's file, read by the lab's process: never more than a page could be
        ctx.check_max(
            _("survey: bytes of survey.md (a page of prose is a few kB)"),
            Path(document).stat().st_size,
            SURVEY_BYTES,
        )
        return
    if run is None:  # the model answer
        figures, problem = [f for path in COMMITTED_RUNS for f in figure_rows.read(path)], None
    else:
        figures, problem = figures_quoted(ctx, document, text, run, run_dir or ctx.out_dir)
        ctx.check_equal(
            _("survey: the figures file it names is there and one of this workspace's runs"),
            problem or "",
            "",
            message=problem,
        )
        if not problem:
            ctx.check_equal(
                _(
                    "survey: its figures share this run's N, bytes and collectives (demos that differ)"
                ),
                mismatches(figures, run),
                [],
                message=_(
                    "{source} is not from a run like this one (other N or code): delete survey.md to start "
                    "again"
                ).format(source=source(text) or "?"),
            )
        check_own_words(ctx, text)
    check_length(ctx, text, "survey.md" if run is not None else _("the model answer"))
    for strategy, missing in survey_strategies.strategy_problems(text).items():
        ctx.check_equal(
            _(
                "survey: {strategy} named, with what each rank holds and what is communicated"
            ).format(strategy=_(strategy)),
            missing,
            [],
            message=f"{_(strategy)}: {'; '.join(missing)}",
        )
    if not problem:
        check_figures(ctx, text, figures)


def check_own_words(ctx: LabContext, text: str) -> None:
    """The learner's survey against the model answer: no passage of COPIED_WORDS words in a row copied from it."""
    model = "\n".join(model_answer(lang).read_text(encoding="utf-8") for lang in ("en", "es"))
    copied = survey_text.shared_passages(text, model, COPIED_WORDS)
    ctx.check_equal(
        _("survey: passages copied from the model answer"),
        len(copied),
        0,
        message=_(
            'write it in your own words: survey.md copies the model answer\'s "{passage}"'
        ).format(passage=copied[0] if copied else ""),
    )


def check_figures(ctx: LabContext, text: str, figures: list[figure_rows.FigureRow]) -> None:
    """Every quantity traces to the figures, and enough of them are quoted in the prose."""
    wrong = survey_text.untraced(text, figures)
    ctx.check_equal(
        _("survey: every byte count, time, percentage and bandwidth traces to the run's figures"),
        wrong,
        [],
        message=_("quote your run's figures (the tables): {wrong}").format(
            wrong="; ".join(wrong[:3])
        ),
    )
    ctx.check_min(
        _("survey: figures of the run quoted in the prose"),
        survey_text.cited(text, figures),
        MIN_CITED,
        message=_("quote at least {n} of your run's figures in your own sentences").format(
            n=MIN_CITED
        ),
    )


def check_length(ctx: LabContext, text: str, name: str) -> None:
    """One page of prose, counted in the survey's own language (WORDS)."""
    low, high = WORDS[survey_text.language(text)]
    count = survey_text.words(text)
    page = _("{count:.0f} words of prose; one page is {low}-{high}").format(
        count=count, low=low, high=high
    )
    ctx.check_min(
        _("survey: words of prose in {name}").format(name=name),
        count,
        low,
        message=_("{page}: write more").format(page=page),
    )
    ctx.check_max(
        _("survey: words of prose in {name} (one page)").format(name=name),
        count,
        high,
        message=_("{page}: cut").format(page=page),
    )


SOURCE = re.compile(r"<!-- figures: (.+?) -->")


def source(text: str) -> str:
    """The figures.json a survey was started from, as its text names it ('' if it names none)."""
    match = SOURCE.search(text)
    return match.group(1).strip() if match else ""


def text_of(path: Path, limit: int) -> str | None:
    """A file the learner names, as text: None unless it is a regular file of at most `limit` bytes (not a
    device, a pipe or a folder that reading would never finish)."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size > limit:
        return None
    return path.read_text(errors="replace")


def readable(path: Path) -> list[figure_rows.FigureRow] | None:
    """The rows of a figures.json, or None when it is not one (missing, too big, not JSON, not this lab's
    rows)."""
    text = text_of(path, FIGURES_BYTES)
    try:
        return [figure_rows.completed(d) for d in json.loads(text)] if text is not None else None
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def figures_quoted(
    ctx: LabContext, document: Path, text: str, run: list[figure_rows.FigureRow], run_dir: Path
) -> tuple[list[figure_rows.FigureRow], str | None]:
    """The figures survey.md (`text`) was started from: those of the figures.json it names, resolved against
    its folder, the workspace (an absolute path stays as it is), or this run's (`run`) where it names none;
    and what is wrong with the file it names, in one line with the fix (None when nothing is). Wrong: missing,
    not a figures.json of this lab, from another workspace's run (its result.json says which workspace it
    graded), or unlike the measurements of its own run (edited, or copied over)."""
    if not (name := source(text)):
        return run, None
    path = Path(document).parent / name
    this_run = f"<!-- figures: {relative(run_dir / 'figures.json', Path(document).parent)} -->"
    named = {"path": name, "this_run": this_run}
    if not path.is_file():
        return run, _(
            "survey.md names {path} as its figures, and it does not exist: name this run's instead "
            "({this_run}) and quote its figures"
        ).format(**named)
    if (quoted := readable(path)) is None:
        return run, _(
            "{path}, named in survey.md, is not a figures.json of this lab: name this run's instead "
            "({this_run})"
        ).format(**named)
    theirs, mine = graded_workspace(path.parent), workspace.read_record(ctx.options.work).get("id")
    if theirs and mine and theirs != mine:
        return quoted, _(
            "{path}, named in survey.md, is another workspace's run: quote one of your own runs (this run: "
            "{this_run})"
        ).format(**named)
    if unlike_its_run(path):
        return quoted, _(
            "{path}, named in survey.md, differs from its own run's measurements (edited, or copied from "
            "another run): quote one of your own runs (this run: {this_run})"
        ).format(**named)
    return quoted, None


def unlike_its_run(path: Path) -> bool:
    """Whether a figures.json's rows differ from those its run folder's measurements give, in the fields it has
    (one written by older code has fewer); False where the folder has no measurements to tell."""
    measured = {
        f["demo"]: json.loads(json.dumps(figure_rows.as_json(f)))
        for f in figure_rows.rows(figure_rows.measurements_in(path.parent))
    }
    return any(
        ours is not None and any(ours[k] != v for k, v in row.items() if k in ours)
        for row in json.loads(path.read_text())
        for ours in (measured.get(figure_rows.completed(row)["demo"]),)
    )


def graded_workspace(lab_dir: Path) -> str | None:
    """The id of the workspace a lab's run folder graded (its result.json), None for a run of the reference."""
    try:
        result = json.loads(text_of(Path(lab_dir) / "result.json", FIGURES_BYTES) or "{}")
        return (result.get("implementation") or {}).get("workspace_id")
    except (ValueError, AttributeError):
        return None

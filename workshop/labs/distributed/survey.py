"""The survey exercise: the learner's one page on DDP, FSDP, tensor and pipeline parallel (`survey.md` in their
workspace), started from a template filled with their run's figures (`template`, the workspace's hook: written by
`exercises init` after a run, or by `check` after its run), and graded for:

- length: one page of prose, WORDS words in the survey's language (tables, headings, code and comments do not
  count);
- the four strategies (survey_strategies.py): each named in sentences of prose about it alone that say what each
  rank holds and what is communicated (the collective's name); the tables do not count, the lab fills them in;
- figures (survey_figures.py): every byte count, time, percentage and bandwidth in the text traces to the run's
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

import re
from pathlib import Path

from workshop import i18n
from workshop.i18n import _, templates
from workshop.lab import LabContext
from workshop.labs.distributed.figures import Figure, read
from workshop.labs.distributed.survey_figures import cited, untraced
from workshop.labs.distributed.survey_strategies import strategy_problems
from workshop.labs.distributed.survey_text import language, words

REPO = Path(__file__).resolve().parents[3]
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


def model_answer(lang: str) -> Path:
    """The model answer in `lang` (survey/README.es.md), or the English source where it has no translation."""
    translated = MODEL_ANSWER.with_name(f"README.{lang}.md")
    return translated if lang != i18n.DEFAULT and translated.is_file() else MODEL_ANSWER


def tables(figures: list[Figure], lang: str) -> str:
    """A run's two tables in `lang`, as the summary and the starter show them (the model answer quotes them so)."""
    folder = Path(__file__).parent
    parts = ("figures_table.md.j2", "communication_table.md.j2")
    return "\n".join(templates.render(folder, lang, {"figures": figures}, part) for part in parts)


def starter(figures: list[Figure], source: str = "", lang: str = i18n.DEFAULT) -> str:
    """The survey's template in `lang`, its tables filled with these figures, read from `source` (a figures.json,
    named in the text so that grading finds them again); no figures: placeholders."""
    first = figures[0] if figures else None
    values = {"figures": figures, "source": source, "n": first.n if first else None}
    return templates.render(
        Path(__file__).parent, lang, {**values, "device": first and first.device}, STARTER
    )


def template(lab_dir: Path | None) -> str | None:
    """The workspace's hook (Exercise.template): survey.md's starting text from the lab's newest run folder, in the
    language in use (`exercises init` or `check` writing it), or None when there is no run yet (`check
    distributed` writes it after its run)."""
    path = Path(lab_dir) / "figures.json" if lab_dir else None
    if path is None or not path.is_file():
        return None
    return starter(read(path), display(path), i18n.language())


def display(path: Path) -> str:
    """A path as the text names it: relative to the current folder (the repository) when under it."""
    path = Path(path).resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def fixed(figure: Figure) -> tuple:
    """What does not change between runs at one N: the figures a survey's figures must share with the run."""
    rows = tuple((r.phase, r.op, r.count, r.bytes) for r in figure.collectives_rank0)
    return figure.demo, figure.n, figure.state_bytes_per_rank, rows


def mismatches(quoted: list[Figure], run: list[Figure]) -> list[str]:
    """Demos whose fixed figures differ between the figures a survey quotes and this run's."""
    theirs, ours = ({fixed(f)[0]: fixed(f) for f in fs} for fs in (quoted, run))
    return [d for d in sorted(set(theirs) | set(ours)) if theirs.get(d) != ours.get(d)]


def grade(
    ctx: LabContext, document: Path, figures: list[Figure], run: list[Figure] | None = None
) -> None:
    """Grade a survey against `figures`: for the learner those it was started from, checked against `run`
    (this run's); for the model answer (run None) the committed runs'."""
    if not Path(document).is_file():
        raise NotImplementedError(  # `check` writes the template after its run (Exercise.template)
            _("{name} does not exist yet: `python -m workshop check distributed` writes it").format(
                name=Path(document).name
            )
        )
    text = Path(document).read_text()
    name = "survey.md" if run is not None else _("the model answer")
    if run is not None:
        ctx.check_equal(
            _("survey: its figures share this run's N, bytes and collectives (demos that differ)"),
            mismatches(figures, run),
            [],
            message=_(
                "{source} is not from a run like this one (other N or code): delete survey.md to start again"
            ).format(source=source(text) or "?"),
        )
    check_length(ctx, text, name)
    for strategy, missing in strategy_problems(text).items():
        ctx.check_equal(
            _(
                "survey: {strategy} named, with what each rank holds and what is communicated"
            ).format(strategy=_(strategy)),
            missing,
            [],
            message=f"{_(strategy)}: {'; '.join(missing)}",
        )
    wrong = untraced(text, figures)
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
        cited(text, figures),
        MIN_CITED,
        message=_("quote at least {n} of your run's figures in your own sentences").format(
            n=MIN_CITED
        ),
    )


def check_length(ctx: LabContext, text: str, name: str) -> None:
    """One page of prose, counted in the survey's own language (WORDS)."""
    low, high = WORDS[language(text)]
    count = words(text)
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


def figures_for(
    document: Path | None, run: list[Figure]
) -> tuple[list[Figure], list[Figure] | None]:
    """The figures a survey is traced against, and this run's to check them with (None for the model answer,
    traced against the committed runs). A learner's: the run it was started from, while its folder exists."""
    if document is None:
        return [f for path in COMMITTED_RUNS for f in read(path)], None
    named = Path(source(Path(document).read_text())) if Path(document).is_file() else None
    return (read(named) if named and named.is_file() else run), run

"""The survey exercise: the learner's one page on DDP, FSDP, tensor and pipeline parallel (`survey.md` in their
workspace), started from a template filled with their run's figures (`template`, the workspace's hook: written by
`exercises init` after a run, or by `check` after its run), and graded for:

- length: one page of prose, WORDS words (tables, headings, code and comments do not count);
- the four strategies: each named in sentences of prose about it alone that say what each rank holds and
  what is communicated (the collective's name); the tables do not count, the lab fills them in;
- figures: every byte count, time, percentage and bandwidth in the text traces to the run's figures within
  the precision it is written with, and at least MIN_CITED of them are quoted in the prose.

The figures a survey is traced against are those of the run it was started from (its template names that run's
figures.json), themselves checked against the run that grades it: byte counts and collectives do not change
from run to run at one N; times and idle fractions do, so they are quoted from that run, not re-measured.
The model answer, survey/README.md, is graded the same way against the committed runs' figures.json.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from workshop import templates
from workshop.i18n import N_, _
from workshop.lab import LabContext
from workshop.labs.distributed.figures import Figure, read

REPO = Path(__file__).resolve().parents[3]
MODEL_ANSWER = REPO / "survey" / "README.md"  # the reference of the exercise
COMMITTED_RUNS = [  # the runs the model answer quotes, each a figures.json
    REPO / "benchmarks" / "cpu-run" / "distributed-n2" / "figures.json",
    REPO / "benchmarks" / "cpu-run" / "distributed-n4" / "figures.json",
    REPO / "benchmarks" / "h200-run" / "distributed" / "figures.json",
]
STARTER = "survey_starter.md.j2"
WORDS = (250, 700)  # one page of prose
MIN_CITED = 4

NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
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
UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
QUANTITY = re.compile(
    rf"(?<![\w.])((?:{NUMBER})(?:\s*(?:-|–|/|to)\s*(?:{NUMBER}))*)\s*({UNIT})(?![\w/])"
)


@dataclass(frozen=True)
class Strategy:
    name: str
    names: str  # a regex that names it
    holds: str  # a regex for what each rank holds
    talks: tuple[tuple[str, str], ...]  # (regex, name) of what is communicated: each must appear
    wrong: str = ""  # a regex for a statement that confuses it with another strategy
    wrong_why: str = ""


STRATEGIES = (
    Strategy(
        "DDP",
        r"\bDDP\b|DistributedDataParallel|(?<!sharded )\bdata[- ]parallel",
        r"replica|whole|entire|full copy|every parameter|all (?:the |its )?param|everything",
        ((r"all-?reduce", "all-reduce"),),
        r"(?<!not )\bshards?\s+(?:the\s+|its\s+)?(?:param|weight|model|gradient|optimi)",
        N_("DDP replicates the parameters, gradients and optimizer state; sharding them is FSDP"),
    ),
    Strategy(
        "FSDP",
        r"\bFSDP2?\b|fully[- ]sharded",
        r"shard|1/N|slice|a part|its part|fraction",
        ((r"all-?gather", "all-gather"), (r"reduce-?scatter", "reduce-scatter")),
        r"(?<!not )\ball-?reduces?\s+(?:the\s+|its\s+)?(?:gradient|param)",
        N_("FSDP does not all-reduce: it all-gathers parameters and reduce-scatters gradients"),
    ),
    Strategy(
        "tensor parallel",
        r"\bTP\b|tensor[- ]parallel",
        r"slice|shard|column|row|split|a part|its part",
        ((r"all-?reduce", "all-reduce"),),
    ),
    Strategy(
        "pipeline parallel",
        r"\bPP\b|pipeline",
        r"stage|layers|blocks",
        ((r"\bsend|\brecv|\breceiv|point-to-point", "send/recv"),),
    ),
)


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
    return len(re.findall(r"[A-Za-z][A-Za-z'’-]*", prose(text)))


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, prose under it) for each section; the text before the first heading has heading ''."""
    parts = re.split(r"^(#+ .*)$", strip(text), flags=re.M)
    return list(zip(["", *parts[1::2]], [prose(body) for body in parts[::2]], strict=True))


def sentences(text: str) -> list[tuple[str, str]]:
    """(heading, sentence) for each sentence of prose (a list item is a paragraph of its own)."""
    out = []
    for heading, body in sections(text):
        for paragraph in re.split(r"\n\s*\n|\n\s*[-*] ", body):
            flat = " ".join(paragraph.split())
            out += [
                (heading, s) for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*_(`])", flat) if s.strip()
            ]
    return out


def named(piece: str) -> set[str]:
    return {s.name for s in STRATEGIES if re.search(s.names, piece, re.I)}


def strategy_problems(text: str) -> dict[str, list[str]]:
    """Strategy -> what the survey does not say about it alone (empty: it is named and distinguished). A
    sentence is about the strategies it names, or, naming none, about the one its section's heading names."""
    about = [(named(sentence) or named(heading), sentence) for heading, sentence in sentences(text)]
    problems = {}
    for s in STRATEGIES:
        own = [sentence for names, sentence in about if names == {s.name}]
        missing = []
        if not own:
            missing.append(_("no sentence is about {strategy} alone").format(strategy=s.name))
        else:
            if not any(re.search(s.holds, p, re.I) for p in own):
                missing.append(_("what each rank holds"))
            missing += [
                _("what is communicated ({collective})").format(collective=name)
                for pattern, name in s.talks
                if not any(re.search(pattern, p, re.I) for p in own)
            ]
            if s.wrong and any(re.search(s.wrong, p, re.I) for p in own):
                missing.append(_(s.wrong_why))
        problems[s.name] = missing
    return problems


@dataclass(frozen=True)
class Quoted:
    """A quantity written in the survey: its value(s) in the figures' units, where, and how exactly."""

    text: str
    line: int
    dimension: str
    values: tuple[float, ...]
    tolerance: float  # half a unit of the last digit written, in the figures' unit


def quoted(text: str) -> list[Quoted]:
    out = []
    for number, line in enumerate(strip(text).splitlines(), 1):
        for match in QUANTITY.finditer(line):
            dimension, scale = UNITS[match.group(2)]
            numbers = re.findall(NUMBER, match.group(1))
            decimals = max(len(x.split(".")[1]) if "." in x else 0 for x in numbers)
            values = tuple(float(x.replace(",", "")) * scale for x in numbers)
            out.append(
                Quoted(match.group(0), number, dimension, values, 0.5 * 10**-decimals * scale)
            )
    return out


def figure_quantities(figures: list[Figure]) -> dict[str, list[tuple[float, str]]]:
    """Dimension -> [(value, what it is)] over every figure: what a survey may quote."""
    out: dict[str, list[tuple[float, str]]] = {"bytes": [], "ms": [], "fraction": [], "GB/s": []}
    for f in figures:
        d = f.demo
        out["bytes"] += [
            (f.state_bytes_per_rank, f"{d} held per rank"),
            (f.comm_bytes, f"{d} collectives' buffers"),
        ]
        out["bytes"] += [(v, f"{d} rank 0 {k}") for k, v in f.bytes_rank0.items()]
        out["bytes"] += [(f.sent_bytes, f"{d} sent per rank")]
        out["bytes"] += [(f.cuda_peak_bytes, f"{d} CUDA peak")] if f.cuda_peak_bytes else []
        for r in f.collectives_rank0:
            out["bytes"] += [
                (r.bytes, f"{d} {r.phase} {r.op}"),
                (r.bytes / r.count, f"{d} one {r.op}"),
            ]
        for c in f.communication():
            out["bytes"] += [
                (c.buffer_bytes, f"{d} {c.kind} buffers"),
                (c.sent_bytes, f"{d} {c.kind} sent"),
            ]
            out["ms"] += [(1e3 * c.seconds, f"{d} {c.kind} time")] if c.seconds else []
            out["GB/s"] += [(c.busbw_gbps, f"{d} {c.kind} bus bandwidth")] if c.busbw_gbps else []
        out["ms"] += [(f.step_ms, f"{d} step")]
        out["ms"] += [
            (v, f"{d} {k}") for k, v in (("chunk", f.chunk_ms), ("overhead", f.overhead_ms)) if v
        ]
        fractions = (
            ("idle", f.bubble),
            ("idle in theory", f.bubble_theory),
            ("overhead share", f.overhead_share),
        )
        out["fraction"] += [(v, f"{d} {k}") for k, v in fractions if v is not None]
    return out


def untraced(text: str, figures: list[Figure]) -> list[str]:
    """Each quantity of the text that matches no figure: 'line N: text (nearest: value, what)'."""
    known = figure_quantities(figures)
    out = []
    for q in quoted(text):
        for value in q.values:
            candidates = known[q.dimension]
            # the written precision's half unit, and a hair more: 62% is what '{:.0%}' writes for 0.625
            if any(abs(value - v) <= q.tolerance * (1 + 1e-6) for v, _ in candidates):
                continue
            nearest = min(candidates, key=lambda c: abs(c[0] - value), default=None)
            line = _("line {line}: {text}").format(line=q.line, text=q.text)
            if nearest:
                line += " " + _("(nearest: {value:.4g} {unit}, {what})").format(
                    value=nearest[0], unit=q.dimension, what=nearest[1]
                )
            out.append(line)
            break
    return out


def cited(text: str, figures: list[Figure]) -> int:
    """How many quantities in the prose trace to the figures."""
    body = prose(text)
    return len(quoted(body)) - len(untraced(body, figures))


def tables(figures: list[Figure]) -> str:
    """A run's two tables, as the summary and the starter show them (the model answer quotes them so)."""
    folder = Path(__file__).parent
    parts = ("figures_table.md.j2", "communication_table.md.j2")
    return "\n".join(templates.render(folder, "en", {"figures": figures}, part) for part in parts)


def starter(figures: list[Figure], source: str = "") -> str:
    """The survey's template, its tables filled with these figures, read from `source` (a figures.json, named
    in the text so that grading finds them again); no figures: placeholders."""
    first = figures[0] if figures else None
    values = {"figures": figures, "source": source, "n": first.n if first else None}
    return templates.render(
        Path(__file__).parent, "en", {**values, "device": first and first.device}, STARTER
    )


def template(lab_dir: Path | None) -> str | None:
    """The workspace's hook (Exercise.template): survey.md's starting text from the lab's newest run folder,
    or None when there is no run yet (`check distributed` writes it after its run)."""
    path = Path(lab_dir) / "figures.json" if lab_dir else None
    if path is None or not path.is_file():
        return None
    return starter(read(path), display(path))


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
    low, high = WORDS
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
    for strategy, missing in strategy_problems(text).items():
        ctx.check_equal(
            _(
                "survey: {strategy} named, with what each rank holds and what is communicated"
            ).format(strategy=strategy),
            missing,
            [],
            message=f"{strategy}: {'; '.join(missing)}",
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

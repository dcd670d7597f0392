"""What an exercise is: a piece of a lab the learner writes, graded by that lab's own checks. Declared once.

A lab declares its exercises in `workshop/labs/<lab>/exercises.py` as `EXERCISES = [Exercise(...), ...]` (cheap
to import: no torch); the registry (workshop.labs.exercises) finds them by the lab's name. Each names the
instructor's solution (`reference`, "module:attribute") and what the learner's file defines instead
(`attribute`: a function, or a dict of answers whose `questions` are declared), or, for a document such as the
survey, the workspace file (`document`). The lab grades it inside `with ctx.grading("name") as impl:`
(workshop/lab_api.py): `impl` is the learner's version when a workspace is graded, else the reference, and every
check recorded in the block counts for that exercise.

Everything the learner's file says of an exercise is derived from the declaration (`stub_code`), once:
- a function: the reference's decorators and signature as its source writes them, ONE docstring (the id and
  title, the statement, the interface, where to read and how to check it), `raise NotImplementedError("<id>")`;
- a dict of answers: the same text as a comment block, then the dict generated from its questions
  (declarations.questions.stub).
Only prose is translated (N_() in the declaration); code is derived, never a message. No line is longer than
WIDTH. The hints (`hints`: a direction, then the formula, then a skeleton without the key lines) are not in
the file: `check LAB EXERCISE --hint` shows them, one more each time the learner asks.

A document's starting text comes from its `template`, a function called as `template(lab_dir, work)` with
the newest run folder of the lab (results/<run-id>/<lab>/, or None when there is none) and the workspace the
document is written to: it returns the Markdown to write, or None when it needs a run of the lab first (then
`check LAB` writes the file after its run).

An exercise graded from a run's artifacts (answers read off the run's files, a document quoting its figures)
declares `from_run=True`: `check LAB EXERCISE` then grades a changed answer against the learner's latest run of
the lab without running it again (LabSpec.regrade; see workshop/lab_api.py).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import pkgutil
import textwrap
from collections.abc import Callable
from pathlib import Path

from workshop.declarations.checks import PASSING, Check
from workshop.declarations.diagnosis import Diagnosis
from workshop.declarations.questions import WIDTH, Question, stub
from workshop.i18n import LABS_DIR, N_, _


@dataclasses.dataclass(frozen=True)
class Exercise:
    lab: str
    name: str  # unique within the lab; the exercise's id is "<lab>.<name>"
    title: str  # one line
    statement: str  # what to write, in full sentences
    # shown one at a time when the exercise fails: a direction, then the formula, then a skeleton without the
    # key lines (at least one)
    hints: tuple[str, ...]
    handout: str  # the handout section to read: "README.md#anchor", relative to the lab's folder
    reference: str  # the instructor's solution, "module:attribute" (a function, a constant, or a file path)
    # what the learner's <lab>.py defines; None for a document
    attribute: str | None = None
    # a workspace file the learner writes (e.g. "survey.md") instead of code
    document: str | None = None
    # the questions of a dict of answers (ANSWERS, PREDICTIONS): its stub, and the one grader's keys
    questions: tuple[Question, ...] = ()
    # signature, shapes and dtypes, what a dict holds: a paragraph of the docstring (or comment)
    interface: str = ""
    # a document's starting text: a function (see the module's docstring), cheap to import with the declaration:
    # one that needs more imports its module inside it
    template: Callable[[Path | None, Path], str | None] | None = None
    # graded from a run's artifacts: `check LAB EXERCISE` re-grades it against the latest run
    from_run: bool = False
    # CPU seconds the learner's code may take here (an endless loop ends)
    time_limit_s: float = 120.0

    # ---- how the engine grades it (workshop/engine.py) ----
    # the mistakes learners make, as data: read in order when an output (or an answer) is wrong; the first the
    # learner's output shows names the mistake
    diagnoses: tuple[Diagnosis, ...] = ()
    # what the function returns, in order, and how a check names each ({"dW": "dL/dW"}: the handout's symbols)
    outputs: tuple[str, ...] = ()
    shown: dict[str, str] = dataclasses.field(default_factory=dict)
    # one output against the reference's: compare(evidence) -> (error, bound[, scale[, relation]]); passes when
    # error <= bound, or, with relation "==", when error (a value: an order, a yes/no) equals bound
    compare: Callable | None = None
    # the name of an output's check, formatted with {function}, {output} (as shown) and {label} (the case's); a
    # dict output -> name where each output's check is worded on its own (questions: key -> name with {answer})
    check: str | dict[str, str] = N_("{function}: {output} = the reference's ({label})")

    @property
    def id(self) -> str:
        return f"{self.lab}.{self.name}"

    def __post_init__(self):
        if (self.attribute is None) == (self.document is None):
            raise ValueError(f"exercise {self.id}: give exactly one of attribute= and document=")
        if not self.hints or isinstance(self.hints, str):
            raise ValueError(f"exercise {self.id}: give hints=(...) a tuple of at least one hint")

    def localized(self) -> Exercise:
        """This exercise with its learner-facing text in the language in use. The declarations mark that
        text with N_() (English, the source); the catalogs of workshop.i18n translate it here. A handout
        marked N_() points at the handout's translation (README.es.md#its-translated-heading) where this lab
        has that file: the labs' catalogs are one chain, so another lab's "README.md#questions" may translate."""
        texts = ("title", "statement", "interface")
        handout = _(self.handout)
        if not (LABS_DIR / self.lab / handout.partition("#")[0]).is_file():
            handout = self.handout
        return dataclasses.replace(
            self,
            handout=handout,
            hints=tuple(_(h) for h in self.hints),
            **{f: _(getattr(self, f)) for f in texts if getattr(self, f)},
        )

    def load_reference(self):
        return pkgutil.resolve_name(self.reference)

    def hint(self, level: int) -> str:
        """The hint of `level` (1: the first), shown when the learner asks for it (check --hint)."""
        return self.hints[min(max(level, 1), len(self.hints)) - 1]

    def not_started_message(self) -> str:
        """Why a stub fails: the exercise's id and the first sentence of its statement."""
        first = self.statement.strip().split(". ")[0].rstrip(".")
        return _("{id}: {first}. See {handout}.").format(
            id=self.id, first=first, handout=self.handout_path()
        )

    def document_text(self, lab_dir: Path | None, work: Path) -> str | None:
        """A document's starting text (its template's, from the lab's run in `lab_dir`, for the workspace
        `work`), or None when the template needs a run of the lab first. Without a template: the title and the
        statement to answer."""
        if self.template:
            return self.template(lab_dir, work)
        return f"# {self.title}\n\n<!-- {self.statement.strip()} -->\n\n"

    def result(
        self, status: str, checks: list[str], failed_check: Check | None, hints_taken: int = 0
    ) -> dict:
        """This exercise's entry in result.json's "exercises": its status, its checks, the failed check it
        reports, the hint the learner is at (none before they ask: check --hint), and how many they asked for."""
        return {
            "title": self.title,
            "status": status,
            "passed": status == PASSING,
            "checks": checks,
            "failed_check": failed_check.as_dict() if failed_check else None,
            "hint": self.hint(hints_taken) if failed_check and hints_taken else None,
            "hints_taken": hints_taken,
            "handout": self.handout_path(),
        }

    def handout_path(self) -> str:
        return f"workshop/labs/{self.lab}/{self.handout}"

    # ---- the learner's file ----
    def paragraphs(self) -> list[str]:
        """What the learner's file says of the exercise, paragraph by paragraph."""
        return [
            _("Exercise {id}: {title}.").format(id=self.id, title=self.title.rstrip(".")),
            self.statement.strip(),
            *([self.interface.strip()] if self.interface else []),
            _("Read: {handout}").format(handout=self.handout_path())
            + "\n"
            + _("Check: {command}").format(
                command=f"python -m workshop check {self.lab} {self.name}"
            ),
        ]

    def stub_code(self) -> str:
        """The exercise's code in the learner's starting file (see the module's docstring): for a function, its
        decorators, parameters and return annotation as the reference's source writes them (annotations not
        expanded to module paths the learner's file would have to import; a Triton kernel's source function
        too), the signature on one line when it fits in WIDTH, else one parameter per line."""
        if self.questions:
            comment = [f"# {line}".rstrip() for line in wrapped(self.paragraphs(), WIDTH - 2)]
            return "\n".join(comment) + "\n" + stub(self.attribute, self.questions)
        reference = self.load_reference()
        function = getattr(
            reference, "fn", reference
        )  # a @triton.jit kernel keeps its function in .fn
        if not inspect.isfunction(function):
            raise ValueError(f"exercise {self.id}: a constant's stub needs its questions=")
        # the function's source is its one statement: the def, its decorators included
        node = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
        return self.function_stub(node, self.attribute)

    def function_stub(self, node: ast.FunctionDef, name: str) -> str:
        """The stub of the function `node` (parsed from the reference's source) as the function `name`: the
        learner's file's (stub_code), and the learner edition's in place of the reference (grading/edition.py)."""
        params = parameters(node.args)
        tail = f" -> {ast.unparse(node.returns)}:" if node.returns else ":"
        one_line = f"def {name}({', '.join(params)}){tail}"
        lines = [f"@{ast.unparse(d)}" for d in node.decorator_list] + (
            [one_line]
            if len(one_line) <= WIDTH
            else [f"def {name}(", *(f"    {p}," for p in params), f"){tail}"]
        )
        doc = wrapped(self.paragraphs(), WIDTH - 4, reserve=3)
        doc[0] = '"""' + doc[0]
        lines += [f"    {line}".rstrip() for line in doc] + [
            '    """',
            f'    raise NotImplementedError("{self.id}")',
        ]
        return "\n".join(lines) + "\n"


def wrapped(paragraphs: list[str], width: int, reserve: int = 0) -> list[str]:
    """The paragraphs filled to `width`, blank-separated (a line break inside one is kept), the first line
    `reserve` columns shorter (for an opening quote). A word is never broken (a path, a command): only a word
    longer than the width passes it."""
    lines = []
    for paragraph in paragraphs:
        for part in paragraph.split("\n"):
            lines += textwrap.wrap(
                " ".join(part.split()),
                width,
                # the first line filled as if it began `reserve` columns in; those columns are cut below
                initial_indent=" " * reserve if not lines else "",
                break_long_words=False,
                break_on_hyphens=False,
            )
        lines.append("")
    return [lines[0][reserve:], *lines[1:-1]]


def parameters(args: ast.arguments) -> list[str]:
    """Each parameter as written: `x`, `dim: int`, `cfg: GPTConfig = GPTConfig()`, `*args`, `**kwargs`, and the
    `/` and `*` that close the positional-only and open the keyword-only ones."""

    def one(arg: ast.arg, default: ast.expr | None = None, prefix: str = "") -> str:
        # ast.unparse(arg) writes "name: annotation"; PEP 8 spaces a default's = only after an annotation
        equals = " = " if arg.annotation else "="
        return (
            prefix + ast.unparse(arg) + ("" if default is None else equals + ast.unparse(default))
        )

    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + args.defaults
    out = [one(a, d) for a, d in zip(positional, defaults, strict=True)]
    if args.posonlyargs:
        out.insert(len(args.posonlyargs), "/")
    star = [one(args.vararg, prefix="*")] if args.vararg else ["*"] if args.kwonlyargs else []
    keywords = [one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    return out + star + keywords + ([one(args.kwarg, prefix="**")] if args.kwarg else [])


# ---- what a grading block gets instead of an implementation (LabContext.grading) ----
# A stand-in that raises on any
# use, so that the block's first use of it ends the exercise. What it raises says why:
#
# - the learner's solution could not be loaded (the file will not import, lacks the name, killed an earlier
#   attempt): any use raises that reason, which the block records as the exercise's failure;
# - this run does not grade the exercise (`check LAB EXERCISE`): any use raises SkipGrading, and the block
#   records nothing.
# Code that inspects an implementation before using it (isinstance(answers, dict)) calls `real` first.


class SkipGrading(BaseException):
    """Ends the grading block of an exercise this run does not grade: nothing is recorded for it."""


class StandIn:
    """Any use (a call, an item, iteration, len(), a path, an attribute) raises `error`."""

    def __init__(self, error: BaseException):
        self.error = error

    def _used(self, *args, **kwargs):
        raise self.error

    # every way a grading block uses an implementation is one use
    __call__ = __getitem__ = __iter__ = __len__ = __fspath__ = __getattr__ = _used


def real(impl):
    """impl itself; for a stand-in, what it stands for is raised."""
    if isinstance(impl, StandIn):
        raise impl.error
    return impl

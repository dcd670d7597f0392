"""What an exercise is: a piece of a lab the learner writes, graded by that lab's own checks.

A lab declares its exercises in `workshop/labs/<lab>/exercises.py` as `EXERCISES = [Exercise(...), ...]` (cheap
to import: no torch); the registry (workshop.labs.exercises) finds them by the lab's name. Each names the
instructor's solution (`reference`, "module:attribute") and what the learner's file defines instead
(`attribute`: a function, or a constant holding answers), or, for a document such as the survey, the workspace
file (`document`). The lab grades it inside `with ctx.grading("name") as impl:` (lab.py):
`impl` is the learner's version when `--work DIR` was given, else the reference, and every check recorded in
the block counts for that exercise.

A document's starting text comes from its `template`, "module:function" called as `function(lab_dir)` with the
newest run folder of the lab (results/<run-id>/<lab>/, or None when there is none): it returns the Markdown to
write, or None when it needs a run of the lab first (then `check LAB` writes the file after its run).
"""

from __future__ import annotations

import dataclasses
import inspect
import pkgutil
import textwrap
from pathlib import Path

from workshop.grading.checks import PASSING, Check
from workshop.i18n import _

LABS = Path(__file__).resolve().parents[1] / "labs"  # each lab's folder: its handouts


@dataclasses.dataclass(frozen=True)
class Exercise:
    lab: str
    name: str  # unique within the lab; the exercise's id is "<lab>.<name>"
    title: str  # one line
    statement: str  # what to write, in full sentences
    hint: str  # shown when the exercise fails
    handout: str  # the handout section to read: "README.md#anchor", relative to the lab's folder
    reference: str  # the instructor's solution, "module:attribute" (a function, a constant, or a file path)
    # what the learner's <lab>.py defines; None for a document
    attribute: str | None = None
    # a workspace file the learner writes (e.g. "survey.md") instead of code
    document: str | None = None
    # signature, shapes and dtypes: the stub's docstring
    interface: str = ""
    # the code written into the workspace; default: the reference's signature + raise
    stub: str = ""
    # a document's starting text: "module:function" (see the module's docstring)
    template: str | None = None
    # CPU seconds the learner's code may take here (an endless loop ends)
    time_limit_s: float = 120.0

    @property
    def id(self) -> str:
        return f"{self.lab}.{self.name}"

    def __post_init__(self):
        if (self.attribute is None) == (self.document is None):
            raise ValueError(f"exercise {self.id}: give exactly one of attribute= and document=")

    def localized(self) -> Exercise:
        """This exercise with its learner-facing text in the language in use. The declarations mark that
        text with N_() (English, the source); the catalogs of workshop.i18n translate it here. A handout
        marked N_() points at the handout's translation (README.es.md#its-translated-heading) where this lab
        has that file: the labs' catalogs are one chain, so another lab's "README.md#questions" may translate."""
        texts = ("title", "statement", "hint", "interface", "stub")
        handout = _(self.handout)
        if not (LABS / self.lab / handout.partition("#")[0]).is_file():
            handout = self.handout
        return dataclasses.replace(
            self, handout=handout, **{f: _(getattr(self, f)) for f in texts if getattr(self, f)}
        )

    def load_reference(self):
        return pkgutil.resolve_name(self.reference)

    def not_started_message(self) -> str:
        """What a stub raises: the exercise's id and the first sentence of its statement."""
        first = self.statement.strip().split(". ")[0].rstrip(".")
        return _("{id}: {first}. See {handout}.").format(
            id=self.id, first=first, handout=self.handout_path()
        )

    def document_text(self, lab_dir: Path | None) -> str | None:
        """A document's starting text (its template's, from the lab's run in `lab_dir`), or None when the
        template needs a run of the lab first. Without a template: the title and the statement to answer."""
        if self.template:
            return pkgutil.resolve_name(self.template)(lab_dir)
        return f"# {self.title}\n\n<!-- {self.statement.strip()} -->\n\n"

    def result(self, status: str, checks: list[str], failed_check: Check | None) -> dict:
        """This exercise's entry in result.json's "exercises": its status, its checks and the first failed one."""
        return {
            "title": self.title,
            "status": status,
            "passed": status == PASSING,
            "checks": checks,
            "failed_check": failed_check.as_dict() if failed_check else None,
            "hint": self.hint if failed_check else None,
            "handout": self.handout_path(),
        }

    def handout_path(self) -> str:
        return f"workshop/labs/{self.lab}/{self.handout}"

    def stub_code(self) -> str:
        """The workspace code for this exercise: the explicit stub, or a function stub with the reference's
        signature, the statement and interface as its docstring, and a body that raises NotImplementedError."""
        if self.stub:
            return textwrap.dedent(self.stub).strip() + "\n"
        reference = self.load_reference()
        if not callable(reference):
            raise ValueError(f"exercise {self.id}: a constant's stub must be given as stub=")
        paragraphs = [p for p in (self.statement.strip(), self.interface.strip()) if p]
        doc = "\n\n".join(
            textwrap.fill(p, 96, initial_indent="    ", subsequent_indent="    ")
            for p in paragraphs
        )
        doc = doc.strip()  # the docstring's lines wrapped at the project's 100 columns
        return (
            f"def {self.attribute}{signature(reference)}:\n"
            f'    """{doc}\n    """\n'
            f"    raise NotImplementedError({self.not_started_message()!r})\n"
        )


class _AsWritten(str):
    """An annotation's source text, shown without quotes in a signature."""

    def __repr__(self) -> str:
        return str(self)


def signature(function) -> inspect.Signature:
    """The function's signature with its annotations as its source writes them (`torch.Tensor`,
    `dict[str, TableEntry]`): not quoted, and not expanded to full module paths that the learner's file would
    have to import."""
    sig = inspect.signature(function)  # under `from __future__ import annotations`: the source text

    def written(annotation):
        return _AsWritten(annotation) if isinstance(annotation, str) else annotation

    params = [p.replace(annotation=written(p.annotation)) for p in sig.parameters.values()]
    return sig.replace(parameters=params, return_annotation=written(sig.return_annotation))

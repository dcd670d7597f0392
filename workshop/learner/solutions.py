"""Where an exercise's implementation comes from: the learner's workspace when one is graded, else the reference.

This is the one seam through which a lab's grading block gets the learner's code (LabContext.grading calls
`Solutions.get`): what it returns is what the block calls. Running the learner's code elsewhere (a worker
process) means replacing this class, not the labs.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from workshop.declarations.exercise import Exercise
from workshop.i18n import _
from workshop.learner import workspace
from workshop.learner.failures import ProcessDied
from workshop.learner.workspace import LearnerError


class Solutions:
    """The implementations of one lab's exercises, for a workspace (`work`) or the reference (work None)."""

    def __init__(self, lab: str, work: Path | None, skip: dict[str, str]):
        self.lab, self.work, self.skip = lab, work, skip
        # the loaded <lab>.py, or why it would not load
        self._module: ModuleType | LearnerError | None = None

    def get(self, ex: Exercise):
        """The learner's version of `ex` (or the reference's). LearnerError: the file will not load or lacks it;
        ProcessDied: it killed an earlier attempt of the lab; NotImplementedError: a document not written yet."""
        if self.work is None:
            return ex.load_reference()
        if ex.id in self.skip:
            raise ProcessDied(self.skip[ex.id])
        if ex.document:
            return self.document(ex)
        module = self.module()
        if not hasattr(module, ex.attribute):
            path = workspace.display(workspace.lab_file(self.work, self.lab))
            raise LearnerError(
                _("{file} defines no `{name}` (exercise {id})").format(
                    file=path, name=ex.attribute, id=ex.id
                )
            )
        return getattr(module, ex.attribute)

    def module(self) -> ModuleType:
        """The learner's <lab>.py, imported once."""
        if self._module is None:
            try:
                self._module = workspace.load_lab_module(self.work, self.lab)
            except LearnerError as e:
                self._module = e
        if isinstance(self._module, LearnerError):
            raise self._module
        return self._module

    def document(self, ex: Exercise) -> Path:
        """The learner's document; NotImplementedError ("not started") while it is not written."""
        path = self.work / ex.document
        if not path.is_file():
            how = (
                _("`python -m workshop check {lab}` writes its start from this run")
                if ex.template
                else _("`python -m workshop exercises init --lab {lab}` writes its start")
            )
            raise NotImplementedError(
                _("{id}: {file} is not written yet: {how}").format(
                    id=ex.id, file=workspace.display(path), how=how.format(lab=self.lab)
                )
            )
        return path

    def path(self, ex: Exercise) -> Path | None:
        """The workspace file the learner writes `ex` in (None for the reference)."""
        if self.work is None:
            return None
        return workspace.lab_file(self.work, self.lab) if ex.attribute else self.work / ex.document

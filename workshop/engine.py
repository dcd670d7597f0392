"""The one exercise engine: it runs an exercise's declaration (declarations/exercise.py) and records its verdicts.

A lab measures what its exercises are graded against (the truth) and hands it to `grade`; the rest comes from the
exercise's declaration in the lab's grading/exercises.py:
- an exercise with `questions` (a dict of answers): each answer against this run's fact for it
  (declarations/questions.py), its `diagnoses` read when an answer is wrong;
- an exercise of code: the truth is the cases it is run on (Case: the arguments, the reference's answer for each
  output, the facts of the input), each run in the worker where the learner's code runs (the lab's `call`
  probe, else a plain call); each of its `outputs` is compared with the reference's by its `compare`, and a
  failed one is explained by the first of its `diagnoses` that the output shows. The checks come in the order
  a learner reads them: the mistake the outputs show (a diagnosis check, reported first, where a diagnosis
  names a mistake), then each output of each case (at most its bound, or equal to it where `compare` says
  "=="), then the lab's `rules` (what the exercise may not do: checks on what the `call` probe saw).

The learner's code runs in the worker; the verdicts are made here, in the lab's process, from wire values. The
engine needs of the lab only its LabContext (`ctx`): the grading block and the checks.

Adding a mistake's diagnosis to an exercise is one entry in its declaration: `Diagnosis(mistake, shows,
message)`, where `shows(evidence)` returns the values its message is formatted with (a dict, {} for none) when
the learner's output shows the mistake, or None; the README's instructor section walks through one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from workshop.declarations import questions
from workshop.declarations.checks import Check
from workshop.declarations.diagnosis import Evidence, diagnose
from workshop.declarations.exercise import Exercise, real
from workshop.i18n import _


@dataclass
class Case:
    """One input an exercise is run on: the arguments, the reference's answer for each output, and the facts of the
    input that a diagnosis may read (where <pad> is, the largest logit, ...)."""

    label: str  # how a check names the case: "float32", "float64, logits + 1000"
    args: tuple  # the function's arguments (they cross to the worker as copies)
    expected: dict[str, object]  # output name -> the reference's value
    facts: dict = field(default_factory=dict)


@dataclass
class Comparison:
    """One output against the reference's, as this run measured it (`compare`'s verdict)."""

    function: str
    label: str
    output: str
    error: float  # how far the output is (compare's measure)
    bound: float  # how far it may be
    scale: float = 0.0  # the reference's size, where the measure is relative to it
    # "<=": error is a measure, at most bound; "==": error is a value (an order, a yes/no) that must equal bound
    relation: str = "<="

    @property
    def passed(self) -> bool:
        return self.error == self.bound if self.relation == "==" else self.error <= self.bound


@dataclass
class Graded:
    """What grading one exercise of code measured: each output against the reference's, what the function
    returned (case label -> output name -> value), and what its `call` probe saw, per case."""

    comparisons: list[Comparison] = field(default_factory=list)
    returned: dict[str, dict[str, object]] = field(default_factory=dict)
    seen: list = field(default_factory=list)


def grade(
    ctx,
    exercise: Exercise | str,
    truth,
    call: Callable | None = None,
    rules: tuple[Callable, ...] = (),
    also: Callable | None = None,
    facts: dict | None = None,
    reference_args: tuple = (),
) -> Graded:
    """Grade one exercise inside its grading block (nothing is measured for an exercise this run does not grade).

    truth: for a dict of answers, this run's facts ({key: value}), or a function of the answers that returns
    them and `facts` where they depend on what the learner picked (None: a question not graded); for code, the
    cases it is run on (Case), or None for code whose outputs are no values to compare (a Triton kernel's writes
    into guarded buffers, what a registration put in torch.library): the lab measures it in `also` alone, reading
    the exercise's diagnoses.
    call: how the lab runs its learners' functions in the worker, a probe (a module-level function) called as
    call(function, *case.args) -> (result, what it saw); None: function(*case.args).
    rules: what the exercise may not do, checked after its cases: rule(ctx, exercise, impl, graded).
    also(impl, graded): more the lab does with the implementation in the same block (finite differences on the
    learner's function), its checks counted for the exercise; for a document (Exercise.document), the grading
    itself: also(the document's path, graded).
    facts: for a dict of answers, what its diagnoses read besides the answer and the truth (Evidence.facts).
    reference_args: for a dict of answers whose reference derives it from the run (a function: the answers at
    this run's N, or on its device), the arguments it is called with; the learner's dict is read as it is."""
    ex = ctx.exercise(exercise) if isinstance(exercise, str) else exercise
    graded = Graded()
    if not ctx.wants(ex.name):
        return graded
    # a document is read here, in the lab's process, under the exercise's time limit; code runs in the worker
    with ctx.grading(ex) as impl:
        if ex.questions:
            given = impl(*reference_args) if reference_args and not ctx.graded else impl.value
            # the truth of the learner's own pick (the kernel they explain) is measured after it, with its facts
            truth, facts = truth(given) if callable(truth) else (truth, facts)
            grade_answers(ctx, ex, given, truth, facts)
        elif ex.document is None and truth is not None:
            run_cases(ctx, ex, impl, truth, call, graded)
            for rule in rules:
                rule(ctx, ex, impl, graded)
        if also is not None:
            also(impl, graded)
    return graded


def grade_answers(ctx, ex: Exercise, answers, truths: dict, facts: dict | None) -> None:
    """Grade the learner's dict of answers: one check per question whose truth this run measured (None: not
    measured here, not graded), and one for keys no question asks for; a wrong answer explained by the first of
    the exercise's diagnoses that it shows, reading `facts` besides the answer and the truth. Not a dict:
    TypeError; nothing filled in: not started (NotImplementedError)."""
    answers = real(answers)
    if not isinstance(answers, dict):
        raise TypeError(
            _("{name} must be a dict with the keys {keys}, not a {type}").format(
                name=ex.attribute,
                keys=", ".join(dict.fromkeys(q.path[0] for q in ex.questions)),
                type=type(answers).__name__,
            )
        )
    asked = [q for q in ex.questions if q.start == questions.UNFILLED]
    if all(questions.lookup(answers, q) is None for q in asked):
        raise NotImplementedError(ex.not_started_message())
    truths = {q.key: questions.truth_of(truths, q) for q in ex.questions}
    unknown = questions.unknown_keys(answers, ex.questions)
    ctx.check_equal(
        _("{name} has only the questions' keys").format(name=ex.attribute),
        unknown,
        [],
        message=_("{name} has no question {keys}: its keys are {known}").format(
            name=ex.attribute, keys=", ".join(unknown), known=", ".join(q.key for q in ex.questions)
        ),
    )
    for q in ex.questions:
        if truths[q.key] is not None:
            check = judge(ex, q, answers, truths[q.key], facts)
            hide = check.passed and not (ctx.graded or ctx.options.show) or not q.reveals
            # a reference's passing answer as its run records it (and any answer to a question that reveals
            # nothing): whether it matches, True (or False) against True, in every language, never the answer
            unrevealed = replace(
                check, value=check.passed, threshold=True, relation="==", secret=False
            )
            ctx.record(unrevealed if hide else check)


def judge(ex: Exercise, question: questions.Question, answers: dict, truth, facts) -> Check:
    """The check of one question: the learner's answer against this run's truth (a secret check)."""
    worded = ex.check.get(question.key) if isinstance(ex.check, dict) else None
    name = (_(worded) if worded else _("{answer} matches this run")).format(
        answer=question.label(ex.attribute)
    )
    hidden = _("this run's answer")
    given = questions.lookup(answers, question, questions.MISSING)
    if given is questions.MISSING:
        return Check(
            name,
            False,
            _("missing"),
            hidden,
            message=_("{answer} is missing: add its key").format(
                answer=question.label(ex.attribute)
            ),
        )
    if given is None:
        return Check(
            name,
            False,
            _("not filled in"),
            hidden,
            message=_("replace the `None` with your answer"),
        )
    try:
        given, of_kind = (
            given if question.matches else questions.as_kind(given, question.kind),
            True,
        )
    except (
        ValueError
    ):  # a diagnosis may say what a value of another kind is, else its kind is asked for
        of_kind = False
    evidence = Evidence(question.key, given, truth, facts=facts or {})
    if of_kind and (
        question.matches(evidence) if question.matches else questions.right(question, given, truth)
    ):
        return Check(name, True, given, truth, secret=True)
    found = diagnose(ex.diagnoses, evidence)
    where = (
        _("your answer {given!r} is not what this run shows: {look}").format(
            given=given, look=_(question.look)
        )
        if of_kind
        else _("give {kind}, not {value!r}").format(
            kind=_(questions.KINDS[question.kind]), value=given
        )
    )
    # a value of another kind is shown as written, never the truth; a diagnosis that says where to look (its
    # mistake None) names no mistake, and a check whose message does is reported first
    return Check(
        name,
        False,
        given if of_kind else repr(given),
        truth if of_kind else hidden,
        message=found[1] if found else where,
        diagnosis=found is not None and found[0].mistake is not None,
        secret=of_kind,
    )


def run_cases(ctx, ex: Exercise, impl, cases: list[Case], call, graded: Graded) -> None:
    """Each case in the worker, each output compared and diagnosed; then the checks, in the module's order."""
    measured = []
    for case in cases:
        if call is None:
            result = impl(*case.args)
        else:
            result, seen = impl.probe(call, *case.args)
            graded.seen.append(seen)
        graded.returned[case.label] = dict(zip(ex.outputs, unpacked(ex, result), strict=True))
        for name, got in graded.returned[case.label].items():
            evidence = Evidence(name, got, case.expected[name], case.label, case.facts)
            comparison = Comparison(ex.attribute, case.label, name, *ex.compare(evidence))
            why = None if comparison.passed else diagnose(ex.diagnoses, evidence)
            measured.append((comparison, why))
            graded.comparisons.append(comparison)
    named = next((why for _c, why in measured if why is not None and why[0].mistake), None)
    # an exercise whose diagnoses name no mistake has no such check
    if any(d.mistake for d in ex.diagnoses):
        ctx.check_equal(
            _("{function}: the mistake its results show").format(function=ex.attribute),
            _(named[0].mistake) if named else None,
            None,  # no mistake recognised; not a word, so that a run's thresholds read the same in any language
            message=named[1] if named else None,
            diagnosis=True,
        )
    for comparison, why in measured:
        record = ctx.check_equal if comparison.relation == "==" else ctx.check_max
        # the exercise's one name for its checks, or each output's own
        template = ex.check[comparison.output] if isinstance(ex.check, dict) else ex.check
        record(
            _(template).format(
                function=comparison.function,
                output=_(ex.shown.get(comparison.output, comparison.output)),
                label=comparison.label,
            ),
            comparison.error,
            comparison.bound,
            message=why[1] if why else None,
        )


def unpacked(ex: Exercise, result) -> tuple:
    """The function's result as one value per declared output (a single output: the result itself)."""
    if len(ex.outputs) == 1:
        return (result,)
    if not isinstance(result, tuple | list) or len(result) != len(ex.outputs):
        raise TypeError(
            _("{function} returned {what}; return the tuple ({names})").format(
                function=ex.attribute, what=type(result).__name__, names=", ".join(ex.outputs)
            )
        )
    return tuple(result)

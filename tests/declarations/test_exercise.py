"""The grading machinery every lab's exercises use: LabContext.grading, the learner's file, statuses, stubs."""

from __future__ import annotations

import dataclasses

import pytest

from workshop import i18n, labs
from workshop.declarations import checks
from workshop.declarations.exercise import Exercise
from workshop.foundations.run_options import RunOptions
from workshop.i18n import templates
from workshop.lab_api import LabContext


def double(x: int) -> int:
    """The instructor's solution of the test exercise."""
    return 2 * x


def triple(x: int) -> int:
    return 3 * x


def broken(x: int) -> int:
    """A reference with a bug of its own."""
    return x // 0


EX_DOUBLE = Exercise(
    lab="toy",
    name="double",
    title="double a number",
    statement="Return twice x. Nothing else.",
    hints=("Multiply by two.",),
    handout="README.md#double",
    reference=f"{__name__}:double",
    attribute="double",
)
EX_TRIPLE = Exercise(
    lab="toy",
    name="triple",
    title="triple a number",
    statement="Return three times x.",
    hints=("Multiply by three.",),
    handout="README.md#triple",
    reference=f"{__name__}:triple",
    attribute="triple",
)


@pytest.fixture
def toy(monkeypatch, tmp_path):
    """A LabContext for a lab 'toy' whose exercises are the two above; work=None (the reference). A workspace's
    code is graded in its worker, its file's header importing nothing."""
    monkeypatch.setattr(labs, "exercises", lambda lab: [EX_DOUBLE, EX_TRIPLE])
    monkeypatch.setattr(labs, "workspace_header", lambda lab: "")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    return LabContext("toy", tmp_path / "out", RunOptions("cpu", 1, 0))


def grade_both(ctx: LabContext) -> dict:
    for ex, factor in ((EX_DOUBLE, 2), (EX_TRIPLE, 3)):
        with ctx.grading(ex) as impl:
            ctx.check_equal(f"{ex.name}(21)", impl(21), factor * 21, message="check the factor")
    return ctx.exercise_results()


def workspace(tmp_path, source: str):
    (tmp_path / "my-work").mkdir(exist_ok=True)
    (tmp_path / "my-work" / "toy.py").write_text(source)
    return tmp_path / "my-work"


def test_the_reference_passes_and_its_checks_are_tagged(toy):
    results = grade_both(toy)
    assert [c.exercise for c in toy.checks] == ["toy.double", "toy.triple"]
    assert {r["status"] for r in results.values()} == {checks.PASSING}


def test_a_wrong_answer_fails_its_exercise_only_with_the_message(toy, tmp_path):
    toy.options.work = workspace(
        tmp_path, "def double(x):\n    return x + x + 1\ndef triple(x):\n    return 3 * x\n"
    )
    results = grade_both(toy)
    assert results["toy.double"]["status"] == checks.FAILING
    assert results["toy.double"]["failed_check"]["message"] == "check the factor"
    assert results["toy.double"]["hint"] is None, (
        "no hint before the learner asks for one (check --hint)"
    )
    assert results["toy.triple"]["status"] == checks.PASSING


def test_fresh_stubs_are_not_started_and_say_what_to_do(toy, tmp_path):
    stubs = EX_DOUBLE.stub_code() + "\n\n" + EX_TRIPLE.stub_code()
    toy.options.work = workspace(tmp_path, stubs)
    results = grade_both(toy)
    assert {r["status"] for r in results.values()} == {checks.NOT_STARTED}
    message = results["toy.double"]["failed_check"]["message"]
    assert (
        message.startswith("toy.double: Return twice x")
        and "workshop/labs/toy/README.md#double" in message
    )


def test_an_exception_names_the_file_and_line_and_the_next_exercise_is_graded(toy, tmp_path):
    toy.options.work = workspace(
        tmp_path, "def double(x):\n    return x / 0\ndef triple(x):\n    return 3 * x\n"
    )
    results = grade_both(toy)
    failed = results["toy.double"]["failed_check"]
    assert failed["value"] == "my-work/toy.py:2: ZeroDivisionError: division by zero"
    assert results["toy.triple"]["status"] == checks.PASSING


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def double(x):\n    return (\n", "my-work/toy.py:2: SyntaxError"),
        (
            "import no_such_module_anywhere\n",
            "my-work/toy.py:1: import no_such_module_anywhere is not",
        ),
        (
            "def triple(x):\n    return 3 * x\n",
            "my-work/toy.py defines no `double` (exercise toy.double)",
        ),
    ],
)
def test_a_broken_file_is_one_clear_line(toy, tmp_path, source, expected):
    toy.options.work = workspace(tmp_path, source)
    results = grade_both(toy)
    assert results["toy.double"]["failed_check"]["value"].startswith(expected)
    assert results["toy.double"]["status"] == checks.FAILING


def test_a_missing_file_says_how_to_make_it(toy, tmp_path):
    toy.options.work = tmp_path / "my-work"
    results = grade_both(toy)
    value = results["toy.double"]["failed_check"]["value"]
    assert "my-work/toy.py does not exist" in value and "exercises init" in value


def test_an_exercise_never_graded_is_reported_so(toy):
    with toy.grading(EX_DOUBLE) as impl:
        toy.check_equal("double(1)", impl(1), 2)
    assert toy.exercise_results()["toy.triple"]["status"] == checks.NOT_GRADED


def test_the_references_own_errors_propagate(toy):
    buggy = dataclasses.replace(EX_DOUBLE, reference=f"{__name__}:broken")
    with pytest.raises(ZeroDivisionError), toy.grading(buggy) as impl:
        impl(1)


def test_stub_code_has_the_references_signature_and_raises_its_id(tmp_path):
    namespace = {}
    exec(EX_DOUBLE.stub_code(), namespace)
    with pytest.raises(NotImplementedError, match="^toy.double$"):
        namespace["double"](3)
    assert "def double(x: int) -> int:" in EX_DOUBLE.stub_code()


def test_a_stubs_raise_is_reported_with_the_first_sentence_of_its_statement(toy, tmp_path):
    toy.options.work = workspace(tmp_path, EX_DOUBLE.stub_code() + EX_TRIPLE.stub_code())
    grade_both(toy)
    message = toy.exercise_results()["toy.double"]["failed_check"]["message"]
    assert message == "toy.double: Return twice x. See workshop/labs/toy/README.md#double."


def test_summary_templates_refuse_undefined_values(tmp_path):
    (tmp_path / "summary.md.j2").write_text(
        "error {{ err | sci }}{% if fused %}, fused{% endif %}.\n"
    )
    assert templates.render(tmp_path, "en", {"err": 1.25e-7, "fused": False}) == "error 1.2e-07.\n"
    with pytest.raises(Exception, match="fused"):
        templates.render(tmp_path, "en", {"err": 1.0})


def test_one_template_and_its_includes_translate_their_blocks_and_prose_values(tmp_path):
    # "Files" is in the dispatcher lab's catalog, "hand" (a value marked N_()) in the autograd lab's
    (tmp_path / "summary.md.j2").write_text('{% include "part.md.j2" %} ({{ _(who) }})\n')
    (tmp_path / "part.md.j2").write_text("{% trans %}Files{% endtrans %}")
    # a message without a catalog entry: the template shows it as it is
    values = {"who": "autograd"}
    assert templates.render(tmp_path, "en", values) == "Files (autograd)\n"
    assert templates.render(tmp_path, "es", values) == "Ficheros (autograd)\n"
    assert templates.render(tmp_path, "es", {"who": "hand"}) == "Ficheros (a mano)\n"


@pytest.mark.parametrize(
    "environ, lang",
    [
        ({"LANG": "es_ES.UTF-8"}, "es"),
        ({"LC_ALL": "C", "LANG": "es_ES.UTF-8"}, "en"),
        ({"LC_MESSAGES": "es_MX"}, "es"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({}, "en"),
        ({"WORKSHOP_LANG": "es", "LANG": "C.UTF-8"}, "es"),
        ({"WORKSHOP_LANG": "en", "LANG": "es_ES.UTF-8"}, "en"),
        ({"WORKSHOP_LANG": "es_ES.UTF-8"}, "es"),  # compose passes the host's LANG through it
        (
            {"WORKSHOP_LANG": "", "LANG": "es_ES.UTF-8"},
            "es",
        ),  # compose's empty default: the locale's
    ],
)
def test_the_language_follows_the_locale_as_posix_reads_it(environ, lang):
    assert i18n.detect(environ) == lang


# ---- ranked and secret checks ----
def test_a_failing_diagnosis_is_reported_before_a_raw_comparison(toy):
    with toy.grading(EX_DOUBLE):
        toy.check_equal("double(21)", 43, 42)
        toy.check_equal("pad rows have a gradient", True, False, "the mistake", diagnosis=True)
    failed = toy.exercise_results()["toy.double"]["failed_check"]
    assert (failed["name"], failed["message"], failed["diagnosis"]) == (
        "pad rows have a gradient",
        "the mistake",
        True,
    )


@pytest.mark.parametrize(
    "value, truth, said",
    [
        (1118048, 3354144, "about 3x too low"),
        (2.2, 2.0, "about 10% too high"),
        (5, 4, "off by one, too high"),
        ("aten::mm", "aten::addmm", "wrong choice"),
    ],
)
def test_a_failing_secret_check_shows_the_miss_never_the_truth(toy, capsys, value, truth, said):
    with toy.grading(EX_DOUBLE):
        toy.check_equal("the prediction", value, truth, secret=True)
    [check] = toy.checks
    assert (check.value, check.threshold) == (said, "hidden until it passes (check --show)")
    results = toy.exercise_results()
    assert str(truth) not in capsys.readouterr().out + str(results)


def test_a_passing_secret_check_or_show_keeps_the_value(toy):
    with toy.grading(EX_DOUBLE):
        toy.check_equal("right", 4, 4, secret=True)
    toy.options.show = True
    with toy.grading(EX_TRIPLE):
        toy.check_equal("shown", 5, 4, secret=True)
    assert [(c.value, c.threshold) for c in toy.checks] == [(4, 4), (5, 4)]


# ---- check LAB EXERCISE: the other exercises' blocks record nothing ----
def test_an_exercise_not_wanted_is_skipped_at_its_first_use_or_check(toy):
    toy.options.only = ("toy.triple",)
    assert not toy.wants("double") and toy.wants("triple")
    with toy.grading(EX_DOUBLE) as impl:
        impl(21)
        raise AssertionError("not reached: the skipped block ends at its first use")
    with toy.grading(EX_DOUBLE):
        toy.check_equal("a check of a skipped exercise", 1, 2)
        raise AssertionError("not reached")
    grade_both(toy)
    results = toy.exercise_results()
    assert results["toy.double"]["status"] == checks.NOT_GRADED
    assert results["toy.triple"]["status"] == checks.PASSING


# ---- one template for every language ----
MINIGPT_VALUES = {
    "parameters": 312856,
    "config": {"d_model": 64},
    "device": "cpu",
    "prompts": 1000,
    "accuracy": 0.9912,
    "wrong": 9,
    "example": "the cat",
    "guess_accuracy": 0.1,
    "grammatical": 0.95,
    "n_samples": 64,
    "train_steps": 1500,
    "final_loss": 1.2345,
    "replay_steps": 20,
    "drift": 1.5e-7,
    "samples": [(True, "a b"), (False, "c d")],
}


def test_one_template_renders_each_language_with_the_same_structure():
    """minigpt's summary.md.j2 has no Spanish twin: its {% trans %} blocks come from the lab's catalog, and both
    languages lay out the same lines with the same figures."""
    folder = labs.folder("minigpt") / "templates"
    assert not (folder / "summary.es.md.j2").exists()
    english = templates.render(folder, "en", MINIGPT_VALUES).splitlines()
    spanish = templates.render(folder, "es", MINIGPT_VALUES).splitlines()
    assert spanish[0].startswith("El MiniGPT de la gramática (312") and "parámetros" in spanish[0]
    assert "- MAL `c d`" in spanish and "- BAD `c d`" in english

    def shape(lines):  # where the list items, pictures, blank lines and code spans are
        return [(line[:2] in ("- ", "!["), bool(line), line.count("`")) for line in lines]

    assert shape(english) == shape(spanish)


def test_a_set_is_written_sorted_as_value_and_as_threshold():
    """A 'names' answer's truth is a set: result.json holds it sorted, the same in every process (a set's printed
    order follows the process's hash seed: a Spanish and an English run once differed there)."""
    from workshop.declarations.checks import Check

    check = Check(
        "keys", True, frozenset({"CPU", "AutocastCPU"}), frozenset({"AutocastCPU", "CPU"})
    )
    written = check.as_dict()
    assert written["value"] == written["threshold"] == ["AutocastCPU", "CPU"]
    assert Check("nan", False, float("nan"), 1.0).as_dict()["value"] == "nan"

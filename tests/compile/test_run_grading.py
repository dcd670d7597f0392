"""compile.kernel and compile.answers graded from a run folder's files alone (run_grading.py), on a folder made
of saved generated code (no compile, so fast): what is graded, what is revealed and when, and a folder that
cannot be graded is one line naming the file. The same functions on a real run: compile/test_lab.py."""

import json
from pathlib import Path

import pytest

from tests.compile.test_exercises import SOFTMAX_ANSWER
from workshop import labs
from workshop.foundations.run_options import RunOptions
from workshop.lab_api import WORKER_LOG, LabContext
from workshop.labs.compile.bench import loop
from workshop.labs.compile.grading import run_grading
from workshop.labs.compile.grading.exercises import ANSWERS, KERNEL
from workshop.learner.workspace import init

FIXTURES = Path(__file__).with_name("fixtures")
WORKED = (
    "cpp_fused__softmax_backward_data_bitwise_not_masked_fill_mul_nll_loss_forward_slice_view_5"
)
OPTIMIZER = """
cpp_fused__foreach_addcmul_0 = async_compile.cpp_pybinding(['float*'], r\'\'\'
extern "C" void kernel(float* in_out_ptr0) {}
\'\'\')
cpp_fused__foreach_add_1 = async_compile.cpp_pybinding(['float*'], r\'\'\'
extern "C" void kernel(float* in_out_ptr0) {}
\'\'\')
"""
BREAKS = {
    "explain": {
        "minigpt": {"graphs": 1, "graph_breaks": 0, "break_reasons": []},
        "item_in_forward": {"graphs": 2, "graph_breaks": 1, "break_reasons": []},
    },
    "recompiles": [
        {"how": how, "lengths": [8, 12, 16, 20], "compiles": n, "recompile_reasons": []}
        for how, n in (("static", 4), ("default", 2), ("dynamic", 1), ("mark_dynamic", 1))
    ],
}


CONTEXTS: list[LabContext] = []  # the tests' contexts, whose learner's workers stop with each test


def lab_context(out: Path, work: Path | None = None, **options) -> LabContext:
    out.mkdir(parents=True, exist_ok=True)
    CONTEXTS.append(LabContext("compile", out, RunOptions("cpu", 1, 0, work=work, **options)))
    return CONTEXTS[-1]


@pytest.fixture(autouse=True)
def stop_workers():
    yield
    while CONTEXTS:
        CONTEXTS.pop().stop_worker()


@pytest.fixture
def run_folder(tmp_path) -> Path:
    """A run folder as the lab writes it, from saved code: the training forward, the softmax's backward
    kernel, a two-kernel optimizer module, breaks.json; then grading_facts.json."""
    ctx = lab_context(tmp_path / "run")
    code = {
        "train": {
            "forward": (FIXTURES / "cpp_train_forward.txt").read_text(),
            "backward": (FIXTURES / "cpp_softmax_backward.txt").read_text(),
        },
        "optimizer": {"inference": OPTIMIZER},
    }
    for stage, modules in code.items():
        for kind, text in modules.items():
            ctx.write_text(f"code/{stage}_{kind}.py", text)
    # saved code without the graphs it was compiled from: no source lines, no eager results
    captures = {
        stage: {"dynamo": [], "aot": {}, "code": modules} for stage, modules in code.items()
    }
    run_grading.write_facts(ctx, captures, parameters=62, breaks=BREAKS)
    return ctx.out_dir


def workspace(tmp_path, kernel: dict, answers: dict) -> Path:
    work = tmp_path / "my-work"
    work.mkdir()
    body = f"KERNEL_EXPLAINED = {kernel!r}\n\nANSWERS = {answers!r}\n"
    (work / "compile.py").write_text(labs.workspace_header("compile") + "\n" + body)
    return work


def reference_answers(run_folder: Path) -> dict:
    return run_grading.answers(str(run_folder))


def test_the_counts_are_read_from_the_code_and_breaks_json(run_folder):
    facts = run_grading.read_run(run_folder).facts
    assert (facts["optimizer_kernels"], facts["default_compiles"], facts["item_graph_breaks"]) == (
        2,
        2,
        1,
    )
    assert facts["parameter_tensors"] == 62 and facts["softmax_calls"] >= 1


def test_a_plain_run_grades_the_reference_and_reveals_nothing_of_the_forward(run_folder, tmp_path):
    ctx = lab_context(tmp_path / "plain")
    revealed = run_grading.regrade(ctx, run_folder)
    assert ctx.passed and not revealed["kernel"] and not revealed["answers"]
    assert ctx.extra["explained"] == [] and ctx.extra["worked_example"] == WORKED
    assert WORKED in (ctx.out_dir / "explanation.md").read_text()
    forward = [k for k in read_kernels(ctx) if k["graph"] == "train/forward"]
    assert forward and all("arguments" not in k for k in forward)


def read_kernels(ctx: LabContext) -> list[dict]:
    return json.loads((ctx.out_dir / "kernels.json").read_text())


@pytest.mark.parametrize("right", [True, False], ids=["passing answer", "failing answer"])
def test_a_learners_kernel_is_explained_only_once_their_answer_passes(run_folder, tmp_path, right):
    kernel = SOFTMAX_ANSWER if right else {**SOFTMAX_ANSWER, "bytes_written": 0}
    ctx = lab_context(tmp_path / "out", workspace(tmp_path, kernel, reference_answers(run_folder)))
    revealed = run_grading.regrade(ctx, run_folder)
    explained = [e["kernel"] for e in ctx.extra["explained"]]
    assert explained == ([SOFTMAX_ANSWER["kernel"]] if right else [])
    text = (ctx.out_dir / "explanation.md").read_text()
    assert (SOFTMAX_ANSWER["kernel"] in text) is right and WORKED in text
    assert revealed["answers"] and revealed["kernel"] is right
    forward = [k for k in read_kernels(ctx) if k["graph"] == "train/forward"]
    assert all(("arguments" in k) is right for k in forward)
    assert str(run_folder) in ctx.summary, "the summary names the run it graded against"


def test_a_wrong_count_is_graded_from_the_files(run_folder, tmp_path):
    answers = {**reference_answers(run_folder), "optimizer_kernels": 62}
    ctx = lab_context(tmp_path / "out", workspace(tmp_path, SOFTMAX_ANSWER, answers))
    revealed = run_grading.regrade(ctx, run_folder)
    failed = ctx.exercise_results()["compile.answers"]["failed_check"]
    assert not revealed["answers"] and "Inductor fuses the updates" in failed["message"]


def test_fresh_stubs_are_not_started(run_folder, tmp_path):
    work = tmp_path / "my-work"
    work.mkdir()
    (work / "compile.py").write_text(
        f"{labs.workspace_header('compile')}\n{KERNEL.stub_code()}\n{ANSWERS.stub_code()}"
    )
    ctx = lab_context(tmp_path / "out", work)
    run_grading.regrade(ctx, run_folder)
    assert {r["status"] for r in ctx.exercise_results().values()} == {"not started"}


def test_the_learners_file_runs_in_the_worker_never_in_the_lab(run_folder, tmp_path, capsys):
    """The worker protocol: the learner's constants are read in a worker process as wire data. Planted: a file whose
    top level prints; its line reaches the worker's log, never the lab's output."""
    work = workspace(tmp_path, SOFTMAX_ANSWER, reference_answers(run_folder))
    with (work / "compile.py").open("a") as f:
        f.write('print("the learner\'s top level ran here")\n')
    ctx = lab_context(tmp_path / "out", work)
    run_grading.regrade(ctx, run_folder)
    assert ctx.passed and "the learner's top level ran" not in capsys.readouterr().out
    ctx.stop_worker()
    assert "the learner's top level ran" in (ctx.out_dir / WORKER_LOG).read_text()


def test_an_answer_that_cannot_cross_the_wire_is_one_clear_failure(run_folder, tmp_path):
    """Planted: an ANSWERS value of a type the wire refuses (a complex number; a set crosses as a list): the
    exercise fails naming it, and the other exercise is graded as usual."""
    answers = {**reference_answers(run_folder), "softmax_calls": 4j}
    ctx = lab_context(tmp_path / "out", workspace(tmp_path, SOFTMAX_ANSWER, answers))
    run_grading.regrade(ctx, run_folder)
    results = ctx.exercise_results()
    assert results["compile.kernel"]["passed"] and not results["compile.answers"]["passed"]
    assert "complex" in results["compile.answers"]["failed_check"]["value"]


def change(path: Path) -> None:
    path.write_text(path.read_text() + "\n# my note: this kernel is the softmax\n")


FOLDER_FAULTS = [
    (
        "a note typed into the code",
        lambda f: change(f / "code/train_forward.py"),
        "train_forward.py",
    ),
    ("breaks.json edited", lambda f: change(f / "breaks.json"), "breaks.json"),
    ("a code module added", lambda f: (f / "code/mine.py").write_text("x = 1\n"), "mine.py"),
    ("a code module gone", lambda f: (f / "code/train_backward.py").unlink(), "train_backward.py"),
    ("facts corrupt", lambda f: (f / "grading_facts.json").write_text("{"), "grading_facts.json"),
    ("facts gone", lambda f: (f / "grading_facts.json").unlink(), "grading_facts.json"),
    ("facts incomplete", lambda f: (f / "grading_facts.json").write_text("{}"), "not a complete"),
]


@pytest.mark.parametrize(
    "fault, words", [f[1:] for f in FOLDER_FAULTS], ids=[f[0] for f in FOLDER_FAULTS]
)
def test_a_folder_that_cannot_be_graded_is_one_line_naming_why(run_folder, fault, words):
    fault(run_folder)
    with pytest.raises(run_grading.RunFolderError) as e:
        run_grading.read_run(run_folder)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_folder_that_is_not_a_run_is_one_line(tmp_path):
    with pytest.raises(run_grading.RunFolderError, match="not a finished run of the compile lab"):
        run_grading.read_run(tmp_path)


@pytest.mark.parametrize("only", ["kernel", "answers"])
def test_check_compile_exercise_regrades_that_exercise_only(run_folder, tmp_path, only):
    """`check compile kernel` (or `answers`): the other exercise is not graded, and nothing fails for it."""
    work = workspace(tmp_path, SOFTMAX_ANSWER, reference_answers(run_folder))
    ctx = lab_context(tmp_path / "out", work, only=(f"compile.{only}",))
    run_grading.regrade(ctx, run_folder)
    assert ctx.passed and {c.exercise for c in ctx.checks} == {f"compile.{only}"}


def test_the_loop_benchmark_fills_in_answers_that_pass(run_folder, tmp_path):
    """bench/loop.py's workspace: the stub file exercises init writes, its ANSWERS filled in from the run."""
    work = tmp_path / "my-work"
    init(work, ["compile"], tmp_path / "results")
    loop.fill_in(work, run_folder)
    ctx = lab_context(tmp_path / "out", work, only=("compile.answers",))
    run_grading.regrade(ctx, run_folder)
    assert ctx.passed and ctx.exercise_results()["compile.answers"]["passed"]

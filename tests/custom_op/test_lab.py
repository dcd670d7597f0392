"""The custom_op lab's outputs (result.json, Inductor excerpts) and the benchmark's report and CLI plumbing."""

import contextlib
import io
from pathlib import Path

import pytest
import torch

from tests.conftest import assert_result_shape, read_result
from workshop.labs.custom_op import inductor_code
from workshop.labs.custom_op.bench import benchmark as bench
from workshop.labs.custom_op.bench import report as bench_report


@pytest.fixture(scope="module")
def lab(lab_dir):
    return lab_dir("custom_op")


def test_lab_passes_with_its_checks(lab):
    result = read_result(lab)
    assert_result_shape(result, "custom_op")
    failed = [c["name"] for c in result["checks"] if not c["passed"]]
    assert not failed, failed
    names = " ".join(c["name"] for c in result["checks"])
    for topic in (
        "gradcheck",
        "opcheck",
        "graph breaks",
        "MiniGPT",
        "-inf/inf/NaN",
        "empty",
        "bad inputs",
        "non-contiguous",
        "long rows",
        "extern",
    ):
        assert topic in names, topic


def test_the_graded_pieces_sentence_only_when_a_workspace_was_graded(lab):
    """The reference run says nothing of graded twins; a workspace's run does (custom_op/test_exercises.py)."""
    assert read_result(lab)["implementation"]["kind"] == "reference"
    assert "graded in an operator of their own" not in (lab / "summary.md").read_text()


def test_lab_writes_both_inductor_excerpts(lab):
    on_cuda = read_result(lab)["device"] == "cuda"
    # The op the lab checks is made of the run's pieces, registered as own_<kind>::softmax, both kinds on CUDA.
    namespace = "own_custom_op"
    custom = (lab / "inductor_custom_op.txt").read_text()
    assert "def call(" in custom and f"torch.ops.{namespace}.softmax.default(" in custom
    assert (
        f"torch.ops.{namespace}.softmax_backward.default(" in custom
    )  # the backward is an extern call too
    triton_op = (lab / "inductor_triton_op.txt").read_text()
    if on_cuda:
        assert (
            "def _fwd_one_pass" in triton_op
            and "torch.ops.own_triton_op.softmax.default(" not in triton_op
        )
    else:
        assert "benchmarks/custom_op/inductor_triton_op.txt" in triton_op
    side_by_side = (lab / "inductor_side_by_side.md").read_text()
    assert side_by_side.count("<table>") == 2 and side_by_side.count("def call(") == 4
    assert (
        f"torch.ops.{namespace}.softmax.default(" in side_by_side
        and "_fwd_one_pass" in side_by_side
    )


def test_lab_measures_the_eager_call(lab):
    from workshop.labs.custom_op import eager_cost

    result = read_result(lab)
    eager = result["eager"]
    assert list(eager["layer_us"]) == ["kernel launch", "plan", "checks, output"]
    assert list(eager["registrations"]) == ["custom_op", "triton_op", "by hand"]
    public = eager["registrations"][eager["registration"]]
    assert eager["op_us"] == public["op_us"] > 0 and eager["torch_us"] > 0
    assert set(eager["step_us"]) == {"torch.softmax", "custom_op", "triton_op", "by hand"}
    assert eager["clone_custom_op_us"] > 0
    assert [launch["kernel"] for launch in result["step_launches"]] == [
        "_fwd_one_pass",
        "_bwd_one_pass",
    ]
    assert (lab / "eager_cost.png").stat().st_size > 10_000
    summary = (lab / "summary.md").read_text()
    assert "What one eager call costs, registered three ways" in summary
    assert "`_bwd_one_pass` on" in summary and "| by hand |" in summary
    # the registrations' sentence is printed when the run shows the hand registration cheaper, and only then
    shown = "Registered by hand, the op's Python layers took" in summary
    assert shown == (eager_cost.by_hand_saves(eager) > 0)
    # the interpreter's sentence is printed when the run shows the launch dominating, and only then
    dominated = eager_cost.launch_share(eager) > 0.9
    assert ("kernel launch is Triton's interpreter" in summary) == dominated
    assert dominated == (result["device"] == "cpu")


def test_a_slow_first_few_calls_do_not_shrink_the_blocks(monkeypatch):
    """The blocks of calls are sized by the calls that fill them: a function whose first calls are slow (torch's
    first backward steps on a GPU) still gets full blocks, so its synchronize is shared by many calls."""
    import time

    import torch

    from workshop.labs.custom_op import eager_cost

    monkeypatch.setattr(
        torch.cuda, "synchronize", lambda: time.sleep(0.002)
    )  # a GPU's tail: 2 ms a block
    slow_calls = iter(
        [0.023, 0.009]
    )  # as torch's first two steps on an H100 took, then about 75 us

    def warming_up():
        time.sleep(next(slow_calls, 0.0))

    # sized from its second call (9 ms), a block held 2 calls and measured about half the 2 ms synchronize
    assert eager_cost.per_call_us({"step": warming_up}, "cuda")["step"] < 200


def test_call_function_and_census_on_a_made_up_module():
    source = "\n".join(
        [
            "import x",
            "",
            "@triton.jit",
            "def _fwd_one_pass(a):",
            "    pass",
            "",
            "class Runner:",
            "    def call(self, args):",
            "        buf0 = torch.ops.ns.softmax.default(a, dim=-1)",
            "",
            "        return (buf0, )",
            "",
            "    def other(self):",
            "        pass",
            "",
        ]
    )
    (call,) = inductor_code.call_functions(source)
    assert (
        call.startswith("    def call(")
        and call.endswith("return (buf0, )")
        and "other" not in call
    )
    assert inductor_code.census([source], "ns") == {
        "extern_calls": 1,
        "inlined_kernel_defs": 1,
        "modules": 1,
    }
    assert "def _fwd_one_pass" in inductor_code.inlined_kernels(source)[0]


def test_side_by_side_puts_each_call_in_a_column_without_blank_lines():
    def module(name):
        return f"class Runner:\n    def call(self, args):\n        a = {name}(x)\n\n        return (a, )\n"

    text = inductor_code.side_by_side({"left <1>": module("f") + module("g"), "right": module("h")})
    assert "<th>left &lt;1&gt;</th><th>right</th>" in text
    forward, backward = text.split("<table>")[1:]
    assert "a = f(x)" in forward and "a = h(x)" in forward and "a = g(x)" in backward
    assert (
        "\n\n" not in forward.split("</table>")[0]
    )  # a blank line would end Markdown's HTML block


def _row(dtype, shape, ours, copy, torch_, inductor, eager=(1.0, 1.0)):
    """A measured row; the backward gets the same numbers as the forward."""
    mib = shape[0] * shape[1] * (4 if dtype == "float32" else 2) / 2**20
    gbps = {"ours": ours, "torch": torch_, "inductor": inductor, "copy": copy}
    gbps.update({"ours_eager": eager[0], "torch_eager": eager[1]})
    return {
        "dtype": dtype,
        "shape": list(shape),
        "input_mib": mib,
        "errors": {},
        "fwd": gbps,
        "bwd": dict(gbps),
    }


def _doc(rows, peers=("torch", "inductor"), skipped_peers=None):
    own = {"registration_us": 9.0, "autograd_node_us": 15.0, "python_us": 9.0}
    host = {
        "shape": [1, 600],
        "registration": "triton_op",
        "op_us": 15.0,
        "torch_us": 7.0,
        "clone_custom_op_us": 12.0,
        "op_grad_us": 30.0,
        "triton_jit_launch_us": 15.0,
        "layer_us": {"kernel launch": 6.0, "plan": 1.0},
        "registrations": {
            kind: {**own, "op_us": 15.0, "op_grad_us": 30.0}
            for kind in ("custom_op", "triton_op", "by hand")
        },
        "step_shape": [64, 600],
        "step_us": {
            "torch.softmax": 100.0,
            "custom_op": 230.0,
            "triton_op": 210.0,
            "by hand": 190.0,
        },
    }
    doc = {
        "device": "test GPU",
        "command": "python -m workshop bench custom_op",
        "commit": "abc",
        "registration": "triton_op",
        "versions": {"torch": "x", "triton": "y"},
        "timing": "t",
        "bytes": "b",
        "peers": list(peers),
        "skipped_peers": skipped_peers or {},
        "results": rows,
        "host": host,
    }
    doc["targets"] = bench_report.evaluate(rows)
    doc["host_targets"] = bench_report.evaluate_host(host)
    return doc


def test_the_peers_are_judged_on_every_shape_the_rest_on_big_shapes_only():
    rows = [
        _row("float32", (32768, 600), 3900, 4000, 3400, 3600),  # 75 MiB: all met
        _row(
            "bfloat16", (64, 262144), 3790, 3950, 3000, 3900, eager=(2000, 3000)
        ),  # 32 MiB: 3 kinds of miss
        # 4 MiB: only the peers are judged; the copy (0.10) and the eager time are information
        _row("float32", (4096, 256), 100, 1000, 900, 900, eager=(1, 1000)),
    ]
    doc = _doc(rows)
    t = doc["targets"]
    assert t["judged_shapes"] == 2 and t["shapes"] == 3 and not t["all_met"]
    assert not t["rows"][2]["judged"]
    assert t["met"] == {
        "fwd_copy_met": 2,
        "fwd_best_met": 1,  # 3790 < Inductor's 3900, 100 < 900
        "bwd_copy_met": 2,
        "bwd_best_met": 1,
        "fwd_eager_met": 1,  # 2000 < 0.9 x 3000
        "bwd_eager_met": 1,
    }
    assert (
        doc["host_targets"]["call_vs_clone"]
        == pytest.approx(15 / 12)  # the target: 1.2 x the clone's
        and not doc["host_targets"]["call_met"]
    )
    assert not doc["host_targets"]["step_met"]  # 2.1 x torch's step
    text = bench_report.summary(doc)
    assert text.count("**miss**") == 6 and "64x262144" in text
    assert "- bfloat16 64x262144: fwd >= every peer (0.97)" in text
    assert "- float32 4096x256: fwd >= every peer (0.11); bwd >= every peer (0.11)\n" in text
    assert "at commit abc" in text and text.count("**missed**") == 2
    assert "| by hand | 9.0 | 15.0 | 15.0 | 30.0 | 190.0 |" in text
    assert "| torch.softmax |  |  | 7.0 |  | 100.0 |" in text


def test_a_miss_within_the_rounds_spread_is_marked_level():
    # ours 3790 against Inductor's 3900: a miss; level where ours' upper quartile reaches Inductor's lower one
    rows = [_row("float32", (32768, 600), 3790, 3900, 3000, 3900) for _ in range(2)]
    rows[0]["quartiles"] = {
        d: {"ours": [3700, 3880], "inductor": [3850, 3950]} for d in ("fwd", "bwd")
    }
    rows[1]["quartiles"] = {
        d: {"ours": [3780, 3800], "inductor": [3850, 3950]} for d in ("fwd", "bwd")
    }
    rows[1]["shape"] = [65536, 600]
    doc = _doc(rows)
    assert [v["fwd_best_level"] for v in doc["targets"]["rows"]] == [True, False]
    text = bench_report.summary(doc)
    assert "- float32 32768x600: fwd >= every peer (0.97, level)" in text
    assert "- float32 65536x600: fwd >= every peer (0.97);" in text
    assert text.count("**miss** (level)") == 2  # the first row's fwd and bwd


def test_chart_is_written(tmp_path):
    doc = _doc([_row("float32", (32768, 600), 3900, 4200, 3400, None)])
    bench_report.write_chart(doc, tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 10_000


def test_a_stopped_runs_report_is_made_from_its_json(tmp_path):
    doc = _doc([_row("float32", (32768, 600), 3900, 4000, 3400, 3600)])
    # as the JSON is after each shape, before the last and the host's rounds
    del doc["targets"], doc["host_targets"], doc["host"]
    bench.write_report(doc, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "custom_op_bench.json",
        "custom_op_bench.md",
        "custom_op_bench.png",
    ]
    text = (tmp_path / "custom_op_bench.md").read_text()
    assert "**All met: True**" in text and "stopped before the host's rounds" in text


def test_the_host_figures_are_the_round_whose_step_ratio_is_the_median(monkeypatch):
    from workshop.labs.custom_op import eager_cost

    doc = _doc([_row("float32", (32768, 600), 3900, 4200, 3400, 3600)])
    # torch's step in three rounds: the first far off, as a process's first measurement was once (602.7 us)
    rounds = [
        doc["host"] | {"step_us": doc["host"]["step_us"] | {"torch.softmax": us}}
        for us in (600.0, 100.0, 90.0)
    ]
    monkeypatch.setattr(eager_cost, "measure", lambda device: rounds.pop(0))
    lines = []
    host, ratios = bench.host_costs(log=lines.append)
    assert host["step_us"]["torch.softmax"] == 100.0 and len(lines) == 3
    assert [round(r["step_vs_torch"], 2) for r in ratios] == [0.35, 2.1, 2.33]
    doc["host"], doc["host_rounds"] = host, ratios
    doc["host_targets"] = bench_report.evaluate_host(host)
    text = bench_report.summary(doc)
    assert "the median of 3" in text and "their step ratios: 0.35, 2.10, 2.33." in text


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_bench_on_cpu_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="needs a CUDA GPU"):
        bench.main(tmp_path)
    assert not list(tmp_path.iterdir())


def test_bench_covers_the_shapes_the_issue_names():
    assert {(4096, 600), (32768, 600), (262144, 600), (256, 131072), (64, 262144)} <= set(
        bench.SHAPES
    )
    assert [n for b, n in bench.SHAPES if b == 4096 and n != 600] == [2**k for k in range(8, 16)]
    assert (Path(bench.__file__).parents[1] / "README.md").is_file()


def test_an_op_whose_pieces_are_not_written_waits_in_one_line(tmp_path):
    """A workspace of stubs: the checks of the op made of its pieces wait on those exercises, in one line that
    names them and no check (the stubs' exercises fail on their own), and the summary says so in one sentence
    (and, where the shipped pieces are stubs too, as in the learner edition, that the eager cost is not
    measured)."""
    from workshop import labs
    from workshop.foundations.run_options import RunOptions
    from workshop.i18n import templates
    from workshop.lab_api import LabContext
    from workshop.labs.custom_op import lab
    from workshop.labs.custom_op.grading import correctness as cx
    from workshop.labs.custom_op.grading.exercises import EXERCISES
    from workshop.labs.custom_op.grading.own_op import needed

    stubs = "\n\n".join(ex.stub_code() for ex in EXERCISES)
    (tmp_path / "custom_op.py").write_text(labs.workspace_header("custom_op") + "\n\n" + stubs)
    ctx = LabContext("custom_op", tmp_path, RunOptions("cpu", 1, 0, work=tmp_path))
    try:
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            found = lab.check_own_op(ctx, cx.shapes("cpu"), {})
    finally:
        ctx.stop_worker()  # the worker that read the pieces
    assert found["own"]["waiting"] == list(needed("cpu")) and ctx.checks == []
    assert "wait on the exercises forward_kernel, backward_kernel, fake" in printed.getvalue()
    values = {"registration": "custom_op", "shapes": {}, "own": found["own"], "eager": None}
    values |= {"eager_waits": True, "shipped_built": True}
    values |= {"side_by_side": "x.md", "graded": True, "device": "cpu"}
    summary = templates.render(labs.folder("custom_op") / "templates", "en", values)
    assert (
        "The op's checks (values, gradcheck, opcheck, torch.compile, the MiniGPT) wait on"
        in summary
    )
    assert "Not measured here: the appendix measures the shipped op" in summary


def test_the_learner_editions_plain_run_says_in_one_line_that_the_op_waits(tmp_path, monkeypatch):
    """`run custom_op` in the learner edition, no workspace: the shipped pieces are stubs there, so the op's
    checks wait on every exercise that writes a piece, in one printed line and no check."""
    import importlib.util

    from workshop import labs
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext
    from workshop.labs.custom_op import lab
    from workshop.labs.custom_op.grading import correctness as cx
    from workshop.labs.custom_op.grading import own_op
    from workshop.labs.custom_op.grading.exercises import EXERCISES

    wanted = own_op.needed("cpu")
    stubs = [ex.stub_code() for ex in EXERCISES if ex.name in wanted]
    (tmp_path / "stubs.py").write_text(
        labs.workspace_header("custom_op") + "\n\n" + "\n\n".join(stubs)
    )
    spec = importlib.util.spec_from_file_location("custom_op_edition_stubs", tmp_path / "stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for ex in EXERCISES:
        if ex.name in wanted:  # the reference, module:attr, a stub as in the edition
            monkeypatch.setattr(ex.reference.replace(":", "."), getattr(module, ex.attribute))
    ctx = LabContext("custom_op", tmp_path / "run", RunOptions("cpu", 1, 0))
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        found = lab.check_own_op(ctx, cx.shapes("cpu"), {})
    assert found["own"] == {"graded": False, "waiting": list(wanted), "failed": []}
    assert ctx.checks == [] and printed.getvalue().count("wait on the exercises") == 1


def test_the_learners_op_runs_in_the_worker_and_its_failure_is_a_failed_check(tmp_path):
    """In a graded run the op's checks run on the op made of the learner's pieces inside the worker (the worker
    protocol): a backward that ends its process there (SystemExit) is one failed check naming the section and the
    learner's line, and the lab goes on; nothing of the learner's file is imported into the lab's process."""
    import sys

    from tests.conftest import TEST_DEVICE
    from tests.custom_op import wrong_solutions as w
    from workshop import labs
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext
    from workshop.labs.custom_op import lab
    from workshop.labs.custom_op.grading import correctness as cx
    from workshop.labs.custom_op.grading.own_op import own_op

    pieces = w.source_of(*w.CORRECT, w.define_custom_op, w.define_triton_op)
    ends = "def backward(ctx, dy):\n    raise SystemExit(3)\n"
    source = labs.workspace_header("custom_op") + "\n\n" + pieces + "\n\n" + ends
    (tmp_path / "custom_op.py").write_text(source)
    ctx = LabContext("custom_op", tmp_path, RunOptions(TEST_DEVICE, 1, 0, work=tmp_path))
    try:
        own = own_op(ctx)
        assert own.graded and own.waiting == []
        section = {"correctness": lambda: lab.check_correctness(ctx, own, cx.shapes(TEST_DEVICE))}
        with contextlib.redirect_stdout(io.StringIO()):
            found = lab.timed(section, {}, guard=ctx)
        assert found == {"correctness": None}
    finally:
        ctx.stop_worker()
    failed = [c for c in ctx.checks if not c.passed]
    assert [c.name for c in failed] == ["the op made of your pieces runs its correctness checks"]
    line = source.splitlines().index("    raise SystemExit(3)") + 1
    error = failed[0].value
    assert "SystemExit" in error and f"custom_op.py:{line}" in error, failed[0]
    assert not any(
        getattr(m, "__file__", None) == str(tmp_path / "custom_op.py") for m in sys.modules.values()
    )


def test_the_learners_op_says_its_errors_in_the_labs_language(tmp_path):
    """The op made of the learner's pieces runs in the worker, which has no language of its own: a Spanish run
    gets the op's errors for bad input in Spanish, which the check that they name the problem reads (English
    errors failed it, and the op's checks, in a Spanish run only)."""
    import functools

    from tests.custom_op import wrong_solutions as w
    from workshop import i18n, labs
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext
    from workshop.labs.custom_op.grading import correctness as cx
    from workshop.labs.custom_op.grading import op_probes
    from workshop.labs.custom_op.grading.own_op import own_op

    pieces = w.source_of(*w.CORRECT, w.define_custom_op, w.define_triton_op)
    (tmp_path / "custom_op.py").write_text(labs.workspace_header("custom_op") + "\n\n" + pieces)
    ctx = LabContext("custom_op", tmp_path, RunOptions("cpu", 1, 0, work=tmp_path, lang="es"))
    try:
        with i18n.using("es"):
            errors = cx.bad_inputs(functools.partial(own_op(ctx).probe, op_probes.apply), "cpu")
            named = {case: cx.names_the_problem(case, error) for case, error in errors.items()}
    finally:
        ctx.stop_worker()
    assert named == dict.fromkeys(errors, True), errors
    assert "coma flotante" in errors["integer dtype"]


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_summary_says_which_sections_of_the_op_failed(lang):
    from workshop import labs
    from workshop.i18n import templates

    own = {"graded": True, "waiting": [], "failed": ["correctness", "minigpt"]}
    values = {"registration": "custom_op", "shapes": {}, "own": own, "eager": None}
    values |= {"eager_waits": False, "side_by_side": "x.md", "graded": True, "device": "cpu"}
    values["shipped_built"] = True
    summary = templates.render(labs.folder("custom_op") / "templates", lang, values)
    assert "`correctness`, `minigpt`" in summary and "float64 softmax" not in summary


@pytest.mark.parametrize(
    "lang, says",
    [("en", "is not built in this edition"), ("es", "no está construido en esta edición")],
)
def test_the_learner_editions_summary_does_not_say_the_shipped_op_is_registered(lang, says):
    from workshop import labs
    from workshop.i18n import templates

    own = {"graded": False, "waiting": ["forward_kernel"], "failed": []}
    values = {"registration": "custom_op", "shapes": {}, "own": own, "eager": None}
    values |= {"eager_waits": True, "side_by_side": "x.md", "graded": False, "device": "cpu"}
    summary = templates.render(
        labs.folder("custom_op") / "templates", lang, values | {"shipped_built": False}
    )
    assert says in summary and "**custom_op**" not in summary


def test_the_answers_are_regraded_from_a_runs_own_files(lab, tmp_path):
    """`check custom_op answers` after a run: graded against that run's launch record (result.json) and
    inductor_custom_op.txt, no kernel run; a folder that is no complete run is one clear error."""
    from workshop import labs
    from workshop.foundations.results import RunFolderError
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext
    from workshop.labs.custom_op import lab as custom_op_lab
    from workshop.labs.custom_op.grading.launch_facts import ANSWERS

    answers = {**ANSWERS, "extern_calls": ANSWERS["extern_calls"] + 1}
    (tmp_path / "custom_op.py").write_text(
        labs.workspace_header("custom_op") + f"\nANSWERS = {answers!r}\n"
    )
    options = RunOptions("cpu", 1, 0, work=tmp_path, only=("custom_op.answers",))
    ctx = LabContext("custom_op", tmp_path / "out", options)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            custom_op_lab.regrade(ctx, lab)  # ANSWERS read in the worker
    finally:
        ctx.stop_worker()
    failed = [c.name for c in ctx.checks if not c.passed]
    assert failed == ["ANSWERS['extern_calls'] matches this run"], failed
    assert str(lab) in ctx.summary
    with pytest.raises(RunFolderError, match="is not a complete custom_op run"):
        custom_op_lab.regrade(ctx, tmp_path)

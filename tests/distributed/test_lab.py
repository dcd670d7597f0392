"""The distributed lab's run (N=2 and N=4 on CPU/gloo): every demo equal to its reference, measured, traced;
a hung rank named by the Flight Recorder; the summary's sentences printed only when the run shows them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import assert_result_shape, read_result
from workshop.foundations.run_options import RunOptions
from workshop.i18n import templates
from workshop.lab_api import LabContext
from workshop.labs.distributed import collectives, demo_checks, figure_rows, lab, measurements
from workshop.labs.distributed.grading import derived_answers

FOLDER = Path(lab.__file__).parent / "templates"
STRATEGIES = ("ddp", "fsdp", "tp", "pp")


def checks_by_name(result: dict) -> dict[str, dict]:
    return {c["name"]: c for c in result["checks"]}


@pytest.mark.distributed
@pytest.mark.slow
def test_lab_passes_with_two_processes(lab_dir):
    out = lab_dir("distributed", n=2)
    result = read_result(out)
    assert_result_shape(result, "distributed")
    assert result["passed"], [c for c in result["checks"] if not c["passed"]]
    names = checks_by_name(result)
    for demo in ("ddp", "fsdp", "tp", "pp/gpipe", "pp/1f1b", "pp/interleaved_1f1b"):
        assert f"{demo}: final parameters equal the reference (max abs diff)" in names, demo
    assert {e["status"] for e in result["exercises"].values()} == {"passing"}
    assert (out / "pp" / "gantt.png").stat().st_size > 10_000


@pytest.mark.distributed
@pytest.mark.slow
def test_each_demo_wrote_its_measurements_and_a_trace_per_rank(lab_dir):
    out = lab_dir("distributed", n=2)
    summary = (out / "summary.md").read_text()
    for strategy in STRATEGIES:
        data = measurements.read(out / strategy)
        assert data["strategy"] == strategy and data["world_size"] == 2
        for run in data["runs"].values():
            assert len(run["per_rank"]) == 2 and run["max_param_error"] <= data["tolerance"]
            for r in run["per_rank"]:
                assert set(r["held"]) == {"params", "grads", "optimizer"} and r["collectives"]
                assert (out / strategy / r["trace"]).stat().st_size > 1_000
                assert f"({strategy}/{r['trace']})" in summary  # linked


@pytest.mark.distributed
@pytest.mark.slow
def test_a_hung_rank_is_named_by_the_flight_recorder(lab_dir):
    out = lab_dir("distributed", n=2)
    names = checks_by_name(read_result(out))
    assert names["hang: ranks the dumps show missing from the collective the others waited in"][
        "value"
    ] == [1]
    assert "Rank 1 never entered collective" in (out / "summary.md").read_text()


@pytest.mark.distributed
@pytest.mark.slow
def test_the_lab_runs_in_spanish_and_so_do_its_ranks(tmp_path, monkeypatch):
    """`--lang es` with DDP and the hung rank only: the same checks pass, named in Spanish; the summary is the
    Spanish template's; what a rank prints is Spanish (the lab passes WORKSHOP_LANG on to torchrun's ranks); the
    model answer graded is the Spanish one."""
    from tests.support.spanish_run import run_in_spanish

    monkeypatch.setattr(lab, "DEMOS", ("ddp", "hang"))
    out = tmp_path / "distributed"
    result = run_in_spanish("distributed", out)
    assert result["lang"] == "es" and result["passed"], [
        c for c in result["checks"] if not c["passed"]
    ]
    names = checks_by_name(result)
    assert (
        "ddp: los parámetros finales, iguales que en la referencia (máxima diferencia absoluta)"
        in names
    )
    missing = (
        "hang: ranks que, según los volcados, faltan en la colectiva en la que esperaron los demás"
    )
    assert names[missing]["value"] == [1]
    assert (
        "survey: palabras de prosa en la respuesta modelo" in names
    )  # survey/README.es.md, graded
    summary = (out / "summary.md").read_text(encoding="utf-8")
    for sentence in (
        "**2 procesos** (gloo, procesos de CPU)",
        "## Lo que guarda cada rank y lo que comunica un paso",
        "| demo | colectiva | llamadas | buffers | enviado por rank (anillo) |",
        "## Un rank que se cuelga",
        "El rank 1 nunca entró en la colectiva",
    ):
        assert sentence in summary, sentence
    log = (out / "hang" / "log.txt").read_text(encoding="utf-8")
    assert "rank 1: bloqueo provocado en el paso 1 (--fail-rank 1)" in log


@pytest.mark.distributed
@pytest.mark.slow
def test_fsdp_holds_half_of_ddp_per_rank(lab_dir):
    out = lab_dir("distributed", n=2)
    ddp, fsdp = (
        measurements.read(out / s)["runs"][s]["per_rank"][0]["held"] for s in ("ddp", "fsdp")
    )
    for kind in ("params", "grads", "optimizer"):
        assert fsdp[kind] == pytest.approx(ddp[kind] / 2, rel=0.05), kind


@pytest.mark.distributed
@pytest.mark.slow
def test_figures_are_written_with_their_wire_bytes(lab_dir):
    rows = figure_rows.read(lab_dir("distributed", n=2) / "figures.json")
    assert {(r["strategy"], r["run"]) for r in rows} == {
        ("ddp", "ddp"),
        ("ddp", "small_buckets"),
        ("fsdp", "fsdp"),
        ("tp", "tp"),
        ("pp", "gpipe"),
        ("pp", "1f1b"),
        ("pp", "interleaved_1f1b"),
    }
    ddp = next(r for r in rows if r["run"] == "ddp")
    assert ddp["sent_bytes"] == pytest.approx(
        ddp["comm_bytes"] - 4096 / 2
    )  # N=2: all-reduce 1x, broadcast 1/2


@pytest.mark.distributed
@pytest.mark.slow
def test_ddp_overlaps_backward_only_with_small_buckets(lab_dir):
    """The default run's one bucket is all-reduced when backward has ended; small buckets' all but the last while
    backward still runs. Both all-reduce the parameters' bytes."""
    rows = {r["run"]: r for r in figure_rows.read(lab_dir("distributed", n=2) / "figures.json")}
    default, small = rows["ddp"], rows["small_buckets"]
    overlap = [
        collectives.overlap(r["backward_ops"], r["issued_in_backward"], "allreduce")
        for r in (default, small)
    ]
    assert overlap[0] == 0 and overlap[1] >= demo_checks.MIN_SMALL_BUCKET_OVERLAP
    early = figure_rows.issued_early
    assert early(default) == (0, 1) and early(small) == (3, 4)
    for row, calls in ((default, 1), (small, 4)):
        assert collectives.total(row["collectives_rank0"], "allreduce", "backward") == (
            calls,
            1_118_048,
        )
    # the answers exercise's question 6: the reference counts the buckets from the model's shapes
    assert figure_rows.answer_truths(list(rows.values()), None)["ddp_early_allreduces"] == 3
    assert derived_answers.answers(2)["ddp_early_allreduces"] == 3


@pytest.mark.distributed
@pytest.mark.slow
def test_lab_passes_with_four_processes(lab_dir):
    out = lab_dir("distributed", n=4)
    result = read_result(out)
    assert result["passed"], [c for c in result["checks"] if not c["passed"]]
    names = checks_by_name(result)
    assert names["tp: lm_head weight rows on each rank (600 / N)"]["value"] == 150
    # 4 ranks x 2 stages = 8 stages > 4 blocks: interleaving is skipped, with the reason
    assert "interleaved_1f1b" in result["skipped_schedules"]
    assert "pp/1f1b: final parameters equal the reference (max abs diff)" in names


@pytest.mark.distributed
@pytest.mark.slow
def test_gpu_peak_memory_is_compared_when_present(lab_dir, tmp_path):
    out = lab_dir("distributed", n=2)
    ddp, fsdp = (measurements.read(out / s) for s in ("ddp", "fsdp"))
    for data, peak in ((ddp, 8_000_000), (fsdp, 5_000_000)):  # as a GPU run would record them
        for r in data["runs"][data["strategy"]]["per_rank"]:
            r["cuda_peak_bytes"] = peak
    ctx = LabContext("distributed", tmp_path, RunOptions("cuda", 2, 0))
    demo_checks.check_strategy(ctx, fsdp, ddp, {})
    peak = [c for c in ctx.checks if "CUDA peak" in c.name]
    assert len(peak) == 1 and peak[0].passed and peak[0].value == pytest.approx(5 / 8)


@pytest.mark.gpu
@pytest.mark.distributed
@pytest.mark.slow
def test_a_gpu_run_traces_cuda_kernels_and_records_the_peak(lab_dir):
    """On the device machine: N = the GPUs there, at most 2 (one GPU: every demo on NCCL, nothing to send)."""
    import gzip

    import torch

    n = min(2, torch.cuda.device_count())
    out = lab_dir("distributed", n=n)
    result = read_result(out)
    assert result["passed"], [c for c in result["checks"] if not c["passed"]]
    rows = figure_rows.read(out / "figures.json")
    assert all(r["device"] == "cuda" and r["cuda_peak_bytes"] > 0 for r in rows)
    ddp = measurements.read(out / "ddp")["runs"]["ddp"]["per_rank"][0]
    with gzip.open(out / "ddp" / ddp["trace"], "rt") as f:
        events = json.load(f)["traceEvents"]
    assert any(e.get("cat") == "kernel" for e in events), "the trace has no CUDA kernel"
    summary = (out / "summary.md").read_text()
    assert (
        "NCCL, one GPU per rank" in summary
        and "gloo" not in summary.split("## A rank that hangs")[0]
    )
    if n > 1:  # NCCL's all-reduce kernel timed, and its bus bandwidth derived
        assert ddp["collective_seconds"]["allreduce"] > 0
        assert (
            next(c for c in rows[0]["communication"] if c["kind"] == "allreduce")["busbw_gbps"] > 0
        )
        assert "never entered collective" in summary


def summary_values(**changes) -> dict:
    """What lab.summary_values gives the template, for a run with nothing to explain; `changes` on top."""
    values = {
        "param_bytes": 1_118_048,
        "steps": 5,
        "n": 2,
        "device": "cpu",
        "wall_s": {},
        "skipped": {},
        "figures": [],
        "fsdp_vs_ddp": None,
        "ddp_overlap": None,
        "reduce_scatter_as_all_reduce": False,
        "traces": [],
        "pipeline": [],
        "interleaved_vs_gpipe": None,
        "oversubscribed": False,
        "cores": 2,
        "hang": None,
        "timeouts": {},
        "failures": {},
    }
    return {**values, **changes}


def pipeline_idle(measured, theory, share):
    return {
        "measured": measured,
        "theory": theory,
        "timer_margin": 1e-4,
        "busy_s": 0.1,
        "busy_cpu_s": 0.0,
        "chunk_ms": 1.0,
        "chunks_per_rank": 8,
        "overhead_ms": 0.5,
        "overhead_share": share,
    }


def ddp_overlap(shown: bool) -> dict:
    """The DDP runs' section as lab.ddp_overlap gives it: the committed N=2 run's counts."""
    default = dict(
        demo="ddp", trace="ddp/a.json.gz", issued=1, early=0, after=0, ops=309, share=0.0
    )
    small = dict(demo="ddp/small_buckets", trace="ddp/b.json.gz", issued=4, early=3, after=284)
    runs = [default, small | dict(ops=309, share=284 / 309)]
    return {"cap_mb": 0.25, "runs": runs, "shown": shown}


def test_the_ddp_runs_are_tabulated_and_contrasted_only_when_the_run_shows_it():
    text = templates.render(FOLDER, "en", summary_values(ddp_overlap=ddp_overlap(shown=False)))
    assert "| ddp/small_buckets | 4 | 3 | 284 of 309 (92%) |" in text
    assert "With small buckets" not in text


SENTENCES = [  # (what the run shows, a phrase the summary prints only then)
    (
        {"pipeline": [{"name": "gpipe", "idle": pipeline_idle(0.3, 0.2, 0.1), "busy_ratio": 1.0}]},
        "## The pipeline",
    ),
    (
        {
            "pipeline": [
                {"name": "gpipe", "idle": pipeline_idle(0.3, 0.2, 0.1), "busy_ratio": 1.0}
            ],
            "interleaved_vs_gpipe": {
                "i": pipeline_idle(0.5, 0.1, 0.3),
                "g": pipeline_idle(0.3, 0.2, 0.1),
            },
        },
        "Interleaving idled more than GPipe in this run",
    ),
    (
        {
            "pipeline": [
                {"name": "gpipe", "idle": pipeline_idle(0.3, 0.2, 0.1), "busy_ratio": 1.0}
            ],
            "oversubscribed": True,
        },
        "ranks took turns on them",
    ),
    ({"reduce_scatter_as_all_reduce": True}, "gloo has no reduce-scatter"),
    (
        {
            "fsdp_vs_ddp": {
                "ddp_buffers": 1.12e6,
                "fsdp_buffers": 3.04e6,
                "ddp_sent": 1.12e6,
                "fsdp_sent": 1.52e6,
            }
        },
        "each rank sends 2(N-1)/N with an all-reduce",
    ),
    ({"ddp_overlap": ddp_overlap(shown=True)}, "With small buckets 3 of 4 all-reduces were issued"),
]


@pytest.mark.parametrize("shown, phrase", SENTENCES, ids=[p for _, p in SENTENCES])
def test_a_mechanism_is_explained_only_when_the_run_shows_it(shown, phrase):
    assert phrase not in templates.render(FOLDER, "en", summary_values())
    assert phrase in templates.render(FOLDER, "en", summary_values(**shown))


def test_interleaving_is_explained_only_when_it_idled_more_for_its_per_chunk_waits():
    g = pipeline_idle(0.3, 0.2, 0.1)
    assert lab.interleaving_idled_more(g, pipeline_idle(0.5, 0.1, 0.3))
    assert not lab.interleaving_idled_more(g, pipeline_idle(0.25, 0.1, 0.3))  # idled less
    assert not lab.interleaving_idled_more(g, pipeline_idle(0.5, 0.1, 0.05))  # not for its waits
    assert not lab.interleaving_idled_more(
        pipeline_idle(0.03, 0, 0.04), pipeline_idle(0.06, 0, 0.07)
    )  # N=1
    assert not lab.interleaving_idled_more(g, None)


def test_the_summary_speaks_of_the_device_the_run_used():
    gpu = templates.render(FOLDER, "en", summary_values(device="cuda", traces=["ddp/t.json.gz"]))
    assert "NCCL, one GPU per rank" in gpu and "NCCL's kernels" in gpu and "gloo" not in gpu
    cpu = templates.render(FOLDER, "en", summary_values(traces=["ddp/t.json.gz"]))
    assert "gloo, CPU processes" in cpu and "NCCL" not in cpu


def test_measurements_round_trip_through_json(tmp_path):
    committed = json.loads(
        (FOLDER / "../../../../benchmarks/cpu-run/distributed-n2/figures.json").read_text()
    )
    assert (
        figure_rows.as_json(figure_rows.completed(committed[0]))["comm_bytes"]
        == committed[0]["comm_bytes"]
    )

"""The figures a run reports, one row per training run (a demo's, or a pipeline schedule's): the summary's
tables, figures.json, the predictions the learner is graded on, and the numbers a survey may quote.

figures.json keeps the keys of the committed H200 run (benchmarks/h200-run/distributed/figures.json, written
before the communication times and the pipeline's idle analysis were measured): rows from it load with those
figures absent.
"""

from __future__ import annotations

import json
from pathlib import Path

from workshop.labs.distributed import collectives, measurements, pipeline_idle

# The run each strategy's predictions are graded on (the pipeline's: GPipe's)
STRATEGY_RUN = {"ddp": "ddp", "fsdp": "fsdp", "tp": "tp", "pp": "gpipe"}

# A figure row is a dict, as figures.json has it. Its measured figures: MEASURED's, which every row has
# (state_bytes_per_rank: params + grads + optimizer state, the rank that holds most; cuda_peak_bytes: 0 on CPU;
# collectives_rank0: collectives.CollectiveRow), and ABSENT's: comm_seconds_rank0 (per kind); a pipeline's
# bubble (its measured idle fraction), bubble_theory, chunk_ms, overhead_ms, overhead_share, chunks_per_rank
# (None in other runs); rank 0's traced backward: its autograd ops (backward_ops) and the collectives issued
# during it, in order (issued_in_backward: [kind, backward's ops that started after it]). Derived from them
# (`completed`), for the reader's sake: calls, comm_bytes, sent_bytes, communication; and, not written to
# figures.json, demo (the name the tables give the run).
FigureRow = dict
MEASURED = {
    "strategy",
    "run",
    "n",
    "device",
    "state_bytes_per_rank",
    "bytes_rank0",
    "cuda_peak_bytes",
    "collectives_rank0",
    "step_ms",
    "max_loss_error",
    "max_param_error",
}
# What a row of older code lacks reads as (the committed H200 run's has none of these)
ABSENT = {
    "comm_seconds_rank0": {},
    "bubble": None,
    "bubble_theory": None,
    "chunk_ms": None,
    "overhead_ms": None,
    "overhead_share": None,
    "chunks_per_rank": None,
    "backward_ops": 0,
    "issued_in_backward": [],
}


def predicted(row: FigureRow) -> dict[str, float]:
    """The figures a prediction of this run is graded against (grading/exercises.py's PREDICTED)."""
    return {
        "held_bytes": row["state_bytes_per_rank"],
        "collectives": row["calls"],
        "comm_bytes": row["comm_bytes"],
    }


def issued_early(row: FigureRow, op_kind: str = "allreduce") -> tuple[int, int]:
    """(collectives of this kind issued while backward still had ops to run, all those issued in it)."""
    after = [n for k, n in row["issued_in_backward"] if k == op_kind]
    return sum(n > 0 for n in after), len(after)


def communication(row: FigureRow) -> list[dict]:
    """Per kind of collective in the logged step, rank 0: its calls, their buffers' bytes, this rank's share
    of them on the wire (ring algorithms: collectives.sent_bytes), and where the profiler trace has
    this kind, its seconds and bus bandwidth (buffer / time x nccl-tests' factor, GB/s: 1e9 bytes/s), else
    None. Sends and receives get no time: a posted send's span lasts until its receive is posted, so their
    spans measure waiting, not moving."""
    out, n = [], row["n"]
    for k in dict.fromkeys(collectives.kind(r["op"]) for r in row["collectives_rank0"]):
        rows = [r for r in row["collectives_rank0"] if collectives.kind(r["op"]) == k]
        calls, buffer = collectives.total(rows)
        seconds = row["comm_seconds_rank0"].get(k) if k not in ("send", "recv") else None
        busbw = buffer / seconds * collectives.bus_factor(k, n) / 1e9 if seconds and n > 1 else None
        out.append(
            {
                "kind": k,
                "calls": calls,
                "buffer_bytes": buffer,
                "sent_bytes": sum(collectives.sent_bytes(r, n) for r in rows),
                "seconds": seconds,
                "busbw_gbps": busbw,
            }
        )
    return out


def completed(measured: dict) -> FigureRow:
    """A row from its measured figures (those of older code: ABSENT's where it lacks them) and those derived
    from them. A row without MEASURED's is not one (KeyError)."""
    if missing := MEASURED - measured.keys():
        raise KeyError(f"a figure row without {sorted(missing)}")
    row = measured | {k: v for k, v in ABSENT.items() if k not in measured}
    calls, comm_bytes = collectives.total(row["collectives_rank0"])
    return {
        **row,
        "calls": calls,
        "comm_bytes": comm_bytes,
        "sent_bytes": sum(collectives.sent_bytes(r, row["n"]) for r in row["collectives_rank0"]),
        "communication": communication(row),
        "demo": row["strategy"]
        if row["run"] == row["strategy"]
        else f"{row['strategy']}/{row['run']}",
    }


def as_json(row: FigureRow) -> dict:
    """The row as figures.json has it: all but its demo's name."""
    return {k: v for k, v in row.items() if k != "demo"}


def from_run(
    data: measurements.Measurements,
    name: str,
    run: measurements.Run,
    idle: pipeline_idle.Idle | None,
) -> FigureRow:
    r0 = run["per_rank"][0]
    return completed(
        {
            "strategy": data["strategy"],
            "run": name,
            "n": data["world_size"],
            "device": data["device"],
            "state_bytes_per_rank": max(sum(r["held"].values()) for r in run["per_rank"]),
            "bytes_rank0": r0["held"],
            "cuda_peak_bytes": max(r["cuda_peak_bytes"] for r in run["per_rank"]),
            "collectives_rank0": r0["collectives"],
            "step_ms": 1e3 * max(r["step_time_s"] for r in run["per_rank"]),
            "max_loss_error": run["max_loss_error"],
            "max_param_error": run["max_param_error"],
            "comm_seconds_rank0": r0["collective_seconds"],
            # a pipeline's idle (pipeline_idle.analyse), None in other runs
            "bubble": idle["measured"] if idle else None,
            "bubble_theory": idle["theory"] if idle else None,
            "chunk_ms": idle["chunk_ms"] if idle else None,
            "overhead_ms": idle["overhead_ms"] if idle else None,
            "overhead_share": idle["overhead_share"] if idle else None,
            "chunks_per_rank": idle["chunks_per_rank"] if idle else None,
            "backward_ops": r0["backward_ops"],
            "issued_in_backward": r0["issued_in_backward"],
        }
    )


def prediction_truths(figures: list[FigureRow], n: int) -> tuple[dict, dict[str, FigureRow]]:
    """What the predictions of a run at N = n are graded against ({"n": n, strategy: its predicted figures}), and
    what their diagnoses read (each strategy's row); a strategy that did not run at this N is not graded (its
    own failed check says why)."""
    by_run = {(f["strategy"], f["run"]): f for f in figures}
    ran = {s: by_run[(s, run)] for s, run in STRATEGY_RUN.items() if (s, run) in by_run}
    return {"n": n, **{strategy: predicted(figure) for strategy, figure in ran.items()}}, ran


def answer_truths(figures: list[FigureRow], tp: measurements.Measurements | None) -> dict:
    """The truths the handout's questions are graded against, from a run's figures (None where the run did not
    measure it)."""
    by_run = {f["run"]: f for f in figures}
    fsdp, gpipe, interleaved, small = (
        by_run.get(k) for k in ("fsdp", "gpipe", "interleaved_1f1b", "small_buckets")
    )
    vocab = tp["lm_head_local_shape"][0] * tp["world_size"] if tp else None
    return {
        "fsdp_backward_allgathers": collectives.total(
            fsdp["collectives_rank0"], "allgather", "backward"
        )[0]
        if fsdp
        else None,
        "logits_gather_bytes": tp["rows_per_chunk"] * tp["seq_len"] * vocab * 4 if tp else None,
        "gpipe_idle_theory": gpipe["bubble_theory"] if gpipe else None,
        "interleaved_sends_rank0": collectives.total(interleaved["collectives_rank0"], "send")[0]
        if interleaved
        else None,
        "ddp_early_allreduces": issued_early(small)[0] if small else None,
    }


def idle_by_schedule(data: dict[str, measurements.Measurements]) -> dict[str, pipeline_idle.Idle]:
    """The pipeline's idle analysis per schedule ({} where the pipeline did not run)."""
    pp = data.get("pp")
    return (
        {name: pipeline_idle.analyse(r, pp["world_size"]) for name, r in pp["runs"].items()}
        if pp
        else {}
    )


def rows(
    data: dict[str, measurements.Measurements],
    pipeline: dict[str, pipeline_idle.Idle] | None = None,
) -> list[FigureRow]:
    """One row per training run of the demos that ran (data: strategy -> its measurements, as a run of the lab
    has them or as its folder gives them back: measurements_in); pipeline: the pipeline's idle per schedule,
    analysed here unless given (idle_by_schedule)."""
    pipeline = idle_by_schedule(data) if pipeline is None else pipeline
    return [
        from_run(m, name, r, pipeline.get(name) if m["strategy"] == "pp" else None)
        for m in data.values()
        for name, r in m["runs"].items()
    ]


def measurements_in(lab_dir: Path) -> dict[str, measurements.Measurements]:
    """Strategy -> the measurements its demo wrote in a lab run's folder (the demos that wrote some)."""
    return {
        folder.name: measurements.read(folder)
        for folder in sorted(Path(lab_dir).iterdir())
        if (folder / "measurements.json").is_file()
    }


def read(path: Path) -> list[FigureRow]:
    return [completed(d) for d in json.loads(Path(path).read_text())]

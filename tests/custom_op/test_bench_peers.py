"""The custom_op benchmark's peers (bench/benchmark.py PEERS): one not installed or refusing a shape is skipped, in
one line, and the other rows still come; the summary names only a peer that the figures show ours beats. On the CPU
(Triton's interpreter): the timers are planted, each call runs once for real."""

import collections
import itertools
import statistics
import sys

import pytest
import torch

from tests.custom_op.test_lab import _doc, _row
from workshop.i18n import using
from workshop.labs.custom_op.bench import benchmark as bench
from workshop.labs.custom_op.bench import report as bench_report
from workshop.ops import INTERPRETED

SHAPE = (4, 8)
DEVICE = "cpu" if INTERPRETED else "cuda"  # the op runs where Triton does


@pytest.fixture
def cpu_timers(monkeypatch):
    """Each timed call runs once on the CPU, where its graph would be captured, and takes 1 ms; one input set."""

    def once(call, n):
        for i in range(n):
            call(i)
        return lambda: 1.0

    monkeypatch.setattr(bench, "graph_timer", once)
    monkeypatch.setattr(bench, "eager_timer", lambda fn: once(lambda i: fn(), 1))
    monkeypatch.setattr(bench, "ROTATE_BYTES", 1)


def test_a_peer_not_installed_is_said_in_one_line_and_the_rest_is_measured(monkeypatch, cpu_timers):
    monkeypatch.setitem(sys.modules, "liger_kernel", None)  # as where liger-kernel is not installed
    lines = []
    skipped = bench.installed_peers(log=lines.append)
    assert list(skipped) == ["liger"] and "not installed" in skipped["liger"]
    assert len(lines) == 1 and "liger" in lines[0] and "not installed" in lines[0]
    peers = [
        p for p in bench.PEERS if p not in skipped and p != "inductor"
    ]  # Inductor: minutes on a CPU
    row = bench.measure_shape(SHAPE, torch.float32, peers, device=DEVICE)
    assert not row["errors"], row["errors"]
    for d in ("fwd", "bwd"):
        assert set(row[d]) == {"ours", "torch", "copy", "ours_eager", "torch_eager"}
        assert all(row[d].values())


def test_a_peer_that_refuses_a_shape_is_skipped_with_its_reason(monkeypatch, cpu_timers):
    def refuses_long_rows(dtype):
        def fwd(x):
            if x.shape[-1] > 4:
                raise RuntimeError("rows over 4 refused\n  a second line, left out")
            return torch.softmax(x, -1)

        return fwd, lambda y, dy: fwd(y)

    monkeypatch.setitem(bench.PEERS, "planted", ("torch", refuses_long_rows))
    row = bench.measure_shape(SHAPE, torch.float32, ["torch", "planted"], device=DEVICE)
    assert row["errors"] == {
        "fwd/planted": "RuntimeError: rows over 4 refused",
        "bwd/planted": "RuntimeError: rows over 4 refused",
    }
    assert row["fwd"]["planted"] is None and row["fwd"]["torch"] and row["bwd"]["ours"]
    short = bench.measure_shape((4, 4), torch.float32, ["planted"], device=DEVICE)
    assert not short["errors"] and short["fwd"]["planted"]


def _beaten_sentences(text: str) -> list[str]:
    return [line for line in text.splitlines() if "ours beats" in line or "supera" in line]


def test_the_summary_names_only_the_peers_that_ours_beats():
    # GB/s per row: ours, copy, torch, inductor; liger is slower on the first shape but faster on the second;
    # Inductor beats ours on a small shape, which counts: the peers are judged on every shape
    rows = [
        _row("float32", (32768, 600), 3900, 4200, 3400, 3600),
        _row("bfloat16", (65536, 600), 3800, 4200, 3000, 3700),
        _row("float32", (4096, 256), 1000, 1000, 900, 1100),
    ]
    for r, liger in zip(rows, (3000, 3850, 950), strict=True):
        r["fwd"]["liger"] = r["bwd"]["liger"] = liger
    doc = _doc(rows, peers=["torch", "inductor", "liger"])
    beaten = bench_report.peers_beaten(doc)["beaten"]
    assert [p["peer"] for p in beaten] == ["torch"]
    assert beaten[0]["least"] == pytest.approx(1000 / 900)
    assert beaten[0]["median"] == pytest.approx(3900 / 3400)
    text = bench_report.summary(doc)
    sentences = _beaten_sentences(text)
    assert len(sentences) == 1 and "On test GPU, ours beats torch" in sentences[0]
    assert "1.11x" in sentences[0] and "liger" not in " ".join(sentences)
    assert "| ours | torch | inductor | liger | copy |" in text.replace("fwd ", "").replace(
        "bwd ", ""
    )
    with using("es"):
        spanish = _beaten_sentences(bench_report.summary(doc))
    assert len(spanish) == 1 and "torch" in spanish[0] and "ours beats" not in spanish[0]


def test_no_win_no_sentence_and_a_missing_peer_is_said_in_the_summary():
    rows = [_row("float32", (32768, 600), 3000, 4200, 3400, 3600)]  # ours loses to both
    doc = _doc(rows, skipped_peers={"liger": "not installed (ModuleNotFoundError)"})
    text = bench_report.summary(doc)
    assert not _beaten_sentences(text)
    assert "- liger: not installed (ModuleNotFoundError)" in text


def _orders_seen(interleaved, names=("a", "b", "c", "d")) -> list[list[str]]:
    """The names in the order interleaved() timed them, a list a round."""
    calls = []
    interleaved({name: (lambda name=name: calls.append(name) or 1.0) for name in names})
    return [calls[i : i + len(names)] for i in range(0, len(calls), len(names))]


def _rotated(timers: dict) -> dict:
    """Planted: ROUNDS rounds, the order turned by one each round: each keeps its predecessor."""
    names, samples = list(timers), {name: [] for name in timers}
    for turn in range(bench.ROUNDS):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            samples[name].append(timers[name]())
    return samples


@pytest.mark.parametrize("n", [4, 5])
def test_each_contender_comes_first_and_after_each_other_equally_often(n):
    names = "abcde"[:n]
    rounds = _orders_seen(bench.timed_in_rounds, names)
    assert len(rounds) >= bench.ROUNDS and all(sorted(r) == list(names) for r in rounds)
    firsts = collections.Counter(r[0] for r in rounds)
    after = collections.Counter((x, y) for r in rounds for x, y in itertools.pairwise(r))
    assert set(firsts) == set(names) and len(set(firsts.values())) == 1
    assert len(after) == n * (n - 1) and len(set(after.values())) == 1
    planted = _orders_seen(_rotated, names)
    assert len(
        collections.Counter((x, y) for r in planted for x, y in itertools.pairwise(r))
    ) < n * (n - 1)


def _timed_on_a_machine_slow_on_each_rounds_first_call(interleaved) -> tuple[dict, list[list[str]]]:
    """interleaved({"a", "b", "c"}: timers of 1, 2 and 3 ms) on a machine where each round's first call takes
    1.5 x as long: a fixed order would put that cost on one contender. The medians of what it timed, and the
    names of each round."""
    calls = []

    def timer(name, ms):
        def time_it():
            first = len(calls) % 3 == 0
            calls.append(name)
            return ms * (1.5 if first else 1.0)

        return time_it

    found = interleaved({"a": timer("a", 1.0), "b": timer("b", 2.0), "c": timer("c", 3.0)})
    medians = {name: statistics.median(rounds) for name, rounds in found.items()}
    return medians, [calls[i : i + 3] for i in range(0, len(calls), 3)]


def _fixed_order(timers: dict) -> dict:
    """Planted: ROUNDS rounds, every one in the same order."""
    rounds = [{name: t() for name, t in timers.items()} for _ in range(bench.ROUNDS)]
    return {name: [r[name] for r in rounds] for name in timers}


def test_every_contender_is_timed_once_a_round_and_no_one_always_first(monkeypatch):
    monkeypatch.setattr(bench, "ROUNDS", 6)
    found, rounds = _timed_on_a_machine_slow_on_each_rounds_first_call(bench.timed_in_rounds)
    assert len(rounds) == 6 and all(sorted(r) == ["a", "b", "c"] for r in rounds)
    assert {r[0] for r in rounds} == {"a", "b", "c"}
    # each is first in 2 rounds of 6: its median is its own time, not the slow first call's
    assert found == {"a": 1.0, "b": 2.0, "c": 3.0}
    planted, _ = _timed_on_a_machine_slow_on_each_rounds_first_call(_fixed_order)
    assert planted != {"a": 1.0, "b": 2.0, "c": 3.0}

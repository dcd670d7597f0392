"""The dispatcher lab's summary.md: a sentence that explains a mechanism appears only when the run shows it."""

from __future__ import annotations

import pytest

from workshop.foundations.run_options import RunOptions
from workshop.i18n import templates
from workshop.lab_api import LabContext
from workshop.labs.dispatcher import lab
from workshop.labs.dispatcher.scenario_list import all_scenarios
from workshop.labs.dispatcher.tracing import lm_head_input, run_scenario
from workshop.minigpt import checkpoint

NO_AUTOGRAD_KEY = "The TLS exclude set holds AutogradFunctionality, so no autograd key is in play."
BELOW_PYTHON = (
    "The first kernel below the Python key is the decomposition registered at the backend key."
)
FOLDED = "A 3-D input times a 2-D weight is folded"
BATCHED = "Two 3-D operands go to `aten::bmm`"


@pytest.fixture(scope="module")
def results():
    model = checkpoint.load(device="cpu")
    x = lm_head_input(model, 0, "cpu")
    return [run_scenario(sc, model.lm_head, x)[0] for sc in all_scenarios(["cpu"])]


def summary(tmp_path, results) -> str:
    ctx = LabContext("dispatcher", tmp_path, RunOptions("cpu", 1, 0))
    values = lab.summary_values(ctx, results, ["profiler/cpu-grad-3d.json"])
    return templates.render(ctx.templates_folder, "en", {"device": "cpu", **values})


def standing_in(results, name: str, stand_in: str):
    """The results with scenario `name` replaced by scenario `stand_in`'s result (renamed)."""
    by_name = {r["name"]: r for r in results}
    return [{**by_name[stand_in], "name": name} if r["name"] == name else r for r in results]


def test_this_runs_summary_explains_what_it_shows(tmp_path, results):
    text = summary(tmp_path, results)
    for sentence in (NO_AUTOGRAD_KEY, BELOW_PYTHON, FOLDED, BATCHED):
        assert sentence in text
    assert "CPU only: run with `--device cuda`" in text and "ui.perfetto.dev" in text


def test_the_inference_remark_needs_a_run_where_autograd_was_excluded(tmp_path, results):
    text = summary(tmp_path, standing_in(results, "cpu/inference_mode/3d", "cpu/grad/3d"))
    assert NO_AUTOGRAD_KEY not in text and BELOW_PYTHON not in text


def test_the_matmul_sentences_need_the_ops_this_run_called(tmp_path, results):
    swapped = standing_in(results, "cpu/matmul/3d", "cpu/matmul_batched/3d")
    swapped = standing_in(swapped, "cpu/matmul_batched/3d", "cpu/matmul/2d")
    text = summary(tmp_path, swapped)
    assert FOLDED not in text and BATCHED not in text

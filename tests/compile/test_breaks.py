"""Graph breaks and recompiles, measured directly with Dynamo only (no Inductor, so fast)."""

import torch

from workshop.labs.compile.breaks import ItemInForward, count_compiles, explain_breaks
from workshop.minigpt import checkpoint


def test_item_breaks_the_graph_and_the_plain_model_does_not():
    model = checkpoint.load()
    idx = torch.randint(1, 600, (2, 8))
    assert explain_breaks(model, idx)["graph_breaks"] == 0
    broken = explain_breaks(ItemInForward(model), idx)
    assert broken["graph_breaks"] == 1 and broken["graphs"] == 2
    assert "item" in broken["break_reasons"][0]["reason"].lower()


def test_static_shapes_recompile_per_length_and_dynamic_does_not():
    model = checkpoint.load()
    torch._logging.set_logs(recompiles=True)
    try:
        static = count_compiles(model, [8, 12, 16], 2, "static")
        dynamic = count_compiles(model, [8, 12, 16], 2, "dynamic")
    finally:
        torch._logging.set_logs()
    assert static["compiles"] == 3 and dynamic["compiles"] == 1
    assert static["recompile_reasons"], "each recompile names the guard that failed"

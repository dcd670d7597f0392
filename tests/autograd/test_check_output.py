"""What a learner reads first: for each typical mistake, the first line `check autograd EXERCISE` prints
under the failing exercise names that mistake. Through the real CLI, the mistake written in a workspace made by
`exercises init` (the learner's code in its worker, the verdict in the lab, the line from check's report)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import TEST_DEVICE
from workshop.learner import workspace

MASK_DROPPED = """
def cross_entropy_grad(logits, targets):
    Z, t = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    P = torch.softmax(Z, dim=1)
    G = (P - F.one_hot(t, Z.shape[1]).to(Z.dtype)) / Z.shape[0]  # every position, <pad> too
    return F.cross_entropy(Z, t), G.reshape(logits.shape)
"""

NO_MAX_SHIFT = """
def cross_entropy_grad(logits, targets):
    Z, t = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    mask = (t != PAD_ID).to(Z.dtype)
    e = Z.exp()  # no max subtracted first
    P = e / e.sum(1, keepdim=True)
    loss = -((P.gather(1, t[:, None])[:, 0]).log() * mask).sum() / mask.sum()
    G = (P - F.one_hot(t, Z.shape[1]).to(Z.dtype)) * (mask / mask.sum())[:, None]
    return loss, G.reshape(logits.shape)
"""

FLOAT32_STEP = """
def cross_entropy_grad(logits, targets):
    Z, t = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    mask = (t != PAD_ID).float()  # float32 whatever the logits' dtype
    weight = mask / mask.sum()
    P = torch.softmax(Z, dim=1)
    G = (P - F.one_hot(t, Z.shape[1]).to(Z.dtype)) * weight[:, None]
    loss = -(torch.log_softmax(Z, 1).gather(1, t[:, None])[:, 0] * weight).sum()
    return loss.to(Z.dtype), G.reshape(logits.shape)
"""

OVERWRITE_AT_FAN_IN = """
def backpropagate(order, grad_output):
    slots, grads = {order[0]: [grad_output]}, {}
    for node in order:
        arrived = slots.pop(node)
        if type(node).__name__ == "AccumulateGrad":
            grads[node.variable] = arrived[0]
            continue
        outs = node(*arrived)
        outs = (outs,) if isinstance(outs, torch.Tensor) else outs
        for (nxt, nr), g in zip(node.next_functions, outs):
            if nxt is not None and g is not None:
                waiting = slots.setdefault(nxt, [None] * num_inputs(nxt))
                waiting[nr] = fit_to_input(g, nxt, nr)  # replaces what arrived before
    return grads
"""


def learners_file(stubs: str, exercise: str, source: str) -> str:
    """The workspace file with `exercise`'s stub (its def down to its raise) replaced by `source`."""
    stub = re.compile(rf"\ndef {exercise}\(.*?raise NotImplementedError\([^)]*\)\n", re.S)
    written, replaced = stub.subn(lambda _match: source, stubs, count=1)
    assert replaced == 1, f"no stub of {exercise}"
    return written


def first_line_under(exercise_id: str, stdout: str) -> str:
    """The first entry check prints under the exercise's FAIL line (its wrapped lines joined)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if exercise_id in line and "FAIL" in line)
    entry = [lines[start + 1].strip()]
    for line in lines[start + 2 :]:
        if not line.startswith(
            " " * 15
        ):  # the next label ("why", "hint", ...) starts the next entry
            break
        entry.append(line.strip())
    return " ".join(entry)


@pytest.mark.slow
@pytest.mark.parametrize(
    "exercise, source, mistake",
    [
        ("cross_entropy_grad", MASK_DROPPED, "<pad> positions counted"),
        ("cross_entropy_grad", NO_MAX_SHIFT, "no max shift before exp()"),
        ("cross_entropy_grad", FLOAT32_STEP, "a float32 step in a float64 computation"),
        ("backpropagate", OVERWRITE_AT_FAN_IN, "overwrite at fan-in"),
    ],
    ids=[
        "loss-averaged-over-pad",
        "no-max-shift",
        "float32-step-in-float64",
        "overwrite-at-fan-in",
    ],
)
def test_the_first_line_under_a_failing_exercise_names_the_mistake(
    tmp_path, exercise, source, mistake
):
    work, root = tmp_path / "my-work", tmp_path / "results"
    workspace.init(work, ["autograd"], root)
    path = work / "autograd.py"
    path.write_text(learners_file(path.read_text(), exercise, source))
    cmd = [sys.executable, "-m", "workshop", "check", "autograd", exercise, "--work", str(work)]
    out = subprocess.run(
        [*cmd, "--device", TEST_DEVICE, "--out", str(root)], capture_output=True, text=True
    )
    assert out.returncode == 1, out.stdout + out.stderr
    first = first_line_under(f"autograd.{exercise}", out.stdout)
    assert first.startswith("check") and mistake in first, out.stdout

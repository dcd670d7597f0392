"""What the lab's process reads in the learner's file before running it (workshop/learner/source_check.py)."""

from __future__ import annotations

import textwrap

import pytest

from workshop.labs import workspace_header as lab_header
from workshop.learner import source_check

HEADER = lab_header("autograd")


def refused(body: str) -> list[str]:
    return [f.what for f in source_check.file_findings(HEADER + textwrap.dedent(body), HEADER)]


def test_the_header_itself_passes():
    assert refused("") == []


@pytest.mark.parametrize(
    "body, what",
    [
        ("import math\n", "import math"),
        (
            "from workshop.labs.autograd.hand_grads import cross_entropy_grad\n",
            "from workshop.labs.autograd.hand_grads import cross_entropy_grad",
        ),
        (
            "from workshop.labs.autograd.replay import engine_order\n",
            "from workshop.labs.autograd.replay import engine_order",
        ),
        ("from . import x\n", "from . import x"),
        ("def f():\n    import os\n", "import os"),
        ("x = eval('1')\n", "eval"),
        ("f = getattr(torch, 'func')\n", "getattr"),
        ("g = fit_to_input.__globals__\n", ".__globals__"),
        ("m = torch.sys.modules\n", ".sys"),
        ("c = ().__class__.__mro__\n", ".__class__"),
        ("torch._C._set_grad_enabled(True)\n", "._C"),
    ],
)
def test_imports_past_the_header_and_reach_past_the_exercise_are_refused(body, what):
    assert what in refused(body)


def test_a_name_bound_by_an_import_is_not_the_learners_own():
    source = HEADER + "from workshop.labs.autograd.graph_walk import walk as engine_order\n"
    assert source_check.imported_as(source, "engine_order") is not None
    assert (
        source_check.imported_as(
            HEADER + "def engine_order(root):\n    return []\n", "engine_order"
        )
        is None
    )


AUTOGRAD = {
    "backward": "def f(x):\n    z = x.clone().requires_grad_()\n    z.sum().backward()\n    return z.grad\n",
    "helper": "def g(x):\n    return torch.autograd.grad(x.sum(), x)\n\ndef f(x):\n    return g(x)\n",
    "functorch": "def f(x):\n    return torch.func.grad(lambda z: z.sum())(x)\n",
    "derivative op": "def f(x):\n    return torch.ops.aten._softmax_backward_data(x, x, 0, x.dtype)\n",
    "at import": "G = torch.autograd.functional.jacobian\n\ndef f(x):\n    return G(lambda z: z, x)\n",
    "keyword": "def f(x):\n    return torch.zeros(3, requires_grad=True)\n",
}


@pytest.mark.parametrize("source", AUTOGRAD.values(), ids=AUTOGRAD.keys())
def test_autograd_named_in_the_function_or_what_it_uses_is_found(source):
    assert source_check.autograd_uses(source, "f")


def test_plain_tensor_code_and_a_variable_called_grad_are_not_autograd():
    source = (
        "def f(x):\n    grad = x.softmax(-1) - 1\n    backward_ready = grad * 2\n    return grad\n"
    )
    assert source_check.autograd_uses(source, "f") == []

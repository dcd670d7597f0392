"""What "no autograd" forbids (no_autograd.FORBIDDEN), each rule caught by the watcher with a planted cheat:
autograd's engine on the calling thread, on a thread of its own and on a thread pool started before the watch;
torch.func; a grad_fn node called by hand; aten's derivative ops called directly; forward-mode AD; tensors that
require grad; another process (subprocess, fork, spawn). The honest hand formulas and vmap are allowed."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
import torch.nn.functional as F

from tests.autograd import wrong_solutions as w
from workshop.labs.autograd.grading.no_autograd import (
    ENGINE_RULES,
    FORBIDDEN,
    HAND_RULES,
    add_seen,
    rule_of,
    watched_call,
)
from workshop.labs.autograd.hand_grads import cross_entropy_grad


def by_backward():
    z = w.Z.clone().requires_grad_()
    F.cross_entropy(z, w.T, ignore_index=w.PAD_ID).backward()
    return z.grad


POOL = ThreadPoolExecutor(1)  # a thread that exists before any watch starts


def on_a_pool_thread():
    return POOL.submit(w.z_grad_by_autograd).result()


def by_torch_func():
    return torch.func.grad(lambda z: F.cross_entropy(z, w.T, ignore_index=w.PAD_ID))(w.Z)


def by_fork():
    child = multiprocessing.get_context("fork").Process(target=sum, args=([1, 2],))
    child.start()
    child.join()


def by_spawn():  # multiprocessing's spawn raises no audit event: seen by its child's CPU time
    child = multiprocessing.get_context("spawn").Process(target=sum, args=(range(3_000_000),))
    child.start()
    child.join()


@pytest.mark.parametrize("rule", sorted(w.CHEATS))
def test_each_forbidden_thing_is_seen_and_nothing_else(rule):
    _, seen = watched_call(w.CHEATS[rule], rules=HAND_RULES)
    assert list(seen) == [rule], seen
    assert seen[rule]["count"] > 0 and 0 < len(seen[rule]["examples"]) <= 3


@pytest.mark.parametrize(
    "cheat, rule",
    [
        (by_backward, "engine"),
        (w.z_grad_by_autograd, "engine"),
        (on_a_pool_thread, "engine"),
        (by_torch_func, "engine"),
        (by_fork, "process"),
        (by_spawn, "process"),
    ],
    ids=lambda v: v.__name__ if callable(v) else v,
)
def test_more_ways_of_breaking_a_rule_are_seen(cheat, rule):
    _, seen = watched_call(cheat, rules=HAND_RULES)
    assert rule in seen and seen[rule]["count"] > 0, seen


def test_every_rule_has_a_planted_cheat():
    assert set(w.CHEATS) == set(FORBIDDEN) == set(HAND_RULES)


def test_the_engine_ranges_count_as_the_engine_only():
    """The nodes and derivative ops the engine runs are the engine's: one rule, not three."""
    _, seen = watched_call(by_backward, rules=("engine", "grad_fn", "derivative_op"))
    assert set(seen) == {"engine"}, seen


def test_the_honest_hand_formulas_and_vmap_are_allowed():
    result, seen = watched_call(cross_entropy_grad, w.Z[None], w.T[None], rules=HAND_RULES)
    assert seen == {} and result[1].shape == (1, *w.Z.shape)
    assert watched_call(torch.func.vmap(torch.sin), w.Z, rules=HAND_RULES)[1] == {}


def test_the_engine_exercises_may_call_nodes_but_not_the_engine():
    assert watched_call(w.grad_fn_called, rules=ENGINE_RULES)[1] == {}
    assert set(watched_call(w.CHEATS["engine"], rules=ENGINE_RULES)[1]) == {"engine"}


def test_what_a_watch_saw_is_plain_data_that_adds_up():
    _, first = watched_call(w.CHEATS["derivative_op"], rules=HAND_RULES)
    _, second = watched_call(w.CHEATS["derivative_op"], rules=HAND_RULES)
    total = add_seen(add_seen({}, first), second)
    assert total == {
        "derivative_op": {"count": 2, "examples": ["aten::_log_softmax_backward_data"]}
    }


@pytest.mark.parametrize(
    "name, rule",
    [
        ("aten::_log_softmax_backward_data", "derivative_op"),
        ("aten::nll_loss_backward", "derivative_op"),
        ("aten::_standard_gamma_grad", "derivative_op"),
        ("aten::glu_jvp", "derivative_op"),
        ("aten::_make_dual", "forward_ad"),
        ("autograd::engine::evaluate_function: AddmmBackward0", "engine"),
        ("LogSoftmaxBackward0", "grad_fn"),
        ("torch::autograd::AccumulateGrad", "grad_fn"),
        ("aten::softmax", None),
        ("aten::addmm", None),
        ("aten::one_hot", None),
    ],
)
def test_a_name_says_which_rule_it_breaks(name, rule):
    assert rule_of(name) == rule


def test_an_error_in_the_watched_code_stops_the_watch():
    def broken():
        raise ValueError("learner's bug")

    with pytest.raises(ValueError, match="learner's bug"):
        watched_call(broken, rules=HAND_RULES)
    # a new watch starts: the profiler was stopped
    assert watched_call(w.CHEATS["derivative_op"], rules=HAND_RULES)[1]


@pytest.mark.gpu
def test_the_engine_is_seen_on_its_cuda_device_thread():
    """On CUDA the engine runs the nodes on a device thread of its own."""
    w = torch.randn(5, 3, device="cuda").requires_grad_()
    x = torch.randn(4, 3, device="cuda")

    def on_cuda():
        return torch.autograd.grad(F.linear(x, w).square().sum(), w)

    assert "engine" in watched_call(on_cuda, rules=ENGINE_RULES)[1]

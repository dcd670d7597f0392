"""A learner's typical wrong solutions of the autograd lab's exercises, one function each.

The exercise tests grade them (each must fail with a pointed message); the mutation suite plants some of them in
the reference (each must fail one of the lab's own checks).
"""

from __future__ import annotations

import subprocess
import sys
import threading

import torch
import torch.nn.functional as F

from workshop.labs.autograd import hand_grads, replay
from workshop.labs.autograd.graph_walk import num_inputs, walk
from workshop.minigpt.model import PAD_ID, lm_loss


# ---- cross_entropy_grad ----
def rows(logits, targets):
    return logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)


def ce_sum_not_mean(logits, targets):
    Z, t = rows(logits, targets)
    mask = (t != PAD_ID).to(Z.dtype)
    P = torch.softmax(Z, dim=1)
    G = (P - F.one_hot(t, Z.shape[1]).to(Z.dtype)) * mask[:, None]
    loss = -(torch.log_softmax(Z, 1).gather(1, t[:, None])[:, 0] * mask).sum()
    return loss, G.reshape(logits.shape)


def ce_mask_dropped(logits, targets):
    Z, t = rows(logits, targets)
    P = torch.softmax(Z, dim=1)
    G = (P - F.one_hot(t, Z.shape[1]).to(Z.dtype)) / Z.shape[0]
    return F.cross_entropy(Z, t), G.reshape(logits.shape)


def ce_mask_on_the_class_column(logits, targets):
    loss, G = hand_grads.cross_entropy_grad(logits, targets)
    Z, t = rows(logits, targets)
    wrong = (torch.softmax(Z, 1) - F.one_hot(t, Z.shape[1]).to(Z.dtype)) / int((t != PAD_ID).sum())
    wrong[:, PAD_ID] = 0  # "ignore <pad>" read as: drop the class <pad>
    return loss, wrong.reshape(logits.shape)


def ce_mask_misaligned(logits, targets):
    return hand_grads.cross_entropy_grad(logits, targets.T.reshape(targets.shape))


def ce_no_max_shift(logits, targets):
    Z, t = rows(logits, targets)
    mask = (t != PAD_ID).to(Z.dtype)
    e = Z.exp()  # overflows to inf past 88.7 in float32
    P = e / e.sum(1, keepdim=True)
    loss = -((P.gather(1, t[:, None])[:, 0]).log() * mask).sum() / mask.sum()
    G = (P - F.one_hot(t, Z.shape[1]).to(Z.dtype)) * (mask / mask.sum())[:, None]
    return loss, G.reshape(logits.shape)


def ce_sign_flipped(logits, targets):
    loss, G = hand_grads.cross_entropy_grad(logits, targets)
    return loss, -G


def ce_float32_always(logits, targets):
    loss, G = hand_grads.cross_entropy_grad(logits.float(), targets)
    return loss, G


def ce_float32_step(logits, targets):
    """Right in float32; in float64 the mask and N are float32 (.float()), so 1/N is rounded to float32."""
    Z, t = rows(logits, targets)
    mask = (t != PAD_ID).float()
    weight = mask / mask.sum()  # (M,) float32, whatever the logits' dtype
    P = torch.softmax(Z, dim=1)
    G = (P - F.one_hot(t, Z.shape[1]).to(Z.dtype)) * weight[:, None]
    loss = -(torch.log_softmax(Z, 1).gather(1, t[:, None])[:, 0] * weight).sum()
    return loss.to(Z.dtype), G.reshape(logits.shape)


def ce_float32_softmax(logits, targets):
    """The softmax taken in float32 and cast back: every entry carries float32's rounding."""
    loss, G = hand_grads.cross_entropy_grad(logits, targets)
    Z, t = rows(logits, targets)
    mask = (t != PAD_ID).to(Z.dtype)
    P = torch.softmax(Z.float(), dim=1).to(Z.dtype)
    G = (P - F.one_hot(t, Z.shape[1]).to(Z.dtype)) * (mask / mask.sum())[:, None]
    return loss, G.reshape(logits.shape)


def ce_epsilon_in_the_mean(logits, targets):
    """A "safe" division: N + 1e-6."""
    Z, t = rows(logits, targets)
    mask = (t != PAD_ID).to(Z.dtype)
    n = mask.sum() + 1e-6
    P = torch.softmax(Z, dim=1)
    G = (P - F.one_hot(t, Z.shape[1]).to(Z.dtype)) * (mask / n)[:, None]
    loss = -(torch.log_softmax(Z, 1).gather(1, t[:, None])[:, 0] * mask).sum() / n
    return loss, G.reshape(logits.shape)


def ce_by_autograd(logits, targets):
    z = logits.detach().clone().requires_grad_()
    loss = lm_loss(z, targets)
    (g,) = torch.autograd.grad(loss, z)
    return loss.detach(), g


def ce_by_torch_func(logits, targets):
    loss = lm_loss(logits, targets)
    return loss, torch.func.grad(lambda z: lm_loss(z, targets))(logits)


def ce_on_another_thread(logits, targets):
    """autograd.grad run on a thread of its own, out of sight of a watcher of one thread."""
    found = []
    worker = threading.Thread(target=lambda: found.append(ce_by_autograd(logits, targets)))
    worker.start()
    worker.join()
    return found[0]


def ce_by_derivative_op(logits, targets):
    """aten's own backward formulas, called directly: no engine, no graph."""
    Z, t = rows(logits, targets)
    log_p = torch.log_softmax(Z, dim=1)
    n = int((t != PAD_ID).sum())
    loss = F.nll_loss(log_p, t, ignore_index=PAD_ID)
    d_log_p = torch.ops.aten.nll_loss_backward(
        torch.ones((), dtype=Z.dtype),
        log_p,
        t,
        None,
        1,
        PAD_ID,
        torch.tensor(float(n), dtype=Z.dtype),
    )
    G = torch.ops.aten._log_softmax_backward_data(d_log_p, log_p, 1, Z.dtype)
    return loss, G.reshape(logits.shape)


# ---- linear_grads ----
def flat(dlogits, x):
    return dlogits.reshape(-1, dlogits.shape[-1]), x.reshape(-1, x.shape[-1])


def lin_transposed_dW(dlogits, x, W):
    G, X = flat(dlogits, x)
    return X.T @ G, G.sum(0), (G @ W).reshape(x.shape)


def lin_db_over_classes(dlogits, x, W):
    G, X = flat(dlogits, x)
    return G.T @ X, G.sum(1), (G @ W).reshape(x.shape)


def lin_db_over_batch_only(dlogits, x, W):
    G, X = flat(dlogits, x)
    return G.T @ X, dlogits.sum(0), (G @ W).reshape(x.shape)


def lin_dx_not_reshaped(dlogits, x, W):
    G, X = flat(dlogits, x)
    return G.T @ X, G.sum(0), G @ W


def lin_mean_again(dlogits, x, W):
    G, X = flat(dlogits, x)
    n = 82  # the mean's 1/N applied a second time
    return G.T @ X / n, G.sum(0) / n, (G @ W).reshape(x.shape) / n


def lin_db_sign_flipped(dlogits, x, W):
    G, X = flat(dlogits, x)
    return G.T @ X, -G.sum(0), (G @ W).reshape(x.shape)


def lin_dW_sign_flipped(dlogits, x, W):
    G, X = flat(dlogits, x)
    return -G.T @ X, G.sum(0), (G @ W).reshape(x.shape)


def lin_dx_sign_flipped(dlogits, x, W):
    G, X = flat(dlogits, x)
    return G.T @ X, G.sum(0), -(G @ W).reshape(x.shape)


def lin_by_vjp(dlogits, x, W):
    b = torch.zeros(W.shape[0], dtype=W.dtype)
    _, vjp = torch.func.vjp(lambda x, W, b: F.linear(x, W, b), x, W, b)
    dx, dW, db = vjp(dlogits)
    return dW, db, dx


def lin_float64_off_by_5e7(dlogits, x, W):
    dW, db, dx = hand_grads.linear_grads(dlogits, x, W)
    return dW * (1 + 5e-7), db, dx


# ---- engine_order ----
def order_bfs(root):
    return walk(root)  # every node once, but reached is not ready


def order_fifo(root):
    waiting = replay.dependencies(root)
    order, queue = [], [root]
    for node in queue:
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    queue.append(nxt)
    return order  # topological, but not the engine's choice among ready nodes


def order_by_sequence_nr(root):
    return sorted(walk(root), key=lambda n: -n._sequence_nr())  # AccumulateGrad's is the largest


def order_without_leaves(root):
    return [n for n in replay.engine_order(root) if not hasattr(n, "variable")]


# ---- backpropagate ----
def run_nodes(order, grad_output, arrive):
    """A learner's engine loop; `arrive(slots, input_nr, g)` is what they do when a gradient arrives."""
    buffers, out = {order[0]: [grad_output]}, {}
    for node in order:
        grads = buffers.pop(node)
        if hasattr(node, "variable"):
            out[node.variable] = grads[0]
            continue
        outs = node(*grads)
        outs = (outs,) if isinstance(outs, torch.Tensor) else outs
        for (nxt, nr), g in zip(node.next_functions, outs, strict=True):
            if nxt is not None and g is not None:
                arrive(buffers.setdefault(nxt, [None] * num_inputs(nxt)), nr, nxt, g)
    return out


def bp_overwrite(order, grad_output):
    def arrive(slots, nr, nxt, g):
        slots[nr] = replay.fit_to_input(g, nxt, nr)  # the second gradient replaces the first

    return run_nodes(order, grad_output, arrive)


def bp_no_fit(order, grad_output):
    def arrive(slots, nr, nxt, g):
        slots[nr] = g if slots[nr] is None else slots[nr] + g  # b's (176, 600) never summed back

    return run_nodes(order, grad_output, arrive)


def bp_keyed_by_id(order, grad_output):
    return {id(leaf): g for leaf, g in replay.backpropagate(order, grad_output).items()}


def bp_returns_a_list(order, grad_output):
    return list(replay.backpropagate(order, grad_output).values())  # which leaf's is which?


# ---- cheats: each breaks exactly one rule of no_autograd.FORBIDDEN, on a small problem of its own ----
Z = torch.randn(12, 7, dtype=torch.float64)  # (M, V) logits
T = torch.tensor([1, 2, 3, 4, 5, 6, 1, 2, 3, PAD_ID, PAD_ID, PAD_ID])


def on_a_thread(work):
    found = []
    worker = threading.Thread(target=lambda: found.append(work()))
    worker.start()
    worker.join()
    return found[0]


def z_grad_by_autograd():
    z = Z.clone().requires_grad_()
    return torch.autograd.grad(lm_loss(z[None], T[None]), z)[0]


def grad_fn_called():
    z = Z.clone().requires_grad_()
    loss = lm_loss(z[None], T[None])
    return loss.grad_fn(torch.ones((), dtype=Z.dtype))


CHEATS = {
    "engine": lambda: on_a_thread(z_grad_by_autograd),  # no graph recorded on the calling thread
    "grad_fn": lambda: on_a_thread(grad_fn_called),
    "derivative_op": lambda: torch.ops.aten._log_softmax_backward_data(
        torch.ones_like(Z), torch.log_softmax(Z, 1), 1, Z.dtype
    ),
    "forward_ad": lambda: torch.func.jvp(torch.sin, (Z,), (torch.ones_like(Z),)),
    "requires_grad": lambda: (Z.clone().requires_grad_() * 2).detach(),
    "process": lambda: subprocess.run([sys.executable, "-c", "pass"], check=True),
}


def ce_cheating(rule):
    """The reference cross_entropy_grad, after a cheat that breaks `rule` only."""

    def cross_entropy_grad(logits, targets):
        CHEATS[rule]()
        return hand_grads.cross_entropy_grad(logits, targets)

    return cross_entropy_grad

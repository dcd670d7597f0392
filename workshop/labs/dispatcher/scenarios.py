"""The scenarios traced side by side: one F.linear(x, W, b) call with the LM head's weights, under different
autograd / inference / autocast states, on CPU (and CUDA when run there), with a 2-D and a 3-D input."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from workshop.labs.dispatcher.explain import autograd_nodes, explain, flat, profiler_consistency
from workshop.labs.dispatcher.keys import names
from workshop.labs.dispatcher.recorder import record
from workshop.minigpt.data import sample_corpus

MODES = ("grad", "requires_grad_off", "no_grad", "inference_mode", "autocast_bf16")
GEMM = re.compile(r"gemm|nvjet|xmma|cutlass", re.IGNORECASE)  # cuBLAS / cuBLASLt GEMM kernel names


@dataclass(frozen=True)
class Scenario:
    device: str  # "cpu" | "cuda"
    mode: str  # one of MODES
    rank: int  # 2: x is (T, 64); 3: x is (B, T, 64)

    @property
    def name(self) -> str:
        return f"{self.device}/{self.mode}/{self.rank}d"

    @property
    def autocast_key(self) -> str | None:
        return f"Autocast{self.device.upper()}" if self.mode == "autocast_bf16" else None

    def context(self):
        """The state the call runs in. requires_grad_off changes the weights instead (see run_scenario)."""
        return {
            "no_grad": torch.no_grad,
            "inference_mode": torch.inference_mode,
            "autocast_bf16": lambda: torch.autocast(self.device, dtype=torch.bfloat16),
        }.get(self.mode, contextlib.nullcontext)()


def all_scenarios(devices: list[str]) -> list[Scenario]:
    out = []
    for d in devices:
        out += [Scenario(d, "grad", 3), Scenario(d, "grad", 2)]
        out += [Scenario(d, m, 3) for m in MODES[1:]]
        out.append(Scenario(d, "inference_mode", 2))
    return out


def lm_head_input(model, seed: int, device: str) -> torch.Tensor:
    """Hidden states of two real prompts (prefixes of grammar sentences), (B=2, T, 64), no autograd history."""
    sentences = sample_corpus(2, seed)
    T = (
        min(len(s) for s in sentences) - 1
    )  # a proper prefix of both: the model must predict the next token
    idx = torch.tensor([s[:T] for s in sentences], device=device)  # (2, T)
    with torch.no_grad():
        return model.hidden_states(idx)  # (2, T, 64)


def run_scenario(sc: Scenario, head: torch.nn.Linear, x3: torch.Tensor) -> dict:
    W, b = head.weight, head.bias  # (600, 64), (600,)
    if sc.mode == "requires_grad_off":
        W, b = W.detach(), b.detach()
    x = x3 if sc.rank == 3 else x3[0]  # (2, T, 64) or (T, 64)
    with sc.context():
        rec = record(lambda: F.linear(x, W, b), sc.device)
        expected = head(x)  # the module's own forward, same state, nobody watching
    tree = explain(rec)
    calls = list(flat(tree))
    return {
        "name": sc.name,
        "device": sc.device,
        "mode": sc.mode,
        "rank": sc.rank,
        "python_layer": [
            {
                "function": p.function,
                "tensor_args": p.tensor_args,
                "tls_include": names(p.tls[0]),
                "tls_exclude": names(p.tls[1]),
            }
            for p in rec.python
        ],
        "tree": tree,
        "ops_at_python_key": [c["op"] for c in calls if c["arrived_at_python"]],
        "profiled_ops": rec.profiled_ops,
        "profiler": profiler_consistency(tree, rec, sc.autocast_key),
        "autograd_nodes": autograd_nodes(rec.output) if rec.output.grad_fn is not None else [],
        "device_kernels": rec.device_kernels,
        "gemm_kernels": sorted(
            {k["kernel"] for k in rec.device_kernels if GEMM.search(k["kernel"])}
        ),
        "output": f"{str(rec.output.dtype).removeprefix('torch.')}{list(rec.output.shape)}",
        "output_equals_lm_head": bool(torch.equal(rec.output, expected)),
        "notes": rec.notes,
    }

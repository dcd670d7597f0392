"""What the lab traces: one call with the LM head's weights or hidden states, in several autograd / inference /
autocast states, with 2-D and 3-D inputs, on the CPU (and CUDA when run there). Plain data, no torch: the
exercise declarations list the scenarios the learner predicts."""

from __future__ import annotations

MODES = ("grad", "requires_grad_off", "no_grad", "inference_mode", "autocast_bf16")
# What is called. linear: F.linear(x, W, b), the LM head. matmul: torch.matmul(x, W.t()), the same GEMM
# without the bias. matmul_batched: torch.matmul(x, x.transpose(1, 2)), (B, T, 64) @ (B, 64, T): the shape of
# attention scores.
CALLS = {
    "linear": "torch.nn.functional.linear(x, W, b)",
    "matmul": "torch.matmul(x, W.t())",
    "matmul_batched": "torch.matmul(x, x.transpose(1, 2))",
}
ROOT_OP = {"linear": "aten::linear", "matmul": "aten::matmul", "matmul_batched": "aten::matmul"}
# the lab's recording mode puts these in every chain: they only hand the call on to its recorder
RECORDER_KEYS = ("PythonTLSSnapshot", "Python")


def scenario(device: str, mode: str, rank: int, call: str = "linear") -> dict:
    """One traced call, as its result in trace.json begins."""
    middle = mode if call == "linear" else call
    return {
        # 'cpu/grad/3d' for the linear call; 'cpu/matmul/3d', 'cpu/matmul_batched/3d' for the others
        "name": f"{device}/{middle}/{rank}d",
        "device": device,  # "cpu" | "cuda"
        "call": call,  # one of CALLS
        "mode": mode,  # one of MODES
        "rank": rank,  # 2: x is (T, 64); 3: x is (B, T, 64)
    }


def all_scenarios(devices: list[str]) -> list[dict]:
    return [
        sc
        for d in devices
        for sc in (
            scenario(d, "grad", 3),
            scenario(d, "grad", 2),
            *(scenario(d, m, 3) for m in MODES[1:]),
            scenario(d, "inference_mode", 2),
            scenario(d, "grad", 2, "matmul"),
            scenario(d, "grad", 3, "matmul"),
            scenario(d, "grad", 3, "matmul_batched"),
        )
    ]

"""What the lab traces: one call with the LM head's weights or hidden states, in several autograd / inference /
autocast states, with 2-D and 3-D inputs, on the CPU (and CUDA when run there). Plain data, no torch: the
exercise declarations list the scenarios the learner predicts."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Scenario:
    device: str  # "cpu" | "cuda"
    mode: str  # one of MODES
    rank: int  # 2: x is (T, 64); 3: x is (B, T, 64)
    call: str = "linear"  # one of CALLS

    @property
    def name(self) -> str:
        """'cpu/grad/3d' for the linear call; 'cpu/matmul/3d', 'cpu/matmul_batched/3d' for the others."""
        middle = self.mode if self.call == "linear" else self.call
        return f"{self.device}/{middle}/{self.rank}d"

    @property
    def root_op(self) -> str:
        return ROOT_OP[self.call]

    @property
    def autocast_key(self) -> str | None:
        return f"Autocast{self.device.upper()}" if self.mode == "autocast_bf16" else None


def all_scenarios(devices: list[str]) -> list[Scenario]:
    return [
        scenario
        for d in devices
        for scenario in (
            Scenario(d, "grad", 3),
            Scenario(d, "grad", 2),
            *(Scenario(d, m, 3) for m in MODES[1:]),
            Scenario(d, "inference_mode", 2),
            Scenario(d, "grad", 2, "matmul"),
            Scenario(d, "grad", 3, "matmul"),
            Scenario(d, "grad", 3, "matmul_batched"),
        )
    ]
